#!/bin/bash
# A real Pyroscope client against plateau serve: builds
# bench/pyroscope-client/main.go (pyroscope-go's Start with every Go
# profile type, UploadRate 2 s, a TagWrapper label) against a checkout of
# github.com/grafana/pyroscope-go, runs it for 7 s against a fresh server
# on loopback, and checks what plateau stored: the series of every type,
# the tag and the wrapper's label as series labels, no __session_id__, and
# the hot function's CPU time.
#
#   PYROSCOPE_GO=/path/to/pyroscope-go bench/pyroscope-client.sh [BUILD]
#
# PYROSCOPE_GO is a checkout at a tag Debian 12's Go (1.19) builds offline
# (v1.0.4: no dependencies outside the repository).
set -eu
BUILD=${1:-build}
: "${PYROSCOPE_GO:?set PYROSCOPE_GO to a pyroscope-go checkout (e.g. tag v1.0.4)}"
command -v go >/dev/null || { echo "pyroscope-client: go is missing (golang-go)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/plateau-pyroscope-client.XXXXXX)
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
cp bench/pyroscope-client/main.go "$tmp/"
cat > "$tmp/go.mod" <<MOD
module pyroscopeclient

go 1.17

require github.com/grafana/pyroscope-go v1.0.4
require github.com/grafana/pyroscope-go/godeltaprof v0.1.4 // indirect

replace github.com/grafana/pyroscope-go => $PYROSCOPE_GO
replace github.com/grafana/pyroscope-go/godeltaprof => $PYROSCOPE_GO/godeltaprof
MOD
(cd "$tmp" && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off go build -o client .)
"$BUILD/plateau" serve --listen 127.0.0.1:0 --data "$tmp/data" 2>"$tmp/serve.log" &
srv=$!
for _ in $(seq 50); do
	url=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" || true)
	[ -n "$url" ] && break
	sleep 0.1
done
"$tmp/client" "$url" >"$tmp/client.log" 2>&1
series=$(curl -s "$url/api/v1/series")
fail=0
check() { if eval "$2"; then echo "ok - $1"; else echo "not ok - $1"; fail=1; fi; }
for t in cpu alloc_objects alloc_space inuse_objects inuse_space; do
	check "series goapp.$t stored" "grep -q '\"type\":\"$t\"' <<<\"\$series\""
done
check "the Start tag env=test is a series label" "grep -q '\"env\":\"test\"' <<<\"\$series\""
check "TagWrapper's endpoint=/checkout is a series label" "grep -q '\"endpoint\":\"/checkout\"' <<<\"\$series\""
check "__session_id__ is not a label" "! grep -q session <<<\"\$series\""
hot=$(curl -s "$url/api/v1/query?query=goapp.cpu%7Bendpoint%3D%22%2Fcheckout%22%7D&from=now-5m&until=now&format=folded" |
	awk '/main.hotLoop/ { s += $NF } END { printf "%.0f\n", s }')
check "main.hotLoop has most of the 7 s of CPU (${hot} ns)" "[ ${hot} -gt 4000000000 ]"
grep -qi "error" "$tmp/client.log" && { echo "not ok - the client logged an error:"; grep -i error "$tmp/client.log"; fail=1; }
exit $fail
