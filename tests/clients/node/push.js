// The real Pyroscope Node.js SDK pushing to plateau serve (tests/cli/clients.sh).
// Usage: node push.js SERVER_URL APP PUSHES
// Burns CPU in burnCpuForPlateau() and allocates in allocForPlateau() while
// the SDK's wall (with CPU time) and heap profilers push every second,
// with tag keys that have dots, as the SDK's own tags have.  Prints each
// push ("push N: STATUS POST URL") and exits once the wall profiler has
// pushed PUSHES times and no push is in flight.  It does not call
// Pyroscope.stop(): @pyroscope/nodejs 0.6.4 throws "Wall profiler is not
// started" when stop() lands between a flush timer and the round it
// queues (a busy machine makes that likely).
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const [server, app, pushesArg] = process.argv.slice(2);
const pushes = Number(pushesArg || 3);
const FLUSH_MS = 1000;

let kept = [];

function burnCpuForPlateau(ms) {
	const end = Date.now() + ms;
	let x = 0;
	while (Date.now() < end)
		for (let i = 0; i < 10000; i++)
			x = (x * 1103515245 + 12345 + i) % 2147483648;
	return x;
}

function allocForPlateau(n) {
	for (let i = 0; i < n; i++)
		kept.push(new Array(64).fill(i));
	if (kept.length > 200000)
		kept = [];
}

// Watch the SDK's requests (it posts with the global fetch).
let wallPushes = 0, inflight = 0, n = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, opts) => {
	inflight++;
	try {
		const res = await realFetch(url, opts);
		const u = new URL(url);

		console.log(`push ${++n}: ${res.status} ${opts.method} ${u.pathname}${u.search}`);
		if (u.searchParams.has('sampleRate'))
			wallPushes++;
		return res;
	} finally {
		inflight--;
	}
};

Pyroscope.init({
	serverAddress: server,
	appName: app,
	flushIntervalMs: FLUSH_MS,
	tags: { region: 'eu-west-1', 'deployment.environment': 'test' },
	wall: { collectCpuTime: true },
	heap: { samplingIntervalBytes: 64 * 1024 },
});
Pyroscope.start();

function work() {
	burnCpuForPlateau(40);
	allocForPlateau(200);
	if (wallPushes >= pushes && inflight === 0)
		process.exit(0);
	setImmediate(work);
}
work();
