#!/bin/bash
# plateau flamegraph: flamegraph.pl's options and output (compared box by
# box with flamegraph.pl itself), valid XML for any name, the script's
# zoom/search/URL behaviour on a small DOM, and plateau diff's SVG.
. "$(dirname "$0")/lib.sh"
CLI=$TOP/tests/cli
# flamegraph.pl's drawings are committed as goldens (the frames of its SVG,
# tests/fixtures/flamegraph/golden/, made by make-golden.sh) and always
# compared.  With FLAMEGRAPH_DIR set to a FlameGraph checkout, each is also
# compared live with the script; with FLAMEGRAPH_GOLDEN_WRITE=1 as well, the
# goldens are written from the live script instead.
FG=${FLAMEGRAPH_DIR:-}
FGOLD=$FIX/flamegraph/golden
PERF=$FIX/perf/golden
valid_xml() { python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$1" && xmllint --noout "$1"; }
same_as_pl() { # DESC INPUT OPTIONS...: plateau draws the boxes flamegraph.pl draws
	local desc=$1 in=$2 key
	shift 2
	key=$(basename "$in" .folded)
	[ $# -eq 0 ] || key=$key$(printf '.%s' "$@" | sed 's/--//g; s/%/pct/g')
	$PLATEAU flamegraph "$@" "$in" >"$TMP/pt.svg"
	if [ -n "$FG" ]; then
		if ! perl "$FG/flamegraph.pl" "$@" "$in" >"$TMP/pl.svg" 2>/dev/null; then
			not_ok "flamegraph.pl from FLAMEGRAPH_DIR=$FG runs: $desc"
			return
		fi
		if [ "${FLAMEGRAPH_GOLDEN_WRITE:-}" = 1 ]; then
			python3 "$CLI/flamegraph_cmp.py" --golden "$TMP/pl.svg" "$FGOLD/$key.json.gz"
			echo "$key $desc" >>"$FGOLD/MANIFEST.new"
		fi
		check "$desc (live flamegraph.pl)" python3 "$CLI/flamegraph_cmp.py" --departures "$TMP/pl.svg" "$TMP/pt.svg"
	fi
	check "$desc (golden $key)" python3 "$CLI/flamegraph_cmp.py" --departures "$FGOLD/$key.json.gz" "$TMP/pt.svg"
}
if [ "${FLAMEGRAPH_GOLDEN_WRITE:-}" = 1 ]; then
	[ -f "$FG/flamegraph.pl" ] || { echo "Bail out! FLAMEGRAPH_GOLDEN_WRITE=1 needs FLAMEGRAPH_DIR"; exit 1; }
	mkdir -p "$FGOLD"
	rm -f "$FGOLD"/*.json.gz "$FGOLD/MANIFEST.new"
fi

# A real folded file (perf record of the demo program and of a no-frame-pointer build).
cat "$PERF/demo.all.folded" "$PERF/nofp_dwarf.all.folded" "$PERF/cxx_names.all.folded" >"$TMP/real.folded"
check "draws a real folded file" $PLATEAU flamegraph -o "$TMP/real.svg" "$TMP/real.folded"
check "the SVG is valid XML" valid_xml "$TMP/real.svg"
same_as_pl "same boxes, colours and labels as flamegraph.pl" "$TMP/real.folded"
for opt in --inverted --hash --reverse --negate "--colors java" "--colors js" "--colors perl" \
	"--colors mem" "--colors io" "--colors wakeup" "--colors red" "--colors green" \
	"--colors blue" "--colors aqua" "--colors yellow" "--colors purple" "--colors orange" \
	"--minwidth 5" "--minwidth 2%" "--width 700" "--height 20" "--fontsize 9" "--fontwidth 0.8" \
	"--factor 2.5" "--total 100000000" "--countname ns"; do
	# shellcheck disable=SC2086
	same_as_pl "$opt as flamegraph.pl" "$TMP/real.folded" $opt
done
# A flame chart keeps input order: unsorted lines, repeated stacks.
printf 'm;b;x 1\nm;a 1\nm;a 1\nm;b 1\nother 1\nm;b;x 1\nm;a;y 1\n' >"$TMP/chart.folded"
same_as_pl "--flamechart as flamegraph.pl (input order)" "$TMP/chart.folded" --flamechart
same_as_pl "--flamechart --reverse as flamegraph.pl" "$TMP/chart.folded" --flamechart --reverse
# A differential (3-column) folded file.
awk '{ n = $NF; $NF = ""; print $0 n, (NR % 3 ? n : 2 * n) }' "$TMP/real.folded" >"$TMP/real.diff"
same_as_pl "a 3-column differential file as flamegraph.pl" "$TMP/real.diff"
same_as_pl "--negate on a differential file" "$TMP/real.diff" --negate

# Every option of flamegraph.pl is accepted and has its effect.  fg draws
# into o.svg; when plateau fails, o.svg is left empty so the check on it
# fails (never passes on a previous drawing, never vanishes from the count).
fg() {
	if ! $PLATEAU flamegraph "$@" "$TMP/real.folded" >"$TMP/o.svg" 2>"$TMP/fg.err"; then
		echo "# plateau flamegraph $* failed: $(head -c 200 "$TMP/fg.err")"
		: >"$TMP/o.svg"
	fi
}
fg --title 'My <title>'
check_grep "--title" '<text id="title"[^>]*>My &lt;title&gt;</text>' "$TMP/o.svg"
fg --subtitle 'sub'
check_grep "--subtitle" '<text id="subtitle"[^>]*>sub</text>' "$TMP/o.svg"
fg --width 640
check_grep "--width" '<svg [^>]*width="640"' "$TMP/o.svg"
fg --height 24
check_grep "--height" 'height="23.0" fill' "$TMP/o.svg"
fg --fonttype Courier
check_grep "--fonttype" 'font-family:Courier;' "$TMP/o.svg"
fg --fontsize 9
check_grep "--fontsize" 'font-size:9px;' "$TMP/o.svg"
fg --fontwidth 0.3
check_grep "--fontwidth" 'fg:fontwidth="0.3"' "$TMP/o.svg"
fg --countname bytes
check_grep "--countname bytes: values in B/KiB/MiB as the HTML viewer prints them" \
	'<title>all \([0-9]+\.[0-9]{2} (KiB|MiB), 100%\)' "$TMP/o.svg"
fg --countname widgets
check_grep "--countname: other names count" '<title>all \([0-9,]+ widgets, 100%\)' "$TMP/o.svg"
fg --nametype 'Frame:'
check_grep "--nametype" 'fg:nametype="Frame:"' "$TMP/o.svg"
fg --bgcolors blue
check_grep "--bgcolors blue" 'stop-color="#e0e0ff"' "$TMP/o.svg"
fg --bgcolors '#123456'
check "--bgcolors #rrggbb" test "$(grep -c 'stop-color="#123456"' "$TMP/o.svg")" -eq 2
fg --colors mem
check_grep "a palette picks its background" 'stop-color="#e0ffe0"' "$TMP/o.svg"
fg --notes 'build 42 -- nightly'
check_grep "--notes (an XML comment cannot hold --)" '<!-- NOTES: build 42 - - nightly -->' "$TMP/o.svg"
fg --inverted
check_grep "--inverted is an icicle graph" '>Icicle Graph</text>' "$TMP/o.svg"
fg --flamechart
check_grep "--flamechart is titled" '>Flame Chart</text>' "$TMP/o.svg"
fg --minwidth 50%
check "--minwidth N% omits frames under N% of the total" \
	bash -c "! grep -Eq '<title>.*, ([0-4]?[0-9]\.[0-9]+)%' '$TMP/o.svg' && grep -q '<title>demo ' '$TMP/o.svg'"
fg --factor 1000
check_grep "--factor scales the counts" '<title>all \([0-9,]+,000 samples, 100%\)' "$TMP/o.svg"
fg --total 999999999999
check_grep "--total sets the width" '<title>all \(999,999,999,999 samples' "$TMP/o.svg"
fg --random
cp "$TMP/o.svg" "$TMP/r1.svg"
fg
check "--random changes the colours" bash -c "grep -q 'fill=\"rgb' '$TMP/r1.svg' && grep -q 'fill=\"rgb' '$TMP/o.svg' &&
	! cmp -s <(grep -o 'fill=\"rgb[^\"]*\"' '$TMP/r1.svg') <(grep -o 'fill=\"rgb[^\"]*\"' '$TMP/o.svg')"
# --cp: a consistent palette kept in ./palette.map.
(cd "$TMP" && $PLATEAU flamegraph --cp real.folded >cp1.svg)
check_grep "--cp writes palette.map" '^compress_block->rgb\([0-9]+,[0-9]+,[0-9]+\)$' "$TMP/palette.map"
sed -i 's/^compress_block->.*/compress_block->rgb(1,2,3)/' "$TMP/palette.map"
(cd "$TMP" && $PLATEAU flamegraph --cp real.folded >cp2.svg)
check_grep "--cp reads palette.map" 'fill="rgb\(1,2,3\)"' "$TMP/cp2.svg"

# plateau's own options.
printf 'main;a;hot 60\nmain;b;cold 40\nmain;c 1\n' >"$TMP/small.folded"
$PLATEAU flamegraph --focus '^b$' "$TMP/small.folded" >"$TMP/o.svg"
check "--focus keeps matching stacks" bash -c "grep -q '<title>cold' '$TMP/o.svg' && ! grep -q '<title>hot' '$TMP/o.svg'"
$PLATEAU flamegraph --ignore '^b$' "$TMP/small.folded" >"$TMP/o.svg"
check "--ignore drops matching stacks" bash -c "! grep -q '<title>cold' '$TMP/o.svg' && grep -q '<title>hot' '$TMP/o.svg'"
$PLATEAU flamegraph --prune 5 "$TMP/small.folded" >"$TMP/o.svg"
check_grep "--prune merges small frames into [pruned]" '<title>\[pruned\] \(1 samples' "$TMP/o.svg"
check_status "--sample-type must exist" 1 $PLATEAU flamegraph --sample-type nope "$TMP/small.folded"
check_status "a bad --focus regex is a usage error" 2 $PLATEAU flamegraph --focus '(' "$TMP/small.folded"
check_status "an unknown palette is a usage error" 2 $PLATEAU flamegraph --colors pink "$TMP/small.folded"
check_status "a bad --bgcolors is a usage error" 2 $PLATEAU flamegraph --bgcolors '#12' "$TMP/small.folded"
check_status "a bad --minwidth is a usage error" 2 $PLATEAU flamegraph --minwidth 5px "$TMP/small.folded"
check_status "an unknown --format is a usage error" 2 $PLATEAU flamegraph --format png "$TMP/small.folded"

# Honest additions: sampling error in the footer and in each tooltip.
$PLATEAU flamegraph "$TMP/small.folded" >"$TMP/o.svg"
check_grep "the footer gives the sample count and sampling error" \
	'<text id="footer"[^>]*>101 samples; 95% sampling error of a share: \+/-9.6 pp at 50%' "$TMP/o.svg"
check_grep "a tooltip gives the 95% interval" '<title>hot \(60 samples, 59.41%\)$' "$TMP/o.svg"
check_grep "... on its second line" '^95% interval: 49.65% to 68.47%</title>' "$TMP/o.svg"

# Inputs: several files merge, stdin, perf script, empty input.
$PLATEAU flamegraph "$TMP/small.folded" "$TMP/small.folded" >"$TMP/o.svg"
check_grep "several files are merged" '<title>all \(202 samples, 100%\)' "$TMP/o.svg"
$PLATEAU flamegraph <"$TMP/small.folded" >"$TMP/o.svg"
check_grep "no file: stdin" '<title>all \(101 samples, 100%\)' "$TMP/o.svg"
$PLATEAU flamegraph "$FIX/perf/demo.perf.txt" >"$TMP/perf.svg"
check_grep "a time unit is printed as the HTML viewer does" '<title>all \([0-9]+\.[0-9]{2} (s|ms|µs), 100%\)' "$TMP/perf.svg"
$PLATEAU flamegraph --countname nanoseconds "$PERF/demo.default.folded" >"$TMP/perf-folded.svg"
check "perf script input draws as its collapsed folded file" \
	python3 "$CLI/flamegraph_cmp.py" "$TMP/perf-folded.svg" "$TMP/perf.svg"
: >"$TMP/empty"
check_status "empty input fails (exit 1)" 1 $PLATEAU flamegraph "$TMP/empty"
check "... with one line naming the file" test "$(wc -l <"$TMP/status.err")" -eq 1
check_grep "... naming the file" 'empty' "$TMP/status.err"
printf 'a 0\n' >"$TMP/zero.folded"
check_status "all-zero input fails (exit 1)" 1 $PLATEAU flamegraph "$TMP/zero.folded"
check_grep "... saying there is nothing to draw" 'no samples to draw' "$TMP/status.err"
$PLATEAU flamegraph -o "$TMP/out.svg" "$TMP/small.folded"
check "-o writes the file" valid_xml "$TMP/out.svg"
$PLATEAU convert -o "$TMP/real.pb.gz" "$TMP/real.folded"
$PLATEAU flamegraph "$TMP/real.pb.gz" >"$TMP/pprof.svg"
check "pprof input draws as the folded file it came from" \
	python3 "$CLI/flamegraph_cmp.py" "$TMP/real.svg" "$TMP/pprof.svg"
$PLATEAU flamegraph -o "$TMP/out.html" "$TMP/small.folded"
check_grep "-o NAME.html writes the HTML viewer" '^<!DOCTYPE html>' "$TMP/out.html"
$PLATEAU flamegraph --format html "$TMP/small.folded" >"$TMP/out2.html"
check_grep "--format html writes the HTML viewer" '^<!DOCTYPE html>' "$TMP/out2.html"

# Any name gives valid XML: every byte value, invalid UTF-8, markup.
python3 - "$TMP/hostile.folded" <<'EOF'
import random, sys
random.seed(3)
out = [b"main;padding_%d 1\n" % i for i in range(300)]   # the format is detected from the first 4 KiB
out += [b"main;x" + bytes([b]) + b"y;leaf 1\n" for b in range(1, 256) if b != 10]
for i in range(300):
    name = bytes(random.choice([c for c in range(1, 256) if c not in (10, 59)]) for _ in range(random.randint(1, 12)))
    out.append(b"main;" + name + b" 2\n")
out.append(b"main;]]>;<![CDATA[;--;<!-- x -->;&#0;;&amp;;\xed\xa0\x80;\xef\xbf\xbf;\xf4\x90\x80\x80 3\n")
open(sys.argv[1], "wb").writelines(out)
EOF
check "hostile names: drawn" $PLATEAU flamegraph -o "$TMP/hostile.svg" "$TMP/hostile.folded"
check "hostile names: valid XML (expat and libxml2)" valid_xml "$TMP/hostile.svg"
check "hostile options: valid XML" bash -c "$PLATEAU flamegraph --title \$'a\\x01<&\\xff' --notes '--x-->' \
	--nametype '\"<' --countname \"&'\" --subtitle ']]>' --fonttype '</style>' '$TMP/hostile.folded' >'$TMP/h2.svg'"
check "... and the result parses" valid_xml "$TMP/h2.svg"

# The script and the elements it drives.
check_grep "the SVG embeds the script" '^function fgZoom\(f\) \{' "$TMP/real.svg"
check_grep "it starts on load" 'onload="init\(evt\)"' "$TMP/real.svg"
for id in search unzoom matched details ignorecase frames; do
	check_grep "element #$id exists" "id=\"$id\"" "$TMP/real.svg"
done
check_grep "Reset Zoom starts hidden" '<text id="unzoom"[^>]*class="hide">Reset Zoom</text>' "$TMP/real.svg"

# Interactivity, on a small DOM in node: zoom, search, shared links.
printf 'main;a;b;b 30\nmain;a;c 10\nmain;b 20\nmain;decompress_block;b;x 5\nother 35\n' >"$TMP/ui.folded"
printf 'main;a 1\nmain;b 1\nmain;a 2\n' >"$TMP/uichart.folded"
ui() { # DESC SVG SCENARIOS-PYTHON
	local desc=$1 svg=$2
	python3 "$CLI/flamegraph_svg2json.py" "$svg" >"$TMP/ui.json" || { not_ok "$desc: SVG to JSON"; return; }
	python3 -c "$3" "$TMP/ui.json" >"$TMP/sc.json" || { not_ok "$desc: scenarios"; return; }
	node "$CLI/flamegraph_dom.js" "$TMP/ui.json" "$TMP/sc.json" >"$TMP/ui.out" 2>&1
	while IFS= read -r line; do
		case "$line" in
		PASS*) ok "$desc: ${line#PASS }" ;;
		FAIL*) not_ok "$desc: ${line#FAIL }" ;;
		*) not_ok "$desc: $line" ;;
		esac
	done <"$TMP/ui.out"
}
SCEN='
import json, sys
doc = json.load(open(sys.argv[1]))
def rects(n):
    for c in n["children"]:
        if isinstance(c, dict):
            if c["tag"] == "g" and any(isinstance(t, dict) and t["tag"] == "title" for t in c["children"]):
                t = [t for t in c["children"] if isinstance(t, dict) and t["tag"] == "title"][0]["children"][0]
                r = [t for t in c["children"] if isinstance(t, dict) and t["tag"] == "rect"][0]["attrs"]
                yield t.split("\n")[0], r
            yield from rects(c)
