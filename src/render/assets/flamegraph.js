// SPDX-License-Identifier: MIT
// plateau flame graph: zoom, search, shareable views and a width that fills
// the window, for the SVG that src/render/flamegraph_svg.c writes.  The
// document holds one <g fg:v="VALUE"> per frame under <g id="frames"> (the
// root first), each with a <title> whose first line is "NAME (AMOUNT, P%...)",
// a <rect> and a <text>.  Settings come from fg:* attributes on the <svg>
// element.  Zoom and search are kept in the URL (?x=..&y=.. and ?s=..,
// coordinates as the file has them) so a shared link reopens the same view.
//
// The file is drawn for its width attribute (1200 by default), which is
// what an <img> shows (no script runs there).  Opened as a document (or in
// an <object> or <iframe>) the script sets the width to 100% and lays the
// frames out again for the window's width on load and on each resize, at
// one pixel per unit, so text keeps its size and labels get the room.
"use strict";

var fg = null;

function fgConf(el, name) {
	var ns = "https://plateau.dev/ns/flamegraph";
	var v = el.getAttributeNS ? el.getAttributeNS(ns, name) : null;
	return v !== null && v !== "" ? v : el.getAttribute("fg:" + name);
}

// A title's first line, "NAME (1,234 samples, 5.00%)" or "NAME (1.23 ms, 5.00%)".
function fgFirstLine(title) {
	var nl = title.indexOf("\n");
	return nl < 0 ? title : title.substring(0, nl);
}

// The name in a title's first line.
function fgParseName(first) {
	var cut = first.lastIndexOf(" (");
	return cut < 0 ? first : first.substring(0, cut);
}

function fgChild(el, tag) {
	var list = el.getElementsByTagName(tag);
	return list.length ? list[0] : null;
}

function FgFrame(g, index) {
	this.g = g;
	this.rect = fgChild(g, "rect");
	this.text = fgChild(g, "text");
	this.tip = fgChild(g, "title").textContent;
	var first = fgFirstLine(this.tip);
	// The root's label is its whole first line: "all (1,234 samples, 100%)".
	this.name = index === 0 ? first : fgParseName(first);
	this.count = parseFloat(fgConf(g, "v")) || 0;
	// As drawn in the file (sx, sy also name the frame in URLs) ...
	this.sx = this.rect.getAttribute("x");
	this.sy = this.rect.getAttribute("y");
	this.sw = this.rect.getAttribute("width");
	this.fx = parseFloat(this.sx);
	this.fw = parseFloat(this.sw);
	// ... and as laid out for the current width.
	this.ox = this.fx;
	this.oy = parseFloat(this.sy);
	this.ow = this.fw;
	this.stx = this.text.getAttribute("x");
	this.label = this.text.textContent;
	this.fill = this.rect.getAttribute("fill");
	g.fgIndex = index;
}

function init(evt) {
	var svg = document.getElementsByTagName("svg")[0];
	var groups = document.getElementById("frames").children;
	fg = {
		svg: svg,
		xpad: parseFloat(fgConf(svg, "xpad")) || 10,
		charw: (parseFloat(fgConf(svg, "fontsize")) || 12) *
			(parseFloat(fgConf(svg, "fontwidth")) || 0.59),
		inverted: fgConf(svg, "inverted") === "1",
		nametype: fgConf(svg, "nametype") || "",
		searchcolor: fgConf(svg, "searchcolor") || "rgb(230,0,230)",
		width: parseFloat(svg.getAttribute("width")),
		fileWidth: parseFloat(svg.getAttribute("width")),
		height: parseFloat(svg.getAttribute("height")),
		frames: [],
		zoomed: null,
		term: null,
		ignorecase: false,
		details: document.getElementById("details").firstChild,
		unzoombtn: document.getElementById("unzoom"),
		searchbtn: document.getElementById("search"),
		icbtn: document.getElementById("ignorecase"),
		matched: document.getElementById("matched")
	};
	for (var i = 0; i < groups.length; i++)
		fg.frames.push(new FgFrame(groups[i], i));
	fgFluid();
	var params = fgParams();
	if (params.i === "1")
		fgSetIgnorecase(true, false);
	if (params.x !== undefined && params.y !== undefined) {
		for (var k = 0; k < fg.frames.length; k++) {
			var f = fg.frames[k];
			if (f.sx === params.x && f.sy === params.y) {
				fgZoom(f);
				break;
			}
		}
	}
	if (params.s)
		fgSearch(params.s);
	window.addEventListener("click", fgOnClick, false);
	window.addEventListener("mouseover", fgOnOver, false);
	window.addEventListener("mouseout", fgOnOut, false);
	window.addEventListener("keydown", fgOnKey, false);
}

// URL state.

