#!/usr/bin/env bash
# plateau serve, push and query: round trips by selector and window,
# Pyroscope-format pushes, durability across kill -9, retention, caps,
# tokens, cardinality, bad input on every endpoint, /metrics.
# Servers bind 127.0.0.1 on a port the kernel picks.
. "$(dirname "$0")/lib.sh"

GO_CPU=$FIX/pprof/go_cpu.pb.gz
GO_HEAP=$FIX/pprof/go_heap.pb.gz

# http METHOD PATH [curl args...]: body to $TMP/body, status on stdout.
http() {
	local method=$1 path=$2
	shift 2
	curl -s -o "$TMP/body" -w '%{http_code}' -X "$method" "$@" "$URL$path"
}

# check_http DESC WANT METHOD PATH [curl args]: the status is WANT.
check_http() {
	local desc=$1 want=$2 got
	shift 2
	got=$(http "$@")
	if [ "$got" = "$want" ]; then ok "$desc"; else
		not_ok "$desc (HTTP $got, want $want)"
		head -c 400 "$TMP/body" | sed 's/^/# /'
		echo
	fi
}

# sorted folded text, for comparisons that must not depend on line order
norm() { sort "$1" >"$1.sorted"; }

NOW=$(date +%s)
serve_start main --data "$TMP/data"
check_http "healthz answers" 200 GET /healthz
check_grep "... with ok" '^ok$' "$TMP/body"

# ---- Pyroscope's legacy push: folded text, name with labels ----
printf 'main;work;hash 30\nmain;idle 10\n' >"$TMP/a.folded"
check_http "POST /ingest folded (Pyroscope name with labels)" 200 POST \
	"/ingest?name=shop.cpu%7Bregion%3Deu-west%2Cversion%3Dv1%7D&from=$((NOW - 100))&until=$((NOW - 90))&format=folded&sampleRate=100&spyName=ebpfspy&units=samples&aggregationType=sum" \
	--data-binary @"$TMP/a.folded"
printf 'main;work;hash 5\nmain;work;sort 7\n' >"$TMP/b.folded"
check_http "a second instance, another region" 200 POST \
	"/ingest?name=shop.cpu%7Bregion%3Dus-east%2Cversion%3Dv1%7D&from=$((NOW - 90))&until=$((NOW - 80))" \
	--data-binary @"$TMP/b.folded"
check "plateau query merges both by app and type" "$PLATEAU" query --server "$URL" 'shop.cpu' \
	--from "$((NOW - 200))" --until "$NOW" --format folded -o "$TMP/q1.folded"
printf 'main;idle 10\nmain;work;hash 35\nmain;work;sort 7\n' >"$TMP/want1.folded"
norm "$TMP/q1.folded"
check_same "... to exactly the sum of the pushes" "$TMP/want1.folded" "$TMP/q1.folded.sorted"
# ---- aggregationType=average: a gauge's window is the mean of its pushes ----
printf 'main;heap 100\n' >"$TMP/g1.folded"
printf 'main;heap 300\n' >"$TMP/g2.folded"
check_http "POST /ingest aggregationType=average" 200 POST \
	"/ingest?name=mem.live%7Bregion%3Deu%7D&from=$((NOW - 100))&until=$((NOW - 90))&aggregationType=average" \
	--data-binary @"$TMP/g1.folded"
check_http "... a second push of the gauge" 200 POST \
	"/ingest?name=mem.live%7Bregion%3Deu%7D&from=$((NOW - 90))&until=$((NOW - 80))&aggregationType=average" \
	--data-binary @"$TMP/g2.folded"
check "plateau query of the gauge" "$PLATEAU" query --server "$URL" 'mem.live' \
	--from "$((NOW - 200))" --until "$NOW" --format folded -o "$TMP/g.folded"
check_grep "... is the mean of the two pushes" '^main;heap 200$' "$TMP/g.folded"
check_http "aggregationType=max is refused" 400 POST \
	"/ingest?name=mem.other&from=$((NOW - 100))&until=$((NOW - 90))&aggregationType=max" \
	--data-binary @"$TMP/g1.folded"
check_grep "... naming the value" 'aggregationType \\"max\\" is not sum or average' "$TMP/body"
check "a label selector keeps one region" "$PLATEAU" query --server "$URL" \
	'shop.cpu{region=~"eu-.*"}' --from "$((NOW - 200))" --format folded -o "$TMP/q2.folded"
