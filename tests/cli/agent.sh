#!/bin/bash
# libplateau.so, the in-process agent, on real programs: CPU time that adds
# up, wall time with thread states, allocations and in-use memory, lock
# contention, labels, regions and slow requests from the SDK, bad
# configuration, signals and EINTR, fork, exec, dlopen, exceptions, thread
# churn, push to a server, and plateau record --agent (and its fallback).
. "$(dirname "$0")/lib.sh"
: "${BUILD:?set BUILD to the build directory}"
LIB=$BUILD/libplateau.so
W=$TMP/workload
AG=$TOP/tests/agent
# The SDK build goes through the pkg-config file the build generates.
export PKG_CONFIG_PATH=$BUILD/meson-uninstalled
# shellcheck disable=SC2046
cc -O2 -g -fomit-frame-pointer -pthread -DWITH_SDK -o "$W" "$AG/workload.c" \
	$(pkg-config --cflags --libs plateau) -ldl -Wl,-rpath,"$BUILD" ||
	{ echo "Bail out! cannot build the workload with pkg-config plateau"; exit 1; }
cc -O2 -fomit-frame-pointer -pthread -o "$TMP/plain" "$AG/workload.c" -ldl
c++ -O2 -g -o "$TMP/throw" "$AG/throw.cc"
cc -o "$TMP/noperf" "$AG/noperf.c"
# A sanitized agent (the ASan suite) loads its runtime after the program's
# libraries: tell the runtime that is fine.
AGENT_ASAN=
if ldd "$LIB" | grep -q libasan; then
	AGENT_ASAN=1
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
fi
# Every path below is absolute: run where a stray default output file
# (plateau-PID.pb.gz in the working directory) cannot land in the checkout.
cd "$TMP" || exit 1
unset PLATEAU_MODES PLATEAU_HZ PLATEAU_OUTPUT PLATEAU_SERVER PLATEAU_TAGS PLATEAU_APP PLATEAU_OUTPUT_OWNER

folded() { # FILE TYPE: the profile as folded stacks of one sample type
	$PLATEAU convert -o - --format folded --sample-type "$2" "$1"
}
total() { # FILE TYPE [REGEX]: sum of a type (over stacks matching REGEX)
	folded "$1" "$2" | awk -v re="${3:-.}" '$0 ~ re { s += $NF } END { printf "%.0f\n", s }'
}
within() { # DESC WANT GOT PCT: |GOT - WANT| <= PCT% of WANT
	if awk -v w="$2" -v g="$3" -v p="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d <= w * p / 100) }'; then
		ok "$1 ($3 vs $2)"
	else
		not_ok "$1 ($3 vs $2, more than $4% apart)"
	fi
}

# ---- cpu: the sum of weights is the threads' CPU time, at 1, 4 and 10 ms ----
for hz in 1000 250 100; do
	real=$(LD_PRELOAD=$LIB PLATEAU_HZ=$hz PLATEAU_OUTPUT=$TMP/cpu$hz.pb.gz "$TMP/plain" cpu 2 1200)
	within "cpu at $hz Hz adds up to the threads' CPU time" "$real" "$(total "$TMP/cpu$hz.pb.gz" cpu)" 5
done
a=$(total "$TMP/cpu1000.pb.gz" cpu 'cpu_thread;burn_a;spin_for')
b=$(total "$TMP/cpu1000.pb.gz" cpu 'cpu_thread;burn_b;spin_for')
within "burn_a gets 2/3 of the time and burn_b 1/3, through frame-pointer-less code" "$((2 * b))" "$a" 15
check "stacks reach the thread entry (clone3;start_thread)" grep -q '^clone3;start_thread;cpu_thread;burn_a' <(folded "$TMP/cpu1000.pb.gz" cpu)
check "go tool pprof reads the agent's profile" go tool pprof -top -sample_index=cpu "$TMP/cpu100.pb.gz"

