// The SVG flame graph in a real browser (headless Debian chromium through
// playwright-core from tests/ui/node_modules): clicks, Ctrl-F search,
// hover, a shared link reopening the same view, and no script errors.
//
//   node flamegraph_browser.mjs GRAPH.svg
//
// GRAPH.svg is drawn from "main;a;b;b 30 / main;a;c 10 / main;b 20 /
// main;decompress_block;b;x 5 / other 35".  Prints "PASS what" or
// "FAIL what: why" per check.
import { createRequire } from "module";
import path from "path";
import { fileURLToPath } from "url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../ui/package.json"));
const { chromium } = require("playwright-core");

const results = [];
const check = (what, cond, why) =>
	results.push((cond ? "PASS " : "FAIL ") + what + (cond ? "" : ": " + why));

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
	args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
try {
	const page = await browser.newPage({ viewport: { width: 1300, height: 400 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(String(e)));
	let answer = null;
	page.on("dialog", (d) => (answer === null ? d.dismiss() : d.accept(answer)));
	const url = "file://" + path.resolve(process.argv[2]);
	await page.goto(url);

	// Frames by the first line of their tooltip.
	const frame = (title) =>
		page.evaluate((t) => {
			for (const g of document.getElementById("frames").children) {
				const first = g.querySelector("title").textContent.split("\n")[0];
				if (!first.startsWith(t))
					continue;
				const r = g.querySelector("rect");
				return {
					x: parseFloat(r.getAttribute("x")), w: parseFloat(r.getAttribute("width")),
					hidden: g.classList.contains("hide"), parent: g.classList.contains("parent"),
					fill: r.getAttribute("fill"), label: g.querySelector("text").textContent,
				};
			}
			return null;
		}, title);
	const text = (id) => page.evaluate((i) => document.getElementById(i).textContent, id);
	const clickFrame = (title) =>
		page.evaluate((t) => {
			for (const g of document.getElementById("frames").children) {
				if (g.querySelector("title").textContent.startsWith(t)) {
					const b = g.querySelector("rect").getBoundingClientRect();
					return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
				}
			}
		}, title).then((p) => page.mouse.click(p.x, p.y));

	await clickFrame("a (40");
	let a = await frame("a (40"), c = await frame("c (10"), main = await frame("main ("),
		other = await frame("other (");
	check("click zooms: the frame fills the width", a.x === 10 && a.w === 1180, JSON.stringify(a));
	check("children are rescaled", Math.abs(c.x - 895) < 0.1 && Math.abs(c.w - 295) < 0.1,
	      JSON.stringify(c));
	check("callers stay, faded, at full width", main.parent && main.w === 1180, JSON.stringify(main));
	check("frames beside it are hidden", other.hidden, JSON.stringify(other));
	check("Reset Zoom appears",
	      !(await page.evaluate(() => document.getElementById("unzoom").classList.contains("hide"))),
	      "hidden");
	check("the zoom is in the URL", /[?&]x=10\.0&y=/.test(page.url()), page.url());

	await clickFrame("main ("); /* a faded caller: zooms out to it */
	main = await frame("main (");
	check("clicking a caller zooms out to it", main.w === 1180 && !main.parent &&
	      !(await frame("b (20")).hidden, JSON.stringify(main));
	await clickFrame("decompress_block (");
	const d = await frame("decompress_block (");
	check("labels are re-fitted after a zoom", d.label === "decompress_block", d.label);

	answer = "^b$";
	await page.keyboard.press("Control+f");
	check("Ctrl-F searches: matched share of outermost matches", (await text("matched")) ===
	      "Matched: 55.0%", await text("matched"));
	check("matches are painted", (await frame("b (20")).fill === "rgb(230,0,230)",
	      (await frame("b (20")).fill);
	check("the search is in the URL", /[?&]s=%5Eb%24/.test(page.url()), page.url());

	await page.hover("#title");
	const box = await page.evaluate(() => {
		for (const g of document.getElementById("frames").children)
			if (g.querySelector("title").textContent.startsWith("x (5")) {
				const b = g.querySelector("rect").getBoundingClientRect();
				return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
			}
	});
	await page.mouse.move(box.x, box.y);
	check("hover shows the details line", (await text("details")).startsWith(
	      "Function: x (5 samples, 5.00%)"), await text("details"));

	// A shared link reopens the same view.
	const shared = page.url();
	const page2 = await browser.newPage();
	page2.on("pageerror", (e) => errors.push(String(e)));
	await page2.goto(shared);
	const d2 = await page2.evaluate(() => {
		const m = document.getElementById("matched").textContent;
		for (const g of document.getElementById("frames").children)
			if (g.querySelector("title").textContent.startsWith("decompress_block ("))
				return { w: g.querySelector("rect").getAttribute("width"), m };
	});
	check("a shared link reopens the zoom and the search", d2.w === "1180.0" &&
	      d2.m === "Matched: 55.0%", JSON.stringify(d2));

	await page.click("#unzoom");
	a = await frame("a (40");
	other = await frame("other (");
	check("Reset Zoom restores the graph", a.x === 10 && a.w === 472 && !other.hidden,
	      JSON.stringify([a, other]));
	answer = null;
	await page.click("#search");
	check("Reset Search clears the highlight", (await frame("b (20")).fill !== "rgb(230,0,230)",
	      (await frame("b (20")).fill);
	check("the URL is clean again", !page.url().includes("?"), page.url());
	check("no script errors", errors.length === 0, errors.join("; "));
} catch (e) {
	check("browser session", false, e.stack);
} finally {
	await browser.close();
}
console.log(results.join("\n"));
