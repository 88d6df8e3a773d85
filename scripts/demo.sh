#!/bin/bash
# make demo: profile the example program and draw where its time goes.
#
# Builds examples/demo.c, records it with `perf record -g` when perf
# events are usable here (the bundled recording tests/fixtures/perf/
# demo.perf.txt otherwise), and writes demo/flame.svg, demo/flame.html,
# demo/demo.pb.gz and the top table.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
plateau=$build/plateau
out=demo
mkdir -p "$out"

cc -O2 -g -fno-omit-frame-pointer -pthread -o "$out/demo" examples/demo.c

script=$out/demo.perf.txt
if command -v perf >/dev/null 2>&1 &&
	perf record -q -g -F 999 -o "$out/perf.data" -- "$out/demo" >/dev/null 2>"$out/perf.err"; then
	perf script -i "$out/perf.data" >"$script" 2>/dev/null
	echo "demo: recorded $out/demo with perf record -g"
else
	echo "demo: perf events are not usable here ($(head -1 "$out/perf.err" 2>/dev/null));" \
		"using the bundled recording tests/fixtures/perf/demo.perf.txt"
	cp tests/fixtures/perf/demo.perf.txt "$script"
fi

"$plateau" collapse "$script" >"$out/demo.folded"
"$plateau" flamegraph --title "plateau demo" -o "$out/flame.svg" "$script"
"$plateau" flamegraph --format html --title "plateau demo" -o "$out/flame.html" "$script"
"$plateau" convert -o "$out/demo.pb.gz" "$script"
"$plateau" top -n 10 "$script"
echo
echo "demo: wrote $out/flame.svg, $out/flame.html, $out/demo.folded and $out/demo.pb.gz"