function fgParams() {
	var out = {};
	var q = window.location.search.replace(/^\?/, "");
	if (!q)
		return out;
	var parts = q.split("&");
	for (var i = 0; i < parts.length; i++) {
		var eq = parts[i].indexOf("=");
		if (eq <= 0)
			continue;
		try {
			out[parts[i].substring(0, eq)] = decodeURIComponent(parts[i].substring(eq + 1));
		} catch (e) {
			// a malformed escape: ignore that parameter
		}
	}
	return out;
}

function fgSetParams(change) {
	var params = fgParams();
	for (var key in change) {
		if (change[key] === null)
			delete params[key];
		else
			params[key] = change[key];
	}
	var q = [];
	for (var k in params)
		q.push(k + "=" + encodeURIComponent(params[k]));
	var url = window.location.pathname + (q.length ? "?" + q.join("&") : "") +
		window.location.hash;
	try {
		window.history.replaceState(null, "", url);
	} catch (e) {
		// file: URLs may refuse; the view still works
	}
}

// Width: fill the window.

var FG_MIN_WIDTH = 320;

function fgFluid() {
	var svg = fg.svg;
	// In an <img> nothing runs; inline in an HTML page the host decides.
	if (document.documentElement !== svg || !svg.getBoundingClientRect)
		return;
	svg.setAttribute("width", "100%");
	fgResize();
	var pending = false;
	var later = window.requestAnimationFrame ? window.requestAnimationFrame.bind(window)
		: function (fn) { window.setTimeout(fn, 16); };
	window.addEventListener("resize", function () {
		if (pending)
			return;
		pending = true;
		later(function () {
			pending = false;
			fgResize();
		});
	}, false);
}

function fgResize() {
	var w = Math.floor(fg.svg.getBoundingClientRect().width);
	// Narrower than the controls need: drawn at the minimum and scaled down.
	fgLayout(Math.max(w, FG_MIN_WIDTH));
}

function fgSetX(id, x) {
	var el = document.getElementById(id);
	if (el)
		el.setAttribute("x", String(x));
}

// Lay the frames and the fixed texts out for width w (one unit per pixel).
function fgLayout(w) {
	var k = (w - 2 * fg.xpad) / (fg.fileWidth - 2 * fg.xpad);
	fg.width = w;
	fg.svg.setAttribute("viewBox", "0 0 " + w + " " + fg.height);
	var bg = document.getElementById("background-rect");
	if (bg)
		bg.setAttribute("width", w.toFixed(1));
	fgSetX("title", Math.floor(w / 2));
	fgSetX("subtitle", Math.floor(w / 2));
	fgSetX("search", w - fg.xpad - 100);
	fgSetX("ignorecase", w - fg.xpad - 16);
	fgSetX("matched", w - fg.xpad - 100);
	for (var i = 0; i < fg.frames.length; i++) {
		var f = fg.frames[i];
		f.ox = fg.xpad + (f.fx - fg.xpad) * k;
		f.ow = f.fw * k;
	}
	if (fg.zoomed) {
		fgZoom(fg.zoomed);
	} else {
		for (var j = 0; j < fg.frames.length; j++)
			fgRestore(fg.frames[j]);
	}
}

// Drawing helpers.

function fgFit(name, w) {
	var chars = Math.floor(w / fg.charw);
	if (chars < 3)
		return "";
	var cps = Array.from ? Array.from(name) : name.split("");
	if (cps.length <= chars)
		return name;
	return cps.slice(0, chars - 2).join("") + "..";
}

function fgPlace(f, x, w) {
	f.rect.setAttribute("x", x.toFixed(1));
	f.rect.setAttribute("width", w.toFixed(1));
	f.text.setAttribute("x", (x + 3).toFixed(2));
	f.text.textContent = fgFit(f.name, w);
}

// Unzoomed: as in the file at its own width, else laid out for this one.
function fgRestore(f) {
	f.g.classList.remove("hide");
	f.g.classList.remove("parent");
	if (fg.width !== fg.fileWidth) {
		fgPlace(f, f.ox, f.ow);
		return;
	}
	f.rect.setAttribute("x", f.sx);
	f.rect.setAttribute("width", f.sw);
	f.text.setAttribute("x", f.stx);
	f.text.textContent = f.label;
}

// Zoom: the frame fills the width, its ancestors stay (half transparent)
// at full width, and everything beside it is hidden.

function fgIsAbove(e, f) {
	return fg.inverted ? e.oy < f.oy : e.oy > f.oy;
}

