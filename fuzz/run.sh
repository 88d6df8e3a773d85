#!/bin/bash
# Run every fuzz target for SECONDS each, starting from its seed corpus
# (copied into a scratch corpus so seeds stay small), and print the
# executions and any crash found.
set -u
build=${1:-build-fuzz}
seconds=${2:-60}
cd "$(dirname "$0")/.." || exit 2
status=0
for t in "$build"/fuzz-*; do
	[ -x "$t" ] || continue
	name=${t##*/fuzz-}
	work=fuzz/corpus-$name
	mkdir -p "$work"
	cp -n fuzz/corpus/"$name"/* "$work"/ 2>/dev/null
	log=$(mktemp)
	"$t" -max_total_time="$seconds" -max_len=1048576 -rss_limit_mb=4096 -timeout=20 \
		-artifact_prefix="fuzz/crash-$name-" "$work" >"$log" 2>&1
	rc=$?
	execs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$log" | grep -Eo '[0-9]+$')
	[ -n "$execs" ] || execs=$(grep -Eo '#[0-9]+' "$log" | tail -1 | tr -d '#')
	echo "fuzz-$name: ${execs:-?} executions in ${seconds}s, exit $rc"
	if [ $rc -ne 0 ]; then
		status=1
		grep -E 'ERROR|SUMMARY|crash-' "$log" | head -5
	fi
	rm -f "$log"
done
exit $status
