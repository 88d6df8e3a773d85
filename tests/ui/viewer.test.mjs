// Browser tests of plateau's HTML viewer in headless Debian chromium.
//
//   node viewer.test.mjs DIR
//
// DIR holds pages written by plateau and the folded files they came
// from (see tests/cli/ui.sh): small.html + small.folded (a real perf
// recording), diff.html, hostile.html (+ hostile.folded), big.html +
// big.folded (200,000 frames).  Prints one "ok - ..." or "not ok - ..."
// line per check and "# ..." notes (timings are printed, never asserted).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const DIR = process.argv[2];
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
let failures = 0;

function ok(cond, desc, detail) {
	if (cond) {
		console.log(`ok - ${desc}`);
	} else {
		failures++;
		console.log(`not ok - ${desc}`);
		if (detail !== undefined)
			for (const line of String(detail).split('\n').slice(0, 15))
				console.log(`#   ${line}`);
	}
}

function note(msg) {
	console.log(`# ${msg}`);
}

/* Folded lines as [frames, count]. */
function readFolded(path) {
	const out = [];
	for (const line of readFileSync(path, 'utf8').split('\n')) {
		const m = /^(.*)\s+(\d+)$/.exec(line);
		if (m)
			out.push([m[1].split(';'), Number(m[2])]);
	}
	return out;
}

/* The share of samples whose stack has a frame matching re: what "outermost matches" sums to. */
function expectedShare(stacks, re) {
	let total = 0, hit = 0;
	for (const [frames, n] of stacks) {
		total += n;
		if (frames.some((f) => re.test(f)))
			hit += n;
	}
	return hit / total;
}

/* Open a page and record console errors, page errors, dialogs and every request. */
async function open(browser, file, opts = {}) {
	const context = await browser.newContext({
		viewport: { width: 1280, height: 900 },
		deviceScaleFactor: opts.dpr || 1,
	});
	const page = await context.newPage();
	const log = { errors: [], requests: [], dialogs: [] };
	const url = pathToFileURL(join(DIR, file)).href;
	page.on('console', (m) => {
		if (m.type() === 'error')
			log.errors.push(m.text());
	});
	page.on('pageerror', (e) => log.errors.push(String(e)));
	page.on('dialog', (d) => {
		log.dialogs.push(d.message());
		d.dismiss();
	});
	await page.route('**', (route) => {
		log.requests.push(route.request().url());
		if (route.request().url() === url)
			route.continue();
		else
			route.abort();
	});
	const t0 = Date.now();
	await page.goto(url, { waitUntil: 'load' });
	await page.waitForFunction(() => window.__plateau && window.__plateau.state().draws > 0);
	log.firstDrawMs = Date.now() - t0;
	await page.waitForFunction(() => window.__plateau.state().tableReady);
	log.loadMs = Date.now() - t0;
	log.url = url;
	return { page, context, log };
}

function checkClean(log, what) {
	ok(log.errors.length === 0, `${what}: no console or page errors`, log.errors.join('\n'));
	const others = log.requests.filter((u) => u !== log.url);
	ok(others.length === 0 && log.requests.length === 1,
		`${what}: no network requests besides the file itself`, log.requests.join('\n'));
}

/* Pixels of the main canvas: how many are not white, and which diff colours occur. */
async function pixels(page) {
	return page.evaluate(() => {
		const c = document.getElementById('flame');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let ink = 0, red = 0, blue = 0, grey = 0;
		for (let i = 0; i < d.length; i += 4) {
			const r = d[i], g = d[i + 1], b = d[i + 2];
			if (r < 250 || g < 250 || b < 250)
				ink++;
			if (r === 255 && g === b && g < 255)
				red++;
			if (b === 255 && r === g && r < 255)
				blue++;
			if (r === 200 && g === 200 && b === 200)
				grey++;
		}
		return { ink, red, blue, grey, size: d.length / 4, width: c.width };
	});
}

const state = (page) => page.evaluate(() => window.__plateau.state());
const locate = (page, name) => page.evaluate((n) => window.__plateau.locate(n), name);
const afterFrame = (page) =>
	page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function clickFrame(page, name) {
	const r = await locate(page, name);
	if (!r)
		return null;
	await page.mouse.click(r.x + Math.min(r.w / 2, 40), r.y + r.h / 2);
	await afterFrame(page);
	return r;
}

