#!/usr/bin/env bash
# Real Pyroscope clients pushing to plateau serve: the Node.js SDK
# (@pyroscope/nodejs, pinned in tests/clients/node/package-lock.json and
# installed by scripts/deps.sh) profiles a small program with a named hot
# function and pushes to a server on 127.0.0.1; the pushes must all be
# stored, their dotted label names mapped as Pyroscope maps them ('.' to
# '_', counted in /metrics), and the function found by a query, by app
# name and by service_name.  No network but localhost.
. "$(dirname "$0")/lib.sh"

NODE_DIR=$TOP/tests/clients/node

if ! command -v node >/dev/null 2>&1 || ! [ -f "$NODE_DIR/node_modules/@pyroscope/nodejs/package.json" ]; then
	not_ok "node and @pyroscope/nodejs are installed (run scripts/deps.sh)"
	done_testing
	exit 1
fi
SDK_VERSION=$(node -p "require('$NODE_DIR/node_modules/@pyroscope/nodejs/package.json').version")
echo "# @pyroscope/nodejs $SDK_VERSION, node $(node --version)"

# get DESC PATH OUT: GET PATH into OUT, passing when the status is 200.
get() {
	local code
	code=$(curl -s -o "$3" -w '%{http_code}' "$URL$2")
	if [ "$code" = 200 ]; then ok "$1"; else
		not_ok "$1 (HTTP $code)"
		head -c 400 "$3" | sed 's/^/# /'
		echo
	fi
}

# metric NAME: its value in $TMP/metrics, or -1 without it.
metric() {
	awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print -1 }' "$TMP/metrics"
}

serve_start main --data "$TMP/data"

# ---- the SDK pushes: wall (with CPU time) and heap, every second, 3 wall rounds ----
# push.js prints "push N: STATUS POST URL" for each request the SDK sends.
(cd "$NODE_DIR" && DEBUG=pyroscope timeout 120 node push.js "$URL" nodeshop 3) >"$TMP/node.out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then ok "the SDK's program ran and stopped"; else
	not_ok "the SDK's program ran and stopped (exit $rc)"
	tail -5 "$TMP/node.out" | sed 's/^/# /'
fi
grep -m1 'sampleRate' "$TMP/node.out" | sed 's/^/# the SDK sends: /'
pushes=$(grep -c '^push [0-9]*: ' "$TMP/node.out")
bad=$(grep '^push [0-9]*: ' "$TMP/node.out" | grep -vc '^push [0-9]*: 200 POST /ingest?')
if [ "$pushes" -ge 4 ] && [ "$bad" -eq 0 ]; then ok "plateau took every push of the SDK ($pushes)"; else
	not_ok "plateau took every push of the SDK ($bad of $pushes refused)"
	grep -A1 'rejected' "$TMP/node.out" | head -4 | sed 's/^/# /'
fi

get "GET /metrics" /metrics "$TMP/metrics"
ingested=$(metric 'plateau_http_requests_total{route="ingest",code="2xx"}')
refused=$(metric 'plateau_http_requests_total{route="ingest",code="4xx"}')
renamed=$(metric plateau_ingest_labels_renamed_total)
echo "# pushes stored: $ingested, refused: $refused, label names renamed: $renamed"
if [ "$ingested" = "$pushes" ] && [ "$refused" = -1 ]; then ok "... /metrics: every push answered 2xx, none 4xx"; else
	not_ok "... /metrics: every push answered 2xx, none 4xx (2xx: $ingested, 4xx: $refused of $pushes)"
fi
# Each push renames 5 names: the SDK's otel.scope.name, otel.scope.version,
# process.runtime.name, process.runtime.version and our deployment.environment.
if [ "$renamed" -gt 0 ] && [ $((renamed % 5)) -eq 0 ] && [ "$renamed" -le $((5 * ingested)) ]; then
	ok "... plateau_ingest_labels_renamed_total counts 5 per push ($renamed)"
else
	not_ok "... plateau_ingest_labels_renamed_total counts 5 per push ($renamed for $ingested pushes)"
fi

# ---- the hot function, by app name and by service_name ----
check "plateau query nodeshop.cpu" "$PLATEAU" query --server "$URL" 'nodeshop.cpu' \
	--from now-10m --until now+1m -o "$TMP/cpu.folded"
check_grep "... has the hot function burnCpuForPlateau" ':burnCpuForPlateau:[0-9]+ [0-9]+$' "$TMP/cpu.folded"
check "plateau query by the mapped labels and service_name" "$PLATEAU" query --server "$URL" \
	"nodeshop.cpu{service_name=\"nodeshop\",otel_scope_name=\"com.grafana.pyroscope/nodejs\",process_runtime_name=\"nodejs\",region=\"eu-west-1\"}" \
	--from now-10m --until now+1m -o "$TMP/cpu2.folded"
check_same "... the same profile" "$TMP/cpu.folded" "$TMP/cpu2.folded"
get "/render of the wall time (Pyroscope's query API)" \
	"/render?query=nodeshop.wall%7Bservice_name%3D%22nodeshop%22%7D&from=now-10m&until=now%2B1m&format=folded" "$TMP/wall.folded"
check_grep "... has burnCpuForPlateau" ':burnCpuForPlateau:[0-9]+ [0-9]+$' "$TMP/wall.folded"
check "plateau query nodeshop.inuse_space (the heap profiler)" "$PLATEAU" query --server "$URL" \
	'nodeshop.inuse_space' --from now-10m --until now+1m -o "$TMP/heap.folded"
check_grep "... has the allocating function allocForPlateau" ':allocForPlateau:[0-9]+ [0-9.]+$' "$TMP/heap.folded"
code=$(curl -s -o "$TMP/many.json" -w '%{http_code}' "$URL/render?query=%7Bservice_name%3D%22nodeshop%22%7D&from=now-10m")
if [ "$code" = 400 ] && grep -q 'name one, as APP.cpu{service_name=' "$TMP/many.json"; then
	ok "{service_name=\"nodeshop\"} alone selects several types: 400 naming them"
else
	not_ok "{service_name=\"nodeshop\"} alone selects several types: 400 naming them (HTTP $code)"
	sed 's/^/# /' "$TMP/many.json"
fi

# ---- the labels, under their mapped names ----
get "GET /api/v1/labels?query=nodeshop.cpu" '/api/v1/labels?query=nodeshop.cpu' "$TMP/labels.json"
echo '["deployment_environment","otel_scope_name","otel_scope_version","process_runtime_name","process_runtime_version","region","service_name"]' >"$TMP/want-labels.json"
check_same "... the SDK's tags with '.' read as '_', and service_name" "$TMP/want-labels.json" "$TMP/labels.json"
get "GET /api/v1/labels/otel_scope_version/values" \
	'/api/v1/labels/otel_scope_version/values?query=nodeshop.cpu' "$TMP/version.json"
echo "[\"$SDK_VERSION\"]" >"$TMP/want-version.json"
check_same "... the SDK's version" "$TMP/want-version.json" "$TMP/version.json"
get "GET /api/v1/labels/service_name/values" '/api/v1/labels/service_name/values' "$TMP/svc.json"
echo '["nodeshop"]' >"$TMP/want-svc.json"
check_same "... the app" "$TMP/want-svc.json" "$TMP/svc.json"

check "no sanitizer report in the server log" sh -c "! grep -E 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP'/*.log"
done_testing
