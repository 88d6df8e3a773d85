#!/bin/bash
# -v/--verbose, --debug=MODULES and PLATEAU_DEBUG on every command (util/log.h):
# debug lines go to stderr, prefixed "plateau: debug: MODULE: ", and
# nothing changes on stdout or in the files written; a module list selects
# modules, a level (-vv, MOD:2) adds detail; an unknown module is one
# usage line.
. "$(dirname "$0")/lib.sh"
F=$FIX/folded

# same_with_v DESC ARGS...: plateau ARGS and plateau -v ARGS (the option
# after the command) print the same stdout and write the same -o file; the
# -v run has debug lines on stderr and nothing else, the plain run a
# quiet stderr.
same_with_v() {
	local desc=$1 cmd=$2 a=$TMP/plain b=$TMP/verbose
	shift 2
	rm -f "$a".* "$b".*
	"$PLATEAU" "$cmd" "${@//@OUT@/$a.file}" >"$a.out" 2>"$a.err"
	"$PLATEAU" "$cmd" -v "${@//@OUT@/$b.file}" >"$b.out" 2>"$b.err"
	if cmp -s "$a.out" "$b.out" && { [ ! -e "$a.file" ] || cmp -s "$a.file" "$b.file"; }; then
		ok "$desc: stdout and output file byte-identical with -v"
	else
		not_ok "$desc: stdout or output file differs with -v"
	fi
	if [ ! -s "$a.err" ] && grep -q '^plateau: debug: format: ' "$b.err" &&
		! grep -qv '^plateau: debug: [a-z]*: ' "$b.err"; then
		ok "$desc: -v adds format debug lines on stderr, nothing else"
	else
		not_ok "$desc: stderr without -v / with -v is not as expected"
		sed 's/^/# /' "$a.err" "$b.err" | head -10
	fi
}

same_with_v "top" top "$F/base.folded"
same_with_v "collapse" collapse "$FIX/perf/system_wide.perf.txt"
same_with_v "flamegraph" flamegraph -o @OUT@ "$F/base.folded"
same_with_v "convert" convert --format pprof -o @OUT@ "$F/base.folded"
same_with_v "diff" diff "$F/base.folded" "$F/new.folded"
same_with_v "check" check --baseline "$F/base.folded" "$F/base.folded"

# What the format module says: the file, how it was read, what it became.
"$PLATEAU" convert -v --format pprof -o "$TMP/p.pb.gz" "$F/base.folded" 2>"$TMP/conv.err"
check_grep "format: the input named, with its size" \
	"^plateau: debug: format: $F/base.folded: opened, [0-9]+ bytes" "$TMP/conv.err"
check_grep "format: the detected format" \
	"^plateau: debug: format: $F/base.folded: detected folded$" "$TMP/conv.err"
check_grep "format: what was read" "read as folded: 6 samples" "$TMP/conv.err"
check_grep "format: what is written" "^plateau: debug: format: writing pprof" "$TMP/conv.err"
"$PLATEAU" top --verbose "$TMP/p.pb.gz" >/dev/null 2>"$TMP/gz.err"
check_grep "--verbose is -v; a gzipped input says it was inflated" \
	"format: $TMP/p.pb.gz: gzip, [0-9]+ bytes inflated to [0-9]+" "$TMP/gz.err"

# Module selection: the modules named, and only those.
"$PLATEAU" top --debug=store "$F/base.folded" >/dev/null 2>"$TMP/sel.err"
check "--debug=store: no format lines from a command that opens no store" test ! -s "$TMP/sel.err"
"$PLATEAU" top --debug=symbol,format "$F/base.folded" >/dev/null 2>"$TMP/sel2.err"
check_grep "--debug=symbol,format: format lines" "^plateau: debug: format: " "$TMP/sel2.err"
"$PLATEAU" top --debug all "$F/base.folded" >/dev/null 2>"$TMP/sel3.err"
check_grep "--debug all: every module" "^plateau: debug: format: " "$TMP/sel3.err"
PLATEAU_DEBUG=format "$PLATEAU" top "$F/base.folded" >/dev/null 2>"$TMP/env.err"
check_grep "PLATEAU_DEBUG=format without -v: format lines" "^plateau: debug: format: " "$TMP/env.err"
PLATEAU_DEBUG=format "$PLATEAU" top --debug=store "$F/base.folded" >/dev/null 2>"$TMP/env2.err"
check "--debug wins over PLATEAU_DEBUG" test ! -s "$TMP/env2.err"
PLATEAU_DEBUG= "$PLATEAU" top "$F/base.folded" >/dev/null 2>"$TMP/env3.err"
check "an empty PLATEAU_DEBUG is off" test ! -s "$TMP/env3.err"

