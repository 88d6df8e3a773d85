// Browser tests of plateau's HTML viewer in headless Debian chromium.
//
//   node viewer.test.mjs DIR
//
// DIR holds pages written by plateau and the folded files they came
// from (see tests/cli/ui.sh): small.html + small.folded (a real perf
// recording), diff.html, hostile.html (+ hostile.folded), big.html +
// big.folded (200,000 frames), views.html + views.folded (C++ and Rust
// names, recursion: names, table, sandwich, left-heavy, keys).  Screenshots
// of each view go to $SHOTS (default DIR/shots); chart.html + chart.folded
// (flamegraph --flamechart: the flame chart).  Prints one "ok - ..." or "not ok - ..."
// line per check and "# ..." notes (timings are printed, never asserted).
import { mkdirSync } from 'node:fs';
import { ok, note, failures, readFolded } from './tap.mjs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const DIR = process.argv[2];
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
/* Screenshots of each view go here (tests/cli/ui.sh: build/ui-shots). */
const SHOTS = process.env.SHOTS || join(DIR, 'shots');
mkdirSync(SHOTS, { recursive: true });
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
		colorScheme: opts.colorScheme || 'light',
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
		const c = document.querySelector('[data-role=main] [data-role=flame]');
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
	return page.$$eval('[data-role=functions] tbody tr', (rows, a) => rows.map((r) => Number(r.dataset[a])), attr);
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
	ok(px.width === 2 * (await page.evaluate(() => document.querySelector('[data-role=main] [data-role=flame]').clientWidth)),
		'small: canvas backing store follows devicePixelRatio 2');
	ok(st.mode === 'flame' && st.zoomDepth === 0, 'small: starts as a flame graph, unzoomed');

	/* Flame graph: root at the bottom. */
	const rootFlame = await locate(page, 'all');
	const graphBox = await page.$eval('[data-role=main] [data-role=graph]', (g) => g.getBoundingClientRect().toJSON());
	ok(rootFlame && rootFlame.y > graphBox.bottom - 40, 'small: flame graph draws the root at the bottom');

	/* Hover: tooltip with value, share and interval. */
	const leaf = stacks.slice().sort((a, b) => b[1] - a[1])[0][0];
	const target = leaf[Math.min(2, leaf.length - 1)];
	let r = await locate(page, target);
	await page.mouse.move(r.x + Math.min(r.w / 2, 30), r.y + r.h / 2);
	const tip = await page.$eval('[data-role=tip]', (t) => ({ shown: t.style.display, text: t.textContent }));
	ok(tip.shown === 'block' && tip.text.includes(target) && /95% interval \d+\.\d+% \u2013 \d+\.\d+%/.test(tip.text),
		'small: hover shows a tooltip with name, share and 95% interval', JSON.stringify(tip));

	/* Click zoom. */
	const before = await pixels(page);
	r = await clickFrame(page, target);
	st = await state(page);
	const after = await pixels(page);
	ok(st.zoomName === target && st.zoomDepth > 0, `small: click zooms into ${target}`, JSON.stringify(st));
	ok(after.ink !== before.ink, 'small: zoom changes the drawing');
	const crumbs = await page.$$eval('[data-role=crumbs] button', (b) => b.map((x) => x.textContent));
	ok(crumbs[0] === 'all' && crumbs[crumbs.length - 1] === target, 'small: breadcrumb shows the zoom path', crumbs.join(' > '));
	await page.click('[data-role=crumbs] button');
	await afterFrame(page);
	st = await state(page);
	ok(st.zoomDepth === 0, 'small: breadcrumb root resets the zoom');

	/* Search: matched share equals what the folded data says. */
	const pattern = 'worker|munmap|^std::';
	await page.fill('[data-role=search]', pattern);
	await page.press('[data-role=search]', 'Enter');
	await afterFrame(page);
	const got = Number(await page.$eval('[data-role=matched]', (m) => m.dataset.share));
	const want = expectedShare(stacks, new RegExp(pattern));
	const shown = await page.$eval('[data-role=matched]', (m) => m.textContent);
	ok(Math.abs(got - want) < 1e-9 && want > 0, `small: search /${pattern}/ matches ${(100 * want).toFixed(2)}%`,
		`got ${got}, want ${want}`);
	ok(shown.includes((100 * want).toFixed(2) + '%'), 'small: matched share shown', shown);
	const hl = await page.evaluate(() => {
		const c = document.querySelector('[data-role=main] [data-role=flame]');
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
	await page.focus('[data-role=search]');
	await page.keyboard.press('Escape');
	await afterFrame(page);
	st = await state(page);
	ok(st.zoomDepth === 0 && (await page.inputValue('[data-role=search]')) === '' && st.matchedShare === 0,
		'small: Esc resets zoom and search');
	await page.click('[data-role=title]');
	await page.keyboard.press('/');
	ok(await page.evaluate(() => document.activeElement.dataset.role === 'search'), "small: '/' focuses the search box");
	await page.click('[data-role=title]');
	await page.keyboard.press('Control+f');
	ok(await page.evaluate(() => document.activeElement.dataset.role === 'search'), 'small: Ctrl-F focuses the search box');
	await page.keyboard.press('Escape');

	/* Table sorting. */
	let selfs = await tableColumn(page, 'self');
	ok(selfs.length > 3 && sorted(selfs, true), 'small: table starts sorted by self, descending');
	await page.click('[data-role=functions] th[data-key="total"]');
	const totals = await tableColumn(page, 'total');
	ok(totals.length > 3 && sorted(totals, true), 'small: click on Total sorts by total, descending', totals.join(','));
	await page.click('[data-role=functions] th[data-key="self"]');
	selfs = await tableColumn(page, 'self');
	ok(sorted(selfs, true), 'small: click on Self sorts by self, descending', selfs.join(','));
	await page.click('[data-role=functions] th[data-key="self"]');
	selfs = await tableColumn(page, 'self');
	ok(sorted(selfs, false) && selfs[0] < selfs[selfs.length - 1], 'small: second click reverses the order', selfs.join(','));

	/* A row click searches that function: its outermost matches sum to its total. */
	await page.click('[data-role=functions] th[data-key="total"]');
	const row = await page.$eval('[data-role=functions] tbody tr:nth-child(3)', (tr) => ({
		total: Number(tr.dataset.total), name: tr.querySelector('td').title,
	}));
	await page.click('[data-role=functions] tbody tr:nth-child(3)');
	await afterFrame(page);
	st = await state(page);
	ok(Math.abs(st.matchedShare - row.total / st.total) < 1e-12,
		`small: row click searches ${row.name} (matched share = its total share)`, JSON.stringify([st.matchedShare, row]));
	/* The table follows a row click a moment later (room for a double click). */
	await page.waitForFunction(() => document.querySelectorAll('[data-role=functions] tbody tr').length < 3,
		null, { timeout: 5000 }).catch(() => {});
	const rows = await page.$$eval('[data-role=functions] tbody tr', (t) => t.length);
	ok(rows === 1, 'small: the table is filtered by the search', rows);

	/* Icicle toggle. */
	await page.keyboard.press('Escape');
	await page.click('[data-role=mode-icicle]');
	await afterFrame(page);
	st = await state(page);
	const rootIcicle = await locate(page, 'all');
	ok(st.mode === 'icicle' && rootIcicle.y < graphBox.top + 10, 'small: icicle toggle puts the root at the top',
		JSON.stringify([rootIcicle, graphBox.top]));
	const ice = await pixels(page);
	ok(ice.ink > 2000, 'small: icicle graph drawn');
	await page.click('[data-role=mode-flame]');
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
	const tip = await page.$eval('[data-role=tip]', (t) => t.textContent);
	ok(/base .* \u2192 new .*pp/.test(tip) && /significant/.test(tip), 'diff: tooltip shows base, new and significance', tip);
	const heads = await page.$$eval('[data-role=functions] th', (t) => t.map((x) => x.textContent));
	ok(heads.some((h) => h.includes('\u0394')), 'diff: table has a delta column', heads.join('|'));
	await context.close();
}

async function testHostile(browser) {
	const { page, context, log } = await open(browser, 'hostile.html');
	checkClean(log, 'hostile');
	ok(log.dialogs.length === 0, 'hostile: no script ran from a frame name');
	const imgs = await page.$$eval('img', (i) => i.length);
	ok(imgs === 0, 'hostile: no element injected by a frame name');
	await page.fill('[data-role=search]', 'script');
	await page.press('[data-role=search]', 'Enter');
	await page.click('[data-role=full-names]');
	const names = await page.$$eval('[data-role=functions] tbody td.name [data-role=fn]', (t) => t.map((x) => x.textContent));
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
		const rows = document.querySelectorAll('[data-role=functions] tbody tr td.name');
		return rows[5].title;
	});
	const r = await locate(page, target);
	const zoomMs = await page.evaluate(({ x, y }) => new Promise((resolve) => {
		const c = document.querySelector('[data-role=main] [data-role=flame]');
		const t0 = performance.now();
		c.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: y, bubbles: true }));
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}), { x: r.x + Math.min(r.w / 2, 20), y: r.y + r.h / 2 });
	st = await state(page);
	ok(st.zoomDepth > 0, `big: click zooms (${st.zoomName})`);
	note(`big: zoom click to drawn frame ${zoomMs.toFixed(1)} ms (draw ${st.timings.lastDrawMs.toFixed(1)} ms)`);
	const resetMs = await page.evaluate(() => new Promise((resolve) => {
		const t0 = performance.now();
		document.querySelector('[data-role=reset]').click();
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}));
	st = await state(page);
	note(`big: reset to the full view ${resetMs.toFixed(1)} ms (draw ${st.timings.lastDrawMs.toFixed(1)} ms)`);

	/* Search over 200,000 frames. */
	const pattern = '^m(3|17)::f[0-9]*5$';
	const searchMs = await page.evaluate((text) => new Promise((resolve) => {
		const input = document.querySelector('[data-role=search]');
		const t0 = performance.now();
		input.value = text;
		input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
		requestAnimationFrame(() => resolve(performance.now() - t0));
	}), pattern);
	const got = Number(await page.$eval('[data-role=matched]', (m) => m.dataset.share));
	const want = expectedShare(readFolded(join(DIR, 'big.folded')), new RegExp(pattern));
	ok(Math.abs(got - want) < 1e-9 && want > 0, `big: search matched share ${(100 * want).toFixed(2)}% as computed from the data`,
		`got ${got}, want ${want}`);
	note(`big: search (match, share, table) and redraw ${searchMs.toFixed(1)} ms`);

	/* Scrolling the deep graph redraws only the rows in view. */
	const scrollMs = await page.evaluate(() => new Promise((resolve) => {
		const g = document.querySelector('[data-role=main] [data-role=graph]');
		const t0 = performance.now();
		g.scrollTop = 0;
		g.dispatchEvent(new Event('scroll'));
		requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
	}));
	note(`big: scroll to the top and redraw ${scrollMs.toFixed(1)} ms`);
	await page.click('[data-role=mode-icicle]');
	await afterFrame(page);
	st = await state(page);
	ok(st.mode === 'icicle' && (await pixels(page)).ink > 10000, 'big: icicle view drawn');
	note(`big: icicle draw ${st.timings.lastDrawMs.toFixed(1)} ms`);
	await context.close();
}