async function tableColumn(page, attr) {
	return page.$$eval('#functions tbody tr', (rows, a) => rows.map((r) => Number(r.dataset[a])), attr);
}

function sorted(a, desc) {
	for (let i = 1; i < a.length; i++)
		if (desc ? a[i - 1] < a[i] : a[i - 1] > a[i])
			return false;
	return true;
}

async function testSmall(browser) {
	const { page, context, log } = await open(browser, 'small.html', { dpr: 2 });
	const stacks = readFolded(join(DIR, 'small.folded'));
	checkClean(log, 'small');
	let st = await state(page);
	const px = await pixels(page);
	ok(px.ink > 2000, `small: canvas drawn (${px.ink} non-white pixels)`);
	ok(px.width === 2 * (await page.evaluate(() => document.getElementById('flame').clientWidth)),
		'small: canvas backing store follows devicePixelRatio 2');
	ok(st.mode === 'flame' && st.zoomDepth === 0, 'small: starts as a flame graph, unzoomed');

	/* Flame graph: root at the bottom. */
	const rootFlame = await locate(page, 'all');
	const graphBox = await page.$eval('#graph', (g) => g.getBoundingClientRect().toJSON());
	ok(rootFlame && rootFlame.y > graphBox.bottom - 40, 'small: flame graph draws the root at the bottom');

	/* Hover: tooltip with value, share and interval. */
	const leaf = stacks.slice().sort((a, b) => b[1] - a[1])[0][0];
	const target = leaf[Math.min(2, leaf.length - 1)];
	let r = await locate(page, target);
	await page.mouse.move(r.x + Math.min(r.w / 2, 30), r.y + r.h / 2);
	const tip = await page.$eval('#tip', (t) => ({ shown: t.style.display, text: t.textContent }));
	ok(tip.shown === 'block' && tip.text.includes(target) && /95% interval \d+\.\d+% \u2013 \d+\.\d+%/.test(tip.text),
		'small: hover shows a tooltip with name, share and 95% interval', JSON.stringify(tip));

	/* Click zoom. */
	const before = await pixels(page);
	r = await clickFrame(page, target);
	st = await state(page);
	const after = await pixels(page);
	ok(st.zoomName === target && st.zoomDepth > 0, `small: click zooms into ${target}`, JSON.stringify(st));
	ok(after.ink !== before.ink, 'small: zoom changes the drawing');
	const crumbs = await page.$$eval('#crumbs button', (b) => b.map((x) => x.textContent));
	ok(crumbs[0] === 'all' && crumbs[crumbs.length - 1] === target, 'small: breadcrumb shows the zoom path', crumbs.join(' > '));
	await page.click('#crumbs button');
	await afterFrame(page);
	st = await state(page);
	ok(st.zoomDepth === 0, 'small: breadcrumb root resets the zoom');

	/* Search: matched share equals what the folded data says. */
	const pattern = 'worker|munmap|^std::';
	await page.fill('#search', pattern);
	await page.press('#search', 'Enter');
	await afterFrame(page);
	const got = Number(await page.$eval('#matched', (m) => m.dataset.share));
	const want = expectedShare(stacks, new RegExp(pattern));
	const shown = await page.$eval('#matched', (m) => m.textContent);
	ok(Math.abs(got - want) < 1e-9 && want > 0, `small: search /${pattern}/ matches ${(100 * want).toFixed(2)}%`,
		`got ${got}, want ${want}`);
	ok(shown.includes((100 * want).toFixed(2) + '%'), 'small: matched share shown', shown);
	const hl = await page.evaluate(() => {
		const c = document.getElementById('flame');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			if (d[i] === 230 && d[i + 1] === 0 && d[i + 2] === 230)
				n++;
		return n;
	});
	ok(hl > 0, 'small: matches are highlighted');

	/* Escape resets zoom and search. */
	await clickFrame(page, target);
	await page.focus('#search');
	await page.keyboard.press('Escape');
	await afterFrame(page);
	st = await state(page);
	ok(st.zoomDepth === 0 && (await page.inputValue('#search')) === '' && st.matchedShare === 0,
		'small: Esc resets zoom and search');
	await page.click('#title');
	await page.keyboard.press('/');
	ok(await page.evaluate(() => document.activeElement.id === 'search'), "small: '/' focuses the search box");
	await page.click('#title');
	await page.keyboard.press('Control+f');
	ok(await page.evaluate(() => document.activeElement.id === 'search'), 'small: Ctrl-F focuses the search box');
	await page.keyboard.press('Escape');

	/* Table sorting. */
	let selfs = await tableColumn(page, 'self');
	ok(selfs.length > 3 && sorted(selfs, true), 'small: table starts sorted by self, descending');
	await page.click('#functions th[data-key="total"]');
	const totals = await tableColumn(page, 'total');
	ok(totals.length > 3 && sorted(totals, true), 'small: click on Total sorts by total, descending', totals.join(','));
	await page.click('#functions th[data-key="self"]');
	selfs = await tableColumn(page, 'self');
	ok(sorted(selfs, true), 'small: click on Self sorts by self, descending', selfs.join(','));
	await page.click('#functions th[data-key="self"]');
	selfs = await tableColumn(page, 'self');
	ok(sorted(selfs, false) && selfs[0] < selfs[selfs.length - 1], 'small: second click reverses the order', selfs.join(','));

	/* A row click searches that function: its outermost matches sum to its total. */
	await page.click('#functions th[data-key="total"]');
	const row = await page.$eval('#functions tbody tr:nth-child(3)', (tr) => ({
		total: Number(tr.dataset.total), name: tr.querySelector('td').textContent,
	}));
	await page.click('#functions tbody tr:nth-child(3)');
	await afterFrame(page);
	st = await state(page);
	ok(Math.abs(st.matchedShare - row.total / st.total) < 1e-12,
		`small: row click searches ${row.name} (matched share = its total share)`, JSON.stringify([st.matchedShare, row]));
	const rows = await page.$$eval('#functions tbody tr', (t) => t.length);
	ok(rows === 1, 'small: the table is filtered by the search', rows);

	/* Icicle toggle. */
	await page.keyboard.press('Escape');
	await page.click('#mode-icicle');
	await afterFrame(page);
	st = await state(page);
	const rootIcicle = await locate(page, 'all');
	ok(st.mode === 'icicle' && rootIcicle.y < graphBox.top + 10, 'small: icicle toggle puts the root at the top',
		JSON.stringify([rootIcicle, graphBox.top]));
	const ice = await pixels(page);
	ok(ice.ink > 2000, 'small: icicle graph drawn');
	await page.click('#mode-flame');
	await afterFrame(page);
	ok((await state(page)).mode === 'flame', 'small: flame toggle returns');
	await context.close();
}

