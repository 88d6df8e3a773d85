#!/bin/bash
# Every JSON plateau writes is valid UTF-8 JSON whatever the names hold:
# check --json, diff --format json, speedscope, the HTML viewer's embedded
# data and the server's answers (query, render, diff, errors), from folded
# and pprof input whose function names carry invalid UTF-8 (\xff\xfe, a
# truncated sequence, an overlong form, a surrogate, a code point past
# U+10FFFF) and control characters.  Each byte that is not UTF-8 must come
# back as U+FFFD; valid multi-byte names unchanged.
. "$(dirname "$0")/lib.sh"

# json_ok FILE [WANT...]: strict UTF-8, then JSON; each WANT is a string
# that must appear among the decoded strings of the document.
cat >"$TMP/json_ok.py" <<'EOF'
import json, sys
raw = open(sys.argv[1], "rb").read()
if sys.argv[1].endswith(".html"):
    start = raw.index(b'id="plateau-data">') + len(b'id="plateau-data">')
    raw = raw[start:raw.index(b"</script>", start)]
try:
    text = raw.decode("utf-8")          # strict: any invalid byte raises
except UnicodeDecodeError as e:
    sys.exit("not UTF-8: %s near %r" % (e, raw[max(0, e.start - 20):e.end + 20]))
doc = json.loads(text)
strings = []
def walk(v):
    if isinstance(v, str):
        strings.append(v)
    elif isinstance(v, list):
        for x in v:
            walk(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            strings.append(k)
            walk(x)
walk(doc)
for want in sys.argv[2:]:
    want = want.encode("latin-1").decode("unicode_escape")
    if not any(want in s for s in strings):
        sys.exit("no string holds %r" % want)
EOF
json_ok() { python3 "$TMP/json_ok.py" "$@"; }

# Names: \xff\xfe, a truncated euro sign, an overlong '/', a surrogate,
# past U+10FFFF, a control character, and valid e-acute and euro.
python3 - "$TMP/base.folded" "$TMP/new.folded" <<'EOF'
import sys
names = [b"bad\xff\xfe", b"cut\xe2\x82", b"over\xc0\xaf", b"surr\xed\xa0\x80",
         b"big\xf4\x90\x80\x80", b"ctl\x01x", b"caf\xc3\xa9\xe2\x82\xac"]
with open(sys.argv[1], "wb") as b, open(sys.argv[2], "wb") as n:
    for i, name in enumerate(names):
        b.write(b"main;" + name + b" %d\n" % (100 + i))
        n.write(b"main;" + name + b" %d\n" % (100 + i + (300 if i % 2 == 0 else 0)))
EOF
# The decoded strings each writer must hold (python escapes).
WANT=('bad\ufffd\ufffd' 'cut\ufffd\ufffd' 'over\ufffd\ufffd' 'surr\ufffd\ufffd\ufffd'
	'big\ufffd\ufffd\ufffd\ufffd' 'ctl\x01x' 'caf\u00e9\u20ac')
GREW=("${WANT[0]}" "${WANT[2]}" "${WANT[4]}" "${WANT[6]}") # check --json lists what grew
"$PLATEAU" convert -o "$TMP/base.pb.gz" "$TMP/base.folded"
"$PLATEAU" convert -o "$TMP/new.pb.gz" "$TMP/new.folded"

for kind in folded pb.gz; do
	"$PLATEAU" check --json --min-share 0 --baseline "$TMP/base.$kind" "$TMP/new.$kind" >"$TMP/check.json"
	check "check --json ($kind input): valid UTF-8 JSON, bad bytes as U+FFFD" json_ok "$TMP/check.json" "${GREW[@]}"
	"$PLATEAU" diff --format json "$TMP/base.$kind" "$TMP/new.$kind" >"$TMP/diff.json"
	check "diff --format json ($kind input): valid UTF-8 JSON" json_ok "$TMP/diff.json" "${WANT[@]}"
	"$PLATEAU" convert --format speedscope -o "$TMP/s.json" "$TMP/new.$kind"
	check "speedscope ($kind input): valid UTF-8 JSON" json_ok "$TMP/s.json" "${WANT[@]}"
	"$PLATEAU" flamegraph --format html -o "$TMP/v.html" "$TMP/new.$kind"
	check "the viewer's embedded data ($kind input): valid UTF-8 JSON" json_ok "$TMP/v.html" "${WANT[@]}"
	"$PLATEAU" diff --format html -o "$TMP/d.html" "$TMP/base.$kind" "$TMP/new.$kind"
	check "the diff viewer's embedded data ($kind input): valid UTF-8 JSON" json_ok "$TMP/d.html" "${WANT[@]}"
done

# The server: push the names, read them back as JSON from every endpoint.
serve_start serve --data "$TMP/data" || { not_ok "plateau serve starts"; done_testing; exit 0; }
NOW=$(date +%s)
get() { curl -s -o "$TMP/$1" -w '%{http_code}' "$URL$2"; }
push() { # BODY NAME FROM UNTIL FORMAT: the HTTP status of a POST /ingest
	curl -s -o /dev/null -w '%{http_code}' --data-binary @"$1" \
		"$URL/ingest?name=$2&from=$((NOW - $3))&until=$((NOW - $4))&format=$5"
}
check "push the folded names" test "$(push "$TMP/base.folded" 'u8.cpu%7Bregion%3Deu%7D' 100 90 folded)" = 200
check "... a second window" test "$(push "$TMP/new.folded" 'u8.cpu%7Bregion%3Deu%7D' 80 70 folded)" = 200
check "push the pprof names" test "$(push "$TMP/new.pb.gz" u8 60 50 pprof)" = 200
W="from=$((NOW - 200))&until=$NOW"
check "GET /api/v1/query format=json" test "$(get q.json "/api/v1/query?query=u8.cpu&$W&format=json")" = 200
check "... valid UTF-8 JSON, bad bytes as U+FFFD" json_ok "$TMP/q.json" "${WANT[@]}"
check "GET /render format=json (the pprof push)" test "$(get r.json "/render?query=u8.samples&$W&format=json")" = 200
check "... valid UTF-8 JSON" json_ok "$TMP/r.json" "${WANT[@]}"
D="left=u8.cpu&right=u8.cpu&leftFrom=$((NOW - 100))&leftUntil=$((NOW - 85))&rightFrom=$((NOW - 85))&rightUntil=$((NOW - 65))"
check "GET /api/v1/diff" test "$(get d.json "/api/v1/diff?$D")" = 200
check "... valid UTF-8 JSON" json_ok "$TMP/d.json" "${WANT[@]}"
check "GET /api/v1/diff format=flamebearer" test "$(get f.json "/api/v1/diff?$D&format=flamebearer")" = 200
check "... valid UTF-8 JSON" json_ok "$TMP/f.json" "${WANT[@]}"
check "GET /api/v1/series" test "$(get s.json "/api/v1/series?query=u8.cpu")" = 200
check "... valid UTF-8 JSON" json_ok "$TMP/s.json" "u8"
get e.json "/api/v1/query?query=u8.cpu%7Bregion%3D%22%FF%C0%22%7D&$W" >/dev/null
check "a selector with invalid UTF-8 is echoed as valid UTF-8 JSON" json_ok "$TMP/e.json" 'region="\ufffd\ufffd"'
check "GET /api/v1/labels/region/values" test "$(get l.json "/api/v1/labels/region/values")" = 200
check "... valid UTF-8 JSON" json_ok "$TMP/l.json" "eu"

done_testing