/*
 * The component: two viewers on one page (no global ids, one stylesheet,
 * '/' scoped to the viewer under the pointer), onReady, the dropped-frames
 * notice with its "Show all", setData keeping the view mode, destroy.
 */
async function testComponent(browser) {
	const { page, context, log } = await open(browser, 'small.html');
	await page.evaluate(() => {
		const data = JSON.parse(document.getElementById('plateau-data').textContent);
		window.__plateau.destroy();
		window.__calls = { readyA: 0, readyB: 0, showAll: 0 };
		const row = document.createElement('div');
		row.style.display = 'flex';
		row.innerHTML = '<div id="left" style="width:50%"></div><div id="right" style="width:50%"></div>';
		document.body.appendChild(row);
		const other = Object.assign({}, data, {
			title: 'right side', dropped: { frames: 1234, value: data.total / 4, why: 'maxNodes=8192' },
		});
		/* Listeners on window and document, to see destroy remove them. */
		const active = new Set();
		window.__listeners = active;
		for (const t of [window, document]) {
			const add = t.addEventListener.bind(t), remove = t.removeEventListener.bind(t);
			t.addEventListener = (type, fn, o) => {
				active.add(fn);
				add(type, fn, o);
			};
			t.removeEventListener = (type, fn, o) => {
				active.delete(fn);
				remove(type, fn, o);
			};
		}
		window.__a = PlateauViewer.mount(document.getElementById('left'), data,
			{ onReady: () => window.__calls.readyA++, header: false });
		window.__calls.listenersA = active.size;
		window.__b = PlateauViewer.mount(document.getElementById('right'), other,
			{ onReady: () => window.__calls.readyB++, onShowAll: () => window.__calls.showAll++ });
		window.__data = data;
		window.__calls.listenersAB = active.size;
	});
	await page.waitForFunction(() => window.__calls.readyA === 1 && window.__calls.readyB === 1);
	const calls = await page.evaluate(() => window.__calls);
	ok(calls.readyA === 1 && calls.readyB === 1, 'component: onReady called once per viewer after its first frame',
		JSON.stringify(calls));
	ok(await page.evaluate(() => document.getElementById('app').children.length === 0),
		'component: destroy empties the root');
	const ids = await page.$$eval('[id]', (e) => e.map((x) => x.id));
	ok(ids.every((id) => ['app', 'plateau-data', 'left', 'right'].includes(id)), 'component: the viewers add no ids',
		ids.join(' '));
	ok((await page.$$eval('style[data-plateau-viewer]', (s) => s.length)) === 1, 'component: one stylesheet for the page');
	const heads = await page.$$eval('[data-role=header]', (h) => h.map((x) => x.hidden));
	ok(heads.length === 2 && heads[0] === true && heads[1] === false, 'component: header: false hides the header',
		JSON.stringify(heads));
	const drop = await page.$eval('#right [data-role=dropped]', (d) => ({ hidden: d.hidden, text: d.textContent }));
	ok(!drop.hidden && /1,234 frames \(25\.00% of the total\) merged into .other. \(maxNodes=8192\)/.test(drop.text),
		'component: data.dropped shows a notice with frames, share and why', JSON.stringify(drop));
	ok(await page.$eval('#left [data-role=dropped]', (d) => d.hidden), 'component: no notice without data.dropped');
	await page.click('#right [data-role=show-all]');
	ok((await page.evaluate(() => window.__calls.showAll)) === 1, "component: 'Show all' calls onShowAll");

	/* '/' goes to the viewer the pointer was last over. */
	const focused = () => page.evaluate(() => {
		const a = document.activeElement;
		return a && a.dataset.role === 'search' ? a.closest('#left, #right').id : null;
	});
	const box = async (id) => page.$eval(`#${id} [data-role=flame]`, (c) => c.getBoundingClientRect().toJSON());
	await page.evaluate(() => document.activeElement.blur());
	let b = await box('right');
	await page.mouse.move(b.x + 20, b.y + 5);
	await page.keyboard.press('/');
	ok((await focused()) === 'right', "component: '/' focuses the search box of the viewer under the pointer (right)");
	await page.keyboard.press('Escape');
	b = await box('left');
	await page.mouse.move(b.x + 20, b.y + 5);
	await page.keyboard.press('/');
	ok((await focused()) === 'left', "component: '/' focuses the search box of the viewer under the pointer (left)");
	await page.keyboard.type('worker');
	await page.keyboard.press('Enter');
	const shares = await page.evaluate(() => [window.__a.state().matchedShare, window.__b.state().matchedShare]);
	ok(shares[0] > 0 && shares[1] === 0, 'component: a search in one viewer leaves the other alone', JSON.stringify(shares));
	await page.keyboard.press('Escape');

	/* setData: a new profile, the same view mode, onReady again. */
	await page.click('#left [data-role=mode-icicle]');
	await page.evaluate(() => window.__a.setData(Object.assign({}, window.__data, { title: 'replaced' })));
	await page.waitForFunction(() => window.__calls.readyA === 2);
	const st = await page.evaluate(() => window.__a.state());
	ok(st.mode === 'icicle' && st.draws > 0, 'component: setData repaints, keeps the view mode and calls onReady again',
		JSON.stringify({ mode: st.mode, draws: st.draws }));

	/* destroy: DOM gone, its keyboard listener too ('/' falls to the other viewer). */
	await page.evaluate(() => window.__b.destroy());
	ok(await page.$eval('#right', (r) => r.children.length === 0 && !r.classList.contains('plateau-viewer')),
		'component: destroy removes the DOM');
	const lis = await page.evaluate(() => [window.__calls.listenersA, window.__calls.listenersAB, window.__listeners.size]);
	ok(lis[1] > lis[0] && lis[2] === lis[0], 'component: destroy removes its window and document listeners',
		JSON.stringify(lis));
	await page.mouse.move(5, 5);
	await page.keyboard.press('/');
	ok((await focused()) === 'left', "component: after destroy, '/' goes to the remaining viewer");
	ok(log.errors.length === 0, 'component: no console or page errors', log.errors.join('\n'));
	await context.close();
}