norm "$TMP/q2.folded"
sort "$TMP/a.folded" >"$TMP/a.sorted"
check_same "... the eu-west push alone" "$TMP/a.sorted" "$TMP/q2.folded.sorted"
check "!= and !~ too" "$PLATEAU" query --server "$URL" 'shop.cpu{region!="eu-west",version!~"v2.*"}' \
	--from "$((NOW - 200))" -o "$TMP/q3.folded"
check_grep "... the us-east push" 'main;work;sort 7' "$TMP/q3.folded"
check "the window selects by start time" "$PLATEAU" query --server "$URL" 'shop.cpu' \
	--from "$((NOW - 97))" --until "$NOW" -o "$TMP/q4.folded"
check_grep "... only the push that started in it" '^main;work;hash 5$' "$TMP/q4.folded"

printf 'main;alloc;grow\nmain;alloc;grow\nmain;free\n' >"$TMP/lines.txt"
check_http "POST /ingest format=lines units=bytes" 200 POST \
	"/ingest?name=mem.alloc_space&from=$((NOW - 100))&format=lines&units=bytes" --data-binary @"$TMP/lines.txt"
check_http "... counted once per line" 200 GET "/api/v1/query?query=mem.alloc_space&from=$((NOW - 200))&format=folded"
printf 'main;alloc;grow 2\nmain;free 1\n' >"$TMP/lines.want"
norm "$TMP/body"
check_same "... as folded stacks" "$TMP/lines.want" "$TMP/body.sorted"
check_http "units=bytes gives Pyroscope's units in the JSON" 200 GET "/render?query=mem.alloc_space&from=$((NOW - 200))"
check_grep "... bytes" '"units":"bytes"' "$TMP/body"
check_http "maxNodes cuts folded output too" 200 GET "/api/v1/query?query=shop.cpu&from=$((NOW - 200))&format=folded&maxNodes=2"
check_grep "... into other" 'other' "$TMP/body"

# ---- Pyroscope's Go client: multipart pprof with a sample_type_config ----
printf '{"samples":{"units":"samples","display-name":"cpu","sampled":true}}' >"$TMP/stc.json"
check_http "POST /ingest multipart (profile + sample_type_config)" 200 POST \
	"/ingest?name=gocpu%7Bregion%3Deu%7D&from=$((NOW - 100))&until=$((NOW - 90))&spyName=gospy&sampleRate=100" \
	-F "profile=@$GO_CPU;filename=profile.pprof;type=application/octet-stream" \
	-F "sample_type_config=@$TMP/stc.json;filename=sample_type_config.json;type=application/octet-stream"
"$PLATEAU" convert --format folded --sample-type samples -o "$TMP/gocpu-local.folded" "$GO_CPU"
check "the configured type is stored under its display name" "$PLATEAU" query --server "$URL" \
	'gocpu.cpu{region="eu"}' --from "$((NOW - 200))" -o "$TMP/gocpu.folded"
norm "$TMP/gocpu-local.folded"
norm "$TMP/gocpu.folded"
check_same "... equal to the local conversion" "$TMP/gocpu-local.folded.sorted" "$TMP/gocpu.folded.sorted"
check_http "... and the type it leaves out is not" 200 GET '/api/v1/series?query=gocpu.samples'
check_grep "... (no such series)" '^\[\]$' "$TMP/body"

# ---- plateau push (pprof, every sample type) and the JSON flame tree ----
check "plateau push a Go heap profile with tags" "$PLATEAU" push --server "$URL" --app api \
	--tag region=eu-west --tag endpoint=/checkout --from "$((NOW - 60))" --until "$((NOW - 50))" "$GO_HEAP"
"$PLATEAU" convert --format folded --sample-type inuse_space -o "$TMP/heap-local.folded" "$GO_HEAP"
check "query api.inuse_space as folded" "$PLATEAU" query --server "$URL" \
	'api.inuse_space{endpoint="/checkout"}' --from "$((NOW - 120))" -o "$TMP/heap-remote.folded"
norm "$TMP/heap-local.folded"
norm "$TMP/heap-remote.folded"
check_same "... equals the local conversion of that type" "$TMP/heap-local.folded.sorted" \
	"$TMP/heap-remote.folded.sorted"
