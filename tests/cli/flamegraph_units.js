// The SVG prints values as the HTML viewer does: every frame titled
// "vRAW (AMOUNT, P%)" must show the AMOUNT that viewer.js's own formatting
// function gives RAW in UNIT (the function is taken from viewer.js itself).
//
//   node flamegraph_units.js VIEWER.js GRAPH.svg UNIT
//
// Prints "PASS what" or "FAIL what: why".
"use strict";
const fs = require("fs");
const vm = require("vm");

const [viewerPath, svgPath, unit] = process.argv.slice(2);
const src = fs.readFileSync(viewerPath, "utf8");

// A top-level-of-its-scope block: from the line starting with `start` to the
// first line closing it at the same indentation.
function block(start) {
	const at = src.search(start);
	if (at < 0)
		return null;
	const lineStart = src.lastIndexOf("\n", at) + 1;
	const indent = src.slice(lineStart, at);
	const end = src.indexOf("\n" + indent + "}", at);
	return end < 0 ? null : src.slice(at, end + indent.length + 2);
}

const parts = [block(/function commas\(/), src.match(/const SECONDS = \{[^}]*\};/),
	       block(/function (fmtValue|formatValue)\(/)];
if (parts.some((p) => !p)) {
	console.log("FAIL viewer.js has commas, SECONDS and fmtValue/formatValue: not found");
	process.exit(0);
}
const ctx = vm.createContext({ DIV: 1, UNIT: unit });
vm.runInContext(parts[0] + "\n" + parts[1][0] + "\n" + parts[2] +
	"\nvar fmt = typeof formatValue === 'function' ? (r) => formatValue(r, 1, UNIT) : fmtValue;", ctx);

const svg = fs.readFileSync(svgPath, "utf8");
let n = 0;
const bad = [];
for (const m of svg.matchAll(/<title>v(\d+) \((.*), [0-9.]+%\)/g)) {
	const want = ctx.fmt(Number(m[1]));
	n++;
	if (want !== m[2])
		bad.push(m[1] + ": svg " + JSON.stringify(m[2]) + ", viewer " + JSON.stringify(want));
}
console.log((n > 20 && !bad.length ? "PASS " : "FAIL ") + unit + ": " + n +
	    " values as the viewer prints them" + (bad.length ? ": " + bad.slice(0, 5).join("; ") : ""));
