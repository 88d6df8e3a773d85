#!/bin/bash
# Every interval plateau prints holds its own estimate, as a property over
# real multi-kind profiles: the agent on a threaded python3 program and on
# a C program (cpu, wall, alloc and lock samples side by side, weighted),
# plateau record's cpu+wall recording, and a Go heap profile.  For every
# sample type: each row of top (self and total, both sorts), the flame
# graph's tooltips, the viewer's tooltip data, diff --format json and
# check (table and --json).  doc/statistics.md has the definition.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?set BUILD to the build directory}"
LIB=$BUILD/libplateau.so
# The interpreter itself, not a version manager's shell wrapper around it
# (the agent would profile the wrapper's exec, and each start costs).
PY=$(python3 -c 'import sys; print(sys.executable)')
CHECK="$PY $TOP/tests/cli/intervals_check.py"
cc -O2 -fomit-frame-pointer -pthread -o "$TMP/plain" "$TOP/tests/agent/workload.c" -ldl ||
	{ echo "Bail out! cannot build the workload"; exit 1; }
ASAN_ENV=
if ldd "$LIB" | grep -q libasan; then
	ASAN_ENV="ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"
fi
cd "$TMP" || exit 1
unset PLATEAU_MODES PLATEAU_HZ PLATEAU_OUTPUT PLATEAU_SERVER PLATEAU_TAGS PLATEAU_APP

agent() { # OUT PROGRAM ARGS...: run under every agent mode at 999 Hz
	local out=$1
	shift
	env $ASAN_ENV LD_PRELOAD="$LIB" PLATEAU_MODES=cpu,wall,alloc,lock PLATEAU_HZ=999 \
		PLATEAU_ALLOC_RATE=65536 PLATEAU_LOCK_THRESHOLD=10us PLATEAU_OUTPUT="$out" "$@" >/dev/null
}
types() { # FILE: its sample types with samples, from top's error naming them
	$PLATEAU top --sample-type '?' "$1" 2>&1 | sed -n 's/.*(it has: \(.*\))$/\1/p' | tr -d ',' |
		tr ' ' '\n' | while read -r t; do
			[ -n "$t" ] && $PLATEAU top -n 1 --sample-type "$t" "$1" >/dev/null 2>&1 && echo "$t"
		done
}
holds() { # DESC KIND FILE...: every interval in the FILEs holds its estimate
	local desc=$1
	shift
	if $CHECK "$@" >"$TMP/holds.out" 2>&1; then ok "$desc ($(tail -1 "$TMP/holds.out"))"; else
		not_ok "$desc"
		head -15 "$TMP/holds.out" | sed 's/^/# /'
	fi
}

agent "$TMP/py.pb.gz" "$PY" "$TOP/tests/agent/threads.py" 1500
agent "$TMP/py2.pb.gz" "$PY" "$TOP/tests/agent/threads.py" 1000
agent "$TMP/lock.pb.gz" "$TMP/plain" lock 600
agent "$TMP/storm.pb.gz" "$TMP/plain" storm 800
$PLATEAU record -q -e cpu,wall -F 999 -o "$TMP/rec.pb.gz" -- "$PY" "$TOP/tests/agent/threads.py" 800 ||
	echo "# plateau record failed"
cp "$FIX/pprof/go_heap.pb.gz" "$TMP/go_heap.pb.gz"

for prof in py lock storm rec go_heap; do
	f=$TMP/$prof.pb.gz
	ts=$(types "$f" | tr '\n' ' ')
	check "$prof: the profile has several sample types with samples ($ts)" test "$(echo "$ts" | wc -w)" -ge 2
	# The python program's lock waits come and go with the scheduling
	# (and with them 20 checks): lock types are the lock program's to
	# check, so the count of checks is the same from run to run.
	[ "$prof" = py ] && ts=$(echo "$ts" | tr ' ' '\n' | grep -vxE 'contentions|delay' | tr '\n' ' ')
	for t in $ts; do
		for sort in self total; do
			$PLATEAU top -n 0 --sort "$sort" --sample-type "$t" "$f" >"$TMP/top.txt" 2>&1
			holds "$prof $t: top --sort $sort: every self and total share inside its interval" top "$TMP/top.txt"
		done
		$PLATEAU flamegraph --sample-type "$t" "$f" >"$TMP/fg.svg" 2>&1
		holds "$prof $t: every flame graph tooltip's share inside its interval" svg "$TMP/fg.svg"
		$PLATEAU flamegraph --format html --sample-type "$t" -o "$TMP/fg.html" "$f"
		holds "$prof $t: every viewer tooltip's share inside its interval" html "$TMP/fg.html"
		# top's header: "from [about] N samples (M effective)", or without
		# "(M effective)" when M = N ("about" when N comes from a period).
		eff=$(sed -n '1s/.* from \(about \)*\([0-9,.]*\) samples\( (\([0-9,]*\) effective)\)*;.*/\2 \4/p' "$TMP/top.txt" |
			awk '{ gsub(/,/, ""); print ($2 != "" ? $2 : sprintf("%.0f", $1)) }')
		view=$("$PY" -c 'import json, re, sys
d = json.loads(re.search(r"id=\"plateau-data\">(.*?)</script>", open(sys.argv[1]).read(), re.S).group(1))
print(round(d["effSamples"]) if "effSamples" in d else "none")' "$TMP/fg.html")
		# Both rounded to a whole sample (a half may round either way).
		check "$prof $t: the viewer's intervals rest on top's effective samples ($view vs ${eff:-none})" \
			awk -v a="${eff:-x}" -v b="$view" 'BEGIN { d = a - b; exit !(a b ~ /^[0-9]+$/ && d * d <= 1) }'
	done
done

# diff and check: two runs of the python program, every type they share,
# both ways (check lists only the functions whose share grew).
for t in $(types "$TMP/py.pb.gz" | grep -vxE 'contentions|delay'); do
	types "$TMP/py2.pb.gz" | grep -qx "$t" || continue
	$PLATEAU diff --format json --sample-type "$t" "$TMP/py.pb.gz" "$TMP/py2.pb.gz" >"$TMP/diff.json" 2>&1
	holds "py $t: diff --format json: both shares of every function inside their intervals" json-diff "$TMP/diff.json"
	# check lists only grown shares: nothing to look at when none changed.
	moved=$("$PY" -c 'import json, sys
print(sum(f["base_share"] != f["new_share"] for f in json.load(open(sys.argv[1]))["functions"]))' "$TMP/diff.json")
	if [ "${moved:-0}" -eq 0 ]; then
		echo "# py $t: no function's share changed between the runs; check lists none"
		continue
	fi
	for way in 1 2; do
		set -- "$TMP/py.pb.gz" "$TMP/py2.pb.gz"
		[ $way = 2 ] && set -- "$2" "$1"
		$PLATEAU check --min-share 0 --json --sample-type "$t" --baseline "$1" "$2" >"$TMP/check$way.json" 2>&1
		$PLATEAU check --min-share 0 --max-growth 0 --sample-type "$t" --baseline "$1" "$2" >"$TMP/check$way.txt" 2>&1
	done
	holds "py $t: check --json: both shares inside their intervals" json-check "$TMP/check1.json" "$TMP/check2.json"
	holds "py $t: check's table: both shares inside their intervals" check "$TMP/check1.txt" "$TMP/check2.txt"
done
done_testing
