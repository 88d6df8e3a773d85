#!/bin/bash
# make demo: profile the example program and draw where its time goes.
#
# Builds examples/demo.c and records it with `plateau record` (perf events,
# DWARF unwinding, symbolization: no perf binary involved).  When perf
# events are not usable here, it says why and falls back to the bundled
# recording tests/fixtures/perf/demo.perf.txt.  Writes demo/flame.svg,
# demo/flame.html, demo/demo.folded, demo/demo.pb.gz and the top table.
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
echo "demo: wrote $out/flame.svg, $out/flame.html, $out/demo.folded and $out/demo.pb.gz"