async function testDiff(browser) {
	const { page, context, log } = await open(browser, 'diff.html');
	checkClean(log, 'diff');
	const px = await pixels(page);
	ok(px.red > 50, `diff: red (grew) frames drawn (${px.red} px)`);
	ok(px.blue > 50, `diff: blue (shrank) frames drawn (${px.blue} px)`);
	ok(px.grey > 50, `diff: grey (within noise) frames drawn (${px.grey} px)`);
	const r = await locate(page, 'sort_keys');
	await page.mouse.move(r.x + 10, r.y + r.h / 2);
	const tip = await page.$eval('#tip', (t) => t.textContent);
	ok(/base .* \u2192 new .*pp/.test(tip) && /significant/.test(tip), 'diff: tooltip shows base, new and significance', tip);
	const heads = await page.$$eval('#functions th', (t) => t.map((x) => x.textContent));
	ok(heads.some((h) => h.includes('\u0394')), 'diff: table has a delta column', heads.join('|'));
	await context.close();
}

async function testHostile(browser) {
	const { page, context, log } = await open(browser, 'hostile.html');
	checkClean(log, 'hostile');
	ok(log.dialogs.length === 0, 'hostile: no script ran from a frame name');
	const imgs = await page.$$eval('img', (i) => i.length);
	ok(imgs === 0, 'hostile: no element injected by a frame name');
	await page.fill('#search', 'script');
	await page.press('#search', 'Enter');
	const names = await page.$$eval('#functions tbody td.name', (t) => t.map((x) => x.textContent));
	ok(names.includes('</script><img src=x onerror=alert(1)>'), 'hostile: the name is shown as text', names.join('\n'));
	await context.close();
}