/* ---- the views of issue 17, on views.html (views.folded: C++ and Rust names, recursion) ---- */

/* Wilson score interval at 95%, written again here so the page's own is checked against it. */
function wilson95(k, n) {
	const z = 1.959963984540054, p = k / n, z2 = z * z, den = 1 + z2 / n;
	const c = (p + z2 / (2 * n)) / den;
	const h = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / den;
	return [Math.max(0, c - h), Math.min(1, c + h)];
}

/* "lo% – hi%" as the viewer prints a share's interval: bounds rounded outward, holding the share. */
function intervalText(share, n) {
	const [lo, hi] = wilson95(share * n, n);
	const down = (Math.floor(10000 * Math.min(lo, share)) / 100).toFixed(2) + '%';
	const up = (Math.ceil(10000 * Math.max(hi, share)) / 100).toFixed(2) + '%';
	return `${down} \u2013 ${up}`;
}

/* Function f in the folded stacks: its total (once per stack), direct callers and callees of its outermost frames. */
function sandwichOf(stacks, f) {
	let total = 0;
	const callers = {}, callees = {};
	for (const [frames, n] of stacks) {
		const k = frames.indexOf(f);
		if (k < 0)
			continue;
		total += n;
		const up = k ? frames[k - 1] : 'all';
		callers[up] = (callers[up] || 0) + n;
		if (k + 1 < frames.length)
			callees[frames[k + 1]] = (callees[frames[k + 1]] || 0) + n;
	}
	return { total, callers, callees };
}