# Unknown modules and bad levels: one usage line naming it and the modules, exit 2.
check_one_line() { # DESC WANT_LINE ARGS...
	local desc=$1 want=$2
	shift 2
	"$@" >"$TMP/bad.out" 2>"$TMP/bad.err"
	local rc=$?
	printf '%s\n' "$want" >"$TMP/bad.want"
	if [ $rc -eq 2 ] && cmp -s "$TMP/bad.want" "$TMP/bad.err" && [ ! -s "$TMP/bad.out" ]; then
		ok "$desc"
	else
		not_ok "$desc (exit $rc)"
		diff -u "$TMP/bad.want" "$TMP/bad.err" | sed 's/^/# /' | head -8
	fi
}
MODS="modules: all, format, symbol, unwind, perf, record, store, server, client; MOD:LEVEL sets a level"
check_one_line "--debug=symbl: one line, exit 2" \
	"plateau top: unknown debug module 'symbl' in --debug ($MODS). See 'plateau top --help'." \
	"$PLATEAU" top --debug=symbol,symbl "$F/base.folded"
check_one_line "--debug=format:x: a bad level is named" \
	"plateau convert: unknown debug module 'format:x' in --debug ($MODS). See 'plateau convert --help'." \
	"$PLATEAU" convert --debug=format:x -o "$TMP/x.pb" "$F/base.folded"
check_one_line "PLATEAU_DEBUG=nope: one line naming the variable, exit 2" \
	"plateau diff: unknown debug module 'nope' in PLATEAU_DEBUG ($MODS). See 'plateau diff --help'." \
	env PLATEAU_DEBUG=nope "$PLATEAU" diff "$F/base.folded" "$F/new.folded"
"$PLATEAU" top --verbos "$F/base.folded" >/dev/null 2>"$TMP/typo.err"
check_grep "--verbos: did you mean '--verbose'" "^did you mean '--verbose'\?$" "$TMP/typo.err"

# Every command lists them in its help.
for cmd in record collapse flamegraph convert diff check top serve push query; do
	"$PLATEAU" "$cmd" --help >"$TMP/help.txt" 2>&1
	if grep -Eq -- '^ +-v, --verbose ' "$TMP/help.txt" && grep -Eq -- '^ +--debug MODULES ' "$TMP/help.txt"; then
		ok "$cmd --help lists -v, --verbose and --debug"
	else
		not_ok "$cmd --help lists -v, --verbose and --debug"
	fi
done