# ---- bad configuration: one line, the agent stays off, the program runs ----
LD_PRELOAD=$LIB PLATEAU_HZ=abc PLATEAU_OUTPUT=$TMP/bad.pb.gz "$TMP/plain" cpu 1 50 >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
check "a bad PLATEAU_HZ: the program still runs and succeeds" test "$rc" -eq 0 -a -s "$TMP/bad.out"
check "... one line on stderr naming the variable" test "$(wc -l <"$TMP/bad.err")" -eq 1 -a -n "$(grep '^plateau: PLATEAU_HZ: "abc"' "$TMP/bad.err")"
check "... and no profile" test ! -e "$TMP/bad.pb.gz"
LD_PRELOAD=$LIB PLATEAU_MODES=cpu,gpu "$TMP/plain" cpu 1 20 >/dev/null 2>"$TMP/bad2.err"
check "a bad PLATEAU_MODES names the mode" grep -q 'unknown mode "gpu"' "$TMP/bad2.err"

# ---- wall: sleeping threads, thread states, no EINTR ----
burn=$(LD_PRELOAD=$LIB PLATEAU_MODES=wall PLATEAU_HZ=200 PLATEAU_OUTPUT=$TMP/wall.pb.gz "$TMP/plain" wall 600)
within "wall: the sleeping thread's 600 ms are charged to sleeper(), through libc's nanosleep" 600000000 \
	"$(total "$TMP/wall.pb.gz" wall 'start_thread;sleep_thread;sleeper;[^;]*nanosleep')" 10
within "wall: the burning thread's wall time too" "$burn" "$(total "$TMP/wall.pb.gz" wall 'main;burn_a')" 10
check "wall samples carry the thread state" sh -c "go tool pprof -raw '$TMP/wall.pb.gz' | grep -q 'thread_state:\[blocked\]'"
check "... running too" sh -c "go tool pprof -raw '$TMP/wall.pb.gz' | grep -q 'thread_state:\[running\]'"
check_status "nanosleep, poll, epoll_wait, select, usleep never see EINTR under wall at 1000 Hz" 0 \
	env LD_PRELOAD=$LIB PLATEAU_MODES=wall,cpu PLATEAU_HZ=1000 PLATEAU_OUTPUT=$TMP/eintr.pb.gz "$TMP/plain" eintr 1500
# cpu and wall samples share one samples/count type: each type's intervals
# and sample count are its own samples'.
LD_PRELOAD=$LIB PLATEAU_MODES=cpu,wall PLATEAU_HZ=200 PLATEAU_OUTPUT=$TMP/cw.pb.gz "$TMP/plain" wall 400 >/dev/null
$PLATEAU top -n 0 --sample-type cpu "$TMP/cw.pb.gz" >"$TMP/cw.top"
check "top: each cpu share lies inside its 95% interval (counts of cpu samples only)" \
	awk 'NR > 2 { gsub(/\[ */, " "); gsub(/- */, " "); gsub(/\]/, " "); gsub(/%/, "");
		if ($2 < $3 || $2 > $4 || $6 < $7 || $6 > $8) bad++ } END { exit !(NR > 3 && !bad) }' "$TMP/cw.top"
n_top=$(sed -n 's/.* from \([0-9,]*\) samples.*/\1/p' "$TMP/cw.top")
$PLATEAU flamegraph --sample-type cpu -o "$TMP/cw.svg" "$TMP/cw.pb.gz"
check "flamegraph: the cpu graph's sample count is the cpu samples' ($n_top)" grep -q ">$n_top samples;" "$TMP/cw.svg"

# Idle threads are looked at every 2, 4, then 8 rounds, and still charged every round's time.
slept=$(LD_PRELOAD=$LIB PLATEAU_MODES=wall PLATEAU_HZ=200 PLATEAU_OUTPUT=$TMP/idle.pb.gz "$TMP/plain" idle 50 1000)
within "wall: 50 idle threads are charged their time blocked in idler()" "$((slept * 50))" \
	"$(total "$TMP/idle.pb.gz" wall 'idle_thread;idler')" 10
reads=$(go tool pprof -raw "$TMP/idle.pb.gz" | sed -n 's/^Comment: plateau agent: wall_clock_reads=//p')
# Looking at every thread every round would be 51 x 200 reads in a second.
check "wall: the sampler reads idle threads' clocks less than every 4th round ($reads reads)" \
	test "${reads:-999999}" -lt $((51 * 200 / 4))