function fgZoom(f) {
	var fudge = 0.0001;
	var avail = fg.width - 2 * fg.xpad;
	var xmin = f.ox, xmax = f.ox + f.ow;
	var ratio = avail / f.ow;
	if (f === fg.frames[0]) {
		fgUnzoom();
		return;
	}
	for (var i = 0; i < fg.frames.length; i++) {
		var e = fg.frames[i];
		fgRestore(e);
		if (fgIsAbove(e, f)) {
			if (e.ox <= xmin + fudge && e.ox + e.ow + fudge >= xmax) {
				e.g.classList.add("parent");
				fgPlace(e, fg.xpad, avail);
			} else {
				e.g.classList.add("hide");
			}
		} else if (e.ox < xmin - fudge || e.ox >= xmax - fudge) {
			e.g.classList.add("hide");
		} else {
			fgPlace(e, fg.xpad + (e.ox - xmin) * ratio, e.ow * ratio);
		}
	}
	fg.zoomed = f;
	fg.unzoombtn.classList.remove("hide");
	fgSetParams({ x: f.sx, y: f.sy });
}

function fgUnzoom() {
	for (var i = 0; i < fg.frames.length; i++)
		fgRestore(fg.frames[i]);
	fg.zoomed = null;
	fg.unzoombtn.classList.add("hide");
	fgSetParams({ x: null, y: null });
}

// Search: frames whose name matches a regular expression are painted,
// and the share they hold is counted once per stack (outermost matches).

function fgMatchedShare(hits) {
	var fudge = 0.0001;
	hits.sort(function (a, b) {
		return a.ox - b.ox || b.ow - a.ow || (fg.inverted ? a.oy - b.oy : b.oy - a.oy);
	});
	var sum = 0, end = -Infinity;
	for (var i = 0; i < hits.length; i++) {
		if (hits[i].ox >= end - fudge) {
			sum += hits[i].count;
			end = hits[i].ox + hits[i].ow;
		}
	}
	var total = fg.frames[0].count;
	return total > 0 ? 100 * sum / total : 0;
}

function fgShowMatched(text) {
	fg.matched.classList.remove("hide");
	fg.matched.firstChild.nodeValue = text;
}

function fgSearch(term) {
	var re;
	try {
		re = new RegExp(term, fg.ignorecase ? "i" : "");
	} catch (e) {
		fgShowMatched("Bad regular expression");
		return;
	}
	var hits = [];
	for (var i = 0; i < fg.frames.length; i++) {
		var f = fg.frames[i];
		if (i > 0 && re.test(f.name)) {
			f.rect.setAttribute("fill", fg.searchcolor);
			hits.push(f);
		} else {
			f.rect.setAttribute("fill", f.fill);
		}
	}
	fg.term = term;
	fg.searchbtn.classList.add("show");
	fg.searchbtn.firstChild.nodeValue = "Reset Search";
	var pct = fgMatchedShare(hits);
	fgShowMatched("Matched: " + (pct === 100 ? "100" : pct.toFixed(1)) + "%");
	fgSetParams({ s: term });
}

function fgClearSearch() {
	for (var i = 0; i < fg.frames.length; i++)
		fg.frames[i].rect.setAttribute("fill", fg.frames[i].fill);
	fg.term = null;
	fg.searchbtn.classList.remove("show");
	fg.searchbtn.firstChild.nodeValue = "Search";
	fg.matched.firstChild.nodeValue = " ";
	fgSetParams({ s: null });
}

function fgSearchPrompt() {
	if (fg.term !== null) {
		fgClearSearch();
		return;
	}
	var term = window.prompt("Search for a function (a regular expression, e.g. ^ext4_)" +
		(fg.ignorecase ? ", ignoring case" : "") +
		"\nCtrl-I toggles case sensitivity", "");
	if (term)
		fgSearch(term);
}

function fgSetIgnorecase(on, rerun) {
	fg.ignorecase = on;
	if (on)
		fg.icbtn.classList.add("show");
	else
		fg.icbtn.classList.remove("show");
	if (rerun) {
		fgSetParams({ i: on ? "1" : null });
		if (fg.term !== null)
			fgSearch(fg.term);
	}
}

// Events.

function fgFrameOf(node) {
	for (; node && node.parentNode; node = node.parentNode) {
		if (node.parentNode.id === "frames")
			return node.fgIndex === undefined ? null : fg.frames[node.fgIndex];
	}
	return null;
}

function fgOnClick(e) {
	var f = fgFrameOf(e.target);
	if (f) {
		fgZoom(f);
		return;
	}
	var id = e.target && e.target.id;
	if (id === "unzoom")
		fgUnzoom();
	else if (id === "search")
		fgSearchPrompt();
	else if (id === "ignorecase")
		fgSetIgnorecase(!fg.ignorecase, true);
}

function fgOnOver(e) {
	var f = fgFrameOf(e.target);
	if (f)
		fg.details.nodeValue = fg.nametype + " " + f.tip.replace(/\n/g, "; ");
}

function fgOnOut(e) {
	if (fgFrameOf(e.target))
		fg.details.nodeValue = " ";
}

function fgOnKey(e) {
	if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) {
		e.preventDefault();
		fgSearchPrompt();
	} else if (e.ctrlKey && e.keyCode === 73) {
		e.preventDefault();
		fgSetIgnorecase(!fg.ignorecase, true);
	}
}
