// Browser tests of plateau serve's web UI in headless Debian chromium.
//
//   node ui.test.mjs URL OUTDIR V1.folded V2.folded
//
// URL is a plateau serve that tests/cli/ui_serve.sh filled: shop.cpu with
// region=eu,version=v1 (V1.folded, 30 pushes over the last hour) and
// region=us,version=v2 (V2.folded, 11 pushes in the last half hour), and
// checkout.cpu once.  Prints "ok - ..." / "not ok - ..." lines and "# ..."
// notes (timings are printed, never asserted); screenshots go to OUTDIR.
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { ok, note, failures, readFolded } from './tap.mjs';

const [BASE, OUT, V1, V2] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WAIT = 20000;

const sum = (stacks) => stacks.reduce((a, [, n]) => a + n, 0);
const shareOf = (stacks, name) => sum(stacks.filter(([f]) => f.includes(name))) / sum(stacks);

const v1 = readFolded(V1), v2 = readFolded(V2);
const T1 = sum(v1), T2 = sum(v2);

/* One browser context per view: every request (and every one the CSP
 * blocked) and console error recorded. */
async function open(browser, path, opts = {}) {
	const context = await browser.newContext({
		viewport: opts.viewport || { width: 1280, height: 900 },
		colorScheme: opts.scheme || 'light',
	});
	await context.addInitScript(() => {
		/* Every data-state the page goes through, in order. */
		window.__states = [];
		new MutationObserver((records) => {
			for (const r of records)
				if (r.target === document.documentElement)
					window.__states.push(r.target.dataset.state);
		}).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-state'] });
		/* What the CSP stopped never becomes a request: count it as one. */
		document.addEventListener('securitypolicyviolation', (e) => window.__blocked(e.blockedURI));
	});
	const page = await context.newPage();
	const log = { errors: [], requests: [] };
	page.on('console', (m) => {
		if (m.type() === 'error')
			log.errors.push(m.text());
	});
	page.on('pageerror', (e) => log.errors.push(String(e)));
	context.on('request', (r) => log.requests.push(r.url()));
	await context.exposeBinding('__blocked', (src, uri) => log.requests.push(uri));
	log.t0 = Date.now();
	await page.goto(BASE + path);
	return { page, context, log };
}

const state = (page) => page.evaluate(() => document.documentElement.dataset.state);

async function settled(page, want = 'ready') {
	try {
		await page.waitForFunction((w) => document.documentElement.dataset.state === w, want, { timeout: WAIT });
		return true;
	} catch (e) {
		return false;
	}
}

/* The handle's state() of viewer i (total, zoomName, view, matchedShare...). */
const vstate = (page, i = 0) => page.evaluate((k) => window.__plateauUI.viewers()[k].state(), i);
const params = (page) => Object.fromEntries(new URL(page.url()).searchParams);
const afterFrame = (page) =>
	page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function shot(page, name) {
	await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
}

async function clickFrame(page, name, which) {
	const r = await page.evaluate(([n, w]) => window.__plateauUI.viewers()[0].locate(n, w), [name, which]);
	if (!r)
		return null;
	await page.mouse.click(r.x + Math.min(r.w / 2, 40), r.y + r.h / 2);
	await afterFrame(page);
	return r;
}

/* Drag on the timeline from fraction a to fraction b of its width. */
async function drag(page, a, b) {
	const box = await page.locator('[data-role=timeline]').boundingBox();
	const y = box.y + box.height / 2;
	await page.mouse.move(box.x + box.width * a, y);
	await page.mouse.down();
	await page.mouse.move(box.x + box.width * (a + b) / 2, y, { steps: 4 });
	await page.mouse.move(box.x + box.width * b, y, { steps: 4 });
	await page.mouse.up();
}

