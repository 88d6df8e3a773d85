#!/bin/bash
# make bench: plateau against FlameGraph's Perl tools (and inferno when
# present) on a real >= 100 MB `perf record -g` recording, side by side;
# then the in-process agent against the unprofiled program, gperftools and
# heaptrack (bench/agent-bench.py, which needs no FlameGraph).
#
#   FLAMEGRAPH_DIR  checkout of https://github.com/brendangregg/FlameGraph (required
#                   for all but the agent benchmark; without it that one still runs,
#                   then the script exits 2)
#   INFERNO_DIR     directory with inferno-collapse-perf / inferno-flamegraph (optional)
#   BENCH_DIR       where inputs go (default /tmp/plateau-bench)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
fg_missing=
if [ -z "${FLAMEGRAPH_DIR:-}" ] || [ ! -f "$FLAMEGRAPH_DIR/flamegraph.pl" ]; then
	echo "bench: set FLAMEGRAPH_DIR to a checkout of https://github.com/brendangregg/FlameGraph" >&2
	echo "bench: running only the agent benchmark" >&2
	fg_missing=1
fi
if [ -z "$fg_missing" ]; then
	export FLAMEGRAPH_DIR
	dir=${BENCH_DIR:-/tmp/plateau-bench}
	bench/make-input.sh "$dir/perf.txt"
	python3 bench/model-memory.py "$build/plateau"
	echo
	python3 bench/compare.py "$build/plateau" "$dir/perf.txt" "$dir/perf.folded"
	echo
	BENCH_DIR="$dir/record" python3 bench/record-bench.py "$build"
	echo
fi
python3 bench/agent-bench.py "$build"
[ -z "$fg_missing" ] || exit 2