# Time goes to the stack the thread was in while it passed, whatever the
# backoff: THREADS threads alternate 300 ms in nanosleep (sleep_part) and
# 100 ms blocked in read (read_part), three times; each stack is held to
# the time the program measured around its calls.
cc -O2 -fomit-frame-pointer -pthread -o "$TMP/wallsplit" "$AG/wallsplit.c"
for hz in 19 99 1000; do
	for n in 1 100; do
		truth=$(LD_PRELOAD=$LIB PLATEAU_MODES=wall PLATEAU_HZ=$hz PLATEAU_OUTPUT=$TMP/split.pb.gz "$TMP/wallsplit" $n 3)
		want_s=$(echo "$truth" | sed -n 's/.*sleep_ns=\([0-9]*\).*/\1/p')
		want_r=$(echo "$truth" | sed -n 's/.*read_ns=\([0-9]*\).*/\1/p')
		within "wall at $hz Hz, $n thread(s): the nanosleep stack gets its own time" \
			"${want_s:-0}" "$(total "$TMP/split.pb.gz" wall 'worker_main;sleep_part;')" 10
		within "wall at $hz Hz, $n thread(s): the read stack gets its own time" \
			"${want_r:-0}" "$(total "$TMP/split.pb.gz" wall 'worker_main;read_part;')" 10
	done
done

# ---- alloc: Poisson-sampled bytes, unbiased; in-use from the live table ----
real=$(LD_PRELOAD=$LIB PLATEAU_MODES=alloc PLATEAU_OUTPUT=$TMP/alloc.pb.gz "$TMP/plain" alloc 512)
# 8192 blocks of 64 KiB at a 512 KiB mean: p = 0.118, sd of the estimate 3% of the total.
within "alloc_space estimates the bytes allocated at alloc_site (4 sd)" "$real" "$(total "$TMP/alloc.pb.gz" alloc_space alloc_site)" 12
within "alloc_objects estimates the number of blocks" 8192 "$(total "$TMP/alloc.pb.gz" alloc_objects alloc_site)" 12
within "inuse_space: the half never freed is in use at exit" "$((real / 2))" "$(total "$TMP/alloc.pb.gz" inuse_space alloc_site)" 17
check "allocation stacks name the caller of malloc" grep -q 'main;do_alloc;alloc_site\|main;alloc_site' <(folded "$TMP/alloc.pb.gz" alloc_space)
LD_PRELOAD=$LIB PLATEAU_MODES=alloc PLATEAU_ALLOC_RATE=1 PLATEAU_OUTPUT=$TMP/storm.pb.gz "$TMP/plain" storm 100
check "threads' allocations are all accounted: none counted as from a thread without a slot" \
	sh -c "go tool pprof -raw '$TMP/storm.pb.gz' | grep -qx 'Comment: plateau agent: dropped_no_thread_slot=0'"
LD_PRELOAD=$LIB PLATEAU_MODES=alloc PLATEAU_ALLOC_RATE=1 PLATEAU_OUTPUT=$TMP/new.pb.gz "$TMP/throw" 100 >/dev/null
check "C++ new is counted once (rate 1: 100 vectors + 100 exceptions' strings)" \
	test "$(total "$TMP/new.pb.gz" alloc_objects thrower)" -ge 200 -a "$(total "$TMP/new.pb.gz" alloc_objects thrower)" -le 400

# ---- lock: contended waits with the waiter's stack ----
waited=$(LD_PRELOAD=$LIB PLATEAU_MODES=lock PLATEAU_OUTPUT=$TMP/lock.pb.gz "$TMP/plain" lock 600)
check "lock: contentions are charged to lock_site, the caller of pthread_mutex_lock" \
	grep -q 'lock_thread;lock_site ' <(folded "$TMP/lock.pb.gz" contentions)
within "... with the delay the threads measured around their lock calls" "$waited" "$(total "$TMP/lock.pb.gz" delay lock_site)" 15