# Every sample type of the file (read from the file itself) is its own
# series, equal to the local conversion of that type.
"$PLATEAU" convert --format speedscope -o "$TMP/heap.speedscope.json" "$GO_HEAP"
types=$(python3 -c 'import json, sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["profiles"]))' \
	"$TMP/heap.speedscope.json")
bad="" n=0
for t in $types; do
	n=$((n + 1))
	"$PLATEAU" convert --format folded --sample-type "$t" -o "$TMP/heap-$t.local" "$GO_HEAP"
	if ! "$PLATEAU" query --server "$URL" "api.$t" --from "$((NOW - 120))" -o "$TMP/heap-$t.remote" 2>/dev/null ||
		! [ -s "$TMP/heap-$t.remote" ] || ! cmp -s <(sort "$TMP/heap-$t.local") <(sort "$TMP/heap-$t.remote"); then
		bad="$bad $t"
	fi
done
check "every sample type became a series ($n: $types)${bad:+; missing or different:$bad}" \
	test "$n" -ge 2 -a -z "$bad"
check_http "... and the series list has one per type" 200 GET '/api/v1/series'
check "... ($types)" python3 -c '
import json, sys
got = sorted(s["type"] for s in json.load(open(sys.argv[1])) if s["app"] == "api")
want = sorted(sys.argv[2].split())
assert got == want, (got, want)' "$TMP/body" "$types"
check_http "GET /api/v1/query format=json" 200 GET \
	"/api/v1/query?query=shop.cpu&from=$((NOW - 200))&until=$NOW&format=json"
check_grep "... a flamebearer with names and levels" '"names":\[.*"levels":\[\[' "$TMP/body"
check_grep "... numTicks is the total" '"numTicks":52' "$TMP/body"
check_http "GET /render (Pyroscope) answers the same" 200 GET \
	"/render?query=shop.cpu&from=$((NOW - 200))&until=$NOW&format=json"
check_grep "... with numTicks 52" '"numTicks":52' "$TMP/body"
check_http "format=pprof" 200 GET "/api/v1/query?query=shop.cpu&from=$((NOW - 200))&format=pprof" \
	-o /dev/null
http GET "/api/v1/query?query=shop.cpu&from=$((NOW - 200))&format=pprof" >/dev/null
check "... which plateau reads back" "$PLATEAU" convert --format folded -o "$TMP/pp.folded" "$TMP/body"
check_http "format=svg" 200 GET "/api/v1/query?query=shop.cpu&from=$((NOW - 200))&format=svg"
check_grep "... an SVG" '<svg' "$TMP/body"
check_http "maxNodes=2 cuts the tree" 200 GET \
	"/api/v1/query?query=shop.cpu&from=$((NOW - 200))&format=json&maxNodes=2"
check_grep "... keeping the total" '"numTicks":52' "$TMP/body"
check_grep "... in an other node" '"other"' "$TMP/body"

# ---- the web UI's data (format=viewer) and its page ----
# jget EXPR: a Python expression over the JSON body as j.
jget() {
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$TMP/body" "$1"
}
check_http "format=viewer: the HTML viewer's JSON" 200 GET \
	"/api/v1/query?query=shop.cpu&from=$((NOW - 200))&until=$NOW&format=viewer"
check "... total 52, every frame, nothing dropped" test "$(jget 'j["total"], len(j["names"]) > 3, "dropped" in j')" = "52 True False"
nodes=$(jget 'sum(len(l) // 4 for l in j["levels"]) - 1')
check_http "format=viewer&maxNodes=2" 200 GET \
	"/api/v1/query?query=shop.cpu&from=$((NOW - 200))&until=$NOW&format=viewer&maxNodes=2"
check "... says what the cut dropped: $((nodes - 2)) of $nodes frames, by maxNodes=2" \
	test "$(jget 'j["total"], j["dropped"]["frames"], j["dropped"]["why"], 0 < j["dropped"]["value"] <= 52')" = "52 $((nodes - 2)) maxNodes=2 True"
check_http "diff format=viewer" 200 GET \
	"/api/v1/diff?left=shop.cpu%7Bregion%3D%22eu-west%22%7D&right=shop.cpu&format=viewer"