function sortKeys(o) {
	return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}

const asMap = (frames) => sortKeys(Object.fromEntries(frames.map((f) => [f.name, f.w])));
const viewer = (page, fn, ...args) => page.evaluate(([f, a]) => window.__plateau[f](...a), [fn, args]);
const locateIn = (page, name, which) => viewer(page, 'locate', name, which);

async function testViews(browser) {
	const { page, context, log } = await open(browser, 'views.html');
	checkClean(log, 'views');
	const stacks = readFolded(join(DIR, 'views.folded'));
	const N = stacks.reduce((a, s) => a + s[1], 0);
	const PUSH = 'std::vector<int, std::allocator<int> >::push_back(int const&)';
	const RUST = '<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop::h0123456789abcdef';
	await page.screenshot({ path: join(SHOTS, 'graph.png') });

	/* Names: short by default (pprof's way), full on the toggle, the tooltip always full. */
	const fnText = (full) => page.$eval(`[data-role=functions] td[title="${full}"] [data-role=fn]`, (e) => e.textContent);
	ok((await fnText(PUSH)) === 'std::vector::push_back', 'names: C++ parameters and template arguments dropped');
	ok((await fnText(RUST)) === '<alloc::vec::Vec as core::ops::drop::Drop>::drop',
		'names: Rust <T as Trait>::method kept, generics and the ::h hash dropped', await fnText(RUST));
	const cut = await viewer(page, 'label', PUSH, 12);
	ok(cut.length === 12 && cut.startsWith('std::') && cut.endsWith('_back') && cut.includes('\u2026'),
		`names: a label that does not fit is cut in the middle (${cut})`);
	let r = await locate(page, PUSH);
	await page.mouse.move(r.x + 5, r.y + r.h / 2);
	ok((await page.$eval('[data-role=tip] b', (b) => b.textContent)) === PUSH, 'names: the tooltip shows the full name');
	await page.click('[data-role=full-names]');
	ok((await fnText(PUSH)) === PUSH && (await viewer(page, 'label', PUSH, 200)) === PUSH,
		'names: the toggle shows full names in the table and on the graph');
	await page.click('[data-role=full-names]');

	/* Table: shares with their 95% intervals, and the filter box. */
	const cells = await page.$$eval('[data-role=functions] tbody tr', (rows) => rows.map((tr) => ({
		name: tr.querySelector('td').title, self: Number(tr.dataset.self), total: Number(tr.dataset.total),
		cells: Array.from(tr.querySelectorAll('td')).map((td) => td.textContent),
	})));
	const bad = cells.filter((c) => {
		const t = (c.total / N * 100).toFixed(2) + '%' + intervalText(c.total / N, N);
		const sf = (c.self / N * 100).toFixed(2) + '%' + intervalText(c.self / N, N);
		return c.cells[2] !== sf || c.cells[4] !== t;
	});
	const fns = new Set(stacks.flatMap((s) => s[0]));
	ok(cells.length === fns.size && bad.length === 0, `table: self and total shares with their 95% intervals (${cells.length} rows)`,
		JSON.stringify(bad.slice(0, 2)));
	await page.fill('[data-role=filter]', 'PUSH');
	const rows = await page.$$eval('[data-role=functions] tbody td.name', (t) => t.map((x) => x.title));
	ok(rows.length === 1 && rows[0] === PUSH, 'table: the filter box keeps the functions whose name contains it',
		rows.join('|'));
	await page.fill('[data-role=filter]', '');

	/* Search: the matched share and its interval. */
	await page.fill('[data-role=search]', '^work$');
	await page.press('[data-role=search]', 'Enter');
	const m = await page.$eval('[data-role=matched]', (e) => ({ text: e.textContent, lo: Number(e.dataset.lo), hi: Number(e.dataset.hi) }));
	const work = sandwichOf(stacks, 'work');
	const want = work.total / N, [wlo, whi] = wilson95(want * N, N);
	ok(Math.abs(m.lo - wlo) < 1e-12 && Math.abs(m.hi - whi) < 1e-12 && m.text.includes(intervalText(want, N)),
		`search: matched ${(100 * want).toFixed(2)}% with its 95% interval`, JSON.stringify(m));
	await page.keyboard.press('Escape');

	/* Sandwich from a table row: callers above, callees below, both rooted at the function's total. */
	await page.click('[data-role=functions] td[title="work"] [data-role=sandwich-open]');
	await afterFrame(page);
	let st = await state(page);
	const callers0 = await viewer(page, 'frames', 0, 'callers'), callees0 = await viewer(page, 'frames', 0, 'callees');
	ok(st.view === 'sandwich' && st.sandwich === 'work', 'sandwich: opens from a table row');
	ok(callers0.length === 1 && callers0[0].name === 'work' && callers0[0].w === work.total &&
		callees0[0].w === work.total, `sandwich: both sides rooted at the function's total (${work.total}, recursion once)`,
		JSON.stringify([callers0, callees0]));
	const c1 = asMap(await viewer(page, 'frames', 1, 'callers')), e1 = asMap(await viewer(page, 'frames', 1, 'callees'));
	ok(JSON.stringify(c1) === JSON.stringify(sortKeys(work.callers)), 'sandwich: its direct callers, merged',
		JSON.stringify([c1, work.callers]));
	ok(JSON.stringify(e1) === JSON.stringify(sortKeys(work.callees)), 'sandwich: its direct callees, merged',
		JSON.stringify([e1, work.callees]));
	const cw = await locateIn(page, 'work', 'callers'), cm = await locateIn(page, 'main', 'callers');
	const ew = await locateIn(page, 'work', 'callees'), el = await locateIn(page, 'leaf', 'callees');
	ok(cw && cm && cw.y > cm.y && ew && el && ew.y < el.y && cw.y < ew.y,
		'sandwich: callers above (the function at their bottom), callees below (the function at their top)',
		JSON.stringify([cw, cm, ew, el]));
	await page.screenshot({ path: join(SHOTS, 'sandwich.png'), fullPage: true });
	await page.click('[data-role=sandwich-back]');
	ok((await state(page)).view === 'graph', 'sandwich: the back button returns to the graph');

	/* ... from a frame: right click, or 's' on the hovered frame; Esc goes back. */
	r = await locate(page, 'other');
	await page.mouse.click(r.x + 5, r.y + r.h / 2, { button: 'right' });
	st = await state(page);
	ok(st.view === 'sandwich' && st.sandwich === 'other', 'sandwich: right click on a frame opens it');
	await page.keyboard.press('Escape');
	r = await locate(page, 'zeta');
	await page.mouse.move(r.x + 2, r.y + r.h / 2);
	await page.keyboard.press('s');
	st = await state(page);
	ok(st.view === 'sandwich' && st.sandwich === 'zeta', "sandwich: 's' on the frame under the pointer opens it");
	await page.keyboard.press('Escape');
	ok((await state(page)).view === 'graph', 'sandwich: Esc returns to the graph');
	await page.dblclick('[data-role=functions] td[title="leaf"]');
	ok((await state(page)).sandwich === 'leaf', 'sandwich: double click on a table row opens it');
	await page.click('[data-role=sandwich-back]');

	/* Left-heavy: every frame's children by total, largest first; the frames are the same. */
	const byName = await viewer(page, 'frames', 2);
	await page.click('[data-role=left-heavy]');
	await afterFrame(page);
	let sortedOk = true;
	for (let d = 1; d < (await state(page)).depth; d++) {
		const fr = await viewer(page, 'frames', d);
		for (let i = 1; i < fr.length; i++)
			if (fr[i].parent === fr[i - 1].parent && fr[i].w > fr[i - 1].w)
				sortedOk = false;
	}
	const heavy = await viewer(page, 'frames', 2);
	const lh = heavy.map((f) => f.name);
	ok(sortedOk && JSON.stringify(asMap(heavy)) === JSON.stringify(asMap(byName)) && lh[0] === PUSH &&
		lh.join() !== byName.map((f) => f.name).join(), 'left-heavy: siblings ordered by total, largest first', lh.join(' | '));
	await page.screenshot({ path: join(SHOTS, 'left-heavy.png') });
	await page.click('[data-role=left-heavy]');

	/* Keyboard: arrows move the selection, Enter zooms to it. */
	const sel = () => page.$eval('[data-role=selected]', (e) => e.dataset.name || null);
	const g = await page.$eval('[data-role=main] [data-role=flame]', (c) => c.getBoundingClientRect().toJSON());
	await page.mouse.move(g.x + g.width - 3, g.y + 3);
	await page.keyboard.press('ArrowUp');
	const s0 = await sel();
	await page.keyboard.press('ArrowUp');
	const s1 = await sel();
	await page.keyboard.press('ArrowUp');
	const s2 = await sel();
	const kids = {};
	for (const [frames, n] of stacks)
		if (frames.length > 1)
			kids[frames[1]] = (kids[frames[1]] || 0) + n;
	const widest = Object.keys(kids).sort((a, b) => kids[b] - kids[a])[0];
	ok(s0 === 'all' && s1 === 'main' && s2 === widest, `keys: up selects the root, then the widest child (${widest})`,
		[s0, s1, s2].join(' > '));
	const order = Object.keys(kids).sort();
	await page.keyboard.press('ArrowRight');
	const right = await sel();
	await page.keyboard.press('ArrowLeft');
	const left = await sel();
	ok(right === order[order.indexOf(widest) + 1] && left === widest, 'keys: right and left move between siblings',
		[right, left].join(' '));
	await page.screenshot({ path: join(SHOTS, 'selected.png') });
	await page.keyboard.press('ArrowDown');
	await page.keyboard.press('Enter');
	st = await state(page);
	ok((await sel()) === 'main' && st.zoomName === 'main', 'keys: down selects the parent, Enter zooms to it',
		JSON.stringify([await sel(), st.zoomName]));
	await context.close();
}

