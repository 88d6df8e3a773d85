#!/usr/bin/env bash
# Authentication end to end: plateau serve --config with tokens; the agent
# (libplateau.so under a real workload) pushing with PLATEAU_TOKEN (Bearer),
# with user:password in PLATEAU_SERVER (Basic) and PLATEAU_TENANT
# (X-Scope-OrgID, seen by a recording receiver: plateau serve ignores it);
# plateau push and query with --token, --token-file, PLATEAU_TOKEN, a
# password in --server and --tenant; bad values refused in one line; no
# secret in any message or profile.  Servers bind 127.0.0.1 on a port the
# kernel picks.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?set BUILD to the build directory}"
LIB=$BUILD/libplateau.so
AG=$TOP/tests/agent
cd "$TMP" || exit 1
unset PLATEAU_MODES PLATEAU_HZ PLATEAU_OUTPUT PLATEAU_SERVER PLATEAU_TAGS PLATEAU_APP \
	PLATEAU_OUTPUT_OWNER PLATEAU_TOKEN PLATEAU_TENANT PLATEAU_UPLOAD_INTERVAL
if ldd "$LIB" | grep -q libasan; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
fi
cc -O2 -fomit-frame-pointer -pthread -o "$TMP/work" "$AG/workload.c" -ldl ||
	{ echo "Bail out! cannot build the workload"; exit 1; }

# Every secret below holds "s3cr3t": no message or profile may.
W=w-AGENT-s3cr3t-7f2c # write scope
R=r-READER-s3cr3t-61ab # read scope
cat >"$TMP/serve.conf" <<EOF
token = write:$W
token = read:$R
EOF

serve_start serve --data "$TMP/data" --config "$TMP/serve.conf" ||
	{ echo "Bail out! plateau serve did not start"; exit 1; }