function onlyLocal(log, what) {
	const away = log.requests.filter((u) => !/^https?:/.test(u) || new URL(u).hostname !== '127.0.0.1');
	ok(log.requests.length > 0 && away.length === 0,
		`${what}: all ${log.requests.length} requests went to 127.0.0.1`, away.join('\n'));
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

async function testEmptyRoot(browser) {
	const { page, context, log } = await open(browser, '/');
	ok(await settled(page), '/ with no parameters: data-state ready', await state(page));
	const p = params(page);
	ok(p.query === 'checkout.cpu' && p.from === 'now-1h' && p.until === 'now',
		'/ picks the first app.type of the store and the last hour', page.url());
	ok(log.errors.length === 0, '/: no console or page errors', log.errors.join('\n'));
	onlyLocal(log, '/');
	await context.close();
}

async function testSingle(browser) {
	const q = encodeURIComponent('shop.cpu{region="eu"}');
	const { page, context, log } = await open(browser, `/?query=${q}&from=now-1h&until=now`);
	ok(await settled(page), 'single view: data-state ready', await state(page));
	note(`single view: navigation to ready ${Date.now() - log.t0} ms (the page's own: ${JSON.stringify(await page.evaluate(() => window.__plateauUI.timings()))})`);
	const st0 = await vstate(page);
	ok(st0.total === 30 * T1, 'single view: the total is the 30 pushes of region eu', `${st0.total} vs ${30 * T1}`);
	await shot(page, 'single');

	await clickFrame(page, 'find_match');
	const z = await vstate(page);
	const crumbs = await page.locator('[data-role=crumbs]').innerText();
	ok(z.zoomName === 'find_match' && crumbs.includes('find_match'),
		'click on find_match zooms to it (state and breadcrumbs name it)', `${z.zoomName} / ${crumbs}`);
	await shot(page, 'zoom');
	await page.keyboard.press('Escape');

	await page.locator('[data-role=search]').fill('match_length');
	await page.waitForFunction(() => /%/.test(document.querySelector('[data-role=matched]').textContent),
		null, { timeout: WAIT }).catch(() => null);
	const matched = await page.locator('[data-role=matched]').innerText();
	const m = /([\d.]+)%/.exec(matched);
	const want = 100 * shareOf(v1, 'match_length');
	ok(m && Math.abs(Number(m[1]) - want) < 0.006,
		`search match_length: matched share ${want.toFixed(2)}% of the recording`, matched);
	await page.locator('[data-role=search]').fill('');

	const names = new Set(v1.flatMap(([f]) => f));
	/* The table follows the search box: wait until it shows every row again. */
	await page.waitForFunction((n) => document.querySelectorAll('[data-role=functions] tbody tr').length >= n,
		names.size, { timeout: WAIT }).catch(() => null);
	const rows = await page.$$eval('[data-role=functions] tbody tr td:first-child', (tds) => tds.map((td) => td.title));
	ok(rows.length === names.size && rows.every((r) => names.has(r)),
		`table: one row per function of the recording (${names.size})`, rows.join(', '));

	await page.locator('[data-role=functions] tbody tr', { hasText: 'find_match' })
		.locator('[data-role=sandwich-open]').first().click();
	await afterFrame(page);
	const sw = await vstate(page);
	const callers = await page.evaluate(() => window.__plateauUI.viewers()[0].locate('compress_block', 'callers'));
	const callees = await page.evaluate(() => window.__plateauUI.viewers()[0].locate('match_length', 'callees'));
	ok(sw.view === 'sandwich' && sw.sandwich === 'find_match' && callers && callees,
		'sandwich of find_match: compress_block among its callers, match_length among its callees',
		JSON.stringify({ view: sw.view, f: sw.sandwich, callers, callees }));
	await shot(page, 'sandwich');
	await page.locator('[data-role=sandwich-back]').click();

	/* The timeline: drag over its middle half. */
	await page.evaluate(() => {
		window.__states = [];
	});
	await drag(page, 0.25, 0.75);
	const moved = await settled(page);
	const p = params(page);
	const st1 = await vstate(page);
	const states = await page.evaluate(() => window.__states);
	ok(RFC3339.test(p.from) && RFC3339.test(p.until) && p.from < p.until && p.query === 'shop.cpu{region="eu"}',
		'drag on the timeline: the URL gets the window as RFC 3339 from/until', page.url());
	ok(moved && states[0] === 'loading' && states[states.length - 1] === 'ready',
		'drag on the timeline: data-state went loading then ready', states.join(' '));
	const k = st1.total / T1;
	ok(Number.isInteger(k) && k > 5 && k < 30,
		'drag on the timeline: the graph repainted with the pushes of the window (k of 30)', `${st1.total} = ${k} x ${T1}`);
	note(`drag kept ${k} of 30 pushes`);
	await shot(page, 'timeline-window');

	await page.goBack();
	ok(await settled(page), 'back: data-state ready', await state(page));
	const back = params(page);
	const st2 = await vstate(page);
	ok(back.from === 'now-1h' && back.until === 'now' && st2.total === 30 * T1,
		'back restores the URL and the graph of the whole hour', `${page.url()} total ${st2.total}`);
	await page.goForward();
	ok(await settled(page) && params(page).from === p.from && (await vstate(page)).total === st1.total,
		'forward restores the window', page.url());

	await page.locator('[data-preset="6h"]').click();
	ok(await settled(page) && params(page).from === 'now-6h', 'preset 6h: from=now-6h', page.url());

	ok(log.errors.length === 0, 'single view: no console or page errors', log.errors.join('\n'));
	onlyLocal(log, 'single view');
	await context.close();
}

async function testQueryBar(browser) {
	const { page, context, log } = await open(browser, '/?query=shop.cpu&from=now-1h&until=now');
	await settled(page);
	const input = page.locator('[data-role=matchers]');
	await input.click();
	await input.pressSequentially('reg');
	const list = page.locator('[data-role=suggest]');
	await list.locator('li', { hasText: 'region' }).waitFor({ timeout: WAIT });
	ok((await list.locator('li').allInnerTexts()).includes('region'), 'autocomplete: typing "reg" offers label name region');
	await page.keyboard.press('Enter');
	ok(await input.inputValue() === 'region="', 'autocomplete: Enter takes it as region="', await input.inputValue());
	await list.locator('li', { hasText: 'us' }).waitFor({ timeout: WAIT });
	const values = await list.locator('li').allInnerTexts();
	ok(values.join() === 'eu,us', 'autocomplete: the values of region are offered (eu, us)', values.join());
	await page.keyboard.press('ArrowDown');
	await page.keyboard.press('Enter');
	ok(await input.inputValue() === 'region="us"', 'autocomplete: ArrowDown Enter takes region="us"', await input.inputValue());
	await page.keyboard.press('Enter');
	await page.waitForURL(/region/);
	ok(await settled(page) && params(page).query === 'shop.cpu{region="us"}' && (await vstate(page)).total === 11 * T2,
		'submitting the matchers queries shop.cpu{region="us"}: its 11 pushes', page.url());

	/* Group by. */
	await page.goto(BASE + '/?query=shop.cpu&from=now-1h&until=now&groupBy=region');
	await settled(page);
	const box = page.locator('[data-role=groupby-box]');
	await page.waitForFunction(() => document.querySelector('[data-role=groupby-box]').dataset.state !== 'loading',
		null, { timeout: WAIT });
	const rows = await box.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.dataset.value, Number(tr.dataset.total)]));
	ok(JSON.stringify(rows) === JSON.stringify([['eu', 30 * T1], ['us', 11 * T2]]),
		'group by region: eu and us with the totals of their pushes, largest first', JSON.stringify(rows));
	await shot(page, 'groupby');
	await box.locator('tr[data-value=us]').click();
	ok(await settled(page) && params(page).query === 'shop.cpu{region="us"}',
		'group by: a click on a row filters by that value', page.url());

	ok(log.errors.length === 0, 'query bar: no console or page errors', log.errors.join('\n'));
	onlyLocal(log, 'query bar');
	await context.close();
}

