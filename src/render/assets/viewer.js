/* SPDX-License-Identifier: MIT */
/*
 * plateau's HTML viewer: a flame graph (root at the bottom) or icicle
 * graph (root at the top) drawn on a canvas, with zoom, regex search and
 * a sortable table of functions.  No libraries and no network: the
 * profile comes from the JSON block written by flamegraph_html.c.
 *
 * Data (see doc/viewer.md): names[], nameFlags[], levels[d] = flat
 * [x delta, total, self, name] tuples (+ [base total, base self,
 * significant] for a diff), x delta relative to the end of the previous
 * frame of the level, so each level is sorted by x.
 *
 * Drawing is what keeps 200,000 frames responsive: redraws are coalesced
 * with requestAnimationFrame; only rows in the scrolled viewport are
 * visited; per row a binary search finds the first frame in the zoomed
 * range; frames narrower than half a pixel are skipped; colours and
 * labels are cached per name, so the loop allocates nothing.
 */
(function () {
	'use strict';

	const T_START = performance.now();
	const ROW = 18;
	const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
	const MIN_PX = 0.5;
	const Z95 = 1.959963984540054;
	const F_INLINED = 1, F_KERNEL = 2, F_JIT = 4, F_UNSYM = 8;
	const MATCH_COLOR = 'rgb(230,0,230)';

	const $ = (id) => document.getElementById(id);
	const D = JSON.parse($('plateau-data').textContent);
	const T_PARSED = performance.now();
	const DIFF = D.diff;
	const STRIDE = DIFF ? 7 : 4;
	const names = D.names;
	const nameFlags = D.nameFlags;
	const DIV = Math.pow(10, D.decimals || 0);
	const UNIT = D.unit;

	/* ---- data ---- */

	const levels = [];
	let maxDelta = 1;

	/*
	 * One buffer per field for all levels; each level gets views of its
	 * slice (a deep profile has many small levels: one allocation each
	 * would dominate the load time).
	 */
	let NFRAMES = 0;
	for (let d = 0; d < D.levels.length; d++)
		NFRAMES += (D.levels[d].length / STRIDE) | 0;
	const NLEVELS = D.levels.length;
	const POOL = {
		x: new Float64Array(NFRAMES), w: new Float64Array(NFRAMES), s: new Float64Array(NFRAMES),
		nm: new Int32Array(NFRAMES), par: new Int32Array(NFRAMES), cov: new Uint8Array(NFRAMES),
		cs: new Int32Array(NFRAMES + NLEVELS), vis: new Int32Array(NFRAMES),
		bt: DIFF ? new Float64Array(NFRAMES) : null, bs: DIFF ? new Float64Array(NFRAMES) : null,
		sig: DIFF ? new Uint8Array(NFRAMES) : null,
	};
	let poolAt = 0;

	function decodeLevel(a, up, d) {
		const n = (a.length / STRIDE) | 0, o = poolAt, e = o + n;
		poolAt = e;
		const lv = {
			n: n,
			x: POOL.x.subarray(o, e),
			w: POOL.w.subarray(o, e),
			s: POOL.s.subarray(o, e),
			nm: POOL.nm.subarray(o, e),
			par: POOL.par.subarray(o, e),
			cov: POOL.cov.subarray(o, e),
			/* cs[i] .. cs[i + 1]: children of frame i in the next level. */
			cs: POOL.cs.subarray(o + d, e + d + 1),
			/* The frames drawn in this level by the last draw. */
			vis: POOL.vis.subarray(o, e),
			nvis: 0,
		};
		let end = 0;
		for (let i = 0, j = 0; i < n; i++, j += STRIDE) {
			lv.x[i] = end + a[j];
			lv.w[i] = a[j + 1];
			lv.s[i] = a[j + 2];
			lv.nm[i] = a[j + 3];
			end = lv.x[i] + lv.w[i];
		}
		if (DIFF) {
			lv.bt = POOL.bt.subarray(o, e);
			lv.bs = POOL.bs.subarray(o, e);
			lv.sig = POOL.sig.subarray(o, e);
			for (let i = 0, j = 0; i < n; i++, j += STRIDE) {
				lv.bt[i] = a[j + 4];
				lv.bs[i] = a[j + 5];
				lv.sig[i] = a[j + 6];
				const delta = Math.abs(lv.s[i] - lv.bs[i]);
				if (delta > maxDelta)
					maxDelta = delta;
			}
		}
		/* Parents: both levels are sorted by x and children lie inside them. */
		if (up) {
			let p = 0;
			for (let i = 0; i < n; i++) {
				while (p < up.n - 1 && up.x[p] + up.w[p] <= lv.x[i])
					up.cs[++p] = i;
				lv.par[i] = p;
			}
			while (p < up.n)
				up.cs[++p] = n;
		}
		return lv;
	}

	for (let d = 0; d < D.levels.length; d++)
		levels.push(decodeLevel(D.levels[d], d ? levels[d - 1] : null, d));
	D.levels = null;
	const NL = levels.length;
	const TOTAL = NL ? levels[0].w[0] : 0;
	const T_PREP = performance.now();
	let T_INIT = 0;

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
	function fmtValue(raw) {
		let v = raw / DIV;
		const secs = SECONDS[UNIT];
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
		if (UNIT === 'bytes') {
			const suffix = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
			let i = 0;
			while (Math.abs(v) >= 1024 && i + 1 < suffix.length) {
				v /= 1024;
				i++;
			}
			return (i ? v.toFixed(2) : v.toFixed(0)) + ' ' + suffix[i];
		}
		if (v === Math.floor(v))
			return commas(v) + (UNIT && UNIT !== 'count' ? ' ' + UNIT : '');
		return v.toFixed(2) + (UNIT && UNIT !== 'count' ? ' ' + UNIT : '');
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

	/*
	 * A share and its 95% interval, as plateau's stats_share_of: the share
	 * of values, the interval from the effective samples n_eff (D.effSamples,
	 * Kish's (sum w)^2 / sum w^2), so the interval always holds the share.
	 */
	function shareInterval(part, whole) {
		const share = whole > 0 ? part / whole : 0;
		const n = D.effSamples === undefined ? D.samples : D.effSamples;
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
	/* A differential graph has white frames: draw it on grey. */
	const BACKGROUND = DIFF ? 'rgb(232,232,236)' : '#fff';
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
	function nameColor(ni) {
		const fl = nameFlags[ni];
		const kind = fl & F_UNSYM ? 4 : fl & F_KERNEL ? 1 : fl & F_INLINED ? 2 : fl & F_JIT ? 3 : 0;
		return kind * VARIANTS + (hash(names[ni]) % VARIANTS);
	}

	const nameCol = new Int16Array(names.length).fill(-1);
	const NEGATE = DIFF && DIFF.negate;
	let greyNoise = !!(DIFF && DIFF.significance);

	/* flamegraph.pl's differential colours: red grew, blue shrank, by self delta. */
	function diffColor(lv, i) {
		let delta = lv.s[i] - lv.bs[i];
		if (NEGATE)
			delta = -delta;
		if (delta === 0)
			return C_WHITE;
		if (greyNoise && !lv.sig[i])
			return C_GREY;
		const v = Math.floor((210 * (maxDelta - Math.abs(delta))) / maxDelta);
		return (delta > 0 ? C_RED : C_BLUE) + v;
	}

	function frameColor(lv, i) {
		const ni = lv.nm[i];
		if (matchOn && nameMatch[ni])
			return C_MATCH;
		if (DIFF)
			return diffColor(lv, i);
		let c = nameCol[ni];
		if (c < 0)
			c = nameCol[ni] = nameColor(ni);
		return c;
	}

	/* ---- state ---- */

	let flameMode = !D.inverted;
	let zoomD = 0, zoomI = 0, viewX = 0, viewW = TOTAL;
	let zoomChain = new Int32Array(1); /* zoomChain[d]: the zoomed frame's ancestor at depth d */
	let hovD = -1, hovI = -1;
	let matchOn = false;
	const nameMatch = new Uint8Array(names.length);
	let matchedShare = 0;

	/* ---- canvas ---- */

	const graph = $('graph'), spacer = $('spacer');
	const canvas = $('flame'), overlay = $('overlay');
	const ctx = canvas.getContext('2d', { alpha: false });
	const octx = overlay.getContext('2d');
	let W = 0, H = 0, DPR = 1, charW = 7, scrollY = 0;
	const labelLen = new Int32Array(names.length).fill(-1);
	const labelStr = new Array(names.length);

	function sizeCanvas(c, w, h) {
		c.style.width = w + 'px';
		c.style.height = h + 'px';
		c.width = Math.max(1, Math.round(w * DPR));
		c.height = Math.max(1, Math.round(h * DPR));
	}

	function layout() {
		const th = NL * ROW;
		const avail = Math.max(240, Math.round(window.innerHeight * 0.72));
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

	/* First frame of lv whose end lies after v (ends are sorted too). */
	function firstEnd(lv, v) {
		let lo = 0, hi = lv.n;
		while (lo < hi) {
			const m = (lo + hi) >> 1;
			if (lv.x[m] + lv.w[m] > v)
				hi = m;
			else
				lo = m + 1;
		}
		return lo;
	}

	function rowY(d) {
		return flameMode ? (NL - 1 - d) * ROW : d * ROW;
	}

	function label(ni, maxChars) {
		if (labelLen[ni] === maxChars)
			return labelStr[ni];
		const s = names[ni];
		const r = s.length <= maxChars ? s : s.slice(0, maxChars - 2) + '..';
		labelLen[ni] = maxChars;
		labelStr[ni] = r;
		return r;
	}

	let pending = false;
	let draws = 0, rects = 0, firstDrawMs = -1, lastDrawMs = -1, firstDrawAt = -1;

	function requestDraw() {
		if (pending)
			return;
		pending = true;
		requestAnimationFrame(draw);
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
			let m = 0;
			for (let a = 0; a < up.nvis; a++) {
				const p = up.vis[a];
				for (let j = up.cs[p], e = up.cs[p + 1]; j < e; j++) {
					if (ws[j] >= minW)
						vis[m++] = j;
				}
			}
			lv.nvis = m;
			if (!m)
				break;
		}
		for (d++; d <= last; d++)
			levels[d].nvis = 0;
	}

	/* Rectangles of one draw, grouped by colour before filling (no allocation per draw). */
	const rX = new Float32Array(NFRAMES), rY = new Float32Array(NFRAMES), rW = new Float32Array(NFRAMES);
	const rC = new Uint16Array(NFRAMES), rOrder = new Int32Array(NFRAMES);
	const colorStart = new Int32Array(PAL.length + 1);

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
		ctx.fillStyle = '#000';
		for (let r = 0; r < n; r++) {
			if (rW[r] < minLabel)
				continue;
			const maxChars = Math.floor((rW[r] - 6) / charW);
			if (maxChars >= 3)
				ctx.fillText(label(rOrder[r], maxChars), rX[r] + 3, rY[r] + ROW / 2);
		}
	}

	function draw() {
		pending = false;
		const t = performance.now();
		/* The cached scroll offset: reading scrollTop here could force a layout of the page. */
		const scroll = scrollY;
		ctx.setTransform(DPR, 0, 0, DPR, 0, 0);
		ctx.globalAlpha = 1;
		ctx.fillStyle = BACKGROUND;
		ctx.fillRect(0, 0, W, H);
		ctx.font = FONT;
		ctx.textBaseline = 'middle';
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
		let n = 0;
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
		rects = n;
		ctx.globalAlpha = 1;
		drawOverlay();
		lastDrawMs = performance.now() - t;
		if (firstDrawMs < 0) {
			firstDrawMs = lastDrawMs;
			firstDrawAt = performance.now() - T_START;
		}
		draws++;
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

	function drawOverlay() {
		octx.setTransform(DPR, 0, 0, DPR, 0, 0);
		octx.clearRect(0, 0, W, H);
		if (hovD < 0)
			return;
		const r = frameRect(hovD, hovI);
		octx.strokeStyle = '#000';
		octx.lineWidth = 1.5;
		octx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(1, r.w - 2), r.h - 1.5);
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

	/* ---- zoom and breadcrumbs ---- */

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
		const box = $('crumbs');
		box.textContent = '';
		const chain = ancestors(zoomD, zoomI);
		chain.forEach(function (c, n) {
			if (n) {
				const sep = document.createElement('span');
				sep.className = 'sep';
				sep.textContent = '\u203a';
				box.appendChild(sep);
			}
			const b = document.createElement('button');
			b.type = 'button';
			b.textContent = names[levels[c[0]].nm[c[1]]];
			b.title = b.textContent;
			b.addEventListener('click', function () {
				zoomTo(c[0], c[1]);
			});
			box.appendChild(b);
		});
	}

	/* ---- search ---- */

	/* Share of the outermost matches: a frame under a matched frame is not counted again. */
	function matchedTotal() {
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

	function applySearch(text) {
		const input = $('search'), out = $('matched');
		let re = null;
		input.classList.remove('bad');
		if (text) {
			try {
				re = new RegExp(text);
			} catch (e) {
				input.classList.add('bad');
				out.textContent = 'bad regular expression';
				return;
			}
		}
		/* Nothing to undo: skip rebuilding the table. */
		if (!re && !matchOn) {
			out.textContent = '';
			return;
		}
		matchOn = !!re;
		for (let n = 0; n < names.length; n++)
			nameMatch[n] = re && re.test(names[n]) ? 1 : 0;
		if (re) {
			const sum = matchedTotal();
			matchedShare = TOTAL ? sum / TOTAL : 0;
			out.textContent = 'Matched: ' + pct(matchedShare) + ' (' + fmtValue(sum) + ')';
		} else {
			matchedShare = 0;
			out.textContent = '';
		}
		out.dataset.share = String(matchedShare);
		renderTable();
		requestDraw();
	}

	let searchTimer = 0;

	function scheduleSearch() {
		clearTimeout(searchTimer);
		searchTimer = setTimeout(function () {
			applySearch($('search').value);
		}, 120);
	}

	function escapeRe(s) {
		return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	}

	function searchFor(text) {
		$('search').value = text;
		clearTimeout(searchTimer);
		applySearch(text);
	}

	/* ---- tooltip ---- */

	const tip = $('tip');

	function tipLine(text, cls) {
		const div = document.createElement('div');
		if (cls)
			div.className = cls;
		div.textContent = text;
		tip.appendChild(div);
	}

	function fillTip(d, i) {
		const lv = levels[d], ni = lv.nm[i], w = lv.w[i];
		tip.textContent = '';
		const b = document.createElement('b');
		b.textContent = names[ni];
		tip.appendChild(b);
		const [share, lo, hi] = shareInterval(w, TOTAL);
		tipLine(fmtValue(w) + ' \u2014 ' + pct(share) + ' of all (95% interval ' +
			pctDown(lo) + ' \u2013 ' + pctUp(hi) + ')');
		if (zoomD > 0 && viewW)
			tipLine(pct(w / viewW) + ' of the zoomed frame', 'dim');
		tipLine('self ' + fmtValue(lv.s[i]) + ' (' + pct(TOTAL ? lv.s[i] / TOTAL : 0) + ')', 'dim');
		if (DIFF) {
			const bshare = DIFF.baseTotal ? lv.bt[i] / DIFF.baseTotal : 0;
			const dpp = 100 * (share - bshare);
			tipLine('base ' + fmtValue(lv.bt[i]) + ' (' + pct(bshare) + ') \u2192 new ' +
				fmtValue(w) + ' (' + pct(share) + '): ' + (dpp >= 0 ? '+' : '') +
				dpp.toFixed(2) + ' pp');
			tipLine('self ' + fmtValue(lv.bs[i]) + ' \u2192 ' + fmtValue(lv.s[i]), 'dim');
			tipLine(lv.sig[i] ? 'change is significant (p < ' + DIFF.alpha + ')'
				: 'change within sampling noise (p \u2265 ' + DIFF.alpha + ')', 'dim');
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
			tipLine('[' + kinds.join(', ') + ']', 'dim');
		tipLine('click to zoom', 'dim');
	}

	function placeTip(cx, cy) {
		const r = tip.getBoundingClientRect();
		let x = cx + 14, y = cy + 16;
		if (x + r.width > window.innerWidth - 4)
			x = Math.max(4, cx - r.width - 14);
		if (y + r.height > window.innerHeight - 4)
			y = Math.max(4, cy - r.height - 12);
		tip.style.left = x + 'px';
		tip.style.top = y + 'px';
	}

	function hover(ev) {
		const r = canvas.getBoundingClientRect();
		const hit = hitTest(ev.clientX - r.left, ev.clientY - r.top);
		const d = hit ? hit[0] : -1, i = hit ? hit[1] : -1;
		if (d !== hovD || i !== hovI) {
			hovD = d;
			hovI = i;
			drawOverlay();
			if (hit)
				fillTip(d, i);
		}
		tip.style.display = hit ? 'block' : 'none';
		if (hit)
			placeTip(ev.clientX, ev.clientY);
		canvas.style.cursor = hit ? 'pointer' : 'default';
	}

	function unhover() {
		hovD = hovI = -1;
		tip.style.display = 'none';
		drawOverlay();
	}

	/* ---- table ---- */

	const FN = D.functions;
	const BASE_TOTAL = DIFF ? DIFF.baseTotal : 0;
	const COLS = [
		{ key: 'name', label: 'Function', cls: 'name', get: (r) => names[r[0]] },
		{ key: 'self', label: 'Self', get: (r) => r[1], fmt: fmtValue },
		{ key: 'selfpct', label: 'Self %', get: (r) => r[1], fmt: (v) => pct(TOTAL ? v / TOTAL : 0) },
		{ key: 'total', label: 'Total', get: (r) => r[2], fmt: fmtValue },
		{ key: 'totalpct', label: 'Total %', get: (r) => r[2], fmt: (v) => pct(TOTAL ? v / TOTAL : 0) },
	];
	if (DIFF) {
		COLS.push({
			key: 'basepct', label: 'Base total %',
			get: (r) => (BASE_TOTAL ? r[4] / BASE_TOTAL : 0), fmt: (v) => pct(v),
		});
		COLS.push({
			key: 'delta', label: '\u0394 total (pp)',
			get: (r) => 100 * ((TOTAL ? r[2] / TOTAL : 0) - (BASE_TOTAL ? r[4] / BASE_TOTAL : 0)),
			fmt: (v) => (v >= 0 ? '+' : '') + v.toFixed(2),
		});
	}
	let sortKey = 'self', sortDesc = true, tableLimit = 200, selectedName = -1;
	let order = null, tableReady = false;

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

	function renderTable() {
		const body = $('functions').tBodies[0];
		const frag = document.createDocumentFragment();
		let shown = 0, matching = 0;
		for (let n = 0; n < order.length; n++) {
			const r = FN[order[n]];
			if (matchOn && !nameMatch[r[0]])
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
			COLS.forEach(function (c) {
				const td = document.createElement('td');
				const v = c.get(r);
				if (c.cls)
					td.className = c.cls;
				td.textContent = c.fmt ? c.fmt(v) : v;
				tr.appendChild(td);
			});
			frag.appendChild(tr);
		}
		body.textContent = '';
		body.appendChild(frag);
		const more = $('more');
		more.hidden = matching <= shown;
		more.textContent = 'Show more (' + (matching - shown) + ' not shown)';
		$('tablenote').textContent = (matchOn ? matching + ' of ' : '') + FN.length +
			' functions' + (matchOn ? ' match' : '') +
			'; total counts each function once per stack (recursion is not double-counted)';
	}

	/* ---- header, legend, mode ---- */

	function fillHeader() {
		$('title').textContent = D.title;
		$('subtitle').textContent = D.subtitle || '';
		let info = D.type + ' (' + UNIT + '): total ' + fmtValue(TOTAL) + ' from ' +
			commas(D.samples) + ' samples; ' + commas(NFRAMES) +
			' frames.';
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
		if (DIFF) {
			$('greylabel').hidden = false;
			$('grey').checked = greyNoise;
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
			if (greyNoise)
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
		flameMode = flame;
		$('mode-flame').setAttribute('aria-pressed', String(flame));
		$('mode-icicle').setAttribute('aria-pressed', String(!flame));
		layout();
		graph.scrollTop = flame ? graph.scrollHeight : 0;
		scrollY = graph.scrollTop;
		unhover();
		requestDraw();
	}

	function reset() {
		selectedName = -1;
		searchFor('');
		zoomTo(0, 0);
		unhover();
	}

	/* ---- events ---- */

	function bind() {
		canvas.addEventListener('mousemove', hover);
		canvas.addEventListener('mouseleave', unhover);
		canvas.addEventListener('click', function (ev) {
			const r = canvas.getBoundingClientRect();
			const hit = hitTest(ev.clientX - r.left, ev.clientY - r.top);
			if (hit)
				zoomTo(hit[0], hit[1]);
		});
		graph.addEventListener('scroll', function () {
			scrollY = graph.scrollTop;
			unhover();
			requestDraw();
		}, { passive: true });
		window.addEventListener('resize', function () {
			layout();
			scrollY = graph.scrollTop;
			requestDraw();
		});
		$('mode-flame').addEventListener('click', () => setMode(true));
		$('mode-icicle').addEventListener('click', () => setMode(false));
		$('reset').addEventListener('click', reset);
		$('search').addEventListener('input', scheduleSearch);
		$('search').addEventListener('keydown', function (ev) {
			if (ev.key === 'Enter')
				searchFor($('search').value);
		});
		$('grey').addEventListener('change', function () {
			greyNoise = $('grey').checked;
			fillLegend();
			requestDraw();
		});
		$('more').addEventListener('click', function () {
			tableLimit += 1000;
			renderTable();
		});
		$('functions').tBodies[0].addEventListener('click', function (ev) {
			const tr = ev.target.closest('tr');
			if (!tr)
				return;
			selectedName = Number(tr.dataset.name);
			searchFor('^' + escapeRe(names[selectedName]) + '$');
		});
		document.addEventListener('keydown', function (ev) {
			const inInput = ev.target === $('search');
			if ((ev.key === '/' && !inInput) || ((ev.ctrlKey || ev.metaKey) && ev.key === 'f')) {
				ev.preventDefault();
				$('search').focus();
				$('search').select();
			} else if (ev.key === 'Escape') {
				ev.preventDefault();
				reset();
				$('search').blur();
			}
		});
	}

	/* ---- test and automation hooks (read-only view of the state) ---- */

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
		return { d: best[0], x: c.left + r.x, y: c.top + r.y, w: r.w, h: r.h };
	}

	window.__plateau = {
		locate: locate,
		state: function () {
			return {
				mode: flameMode ? 'flame' : 'icicle',
				zoomDepth: zoomD,
				zoomName: names[levels[zoomD].nm[zoomI]],
				viewX: viewX,
				viewW: viewW,
				total: TOTAL,
				frames: NFRAMES,
				matchedShare: matchedShare,
				draws: draws,
				tableReady: tableReady,
				rects: rects,
				timings: {
					parseMs: T_PARSED - T_START,
					prepMs: T_PREP - T_PARSED,
					initMs: T_INIT - T_PREP,
					firstDrawMs: firstDrawMs,
					firstDrawAtMs: firstDrawAt,
					lastDrawMs: lastDrawMs,
				},
			};
		},
	};

	fillHeader();
	fillLegend();
	bind();
	sortTable();
	renderCrumbs();
	setMode(flameMode);
	/* The table after the first frame: its layout need not delay the graph. */
	requestAnimationFrame(function () {
		setTimeout(function () {
			renderHead();
			renderTable();
			tableReady = true;
		}, 0);
	});
	T_INIT = performance.now();
})();
