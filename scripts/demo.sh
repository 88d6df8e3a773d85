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
# demo/agent-wall.svg.
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
echo "demo: wrote $out/flame.svg, $out/flame.html, $out/demo.folded, $out/demo.pb.gz," \
	"$out/agent.pb.gz and $out/agent-wall.svg"