# ---- a real server: redis-server (Debian's, jemalloc) under every mode ----
# jemalloc starts its background threads with glibc's pthread_create (found
# with dlsym(RTLD_NEXT)), not the agent's: they get a slot at their first
# allocation instead of being counted as threads without one.
rport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$TMP/redis"
LD_PRELOAD=$LIB PLATEAU_MODES=cpu,wall,alloc,lock PLATEAU_OUTPUT=$TMP/redis.pb.gz redis-server --bind 127.0.0.1 \
	--port "$rport" --save '' --appendonly no --dir "$TMP/redis" >"$TMP/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
timeout 120 redis-benchmark -p "$rport" -q -n 2000 -t set,get,lpush,lpop >/dev/null 2>&1
timeout 30 redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1
wait $rpid
rc=$?
go tool pprof -raw "$TMP/redis.pb.gz" >"$TMP/redis.raw" 2>&1
check "redis-server under every mode runs, serves and exits 0 (exit $rc)" \
	sh -c "test $rc -eq 0 && grep -q '^Comment: plateau agent: samples=[1-9]' '$TMP/redis.raw'"
noslot=$(sed -n 's/^Comment: plateau agent: dropped_no_thread_slot=//p' "$TMP/redis.raw")
check "... and no event is counted as from a thread without a slot (jemalloc's threads; ${noslot:-none})" \
	test "${noslot:-x}" = 0

# ---- push: the interval's profile goes to the server's /ingest ----
python3 "$AG/receiver.py" --dir "$TMP/rx" --port-file "$TMP/rx.port" >/dev/null 2>&1 &
rx=$!
for _ in $(seq 50); do [ -s "$TMP/rx.port" ] && break; sleep 0.1; done
LD_PRELOAD=$LIB PLATEAU_SERVER=http://127.0.0.1:$(cat "$TMP/rx.port") PLATEAU_APP=shop \
	PLATEAU_TAGS=region=eu-1 PLATEAU_UPLOAD_INTERVAL=1s "$TMP/plain" cpu 1 1500 >/dev/null
check "push: the profiles arrive at /ingest with the app, tags and format" \
	grep -rqs 'name=shop.cpu%7Bregion%3Deu-1%7D.*format=pprof' "$TMP/rx"
kill $rx 2>/dev/null
wait $rx 2>/dev/null
# The loader's own list of what it loaded (LD_DEBUG=files): libcurl is absent
# from it, while libplateau.so is there (so the list is real, not empty).
LD_PRELOAD=$LIB PLATEAU_OUTPUT=$TMP/nocurl.pb.gz LD_DEBUG=files "$TMP/plain" cpu 1 10 >/dev/null 2>"$TMP/nocurl.ld"
check "push: the loader's list of loaded files names libplateau.so" grep -q 'file=.*libplateau\.so' "$TMP/nocurl.ld"
check "push: without PLATEAU_SERVER libcurl is never loaded" sh -c "! grep -q libcurl '$TMP/nocurl.ld'"

# ---- labels, regions, slow requests (the SDK, linked) ----
PLATEAU_OUTPUT=$TMP/labels.pb.gz "$W" labels 300 >"$TMP/labels.out" 2>/dev/null
check "region statistics through the SDK" grep -q '^calls=10 measured=10$' "$TMP/labels.out"
go tool pprof -raw "$TMP/labels.pb.gz" >"$TMP/labels.raw" 2>&1
check "PLATEAU_WITH_LABELS labels the samples of its block" grep -q 'endpoint:\[/checkout\]' "$TMP/labels.raw"
check "the slow request's samples are labelled latency=slow" grep -q 'latency:\[slow\]' "$TMP/labels.raw"
check "regions are exported with their percentiles" grep -q 'plateau region: handle_request calls=10 measured=10 p50_ns=' "$TMP/labels.raw"

(cd "$TMP" && mkdir late && cd late && "$W" late 400)
check "plateau_start after threads exist: they are found and sampled" \
	test "$(total "$(ls "$TMP"/late/plateau-*.pb.gz)" cpu late_thread)" -gt 600000000
