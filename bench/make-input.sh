#!/bin/sh
# Make the benchmark input: `perf script` text (>= 100 MiB) of bench/burn.c.
#
#   usage: bench/make-input.sh [OUT]     (default /tmp/plateau-bench/perf.txt)
#
# Builds burn next to OUT, records it with `perf record -g -F 4999`, and
# writes the `perf script` text to OUT. If FLAMEGRAPH_DIR is set, also writes
# the folded form (stackcollapse-perf.pl) to OUT with .txt replaced by .folded.
# Idempotent: does nothing when OUT exists and is newer than burn.c (and the
# folded file, if wanted, is newer than OUT).
#
# Environment: BURN_SECONDS (first recording length, default 16),
#              MIN_BYTES (default 104857600), PERF_FREQ (default 4999).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SRC="$HERE/burn.c"
OUT=${1:-/tmp/plateau-bench/perf.txt}
DIR=$(dirname "$OUT")
FOLDED="${OUT%.txt}.folded"
SECS=${BURN_SECONDS:-16}
MIN_BYTES=${MIN_BYTES:-104857600}
FREQ=${PERF_FREQ:-4999}

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0))s"; }
size() { wc -c <"$1" | tr -d ' '; }
newer() { [ -n "$(find "$1" -prune -newer "$2" 2>/dev/null)" ]; } # $1 newer than $2

if [ -f "$OUT" ] && newer "$OUT" "$SRC"; then
	echo "make-input: $OUT is up to date ($(size "$OUT") bytes)"
else
	command -v perf >/dev/null || { echo "make-input: perf not found" >&2; exit 1; }
	${CC:-cc} -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -pthread \
		"$SRC" -o "$DIR/burn"
	tmp="$OUT.tmp.$$"
	trap 'rm -f "$tmp"' EXIT
	tries=0
	while :; do
		echo "make-input: recording burn for ${SECS}s at ${FREQ} Hz"
		(cd "$DIR" && perf record -q --no-buildid-cache -g -F "$FREQ" \
			-o "$DIR/perf.data" ./burn "$SECS" >/dev/null)
		perf script -i "$DIR/perf.data" >"$tmp" 2>/dev/null
		got=$(size "$tmp")
		echo "make-input: perf script wrote $got bytes ($(elapsed))"
		[ "$got" -ge "$MIN_BYTES" ] && break
		tries=$((tries + 1))
		[ $tries -lt 3 ] || { echo "make-input: output stays too small" >&2; exit 1; }
		# scale the recording up to reach MIN_BYTES, with 15% headroom
		SECS=$(awk -v s="$SECS" -v g="$got" -v m="$MIN_BYTES" 'BEGIN { printf "%d", s * m / g * 1.15 + 1 }')
	done
	mv "$tmp" "$OUT"
	trap - EXIT
	rm -f "$DIR/perf.data"
fi

if [ -n "${FLAMEGRAPH_DIR:-}" ]; then
	if [ -f "$FOLDED" ] && newer "$FOLDED" "$OUT"; then
		echo "make-input: $FOLDED is up to date"
	else
		perl "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" "$OUT" >"$FOLDED.tmp" 2>/dev/null
		mv "$FOLDED.tmp" "$FOLDED"
		echo "make-input: wrote $FOLDED ($(size "$FOLDED") bytes, $(wc -l <"$FOLDED" | tr -d ' ') stacks)"
	fi
fi
echo "make-input: done in $(elapsed)"