# serve, push and query: the store and server modules, the client module,
# and at -vv (server:2) each request dispatched.
APP_FILE=$TMP/app.folded
printf 'main;work 5\n' >"$APP_FILE"
if serve_start srv --data "$TMP/store" -vv; then
	ok "serve -vv starts"
	check_grep "serve -v: the store opened" "^plateau: debug: store: $TMP/store/plateau.db: opened for writing" "$TMP/srv.log"
	check_grep "serve -v: where it listens and its limits" "^plateau: debug: server: listening on 127.0.0.1:[0-9]+: " "$TMP/srv.log"
	"$PLATEAU" push -v --server "$URL" --app vapp "$APP_FILE" >"$TMP/push.out" 2>"$TMP/push.err"
	check_grep "push -v: the request and its answer" \
		"^plateau: debug: client: POST $URL/api/v1/profiles\?app=vapp: [0-9]+ bytes sent, HTTP 200, " "$TMP/push.err"
	"$PLATEAU" push --server "$URL" --app vapp2 "$APP_FILE" >"$TMP/push2.out" 2>"$TMP/push2.err"
	check "push without -v: the same stdout, nothing on stderr" \
		sh -c "cmp -s '$TMP/push.out' '$TMP/push2.out' && test ! -s '$TMP/push2.err'"
	"$PLATEAU" query --debug=client --server "$URL" vapp.cpu >"$TMP/q.out" 2>"$TMP/q.err"
	"$PLATEAU" query --server "$URL" vapp.cpu >"$TMP/q2.out" 2>/dev/null
	check_grep "query --debug=client: the GET" "^plateau: debug: client: GET $URL/" "$TMP/q.err"
	check_same "query: stdout byte-identical with --debug" "$TMP/q2.out" "$TMP/q.out"
	check_grep "serve -vv: the requests dispatched" "^plateau: debug: server: dispatch POST /api/v1/profiles$" "$TMP/srv.log"
	check_grep "serve -v: the pushed body inflated" "^plateau: debug: format: body: gzip, [0-9]+ bytes inflated" "$TMP/srv.log"
	serve_stop
else
	not_ok "serve -vv starts"
fi

# record: the perf events opened, the recording, the symbol files found.
cat >"$TMP/spin.c" <<'EOF'
int main(void) { volatile unsigned long x = 0; for (unsigned long i = 0; i < 50000000UL; i++) x += i; return 0; }
EOF
if ! cc -O0 -o "$TMP/spin" "$TMP/spin.c" 2>"$TMP/cc.err"; then
	not_ok "the record fixture builds"
elif ! timeout 60 "$PLATEAU" record -q -o "$TMP/r0.folded" -- "$TMP/spin" >/dev/null 2>"$TMP/r0.err" &&
	grep -Eqi 'paranoid|CAP_PERFMON|CAP_SYS_ADMIN|permission|not permitted' "$TMP/r0.err"; then
	echo "# SKIPPING record -v: perf events refused" >&2
	skip "record -v: perf events refused: $(head -n 1 "$TMP/r0.err")"
else
	timeout 60 "$PLATEAU" record -vv -q -o "$TMP/r.folded" -- "$TMP/spin" >"$TMP/r.out" 2>"$TMP/r.err"
	check "record -vv: exit 0, a profile written" test -s "$TMP/r.folded"
	check_grep "record -v: the perf event opened" "^plateau: debug: perf: cpu-clock opened for pid [0-9]+: " "$TMP/r.err"
	check_grep "record -vv: each perf_event_open" "^plateau: debug: perf: perf_event_open\(cpu-clock, pid [0-9]+, cpu -?[0-9]+\): fd [0-9]+" "$TMP/r.err"
	check_grep "record -v: the recording's start and end" "^plateau: debug: record: done: [0-9]+ samples" "$TMP/r.err"
	check_grep "record -v: the program's symbols, where from" \
		"^plateau: debug: symbol: $TMP/spin: [0-9]+ symbols from \.symtab, build-id " "$TMP/r.err"
	check "record -v: stdout empty (-q), stderr only debug lines" \
		sh -c "test ! -s '$TMP/r.out' && ! grep -v '^plateau: debug: [a-z]*: ' '$TMP/r.err'"
	timeout 60 "$PLATEAU" record --debug=perf -q -o "$TMP/r2.folded" -- "$TMP/spin" 2>"$TMP/r2.err"
	check "record --debug=perf: perf lines only" \
		sh -c "grep -q '^plateau: debug: perf: ' '$TMP/r2.err' && ! grep -v '^plateau: debug: perf: ' '$TMP/r2.err'"
	timeout 60 "$PLATEAU" record -q -o "$TMP/r3.folded" -- "$TMP/spin" -v 2>"$TMP/r3.err"
	check "record CMD -v: the -v after the command is the command's" test ! -s "$TMP/r3.err"
fi

done_testing