/*
 * The frames at depth d of a flame chart of folded lines in input order:
 * a line's frame continues the previous line's when their stacks agree up
 * to d, else a new frame starts.
 */
function chartFrames(stacks, d) {
	const out = [];
	let x = 0, prev = null;
	for (const [frames, n] of stacks) {
		const key = frames.length >= d ? frames.slice(0, d).join(';') : null;
		if (key !== null && key === prev)
			out[out.length - 1].w += n;
		else if (key !== null)
			out.push({ name: frames[d - 1], x: x, w: n });
		prev = key;
		x += n;
	}
	return out;
}

async function testChart(browser) {
	let { page, context, log } = await open(browser, 'small.html');
	ok(await page.$eval('[data-role=flame-chart]', (b) => b.hidden), 'chart: no flame chart button without time order');
	await context.close();
	({ page, context, log } = await open(browser, 'chart.html'));
	checkClean(log, 'chart');
	const stacks = readFolded(join(DIR, 'chart.folded'));
	ok(!(await page.$eval('[data-role=flame-chart]', (b) => b.hidden)), 'chart: --flamechart data offers the flame chart');
	await page.click('[data-role=flame-chart]');
	await afterFrame(page);
	const st = await state(page);
	let same = st.chart === true;
	const detail = [];
	for (let d = 1; d <= 3; d++) {
		const got = (await viewer(page, 'frames', d)).map((f) => ({ name: f.name, x: f.x, w: f.w }));
		const want = chartFrames(stacks, d);
		if (JSON.stringify(got) !== JSON.stringify(want)) {
			same = false;
			detail.push(JSON.stringify(got), JSON.stringify(want));
		}
	}
	ok(same, 'chart: frames in input order, merged only with their neighbours', detail.join('\n'));
	await page.screenshot({ path: join(SHOTS, 'flame-chart.png') });
	await page.click('[data-role=flame-chart]');
	const merged = (await viewer(page, 'frames', 2)).map((f) => f.name);
	ok(merged.join() === 'init,run', 'chart: the toggle returns to the merged graph', merged.join());
	await context.close();
}

