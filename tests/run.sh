#!/bin/bash
# Run every suite (cmocka unit tests and CLI scripts, all speaking TAP)
# against each build directory given, print a summary per suite, and end
# with the plain line "N passed, N failed" totalled over everything.
# A skipped test is reported loudly and counted apart; it is not a pass.
set -u
cd "$(dirname "$0")/.." || exit 2
[ $# -gt 0 ] || set -- build

pass=0 fail=0 skip=0
failed_suites=()
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=99}
export CMOCKA_MESSAGE_OUTPUT=TAP
export LC_ALL=C

# The off-CPU tests read sched:sched_switch through tracefs, which a fresh
# machine may not have mounted; as root, mount it (as perf's users do).
if [ "$(id -u)" -eq 0 ] && [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		echo "WARNING: could not mount tracefs on /sys/kernel/tracing: tracepoint tests will skip" >&2
fi

# run_suite NAME COMMAND...: run it, count its TAP lines.
run_suite() {
	local name=$1 out rc p=0 f=0 s=0 planned=""
	shift
	out=$("$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*"# SKIP"* | "ok "*"# skip"*) s=$((s + 1)); echo "  SKIP $name: ${line#*# }" ;;
		"ok "*) p=$((p + 1)) ;;
		"not ok "*) f=$((f + 1)); echo "  FAIL $name: $line" ;;
		1..*) planned=${line#1..} ;;
		esac
	done <<<"$out"
	# A crash, a sanitizer report or a short plan is a failure too.
	if [ -n "$planned" ] && [ "$planned" -gt $((p + f + s)) ]; then
		f=$((f + planned - p - f - s))
		echo "  FAIL $name: planned $planned tests, ran $((p + s))"
	fi
	if [ $rc -ne 0 ] && [ $f -eq 0 ]; then
		f=1
		echo "  FAIL $name: exited with status $rc"
	fi
	if [ $f -ne 0 ]; then
		failed_suites+=("$name")
		printf '%s\n' "$out" | grep -v '^ok ' | tail -n 40 | sed 's/^/    | /'
	fi
	printf '%-34s %4d passed, %d failed, %d skipped\n' "$name" $p $f $s
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
}

# not_runnable NAME WHY: a suite that cannot run is a failure, never a skip.
not_runnable() {
	echo "  FAIL $1: $2"
	printf '%-34s %4d passed, %d failed, %d skipped\n' "$1" 0 1 0
	fail=$((fail + 1))
	failed_suites+=("$1")
}

for build in "$@"; do
	if [ ! -x "$build/plateau" ]; then
		echo "no $build/plateau: build it first (make)" >&2
		exit 2
	fi
	tag=$(basename "$build")
	units=0
	for t in "$build"/*_test; do
		[ -e "$t" ] || continue
		if [ ! -x "$t" ]; then
			not_runnable "$tag/unit/$(basename "$t")" "not executable"
			continue
		fi
		units=$((units + 1))
		run_suite "$tag/unit/$(basename "$t")" "$t"
	done
	# A build without unit tests (cmocka missing, a failed link) fails.
	[ $units -gt 0 ] || not_runnable "$tag/unit" "no unit tests (*_test) in $build"
	for t in tests/cli/*.sh; do
		[ "$(basename "$t")" = lib.sh ] && continue # sourced by the suites
		if [ ! -x "$t" ]; then
			not_runnable "$tag/cli/$(basename "$t" .sh)" "$t is not executable (chmod +x)"
			continue
		fi
		run_suite "$tag/cli/$(basename "$t" .sh)" env PLATEAU="$PWD/$build/plateau" BUILD="$PWD/$build" "$t"
	done
done

if [ $skip -ne 0 ]; then
	echo "WARNING: $skip tests skipped (see SKIP lines above)"
fi
if [ ${#failed_suites[@]} -ne 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
