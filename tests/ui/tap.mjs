// What the browser tests of tests/ui share: TAP lines and folded input.
import { readFileSync } from 'node:fs';

let failed = 0;

/* "ok - desc" or "not ok - desc" with up to 15 lines of detail; returns cond. */
export function ok(cond, desc, detail) {
	console.log(`${cond ? 'ok' : 'not ok'} - ${desc}`);
	if (!cond) {
		failed++;
		if (detail !== undefined)
			for (const line of String(detail).split('\n').slice(0, 15))
				console.log(`#   ${line}`);
	}
	return cond;
}

/* A "# ..." note: timings and figures, never asserted. */
export function note(msg) {
	console.log(`# ${msg}`);
}

export const failures = () => failed;

/* Folded lines as [frames, count]. */
export function readFolded(path) {
	const out = [];
	for (const line of readFileSync(path, 'utf8').split('\n')) {
		const m = /^(.*)\s+(\d+)$/.exec(line);
		if (m)
			out.push([m[1].split(';'), Number(m[2])]);
	}
	return out;
}
