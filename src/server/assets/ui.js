/* SPDX-License-Identifier: MIT */
/* plateau's web UI: the page `plateau serve` answers at /, /comparison and
 * /diff (doc/ui.md).  The URL is the whole state, with Pyroscope's
 * parameter names; this script reads it, fetches the JSON endpoints of the
 * same server and hands the profiles to PlateauViewer (viewer.js, inlined
 * before this script).  <html data-state> is "loading" while fetching,
 * "ready" once every viewer painted the current URL's data, "error" (with
 * the message shown) when a request failed, "empty" when the store has no
 * series yet. */
(function () {
	'use strict';

	const MAX_NODES = 500000;   /* what the page asks for: no silent cut below this */
	const TIMELINE_POINTS = 300;
	const GROUP_TOP = 20;       /* rows shown in the group-by table */
	const GROUP_MAX = 100;      /* label values summed for it */

	const $ = (sel, root) => (root || document).querySelector(sel);
	const el = (tag, attrs, ...kids) => {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (k === 'class')
				e.className = v;
			else if (k === 'text')
				e.textContent = v;
			else
				e.setAttribute(k, v);
		}
		for (const k of kids)
			e.append(k);
		return e;
	};

	/* ---- times and durations, as the server reads them (doc/selector.md) ---- */

	const UNIT_S = { ns: 1e-9, us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

	/* A duration such as 1h30m in seconds, or NaN. */
	function parseDuration(s) {
		const re = /(\d*\.?\d+)(ns|us|ms|s|m|h|d|w|y)/y;
		let total = 0, m;
		if (!s)
			return NaN;
		re.lastIndex = 0;
		while (re.lastIndex < s.length) {
			if (!(m = re.exec(s)))
				return NaN;
			total += Number(m[1]) * UNIT_S[m[2]];
		}
		return total;
	}

	/* A from/until value in unix seconds (now-1h, RFC 3339, unix s/ms/us/ns), or NaN. */
	function parseTime(s, now) {
		s = (s || '').trim();
		if (s === 'now')
			return now;
		let m = /^now([+-])(.+)$/.exec(s);
		if (m) {
			const d = parseDuration(m[2]);
			return m[1] === '-' ? now - d : now + d;
		}
		if (/^\d{1,19}$/.test(s)) {
			const n = Number(s), digits = s.length;
			return digits <= 10 ? n : digits <= 13 ? n / 1e3 : digits <= 16 ? n / 1e6 : n / 1e9;
		}
		/* Date.parse takes at most milliseconds: cut longer fractions. */
		m = /^(\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d)(\.\d+)?(.*)$/.exec(s);
		if (!m)
			return NaN;
		const frac = m[2] ? m[2].slice(0, 4) : '';
		return Date.parse(m[1].replace(/[t ]/, 'T') + frac + m[3].toUpperCase()) / 1000;
	}

	const nowSec = () => Date.now() / 1000;
	const iso = (sec) => new Date(Math.round(sec) * 1000).toISOString().replace('.000Z', 'Z');

	/* Seconds as "1h30m", the server's grammar. */
	function durationText(sec) {
		sec = Math.max(1, Math.round(sec));
		let out = '';
		for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
			if (sec >= n) {
				out += Math.floor(sec / n) + u;
				sec %= n;
			}
		}
		return out;
	}

	/* The two halves of [from, until] for a comparison: relative stays relative. */
	function halves(from, until) {
		const m = /^now-(.+)$/.exec(from);
		if (m && until === 'now' && parseDuration(m[1]) > 0) {
			const mid = 'now-' + durationText(parseDuration(m[1]) / 2);
			return [[from, mid], [mid, 'now']];
		}
		const now = nowSec(), a = parseTime(from, now), b = parseTime(until, now);
		if (!(a < b))
			return [[from, until], [from, until]];
		const mid = iso((a + b) / 2);
		return [[from, mid], [mid, until]];
	}

	/* ---- values ---- */

	function fmtNumber(v) {
		const a = Math.abs(v);
		const d = a >= 100 || Number.isInteger(v) ? 0 : a >= 10 ? 1 : 2;
		return v.toLocaleString('en-US', { maximumFractionDigits: d });
	}

	/* A raw value in its unit (nanoseconds as time, bytes as KiB..., else a count). */
	function fmtValue(v, unit) {
		const steps = {
			nanoseconds: [[3600e9, 'h'], [60e9, 'min'], [1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']],
			bytes: [[1 << 30, 'GiB'], [1 << 20, 'MiB'], [1 << 10, 'KiB'], [1, 'B']],
		}[unit];
		if (!steps)
			return fmtNumber(v) + (unit && unit !== 'count' && unit !== 'samples' ? ' ' + unit : '');
		for (const [n, name] of steps)
			if (Math.abs(v) >= n || n === 1)
				return fmtNumber(v / n) + ' ' + name;
		return String(v);
	}

	/* ---- selectors ---- */

	/* "app.type{k="v"}" as [app.type, k="v"]. */
	function splitQuery(q) {
		q = (q || '').trim();
		const i = q.indexOf('{');
		if (i < 0)
			return [q, ''];
		const inner = q.endsWith('}') ? q.slice(i + 1, -1) : q.slice(i + 1);
		return [q.slice(0, i), inner.trim()];
	}

	function joinQuery(appType, matchers) {
		matchers = (matchers || '').trim();
		return matchers ? `${appType}{${matchers}}` : appType;
	}

	const quote = (v) => '"' + String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';

	function withMatcher(q, name, value) {
		const [appType, inner] = splitQuery(q);
		const m = `${name}=${quote(value)}`;
		return joinQuery(appType, inner ? `${inner},${m}` : m);
	}

	/* ---- the URL is the state ---- */

	const PARAMS = ['query', 'leftQuery', 'rightQuery', 'from', 'until', 'leftFrom', 'leftUntil',
		'rightFrom', 'rightUntil', 'groupBy', 'maxNodes'];

	function viewOf(path) {
		return path.replace(/\/+$/, '') === '/comparison' ? 'comparison'
			: path.replace(/\/+$/, '') === '/diff' ? 'diff' : 'single';
	}

	function readState() {
		const p = new URLSearchParams(location.search);
		const st = { view: viewOf(location.pathname) };
		for (const k of PARAMS)
			st[k] = p.get(k) || '';
		return st;
	}

	function urlOf(st) {
		const p = new URLSearchParams();
		const keys = st.view === 'single' ? ['query', 'from', 'until', 'groupBy', 'maxNodes']
			: ['leftQuery', 'rightQuery', 'from', 'until', 'leftFrom', 'leftUntil', 'rightFrom', 'rightUntil', 'maxNodes'];
		for (const k of keys)
			if (st[k])
				p.set(k, st[k]);
		const path = st.view === 'single' ? '/' : '/' + st.view;
		const qs = p.toString().replace(/%2C/g, ',').replace(/%3A/g, ':');
		return qs ? `${path}?${qs}` : path;
	}

	/* Fill what the URL leaves out; firstQuery is the store's first app.type. */
	function withDefaults(st, firstQuery) {
		const out = Object.assign({}, st);
		out.from = out.from || 'now-1h';
		out.until = out.until || 'now';
		if (out.view === 'single') {
			out.query = out.query || out.leftQuery || firstQuery;
			return out;
		}
		out.leftQuery = out.leftQuery || out.query || firstQuery;
		out.rightQuery = out.rightQuery || out.leftQuery;
		out.query = '';
		const [l, r] = halves(out.from, out.until);
		if (!out.leftFrom || !out.leftUntil)
			[out.leftFrom, out.leftUntil] = l;
		if (!out.rightFrom || !out.rightUntil)
			[out.rightFrom, out.rightUntil] = r;
		return out;
	}

	const needsFirst = (st) => st.view === 'single' ? !st.query : !st.leftQuery && !st.query;

	/* ---- fetching ---- */

	let controller = null;

	async function getJSON(path, params, signal) {
		const qs = new URLSearchParams();
		for (const [k, v] of Object.entries(params || {}))
			if (v !== '' && v !== undefined && v !== null)
				qs.set(k, v);
		const url = qs.toString() ? `${path}?${qs}` : path;
		let res;
		try {
			res = await fetch(url, { signal, headers: { Accept: 'application/json' } });
		} catch (e) {
			if (e.name === 'AbortError')
				throw e;
			throw new Error(`${path}: no answer from the server (${e.message})`);
		}
		const text = await res.text();
		let body = null;
		try {
			body = JSON.parse(text);
		} catch (e) {
			body = null;
		}
		if (!res.ok) {
			const why = body && typeof body.error === 'string' ? body.error : text.slice(0, 300);
			throw new Error(`${path} answered ${res.status}: ${why}`);
		}
		if (body === null)
			throw new Error(`${path} answered something that is not JSON`);
		return body;
	}

	/* ---- page state ---- */

	const html = document.documentElement;
	const errBox = $('[data-role=error]');
	let gen = 0;           /* bumped by every render: late answers of older ones are dropped */
	let waiting = 0;       /* viewers still to paint the current render's data */
	const timings = [];    /* [what, ms] of the last render, for tests and the curious */

	function setState(s) {
		html.dataset.state = s;
	}

	function fail(e) {
		errBox.textContent = e.message || String(e);
		errBox.hidden = false;
		setState('error');
	}

	/* ---- query bar ---- */

	const bar = $('[data-role=bar]');
	const sidesBox = $('[data-role=sides]');
	const fromIn = $('[data-role=from]');
	const untilIn = $('[data-role=until]');
	const groupSel = $('[data-role=groupby]');
	let appTypes = [];     /* "app.type" of every series, sorted */
	let sides = [];        /* the query rows: one (single) or two (left, right) */

	function sideRow(name) {
		const row = el('div', { class: 'ui-row', 'data-side': name });
		const select = el('select', { 'data-role': 'apptype', 'aria-label': `${name} app and profile type` });
		const matchers = el('input', {
			class: 'ui-matchers', 'data-role': 'matchers', spellcheck: 'false',
			placeholder: 'label matchers: region="eu-west", endpoint=~"/api/.*"', 'aria-label': `${name} label matchers`,
		});
		const list = el('ul', { class: 'ui-suggest', role: 'listbox', 'data-role': 'suggest', hidden: '' });
		const wrap = el('span', { class: 'ui-matchwrap' },
			el('span', { class: 'ui-brace', text: '{' }), matchers, el('span', { class: 'ui-brace', text: '}' }), list);
		if (name !== 'query')
			row.append(el('span', { class: `ui-side ${name}`, text: name === 'left' ? 'Left' : 'Right' }));
		row.append(select, wrap);
		const side = { name, row, select, matchers, list };
		if (name !== 'query') {
			side.from = el('input', { class: 'ui-time', 'data-role': `${name}-from`, spellcheck: 'false', 'aria-label': `${name} from` });
			side.until = el('input', { class: 'ui-time', 'data-role': `${name}-until`, spellcheck: 'false', 'aria-label': `${name} until` });
			row.append(el('label', {}, 'from ', side.from), el('label', {}, 'until ', side.until));
		}
		autocomplete(side);
		select.addEventListener('change', () => bar.requestSubmit());
		return side;
	}

	function fillSelect(select, value) {
		const have = new Set(appTypes);
		select.replaceChildren(...appTypes.map((t) => el('option', { value: t, text: t })));
		if (value && !have.has(value))
			select.prepend(el('option', { value, text: value }));
		select.value = value;
	}

	/* Show st in the bar; rebuild the rows when the view changed. */
	function syncBar(st) {
		const names = st.view === 'single' ? ['query'] : ['left', 'right'];
		if (sides.map((s) => s.name).join() !== names.join()) {
			sides = names.map(sideRow);
			sidesBox.replaceChildren(...sides.map((s) => s.row));
		}
		const queries = st.view === 'single' ? [st.query] : [st.leftQuery, st.rightQuery];
		sides.forEach((s, i) => {
			const [appType, inner] = splitQuery(queries[i]);
			fillSelect(s.select, appType);
			s.matchers.value = inner;
			if (s.from) {
				s.from.value = st[`${s.name}From`];
				s.until.value = st[`${s.name}Until`];
			}
		});
		fromIn.value = st.from;
		untilIn.value = st.until;
		$('[data-role=groupby-label]').hidden = st.view !== 'single';
		for (const a of document.querySelectorAll('[data-role=nav] a'))
			a.setAttribute('aria-current', a.dataset.view === st.view ? 'page' : 'false');
	}

	/* The state the bar shows. */
	function barState(cur) {
		const st = Object.assign({}, cur, { from: fromIn.value.trim(), until: untilIn.value.trim() });
		const q = (s) => joinQuery(s.select.value, s.matchers.value);
		if (cur.view === 'single') {
			st.query = q(sides[0]);
			st.groupBy = groupSel.value;
		} else {
			st.leftQuery = q(sides[0]);
			st.rightQuery = q(sides[1]);
			for (const s of sides) {
				st[`${s.name}From`] = s.from.value.trim();
				st[`${s.name}Until`] = s.until.value.trim();
			}
		}
		return st;
	}

	bar.addEventListener('submit', (ev) => {
		ev.preventDefault();
		navigate(barState(readState()));
	});

	for (const b of document.querySelectorAll('[data-preset]')) {
		b.addEventListener('click', () => {
			const st = barState(readState());
			st.from = 'now-' + b.dataset.preset;
			st.until = 'now';
			st.leftFrom = st.leftUntil = st.rightFrom = st.rightUntil = '';
			navigate(st);
		});
	}

	groupSel.addEventListener('change', () => bar.requestSubmit());

	/* The nav links carry the current queries and range to the other views. */
	for (const a of document.querySelectorAll('[data-role=nav] a')) {
		a.addEventListener('click', (ev) => {
			ev.preventDefault();
			const cur = readState();
			const q = cur.query || cur.leftQuery;
			navigate(Object.assign(withDefaults({ view: a.dataset.view, query: q, from: cur.from, until: cur.until,
				leftQuery: cur.view === 'single' ? '' : cur.leftQuery, rightQuery: cur.view === 'single' ? '' : cur.rightQuery,
				leftFrom: cur.leftFrom, leftUntil: cur.leftUntil, rightFrom: cur.rightFrom, rightUntil: cur.rightUntil }, q)));
		});
	}

	/* ---- label autocomplete in the matcher box ---- */

	const labelCache = new Map();

	function cached(key, load) {
		if (!labelCache.has(key))
			labelCache.set(key, load().catch((e) => {
				labelCache.delete(key);
				throw e;
			}));
		return labelCache.get(key);
	}

	/* What the caret is in: {kind: 'name'|'value', name, prefix, start} or null. */
	function caretContext(text) {
		let start = 0, inQuote = false;
		for (let i = 0; i < text.length; i++) {
			const c = text[i];
			if (inQuote && c === '\\')
				i++;
			else if (c === '"')
				inQuote = !inQuote;
			else if (c === ',' && !inQuote)
				start = i + 1;
		}
		const seg = text.slice(start);
		let m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*"?((?:[^"\\]|\\.)*)$/.exec(seg);
		if (m)
			return { kind: 'value', name: m[1], op: m[2], prefix: m[3], start };
		m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)?$/.exec(seg);
		if (m)
			return { kind: 'name', prefix: m[1] || '', start };
		return null;
	}

	function autocomplete(side) {
		const { matchers: input, list } = side;
		let items = [], active = -1, ctx = null, seq = 0;

		const close = () => {
			list.hidden = true;
			items = [];
			active = -1;
		};
		const mark = () => {
			[...list.children].forEach((li, i) => li.setAttribute('aria-selected', String(i === active)));
			if (list.children[active])
				list.children[active].scrollIntoView({ block: 'nearest' });
		};
		const accept = (i) => {
			const text = input.value, caret = input.selectionStart;
			const head = text.slice(0, ctx.start), tail = text.slice(caret);
			const lead = ctx.start > 0 ? ' ' : '';
			const ins = ctx.kind === 'name' ? `${items[i]}="` : `${ctx.name}${ctx.op}${quote(items[i])}`;
			input.value = head.replace(/\s*$/, '') + lead + ins + tail;
			const pos = (head.replace(/\s*$/, '') + lead + ins).length;
			input.setSelectionRange(pos, pos);
			close();
			input.focus();
			if (ctx.kind === 'name')
				suggest();
		};
		async function suggest() {
			const my = ++seq;
			const appType = side.select.value;
			ctx = caretContext(input.value.slice(0, input.selectionStart));
			if (!ctx || !appType)
				return close();
			let all;
			try {
				all = ctx.kind === 'name'
					? await cached(`n ${appType}`, () => getJSON('/api/v1/labels', { query: appType }))
					: await cached(`v ${appType} ${ctx.name}`, () =>
						getJSON(`/api/v1/labels/${encodeURIComponent(ctx.name)}/values`, { query: appType }));
			} catch (e) {
				return close();
			}
			if (my !== seq || document.activeElement !== input)
				return;
			const p = ctx.prefix.toLowerCase();
			items = all.filter((s) => s.toLowerCase().includes(p)).slice(0, 50);
			if (!items.length)
				return close();
			list.replaceChildren(...items.map((s, i) => {
				const li = el('li', { role: 'option', text: s });
				li.addEventListener('mousedown', (ev) => {
					ev.preventDefault();
					accept(i);
				});
				return li;
			}));
			active = 0;
			mark();
			list.hidden = false;
		}
		input.addEventListener('input', suggest);
		input.addEventListener('focus', suggest);
		input.addEventListener('blur', close);
		input.addEventListener('keydown', (ev) => {
			if (list.hidden)
				return;
			if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
				active = (active + (ev.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length;
				mark();
			} else if (ev.key === 'Enter' || ev.key === 'Tab') {
				accept(active);
			} else if (ev.key === 'Escape') {
				close();
			} else {
				return;
			}
			ev.preventDefault();
			ev.stopPropagation();
		});
	}

	/* ---- the timeline ---- */

	const tlBox = $('[data-role=timeline]');
	const tlCanvas = $('canvas', tlBox);
	const tlInfo = $('[data-role=tlinfo]');
	/* t0, t1: the range drawn (unix s); series: [{values, from, step, colour}];
	 * brushes: [{side, from, until}] in unix s; brushSide: what a drag selects. */
	const tl = { t0: 0, t1: 1, series: [], brushes: [], brushSide: 'left', drag: null, unit: '' };

	const css = (name) => getComputedStyle(html).getPropertyValue(name).trim();

	function stepFor(t0, t1) {
		return Math.max(1, Math.ceil((t1 - t0) / TIMELINE_POINTS)) + 's';
	}

	function drawTimeline() {
		const dpr = window.devicePixelRatio || 1;
		const W = tlBox.clientWidth, H = tlBox.clientHeight;
		tlCanvas.width = Math.max(1, Math.round(W * dpr));
		tlCanvas.height = Math.max(1, Math.round(H * dpr));
		const g = tlCanvas.getContext('2d');
		g.setTransform(dpr, 0, 0, dpr, 0, 0);
		g.clearRect(0, 0, W, H);
		const span = tl.t1 - tl.t0;
		const x = (t) => (t - tl.t0) / span * W;
		let max = 0;
		for (const s of tl.series)
			for (const v of s.values)
				max = Math.max(max, v);
		const top = 16, base = H - 14;
		for (const s of tl.series) {
			g.fillStyle = s.colour;
			g.globalAlpha = tl.series.length > 1 ? 0.55 : 0.85;
			s.values.forEach((v, i) => {
				if (!v)
					return;
				const a = x(s.from + i * s.step), b = x(s.from + (i + 1) * s.step);
				const h = max ? v / max * (base - top) : 0;
				g.fillRect(a, base - h, Math.max(1, b - a - (b - a > 3 ? 1 : 0)), h);
			});
		}
		g.globalAlpha = 1;
		for (const b of tl.brushes.concat(tl.drag ? [tl.drag] : [])) {
			const a = x(b.from), e = x(b.until);
			g.fillStyle = css(b.side === 'right' ? '--ui-right' : '--ui-left');
			g.globalAlpha = 0.18;
			g.fillRect(a, 0, e - a, H);
			g.globalAlpha = 1;
			g.fillRect(a, 0, 1.5, H);
			g.fillRect(e - 1.5, 0, 1.5, H);
		}
		g.fillStyle = css('--ui-muted');
		g.font = '11px system-ui, sans-serif';
		g.textBaseline = 'alphabetic';
		g.fillText(max ? `max ${fmtValue(max, tl.unit)} per ${durationText(tl.series[0].step)}` : 'nothing in this range', 4, 12);
		const ticks = Math.max(2, Math.floor(W / 140));
		for (let i = 0; i <= ticks; i++) {
			const t = tl.t0 + span * i / ticks;
			const label = tickLabel(t, span);
			const w = g.measureText(label).width;
			g.fillText(label, Math.min(Math.max(0, x(t) - w / 2), W - w), H - 2);
		}
	}

	function tickLabel(t, span) {
		const d = new Date(t * 1000);
		const p2 = (n) => String(n).padStart(2, '0');
		const hm = `${p2(d.getHours())}:${p2(d.getMinutes())}`;
		return span > 2 * 86400 ? `${d.getMonth() + 1}/${d.getDate()} ${hm}` : span < 600 ? `${hm}:${p2(d.getSeconds())}` : hm;
	}

	function timeAt(clientX) {
		const r = tlBox.getBoundingClientRect();
		const f = Math.min(1, Math.max(0, (clientX - r.left) / r.width));
		return tl.t0 + f * (tl.t1 - tl.t0);
	}

	tlBox.addEventListener('pointerdown', (ev) => {
		if (ev.button !== 0)
			return;
		tlBox.setPointerCapture(ev.pointerId);
		const t = timeAt(ev.clientX);
		tl.drag = { side: tl.brushSide, at: t, from: t, until: t, x0: ev.clientX };
		ev.preventDefault();
	});
	tlBox.addEventListener('pointermove', (ev) => {
		if (!tl.drag)
			return;
		const t = timeAt(ev.clientX);
		tl.drag.from = Math.min(tl.drag.at, t);
		tl.drag.until = Math.max(tl.drag.at, t);
		drawTimeline();
	});
	const endDrag = (ev) => {
		const d = tl.drag;
		tl.drag = null;
		if (!d)
			return;
		if (ev.type !== 'pointerup' || Math.abs(ev.clientX - d.x0) < 3) {
			drawTimeline();
			return;
		}
		const st = readState();
		const from = iso(Math.floor(d.from)), until = iso(Math.ceil(d.until));
		if (st.view === 'single')
			Object.assign(st, { from, until });
		else
			Object.assign(st, { [`${d.side}From`]: from, [`${d.side}Until`]: until });
		navigate(st);
	};
	tlBox.addEventListener('pointerup', endDrag);
	tlBox.addEventListener('pointercancel', endDrag);
	window.addEventListener('resize', drawTimeline);
	if (window.matchMedia)
		window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', drawTimeline);

	function brushButtons() {
		const mk = (side) => {
			const b = el('button', { type: 'button', 'data-brush': side, 'aria-pressed': String(tl.brushSide === side),
				class: side, text: side === 'left' ? 'left window' : 'right window' });
			b.addEventListener('click', () => {
				tl.brushSide = side;
				for (const x of tlInfo.querySelectorAll('[data-brush]'))
					x.setAttribute('aria-pressed', String(x.dataset.brush === side));
			});
			return b;
		};
		return [el('span', { text: 'a drag selects the' }), mk('left'), mk('right')];
	}

	async function loadTimeline(queries, from, until, signal) {
		const now = nowSec();
		const t0 = parseTime(from, now), t1 = parseTime(until, now);
		if (!(t0 < t1))
			throw new Error(`the range ${from} .. ${until} is empty or not a time range`);
		const step = stepFor(t0, t1);
		const colours = [css('--ui-left'), css('--ui-right')];
		if (queries.length === 1)
			colours[0] = css('--ui-plot');
		const answers = await Promise.all(queries.map((q) =>
			getJSON('/api/v1/timeline', { query: q, from, until, step }, signal)));
		return {
			t0, t1, series: answers.map((a, i) => ({
				values: a.values || [], from: Number(a.from) / 1e9, step: Number(a.step) / 1e9, colour: colours[i],
			})),
		};
	}

	/* ---- viewers ---- */

	const viewsBox = $('[data-role=views]');
	let panes = [];        /* [{name, root, viewer}] */

	function layout(names, titles) {
		if (panes.map((p) => p.name).join() === names.join()) {
			panes.forEach((p, i) => {
				p.title.textContent = titles[i];
			});
			return;
		}
		for (const p of panes)
			if (p.viewer)
				p.viewer.destroy();
		panes = names.map((name, i) => {
			const title = el('h2', { class: name, text: titles[i] });
			const root = el('div', { 'data-role': 'viewer', 'data-side': name });
			return { name, title, root, viewer: null, box: el('section', { class: 'ui-pane', 'data-pane': name }, title, root) };
		});
		viewsBox.className = 'ui-views' + (names.length === 2 ? ' two' : '');
		viewsBox.replaceChildren(...panes.map((p) => p.box));
	}

	function onReady() {
		if (waiting > 0 && --waiting === 0 && html.dataset.state === 'loading') {
			timings.push(['ready', Math.round(performance.now() - renderStart)]);
			setState('ready');
		}
	}

	function showAll() {
		navigate(Object.assign(readState(), { maxNodes: '0' }));
	}

	/* Hand each pane its data; data-state turns "ready" once all painted. */
	function paint(datas) {
		waiting = datas.length;
		panes.forEach((p, i) => {
			if (p.viewer)
				p.viewer.setData(datas[i]);
			else
				p.viewer = window.PlateauViewer.mount(p.root, datas[i], { onReady, onShowAll: showAll, header: true });
		});
	}

	/* ---- group by a label ---- */

	const groupBox = $('[data-role=groupby-box]');

	async function loadGroupLabels(st, signal) {
		const [appType] = splitQuery(st.query);
		const names = await cached(`n ${appType}`, () => getJSON('/api/v1/labels', { query: appType }, signal));
		const want = st.groupBy;
		groupSel.replaceChildren(el('option', { value: '', text: '(none)' }),
			...names.filter((n) => n !== 'service_name').map((n) => el('option', { value: n, text: n })));
		if (want && !names.includes(want))
			groupSel.append(el('option', { value: want, text: want }));
		groupSel.value = want;
	}

	/* A table of the selection's total per value of st.groupBy: one timeline
	 * of one step per value, at most GROUP_MAX values, the top GROUP_TOP shown. */
	async function renderGroupBy(st, unit, g, signal) {
		if (st.view !== 'single' || !st.groupBy) {
			groupBox.hidden = true;
			groupBox.replaceChildren();
			return;
		}
		groupBox.hidden = false;
		groupBox.dataset.state = 'loading';
		groupBox.replaceChildren(el('span', { class: 'ui-note', text: `summing ${st.groupBy} values…` }));
		try {
			const now = nowSec();
			const span = parseTime(st.until, now) - parseTime(st.from, now);
			const step = Math.ceil(span) + 1 + 's';
			const values = await getJSON(`/api/v1/labels/${encodeURIComponent(st.groupBy)}/values`, { query: st.query }, signal);
			const summed = values.slice(0, GROUP_MAX);
			const totals = new Array(summed.length);
			let next = 0;
			const worker = async () => {
				while (next < summed.length) {
					const i = next++;
					const a = await getJSON('/api/v1/timeline',
						{ query: withMatcher(st.query, st.groupBy, summed[i]), from: st.from, until: st.until, step }, signal);
					totals[i] = (a.values || []).reduce((x, y) => x + y, 0);
				}
			};
			await Promise.all([worker(), worker(), worker(), worker()]);
			if (g !== gen)
				return;
			drawGroupBy(st, summed.map((v, i) => [v, totals[i]]), values.length, unit);
			groupBox.dataset.state = 'ready';
		} catch (e) {
			if (e.name === 'AbortError' || g !== gen)
				return;
			groupBox.replaceChildren(el('span', { class: 'ui-status', text: `group by ${st.groupBy}: ${e.message}` }));
			groupBox.dataset.state = 'error';
		}
	}

	function drawGroupBy(st, rows, nvalues, unit) {
		rows.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
		const sum = rows.reduce((x, r) => x + r[1], 0);
		const shown = rows.slice(0, GROUP_TOP);
		const max = shown.length ? shown[0][1] : 0;
		const body = el('tbody', {}, ...shown.map(([value, total]) => {
			const tr = el('tr', { 'data-value': value, 'data-total': String(total), title: `filter: ${st.groupBy}=${quote(value)}` },
				el('td', { text: value }),
				el('td', { text: fmtValue(total, unit) }),
				el('td', { text: sum ? (100 * total / sum).toFixed(1) + '%' : '–' }),
				el('td', {}, el('span', { class: 'gbar', style: `width:${max ? Math.round(120 * total / max) : 0}px` })));
			tr.addEventListener('click', () =>
				navigate(Object.assign(readState(), { query: withMatcher(st.query, st.groupBy, value), groupBy: '' })));
			return tr;
		}));
		let note = `${nvalues} value${nvalues === 1 ? '' : 's'}`;
		if (nvalues > GROUP_MAX)
			note += `: only the first ${GROUP_MAX} by name were summed`;
		if (rows.length > GROUP_TOP)
			note += `; the top ${GROUP_TOP} are shown, ${rows.length - GROUP_TOP} more are not`;
		groupBox.replaceChildren(
			el('strong', { text: `Total by ${st.groupBy}` }), ' ',
			el('span', { class: 'ui-note', 'data-role': 'groupby-note', text: `(${note}; click a row to filter by it)` }),
			el('table', {}, el('thead', {}, el('tr', {}, ...[st.groupBy, 'total', 'share', ''].map((h) => el('th', { text: h })))), body));
	}

	/* ---- rendering the URL ---- */

	let renderStart = 0;

	function navigate(st) {
		history.pushState(null, '', urlOf(st));
		render();
	}

	async function render() {
		const g = ++gen;
		if (controller)
			controller.abort();
		controller = new AbortController();
		const signal = controller.signal;
		renderStart = performance.now();
		timings.length = 0;
		waiting = 0;
		setState('loading');
		errBox.hidden = true;
		try {
			let st = readState();
			if (!appTypes.length || needsFirst(st)) {
				const series = await getJSON('/api/v1/series', {}, signal);
				appTypes = [...new Set(series.map((s) => `${s.app}.${s.type}`))].sort();
			}
			if (g !== gen)
				return;
			if (needsFirst(st) && !appTypes.length) {
				syncBar(withDefaults(st, ''));
				layout([], []);
				viewsBox.replaceChildren(el('div', { class: 'ui-empty', 'data-role': 'empty',
					text: 'The store has no profiles yet: push some (plateau push, the agent with PLATEAU_SERVER, or a Pyroscope client), then reload.' }));
				panes = [];
				setState('empty');
				return;
			}
			const full = withDefaults(st, appTypes[0]);
			if (urlOf(full) !== urlOf(st))
				history.replaceState(null, '', urlOf(full));
			st = full;
			syncBar(st);
			await (st.view === 'single' ? renderSingle(st, g, signal) : renderTwo(st, g, signal));
		} catch (e) {
			if (e.name !== 'AbortError' && g === gen)
				fail(e);
		}
	}

	const maxNodes = (st) => st.maxNodes || String(MAX_NODES);

	async function renderSingle(st, g, signal) {
		const t = performance.now();
		const [line, data] = await Promise.all([
			loadTimeline([st.query], st.from, st.until, signal),
			getJSON('/api/v1/query', { query: st.query, from: st.from, until: st.until, maxNodes: maxNodes(st), format: 'viewer' }, signal),
			loadGroupLabels(st, signal),
		]);
		if (g !== gen)
			return;
		timings.push(['fetch', Math.round(performance.now() - t)]);
		Object.assign(tl, line, { brushes: [], unit: data.unit || '' });
		drawTimeline();
		tlInfo.replaceChildren(el('span', { text: `${st.from} .. ${st.until}` }));
		document.title = `${st.query} · plateau`;
		layout(['single'], ['']);
		panes[0].title.hidden = true;
		paint([data]);
		renderGroupBy(st, data.unit || '', g, signal);
	}

	async function renderTwo(st, g, signal) {
		const t = performance.now();
		const tlQueries = st.leftQuery === st.rightQuery ? [st.leftQuery] : [st.leftQuery, st.rightQuery];
		const side = (s) => ({ query: st[`${s}Query`], from: st[`${s}From`], until: st[`${s}Until`], maxNodes: maxNodes(st), format: 'viewer' });
		const fetches = st.view === 'diff'
			? [getJSON('/api/v1/diff', { left: st.leftQuery, right: st.rightQuery, leftFrom: st.leftFrom, leftUntil: st.leftUntil,
				rightFrom: st.rightFrom, rightUntil: st.rightUntil, maxNodes: maxNodes(st), format: 'viewer' }, signal)]
			: [getJSON('/api/v1/query', side('left'), signal), getJSON('/api/v1/query', side('right'), signal)];
		const [line, ...datas] = await Promise.all([loadTimeline(tlQueries, st.from, st.until, signal), ...fetches]);
		if (g !== gen)
			return;
		timings.push(['fetch', Math.round(performance.now() - t)]);
		const now = nowSec();
		Object.assign(tl, line, {
			unit: datas[0].unit || '',
			brushes: ['left', 'right'].map((s) => ({ side: s, from: parseTime(st[`${s}From`], now), until: parseTime(st[`${s}Until`], now) })),
		});
		if (tlQueries.length === 1)
			tl.series[0].colour = css('--ui-plot');
		drawTimeline();
		tlInfo.replaceChildren(...brushButtons(),
			el('span', { class: 'left', text: `left ${st.leftQuery}  ${st.leftFrom} .. ${st.leftUntil}` }),
			el('span', { class: 'right', text: `right ${st.rightQuery}  ${st.rightFrom} .. ${st.rightUntil}` }));
		document.title = `${st.view}: ${st.leftQuery} vs ${st.rightQuery} · plateau`;
		groupBox.hidden = true;
		if (st.view === 'diff') {
			layout(['diff'], [`${st.leftQuery} (${st.leftFrom} .. ${st.leftUntil}) → ${st.rightQuery} (${st.rightFrom} .. ${st.rightUntil})`]);
		} else {
			layout(['left', 'right'], [`${st.leftQuery}  ${st.leftFrom} .. ${st.leftUntil}`, `${st.rightQuery}  ${st.rightFrom} .. ${st.rightUntil}`]);
		}
		paint(datas);
	}

	window.addEventListener('popstate', render);

	/* For tests and debugging: the viewers and the last render's timings. */
	window.__plateauUI = {
		viewers: () => panes.map((p) => p.viewer),
		timings: () => timings.slice(),
		parseTime, splitQuery, caretContext,
	};

	render();
}());
