#!/bin/bash
# plateau record end to end: fixture programs from tests/fixtures/record/
# are compiled here with cc/c++ into $TMP/bin and recorded for real (perf
# events), then the profiles are checked: CPU shares, callers above libc
# leaves, off-CPU and wall ratios, threads, fork+exec, -p, C++ names,
# inline frames, stripped binaries, output formats, SIGINT and bad usage.
# Tolerances are on shares only; there are no timing assertions.
. "$(dirname "$0")/lib.sh"
. "$FIX/record/lib.sh"
R=$FIX/record
BIN=$TMP/bin
mkdir -p "$BIN"

# --- preconditions: the command exists; perf events are allowed --------
if ! "$PLATEAU" record --help >"$TMP/help.txt" 2>&1; then
	not_ok "plateau record --help works (the command exists)"
	sed 's/^/# /' "$TMP/help.txt" | head -5
	done_testing
	exit 0
fi
ok "plateau record --help works"
for o in -F -e -g --stack-size -d --min-block -o --format -q -p -a; do
	check_grep "--help lists $o" "(^|[^-[:alnum:]])$o([^-[:alnum:]]|$)" "$TMP/help.txt"
done

# --- build the fixtures ------------------------------------------------
CFLAGS_FP="-O2 -g -fno-omit-frame-pointer"
CFLAGS_NOFP="-O2 -g -fomit-frame-pointer"
build() { # build NAME SOURCE FLAGS...
	local name=$1 src=$2
	shift 2
	case $src in *.cc) set -- c++ "$@" ;; *) set -- cc -std=gnu11 "$@" ;; esac
	"$@" -Wall -Wextra -Werror -pthread -I"$R" "$R/$src" -o "$BIN/$name" 2>"$TMP/build-$name.err"
}
built=1
for spec in "split_fp split.c $CFLAGS_FP" "split_nofp split.c $CFLAGS_NOFP" \
	"libc_leaf libc_leaf.c $CFLAGS_FP" "offcpu offcpu.c $CFLAGS_FP" "wall wall.c $CFLAGS_NOFP" \
	"threads4 threads4.c $CFLAGS_NOFP" "forkexec forkexec.c $CFLAGS_FP" "child child.c $CFLAGS_NOFP" \
	"quick quick.c $CFLAGS_FP" "attach attach.c $CFLAGS_NOFP" "forever forever.c $CFLAGS_FP" \
	"cxx cxx.cc $CFLAGS_NOFP" "inline inline.c -O2 -g" "stripped split.c -O2"; do
	# shellcheck disable=SC2086
	build $spec || {
		built=0
		not_ok "build fixture ${spec%% *}"
		sed 's/^/# /' "$TMP/build-${spec%% *}.err" | head -5
	}
done
strip "$BIN/stripped"
if [ $built -eq 1 ]; then ok "fixtures build (cc, c++, strip)"; else not_ok "fixtures build (cc, c++, strip)"; fi

# A first recording tells whether perf events are allowed at all.
if ! to 30 "$PLATEAU" record -q -o "$TMP/probe.folded" -- "$BIN/quick" 5 >/dev/null 2>"$TMP/probe.err" &&
	grep -Eqi 'paranoid|CAP_PERFMON|CAP_SYS_ADMIN|permission|not permitted' "$TMP/probe.err"; then
	reason="perf events refused (kernel.perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid), uid $(id -u)): $(head -n 1 "$TMP/probe.err")"
	echo "# SKIPPING every recording test: $reason" >&2
	skip "all plateau record tests: $reason"
	done_testing
	exit 0
fi

# --- CPU split: 600/300/100 ms in burn_six/burn_three/burn_one ---------
shares() { # shares NAME: the 60/30/10 split of $TMP/NAME.folded within 5 points
	fcheck "$1: shares 60/30/10 within 5 points" shares "$TMP/$1.folded" 5 85 \
		burn_six=60 burn_three=30 burn_one=10
}
rec split_fp -F 999 -o "$TMP/split_fp.folded" -- "$BIN/split_fp"
shares split_fp
fcheck "split_fp: every stack starts with the comm" roots "$TMP/split_fp.folded" split_fp
summary_ok split_fp split_fp.folded
check_grep "split_fp: the top-10 table follows the summary" '[0-9.]+%.*burn_six$' "$TMP/split_fp.err"
check "split_fp: under 5% of samples have unnamed frames" awk '
	/^plateau record: wrote/ && match($0, /, in [0-9.]+% of samples/) {
		v = substr($0, RSTART + 5, RLENGTH - 17); found = 1; if (v + 0 >= 5) { print; exit 1 } }
	END { exit !found }' "$TMP/split_fp.err"