async function testShowAll(browser) {
	const { page, context, log } = await open(browser, '/?query=shop.cpu&maxNodes=5');
	ok(await settled(page), 'maxNodes=5: data-state ready', await state(page));
	const notice = page.locator('[data-role=dropped]');
	const text = (await notice.isVisible()) ? await notice.innerText() : '';
	ok(/merged|other|dropped/.test(text), 'maxNodes=5: the viewer says frames were cut', text);
	const before = (await vstate(page)).frames;
	await page.locator('[data-role=show-all]').click();
	ok(await settled(page) && params(page).maxNodes === '0', 'Show all: the URL asks maxNodes=0', page.url());
	const after = await vstate(page);
	ok(after.frames > before && !(await notice.isVisible()),
		'Show all: every frame drawn, no notice', `${before} -> ${after.frames}`);
	ok(log.errors.length === 0, 'show all: no console or page errors', log.errors.join('\n'));
	await context.close();
}

const LR = 'leftQuery=' + encodeURIComponent('shop.cpu{version="v1"}') +
	'&rightQuery=' + encodeURIComponent('shop.cpu{version="v2"}') + '&from=now-1h&until=now';

async function testComparison(browser) {
	const { page, context, log } = await open(browser, `/comparison?${LR}&leftFrom=now-1h&leftUntil=now&rightFrom=now-1h&rightUntil=now`);
	ok(await settled(page), 'comparison: data-state ready', await state(page));
	const l = await vstate(page, 0), r = await vstate(page, 1);
	ok(l.total === 30 * T1 && r.total === 11 * T2, 'comparison: left v1 and right v2 side by side', `${l.total} ${r.total}`);
	await shot(page, 'comparison');
	await page.locator('[data-brush=right]').click();
	await drag(page, 0.6, 0.95);
	ok(await settled(page), 'comparison: the right brush repaints', await state(page));
	const p = params(page);
	const r2 = await vstate(page, 1);
	ok(RFC3339.test(p.rightFrom) && RFC3339.test(p.rightUntil) && p.leftFrom === 'now-1h' && p.leftUntil === 'now',
		'comparison: a right-brush drag sets rightFrom/rightUntil only', page.url());
	ok(r2.total < r.total && r2.total > 0 && (await vstate(page, 0)).total === l.total,
		'comparison: the right side shows its window, the left is unchanged', `${r.total} -> ${r2.total}`);
	await shot(page, 'comparison-brush');
	ok(log.errors.length === 0, 'comparison: no console or page errors', log.errors.join('\n'));
	onlyLocal(log, 'comparison');
	await context.close();
}