check "... a diff viewer's JSON naming both sides" test \
	"$(jget 'j["diff"]["significance"], j["title"]')" = 'True Diff: shop.cpu{region="eu-west"} → shop.cpu'
check_http "diff format=svg is refused" 400 GET "/api/v1/diff?left=shop.cpu&right=shop.cpu&format=svg"
check_grep "... naming the formats" 'is not json, viewer or flamebearer' "$TMP/body"
for path in / /comparison /diff; do
	check_http "GET $path: the web UI's page" 200 GET "$path?query=shop.cpu"
	check_grep "... with the viewer and the UI inlined" 'PlateauViewer' "$TMP/body"
	check "... and a CSP that lets it talk to its own server only" \
		grep -q "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'" "$TMP/body"
done
check_http "POST / is refused" 405 POST /

# ---- labels, series, timeline, diff ----
check_http "GET /api/v1/labels" 200 GET /api/v1/labels
check_grep "... lists region and version" '^\[.*"region".*"version".*\]$' "$TMP/body"
check_http "GET /api/v1/labels/region/values" 200 GET '/api/v1/labels/region/values?query=shop.cpu'
check_grep "... both regions" '^\["eu-west","us-east"\]$' "$TMP/body"
check_http "GET /api/v1/series with a selector" 200 GET '/api/v1/series?query=shop.cpu%7Bregion%3D%22eu-west%22%7D'
check_grep "... the one series, by its canonical key" '"key":"shop.cpu\{region=\\"eu-west\\",version=\\"v1\\"\}"' "$TMP/body"
check_http "GET /api/v1/timeline" 200 GET "/api/v1/timeline?query=shop.cpu&from=$((NOW - 100))&until=$((NOW - 80))&step=10s"
check_grep "... 40 then 12 in the two steps" '"values":\[40,12\]' "$TMP/body"
# Centuries apart, in years: (until - from + step - 1) overflowed and the
# server died of the first such GET; the pushes land in their year's step.
vsum() { python3 -c 'import json, sys; print(sum(json.load(open(sys.argv[1]))["values"]))' "$TMP/body"; }
check_http "GET /api/v1/timeline from=0&until=2^63-1&step=1y" 200 GET \
	"/api/v1/timeline?query=shop.cpu&from=0&until=9223372036854775807&step=1y"
all=$(vsum)
check "... holds every push of shop.cpu (sum $all, not 0)" test "${all:-0}" -gt 0
check_http "GET /api/v1/timeline from 1677 to 2262 in years" 200 GET \
	"/api/v1/timeline?query=shop.cpu&from=1677-09-21T00:12:44Z&until=2262-04-11T23:47:16Z&step=1y"
check "... the same total ($(vsum) = $all)" test "$(vsum)" = "$all"
check_http "... and the server still answers" 200 GET /healthz
check_http "GET /api/v1/diff of two regions" 200 GET \
	"/api/v1/diff?left=shop.cpu%7Bregion%3D%22eu-west%22%7D&right=shop.cpu%7Bregion%3D%22us-east%22%7D&leftFrom=$((NOW - 200))&rightFrom=$((NOW - 200))"
check_grep "... per-frame left and right with significance" '"significant"' "$TMP/body"

# ---- the in-process agent pushing to it (PLATEAU_SERVER) ----
cc -O2 -pthread -o "$TMP/plain" "$TOP/tests/agent/workload.c" -ldl
AGENT_ENV=
# A sanitized agent (the ASan suite) loads its runtime after the program's libraries.
ldd "$BUILD/libplateau.so" | grep -q libasan && AGENT_ENV="ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"
env $AGENT_ENV LD_PRELOAD=$BUILD/libplateau.so PLATEAU_SERVER=$URL PLATEAU_APP=wl PLATEAU_TAGS=env=test \
	PLATEAU_MODES=cpu,wall PLATEAU_UPLOAD_INTERVAL=1s "$TMP/plain" cpu 1 1500 >/dev/null 2>"$TMP/agent.err"
check "the agent's pushes (app and tags from PLATEAU_APP, PLATEAU_TAGS) are queryable" \
	"$PLATEAU" query --server "$URL" 'wl.cpu{env="test"}' --from now-5m -o "$TMP/wl.folded"