rec split_nofp -F 999 -o "$TMP/split_nofp.folded" -- "$BIN/split_nofp"
shares split_nofp
rec split_fp_gfp -F 999 -g fp -o "$TMP/split_fp_gfp.folded" -- "$BIN/split_fp" 60
shares split_fp_gfp
# A ring 8x the default: the ASan-built recorder once drained too slowly
# and lost 381 of 602 stack copies in a burst (burn_three's share went to
# 0), which tests the ring, not the unwinder; the shares need no loss.
rec split_nofp_gdwarf -F 999 -g dwarf --mmap-pages 1024 -o "$TMP/split_nofp_gdwarf.folded" -- "$BIN/split_nofp" 60
check_grep "split_nofp_gdwarf: no record lost" '^plateau record: wrote .*, 0 lost,' "$TMP/split_nofp_gdwarf.err"
shares split_nofp_gdwarf

# --- leaves inside libc: callers stay above them ------------------------
rec libc_leaf -F 999 -q -o "$TMP/libc_leaf.folded" -- "$BIN/libc_leaf" 150
fcheck "libc_leaf: main;sort_caller;<qsort frames>;cmp_slow" chain "$TMP/libc_leaf.folded" 0.9 \
	main sort_caller '.*(sort|libc\.so).*' cmp_slow
fcheck "libc_leaf: main;copy_caller;<memcpy>" chain "$TMP/libc_leaf.folded" 0.9 \
	main copy_caller '.*(mem(cpy|move)|libc\.so).*'
check "-q: nothing on stderr" test ! -s "$TMP/libc_leaf.err"

# --- off-CPU: 300 ms nanosleep vs 100 ms blocked pipe read --------------
rec offcpu -e offcpu -q -o "$TMP/offcpu.folded" -- "$BIN/offcpu" 300 100
fcheck "offcpu: nap_long : wait_pipe = 3 : 1 within 15%" ratio "$TMP/offcpu.folded" nap_long wait_pipe 3 0.15
fcheck "offcpu: callers above the libc syscall wrappers" chain "$TMP/offcpu.folded" 0.9 main wait_pipe '(.*_)?read'

# --- wall: 200 ms on CPU, then 200 ms asleep, in one thread -------------
rec wall -e wall -F 999 -q -o "$TMP/wall.folded" -- "$BIN/wall" 200 200
fcheck "wall: wall_burn : wall_sleep = 1 : 1 within 15%" ratio "$TMP/wall.folded" wall_burn wall_sleep 1 0.15

# --- several -e: one profile with several sample types ------------------
rec multi -e cpu -e offcpu -q -o "$TMP/multi.pb.gz" -- "$BIN/offcpu" 100 50
to 60 go tool pprof -raw "$TMP/multi.pb.gz" >"$TMP/multi.raw" 2>&1
check_grep "multi: cpu/nanoseconds and offcpu/nanoseconds in one profile" \
	'cpu/nanoseconds.*offcpu/nanoseconds|offcpu/nanoseconds.*cpu/nanoseconds' "$TMP/multi.raw"

# --- threads, processes, short lives ------------------------------------
rec threads4 -F 999 -q -o "$TMP/threads4.folded" -- "$BIN/threads4" 80
fcheck "threads4: four threads, 25% each within 10 points" shares "$TMP/threads4.folded" 10 80 \
	thread_north=25 thread_south=25 thread_east=25 thread_west=25

rec forkexec -F 999 -q -o "$TMP/forkexec.folded" -- "$BIN/forkexec" 60 "$BIN/child" 100
fcheck "forkexec: parent, forked child and exec'd program all appear" \
	frames "$TMP/forkexec.folded" parent_work forked_work exec_work