HOSTPORT=${URL#http://}

# metric NAME{LABELS}: its value on /metrics (0 when absent).
metric() {
	curl -s -H "Authorization: Bearer $R" "$URL/metrics" |
		awk -v m="$1" 'index($0, m " ") == 1 { v = $2 } END { print v + 0 }'
}
accepted() { metric 'plateau_http_requests_total{route="ingest",code="2xx"}'; }
refused() { metric 'plateau_pushes_rejected_total{reason="auth"}'; }

# agent NAME ENV...: the workload (1.5 s of CPU in burn_a/burn_b) under the
# agent, pushing every second as app NAME; stderr to $TMP/NAME.err, the
# profile to $TMP/NAME.pb.gz.
agent() {
	local name=$1
	shift
	env LD_PRELOAD="$LIB" PLATEAU_APP="$name" PLATEAU_UPLOAD_INTERVAL=1s \
		PLATEAU_OUTPUT="$TMP/$name.pb.gz" "$@" "$TMP/work" cpu 1 1500 \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
}

# found DESC APP: plateau query (read token) finds the workload's burn_a under APP.
found() {
	"$PLATEAU" query --server "$URL" --token "$R" "$2.cpu" -o "$TMP/$2.folded" 2>"$TMP/$2.qerr"
	check_grep "$1" 'burn_a' "$TMP/$2.folded"
}

# ---- the agent: Bearer ----
a0=$(accepted) r0=$(refused)
agent bearer PLATEAU_SERVER="$URL" PLATEAU_TOKEN="$W"
check "agent, PLATEAU_TOKEN: the program runs and exits 0" test -s "$TMP/bearer.out"
a1=$(accepted) r1=$(refused)
check "... its pushes are accepted ($((a1 - a0)) pushes)" test "$((a1 - a0))" -ge 1
check "... none refused" test "$r1" -eq "$r0"
found "... and queryable with the read token" bearer

agent notoken PLATEAU_SERVER="$URL"
a2=$(accepted) r2=$(refused)
check "agent without a token: every push refused ($((r2 - r1)) counted as auth)" \
	test "$((r2 - r1))" -ge 1 -a "$a2" -eq "$a1"
check_grep "... with one warning naming the 401" "push to $URL: HTTP 401" "$TMP/notoken.err"
agent badtoken PLATEAU_SERVER="$URL" PLATEAU_TOKEN="x-wrong-s3cr3t-000"
a3=$(accepted) r3=$(refused)
check "agent with a wrong token: every push refused ($((r3 - r2)))" \
	test "$((r3 - r2))" -ge 1 -a "$a3" -eq "$a2"
agent readtoken PLATEAU_SERVER="$URL" PLATEAU_TOKEN="$R"
a4=$(accepted) r4=$(refused)
check "agent with the read token: refused too ($((r4 - r3)))" test "$((r4 - r3))" -ge 1 -a "$a4" -eq "$a3"
"$PLATEAU" query --server "$URL" --token "$R" notoken.cpu -o "$TMP/none.folded" 2>/dev/null
check "... nothing of theirs is stored" test ! -s "$TMP/none.folded"

# ---- the agent: Basic from the URL (Grafana Cloud style: user = an id, password = the token) ----
agent basic PLATEAU_SERVER="http://123456:$W@$HOSTPORT"
a5=$(accepted) r5=$(refused)
check "agent, user:password in PLATEAU_SERVER: its pushes are accepted ($((a5 - a4)))" \
	test "$((a5 - a4))" -ge 1 -a "$r5" -eq "$r4"
found "... and queryable" basic
agent basicbad PLATEAU_SERVER="http://123456:x-wrong-s3cr3t-111@$HOSTPORT"
a6=$(accepted) r6=$(refused)
check "agent, a wrong password: refused ($((r6 - r5)))" test "$((r6 - r5))" -ge 1 -a "$a6" -eq "$a5"
check_grep "... the warning shows the URL with the password as ***" \
	"push to http://123456:\*\*\*@$HOSTPORT: HTTP 401" "$TMP/basicbad.err"
# Nothing listens on port 1: retries, then "not sent before exit".
agent basicdown PLATEAU_SERVER="http://123456:x-down-s3cr3t-222@127.0.0.1:1"
check_grep "a server that is down: the retry warning shows *** too" \
	'push to http://123456:\*\*\*@127\.0\.0\.1:1: .*retrying' "$TMP/basicdown.err"

# ---- the agent: the tenant (plateau serve takes and ignores it; a receiver shows it) ----
agent tenant PLATEAU_SERVER="$URL" PLATEAU_TOKEN="$W" PLATEAU_TENANT=team-a
a7=$(accepted)
check "agent, PLATEAU_TENANT: plateau serve accepts the pushes ($((a7 - a6)))" test "$((a7 - a6))" -ge 1
python3 "$AG/receiver.py" --dir "$TMP/rx" --port-file "$TMP/rx.port" >/dev/null 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 50); do [ -s "$TMP/rx.port" ] && break; sleep 0.1; done
RX=http://127.0.0.1:$(cat "$TMP/rx.port")
agent rxtenant PLATEAU_SERVER="$RX" PLATEAU_TOKEN="$W" PLATEAU_TENANT=team-a
check "... the request carries X-Scope-OrgID: team-a" grep -rqsx 'HEADER X-Scope-OrgID: team-a' "$TMP/rx"
check "... and Authorization: Bearer TOKEN" grep -rqsx "HEADER Authorization: Bearer $W" "$TMP/rx"
rm -rf "$TMP/rx"/*
agent rxbasic PLATEAU_SERVER="http://123456:$W@${RX#http://}"
basic=$(printf '%s' "123456:$W" | base64 -w0)
check "agent, user:password: the request carries Authorization: Basic" \
	grep -rqsx "HEADER Authorization: Basic $basic" "$TMP/rx"

# ---- the agent: bad values, one line each, the program runs unprofiled ----
badvalue() { # DESC WANT-REGEX ENV...
	local desc=$1 want=$2
	shift 2
	rm -f "$TMP/bad.pb.gz"
	env LD_PRELOAD="$LIB" PLATEAU_OUTPUT="$TMP/bad.pb.gz" PLATEAU_SERVER="$URL" "$@" \
		"$TMP/work" cpu 1 50 >"$TMP/bad.out" 2>"$TMP/bad.err"
	local rc=$?
	if [ "$rc" -eq 0 ] && [ -s "$TMP/bad.out" ] && [ ! -e "$TMP/bad.pb.gz" ] &&
		[ "$(wc -l <"$TMP/bad.err")" -eq 1 ] && grep -Eq -- "$want" "$TMP/bad.err" &&
		! grep -q s3cr3t "$TMP/bad.err"; then
		ok "$desc"
	else
		not_ok "$desc (exit $rc)"
		sed 's/^/# /' "$TMP/bad.err" | head -5
	fi
	cat "$TMP/bad.err" >>"$TMP/badvalues.err"
}
badvalue "PLATEAU_TOKEN with CR/LF: one line naming it, the program runs unprofiled" \
	'^plateau: PLATEAU_TOKEN: has a space, control character or non-ASCII byte at byte 13 .*the agent stays off$' \
	PLATEAU_TOKEN=$'ab-s3cr3t-12\r\nX-Evil: 1'
badvalue "PLATEAU_TOKEN with a control character" 'PLATEAU_TOKEN: .*at byte 3' PLATEAU_TOKEN=$'ab\x01s3cr3t'
badvalue "PLATEAU_TOKEN empty" '^plateau: PLATEAU_TOKEN: is set but empty' PLATEAU_TOKEN=
badvalue "PLATEAU_TOKEN over 4096 bytes" 'PLATEAU_TOKEN: is longer than 4096 bytes' \
	PLATEAU_TOKEN="s3cr3t$(head -c 5000 /dev/zero | tr '\0' x)"
badvalue "PLATEAU_TOKEN and a password in PLATEAU_SERVER" 'PLATEAU_TOKEN: is set and PLATEAU_SERVER has a user:password' \
	PLATEAU_TOKEN=t-s3cr3t-1 PLATEAU_SERVER="http://u:p-s3cr3t-2@$HOSTPORT"
badvalue "PLATEAU_SERVER with a control character in its password: quoted with ***" \
	'PLATEAU_SERVER: "http://u:\*\*\*@127.0.0.1:[0-9]+" has a control character' PLATEAU_SERVER="http://u:p%0as3cr3t@$HOSTPORT"
badvalue "PLATEAU_TENANT not a tenant ID" 'PLATEAU_TENANT: "a/b" is not a tenant ID' PLATEAU_TENANT=a/b

# ---- no secret in any message or profile ----
cat "$TMP"/*.err >"$TMP/all-agent.err"
check "the agents' stderr (warnings, retries, refusals, bad values) never shows a secret" \
	sh -c "! grep -a s3cr3t '$TMP/all-agent.err'"
check "... which did say things ($(wc -l <"$TMP/all-agent.err") lines)" test "$(wc -l <"$TMP/all-agent.err")" -ge 8
n=0 leak=0
for f in "$TMP"/*.pb.gz; do
	n=$((n + 1))
	if gzip -dc "$f" | grep -aq -e s3cr3t -e team-a; then leak=$((leak + 1)); fi
done
check "no profile ($n written) holds a token, a password or the tenant" test "$n" -ge 8 -a "$leak" -eq 0
check "the server's log names no secret" sh -c "! grep -a s3cr3t '$TMP/serve.log'"

# ---- plateau push and query ----
F=$FIX/pprof/go_cpu.pb.gz
NOW=$(date +%s)
check "push --token" "$PLATEAU" push --from "$NOW" --server "$URL" --app clitok --token "$W" "$F"
check "query --token finds it" sh -c "'$PLATEAU' query --server '$URL' --token '$R' clitok.cpu | grep -q ."
check "push with PLATEAU_TOKEN" env PLATEAU_TOKEN="$W" "$PLATEAU" push --from "$NOW" --server "$URL" --app clienv "$F"
check "query with PLATEAU_TOKEN" sh -c "PLATEAU_TOKEN='$R' '$PLATEAU' query --server '$URL' clienv.cpu | grep -q ."
printf '%s\n' "$W" >"$TMP/w.token"
printf '%s\r\n' "$R" >"$TMP/r.token"
check "push --token-file (one line)" "$PLATEAU" push --from "$NOW" --server "$URL" --app clifile --token-file "$TMP/w.token" "$F"
check "query --token-file (CRLF line end)" sh -c "'$PLATEAU' query --server '$URL' --token-file '$TMP/r.token' clifile.cpu | grep -q ."
check "push with user:password in --server (Basic)" "$PLATEAU" push --from "$NOW" --server "http://ci:$W@$HOSTPORT" --app clibasic "$F"
check "query with user:password in --server" sh -c "'$PLATEAU' query --server 'http://ci:$R@$HOSTPORT' clibasic.cpu | grep -q ."
check_status "push without a token: exit 1" 1 "$PLATEAU" push --server "$URL" --app x "$F"
check_grep "... HTTP 401 in one line" 'HTTP 401: \{"error":"missing or invalid API token' "$TMP/status.err"
check_status "query with a wrong password: exit 1" 1 "$PLATEAU" query --server "http://ci:x-wrong-s3cr3t-9@$HOSTPORT" x.cpu
check_grep "... the URL shown with ***" "^plateau: error: http://ci:\*\*\*@$HOSTPORT/api/v1/query.*HTTP 401" "$TMP/status.err"
cat "$TMP/status.err" >>"$TMP/client.err"
check_status "push to a server that is down: exit 1" 1 "$PLATEAU" push --server "http://ci:x-down-s3cr3t-8@127.0.0.1:1" --app x "$F"
check_grep "... the URL shown with ***" '^plateau: error: http://ci:\*\*\*@127\.0\.0\.1:1/' "$TMP/status.err"
cat "$TMP/status.err" >>"$TMP/client.err"
printf 'ab-s3cr3t\r\ncd\n' >"$TMP/bad.token"
check_status "--token-file with a CR inside: usage error" 2 "$PLATEAU" query --server "$URL" --token-file "$TMP/bad.token" x.cpu
check_grep "... one line naming the option and the byte" '^plateau: error: --token-file .*bad\.token: the token has a space, control character or non-ASCII byte at byte 10' "$TMP/status.err"
cat "$TMP/status.err" >>"$TMP/client.err"
check_status "PLATEAU_TOKEN with LF: usage error" 2 env PLATEAU_TOKEN=$'ab-s3cr3t\n' "$PLATEAU" push --server "$URL" --app x "$F"
check_grep "... naming the variable" '^plateau: error: PLATEAU_TOKEN: the token has a space' "$TMP/status.err"
cat "$TMP/status.err" >>"$TMP/client.err"
check_status "PLATEAU_TOKEN empty: usage error" 2 env PLATEAU_TOKEN= "$PLATEAU" query --server "$URL" x.cpu
check_grep "... naming the variable" '^plateau: error: PLATEAU_TOKEN: the token is empty' "$TMP/status.err"
check_status "--token with a password in --server: usage error" 2 "$PLATEAU" query --server "http://ci:p-s3cr3t@$HOSTPORT" --token "t-s3cr3t" x.cpu
cat "$TMP/status.err" >>"$TMP/client.err"
check_status "--tenant not a tenant ID: usage error" 2 "$PLATEAU" query --server "$URL" --tenant 'a b' x.cpu
check "the clients' messages never show a secret" sh -c "test -s '$TMP/client.err' && ! grep -a s3cr3t '$TMP/client.err'"
rm -rf "$TMP/rx"/*
"$PLATEAU" push --server "$RX" --app t --tenant team-b --token "$W" "$F" 2>/dev/null
check "push --tenant sends X-Scope-OrgID" grep -rqsx 'HEADER X-Scope-OrgID: team-b' "$TMP/rx"
PLATEAU_TENANT=team-c "$PLATEAU" query --server "$RX" t.cpu >/dev/null 2>&1
check "query with PLATEAU_TENANT sends it" grep -rqsx 'HEADER X-Scope-OrgID: team-c' "$TMP/rx"
check "push --tenant to plateau serve: accepted" "$PLATEAU" push --server "$URL" --app clitenant --tenant team-b --token "$W" "$F"
for cmd in push query; do
	"$PLATEAU" "$cmd" --help >"$TMP/help.txt" 2>&1
	check "$cmd --help lists --token, --token-file and --tenant" \
		sh -c "grep -q -- '--token TOKEN' '$TMP/help.txt' && grep -q -- '--token-file FILE' '$TMP/help.txt' && grep -q -- '--tenant ID' '$TMP/help.txt'"
done

# ---- the server: Basic, the password a token of the scope ----
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "serve: Basic with the read token as password reads (any user)" test "$(code -u "anyone:$R" "$URL/api/v1/labels")" = 200
check "serve: Basic with the write token as password does not read" test "$(code -u "anyone:$W" "$URL/api/v1/labels")" = 401
check "serve: the token as the user name does not count" test "$(code -u "$R:x" "$URL/api/v1/labels")" = 401
check "serve: 'authorization: bearer TOKEN', scheme in lower case, reads" \
	test "$(code -H "authorization: bearer $R" "$URL/api/v1/labels")" = 200
check "serve: 'BEARER<tab>TOKEN ' (a tab, trailing space) pushes" \
	test "$(code -H "Authorization: BEARER	$W " --data-binary 'main;lc 1' "$URL/ingest?name=lc.cpu")" = 200
check "serve: 'basic' in lower case reads" \
	test "$(code -H "authorization: basic $(printf 'u:%s' "$R" | base64 -w0)" "$URL/api/v1/labels")" = 200
curl -s -D "$TMP/h401" -o /dev/null "$URL/api/v1/labels"
check_grep "serve: a 401 offers Bearer and Basic" '^WWW-Authenticate: Bearer, Basic realm="plateau"' "$TMP/h401"
for p in "${BG_PIDS[@]}"; do kill "$p" && wait "$p"; done 2>/dev/null
done_testing