R = dict(rects(doc))
def at(prefix):
    return [r for t, r in R.items() if t.startswith(prefix)][0]
a = at("a (40")
url = "?x=%s&y=%s" % (a["x"], a["y"])
S = [
 {"name": "load", "ids": True, "unzoomShown": False, "expect": [
   {"title": "decompress_block (", "label": "decomp.."},
   {"title": "all (", "label": "all (100 samples, 100%)"}]},
 {"name": "zoom", "steps": [{"click": "a (40"}], "unzoomShown": True, "url": url, "expect": [
   {"title": "a (40", "full": 1, "parent": False},
   {"title": "c (10", "x": 895, "w": 295},
   {"title": "main (", "full": 1, "parent": True},
   {"title": "all (", "full": 1, "parent": True, "label": "all (100 samples, 100%)"},
   {"title": "other (", "hidden": True},
   {"title": "b (20", "hidden": True},
   {"title": "decompress_block (", "hidden": True}]},
 {"name": "zoom relabels", "steps": [{"click": "decompress_block ("}], "expect": [
   {"title": "decompress_block (", "full": 1, "label": "decompress_block"},
   {"title": "x (5", "full": 1, "label": "x"}]},
 {"name": "click a faded ancestor", "steps": [{"click": "c (10"}, {"click": "main ("}], "expect": [
   {"title": "main (", "full": 1, "parent": False},
   {"title": "a (40", "x": 10, "w": 726.2, "hidden": False},
   {"title": "other (", "hidden": True}]},
 {"name": "reset zoom", "steps": [{"click": "a (40"}, {"clickId": "unzoom"}], "url": "",
  "unzoomShown": False, "expect": [
   {"title": "a (40", "x": 10, "w": 472, "hidden": False, "parent": False},
   {"title": "other (", "x": 777, "w": 413, "hidden": False},
   {"title": "decompress_block (", "label": "decomp.."}]},
 {"name": "search", "steps": [{"prompt": "^b$"}], "matched": "Matched: 55.0%", "url": "?s=%5Eb%24",
  "expect": [{"title": "b (20", "searched": True}, {"title": "a (40", "searched": False}]},
 {"name": "clear search", "steps": [{"prompt": "^b$"}, {"prompt": None}], "url": "", "expect": [
   {"title": "b (20", "searched": False}]},
 {"name": "ctrl-F", "steps": [{"key": {"ctrlKey": True, "keyCode": 70}, "prompt": "^c$|^oth"}],
  "matched": "Matched: 45.0%", "prompts": 1},
 {"name": "ignore case", "steps": [{"clickId": "ignorecase"}, {"prompt": "^B$"}], "matched": "Matched: 55.0%"},
 {"name": "search while zoomed", "steps": [{"click": "a (40"}, {"prompt": "b"}], "matched": "Matched: 55.0%"},
 {"name": "shared link", "search": url + "&s=%5Eb%24", "matched": "Matched: 55.0%", "unzoomShown": True,
  "expect": [{"title": "a (40", "full": 1}, {"title": "other (", "hidden": True},
             {"title": "b (20", "searched": True, "hidden": True}]},
 {"name": "details line", "steps": [{"hover": "a (40", "details": "Function: a (40 samples, 40.00%); 95% interval"}]},
]
json.dump(S, sys.stdout)
'
$PLATEAU flamegraph -o "$TMP/ui.svg" "$TMP/ui.folded"
ui "ui" "$TMP/ui.svg" "$SCEN"
$PLATEAU flamegraph --inverted -o "$TMP/ui-inv.svg" "$TMP/ui.folded"
ui "ui --inverted" "$TMP/ui-inv.svg" "$SCEN"
$PLATEAU flamegraph --flamechart -o "$TMP/ui-chart.svg" "$TMP/uichart.folded"
# Amounts in mixed units (ms and µs): the matched share comes from the values (fg:v).
$PLATEAU flamegraph --countname nanoseconds --factor 100000 -o "$TMP/ui-ns.svg" "$TMP/ui.folded"
ui "ui in nanoseconds" "$TMP/ui-ns.svg" '
import json, sys
print(json.dumps([{"name": "details", "steps": [{"hover": "a (4.00 ms",
   "details": "Function: a (4.00 ms, 40.00%); 95% interval"}]},
 {"name": "root", "expect": [{"title": "all (", "label": "all (10.00 ms, 100%)"},
   {"title": "decompress_block (500.00 \u00b5s, 5.00%)"}]},
 {"name": "matched share from the values", "steps": [{"prompt": "^b$"}], "matched": "Matched: 55.0%"}]))
