// The share and 95% interval the HTML viewer's tooltip prints for every
// frame of a page, computed by the page's own viewer.js functions.
//
//   node viewer_tips.mjs PAGE.html
//
// Prints one "name<TAB>share<TAB>lo<TAB>hi" line per frame, as the tooltip
// shows them (percentages without the % sign).  The functions are taken
// from the page's script by name and evaluated with the page's data, so
// a tooltip computed another way (or a function missing) fails here.
import { readFileSync } from 'node:fs';

const page = readFileSync(process.argv[2], 'utf8');
const data = JSON.parse(/<script type="application\/json" id="plateau-data">([\s\S]*?)<\/script>/.exec(page)[1]);

/* The source of `function NAME(...) {...}` at one level of indentation. */
function source(name) {
	const m = new RegExp(`\\n(\\t)function ${name}\\(([\\s\\S]*?)\\n\\1}\\n`).exec(page);
	if (!m) {
		console.error(`viewer.js has no function ${name}`);
		process.exit(1);
	}
	return m[0];
}

const Z95 = /const Z95 = ([\d.]+);/.exec(page)[1];
const body = `const Z95 = ${Z95};` +
	['pct', 'wilson', 'effectiveSamples', 'shareInterval', 'pctDown', 'pctUp'].map(source).join('\n') +
	'return { pct, effectiveSamples, shareInterval, pctDown, pctUp };';
const f = new Function('data', body)(data);
const stride = data.diff ? 7 : 4;
const out = [];
for (const lv of data.levels) {
	for (let j = 0; j < lv.length; j += stride) {
		const [share, lo, hi] = f.shareInterval(lv[j + 1], data.total, f.effectiveSamples(data));
		const strip = (s) => s.replace('%', '');
		out.push([data.names[lv[j + 3]], strip(f.pct(share)), strip(f.pctDown(lo)),
			strip(f.pctUp(hi))].join('\t'));
	}
}
console.log(out.join('\n'));
