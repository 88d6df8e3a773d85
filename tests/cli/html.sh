#!/bin/bash
# The HTML viewer page (--format html): self-contained, names escaped,
# the embedded JSON equal to what the folded input says, and a
# 200,000-frame profile written at a reasonable size.
. "$(dirname "$0")/lib.sh"

GOLD=$FIX/perf/golden

# json_of PAGE: the data block, parsed and checked by python (see below).
cat >"$TMP/check.py" <<'EOF'
import json, re, sys


def data_of(path):
    page = open(path, 'rb').read().decode('utf-8')  # the page is valid UTF-8
    m = re.search(r'<script type="application/json" id="plateau-data">(.*?)</script>', page, re.S)
    return page, m.group(1), json.loads(m.group(1))


def frames(d):
    """{path: (total, self)} from the levels; checks nesting and sibling order."""
    stride = 7 if d['diff'] else 4
    names, out, prev = d['names'], {}, []
    for lv in d['levels']:
        cur, end, p = [], 0, 0
        for j in range(0, len(lv), stride):
            x, w, s, n = end + lv[j], lv[j + 1], lv[j + 2], names[lv[j + 3]]
            assert lv[j] >= 0 and w > 0 and 0 <= s <= w, lv[j:j + stride]
            end = x + w
            path = ()
            if prev:
                while prev[p][0] + prev[p][1] <= x:
                    p += 1
                px, pw, ppath = prev[p]
                assert px <= x and x + w <= px + pw, (n, ppath)
                path = ppath + (n,)
                if cur and cur[-1][2][:-1] == ppath:
                    assert cur[-1][2][-1].encode() < n.encode(), 'siblings not sorted by name'
            assert path not in out
            out[path] = (w, s)
            cur.append((x, w, path))
        prev = cur
    return out


def folded(path):
    for line in open(path, encoding='utf-8'):
        stack, _, count = line.rstrip('\n').rpartition(' ')
        if stack:
            yield tuple(stack.split(';')), int(count)


def expected_frames(path):
    tot, slf = {}, {}
    for stack, c in folded(path):
        slf[stack] = slf.get(stack, 0) + c
        for i in range(len(stack) + 1):
            tot[stack[:i]] = tot.get(stack[:i], 0) + c
    return {p: (t, slf.get(p, 0)) for p, t in tot.items()}


def expected_functions(path):
    out = {}
    for stack, c in folded(path):
        for name in set(stack):
            s, t = out.get(name, (0, 0))
            out[name] = (s, t + c)
        s, t = out[stack[-1]]
        out[stack[-1]] = (s + c, t)
    return out


