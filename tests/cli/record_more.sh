#!/bin/bash
# plateau record, continued (record.sh covers the basics): JIT code named
# from /tmp/perf-PID.map, a deleted binary, the vDSO, -a, --min-block,
# an unprivileged user (user nobody), the live status line on a terminal
# and lost-record reporting.  Fixtures from tests/fixtures/record/ are
# compiled here with cc into $TMP/bin.  No timing assertions.
. "$(dirname "$0")/lib.sh"
. "$FIX/record/lib.sh"
R=$FIX/record
BIN=$TMP/bin
mkdir -p "$BIN"

# Files made outside $TMP (JIT perf maps, the directory user nobody
# writes to) are removed on exit too.
EXTRA=()
trap 'rm -rf "$TMP" "${EXTRA[@]}"' EXIT

# one_line NAME PATTERN...: $TMP/NAME.err is a single line matching every ERE.
one_line() {
	local name=$1 good=1 p
	shift
	[ "$(wc -l <"$TMP/$name.err")" -eq 1 ] || good=0
	for p in "$@"; do
		grep -Eq -- "$p" "$TMP/$name.err" || good=0
	done
	if [ $good -eq 1 ]; then ok "$name: one line naming it"; else
		not_ok "$name: want one line matching$(printf ' /%s/' "$@"), got:"
		head -n 5 "$TMP/$name.err" | sed 's/^/# /'
	fi
}

# wait_file FILE: up to 5 s for FILE to appear.
wait_file() {
	for _ in $(seq 100); do [ -f "$1" ] && return 0; sleep 0.05; done
	return 1
}

# --- build the fixtures --------------------------------------------------
if ! "$PLATEAU" record --help >"$TMP/help.txt" 2>&1; then
	not_ok "plateau record --help works (the command exists)"
	done_testing
	exit 0
fi
CFLAGS_FP="-O2 -g -fno-omit-frame-pointer"
build() { # build NAME SOURCE FLAGS...
	local name=$1 src=$2
	shift 2
	cc -std=gnu11 "$@" -Wall -Wextra -Werror -pthread -I"$R" "$R/$src" -o "$BIN/$name" \
		2>"$TMP/build-$name.err"
}
built=1
for f in jit vdso naps burner syscalls; do
	# shellcheck disable=SC2086
	build $f $f.c $CFLAGS_FP || {
		built=0
		not_ok "build fixture $f"
		sed 's/^/# /' "$TMP/build-$f.err" | head -5
	}
done
if [ $built -eq 1 ]; then ok "fixtures build (jit, vdso, naps, burner, syscalls)"; else not_ok "fixtures build"; fi

# A first recording tells whether perf events are allowed at all.
if ! to 30 "$PLATEAU" record -q -o "$TMP/probe.folded" -- "$BIN/naps" 1 1 1 >/dev/null 2>"$TMP/probe.err" &&
	grep -Eqi 'paranoid|CAP_PERFMON|CAP_SYS_ADMIN|permission|not permitted' "$TMP/probe.err"; then
	reason="perf events refused (kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid), uid $(id -u)): $(head -n 1 "$TMP/probe.err")"
	echo "# SKIPPING every recording test: $reason" >&2
	skip "all plateau record_more tests: $reason"
	done_testing
	exit 0
fi

# --- 1. JIT code: anonymous executable memory named by /tmp/perf-PID.map ---
jit_pid() { sed -n 's/^pid \([0-9][0-9]*\)$/\1/p' "$TMP/$1.out"; }
if [ "$(uname -m)" != x86_64 ]; then
	echo "# SKIPPING the JIT tests: the fixture's machine code is x86-64, this is $(uname -m)" >&2
	skip "JIT tests: x86-64 machine code, this machine is $(uname -m)"