'
ui "ui --flamechart" "$TMP/ui-chart.svg" '
import json, sys
print(json.dumps([{"name": "zoom", "steps": [{"click": "a (2"}], "expect": [
  {"title": "a (2", "full": 1}, {"title": "a (1", "hidden": True}, {"title": "b (1", "hidden": True},
  {"title": "main (", "full": 1, "parent": True}]},
 {"name": "search", "steps": [{"prompt": "^a$"}], "matched": "Matched: 75.0%"}]))
'

# The same in headless chromium (Debian's, through tests/ui's playwright-core).
if [ ! -d "$TOP/tests/ui/node_modules/playwright-core" ]; then
	npm ci --prefix "$TOP/tests/ui" --no-audit --no-fund --loglevel=error >&2
fi
browser() { # DESC SVG
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 node "$CLI/flamegraph_browser.mjs" "$2" >"$TMP/br.out" 2>&1
	[ -s "$TMP/br.out" ] || echo "FAIL no output" >"$TMP/br.out"
	while IFS= read -r line; do
		case "$line" in
		PASS*) ok "$1: ${line#PASS }" ;;
		FAIL*) not_ok "$1: ${line#FAIL }" ;;
		*) not_ok "$1: $line" ;;
		esac
	done <"$TMP/br.out"
}
browser "chromium" "$TMP/ui.svg"
browser "chromium --inverted" "$TMP/ui-inv.svg"