def main():
    what, page_path = sys.argv[1], sys.argv[2]
    page, raw, d = data_of(page_path)
    if what == 'values':
        want = expected_frames(sys.argv[3])
        got = frames(d)
        assert got == want, sorted(set(got.items()) ^ set(want.items()))[:5]
        fn = {d['names'][r[0]]: (r[1], r[2]) for r in d['functions']}
        assert fn == expected_functions(sys.argv[3])
        assert d['total'] == want[()][0]
    elif what == 'hostile':
        assert '<' not in raw and '>' not in raw and '&' not in raw
        names = set(d['names'])
        for n in sys.argv[3:]:
            assert n in names, (n, names)
    elif what == 'field':
        value = d
        for key in sys.argv[3].split('.'):
            value = value[key]
        print(json.dumps(value))
    elif what == 'frame':  # frame PAGE NAME: the tuple of the first frame named NAME
        stride = 7 if d['diff'] else 4
        idx = d['names'].index(sys.argv[3])
        for lv in d['levels']:
            for j in range(0, len(lv), stride):
                if lv[j + 3] == idx:
                    print(json.dumps(lv[j:j + stride]))
                    return
    elif what == 'count':
        stride = 7 if d['diff'] else 4
        print(sum(len(lv) // stride for lv in d['levels']))


main()
EOF
py() { python3 "$TMP/check.py" "$@"; }

# A real recording (kernel and [unknown] frames) as folded stacks.
cat "$GOLD"/nofp.all.folded "$GOLD"/mt_burn.all.folded "$GOLD"/cxx_names.all.folded \
	>"$TMP/real.folded"
check "convert writes html" "$PLATEAU" convert -o "$TMP/real.html" "$TMP/real.folded"
check "flamegraph --format html writes the same page" \
	sh -c '"$1" flamegraph --format html "$2" >"$3" && cmp "$3" "$4"' _ \
	"$PLATEAU" "$TMP/real.folded" "$TMP/fg.html" "$TMP/real.html"
check_grep "starts as an HTML document" '^<!DOCTYPE html>' "$TMP/real.html"
check "levels and functions equal the folded counts" py values "$TMP/real.html" "$TMP/real.folded"

# Self-contained: no src=/href= attributes, no URL outside the data, no loader in the script.
sed '/id="plateau-data"/,/<\/script>/d' "$TMP/real.html" >"$TMP/nodata.html"
if grep -Eiq '(src|href|action|srcset|poster)[[:space:]]*=' "$TMP/nodata.html"; then
	not_ok "no src=/href= attributes"
	grep -Eio '(src|href|action|srcset|poster)[[:space:]]*=.{0,40}' "$TMP/nodata.html" | head -5 | sed 's/^/# /'
else ok "no src=/href= attributes"; fi
if grep -Eiq 'https?:|//[a-z0-9.-]+\.[a-z]{2,}/|url\(|@import|fetch\(|XMLHttpRequest|WebSocket|EventSource|sendBeacon|import\(' "$TMP/nodata.html"; then
	not_ok "no network reference in the page"
	grep -Eio '.{0,30}(https?:|url\(|@import|fetch\(|XMLHttpRequest|WebSocket|import\().{0,30}' "$TMP/nodata.html" | head -5 | sed 's/^/# /'
else ok "no network reference in the page"; fi
check_grep "a Content-Security-Policy forbids loading anything" \
	"Content-Security-Policy\" content=\"default-src 'none'" "$TMP/real.html"
check_grep "frame flags: kernel frames are marked" '"nameFlags":\[[0-9,]*2' "$TMP/real.html"

# Hostile names: </script>, quotes, invalid UTF-8, control bytes.
{
	# Padding: control bytes in the first 4 KiB would make the input look like protobuf.
	for i in $(seq 1 400); do echo "pad;filler_$i 1"; done
	printf 'a;</script><img src=x onerror=alert(1)>;"q'\''uote\\ 5\n'
	printf 'a;bad\377\376utf8;ctl\001\033x\177 3\n'
	printf 'a;b&c<!--d 2\n'
} >"$TMP/hostile.folded"
check "hostile names: page written" "$PLATEAU" convert -o "$TMP/hostile.html" "$TMP/hostile.folded"
check "hostile names: JSON parses, no raw < > & inside it" py hostile "$TMP/hostile.html" \
	'</script><img src=x onerror=alert(1)>' '"q'\''uote\' $'bad\xef\xbf\xbd\xef\xbf\xbdutf8' \
	$'ctl\x01\x1bx\x7f' 'b&c<!--d'
check_status "hostile names: exactly two script blocks end" 0 \
	test "$(grep -o '</script' "$TMP/hostile.html" | wc -l)" -eq 2
check_status "hostile names: no <img in the page" 1 grep -q '<img' "$TMP/hostile.html"

# Options: title (HTML-escaped in <title>), inverted.
check "flamegraph --title --inverted" "$PLATEAU" flamegraph --format html --inverted \
	--title 'Mine <&>' -o "$TMP/opt.html" "$TMP/real.folded"
check_grep "title escaped in <title>" '<title>Mine &lt;&amp;&gt;</title>' "$TMP/opt.html"
py field "$TMP/opt.html" title >"$TMP/title.out"
check_grep "title in the data" '^"Mine <&>"$' "$TMP/title.out"
py field "$TMP/opt.html" inverted >"$TMP/inv.out"
check_grep "inverted in the data" '^true$' "$TMP/inv.out"

# Differential: both values per frame and the significance flag.
check "diff --format html" "$PLATEAU" diff --format html -o "$TMP/diff.html" \
	"$FIX/folded/base.folded" "$FIX/folded/new.folded"
py frame "$TMP/diff.html" sort_keys >"$TMP/sk.out"
check_grep "diff: sort_keys 150 -> 450 (new, base, significant)" '^\[[0-9]+, 450, 450, [0-9]+, 150, 150, 1\]$' "$TMP/sk.out"
py frame "$TMP/diff.html" tokenize >"$TMP/tk.out"
check_grep "diff: tokenize 80 -> 84 is within noise" '^\[[0-9]+, 84, 84, [0-9]+, 80, 80, 0\]$' "$TMP/tk.out"
py field "$TMP/diff.html" diff.significance >"$TMP/sig.out"
check_grep "diff: plateau diff greys out noise" '^true$' "$TMP/sig.out"
py field "$TMP/diff.html" diff.baseSamples >"$TMP/bn.out"
check_grep "diff: base sample count" '^1000$' "$TMP/bn.out"

# Nothing to draw is an error, not an empty page.
printf 'a 0\n' >"$TMP/zero.folded"
check_status "a profile without samples is an error" 1 \
	"$PLATEAU" convert -o "$TMP/zero.html" "$TMP/zero.folded"
check_grep "... with a one-line message" 'no samples' "$TMP/status.err"

# 200,000 frames.
python3 "$TOP/tests/ui/gen-profile.py" 200000 >"$TMP/big.folded"
start=$(date +%s%N)
check "200,000-frame page written" "$PLATEAU" convert -o "$TMP/big.html" "$TMP/big.folded"
ms=$((($(date +%s%N) - start) / 1000000))
size=$(stat -c %s "$TMP/big.html")
echo "# 200,000 frames: $size bytes, written in $ms ms"
check_status "200,000 frames in the page" 0 test "$(py count "$TMP/big.html")" -eq 200001
check_status "... in under 8 MiB ($size bytes)" 0 test "$size" -lt $((8 << 20))
check "... with the folded counts" py values "$TMP/big.html" "$TMP/big.folded"

done_testing