else
	rec jit_html -F 999 -q -o "$TMP/jit.html" -- "$BIN/jit" 200 1
	p=$(jit_pid jit_html)
	[ -n "$p" ] && EXTRA+=("/tmp/perf-$p.map")
	check "jit: the fixture wrote /tmp/perf-$p.map" test -n "$p" -a -s "/tmp/perf-$p.map"
	fcheck "jit: jit_spin_loop is named and flagged JIT (HTML nameFlags & 4)" \
		flagged "$TMP/jit.html" 4 jit_spin_loop

	rec jit -F 999 -o "$TMP/jit.folded" -- "$BIN/jit" 300 1
	p=$(jit_pid jit)
	[ -n "$p" ] && EXTRA+=("/tmp/perf-$p.map")
	fcheck "jit: stacks run main ... jit_spin_loop" chain "$TMP/jit.folded" 0.9 main jit_spin_loop
	fcheck "jit: every stack starts with the comm" rootof "$TMP/jit.folded" jit_spin_loop jit
	check_grep "jit: jit_spin_loop tops the summary's table" '[0-9.]+%.*  jit_spin_loop$' "$TMP/jit.err"
	check_grep "jit: under 5% of samples have unnamed frames" \
		', in [0-4](\.[0-9]+)?% of samples' "$TMP/jit.err"
	# The JIT code has no CFI and no frame of its own: its caller may be lost.
	fold chain "$TMP/jit.folded" 0 jit_caller jit_spin_loop | sed 's/^/# note: /'

	rec jit_nomap -F 999 -o "$TMP/jit_nomap.folded" -- "$BIN/jit" 300 0
	p=$(jit_pid jit_nomap)
	check "jit_nomap: no perf map was written" test -n "$p" -a ! -e "/tmp/perf-$p.map"
	check_grep "jit_nomap: the summary gives the reason, JIT code without /tmp/perf-PID.map" \
		'^plateau record: wrote .*unnamed frames: [0-9.]+% of frames \(.*JIT code without /tmp/perf-PID\.map [0-9.]+%.*\), in ([5-9][0-9]|100)(\.[0-9]+)?% of samples' \
		"$TMP/jit_nomap.err"
	fcheck "jit_nomap: the code shows as [anon]+0xOFFSET under main" \
		chain "$TMP/jit_nomap.folded" 0.9 main '\[anon\]\+0x[0-9a-f]+'
	fcheck "jit_nomap: no jit_spin_loop without the map" absent "$TMP/jit_nomap.folded" jit_spin_loop
	for m in "${EXTRA[@]}"; do rm -f "$m"; done
	check "jit: the perf maps are removed" test -z "$(ls "${EXTRA[@]}" 2>/dev/null)"
fi

# --- 2. a deleted binary: -p on a process whose file is gone --------------
# As root the file is still read through /proc/PID/map_files while the
# process lives (it is killed only after the recording), so it is named;
# user nobody may not open map_files: that case is in section 6.
cp "$BIN/burner" "$TMP/gone_bin"
rm -f "$TMP/gone.pid"
"$TMP/gone_bin" 10000 1 "$TMP/gone.pid" &
gpid=$!
wait_file "$TMP/gone.pid"
rm -f "$TMP/gone_bin"
rec deleted -p "$gpid" -d 0.5 -F 999 -o "$TMP/deleted.folded"
check "deleted: the target still runs after the recording" kill -0 "$gpid"
kill "$gpid" 2>/dev/null
wait "$gpid" 2>/dev/null
summary_ok deleted deleted.folded
fcheck "deleted: burner_spin is named (through /proc/PID/map_files), under the comm" \
	rootof "$TMP/deleted.folded" burner_spin gone_bin
fcheck "deleted: no frame is left as 'gone_bin (deleted)+0x...'" absent "$TMP/deleted.folded" '.*\(deleted\).*'
check "deleted: no 'file deleted' reason in the summary" awk '/^plateau record: wrote/ && /file deleted/ { exit 1 }' \
	"$TMP/deleted.err"

