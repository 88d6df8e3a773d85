#!/bin/bash
# make demo: profile the example program and draw where its time goes.
#
# Builds examples/demo.c and records it with `plateau record` (perf events,
# DWARF unwinding, symbolization: no perf binary involved).  When perf
# events are not usable here, it says why and falls back to the bundled
# recording tests/fixtures/perf/demo.perf.txt.  Writes demo/flame.svg,
# demo/flame.html, demo/demo.folded, demo/demo.pb.gz and the top table.
# Then the same program runs under the in-process agent (libplateau.so,
# no privileges): CPU and wall time in demo/agent.pb.gz, drawn as
# demo/agent-wall.svg.  Last, plateau serve starts on an embedded store
# (demo/store), the program runs under the agent pushing to it, a query
# draws demo/served.svg, and the server stays up for its web UI (the address
# is printed) and the printed commands.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
plateau=$build/plateau
out=demo
mkdir -p "$out"

cc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/demo" examples/demo.c

profile=$out/demo.pb.gz
if "$plateau" record -F 999 -q -o "$profile" -- "$out/demo" >/dev/null 2>"$out/record.err"; then
	echo "demo: recorded $out/demo with plateau record -F 999"
else
	echo "demo: perf events are not usable here ($(head -1 "$out/record.err"));" \
		"using the bundled recording tests/fixtures/perf/demo.perf.txt"
	"$plateau" convert -o "$profile" tests/fixtures/perf/demo.perf.txt
fi

"$plateau" convert -o "$out/demo.folded" "$profile"
"$plateau" flamegraph --title "plateau demo" -o "$out/flame.svg" "$profile"
"$plateau" flamegraph --format html --title "plateau demo" -o "$out/flame.html" "$profile"
"$plateau" top -n 10 "$profile"
echo
LD_PRELOAD=$build/libplateau.so PLATEAU_MODES=cpu,wall PLATEAU_OUTPUT=$out/agent.pb.gz "$out/demo" >/dev/null
"$plateau" flamegraph --sample-type wall --title "plateau demo: wall time from the in-process agent" \
	-o "$out/agent-wall.svg" "$out/agent.pb.gz"
echo "demo: the in-process agent (LD_PRELOAD=$build/libplateau.so) wrote $out/agent.pb.gz"
"$plateau" top -n 5 --sample-type cpu "$out/agent.pb.gz"
echo

# The profile store: plateau serve on an embedded store, the demo under the
# agent pushing to it every second, then a query by selector and window.
# The server stays up for the commands printed at the end.
if [ -f "$out/serve.pid" ] && kill -0 "$(cat "$out/serve.pid")" 2>/dev/null; then
	kill "$(cat "$out/serve.pid")"
	sleep 0.5
fi
listen=127.0.0.1:4040
if curl -s -o /dev/null "http://$listen/healthz" 2>/dev/null; then
	listen=127.0.0.1:0 # 4040 is taken: any free port
fi
"$plateau" serve --listen "$listen" --data "$out/store" </dev/null >/dev/null 2>"$out/serve.log" &
echo $! >"$out/serve.pid"
url=
for _ in $(seq 1 50); do
	url=$(sed -n 's/^plateau serve: listening on \(http:[^,]*\),.*/\1/p' "$out/serve.log")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { cat "$out/serve.log"; exit 1; }
LD_PRELOAD=$build/libplateau.so PLATEAU_MODES=cpu,wall PLATEAU_SERVER=$url PLATEAU_APP=demo \
	PLATEAU_TAGS=env=demo,version=v1 PLATEAU_UPLOAD_INTERVAL=1s "$out/demo" >/dev/null
"$plateau" query --server "$url" 'demo.cpu{env="demo"}' --from now-10m --format svg -o "$out/served.svg"
echo "demo: plateau serve ($url, store $out/store) took the agent's pushes;" \
	"the merged CPU profile of demo.cpu{env=\"demo\"} is $out/served.svg"
echo
echo "demo: wrote $out/flame.svg, $out/flame.html, $out/demo.folded, $out/demo.pb.gz," \
	"$out/agent.pb.gz, $out/agent-wall.svg and $out/served.svg"
echo
echo "plateau serve is still running (pid $(cat "$out/serve.pid")); open its web UI:"
echo "  $url/?query=demo.cpu&from=now-15m&until=now"
echo "  (drag on the timeline to pick a window, click a frame to zoom, 'sandwich' in the table for callers and callees;"
echo "   Comparison and Diff at the top put two windows side by side; doc/ui.md)"
echo "or try:"
echo "  $plateau query --server $url 'demo.cpu{env=\"demo\"}' --from now-1h | head"
echo "  $plateau query --server $url 'demo.wall' --from now-1h --format html -o wall.html"
echo "  curl -s '$url/api/v1/series'"
echo "  curl -s '$url/api/v1/labels/version/values'"
echo "  curl -s '$url/api/v1/timeline?query=demo.cpu&from=now-10m&step=10s'"
echo "  curl -s '$url/metrics' | grep ^plateau_"
echo "stop it with: kill $(cat "$out/serve.pid")"