fcheck "forkexec: exec_work is under the new comm" rootof "$TMP/forkexec.folded" exec_work child
fcheck "forkexec: parent_work is under the parent's comm" rootof "$TMP/forkexec.folded" parent_work forkexec

rec quick -F 999 -o "$TMP/quick.folded" -- "$BIN/quick" 20
check "quick: the profile is written" test -f "$TMP/quick.folded"
summary_ok quick quick.folded
if [ -s "$TMP/quick.folded" ]; then
	fcheck "quick: its samples name the program" roots "$TMP/quick.folded" quick
else
	ok "quick: no samples (allowed for a 20 ms process)"
fi

rec exitcode -o "$TMP/exitcode.folded" -- sh -c "'$BIN/quick' 10; exit 3"
check_grep "a failing command's status is reported" '(status|exit|code)[^0-9]*3([^0-9]|$)' "$TMP/exitcode.err"

# --- -p PID: threads started before attaching ---------------------------
rm -f "$TMP/attach.pid"
"$BIN/attach" "$TMP/attach.pid" 20 &
apid=$!
for _ in $(seq 100); do [ -f "$TMP/attach.pid" ] && break; sleep 0.05; done
rec attach -p "$apid" -d 1 -F 999 -q -o "$TMP/attach.folded"
kill "$apid" 2>/dev/null
wait "$apid" 2>/dev/null
fcheck "attach: every thread's function appears" frames "$TMP/attach.folded" attach_red attach_green attach_blue
fcheck "attach: stacks start with the comm" roots "$TMP/attach.folded" attach

# --- symbolization: C++, inline frames, stripped --------------------------
rec cxx -F 999 -q -o "$TMP/cxx.folded" -- "$BIN/cxx" 80
fcheck "cxx: demangled ns::Klass::method(int) and ns::Box<long>::crunch(int)" \
	frames "$TMP/cxx.folded" 'ns::Klass::method\(int\)' 'ns::Box<long>::crunch\(int\)'

rec inline -F 999 -q -o "$TMP/inline.folded" -- "$BIN/inline" 120
check_grep "inline: inl_caller;inl_outer;inl_hot (inline frames from DWARF)" \
	'(^|;)inl_caller;inl_outer(_\[i\])?;inl_hot(_\[i\])?( |;)' "$TMP/inline.folded"
"$PLATEAU" top -n 3 "$TMP/inline.folded" >"$TMP/inline.top" 2>&1
check_grep "inline: plateau top ranks inl_hot first by self" '^ *[0-9.,]+[a-zµ]* +([89][0-9]|100)\.[0-9]+% .* inl_hot(_\[i\])?$' "$TMP/inline.top"

rec stripped -F 999 -o "$TMP/stripped.folded" -- "$BIN/stripped" 30
check_grep "stripped: frames are named stripped+0xOFFSET" '(^|;)stripped\+0x[0-9a-f]+(;| )' "$TMP/stripped.folded"
check_grep "stripped: the summary reports the unnamed share, reason stripped" \
	'^plateau record: .*unnamed frames: [0-9.]+% of frames \(.*stripped [0-9.]*[1-9][0-9.]*%.*\), in ([5-9][0-9]|100)(\.[0-9]+)?% of samples' "$TMP/stripped.err"