# --- 3. the vDSO: clock_gettime(CLOCK_MONOTONIC) in a loop ------------------
rec vdso -F 999 -o "$TMP/vdso.folded" -- "$BIN/vdso" 300
# This kernel's vDSO functions that no symbol names (a helper kept out of
# line; the vDSO exports only its entry points) may show by their start,
# under a named one; every other frame is named.
vdso_allow=()
while read -r f; do vdso_allow+=("--allow=$f"); done < <(python3 "$R/vdso_unnamed.py")
fcheck "vdso: frames below vdso_caller are named, not [vdso]+0x..." \
	below "$TMP/vdso.folded" vdso_caller "${vdso_allow[@]}" '\[vdso\].*' '.*\+0x[0-9a-f]+'
fcheck "vdso: the vDSO's function named below libc's clock_gettime" \
	chain "$TMP/vdso.folded" 0.5 vdso_caller clock_gettime '(__vdso_)?clock_gettime'
check "vdso: no status line when stderr is not a terminal" awk '/\r/ { exit 1 }' "$TMP/vdso.err"

# --- 4. -a: the whole system while a fixture burns --------------------------
rm -f "$TMP/all.pid"
"$BIN/burner" 2500 1 "$TMP/all.pid" &
bpid=$!
wait_file "$TMP/all.pid"
rec all -a -d 1 -o "$TMP/all.folded"
kill "$bpid" 2>/dev/null
wait "$bpid" 2>/dev/null
summary_ok all all.folded
fcheck "all: burner_spin appears, under the comm burner" rootof "$TMP/all.folded" burner_spin burner
echo "# roots: $(cut -d';' -f1 "$TMP/all.folded" | sort | uniq -c | sort -rn | head -6 |
	awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }') (stacks)"

# --- 5. --min-block: short blocks dropped ----------------------------------
# 100 ms: a 10 ms nap stays well under it even on a loaded machine
rec minblock -e offcpu --min-block 100ms -o "$TMP/minblock.folded" -- "$BIN/naps" 10 30 300
fcheck "minblock: long_nap (300 ms) kept" frames "$TMP/minblock.folded" long_nap
fcheck "minblock: short_naps (30 x 10 ms) dropped (at most 5%)" \
	at_most "$TMP/minblock.folded" short_naps 5
rec noblock -e offcpu -q -o "$TMP/noblock.folded" -- "$BIN/naps" 10 30 200
fcheck "noblock: without --min-block both appear" frames "$TMP/noblock.folded" short_naps long_nap
to 30 "$PLATEAU" record -e offcpu --min-block bogus -o "$TMP/x.folded" -- "$BIN/naps" 1 1 1 \
	>/dev/null 2>"$TMP/minblock_bogus.err"
rc=$?
check "--min-block bogus: exit 2 (got $rc)" test "$rc" -eq 2
one_line minblock_bogus 'error' 'min-block' 'bogus'
check "--min-block bogus: no output written" test ! -e "$TMP/x.folded"
# One duration grammar (doc/durations.md): minutes and fractions too.
for d in 1m 1.5ms; do
	to 30 "$PLATEAU" record -e offcpu -q --min-block "$d" -o "$TMP/x.folded" -- "$BIN/naps" 1 1 1 \
		>/dev/null 2>"$TMP/minblock_unit.err"
	rc=$?
	check "--min-block $d: accepted (exit $rc)" test "$rc" -eq 0
done
rm -f "$TMP/x.folded"

# --- 6. an unprivileged user ------------------------------------------------
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if command -v runuser >/dev/null 2>&1; then
	AS_NOBODY=(runuser -u nobody --)
elif command -v setpriv >/dev/null 2>&1; then
	AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody 2>/dev/null)" --clear-groups --)
else
	AS_NOBODY=()
fi
why=""
if [ "$(id -u)" -ne 0 ]; then
	why="not root: cannot become user nobody"