# --colors chain: frames under a "--" separator are wakers (aqua), the rest blue.
printf 'a;b 1\n--;x;y 3\n' >"$TMP/chain.folded"
$PLATEAU flamegraph --colors chain "$TMP/chain.folded" >"$TMP/chain.svg"
check "chain: wakers are aqua" bash -c "grep -A1 '<title>y ' '$TMP/chain.svg' | grep -Eq 'fill=\"rgb\(([0-9]+),([0-9]+),\2\)\"'"
check "chain: off-CPU frames are blue" bash -c "grep -A1 '<title>b ' '$TMP/chain.svg' | grep -Eq 'fill=\"rgb\(([0-9]+),\1,2[0-9][0-9]\)\"'"

# plateau diff draws through the same renderer: significance from the counts.
F=$FIX/folded
$PLATEAU diff "$F/base.folded" "$F/new.folded" >"$TMP/diff.svg"
check "plateau diff writes a valid SVG" valid_xml "$TMP/diff.svg"
check_grep "a big real change is red" 'fill="rgb\(255,[0-9]+,[0-9]+\)"' "$TMP/diff.svg"
check_grep "... and says it is significant" 'self change significant \(p=' "$TMP/diff.svg"
printf 'app;main;work 50\napp;main;rare 2\n' >"$TMP/b.folded"
printf 'app;main;work 50\napp;main;rare 4\n' >"$TMP/n.folded"
$PLATEAU diff "$TMP/b.folded" "$TMP/n.folded" >"$TMP/noise.svg"
check_grep "a tiny change from few samples is neutral grey" '<title>rare \(4 samples, 7.41%; \+3.70%\)' "$TMP/noise.svg"
check "... drawn grey" bash -c "grep -A3 '<title>rare' '$TMP/noise.svg' | grep -q 'fill=\"rgb(215,215,215)\"'"
check_grep "... and flagged not significant" '^change not significant \(p=0.4' "$TMP/noise.svg"
check_grep "the footer gives both sample counts" '>base 52 samples, new 54 samples;' "$TMP/noise.svg"
$PLATEAU diff --negate "$F/base.folded" "$F/new.folded" >"$TMP/diffneg.svg"
check_grep "diff --negate swaps the hues" 'fill="rgb\([0-9]+,[0-9]+,255\)"' "$TMP/diffneg.svg"