async function testBig(browser) {
	const { page, context, log } = await open(browser, 'big.html');
	checkClean(log, 'big');
	let st = await state(page);
	ok(st.frames === 200001, `big: ${st.frames - 1} frames loaded (+ root)`);
	const px = await pixels(page);
	ok(px.ink > 10000, 'big: canvas drawn');
	note(`big: page load ${log.loadMs} ms, to first frame ${log.firstDrawMs} ms; JSON parse ${st.timings.parseMs.toFixed(1)} ms, ` +
		`decode ${st.timings.prepMs.toFixed(1)} ms, first draw ${st.timings.firstDrawMs.toFixed(1)} ms ` +
		`(script start to first frame ${st.timings.firstDrawAtMs.toFixed(1)} ms)`);

	/* Zoom: from the click to the drawn frame. */
	const target = await page.evaluate(() => {
		const rows = document.querySelectorAll('#functions tbody tr td.name');
		return rows[5].textContent;
	});
	const r = await locate(page, target);
	const zoomMs = await page.evaluate(({ x, y }) => new Promise((resolve) => {
		const c = document.getElementById('flame');
		const t0 = performance.now();
		c.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: y, bubbles: true }));
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}), { x: r.x + Math.min(r.w / 2, 20), y: r.y + r.h / 2 });
	st = await state(page);
	ok(st.zoomDepth > 0, `big: click zooms (${st.zoomName})`);
	note(`big: zoom click to drawn frame ${zoomMs.toFixed(1)} ms (draw ${st.timings.lastDrawMs.toFixed(1)} ms)`);
	const resetMs = await page.evaluate(() => new Promise((resolve) => {
		const t0 = performance.now();
		document.getElementById('reset').click();
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}));
	st = await state(page);
	note(`big: reset to the full view ${resetMs.toFixed(1)} ms (draw ${st.timings.lastDrawMs.toFixed(1)} ms)`);

	/* Search over 200,000 frames. */
	const pattern = '^m(3|17)::f[0-9]*5$';
	const searchMs = await page.evaluate((text) => new Promise((resolve) => {
		const input = document.getElementById('search');
		const t0 = performance.now();
		input.value = text;
		input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}), pattern);
	const got = Number(await page.$eval('#matched', (m) => m.dataset.share));
	const want = expectedShare(readFolded(join(DIR, 'big.folded')), new RegExp(pattern));
	ok(Math.abs(got - want) < 1e-9 && want > 0, `big: search matched share ${(100 * want).toFixed(2)}% as computed from the data`,
		`got ${got}, want ${want}`);
	note(`big: search (match, share, table) and redraw ${searchMs.toFixed(1)} ms`);

	/* Scrolling the deep graph redraws only the rows in view. */
	const scrollMs = await page.evaluate(() => new Promise((resolve) => {
		const g = document.getElementById('graph');
		const t0 = performance.now();
		g.scrollTop = 0;
		g.dispatchEvent(new Event('scroll'));
		requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
	}));
	note(`big: scroll to the top and redraw ${scrollMs.toFixed(1)} ms`);
	await page.click('#mode-icicle');
	await afterFrame(page);
	st = await state(page);
	ok(st.mode === 'icicle' && (await pixels(page)).ink > 10000, 'big: icicle view drawn');
	note(`big: icicle draw ${st.timings.lastDrawMs.toFixed(1)} ms`);
	await context.close();
}

const browser = await chromium.launch({
	executablePath: CHROMIUM,
	args: [
		'--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
		'--disable-component-update', '--no-first-run', '--disable-sync',
	],
});
try {
	for (const t of [testSmall, testDiff, testHostile, testBig]) {
		try {
			await t(browser);
		} catch (e) {
			ok(false, `${t.name} ran to the end`, e.stack || e);
		}
	}
} finally {
	await browser.close();
}
process.exit(failures ? 1 : 0);