elif [ ${#AS_NOBODY[@]} -eq 0 ]; then
	why="neither runuser nor setpriv (util-linux) is installed"
elif ! id nobody >/dev/null 2>&1; then
	why="there is no user nobody"
elif [ "$paranoid" -lt 2 ]; then
	why="kernel.perf_event_paranoid is $paranoid (< 2): an unprivileged user is allowed kernel stacks and context switches, so the refusals under test do not happen"
elif [ "$paranoid" -gt 2 ]; then
	why="kernel.perf_event_paranoid is $paranoid (> 2): an unprivileged user may not use perf events at all"
elif ! "${AS_NOBODY[@]}" test -x "$PLATEAU"; then
	why="user nobody cannot run $PLATEAU (a parent directory is not searchable)"
fi
if [ -n "$why" ]; then
	echo "# SKIPPING the unprivileged tests: $why" >&2
	skip "unprivileged tests: $why"
else
	NOB=$(mktemp -d /tmp/plateau-nobody.XXXXXX)
	EXTRA+=("$NOB")
	chmod 0777 "$NOB"
	cp "$BIN/syscalls" "$BIN/naps" "$BIN/burner" "$NOB/"
	cp "$BIN/burner" "$NOB/gone_bin"
	chmod 0755 "$NOB/syscalls" "$NOB/naps" "$NOB/burner" "$NOB/gone_bin"
	# nobody NAME ARGS...: `plateau record ARGS` as user nobody, in $NOB; $rc.
	nobody() {
		local name=$1
		shift
		(cd "$NOB" && to 60 "${AS_NOBODY[@]}" "$PLATEAU" record "$@") \
			>"$TMP/$name.out" 2>"$TMP/$name.err"
		rc=$?
	}
	# nobody_start NAME ARGS...: start ARGS as user nobody in the background,
	# writing pid file $NOB/NAME.pid; its pid in $npid (empty on failure).
	nobody_start() {
		local name=$1
		shift
		(cd "$NOB" && exec "${AS_NOBODY[@]}" "$@" "$NOB/$name.pid") >/dev/null 2>&1 &
		wait_file "$NOB/$name.pid"
		npid=$(cat "$NOB/$name.pid" 2>/dev/null)
	}
	# Control, as root: the fixture does spend time in kernel frames.
	rec sys_root -F 999 -q -o "$TMP/sys_root.html" -- "$BIN/syscalls" 300
	fold names_with "$TMP/sys_root.html" 2 >"$TMP/kernel.names"
	check "sys_root: as root, kernel frames under syscall_caller ($(wc -l <"$TMP/kernel.names") names)" \
		test -s "$TMP/kernel.names"

	nobody nobody_cpu -F 999 -o "$NOB/cpu.folded" -- "$NOB/syscalls" 300
	check "nobody -e cpu: exit 0 (got $rc)" test "$rc" -eq 0
	check_grep "nobody -e cpu: the summary follows" '^plateau record: wrote .*cpu\.folded' "$TMP/nobody_cpu.err"
	check_grep "nobody -e cpu: a warning naming kernel.perf_event_paranoid and CAP_PERFMON" \
		'warning.*kernel\.perf_event_paranoid.*CAP_PERFMON' "$TMP/nobody_cpu.err"
	check "nobody -e cpu: the warning is one line" test "$(grep -c 'warning' "$TMP/nobody_cpu.err")" -eq 1
	grep warning "$TMP/nobody_cpu.err" | sed 's/^/# /'
	fcheck "nobody -e cpu: user frames recorded" chain "$NOB/cpu.folded" 0.5 main syscall_caller
	fcheck "nobody -e cpu: no kernel frames in the folded output (none of root's)" \
		absent_names "$NOB/cpu.folded" "$TMP/kernel.names"
	fcheck "nobody -e cpu: no unnamed kernel frames" absent "$NOB/cpu.folded" '\[kernel\.kallsyms\].*'

	nobody nobody_offcpu -e offcpu -o "$NOB/offcpu.folded" -- "$NOB/naps" 1 1 1
	check "nobody -e offcpu: exit 1 (got $rc)" test "$rc" -eq 1
	one_line nobody_offcpu 'error' 'context-switches' 'kernel\.perf_event_paranoid=1'
	nobody nobody_all -a -d 1 -o "$NOB/all.folded"
	check "nobody -a: exit 1 (got $rc)" test "$rc" -eq 1
	one_line nobody_all 'error' 'kernel\.perf_event_paranoid=0'

	# -p on its own busy process: -d ends the recording, the target runs on.
	# Target and recorder share CPU 0 (taskset): no CPU is left idle for
	# the recorder's idle-priority symbol loader, as on a busy machine.
	if ! command -v taskset >/dev/null 2>&1; then
		echo "# SKIPPING nobody -p busy: taskset (util-linux) is missing" >&2
		skip "nobody -p busy: taskset (util-linux) is missing"
	else
		nobody_start busy taskset -c 0 "$NOB/burner" 15000 1
		(cd "$NOB" && to 60 "${AS_NOBODY[@]}" taskset -c 0 "$PLATEAU" record -q -p "$npid" -d 0.5 \
			-o "$NOB/busy.folded") >"$TMP/nobody_busy.out" 2>"$TMP/nobody_busy.err"
		rc=$?
		check "nobody -p busy: exit 0 (got $rc)" test "$rc" -eq 0
		check "nobody -p busy: -d 0.5 ends the recording while the 15 s target still runs" kill -0 "$npid"
		kill "$npid" 2>/dev/null
		fcheck "nobody -p busy: burner_spin recorded" frames "$NOB/busy.folded" burner_spin
	fi

	# A deleted binary: nobody may not read /proc/PID/map_files, so the
	# frames stay unnamed, with the reason.  The fixture was built by cc:
	# there is no /usr/lib/debug file to find by build-id either.
	nobody_start gone "$NOB/gone_bin" 1500 1
	rm -f "$NOB/gone_bin"
	nobody nobody_deleted -p "$npid" -d 0.5 -F 999 -o "$NOB/deleted.folded"
	kill "$npid" 2>/dev/null
	check "nobody -p deleted: exit 0 (got $rc)" test "$rc" -eq 0
	summary_ok nobody_deleted deleted.folded
	check_grep "nobody -p deleted: the summary gives the reason, file deleted" \
		'^plateau record: wrote .*unnamed frames: [0-9.]+% of frames \(.*file deleted [0-9.]*[1-9][0-9.]*%.*\), in [1-9][0-9.]*% of samples' \
		"$TMP/nobody_deleted.err"
	fcheck "nobody -p deleted: frames are named 'gone_bin (deleted)+0xOFFSET'" \
		frames "$NOB/deleted.folded" 'gone_bin \(deleted\)\+0x[0-9a-f]+'
	fcheck "nobody -p deleted: every stack starts with the comm" roots "$NOB/deleted.folded" gone_bin
	off=$(fold hot_offset "$NOB/deleted.folded" 'gone_bin \(deleted\)\+(0x[0-9a-f]+)')
	check "nobody -p deleted: the hottest offset ($off) is burner_spin for addr2line -e burner" \
		test "$(addr2line -f -e "$BIN/burner" "$off" 2>&1 | head -n 1)" = burner_spin
	grep '^plateau record: .*do not reach' "$TMP/nobody_deleted.err" | sed 's/^/# note: /'
	wait
fi

# --- 7. the live status line on a terminal ------------------------------------
if ! command -v script >/dev/null 2>&1; then
	echo "# SKIPPING the status line tests: script(1) from util-linux (Debian: bsdutils) is missing" >&2
	skip "status line: script(1) missing (bsdutils)"
else
	cmd=$(printf '%q ' "$PLATEAU" record -d 1 -o "$TMP/tty.folded" -- "$BIN/naps" 20 100 100)
	to 30 script -qefc "$cmd" /dev/null >"$TMP/tty.out" 2>&1 </dev/null
	rc=$?
	check "tty: exit 0 under script(1) (got $rc)" test "$rc" -eq 0
	check_grep "tty: a status line: CR, elapsed, samples, lost" \
		$'\rplateau record: [0-9.]+s, [0-9]+ samples, [0-9]+ lost' "$TMP/tty.out"
	check_grep "tty: the summary is printed after it" 'plateau record: wrote .*tty\.folded' "$TMP/tty.out"
	echo "# $(tr '\r' '\n' <"$TMP/tty.out" | grep -c 'samples, .* lost') status updates"
	cmd=$(printf '%q ' "$PLATEAU" record -q -d 0.5 -o "$TMP/ttyq.folded" -- "$BIN/naps" 20 100 100)
	to 30 script -qefc "$cmd" /dev/null >"$TMP/ttyq.out" 2>&1 </dev/null
	check "tty: -q prints nothing, no status line either" test ! -s "$TMP/ttyq.out"
fi

# --- 8. lost records are reported, consistently ----------------------------------
# lost_ok NAME: the "the kernel dropped N records" line appears iff the
# summary's "N lost" is nonzero, with the same N.
lost_ok() {
	local n d
	n=$(sed -n 's/^plateau record: wrote .*samples[^,]*, \([0-9,]*\) lost,.*/\1/p' "$TMP/$1.err" | tr -d ,)
	d=$(sed -n 's/^plateau record: the kernel dropped \([0-9,]*\) records.*/\1/p' "$TMP/$1.err" | tr -d ,)
	if [ -z "$n" ]; then
		not_ok "$1: no 'N lost' in the summary"
	elif [ "$n" -gt 0 ] && [ "$d" = "$n" ]; then
		ok "$1: $n lost, and the 'kernel dropped $n records' line"
	elif [ "$n" -eq 0 ] && [ -z "$d" ]; then
		ok "$1: 0 lost, and no 'kernel dropped' line"
	else
		not_ok "$1: summary says $n lost, the dropped line says '${d:-(none)}'"
	fi
}
check_status "--mmap-pages 1 with 16 KiB stack copies is refused" 2 \
	"$PLATEAU" record --mmap-pages 1 -o "$TMP/lost1.folded" -- "$BIN/burner" 10 1
check_grep "--mmap-pages too small: one line naming it" 'mmap-pages 1 is too small' "$TMP/status.err"
rec lost -F 20000 --stack-size 1024 --mmap-pages 2 -o "$TMP/lost.folded" -- "$BIN/burner" 1000 2
lost_ok lost
# A loss that always happens: the target stops plateau record (its parent)
# while it burns, so nothing drains the 2-page ring, then lets it go on.
rec lost_stop -F 999 --stack-size 1024 --mmap-pages 2 -o "$TMP/lost_stop.folded" -- \
	sh -c 'kill -STOP $PPID; "$0" 500 1; kill -CONT $PPID; "$0" 300 1' "$BIN/burner"
lost_ok lost_stop
n=$(sed -n 's/^plateau record: wrote .*samples[^,]*, \([0-9,]*\) lost,.*/\1/p' "$TMP/lost_stop.err" | tr -d ,)
check "lost_stop: records were lost while plateau record was stopped (${n:-none})" test "${n:-0}" -gt 0
check_grep "lost_stop: the remedy is named (a larger ring)" \
	'^plateau record: the kernel dropped [0-9,]+ records.*--mmap-pages' "$TMP/lost_stop.err"
rec lost_fp -F 20000 -g fp --mmap-pages 1 -o "$TMP/lost_fp.folded" -- "$BIN/burner" 1000 2
lost_ok lost_fp
check_grep "lost_fp: samples were still recorded" '^plateau record: wrote .*: [1-9][0-9,]* samples' "$TMP/lost_fp.err"

echo "# record_more.sh took ${SECONDS} s"
done_testing