PLATEAU_MODES=alloc PLATEAU_ALLOC_RATE=1 PLATEAU_OUTPUT=$TMP/card.pb.gz "$W" cardinality 300
go tool pprof -raw "$TMP/card.pb.gz" >"$TMP/card.raw" 2>&1
check "label values past the cap (256 per key) become _other" grep -q 'user:\[_other\]' "$TMP/card.raw"
check "... and are counted" grep -q 'label_overflow=[1-9]' "$TMP/card.raw"
check "... the first 256 keep their values" grep -q 'user:\[u255\]' "$TMP/card.raw"
PLATEAU_OUTPUT=$TMP/regions.pb.gz "$W" regions 500 >"$TMP/regions.out"
check "a region run by 4 threads at once, recursing 3 deep, counts every call" \
	grep -q '^calls=6000 measured=6000 ' "$TMP/regions.out"
check "... and the memory each call allocated on its own thread (>= 1000 bytes per level)" \
	awk -F'bytes=' '{ exit !($2 >= 6000 * 1000) }' "$TMP/regions.out"
PLATEAU_OUTPUT=$TMP/slow.pb.gz "$W" labels 100 2>"$TMP/slow.err" >/dev/null
check "a region slower than its threshold is logged as 'NAME took ...ms, allocated ...KB' (once)" \
	test "$(grep -cE '^handle_request took [0-9]+\.[0-9]{3}ms, allocated [0-9]+\.[0-9]KB$' "$TMP/slow.err")" -eq 1

# ---- signals: SIGTERM still writes; a program's own SIGPROF ----
LD_PRELOAD=$LIB PLATEAU_OUTPUT=$TMP/term.pb.gz "$TMP/plain" cpu 1 20000 &
pid=$!
# Until it has burnt 0.7 s of CPU (utime + stime, in clock ticks), not a
# fixed sleep: on a loaded machine a second of wall time is less CPU.
hz=$(getconf CLK_TCK)
for _ in $(seq 600); do
	t=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || break
	[ "${t:-0}" -ge $((hz * 7 / 10)) ] && break
	sleep 0.05
done
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM: the program dies of it (status 143)" test "$rc" -eq 143
check "... after writing the profile" test "$(total "$TMP/term.pb.gz" cpu)" -gt 500000000
LD_PRELOAD=$LIB PLATEAU_OUTPUT=$TMP/sigprof.pb.gz "$TMP/plain" sigprof 600 >"$TMP/sigprof.out" 2>"$TMP/sigprof.err"
check "a program's own SIGPROF handler and ITIMER_PROF keep working" test "$(cat "$TMP/sigprof.out")" -gt 20
check "... the agent says it moved to another signal" grep -q 'sampling moves to signal' "$TMP/sigprof.err"
check "... and keeps sampling CPU" test "$(total "$TMP/sigprof.pb.gz" cpu burn_a)" -gt 300000000

# ---- processes: fork and exec get their own files ----
(cd "$TMP" && LD_PRELOAD=$LIB PLATEAU_OUTPUT=fork.pb.gz "$TMP/plain" fork 3)
check "fork: the parent writes the name given" test -s "$TMP/fork.pb.gz"
check "... each child its own name with its pid" test "$(ls "$TMP"/fork.*.pb.gz 2>/dev/null | wc -l)" -eq 3
(cd "$TMP" && LD_PRELOAD=$LIB PLATEAU_OUTPUT=nofork.pb.gz PLATEAU_FORK=off "$TMP/plain" fork 3)
check "PLATEAU_FORK=off: the parent profiles" test -s "$TMP/nofork.pb.gz"
check "... its children do not" test "$(ls "$TMP"/nofork.*.pb.gz 2>/dev/null | wc -l)" -eq 0
(cd "$TMP" && LD_PRELOAD=$LIB PLATEAU_OUTPUT=exec.pb.gz sh -c "'$TMP/plain' cpu 1 100 >/dev/null")
check "exec: a child program inherits the agent and writes its own file" test "$(ls "$TMP"/exec.*.pb.gz 2>/dev/null | wc -l)" -ge 1

