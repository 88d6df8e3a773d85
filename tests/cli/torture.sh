#!/usr/bin/env bash
# The torture suite: every attack in tests/torture/ against a real
# `plateau serve` on 127.0.0.1 (slowloris, trickled bodies, gzip bombs,
# poison pushes, extreme ranges, allocation failures, a full disk), each
# bounded in connections and time.  An attack prints "ok - what" /
# "not ok - what" lines (tests/torture/tortlib.py); this script numbers
# them into one TAP stream, and an attack that exits non-zero without a
# failed line, or prints no result at all, is a failure of its own.
. "$(dirname "$0")/lib.sh"

export PLATEAU BUILD="${BUILD:-$(dirname "$PLATEAU")}"
for t in "$TOP"/tests/torture/*.py; do
	name=$(basename "$t" .py)
	[ "$name" = tortlib ] && continue
	mkdir -p "$TMP/$name"
	t0=$(date +%s)
	TMP="$TMP/$name" PYTHONPATH="$TOP/tests/torture" timeout -k 5 300 python3 "$t" \
		>"$TMP/$name.out" 2>&1
	rc=$?
	results=0 failed=0
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok "$name: ${line#ok - }"; results=$((results + 1)) ;;
		"not ok - "*) not_ok "$name: ${line#not ok - }"; results=$((results + 1)); failed=1 ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$TMP/$name.out"
	[ $results -gt 0 ] || not_ok "$name: printed no result"
	[ $rc -eq 0 ] || [ $failed -eq 1 ] || not_ok "$name: exited with status $rc"
	echo "# $name took $(($(date +%s) - t0)) s"
done
done_testing
