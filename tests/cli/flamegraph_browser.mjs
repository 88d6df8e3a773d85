// The SVG flame graph in a real browser (headless Debian chromium through
// playwright-core from tests/ui/node_modules): the width filling the
// window (on load and on resize, text at its size), clicks, Ctrl-F search,
// hover, a shared link reopening the same view, the file as an <img>
// (no script: its own size), and no script errors.
//
//   node flamegraph_browser.mjs GRAPH.svg
//
// GRAPH.svg is drawn from "main;a;b;b 30 / main;a;c 10 / main;b 20 /
// main;decompress_block;b;x 5 / other 35".  Prints "PASS what" or
// "FAIL what: why" per check.
import { createRequire } from "module";
import fs from "fs";
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
	const near = (a, b) => Math.abs(a - b) < 0.051;
	const fileWidth = parseFloat(fs.readFileSync(process.argv[2], "utf8").match(/<svg [^>]*\swidth="([0-9.]+)"/)[1]);

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

	// The graph fills the window at one unit per pixel: text keeps its size.
	const geometry = () => page.evaluate(() => {
		const svg = document.documentElement, m = svg.getScreenCTM();
		return { width: svg.getBoundingClientRect().width, scale: m.a, viewBox: svg.getAttribute("viewBox"),
			 search: parseFloat(document.getElementById("search").getAttribute("x")),
			 font: getComputedStyle(document.querySelector("#frames text")).fontSize };
	});
	let geo = await geometry();
	let full = geo.width - 20;
	let root = await frame("all (");
	check("the file is drawn for its own width", fileWidth === 1200, String(fileWidth));
	check("the graph fills the window (1300 px)", geo.width === 1300 && root.x === 10 &&
	      near(root.w, full) && /^0 0 1300 /.test(geo.viewBox), JSON.stringify([geo, root]));
	check("drawn at one unit per pixel, 12 px text", geo.scale === 1 && geo.font === "12px",
	      JSON.stringify(geo));
	check("the search button moves to the right edge", geo.search === 1300 - 10 - 100, JSON.stringify(geo));
	check("the root is labelled with the total", root.label === "all (100 samples, 100%)", root.label);
	check("labels are fitted to the wider boxes", (await frame("decompress_block (")).label === "decompr..",
	      (await frame("decompress_block (")).label);

	// Resizing lays the frames out again.
	const resize = async (width) => {
		await page.setViewportSize({ width, height: 400 });
		await page.waitForFunction((w) => {
			const r = document.querySelector("#frames > g > rect");
			return Math.abs(parseFloat(r.getAttribute("width")) - (w - 20)) < 0.06;
		}, width, { timeout: 10000 }).catch(() => {});
	};
	await resize(2400);
	check("wider window: laid out again", near((await frame("all (")).w, 2380), JSON.stringify(await frame("all (")));
	check("... with room for whole labels", (await frame("decompress_block (")).label === "decompress_block",
	      (await frame("decompress_block (")).label);
	await resize(800);
	geo = await geometry();
	check("narrower window: laid out again, text at its size", near((await frame("all (")).w, 780) &&
	      geo.scale === 1 && geo.font === "12px", JSON.stringify([geo, await frame("all (")]));
	check("... and labels cut shorter", (await frame("decompress_block (")).label === "dec..",
	      (await frame("decompress_block (")).label);
	await clickFrame("a (40");
	check("zoom at that width fills it", near((await frame("a (40")).w, 780), JSON.stringify(await frame("a (40")));
	await resize(1300);
	check("a resize keeps the zoom", near((await frame("a (40")).w, 1280) && (await frame("other (")).hidden,
	      JSON.stringify(await frame("a (40")));
	await page.click("#unzoom");
	check("Reset Zoom at the new width", near((await frame("a (40")).w, 0.4 * 1280) &&
	      (await frame("all (")).label === "all (100 samples, 100%)", JSON.stringify(await frame("a (40")));

	await clickFrame("a (40");
	let a = await frame("a (40"), c = await frame("c (10"), main = await frame("main ("),
		other = await frame("other (");
	check("click zooms: the frame fills the width", a.x === 10 && near(a.w, full), JSON.stringify(a));
	check("children are rescaled", near(c.x, 10 + 0.75 * full) && near(c.w, 0.25 * full),
	      JSON.stringify(c));
	check("callers stay, faded, at full width", main.parent && near(main.w, full), JSON.stringify(main));
	check("frames beside it are hidden", other.hidden, JSON.stringify(other));
	check("Reset Zoom appears",
	      !(await page.evaluate(() => document.getElementById("unzoom").classList.contains("hide"))),
	      "hidden");
	check("the zoom is in the URL", /[?&]x=10\.0&y=/.test(page.url()), page.url());

	await clickFrame("main ("); /* a faded caller: zooms out to it */
	main = await frame("main (");
	check("clicking a caller zooms out to it", near(main.w, full) && !main.parent &&
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
		const full = document.documentElement.getBoundingClientRect().width - 20;
		for (const g of document.getElementById("frames").children)
			if (g.querySelector("title").textContent.startsWith("decompress_block ("))
				return { w: g.querySelector("rect").getAttribute("width"), m, full };
	});
	check("a shared link reopens the zoom and the search (another width)", d2.full !== full &&
	      d2.w === d2.full.toFixed(1) && d2.m === "Matched: 55.0%", JSON.stringify(d2));

	await page.click("#unzoom");
	a = await frame("a (40");
	other = await frame("other (");
	check("Reset Zoom restores the graph", a.x === 10 && near(a.w, 0.4 * full) && !other.hidden,
	      JSON.stringify([a, other]));
	answer = null;
	await page.click("#search");
	check("Reset Search clears the highlight", (await frame("b (20")).fill !== "rgb(230,0,230)",
	      (await frame("b (20")).fill);
	check("the URL is clean again", !page.url().includes("?"), page.url());

	// As an <img> no script runs: the file's own size, drawn whole.
	const html = path.join(path.dirname(path.resolve(process.argv[2])), "img.html");
	fs.writeFileSync(html, '<!DOCTYPE html><body style="margin:0"><img id="i" src="' +
			 path.basename(process.argv[2]) + '"></body>');
	const page3 = await browser.newPage({ viewport: { width: 1600, height: 600 } });
	await page3.goto("file://" + html);
	await page3.waitForFunction(() => document.getElementById("i").complete, null, { timeout: 10000 });
	const img = await page3.evaluate(() => {
		const i = document.getElementById("i");
		return { w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width };
	});
	const fileHeight = parseFloat(fs.readFileSync(process.argv[2], "utf8").match(/<svg [^>]*\sheight="([0-9.]+)"/)[1]);
	check("as an <img>: the file's own size", img.w === fileWidth && img.h === Math.round(fileHeight) &&
	      img.shown === fileWidth, JSON.stringify(img));
	if (process.env.SCREENSHOTS)
		await page3.screenshot({ path: path.join(process.env.SCREENSHOTS, "img.png") });
	check("no script errors", errors.length === 0, errors.join("; "));
} catch (e) {
	check("browser session", false, e.stack);
} finally {
	await browser.close();
}
console.log(results.join("\n"));