# ---- stress, every mode on at a high rate ----
ALL="env LD_PRELOAD=$LIB PLATEAU_MODES=cpu,wall,alloc,lock PLATEAU_HZ=1000 PLATEAU_ALLOC_RATE=4096 PLATEAU_LOCK_THRESHOLD=0ns PLATEAU_OUTPUT=$TMP/stress-%p.pb.gz"
check_status "stress: a dlopen/dlclose loop" 0 $ALL "$TMP/plain" dlopen 400 libm.so.6
check_status "stress: C++ throw/catch in a loop" 0 $ALL "$TMP/throw" 20000
check_status "stress: thread churn (4000 short threads)" 0 $ALL "$TMP/plain" churn 4000
check_status "stress: fork in a loop" 0 timeout 300 $ALL "$TMP/plain" fork 100
check_status "stress: an allocation storm across threads" 0 $ALL "$TMP/plain" storm 1500
check_status "stress: lock contention" 0 $ALL "$TMP/plain" lock 500
check_status "stress: EINTR-sensitive calls" 0 $ALL "$TMP/plain" eintr 600

# ---- the same stress on ASan and TSan builds of the programs ----
cc -O1 -g -fsanitize=address -pthread -o "$TMP/asan" "$AG/workload.c" -ldl
cc -O1 -g -fsanitize=thread -pthread -o "$TMP/tsan" "$AG/workload.c" -ldl
# The agent is not built with TSan: its own synchronisation is invisible to
# the program's TSan runtime, so reports from inside it are suppressed.
# TSan also forbids threads in the child of a multi-threaded fork unless told,
# and the agent turns lock mode off itself (TSan interposes the lock calls).
# (An agent built with ASan, the ASan suite's, cannot load into a TSan
# program: two sanitizer runtimes.  The plain suite covers TSan programs.)
printf 'called_from_lib:libplateau.so\n' >"$TMP/tsan.supp"
sans="asan tsan"
[ -n "$AGENT_ASAN" ] && sans=asan
# GCC 12's ASan allocator is not fork-safe while another thread allocates
# (a child can inherit one of its locks held), so the agent's threads
# allocate only under locks fork takes, and its thread starts (where ASan
# allocates) are over before it returns: the fork loop runs.  A hang fails
# the check (timeout) rather than the suite.
for san in $sans; do
	for w in "storm 800" "lock 300" "churn 800" "fork 20" "eintr 400" "dlopen 100 libm.so.6"; do
		# shellcheck disable=SC2086
		check_status "stress under $san: $w" 0 timeout 300 env ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 \
			TSAN_OPTIONS="suppressions=$TMP/tsan.supp:die_after_fork=0" $ALL "$TMP/$san" $w
	done
done
if [ -z "$AGENT_ASAN" ]; then
	env TSAN_OPTIONS="suppressions=$TMP/tsan.supp" $ALL "$TMP/tsan" lock 100 >/dev/null 2>"$TMP/tsan-lock.err"
	check "under TSan the agent says lock mode is off" grep -q 'ThreadSanitizer: lock mode is off' "$TMP/tsan-lock.err"
fi

# ---- plateau record --agent, and the fallback when perf events are refused ----
check "record --agent writes a folded profile" $PLATEAU record -q --agent -o "$TMP/rec.folded" -- "$TMP/plain" cpu 1 300
check "... with the workload's stacks" grep -q 'burn_a' "$TMP/rec.folded"
"$TMP/noperf" $PLATEAU record -o "$TMP/fallback.folded" -- "$TMP/plain" cpu 1 300 >/dev/null 2>"$TMP/fallback.err"
check "perf events refused (seccomp): record falls back to the agent" grep -q 'recording with the in-process agent instead' "$TMP/fallback.err"
check "... and still writes the profile" grep -q 'burn_a' "$TMP/fallback.folded"
check_status "record --agent refuses -e offcpu" 2 $PLATEAU record --agent -e offcpu -- true
check_status "record --agent refuses -p" 2 $PLATEAU record --agent -p 1
PLATEAU_AGENT_LIB=$TMP/nowhere.so $PLATEAU record --agent -o "$TMP/x.folded" -- true 2>"$TMP/nolib.err"
rc=$?
check "record --agent without the library: exit 1 and one line naming it" \
	test "$rc" -eq 1 -a "$(wc -l <"$TMP/nolib.err")" -eq 1 -a -n "$(grep 'cannot find libplateau.so' "$TMP/nolib.err")"

done_testing
