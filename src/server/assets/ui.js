/* SPDX-License-Identifier: MIT */
/*
 * plateau serve's web UI (doc/ui.md): its URL is its state, with
 * Pyroscope's parameter names (/?query=&from=&until=).  It fetches the
 * HTML viewer's JSON (/api/v1/query?format=viewer) and draws it with the
 * viewer the static pages use (PlateauViewer, viewer.js).
 */
(function () {
	'use strict';

	const html = document.documentElement;
	const q = new URLSearchParams(location.search);

	function fail(msg) {
		const e = document.getElementById('error');
		e.textContent = msg;
		e.hidden = false;
		html.dataset.state = 'error';
	}

	async function load() {
		const query = q.get('query');
		if (!query) {
			fail('no query: open /?query=APP.TYPE{labels}&from=now-1h&until=now');
			return;
		}
		const u = new URLSearchParams({query: query, from: q.get('from') || 'now-1h',
			until: q.get('until') || 'now', format: 'viewer', maxNodes: '0'});
		html.dataset.state = 'loading';
		const r = await fetch('/api/v1/query?' + u, {credentials: 'same-origin'});
		const body = await r.text();
		if (!r.ok) {
			let msg = body;
			try { msg = JSON.parse(body).error; } catch (e) { /* not JSON: as is */ }
			fail(`${r.status}: ${msg}`);
			return;
		}
		const data = JSON.parse(body);
		if (!window.PlateauViewer) {
			fail('the viewer is missing from this page');
			return;
		}
		window.PlateauViewer.mount(document.getElementById('app'), data, {
			onReady: () => { html.dataset.state = 'ready'; },
		});
	}

	load().catch((e) => fail(String(e)));
})();