check_grep "... with the workload's stacks" 'burn' "$TMP/wl.folded"
check "... and its wall-time series too" "$PLATEAU" query --server "$URL" 'wl.wall' --from now-5m -o "$TMP/wlw.folded"
check_grep "... non-empty" ' [0-9]+$' "$TMP/wlw.folded"
check_http "the agent's sample labels become series labels" 200 GET '/api/v1/labels?query=wl.wall'
check_grep "... thread_state, not thread" '^\["env","service_name","thread_state"\]$' "$TMP/body"
check "... so a selector picks the running samples" "$PLATEAU" query --server "$URL" \
	'wl.wall{thread_state="running"}' --from now-5m -o "$TMP/wlr.folded"
check_grep "... the burning thread's" 'burn' "$TMP/wlr.folded"

# ---- bad input on every endpoint ----
check_http "malformed selector: 400" 400 GET '/api/v1/query?query=shop.cpu%7Bregion%3D%7D'
check_grep "... naming the column" 'selector: column' "$TMP/body"
check_http "bad time: 400" 400 GET '/api/v1/query?query=shop.cpu&from=yesterday'
check_grep "... naming the parameter" '"from: ' "$TMP/body"
check_http "a query without app and type: 400" 400 GET '/api/v1/query?query=%7Bregion%3D%22eu%22%7D'
check_http "unknown format: 400" 400 GET "/api/v1/query?query=shop.cpu&format=gif"
gzip -dc "$GO_CPU" | head -c 300 >"$TMP/trunc.pb"
check_http "truncated pprof: 400" 400 POST '/api/v1/profiles?app=x' --data-binary @"$TMP/trunc.pb"
check_http "folded garbage to /ingest: 400" 400 POST '/ingest?name=x.cpu' --data-binary 'not a profile'
check_http "bad ingest name: 400" 400 POST '/ingest?name=x.cpu%7Bregion' --data-binary @"$TMP/a.folded"
check_http "/ingest without name: 400" 400 POST '/ingest' --data-binary @"$TMP/a.folded"
check_http "an unknown endpoint: 404" 404 GET /api/v1/nothing
check_http "GET on a push endpoint: 405" 405 GET /ingest -D "$TMP/headers"
check_grep "... with Allow: POST" '^Allow: POST.?$' "$TMP/headers"
check_grep "... and a JSON error" '^\{"error":"method not allowed' "$TMP/body"
check_http "POST on a query endpoint: 405" 405 POST /api/v1/query --data-binary 'x' -D "$TMP/headers"
check_grep "... with Allow: GET, HEAD" '^Allow: GET, HEAD.?$' "$TMP/headers"
check_http "POST to a label's values: 405" 405 POST /api/v1/labels/region/values --data-binary 'x'
check_http "until before from: 400" 400 POST "/api/v1/profiles?app=x&from=$NOW&until=$((NOW - 10))" \
	--data-binary @"$GO_CPU"
check "a bad push leaves the server serving" test "$(http GET /healthz)" = 200
# ---- the access log: a line per request on stderr ----
check_grep "access log: a query's line (method, route, status, bytes, ms, app)" \
	'^plateau serve: access: GET /api/v1/query 200 bytes=[1-9][0-9]* ms=[0-9]+\.[0-9] app=shop$' "$TMP/main.log"
check_grep "... a push's" '^plateau serve: access: POST /ingest 200 bytes=3 ms=[0-9.]+ app=shop$' "$TMP/main.log"
check_grep "... a 405's, no app" '^plateau serve: access: GET /ingest 405 bytes=[0-9]+ ms=[0-9.]+$' "$TMP/main.log"
check_grep "... a label's values: the route, not the label" \
	'^plateau serve: access: GET /api/v1/labels/\*/values 200 ' "$TMP/main.log"
check "... never a query string" sh -c "! grep -E 'access: .*(\\?|query=|from=)' '$TMP/main.log'"
serve_stop

# ---- caps: body size, gzip bomb, labels, concurrency; tokens ----
cat >"$TMP/serve.conf" <<EOF
# caps for the test
max-body = 64KiB
max-inflated = 1MiB
series-budget = 3
token = write:pushsecret123
token = read:readsecret123
EOF
serve_start caps --data "$TMP/caps" --config "$TMP/serve.conf"
head -c 100000 /dev/zero >"$TMP/big.bin"
check_http "a body over max-body: 413" 413 POST '/api/v1/profiles?app=x' \
	-H 'Authorization: Bearer pushsecret123' --data-binary @"$TMP/big.bin"