/* Dark mode and a 4K screen. */
async function testScreens(browser) {
	let { page, context, log } = await open(browser, 'small.html', { colorScheme: 'dark' });
	checkClean(log, 'dark');
	const look = await page.evaluate(() => {
		const lum = (c) => {
			const m = c.match(/\d+/g).map(Number);
			return 0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2];
		};
		const root = document.querySelector('.plateau-viewer'), cs = getComputedStyle(root);
		const c = document.querySelector('[data-role=main] [data-role=flame]');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let dark = 0;
		for (let i = 0; i < d.length; i += 4)
			if (d[i] < 60 && d[i + 1] < 60 && d[i + 2] < 60)
				dark++;
		return { bg: lum(cs.backgroundColor), fg: lum(cs.color), darkShare: dark / (d.length / 4),
			button: lum(getComputedStyle(root.querySelector('[data-role=reset]')).color) };
	});
	ok(look.bg < 50 && look.fg > 180 && look.button > 180 && look.darkShare > 0.1,
		'dark: prefers-color-scheme dark gives a dark background, light text and a dark canvas', JSON.stringify(look));
	await page.screenshot({ path: join(SHOTS, 'dark.png') });
	await context.close();

	({ page, context, log } = await open(browser, 'small.html', { dpr: 3 }));
	const fit = await page.evaluate(() => {
		const c = document.querySelector('[data-role=main] [data-role=flame]');
		return { backing: c.width, css: c.clientWidth, scroll: document.documentElement.scrollWidth,
			view: document.documentElement.clientWidth };
	});
	ok(fit.backing === 3 * fit.css && fit.scroll <= fit.view,
		'4K: 1,280 px wide at devicePixelRatio 3: a sharp canvas, nothing wider than the window', JSON.stringify(fit));
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
	for (const t of [testSmall, testComponent, testViews, testChart, testScreens, testDiff, testHostile, testBig]) {
		try {
			await t(browser);
		} catch (e) {
			ok(false, `${t.name} ran to the end`, e.stack || e);
		}
	}
} finally {
	await browser.close();
}
process.exit(failures() ? 1 : 0);