# What a new user found (issue 17).
# The root frame is labelled with the total, before any zoom.
$PLATEAU flamegraph "$TMP/small.folded" >"$TMP/o.svg"
check_grep "the root is labelled with the total" '^<text x="13.00" y="[0-9.]+">all \(101 samples, 100%\)</text>$' "$TMP/o.svg"
$PLATEAU flamegraph --inverted --countname nanoseconds "$TMP/small.folded" >"$TMP/o.svg"
check_grep "... in an icicle graph, in the unit" '^<text x="13.00" y="[0-9.]+">all \(101 ns, 100%\)</text>$' "$TMP/o.svg"
# Values in time units and bytes exactly as the HTML viewer prints them
# (viewer.js's own function, run in node), halfway cases included.
python3 - >"$TMP/vals.folded" <<'PY'
import random
random.seed(17)
vals = {1, 5, 999, 1000, 1005, 1015, 1125, 1152, 2500, 3200, 9995, 999994, 999995, 1000000, 1005000,
        1125000, 1234567, 12345678901, 5005000000, 1023, 1024, 1536, 1048575, 1048576, 1073741824,
        1099511627776, 1125899906842624, 4503599627370496}
for e in range(16):
    for _ in range(8):
        vals.add(random.randint(10**e, 10**(e + 1)))
        vals.add(random.randint(1, 40) * 125 * 10**max(0, e - 3))  # halfway in 2 decimals
