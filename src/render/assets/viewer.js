/* SPDX-License-Identifier: MIT */
/*
 * plateau's HTML viewer as a component: window.PlateauViewer.mount(root,
 * data, opts) builds a flame graph (root at the bottom) or icicle graph
 * (root at the top) on a canvas inside root, with zoom, regex search, a
 * sandwich view, keyboard selection and a sortable table of functions.
 * No libraries and no network; several viewers can share a page (no
 * global ids: every element is looked up inside its root).
 *
 * Data (see doc/viewer.md): names[], nameFlags[], levels[d] = flat
 * [x delta, total, self, name] tuples (+ [base total, base self,
 * significant] for a diff), x delta relative to the end of the previous
 * frame of the level, so each level is sorted by x.  The other views
 * (left-heavy, sandwich) are built as data of the same shape and drawn
 * by the same code.
 *
 * Drawing is what keeps 200,000 frames responsive: redraws are coalesced
 * with requestAnimationFrame; only rows in the scrolled viewport are
 * visited; per row a binary search finds the first frame in the zoomed
 * range; frames narrower than half a pixel are skipped; colours and
 * labels are cached per name, so the loop allocates nothing.
 */
(function () {
	'use strict';

	const ROW = 18;
	const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
	const MIN_PX = 0.5;
	const Z95 = 1.959963984540054;
	const F_INLINED = 1, F_KERNEL = 2, F_JIT = 4, F_UNSYM = 8;
	const MATCH_COLOR = 'rgb(230,0,230)';

	/* ---- the stylesheet, injected once per page ---- */

	const CSS = `
.plateau-viewer { --pv-fg: #1d1d1f; --pv-muted: #666; --pv-line: #d8d8dc; --pv-bg: #fff;
  --pv-button: #f6f6f8; --pv-button-hover: #ececf0; --pv-pressed: #333; --pv-pressed-fg: #fff;
  --pv-tip-bg: #fffff0; --pv-row-hover: #f3f3ff; --pv-row-sel: #ffe9ff; --pv-match: #a000a0;
  --pv-bad: #d00; --pv-bad-bg: #fff0f0; --pv-notice-bg: #fff6d6; --pv-accent: #c13b00;
  --pv-graph-bg: #fff; --pv-diff-bg: rgb(232,232,236); --pv-frame-text: #000; --pv-outline: #000;
  --pv-select: #0050ff;
  color: var(--pv-fg); background: var(--pv-bg); font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
@media (prefers-color-scheme: dark) {
 .plateau-viewer { --pv-fg: #e4e4e8; --pv-muted: #a0a0aa; --pv-line: #45454d; --pv-bg: #1b1b1f;
  --pv-button: #2b2b31; --pv-button-hover: #36363d; --pv-pressed: #d8d8de; --pv-pressed-fg: #111;
  --pv-tip-bg: #2a2a22; --pv-row-hover: #2a2a3a; --pv-row-sel: #4a2a4a; --pv-match: #ff7aff;
  --pv-bad: #ff6060; --pv-bad-bg: #3a1c1c; --pv-notice-bg: #3a3218; --pv-accent: #ff8a50;
  --pv-graph-bg: #1b1b1f; --pv-diff-bg: rgb(60,60,66); --pv-frame-text: #000; --pv-outline: #fff;
  --pv-select: #60a0ff; }
}
.plateau-viewer * { box-sizing: border-box; }
.plateau-viewer [hidden] { display: none !important; }
.plateau-viewer .pv-head { padding: 8px 12px 4px; border-bottom: 1px solid var(--pv-line); }
.plateau-viewer h1 { font-size: 16px; margin: 0 12px 0 0; display: inline-block; }
.plateau-viewer .pv-sub, .plateau-viewer .pv-info { color: var(--pv-muted); }
.plateau-viewer .pv-info { margin-top: 2px; }
.plateau-viewer .pv-toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; padding: 6px 12px; border-bottom: 1px solid var(--pv-line); }
.plateau-viewer button { font: inherit; color: inherit; padding: 2px 9px; border: 1px solid var(--pv-line); background: var(--pv-button); border-radius: 4px; cursor: pointer; }
.plateau-viewer button:hover { background: var(--pv-button-hover); }
.plateau-viewer button[aria-pressed="true"] { background: var(--pv-pressed); color: var(--pv-pressed-fg); border-color: var(--pv-pressed); }
.plateau-viewer button:disabled { opacity: 0.5; cursor: default; }
.plateau-viewer input[type="search"] { font: inherit; color: inherit; background: var(--pv-bg); width: 22em; max-width: 100%; padding: 2px 6px; border: 1px solid var(--pv-line); border-radius: 4px; }
.plateau-viewer input.pv-bad { border-color: var(--pv-bad); background: var(--pv-bad-bg); }
.plateau-viewer .pv-matched { font-weight: 600; color: var(--pv-match); }
.plateau-viewer .pv-legend { margin-left: auto; color: var(--pv-muted); display: flex; gap: 10px; align-items: center; }
.plateau-viewer .pv-legend i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; vertical-align: -1px; border: 1px solid #0003; }
.plateau-viewer .pv-notice { padding: 4px 12px; background: var(--pv-notice-bg); border-bottom: 1px solid var(--pv-line); }
.plateau-viewer .pv-crumbrow { display: flex; gap: 12px; align-items: center; padding: 4px 12px; min-height: 24px; }
.plateau-viewer .pv-crumbs { white-space: nowrap; overflow-x: auto; flex: 1 1 auto; }
.plateau-viewer .pv-crumbs button { padding: 0 6px; margin-right: 2px; max-width: 24em; overflow: hidden; text-overflow: ellipsis; vertical-align: middle; }
.plateau-viewer .pv-sep { color: var(--pv-muted); margin-right: 2px; }
.plateau-viewer .pv-selected { color: var(--pv-muted); max-width: 50%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.plateau-viewer .pv-sandbar { padding: 4px 12px; display: flex; gap: 10px; align-items: center; }
.plateau-viewer .pv-caption { margin: 4px 12px 2px; color: var(--pv-muted); }
.plateau-viewer .pv-graph { position: relative; overflow-y: auto; overflow-x: hidden; margin: 0 12px; border: 1px solid var(--pv-line); }
.plateau-viewer .pv-stage { position: sticky; top: 0; height: 0; }
.plateau-viewer .pv-stage canvas { position: absolute; left: 0; top: 0; display: block; }
.plateau-viewer .pv-overlay { pointer-events: none; }
.plateau-viewer .pv-spacer { width: 1px; }
.plateau-viewer .pv-tip { position: fixed; z-index: 10; pointer-events: none; background: var(--pv-tip-bg); border: 1px solid #999; border-radius: 4px; padding: 5px 8px; max-width: 560px; box-shadow: 0 2px 6px #0003; display: none; font-size: 12px; }
.plateau-viewer .pv-tip b { word-break: break-all; }
.plateau-viewer .pv-dim { color: var(--pv-muted); }
.plateau-viewer .pv-tablebox { margin: 10px 12px 20px; }
.plateau-viewer .pv-tablebox h2 { font-size: 14px; margin: 6px 8px 6px 0; display: inline-block; }
.plateau-viewer .pv-tablenote { color: var(--pv-muted); margin-left: 8px; }
.plateau-viewer table { border-collapse: collapse; width: 100%; table-layout: fixed; font-variant-numeric: tabular-nums; margin-top: 4px; }
.plateau-viewer th, .plateau-viewer td { padding: 2px 8px; border-bottom: 1px solid var(--pv-line); text-align: right; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.plateau-viewer th { position: sticky; top: 0; background: var(--pv-button); cursor: pointer; user-select: none; }
.plateau-viewer th[data-dir="desc"]::after { content: " \\25BE"; }
.plateau-viewer th[data-dir="asc"]::after { content: " \\25B4"; }
.plateau-viewer td.name, .plateau-viewer th.name { text-align: left; white-space: normal; overflow-wrap: anywhere; width: 40%; }
.plateau-viewer td .pv-ci { color: var(--pv-muted); font-size: 11px; margin-left: 4px; }
.plateau-viewer td button { padding: 0 5px; margin-left: 6px; font-size: 11px; }
.plateau-viewer tbody tr { cursor: pointer; }
.plateau-viewer tbody tr:hover { background: var(--pv-row-hover); }
.plateau-viewer tbody tr.sel { background: var(--pv-row-sel); }
.plateau-viewer .pv-more { margin-top: 6px; }
.plateau-viewer .pv-error { color: var(--pv-bad); padding: 8px 12px; display: none; }
`;

	function injectStyle() {
		if (document.head.querySelector('style[data-plateau-viewer]'))
			return;
		const style = document.createElement('style');
		style.dataset.plateauViewer = '1';
		style.textContent = CSS;
		document.head.appendChild(style);
	}

	/* The viewer's DOM: static markup, no data (names go in as text). */
	const TEMPLATE = `
<header class="pv-head" data-role="header">
<h1 data-role="title"></h1><span class="pv-sub" data-role="subtitle"></span>
<div class="pv-info" data-role="info"></div>
</header>
<div class="pv-toolbar" data-role="toolbar">
<button type="button" data-role="mode-flame" title="Flame graph: root at the bottom">Flame graph</button>
<button type="button" data-role="mode-icicle" title="Icicle graph: root at the top">Icicle</button>
<button type="button" data-role="left-heavy" aria-pressed="false" title="Sort children by total, largest first">Left-heavy</button>
<button type="button" data-role="full-names" aria-pressed="false" title="Show full names: parameter lists and template arguments">Full names</button>
<button type="button" data-role="reset" title="Reset zoom and search (Esc)">Reset</button>
<input type="search" data-role="search" placeholder="Search (regular expression), / or Ctrl-F" spellcheck="false" autocomplete="off" aria-label="Search by regular expression">
<span class="pv-matched" data-role="matched"></span>
<label data-role="greylabel" hidden><input type="checkbox" data-role="grey"> grey out changes within noise</label>
<span class="pv-legend" data-role="legend"></span>
</div>
<div class="pv-notice" data-role="dropped" hidden><span data-role="dropped-text"></span> <button type="button" data-role="show-all" hidden>Show all</button></div>
<div class="pv-sandbar" data-role="sandbar" hidden><button type="button" data-role="sandwich-back" title="Back to the graph (Esc)">\u2190 Back</button><span data-role="sandwich-title"></span></div>
<div class="pv-crumbrow" data-role="crumbrow"><span class="pv-crumbs" data-role="crumbs"></span><span class="pv-selected" data-role="selected"></span></div>
<div class="pv-error" data-role="error"></div>
<div data-role="main"></div>
<div data-role="sandwich" hidden>
<div class="pv-caption">Callers (the function at the bottom, its callers above)</div><div data-role="callers"></div>
<div class="pv-caption">Callees (the function at the top, what it calls below)</div><div data-role="callees"></div>
</div>
<div class="pv-tip" data-role="tip"></div>
<section class="pv-tablebox" data-role="tablebox">
<h2>Functions</h2><input type="search" data-role="filter" placeholder="Filter functions" spellcheck="false" autocomplete="off" aria-label="Filter the functions table"><span class="pv-tablenote" data-role="tablenote"></span>
<table data-role="functions"><thead><tr></tr></thead><tbody></tbody></table>
<button type="button" class="pv-more" data-role="more" hidden>Show more</button>
</section>`;

	/* Pure helpers, for tests and hosts: the name shortening and the middle cut. */
	const NAMES = { shortName: null, middleCut: null };

	const GRAPH_TEMPLATE = '<div class="pv-graph" data-role="graph"><div class="pv-stage">' +
		'<canvas data-role="flame"></canvas><canvas class="pv-overlay" data-role="overlay"></canvas>' +
		'</div><div class="pv-spacer" data-role="spacer"></div></div>';

	/* ---- formatting ---- */

	function commas(v) {
		const neg = v < 0;
		let s = String(Math.round(Math.abs(v)));
		let out = '';
		while (s.length > 3) {
			out = ',' + s.slice(-3) + out;
			s = s.slice(0, -3);
		}
		return (neg ? '-' : '') + s + out;
	}

	const SECONDS = { nanoseconds: 1e-9, microseconds: 1e-6, milliseconds: 1e-3, seconds: 1 };

	/* A stored value in the profile's unit for people (as units.c prints it). */
	function formatValue(raw, div, unit) {
		let v = raw / div;
		const secs = SECONDS[unit];
		if (secs) {
			v *= secs;
			const a = Math.abs(v);
			if (a >= 1 || a === 0)
				return v.toFixed(2) + ' s';
			if (a >= 1e-3)
				return (v * 1e3).toFixed(2) + ' ms';
			if (a >= 1e-6)
				return (v * 1e6).toFixed(2) + ' \u00b5s';
			return (v * 1e9).toFixed(0) + ' ns';
		}
		if (unit === 'bytes') {
			const suffix = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
			let i = 0;
			while (Math.abs(v) >= 1024 && i + 1 < suffix.length) {
				v /= 1024;
				i++;
			}
			return (i ? v.toFixed(2) : v.toFixed(0)) + ' ' + suffix[i];
		}
		const tail = unit && unit !== 'count' ? ' ' + unit : '';
		return (v === Math.floor(v) ? commas(v) : v.toFixed(2)) + tail;
	}

	function pct(share, digits) {
		return (100 * share).toFixed(digits === undefined ? 2 : digits) + '%';
	}

	/* Wilson score interval of k successes in n trials at 95%. */
	function wilson(k, n) {
		if (!(n > 0))
			return [0, 1];
		k = Math.min(Math.max(k, 0), n);
		const p = k / n, z2 = Z95 * Z95, den = 1 + z2 / n;
		const c = (p + z2 / (2 * n)) / den;
		const h = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / den;
		return [Math.max(0, c - h), Math.min(1, c + h)];
	}

	/* The n of a profile's intervals: effective samples (Kish's (sum w)^2 / sum w^2) if given. */
	function effectiveSamples(data) {
		return data.effSamples === undefined ? data.samples : data.effSamples;
	}

	/*
	 * A share and its 95% interval, as plateau's stats_share_of: the share
	 * of values, the interval from n effective samples, so the interval
	 * always holds the share.
	 */
	function shareInterval(part, whole, n) {
		const share = whole > 0 ? part / whole : 0;
		const ci = wilson(share * n, n);
		return [share, Math.min(ci[0], share), Math.max(ci[1], share)];
	}

	/* Interval bounds rounded outward, so the printed interval holds the printed share. */
	function pctDown(share) {
		return (Math.floor(10000 * share) / 100).toFixed(2) + '%';
	}

	function pctUp(share) {
		return (Math.ceil(10000 * share) / 100).toFixed(2) + '%';
	}

	function intervalText(lo, hi) {
		return pctDown(lo) + ' \u2013 ' + pctUp(hi);
	}

	/* ---- names ---- */

	const OPERATOR_CHARS = '<>=!+-*/%&|^~[],';

	function isIdent(c) {
		return /[A-Za-z0-9_$]/.test(c);
	}

	/* Index of the bracket closing the one at s[i], or -1. */
	function closing(s, i) {
		const stack = [];
		for (let j = i; j < s.length; j++) {
			const c = s[j];
			if (c === '<' || c === '(' || c === '[')
				stack.push(c === '<' ? '>' : c === '(' ? ')' : ']');
			else if (c === '>' || c === ')' || c === ']') {
				if (stack.pop() !== c)
					return -1;
				if (!stack.length)
					return j;
			}
		}
		return -1;
	}

	/*
	 * A C++/Rust/Go name without parameter lists and template arguments, as
	 * pprof shortens them: "std::vector<int>::push_back(int const&)" is
	 * "std::vector::push_back".  A bracket that opens a path segment is kept
	 * ("<T as Trait>::m", "(anonymous namespace)::f", "pkg.(*T).m"), its
	 * inside shortened; an unclosed one after a name (a name cut short by
	 * the producer) is dropped with the rest; Rust's "::h<hex>" hash
	 * suffix is dropped.
	 */
	function shortName(s) {
		s = s.replace(/::h[0-9a-f]{8,16}$/, '');
		let out = '';
		for (let i = 0; i < s.length;) {
			const c = s[i];
			if (s.startsWith('operator', i) && (i === 0 || !isIdent(s[i - 1])) && !isIdent(s[i + 8] || '')) {
				let j = i + 8;
				if (s.startsWith('()', j))
					j += 2;
				else
					while (j < s.length && OPERATOR_CHARS.includes(s[j]) && !(s[j] === '(' || s[j] === '['))
						j++;
				out += s.slice(i, j);
				i = j;
				continue;
			}
			if (c !== '<' && c !== '(') {
				out += c;
				i++;
				continue;
			}
			const j = closing(s, i), prev = out[out.length - 1];
			const opens = !out.length || prev === ':' || prev === '.' || prev === '<' || prev === '(';
			if (j < 0) {
				if (!opens)
					break;
				out += c;
				i++;
				continue;
			}
			if (opens)
				out += c + shortName(s.slice(i + 1, j)) + s[j];
			i = j + 1;
		}
		out = out.replace(/(\s+(const|volatile|noexcept|&&|&))+\s*$/, '').trim();
		return out || s;
	}

	/* At most max characters of s, cut in the middle: "std::vec\u2026::push_back". */
	function middleCut(s, max) {
		if (s.length <= max)
			return s;
		if (max < 2)
			return s.slice(0, max);
		const tail = (max - 1) >> 1, head = max - 1 - tail;
		return s.slice(0, head) + '\u2026' + (tail ? s.slice(s.length - tail) : '');
	}

	/* ---- colours ---- */

	/*
	 * Every colour is an index into PAL, so a draw can group its rectangles
	 * by colour and set fillStyle (which parses the string) once per colour.
	 */
	const PAL = [];
	const VARIANTS = 32;

	function rgb(r, g, b) {
		return 'rgb(' + r + ',' + g + ',' + b + ')';
	}

	/* flamegraph.pl's "hot" and, as its multi palettes do, other hues for other kinds. */
	function kindColor(kind, a, b, c) {
		switch (kind) {
		case 1: return rgb(220 + ((35 * a) | 0), 140 + ((50 * b) | 0), (40 * c) | 0); /* kernel */
		case 2: return rgb(80 + ((60 * a) | 0), 190 + ((50 * b) | 0), 190 + ((50 * b) | 0)); /* inlined */
		case 3: return rgb(60 + ((60 * a) | 0), 190 + ((55 * b) | 0), 60 + ((60 * c) | 0)); /* JIT */
		case 4: return rgb(175 + ((40 * a) | 0), 175 + ((40 * a) | 0), 175 + ((40 * a) | 0)); /* unsymbolized */
		default: return rgb(205 + ((50 * c) | 0), (230 * a) | 0, (55 * b) | 0);
		}
	}

	for (let kind = 0; kind < 5; kind++) {
		for (let v = 0; v < VARIANTS; v++) {
			const a = (v * 0.6180339887) % 1, b = (v * 0.4142135623 + 0.3) % 1;
			PAL.push(kindColor(kind, a, b, (v * 0.7320508075 + 0.6) % 1));
		}
	}
	const C_MATCH = PAL.length;
	PAL.push(MATCH_COLOR);
	const WHITE = 'rgb(255,255,255)', GREY = 'rgb(200,200,200)';
	const C_WHITE = PAL.length;
	PAL.push(WHITE);
	const C_GREY = PAL.length;
	PAL.push(GREY);
	const C_RED = PAL.length;
	for (let v = 0; v <= 210; v++)
		PAL.push(rgb(255, v, v));
	const C_BLUE = PAL.length;
	for (let v = 0; v <= 210; v++)
		PAL.push(rgb(v, v, 255));

	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		return h >>> 0;
	}

	/* Deterministic per name; the kind comes from the frame flags. */
	function nameColor(names, nameFlags, ni) {
		const fl = nameFlags[ni];
		const kind = fl & F_UNSYM ? 4 : fl & F_KERNEL ? 1 : fl & F_INLINED ? 2 : fl & F_JIT ? 3 : 0;
		return kind * VARIANTS + (hash(names[ni]) % VARIANTS);
	}

	/* ---- data: decoding and the derived views ---- */

	/*
	 * The decoded levels of flamebearer data: one buffer per field for all
	 * levels, each level a set of views of its slice (a deep profile has
	 * many small levels: one allocation each would dominate the load time).
	 */
	function decode(raw, diff) {
		const stride = diff ? 7 : 4;
		const nl = raw.length;
		let nframes = 0;
		for (let d = 0; d < nl; d++)
			nframes += (raw[d].length / stride) | 0;
		const pool = {
			x: new Float64Array(nframes), w: new Float64Array(nframes), s: new Float64Array(nframes),
			nm: new Int32Array(nframes), par: new Int32Array(nframes), cov: new Uint8Array(nframes),
			cs: new Int32Array(nframes + nl), vis: new Int32Array(nframes),
			bt: diff ? new Float64Array(nframes) : null, bs: diff ? new Float64Array(nframes) : null,
			sig: diff ? new Uint8Array(nframes) : null,
		};
		const m = { levels: [], nl: nl, nframes: nframes, total: 0, maxDelta: 1, diff: !!diff };
		let at = 0;
		for (let d = 0; d < nl; d++) {
			const a = raw[d], n = (a.length / stride) | 0, o = at, e = o + n;
			at = e;
			const lv = {
				n: n,
				x: pool.x.subarray(o, e), w: pool.w.subarray(o, e), s: pool.s.subarray(o, e),
				nm: pool.nm.subarray(o, e), par: pool.par.subarray(o, e), cov: pool.cov.subarray(o, e),
				/* cs[i] .. cs[i + 1]: children of frame i in the next level. */
				cs: pool.cs.subarray(o + d, e + d + 1),
				/* The frames drawn in this level by the last draw. */
				vis: pool.vis.subarray(o, e),
				nvis: 0,
			};
			let end = 0;
			for (let i = 0, j = 0; i < n; i++, j += stride) {
				lv.x[i] = end + a[j];
				lv.w[i] = a[j + 1];
				lv.s[i] = a[j + 2];
				lv.nm[i] = a[j + 3];
				end = lv.x[i] + lv.w[i];
			}
			if (diff) {
				lv.bt = pool.bt.subarray(o, e);
				lv.bs = pool.bs.subarray(o, e);
				lv.sig = pool.sig.subarray(o, e);
				for (let i = 0, j = 0; i < n; i++, j += stride) {
					lv.bt[i] = a[j + 4];
					lv.bs[i] = a[j + 5];
					lv.sig[i] = a[j + 6];
					const delta = Math.abs(lv.s[i] - lv.bs[i]);
					if (delta > m.maxDelta)
						m.maxDelta = delta;
				}
			}
			if (d)
				linkParents(m.levels[d - 1], lv);
			m.levels.push(lv);
		}
		m.total = nl && m.levels[0].n ? m.levels[0].w[0] : 0;
		return m;
	}

	/* Parents and child ranges: both levels are sorted by x and children lie inside their parent. */
	function linkParents(up, lv) {
		let p = 0;
		up.cs[0] = 0;
		for (let i = 0; i < lv.n; i++) {
			while (p < up.n - 1 && up.x[p] + up.w[p] <= lv.x[i])
				up.cs[++p] = i;
			lv.par[i] = p;
		}
		while (p < up.n)
			up.cs[++p] = lv.n;
	}

	/* One frame's tuple appended to out, x delta from end. */
	function pushTuple(out, lv, i, x, end, diff) {
		out.push(x - end, lv.w[i], lv.s[i], lv.nm[i]);
		if (diff)
			out.push(lv.bt[i], lv.bs[i], lv.sig[i]);
	}

	/*
	 * The levels of m with each frame's children sorted by total, largest
	 * first, packed from the parent's left edge (what is left of the parent
	 * is its self value, on the right).
	 */
	function leftHeavyLevels(m) {
		const out = [];
		let order = Int32Array.of(0), nx = Float64Array.of(0);
		for (let d = 0; d < m.nl; d++) {
			const lv = m.levels[d], flat = [];
			let nextOrder = null, nextX = null;
			if (d) {
				const up = m.levels[d - 1];
				nextOrder = new Int32Array(lv.n);
				nextX = new Float64Array(lv.n);
				let k = 0;
				for (let a = 0; a < order.length; a++) {
					const p = order[a], first = up.cs[p], last = up.cs[p + 1];
					const kids = [];
					for (let j = first; j < last; j++)
						kids.push(j);
					kids.sort((i, j) => lv.w[j] - lv.w[i] || i - j);
					let x = nx[p];
					for (const j of kids) {
						nextOrder[k++] = j;
						nextX[j] = x;
						x += lv.w[j];
					}
				}
				order = nextOrder;
				nx = nextX;
			}
			let end = 0;
			for (let a = 0; a < order.length; a++) {
				const i = order[a];
				pushTuple(flat, lv, i, nx[i], end, m.diff);
				end = nx[i] + lv.w[i];
			}
			out.push(flat);
		}
		return out;
	}

	/* A merged call tree node of the sandwich view. */
	function treeNode(nm) {
		return { nm: nm, w: 0, s: 0, x: 0, kids: new Map() };
	}

	function treeChild(node, nm) {
		let c = node.kids.get(nm);
		if (!c) {
			c = treeNode(nm);
			node.kids.set(nm, c);
		}
		return c;
	}

	/* Flamebearer levels of a merged tree, children sorted by name. */
	function treeLevels(root, names) {
		const out = [];
		let row = [root];
		const byName = (a, b) => (names[a.nm] < names[b.nm] ? -1 : names[a.nm] > names[b.nm] ? 1 : 0);
		while (row.length) {
			const flat = [], next = [];
			let end = 0;
			for (const node of row) {
				flat.push(node.x - end, node.w, node.s, node.nm);
				end = node.x + node.w;
				let x = node.x;
				for (const c of Array.from(node.kids.values()).sort(byName)) {
					c.x = x;
					x += c.w;
					next.push(c);
				}
			}
			out.push(flat);
			row = next;
		}
		return out;
	}

	/*
	 * The sandwich of function f: its callers (each outermost frame of f and
	 * its ancestors, merged from f outwards) and its callees (the subtrees of
	 * the outermost frames of f, merged).  Both trees are rooted at f with
	 * f's total: a frame of f under another frame of f is inside the
	 * outer one's subtree, so recursion counts once.
	 */
	function sandwichLevels(m, names, f) {
		const callers = treeNode(f), callees = treeNode(f);
		for (let d = 0; d < m.nl; d++) {
			const lv = m.levels[d], up = d ? m.levels[d - 1] : null;
			for (let i = 0; i < lv.n; i++) {
				const under = up ? up.cov[lv.par[i]] | (up.nm[lv.par[i]] === f) : 0;
				lv.cov[i] = under;
				if (under || lv.nm[i] !== f)
					continue;
				const w = lv.w[i];
				let node = callers;
				node.w += w;
				for (let a = d - 1, p = lv.par[i]; a >= 0; p = a ? m.levels[a].par[p] : 0, a--) {
					node = treeChild(node, m.levels[a].nm[p]);
					node.w += w;
				}
				node.s += w;
				mergeSubtree(m, d, i, callees);
			}
		}
		return { callers: treeLevels(callers, names), callees: treeLevels(callees, names), total: callers.w };
	}

	/* Add the subtree of frame (d, i) into node, merging children by name. */
	function mergeSubtree(m, d, i, node) {
		const stack = [[d, i, node]];
		while (stack.length) {
			const [fd, fi, n] = stack.pop();
			const lv = m.levels[fd];
			n.w += lv.w[fi];
			n.s += lv.s[fi];
			if (fd + 1 >= m.nl)
				continue;
			for (let j = lv.cs[fi], e = lv.cs[fi + 1]; j < e; j++)
				stack.push([fd + 1, j, treeChild(n, m.levels[fd + 1].nm[j])]);
		}
	}

	/* ---- page-wide: which viewer the keyboard talks to ---- */

	const live = [];
	let pointerOwner = null;

	function keyOwner(target) {
		for (const v of live)
			if (v.root.contains(target) && target !== v.root.ownerDocument.body)
				return v;
		return live.indexOf(pointerOwner) >= 0 ? pointerOwner : live[0];
	}

	function isTyping(el) {
		return !!el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' ||
			el.isContentEditable);
	}

	/*
	 * ---- one graph: a canvas drawing one set of levels ----
	 *
	 * box: an empty element; v: the viewer (names, labels, tooltip, search
	 * state, formatting); cfg: { flame: bool, crumbs: element or null,
	 * heightShare: fraction of the window's height, onDraw() }.
	 */
	function Graph(box, v, model, cfg) {
		box.innerHTML = GRAPH_TEMPLATE;
		const q = (role) => box.querySelector('[data-role="' + role + '"]');
		const graph = q('graph'), spacer = q('spacer'), canvas = q('flame'), overlay = q('overlay');
		const ctx = canvas.getContext('2d', { alpha: false });
		const octx = overlay.getContext('2d');
		const names = v.names;
		let m, levels, NL, TOTAL, rX, rY, rW, rC, rOrder;
		const colorStart = new Int32Array(PAL.length + 1);
		const labelLen = new Int32Array(names.length).fill(-1);
		const labelStr = new Array(names.length);
		const nameCol = new Int16Array(names.length).fill(-1);
		let flameMode = cfg.flame;
		let zoomD = 0, zoomI = 0, viewX = 0, viewW = 0;
		let zoomChain = new Int32Array(1); /* zoomChain[d]: the zoomed frame's ancestor at depth d */
		let hovD = -1, hovI = -1, selD = -1, selI = -1;
		let W = 0, H = 0, DPR = 1, charW = 7, scrollY = 0;
		let background = '#fff', frameText = '#000', outline = '#000', selectColor = '#00f';
		let pending = 0, dead = false;
		const g = { draws: 0, rects: 0, firstDrawMs: -1, lastDrawMs: -1, firstDrawAt: -1 };

		function setModel(model) {
			m = model;
			levels = m.levels;
			NL = m.nl;
			TOTAL = m.total;
			/* Rectangles of one draw, grouped by colour before filling (no allocation per draw). */
			rX = new Float32Array(m.nframes);
			rY = new Float32Array(m.nframes);
			rW = new Float32Array(m.nframes);
			rC = new Uint16Array(m.nframes);
			rOrder = new Int32Array(m.nframes);
			selD = selI = hovD = hovI = -1;
			if (NL)
				zoomTo(0, 0);
			layout();
		}

		/* flamegraph.pl's differential colours: red grew, blue shrank, by self delta. */
		function diffColor(lv, i) {
			let delta = lv.s[i] - lv.bs[i];
			if (v.negate)
				delta = -delta;
			if (delta === 0)
				return C_WHITE;
			if (v.greyNoise && !lv.sig[i])
				return C_GREY;
			const k = Math.floor((210 * (m.maxDelta - Math.abs(delta))) / m.maxDelta);
			return (delta > 0 ? C_RED : C_BLUE) + k;
		}

		function frameColor(lv, i) {
			const ni = lv.nm[i];
			if (v.matchOn && v.nameMatch[ni])
				return C_MATCH;
			if (m.diff)
				return diffColor(lv, i);
			let c = nameCol[ni];
			if (c < 0)
				c = nameCol[ni] = nameColor(names, v.nameFlags, ni);
			return c;
		}

		function sizeCanvas(c, w, h) {
			c.style.width = w + 'px';
			c.style.height = h + 'px';
			c.width = Math.max(1, Math.round(w * DPR));
			c.height = Math.max(1, Math.round(h * DPR));
		}

		function layout() {
			const th = NL * ROW;
			const avail = Math.max(cfg.minHeight || 240, Math.round(window.innerHeight * cfg.heightShare));
			const css = getComputedStyle(v.root);
			background = css.getPropertyValue(m.diff ? '--pv-diff-bg' : '--pv-graph-bg').trim() || '#fff';
			frameText = css.getPropertyValue('--pv-frame-text').trim() || '#000';
			outline = css.getPropertyValue('--pv-outline').trim() || '#000';
			selectColor = css.getPropertyValue('--pv-select').trim() || '#00f';
			DPR = window.devicePixelRatio || 1;
			graph.style.height = Math.min(th, avail) + 2 + 'px';
			spacer.style.height = th + 'px';
			W = graph.clientWidth;
			H = graph.clientHeight;
			sizeCanvas(canvas, W, H);
			sizeCanvas(overlay, W, H);
			ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
			ctx.font = FONT;
			charW = ctx.measureText('mmmmmmmmmm').width / 10 || 7;
			labelLen.fill(-1);
		}

		/* First frame of lv whose end lies after x (ends are sorted too). */
		function firstEnd(lv, x) {
			let lo = 0, hi = lv.n;
			while (lo < hi) {
				const mid = (lo + hi) >> 1;
				if (lv.x[mid] + lv.w[mid] > x)
					hi = mid;
				else
					lo = mid + 1;
			}
			return lo;
		}

		function rowY(d) {
			return flameMode ? (NL - 1 - d) * ROW : d * ROW;
		}

		function label(ni, maxChars) {
			if (labelLen[ni] === maxChars)
				return labelStr[ni];
			const r = middleCut(v.displayName(ni), maxChars);
			labelLen[ni] = maxChars;
			labelStr[ni] = r;
			return r;
		}

		function requestDraw() {
			if (pending || dead)
				return;
			pending = requestAnimationFrame(draw);
		}

		/*
		 * Fill each level's vis list with the frames to draw, down to depth
		 * last: the zoomed frame's ancestors, then the children of drawn
		 * frames that are at least half a pixel wide.  Children of a frame
		 * are narrower than it, so a skipped frame's subtree is never visited.
		 */
		function collect(last, minW) {
			let d = 0;
			for (; d <= zoomD && d <= last; d++) {
				levels[d].vis[0] = zoomChain[d];
				levels[d].nvis = 1;
			}
			for (; d <= last; d++) {
				const up = levels[d - 1], lv = levels[d], ws = lv.w, vis = lv.vis;
				let n = 0;
				for (let a = 0; a < up.nvis; a++) {
					const p = up.vis[a];
					for (let j = up.cs[p], e = up.cs[p + 1]; j < e; j++) {
						if (ws[j] >= minW)
							vis[n++] = j;
					}
				}
				lv.nvis = n;
				if (!n)
					break;
			}
			for (d++; d <= last; d++)
				levels[d].nvis = 0;
		}

		/* The on-screen extent of frame i of lv, into rX/rY/rW[r]. */
		function place(lv, i, y, k, r) {
			let px = (lv.x[i] - viewX) * k, pw = lv.w[i] * k;
			if (px < 0) {
				pw += px;
				px = 0;
			}
			if (px + pw > W)
				pw = W - px;
			rX[r] = px;
			rY[r] = y;
			rW[r] = pw;
		}

		function fillRects(n) {
			colorStart.fill(0);
			for (let r = 0; r < n; r++)
				colorStart[rC[r] + 1]++;
			for (let c = 0; c < PAL.length; c++)
				colorStart[c + 1] += colorStart[c];
			for (let r = 0; r < n; r++)
				rOrder[colorStart[rC[r]]++] = r;
			let style = -1;
			for (let a = 0; a < n; a++) {
				const r = rOrder[a];
				if (rC[r] !== style) {
					style = rC[r];
					ctx.fillStyle = PAL[style];
				}
				ctx.fillRect(rX[r], rY[r], rW[r] > 2 ? rW[r] - 1 : rW[r], ROW - 1);
			}
		}

		function drawLabels(n) {
			const minLabel = charW * 3 + 6;
			ctx.fillStyle = frameText;
			for (let r = 0; r < n; r++) {
				if (rW[r] < minLabel)
					continue;
				const maxChars = Math.floor((rW[r] - 6) / charW);
				if (maxChars >= 3)
					ctx.fillText(label(rOrder[r], maxChars), rX[r] + 3, rY[r] + ROW / 2);
			}
		}

		function draw() {
			pending = 0;
			if (dead)
				return;
			const t = performance.now();
			/* The cached scroll offset: reading scrollTop here could force a layout of the page. */
			const scroll = scrollY;
			ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
			ctx.globalAlpha = 1;
			ctx.fillStyle = background;
			ctx.fillRect(0, 0, W, H);
			ctx.font = FONT;
			ctx.textBaseline = 'middle';
			let n = 0;
			if (NL) {
				const k = W / viewW;
				let d0, d1;
				if (flameMode) {
					d0 = Math.max(0, NL - 1 - Math.floor((scroll + H) / ROW));
					d1 = Math.min(NL - 1, NL - 1 - Math.floor(scroll / ROW));
				} else {
					d0 = Math.max(0, Math.floor(scroll / ROW));
					d1 = Math.min(NL - 1, Math.floor((scroll + H) / ROW));
				}
				collect(d1, MIN_PX / k);
				/* The zoomed frame's ancestors: faded, one rectangle per row. */
				ctx.globalAlpha = 0.55;
				for (let d = d0; d < Math.min(zoomD, d1 + 1); d++) {
					const i = zoomChain[d];
					place(levels[d], i, rowY(d) - scroll, k, 0);
					ctx.fillStyle = PAL[frameColor(levels[d], i)];
					ctx.fillRect(rX[0], rY[0], rW[0] - 1, ROW - 1);
				}
				ctx.globalAlpha = 1;
				for (let d = Math.max(d0, zoomD); d <= d1; d++) {
					const lv = levels[d], y = rowY(d) - scroll;
					for (let a = 0; a < lv.nvis; a++, n++) {
						place(lv, lv.vis[a], y, k, n);
						rC[n] = frameColor(lv, lv.vis[a]);
					}
				}
				fillRects(n);
				/* rOrder now holds name indices, for the labels. */
				n = 0;
				for (let d = d0; d <= d1; d++) {
					const lv = levels[d], y = rowY(d) - scroll;
					for (let a = 0; a < lv.nvis; a++, n++) {
						place(lv, lv.vis[a], y, k, n);
						rOrder[n] = lv.nm[lv.vis[a]];
					}
				}
				drawLabels(n);
			}
			g.rects = n;
			drawOverlay();
			g.lastDrawMs = performance.now() - t;
			if (g.firstDrawMs < 0) {
				g.firstDrawMs = g.lastDrawMs;
				g.firstDrawAt = performance.now();
			}
			g.draws++;
			if (cfg.onDraw)
				cfg.onDraw();
		}

		function frameRect(d, i) {
			const k = W / viewW;
			let px = (levels[d].x[i] - viewX) * k, pw = levels[d].w[i] * k;
			if (px < 0) {
				pw += px;
				px = 0;
			}
			if (px + pw > W)
				pw = W - px;
			return { x: px, y: rowY(d) - scrollY, w: pw, h: ROW - 1 };
		}

		function outlineFrame(d, i, color, width) {
			const r = frameRect(d, i);
			if (r.w <= 0)
				return;
			octx.strokeStyle = color;
			octx.lineWidth = width;
			octx.strokeRect(r.x + width / 2, r.y + width / 2, Math.max(1, r.w - width - 0.5), r.h - width);
		}

		function drawOverlay() {
			octx.setTransform(DPR, 0, 0, DPR, 0, 0);
			octx.clearRect(0, 0, W, H);
			if (selD >= 0)
				outlineFrame(selD, selI, selectColor, 2.5);
			if (hovD >= 0)
				outlineFrame(hovD, hovI, outline, 1.5);
		}

		/* The frame under canvas point (mx, my), as [d, i], or null. */
		function hitTest(mx, my) {
			const yc = my + scrollY;
			const row = Math.floor(yc / ROW);
			const d = flameMode ? NL - 1 - row : row;
			if (d < 0 || d >= NL || mx < 0 || mx >= W)
				return null;
			const lv = levels[d], k = W / viewW, xv = viewX + mx / k;
			const i = firstEnd(lv, xv);
			if (i >= lv.n || lv.x[i] > xv || lv.w[i] * k < MIN_PX)
				return null;
			return [d, i];
		}

		function ancestors(d, i) {
			const chain = [];
			for (; d >= 0; d--) {
				chain.push([d, i]);
				i = levels[d].par[i];
			}
			return chain.reverse();
		}

		function zoomTo(d, i) {
			zoomD = d;
			zoomI = i;
			zoomChain = Int32Array.from(ancestors(d, i), (c) => c[1]);
			viewX = levels[d].x[i];
			viewW = levels[d].w[i];
			renderCrumbs();
			requestDraw();
		}

		function renderCrumbs() {
			const box = cfg.crumbs;
			if (!box)
				return;
			box.textContent = '';
			ancestors(zoomD, zoomI).forEach(function (c, n) {
				if (n) {
					const sep = document.createElement('span');
					sep.className = 'pv-sep';
					sep.textContent = '\u203a';
					box.appendChild(sep);
				}
				const b = document.createElement('button');
				b.type = 'button';
				b.textContent = names[levels[c[0]].nm[c[1]]];
				b.title = b.textContent;
				b.addEventListener('click', () => zoomTo(c[0], c[1]));
				box.appendChild(b);
			});
		}

		/* Share of the outermost matches: a frame under a matched frame is not counted again. */
		function matchedTotal() {
			const nameMatch = v.nameMatch;
			let sum = 0;
			for (let d = 0; d < NL; d++) {
				const lv = levels[d], up = d ? levels[d - 1] : null;
				for (let i = 0; i < lv.n; i++) {
					let c = 0;
					if (up) {
						const p = lv.par[i];
						c = up.cov[p] | nameMatch[up.nm[p]];
					}
					lv.cov[i] = c;
					if (!c && nameMatch[lv.nm[i]])
						sum += lv.w[i];
				}
			}
			return sum;
		}

		/* ---- selection (keyboard) ---- */

		function visible(d, i) {
			const lv = levels[d], k = W / viewW;
			return lv.x[i] + lv.w[i] > viewX && lv.x[i] < viewX + viewW && lv.w[i] * k >= MIN_PX;
		}

		function select(d, i) {
			selD = d;
			selI = i;
			if (d >= 0) {
				const y = rowY(d);
				if (y < scrollY || y + ROW > scrollY + H) {
					graph.scrollTop = Math.max(0, y - H / 2);
					scrollY = graph.scrollTop;
				}
			}
			v.selected(d >= 0 ? levels[d].nm[i] : -1, d >= 0 ? levels[d].w[i] : 0);
			requestDraw();
		}

		/* dir: 'parent', 'child', 'prev' or 'next'. */
		function moveSelection(dir) {
			if (!NL)
				return;
			if (selD < 0) {
				select(zoomD, zoomI);
				return;
			}
			let d = selD, i = selI;
			const lv = levels[d];
			if (dir === 'parent') {
				if (!d)
					return;
				i = lv.par[i];
				d--;
			} else if (dir === 'child') {
				if (d + 1 >= NL)
					return;
				let best = -1;
				for (let j = lv.cs[i], e = lv.cs[i + 1]; j < e; j++)
					if (visible(d + 1, j) && (best < 0 || levels[d + 1].w[j] > levels[d + 1].w[best]))
						best = j;
				if (best < 0)
					return;
				d++;
				i = best;
			} else {
				const step = dir === 'prev' ? -1 : 1;
				let j = i + step;
				while (j >= 0 && j < lv.n && !visible(d, j))
					j += step;
				if (j < 0 || j >= lv.n)
					return;
				i = j;
			}
			select(d, i);
		}

		function keyMove(key) {
			if (key === 'ArrowLeft')
				moveSelection('prev');
			else if (key === 'ArrowRight')
				moveSelection('next');
			else if (key === 'ArrowUp')
				moveSelection(flameMode ? 'child' : 'parent');
			else if (key === 'ArrowDown')
				moveSelection(flameMode ? 'parent' : 'child');
		}

		/* ---- pointer ---- */

		function hover(ev) {
			const r = canvas.getBoundingClientRect();
			const hit = hitTest(ev.clientX - r.left, ev.clientY - r.top);
			const d = hit ? hit[0] : -1, i = hit ? hit[1] : -1;
			if (d !== hovD || i !== hovI) {
				hovD = d;
				hovI = i;
				drawOverlay();
				if (hit)
					v.fillTip(m, d, i, zoomD > 0 ? viewW : 0);
			}
			v.showTip(hit ? ev : null);
			canvas.style.cursor = hit ? 'pointer' : 'default';
		}

		function unhover() {
			hovD = hovI = -1;
			v.showTip(null);
			drawOverlay();
		}

		function pointed(ev) {
			const r = canvas.getBoundingClientRect();
			return hitTest(ev.clientX - r.left, ev.clientY - r.top);
		}

		canvas.addEventListener('mousemove', hover);
		canvas.addEventListener('mouseleave', unhover);
		canvas.addEventListener('click', function (ev) {
			const hit = pointed(ev);
			if (!hit)
				return;
			zoomTo(hit[0], hit[1]);
			select(hit[0], hit[1]);
		});
		canvas.addEventListener('contextmenu', function (ev) {
			const hit = pointed(ev);
			if (!hit || !v.openSandwich)
				return;
			ev.preventDefault();
			v.openSandwich(levels[hit[0]].nm[hit[1]]);
		});
		graph.addEventListener('scroll', function () {
			scrollY = graph.scrollTop;
			unhover();
			requestDraw();
		}, { passive: true });

		function setMode(flame) {
			flameMode = flame;
			layout();
			graph.scrollTop = flame ? graph.scrollHeight : 0;
			scrollY = graph.scrollTop;
			unhover();
			requestDraw();
		}

		function relayout() {
			layout();
			scrollY = graph.scrollTop;
			requestDraw();
		}

		/* Widest frame named name in the current view: scrolls it into sight, client rect. */
		function locate(name) {
			let best = null, bw = 0;
			const vx1 = viewX + viewW, k = W / viewW;
			for (let d = 0; d < NL; d++) {
				const lv = levels[d];
				for (let i = firstEnd(lv, viewX); i < lv.n && lv.x[i] < vx1; i++) {
					if (names[lv.nm[i]] === name && lv.w[i] * k >= MIN_PX && lv.w[i] > bw) {
						best = [d, i];
						bw = lv.w[i];
					}
				}
			}
			if (!best)
				return null;
			const y = rowY(best[0]);
			if (y < scrollY || y + ROW > scrollY + H) {
				graph.scrollTop = Math.max(0, y - H / 2);
				scrollY = graph.scrollTop;
			}
			draw();
			const r = frameRect(best[0], best[1]), c = canvas.getBoundingClientRect();
			return { d: best[0], x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h, value: bw };
		}

		/* The frames of depth d in x order: name, x, value, parent index (test hook). */
		function frames(d) {
			const lv = levels[d], out = [];
			for (let i = 0; lv && i < lv.n; i++)
				out.push({ name: names[lv.nm[i]], x: lv.x[i], w: lv.w[i], parent: lv.par[i] });
			return out;
		}

		function state() {
			const zoomName = NL ? names[levels[zoomD].nm[zoomI]] : '';
			return {
				mode: flameMode ? 'flame' : 'icicle', zoomDepth: zoomD, zoomName: zoomName,
				viewX: viewX, viewW: viewW, total: TOTAL, frames: m.nframes, depth: NL,
				selected: selD >= 0 ? names[levels[selD].nm[selI]] : null, selectedDepth: selD,
				draws: g.draws, rects: g.rects,
			};
		}

		setModel(model);
		return {
			g: g, canvas: canvas, graph: graph,
			setModel: setModel, setMode: setMode, relayout: relayout, requestDraw: requestDraw,
			zoomTo: zoomTo, reset: () => zoomTo(0, 0), matchedTotal: matchedTotal,
			keyMove: keyMove, select: select, locate: locate, state: state, frames: frames,
			label: (ni, maxChars) => label(ni, maxChars),
			clearLabels: () => labelLen.fill(-1),
			zoomSelected: function () {
				if (selD >= 0)
					zoomTo(selD, selI);
			},
			selectedName: () => (selD >= 0 ? levels[selD].nm[selI] : hovD >= 0 ? levels[hovD].nm[hovI] : -1),
			destroy: function () {
				dead = true;
				if (pending)
					cancelAnimationFrame(pending);
				box.textContent = '';
			},
		};
	}

	/* ---- one viewer ---- */

	function createViewer(root, D, opts, keep) {
		const T_START = opts.startedAt === undefined ? performance.now() : opts.startedAt;
		const T_MOUNT = performance.now();
		injectStyle();
		root.classList.add('plateau-viewer');
		root.innerHTML = TEMPLATE;
		const $ = (role) => root.querySelector('[data-role="' + role + '"]');
		const DIFF = D.diff || null;
		const names = D.names, nameFlags = D.nameFlags;
		const DIV = Math.pow(10, D.decimals || 0);
		const UNIT = D.unit;
		const NEFF = effectiveSamples(D);
		const fmtValue = (raw) => formatValue(raw, DIV, UNIT);
		const cleanups = [];
		const timers = new Set();
		let dead = false, readyCalled = false;

		function listen(target, type, fn, o) {
			target.addEventListener(type, fn, o);
			cleanups.push(() => target.removeEventListener(type, fn, o));
		}

		function later(fn, ms) {
			const id = setTimeout(function () {
				timers.delete(id);
				if (!dead)
					fn();
			}, ms);
			timers.add(id);
			return id;
		}

		function frame(fn) {
			const id = requestAnimationFrame(function () {
				timers.delete(-id);
				if (!dead)
					fn();
			});
			timers.add(-id);
		}

		const orig = decode(D.levels, DIFF);
		const T_PREP = performance.now();
		const TOTAL = orig.total;
		let leftHeavy = !!keep.leftHeavy, fullNames = !!keep.fullNames, leftModel = null;
		let sandwich = null; /* { f, callers: Graph, callees: Graph } */

		/* What the graphs share through v: names, search state, tooltip. */
		const v = {
			root: root, names: names, nameFlags: nameFlags,
			nameMatch: new Uint8Array(names.length), matchOn: false,
			greyNoise: !!(DIFF && DIFF.significance), negate: !!(DIFF && DIFF.negate),
		};
		const shortCache = new Array(names.length);
		v.displayName = function (ni) {
			if (fullNames)
				return names[ni];
			let s = shortCache[ni];
			if (s === undefined)
				s = shortCache[ni] = shortName(names[ni]);
			return s;
		};

		/* ---- tooltip ---- */

		const tip = $('tip');

		function tipLine(text, cls) {
			const div = document.createElement('div');
			if (cls)
				div.className = cls;
			div.textContent = text;
			tip.appendChild(div);
		}

		v.fillTip = function (m, d, i, zoomW) {
			const lv = m.levels[d], ni = lv.nm[i], w = lv.w[i];
			tip.textContent = '';
			const b = document.createElement('b');
			b.textContent = names[ni];
			tip.appendChild(b);
			const [share, lo, hi] = shareInterval(w, TOTAL, NEFF);
			tipLine(fmtValue(w) + ' \u2014 ' + pct(share) + ' of all (95% interval ' + intervalText(lo, hi) + ')');
			if (zoomW)
				tipLine(pct(w / zoomW) + ' of the zoomed frame', 'pv-dim');
			tipLine('self ' + fmtValue(lv.s[i]) + ' (' + pct(TOTAL ? lv.s[i] / TOTAL : 0) + ')', 'pv-dim');
			if (m.diff) {
				const bshare = DIFF.baseTotal ? lv.bt[i] / DIFF.baseTotal : 0;
				const dpp = 100 * (share - bshare);
				tipLine('base ' + fmtValue(lv.bt[i]) + ' (' + pct(bshare) + ') \u2192 new ' +
					fmtValue(w) + ' (' + pct(share) + '): ' + (dpp >= 0 ? '+' : '') +
					dpp.toFixed(2) + ' pp');
				tipLine('self ' + fmtValue(lv.bs[i]) + ' \u2192 ' + fmtValue(lv.s[i]), 'pv-dim');
				tipLine(lv.sig[i] ? 'change is significant (p < ' + DIFF.alpha + ')'
					: 'change within sampling noise (p \u2265 ' + DIFF.alpha + ')', 'pv-dim');
			}
			const fl = nameFlags[ni], kinds = [];
			if (fl & F_KERNEL)
				kinds.push('kernel');
			if (fl & F_INLINED)
				kinds.push('inlined');
			if (fl & F_JIT)
				kinds.push('JIT');
			if (fl & F_UNSYM)
				kinds.push('unsymbolized');
			if (kinds.length)
				tipLine('[' + kinds.join(', ') + ']', 'pv-dim');
			tipLine('click to zoom, right click or s for its sandwich', 'pv-dim');
		};

		v.showTip = function (ev) {
			tip.style.display = ev ? 'block' : 'none';
			if (!ev)
				return;
			const r = tip.getBoundingClientRect();
			let x = ev.clientX + 14, y = ev.clientY + 16;
			if (x + r.width > window.innerWidth - 4)
				x = Math.max(4, ev.clientX - r.width - 14);
			if (y + r.height > window.innerHeight - 4)
				y = Math.max(4, ev.clientY - r.height - 12);
			tip.style.left = x + 'px';
			tip.style.top = y + 'px';
		};

		v.selected = function (ni, w) {
			const el = $('selected');
			if (ni < 0) {
				el.textContent = '';
				delete el.dataset.name;
				return;
			}
			el.dataset.name = names[ni];
			el.title = names[ni];
			el.textContent = 'Selected: ' + v.displayName(ni) + ' \u2014 ' + fmtValue(w) + ' (' +
				pct(TOTAL ? w / TOTAL : 0) + ')';
		};

		/* ---- the main graph ---- */

		function mainModel() {
			if (!leftHeavy)
				return orig;
			if (!leftModel)
				leftModel = decode(leftHeavyLevels(orig), DIFF);
			return leftModel;
		}

		const main = Graph($('main'), v, mainModel(), {
			flame: keep.flame === undefined ? !D.inverted : keep.flame,
			crumbs: $('crumbs'), heightShare: 0.72, onDraw: mainDrawn,
		});

		function mainDrawn() {
			if (readyCalled)
				return;
			readyCalled = true;
			root.style.minHeight = '';
			if (opts.onReady)
				later(opts.onReady, 0);
		}

		/* ---- search ---- */

		let matchedShare = 0, searchTimer = 0, tableTimer = 0;

		function eachGraph(fn) {
			fn(main);
			if (sandwich) {
				fn(sandwich.callers);
				fn(sandwich.callees);
			}
		}

		/*
		 * tableDelay: after a click on a row, rebuild the table a little
		 * later, so the second click of a double click (the sandwich) finds
		 * the row still in place.
		 */
		function applySearch(text, tableDelay) {
			const input = $('search'), out = $('matched');
			let re = null;
			input.classList.remove('pv-bad');
			if (text) {
				try {
					re = new RegExp(text);
				} catch (e) {
					input.classList.add('pv-bad');
					out.textContent = 'bad regular expression';
					return;
				}
			}
			/* Nothing to undo: skip rebuilding the table. */
			if (!re && !v.matchOn) {
				out.textContent = '';
				return;
			}
			v.matchOn = !!re;
			for (let n = 0; n < names.length; n++)
				v.nameMatch[n] = re && re.test(names[n]) ? 1 : 0;
			if (re) {
				const sum = main.matchedTotal();
				const [share, lo, hi] = shareInterval(sum, TOTAL, NEFF);
				matchedShare = share;
				out.textContent = 'Matched: ' + pct(share) + ' (95% interval ' + intervalText(lo, hi) +
					') (' + fmtValue(sum) + ')';
				out.dataset.lo = String(lo);
				out.dataset.hi = String(hi);
			} else {
				matchedShare = 0;
				out.textContent = '';
			}
			out.dataset.share = String(matchedShare);
			clearTimeout(tableTimer);
			if (tableDelay)
				tableTimer = later(renderTable, tableDelay);
			else
				renderTable();
			eachGraph((gr) => gr.requestDraw());
		}

		function scheduleSearch() {
			clearTimeout(searchTimer);
			searchTimer = later(() => applySearch($('search').value), 120);
		}

		function escapeRe(s) {
			return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
		}

		function searchFor(text, tableDelay) {
			$('search').value = text;
			clearTimeout(searchTimer);
			applySearch(text, tableDelay);
		}

		/* ---- table ---- */

		const FN = D.functions || [];
		const BASE_TOTAL = DIFF ? DIFF.baseTotal : 0;
		const shareCell = (v) => {
			const [share, lo, hi] = shareInterval(v, TOTAL, NEFF);
			return [pct(share), intervalText(lo, hi)];
		};
		const COLS = [
			{ key: 'name', label: 'Function', cls: 'name', get: (r) => names[r[0]] },
			{ key: 'self', label: 'Self', get: (r) => r[1], fmt: fmtValue },
			{ key: 'selfpct', label: 'Self % (95% interval)', get: (r) => r[1], fmt: shareCell },
			{ key: 'total', label: 'Total', get: (r) => r[2], fmt: fmtValue },
			{ key: 'totalpct', label: 'Total % (95% interval)', get: (r) => r[2], fmt: shareCell },
		];
		if (DIFF) {
			COLS.push({
				key: 'basepct', label: 'Base total %',
				get: (r) => (BASE_TOTAL ? r[4] / BASE_TOTAL : 0), fmt: (x) => pct(x),
			});
			COLS.push({
				key: 'delta', label: '\u0394 total (pp)',
				get: (r) => 100 * ((TOTAL ? r[2] / TOTAL : 0) - (BASE_TOTAL ? r[4] / BASE_TOTAL : 0)),
				fmt: (x) => (x >= 0 ? '+' : '') + x.toFixed(2),
			});
		}
		let sortKey = 'self', sortDesc = true, tableLimit = 200, selectedName = -1;
		let order = null, tableReady = false, filterText = '';

		function sortTable() {
			const col = COLS.find((c) => c.key === sortKey);
			const keys = FN.map(col.get);
			const idx = new Array(FN.length);
			for (let i = 0; i < idx.length; i++)
				idx[i] = i;
			const dir = sortDesc ? -1 : 1;
			idx.sort(function (a, b) {
				const x = keys[a], y = keys[b];
				if (x < y)
					return -dir;
				if (x > y)
					return dir;
				return FN[b][2] - FN[a][2] || a - b;
			});
			order = idx;
		}

		function renderHead() {
			const tr = $('functions').tHead.rows[0];
			tr.textContent = '';
			COLS.forEach(function (c) {
				const th = document.createElement('th');
				th.textContent = c.label;
				th.dataset.key = c.key;
				if (c.cls)
					th.className = c.cls;
				if (c.key === sortKey)
					th.dataset.dir = sortDesc ? 'desc' : 'asc';
				th.title = 'sort by ' + c.label;
				th.addEventListener('click', function () {
					if (sortKey === c.key)
						sortDesc = !sortDesc;
					else {
						sortKey = c.key;
						sortDesc = c.key !== 'name';
					}
					sortTable();
					renderHead();
					renderTable();
				});
				tr.appendChild(th);
			});
		}

		function filtered(ni) {
			if (v.matchOn && !v.nameMatch[ni])
				return false;
			return !filterText || names[ni].toLowerCase().includes(filterText) ||
				v.displayName(ni).toLowerCase().includes(filterText);
		}

		function cell(tr, c, r) {
			const td = document.createElement('td');
			const x = c.get(r);
			if (c.cls)
				td.className = c.cls;
			if (c.key === 'name') {
				const fn = document.createElement('span');
				fn.dataset.role = 'fn';
				fn.textContent = v.displayName(r[0]);
				td.title = names[r[0]];
				td.appendChild(fn);
				const b = document.createElement('button');
				b.type = 'button';
				b.dataset.role = 'sandwich-open';
				b.title = 'Sandwich view: its callers and callees (or double click the row)';
				b.textContent = 'sandwich';
				td.appendChild(b);
			} else if (c.fmt === shareCell) {
				const [p, ci] = shareCell(x);
				td.textContent = p;
				const s = document.createElement('span');
				s.className = 'pv-ci';
				s.textContent = ci;
				td.appendChild(s);
			} else {
				td.textContent = c.fmt ? c.fmt(x) : x;
			}
			tr.appendChild(td);
		}

		function renderTable() {
			if (!tableReady)
				return;
			const body = $('functions').tBodies[0];
			const frag = document.createDocumentFragment();
			let shown = 0, matching = 0;
			for (let n = 0; n < order.length; n++) {
				const r = FN[order[n]];
				if (!filtered(r[0]))
					continue;
				matching++;
				if (shown >= tableLimit)
					continue;
				shown++;
				const tr = document.createElement('tr');
				tr.dataset.name = r[0];
				tr.dataset.self = r[1];
				tr.dataset.total = r[2];
				if (r[0] === selectedName)
					tr.className = 'sel';
				COLS.forEach((c) => cell(tr, c, r));
				frag.appendChild(tr);
			}
			body.textContent = '';
			body.appendChild(frag);
			const more = $('more');
			more.hidden = matching <= shown;
			more.textContent = 'Show more (' + (matching - shown) + ' not shown)';
			const some = v.matchOn || filterText;
			$('tablenote').textContent = (some ? matching + ' of ' : '') + FN.length +
				' functions' + (some ? ' match' : '') +
				'; total counts each function once per stack (recursion is not double-counted)';
		}

		/* ---- sandwich ---- */

		function openSandwich(f) {
			if (f < 0)
				return;
			closeSandwich(true);
			const s = sandwichLevels(orig, names, f);
			const box = $('sandwich');
			$('main').hidden = true;
			$('crumbrow').hidden = true;
			box.hidden = false;
			$('sandbar').hidden = false;
			const cfg = { heightShare: 0.34, minHeight: 120 };
			sandwich = {
				f: f, total: s.total,
				callers: Graph($('callers'), v, decode(s.callers, null), Object.assign({ flame: true }, cfg)),
				callees: Graph($('callees'), v, decode(s.callees, null), Object.assign({ flame: false }, cfg)),
			};
			sandwich.callers.setMode(true);
			sandwich.callees.setMode(false);
			const [share, lo, hi] = shareInterval(s.total, TOTAL, NEFF);
			const t = $('sandwich-title');
			t.dataset.name = names[f];
			t.dataset.total = String(s.total);
			t.textContent = 'Sandwich of ' + v.displayName(f) + ': total ' + fmtValue(s.total) + ', ' +
				pct(share) + ' (95% interval ' + intervalText(lo, hi) + ')';
			t.title = names[f];
			$('mode-flame').disabled = $('mode-icicle').disabled = $('left-heavy').disabled = true;
		}
		v.openSandwich = openSandwich;

		function closeSandwich(quiet) {
			if (!sandwich)
				return;
			sandwich.callers.destroy();
			sandwich.callees.destroy();
			sandwich = null;
			if (quiet)
				return;
			$('sandwich').hidden = true;
			$('sandbar').hidden = true;
			$('main').hidden = false;
			$('crumbrow').hidden = false;
			$('mode-flame').disabled = $('mode-icicle').disabled = $('left-heavy').disabled = false;
			main.relayout();
		}

		/* ---- header, legend, notices, modes ---- */

		function fillHeader() {
			if (opts.header === false) {
				$('header').hidden = true;
				return;
			}
			$('title').textContent = D.title || '';
			$('subtitle').textContent = D.subtitle || '';
			let info = D.type + ' (' + UNIT + '): total ' + fmtValue(TOTAL) + ' from ' +
				commas(D.samples) + ' samples; ' + commas(orig.nframes) + ' frames.';
			if (DIFF)
				info = 'Differential: base ' + fmtValue(DIFF.baseTotal) + ' from ' +
					commas(DIFF.baseSamples) + ' samples, new ' + fmtValue(TOTAL) + ' from ' +
					commas(DIFF.newSamples) + ' samples. Widths are the new profile; red grew, ' +
					'blue shrank (by self), grey: change within sampling noise (p \u2265 ' +
					DIFF.alpha + ').';
			if (!DIFF && D.effSamples !== undefined && Math.round(D.effSamples) !== D.samples)
				info += ' Weighted samples count as ' + commas(Math.round(D.effSamples)) +
					' effective samples.';
			info += ' A share p from n samples is uncertain by about \u00b11.96\u221a(p(1\u2212p)/n): ' +
				'hover a frame for its 95% interval.';
			$('info').textContent = info;
		}

		function fillDropped() {
			const dr = D.dropped;
			if (!dr)
				return;
			$('dropped').hidden = false;
			$('dropped-text').textContent = commas(dr.frames) + ' frames (' +
				pct(TOTAL ? dr.value / TOTAL : 0) + ' of the total) merged into \u2018other\u2019' +
				(dr.why ? ' (' + dr.why + ')' : '');
			if (opts.onShowAll) {
				$('show-all').hidden = false;
				listen($('show-all'), 'click', () => opts.onShowAll());
			}
		}

		function fillLegend() {
			const box = $('legend');
			let seen = 0;
			for (let n = 0; n < nameFlags.length; n++)
				seen |= nameFlags[n];
			const items = [];
			if (DIFF) {
				items.push(['rgb(255,90,90)', 'grew'], ['rgb(90,90,255)', 'shrank'], [WHITE, 'same']);
				if (v.greyNoise)
					items.push([GREY, 'noise']);
			} else {
				if (seen & F_KERNEL)
					items.push(['rgb(235,160,20)', 'kernel']);
				if (seen & F_INLINED)
					items.push(['rgb(110,215,215)', 'inlined']);
				if (seen & F_JIT)
					items.push(['rgb(90,215,90)', 'JIT']);
				if (seen & F_UNSYM)
					items.push(['rgb(195,195,195)', 'unsymbolized']);
			}
			items.push([MATCH_COLOR, 'match']);
			box.textContent = '';
			items.forEach(function (it) {
				const s = document.createElement('span');
				const i = document.createElement('i');
				i.style.background = it[0];
				s.appendChild(i);
				s.appendChild(document.createTextNode(it[1]));
				box.appendChild(s);
			});
		}

		function setMode(flame) {
			$('mode-flame').setAttribute('aria-pressed', String(flame));
			$('mode-icicle').setAttribute('aria-pressed', String(!flame));
			main.setMode(flame);
		}

		function setLeftHeavy(on) {
			leftHeavy = on;
			$('left-heavy').setAttribute('aria-pressed', String(on));
			main.setModel(mainModel());
			main.setMode(main.state().mode === 'flame');
		}

		function setFullNames(on) {
			fullNames = on;
			$('full-names').setAttribute('aria-pressed', String(on));
			eachGraph((gr) => {
				gr.clearLabels();
				gr.requestDraw();
			});
			renderTable();
		}

		function reset() {
			selectedName = -1;
			searchFor('');
			main.reset();
			main.select(-1, -1);
			v.showTip(null);
		}

		/* ---- events ---- */

		function onKey(ev) {
			if (ev.defaultPrevented || keyOwner(ev.target) !== self)
				return;
			const search = $('search');
			const typing = isTyping(ev.target);
			if (typing && !root.contains(ev.target))
				return;
			if ((ev.key === '/' && !typing) || ((ev.ctrlKey || ev.metaKey) && ev.key === 'f')) {
				ev.preventDefault();
				search.focus();
				search.select();
			} else if (ev.key === 'Escape') {
				ev.preventDefault();
				if (sandwich && !typing)
					closeSandwich(false);
				else
					reset();
				search.blur();
			} else if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) {
				return;
			} else if (ev.key.startsWith('Arrow')) {
				ev.preventDefault();
				main.keyMove(ev.key);
			} else if (ev.key === 'Enter') {
				ev.preventDefault();
				main.zoomSelected();
			} else if (ev.key === 's') {
				ev.preventDefault();
				openSandwich(main.selectedName());
			}
		}

		function bind() {
			listen(root, 'pointerover', () => (pointerOwner = self));
			listen(document, 'keydown', onKey);
			listen(window, 'resize', () => eachGraph((gr) => gr.relayout()));
			if (typeof ResizeObserver === 'function') {
				let width = root.clientWidth;
				const ro = new ResizeObserver(function () {
					if (root.clientWidth === width)
						return;
					width = root.clientWidth;
					eachGraph((gr) => gr.relayout());
				});
				ro.observe(root);
				cleanups.push(() => ro.disconnect());
			}
			listen($('mode-flame'), 'click', () => setMode(true));
			listen($('mode-icicle'), 'click', () => setMode(false));
			listen($('left-heavy'), 'click', () => setLeftHeavy(!leftHeavy));
			listen($('full-names'), 'click', () => setFullNames(!fullNames));
			listen($('reset'), 'click', reset);
			listen($('sandwich-back'), 'click', () => closeSandwich(false));
			listen($('search'), 'input', scheduleSearch);
			listen($('search'), 'keydown', function (ev) {
				if (ev.key === 'Enter')
					searchFor($('search').value);
			});
			listen($('filter'), 'input', function () {
				filterText = $('filter').value.toLowerCase();
				renderTable();
			});
			listen($('grey'), 'change', function () {
				v.greyNoise = $('grey').checked;
				fillLegend();
				eachGraph((gr) => gr.requestDraw());
			});
			listen($('more'), 'click', function () {
				tableLimit += 1000;
				renderTable();
			});
			const body = $('functions').tBodies[0];
			listen(body, 'click', function (ev) {
				const tr = ev.target.closest('tr');
				if (!tr)
					return;
				const ni = Number(tr.dataset.name);
				if (ev.target.closest('[data-role="sandwich-open"]')) {
					openSandwich(ni);
					return;
				}
				selectedName = ni;
				searchFor('^' + escapeRe(names[ni]) + '$', 350);
			});
			listen(body, 'dblclick', function (ev) {
				const tr = ev.target.closest('tr');
				if (tr)
					openSandwich(Number(tr.dataset.name));
			});
		}

		/* ---- the handle ---- */

		const self = {
			root: root,
			mode: () => ({ flame: main.state().mode === 'flame', leftHeavy: leftHeavy, fullNames: fullNames }),
			state: function () {
				const st = main.state();
				st.view = sandwich ? 'sandwich' : 'graph';
				st.sandwich = sandwich ? names[sandwich.f] : null;
				st.leftHeavy = leftHeavy;
				st.fullNames = fullNames;
				st.matchedShare = matchedShare;
				st.tableReady = tableReady;
				st.timings = {
					parseMs: T_MOUNT - T_START,
					prepMs: T_PREP - T_MOUNT,
					initMs: T_INIT - T_PREP,
					firstDrawMs: main.g.firstDrawMs,
					firstDrawAtMs: main.g.firstDrawAt < 0 ? -1 : main.g.firstDrawAt - T_START,
					lastDrawMs: main.g.lastDrawMs,
				};
				return st;
			},
			/* which: 'main' (default), 'callers' or 'callees'. */
			locate: function (name, which) {
				const gr = which && which !== 'main' ? sandwich && sandwich[which] : main;
				return gr ? gr.locate(name) : null;
			},
			graphState: (which) => (sandwich && sandwich[which] ? sandwich[which].state() : null),
			/* The frames of depth d of graph which ('main', 'callers', 'callees'). */
			frames: function (d, which) {
				const gr = which && which !== 'main' ? sandwich && sandwich[which] : main;
				return gr ? gr.frames(d) : null;
			},
			/* The label the graph draws for name in maxChars characters. */
			label: function (name, maxChars) {
				const ni = names.indexOf(name);
				return ni < 0 ? null : main.label(ni, maxChars);
			},
			destroy: function () {
				dead = true;
				closeSandwich(true);
				main.destroy();
				for (const id of timers) {
					if (id < 0)
						cancelAnimationFrame(-id);
					else
						clearTimeout(id);
				}
				cleanups.forEach((f) => f());
				const at = live.indexOf(self);
				if (at >= 0)
					live.splice(at, 1);
				if (pointerOwner === self)
					pointerOwner = null;
				root.textContent = '';
				root.classList.remove('plateau-viewer');
			},
		};

		live.push(self);
		fillHeader();
		fillLegend();
		fillDropped();
		if (DIFF) {
			$('greylabel').hidden = false;
			$('grey').checked = v.greyNoise;
		}
		$('left-heavy').setAttribute('aria-pressed', String(leftHeavy));
		$('full-names').setAttribute('aria-pressed', String(fullNames));
		bind();
		sortTable();
		setMode(main.state().mode === 'flame');
		/* The table after the first frame: its layout need not delay the graph. */
		frame(() => later(function () {
			tableReady = true;
			renderHead();
			renderTable();
		}, 0));
		const T_INIT = performance.now();
		return self;
	}

	/* ---- the component ---- */

	function mount(root, data, opts) {
		if (!root || !data || !Array.isArray(data.levels) || !Array.isArray(data.names))
			throw new TypeError('PlateauViewer.mount(root, data, opts): root and flamebearer data needed');
		opts = opts || {};
		let inner = createViewer(root, data, opts, {});
		return {
			setData: function (next) {
				if (!next || !Array.isArray(next.levels) || !Array.isArray(next.names))
					throw new TypeError('PlateauViewer setData: flamebearer data needed');
				const keep = inner.mode();
				/* Hold the height while the new DOM is built, so the page does not jump. */
				root.style.minHeight = root.offsetHeight + 'px';
				inner.destroy();
				inner = createViewer(root, next, Object.assign({}, opts, { startedAt: undefined }), keep);
			},
			destroy: function () {
				inner.destroy();
				root.style.minHeight = '';
			},
			state: () => inner.state(),
			locate: (name, which) => inner.locate(name, which),
			graphState: (which) => inner.graphState(which),
			frames: (d, which) => inner.frames(d, which),
			label: (name, maxChars) => inner.label(name, maxChars),
		};
	}

	NAMES.shortName = shortName;
	NAMES.middleCut = middleCut;
	window.PlateauViewer = { mount: mount, names: NAMES };
})();