# --- output format from the extension -------------------------------------
rec out_svg -q -F 499 -o "$TMP/out.svg" -- "$BIN/split_fp" 20
check "-o x.svg writes an SVG flame graph" python3 -c '
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1]); assert d.documentElement.tagName == "svg"
assert "burn_six" in open(sys.argv[1]).read()' "$TMP/out.svg"
rec out_html -q -F 499 -o "$TMP/out.html" -- "$BIN/split_fp" 20
check_grep "-o x.html writes HTML" '<html|<!DOCTYPE html' "$TMP/out.html"
check_grep "the HTML holds the frames" 'burn_six' "$TMP/out.html"
rec out_json -q -F 499 -o "$TMP/out.json" -- "$BIN/split_fp" 20
check "-o x.json writes speedscope JSON" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
assert any(f["name"] == "burn_six" for f in d["shared"]["frames"])
assert d["profiles"] and d["profiles"][0]["samples"]' "$TMP/out.json"
rec out_folded -q -F 499 -o "$TMP/out.folded" -- "$BIN/split_fp" 20
check "-o x.folded writes folded stacks" awk 'NF < 2 || $NF !~ /^[0-9.]+$/ { exit 1 } END { exit NR == 0 }' "$TMP/out.folded"
rec out_format -q -F 499 -o "$TMP/out.txt" --format folded -- "$BIN/split_fp" 20
check_grep "--format folded overrides the extension" '^split_fp;.*burn_six [0-9]+$' "$TMP/out.txt"
mkdir -p "$TMP/cwd"
(cd "$TMP/cwd" && to 60 "$PLATEAU" record -q -F 499 -- "$BIN/split_fp" 20) >/dev/null 2>"$TMP/out_default.err"
check "the default output is ./plateau.pb.gz" test -s "$TMP/cwd/plateau.pb.gz"
check "go tool pprof -top loads it" to 60 go tool pprof -top "$TMP/cwd/plateau.pb.gz"
cp "$TMP/check.out" "$TMP/pprof.top"
check_grep "go tool pprof shows the functions" 'burn_six' "$TMP/pprof.top"

# --- SIGINT stops the recording and still writes ---------------------------
rm -f "$TMP/forever.pid"
set -m # own process group, SIGINT not ignored: as when started from a terminal
"$PLATEAU" record -o "$TMP/sigint.folded" -- "$BIN/forever" "$TMP/forever.pid" 20 \
	>/dev/null 2>"$TMP/sigint.err" &
rpid=$!
set +m
for _ in $(seq 100); do [ -f "$TMP/forever.pid" ] && break; sleep 0.05; done
sleep 1
kill -INT "$rpid"
for _ in $(seq 100); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$rpid" 2>/dev/null; then
	kill -KILL "$rpid"
	not_ok "SIGINT: record still running 10 s after SIGINT"
else
	ok "SIGINT: record stops"
fi
wait "$rpid"
rc=$?
check "SIGINT: exit 0 (got $rc)" test "$rc" -eq 0
fcheck "SIGINT: the output is written" frames "$TMP/sigint.folded" forever_tick
summary_ok sigint sigint.folded
fpid=$(cat "$TMP/forever.pid" 2>/dev/null)
if [ -n "$fpid" ] && kill -0 "$fpid" 2>/dev/null; then
	echo "# note: the recorded command ($fpid) was still running after record exited; killing it"
	kill "$fpid"
fi

# --- bad usage: exit 1 or 2, one error line naming the problem --------------
bad() { # bad NAME PATTERN ARGS...
	local name=$1 pat=$2
	shift 2
	to 30 "$PLATEAU" record "$@" >"$TMP/bad.out" 2>"$TMP/bad.err"
	local r=$?
	if [ $r -eq 1 ] || [ $r -eq 2 ]; then ok "$name: exit $r"; else
		not_ok "$name: exit $r, want 1 or 2 (plateau record $*)"
	fi
	if head -n 1 "$TMP/bad.err" | grep -Eq -- "$pat" && [ "$(grep -c 'error' "$TMP/bad.err")" -eq 1 ]; then
		ok "$name: one error line naming it"
	else
		not_ok "$name: want one error line matching /$pat/, got:"
		head -n 5 "$TMP/bad.err" | sed 's/^/# /'
	fi
}
bad "-e bogus" "bogus" -e bogus -o "$TMP/x.folded" -- "$BIN/quick" 5
bad "-g bogus" "bogus" -g bogus -o "$TMP/x.folded" -- "$BIN/quick" 5
bad "-F 0" "-F|freq" -F 0 -o "$TMP/x.folded" -- "$BIN/quick" 5
sh -c 'exit 0' &
gone=$!
wait $gone
bad "-p of a nonexistent pid" "$gone" -p "$gone" -d 1 -o "$TMP/x.folded"
bad "a command that does not exist" "no-such-cmd" -o "$TMP/x.folded" -- "$TMP/no-such-cmd"
bad "-p with a command" "-p|command|CMD" -p $$ -o "$TMP/x.folded" -- "$BIN/quick" 5
bad "no target" "target|command" -o "$TMP/x.folded"

echo "# record.sh took ${SECONDS} s"
done_testing