head -c 50000000 /dev/zero | gzip -9 >"$TMP/bomb.gz"
check_http "a gzip bomb: 413, not an OOM" 413 POST '/api/v1/profiles?app=x' \
	-H 'Authorization: Bearer pushsecret123' --data-binary @"$TMP/bomb.gz"
check_http "a push without a token: 401" 401 POST '/ingest?name=x.cpu' --data-binary @"$TMP/a.folded"
check_http "a push with the read token: 401" 401 POST '/ingest?name=x.cpu' \
	-H 'Authorization: Bearer readsecret123' --data-binary @"$TMP/a.folded"
check_http "a query with the write token: 401" 401 GET '/api/v1/labels' \
	-H 'Authorization: Bearer pushsecret123'
check_http "a query with the read token: 200" 200 GET '/api/v1/labels' \
	-H 'Authorization: Bearer readsecret123'
check_http "healthz needs no token" 200 GET /healthz
for i in 1 2 3; do
	http POST "/ingest?name=x.cpu%7Btenant%3Dt$i%7D&from=$NOW" -H 'Authorization: Bearer pushsecret123' \
		--data-binary @"$TMP/a.folded" >/dev/null
done
check_http "the series budget refuses a 4th series: 422" 422 POST "/ingest?name=x.cpu%7Btenant%3Dt4%7D" \
	-H 'Authorization: Bearer pushsecret123' --data-binary @"$TMP/a.folded"
check_grep "... naming the label" 'label \\"tenant\\" has 3 values' "$TMP/body"
check_http "an existing series still takes pushes" 200 POST "/ingest?name=x.cpu%7Btenant%3Dt1%7D" \
	-H 'Authorization: Bearer pushsecret123' --data-binary @"$TMP/a.folded"
check "plateau query sends --token" "$PLATEAU" query --server "$URL" --token readsecret123 'x.cpu' \
	--from "$((NOW - 10))" -o "$TMP/tok.folded"
PLATEAU_TOKEN=nope "$PLATEAU" query --server "$URL" 'x.cpu' >/dev/null 2>"$TMP/tok.err"
check_grep "... and a bad one is a one-line 401" 'HTTP 401: \{"error":"missing or invalid API token' "$TMP/tok.err"
check "no token value in the server's log (which logged the refusals)" \
	sh -c "grep -q 'listening on' '$TMP/caps.log' && ! grep -q secret123 '$TMP/caps.log'"
check_grep "... whose access log has the requests sent with a token" \
	'^plateau serve: access: POST /ingest 200 .* app=x$' "$TMP/caps.log"