async function testDiff(browser) {
	const { page, context, log } = await open(browser, `/diff?${LR}&leftFrom=now-1h&leftUntil=now&rightFrom=now-1h&rightUntil=now`);
	ok(await settled(page), 'diff: data-state ready', await state(page));
	const panes = await page.locator('[data-role=viewer]').count();
	const grey = await page.locator('[data-role=greylabel]').isVisible();
	ok(panes === 1 && grey, 'diff: one differential viewer, with its noise control');
	const st = await vstate(page);
	ok(st.total === 11 * T2, 'diff: widths are the right side (v2)', `${st.total}`);
	await shot(page, 'diff');
	ok(log.errors.length === 0, 'diff: no console or page errors', log.errors.join('\n'));
	onlyLocal(log, 'diff');
	await context.close();
}

async function testError(browser) {
	const q = encodeURIComponent('shop.cpu{region=~"("}');
	const { page, context, log } = await open(browser, `/?query=${q}`);
	ok(await settled(page, 'error'), 'bad regex: data-state error', await state(page));
	const box = page.locator('[data-role=error]');
	const text = (await box.isVisible()) ? await box.innerText() : '';
	ok(/400/.test(text) && /bad regex/.test(text), "bad regex: the server's 400 message is shown", text);
	await shot(page, 'error');
	ok(log.errors.every((e) => /status of 400/.test(e)), 'bad regex: no errors but the 400s', log.errors.join('\n'));
	await context.close();
}

async function testDark4k(browser) {
	const q = encodeURIComponent('shop.cpu');
	const { page, context, log } = await open(browser, `/?query=${q}&groupBy=region`, { scheme: 'dark' });
	ok(await settled(page), 'dark mode: data-state ready', await state(page));
	const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
	ok(/rgb\((\d+), (\d+), (\d+)\)/.test(bg) && Number(/\d+/.exec(bg)[0]) < 64, 'dark mode: a dark page background', bg);
	await page.waitForFunction(() => document.querySelector('[data-role=groupby-box]').dataset.state !== 'loading');
	await shot(page, 'dark');
	await context.close();
	const big = await open(browser, `/comparison?${LR}`, { viewport: { width: 3840, height: 2160 } });
	ok(await settled(big.page), '4K: comparison ready at 3840x2160', await state(big.page));
	const w = await big.page.evaluate(() => [...document.querySelectorAll('[data-role=viewer]')].map((e) => e.clientWidth));
	ok(w.length === 2 && w.every((x) => x > 1700), '4K: both viewers use the width', w.join());
	await big.page.screenshot({ path: join(OUT, '4k.png') });
	ok(log.errors.length === 0 && big.log.errors.length === 0, 'dark and 4K: no console or page errors',
		log.errors.concat(big.log.errors).join('\n'));
	await big.context.close();
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
	for (const t of [testEmptyRoot, testSingle, testQueryBar, testShowAll, testComparison, testDiff, testError, testDark4k]) {
		try {
			await t(browser);
		} catch (e) {
			ok(false, `${t.name} ran to its end`, e.stack);
		}
	}
} finally {
	await browser.close();
}
process.exit(failures() ? 1 : 0);