for v in sorted(vals):
    print("root;v%d %d" % (v, v))
PY
for unit in nanoseconds microseconds milliseconds seconds bytes; do
	$PLATEAU flamegraph --minwidth 0 --countname $unit "$TMP/vals.folded" >"$TMP/vals.svg"
	line=$(node "$CLI/flamegraph_units.js" "$TOP/src/render/assets/viewer.js" "$TMP/vals.svg" $unit)
	case "$line" in
	PASS*) ok "${line#PASS }" ;;
	*) not_ok "${line#FAIL }" ;;
	esac
done
# Unsymbolized frames are grey, classified as the HTML viewer's nameFlags are.
printf 'main;[unknown] 4\nmain;0x7f00beef 3\nmain;libc.so.6+0x9d2c0 2\nmain;a+b 1\nmain;0xcafe_[k] 1\nmain;deadbeef 1\n' >"$TMP/unsym.folded"
$PLATEAU flamegraph "$TMP/unsym.folded" >"$TMP/o.svg"
fill_of() { grep -F -A1 "<title>$1 (" "$TMP/o.svg" | grep -o 'fill="rgb([0-9,]*)"'; }
is_grey() { # FILL: rgb(v,v,v)
	[[ $1 =~ rgb\(([0-9]+),([0-9]+),([0-9]+)\) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] &&
		[ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[3]}" ]
}
hued() { [[ $1 == fill=* ]] && ! is_grey "$1"; }
for name in '[unknown]' 0x7f00beef libc.so.6+0x9d2c0 0xcafe; do
	check "unsymbolized $name is grey" is_grey "$(fill_of "$name")"
done
for name in a+b deadbeef main; do
	check "$name keeps its colour" hued "$(fill_of "$name")"
done
$PLATEAU flamegraph --format html "$TMP/unsym.folded" >"$TMP/unsym.html"
check "the HTML viewer flags the same names unsymbolized (F_UNSYM)" python3 -c '
import json, re, sys
d = json.loads(re.search(r"<script [^>]*id=\"plateau-data\"[^>]*>(.*?)</script>", open(sys.argv[1]).read(), re.S).group(1))
unsym = sorted(n for n, f in zip(d["names"], d["nameFlags"]) if f & 8)
sys.exit(unsym != sorted(["[unknown]", "0x7f00beef", "libc.so.6+0x9d2c0", "0xcafe_[k]"]))' "$TMP/unsym.html"
# A diff names its two sides, in the SVG and the HTML page.
mkdir -p "$TMP/d1" "$TMP/d2"
cp "$F/base.folded" "$TMP/d1/x.folded"
cp "$F/new.folded" "$TMP/d2/x.folded"
$PLATEAU diff "$F/base.folded" "$F/new.folded" >"$TMP/o.svg"
check_grep "the diff SVG is titled with its two inputs" '<text id="title"[^>]*>Diff: base.folded → new.folded</text>' "$TMP/o.svg"
$PLATEAU diff --format html "$F/base.folded" "$F/new.folded" >"$TMP/o.html"
check_grep "the diff page is titled with its two inputs" '<title>Diff: base.folded → new.folded</title>' "$TMP/o.html"
check_grep "... and so is its viewer's heading" '"title":"Diff: base.folded → new.folded"' "$TMP/o.html"
$PLATEAU diff --format html "$TMP/d1/x.folded" "$TMP/d2/x.folded" >"$TMP/o.html"
check_grep "inputs of one file name are told apart by their paths" "<title>Diff: $TMP/d1/x.folded → $TMP/d2/x.folded</title>" "$TMP/o.html"
$PLATEAU diff --title 'Release 2' "$F/base.folded" "$F/new.folded" >"$TMP/o.svg"
check_grep "--title still wins" '<text id="title"[^>]*>Release 2</text>' "$TMP/o.svg"

# --help lists every option.
$PLATEAU flamegraph --help >"$TMP/help.txt"
for opt in output format title subtitle width height minwidth fonttype fontsize fontwidth countname \
	nametype colors bgcolors hash random cp reverse inverted flamechart negate factor notes total \
	sample-type focus ignore prune; do
	check_grep "--help lists --$opt" "--$opt" "$TMP/help.txt"
done
# --flamechart: a repeated stack keeps each occurrence's own count (1, then 9)
printf 'a;b 1\na;c 5\na;b 9\n' >"$TMP/chart.folded"
$PLATEAU flamegraph --flamechart "$TMP/chart.folded" >"$TMP/chart.svg"
check_grep "flame chart: first b is 1 of 15" '^<title>b \(1 samples, 6\.67%\)' "$TMP/chart.svg"
check_grep "flame chart: second b is 9 of 15, drawn last" 'rect x="482\.0" y="37" width="708\.0"' "$TMP/chart.svg"

if [ "${FLAMEGRAPH_GOLDEN_WRITE:-}" = 1 ]; then
	mv "$FGOLD/MANIFEST.new" "$FGOLD/MANIFEST"
fi
done_testing