check "... and no Authorization, Bearer or token in it" sh -c "! grep -Ei 'authorization|bearer|token|nope' '$TMP/caps.log'"
check_http "/metrics (read token)" 200 GET /metrics -H 'Authorization: Bearer readsecret123'
check_grep "... counts the rejected pushes by reason" '^plateau_pushes_rejected_total\{reason="inflated_size"\} 1$' "$TMP/body"
check_grep "... the auth refusals" '^plateau_pushes_rejected_total\{reason="auth"\} 2$' "$TMP/body"
check_grep "... the series" '^plateau_series 3$' "$TMP/body"
check_grep "... the store size" '^plateau_store_bytes [1-9]' "$TMP/body"
check_grep "... query latency" '^plateau_query_duration_seconds_count [0-9]+$' "$TMP/body"
check_grep "... the connections open (this one at least)" '^plateau_http_connections [1-9][0-9]*$' "$TMP/body"
check_grep "... and their cap" '^plateau_http_connections_max [1-9][0-9]+$' "$TMP/body"
serve_stop
"$PLATEAU" serve --data "$TMP/caps" --check-labels >"$TMP/check.txt"
check_grep "--check-labels: the series count" '^3 series' "$TMP/check.txt"
check_grep "... values and series per label" '^tenant	3	3$' "$TMP/check.txt"
printf 'token = sometimes:abcdefgh123\n' >"$TMP/bad.conf"
check_status "a bad config file: exit 1" 1 "$PLATEAU" serve --config "$TMP/bad.conf" --data "$TMP/x"
check_grep "... naming the file and line" 'bad.conf:1: token scope' "$TMP/status.err"
printf 'max-connections = 4096\nheader-timeout = 500ms\n' >"$TMP/bad.conf"
check_status "header-timeout under 1s: exit 1" 1 "$PLATEAU" serve --config "$TMP/bad.conf" --data "$TMP/x"
check_grep "... naming the file, line and key" 'bad.conf:2: header-timeout: "500ms" is not from 1s to 1h' "$TMP/status.err"
printf 'max-connections-per-ip = 0\nmax-connections = 8\n' >"$TMP/bad.conf"
check_status "max-connections under 16: exit 1" 1 "$PLATEAU" serve --config "$TMP/bad.conf" --data "$TMP/x"
check_grep "... naming the key" 'bad.conf:2: max-connections: "8" is not a whole number from 16 to 1048576' "$TMP/status.err"
printf 'access-log = loud\n' >"$TMP/bad.conf"
check_status "access-log neither on nor off: exit 1" 1 "$PLATEAU" serve --config "$TMP/bad.conf" --data "$TMP/x"
check_grep "... naming the key" 'bad.conf:1: access-log: "loud" is not on or off' "$TMP/status.err"
# --quiet, or access-log = off in the config: no access log.
printf 'access-log = on\n' >"$TMP/on.conf"
serve_start quiet --data "$TMP/quiet" --config "$TMP/on.conf" --quiet
http GET /api/v1/labels >/dev/null
check_http "--quiet: the server answers" 200 GET /healthz
serve_stop
check "... and logs no request" sh -c "grep -q 'listening on' '$TMP/quiet.log' && ! grep -q 'access:' '$TMP/quiet.log'"
printf 'access-log = off\n' >"$TMP/off.conf"
serve_start quiet2 --data "$TMP/quiet" --config "$TMP/off.conf"
check_http "access-log = off: the server answers" 200 GET /healthz
serve_stop
check "... and logs no request" sh -c "grep -q 'listening on' '$TMP/quiet2.log' && ! grep -q 'access:' '$TMP/quiet2.log'"

# ---- durability: kill -9 during a push stream ----
serve_start crash --data "$TMP/crash"
: >"$TMP/acked"
(
	for i in $(seq 1 400); do
		code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$TMP/a.folded" \
			"$URL/ingest?name=crash.cpu%7Bn%3Dn$((i % 5))%7D&from=$((NOW - 5000 + i * 10))&until=$((NOW - 4990 + i * 10))")
		[ "$code" = 200 ] && echo "$i" >>"$TMP/acked"
	done
) &
STREAM=$!
sleep 1.5
kill -9 "$SERVE_PID"
wait "$STREAM" 2>/dev/null
ACKED=$(wc -l <"$TMP/acked")
serve_start crash2 --data "$TMP/crash"
MISSING=0
while read -r i; do
	n=$(curl -s "$URL/api/v1/timeline?query=crash.cpu%7Bn%3D%22n$((i % 5))%22%7D&from=$((NOW - 5000 + i * 10))&until=$((NOW - 4990 + i * 10))&step=10s")
	case $n in *'"values":[40]'*) ;; *) MISSING=$((MISSING + 1)) ;; esac
done <"$TMP/acked"
check "kill -9 mid-stream: every acknowledged push ($ACKED) is there after a restart" test "$ACKED" -gt 0 -a "$MISSING" -eq 0
serve_stop

# ---- retention: oldest first ----
serve_start old --data "$TMP/old"
check_http "a push 40 days old" 200 POST "/ingest?name=old.cpu&from=$((NOW - 40 * 86400))&until=$((NOW - 40 * 86400 + 10))" \
	--data-binary @"$TMP/a.folded"
check_http "and a recent one" 200 POST "/ingest?name=old.cpu&from=$((NOW - 100))&until=$((NOW - 90))" \
	--data-binary @"$TMP/b.folded"
serve_stop
serve_start old2 --data "$TMP/old" --retention 30d
sleep 0.5
check_http "after a restart with --retention 30d" 200 GET \
	"/api/v1/timeline?query=old.cpu&from=$((NOW - 41 * 86400))&until=$NOW&step=1d"
check_grep "... the old push is gone, the recent one kept" '"values":\[0(,0)*,12\]' "$TMP/body"
serve_stop
check "no sanitizer report in any server log" sh -c "! grep -E 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP'/*.log"

done_testing
