#!/bin/bash
# Browser tests of the HTML viewer (tests/ui/viewer.test.mjs in headless
# chromium), turned into TAP.  Needs node, npm and chromium: scripts/deps.sh
# installs them, so a missing one is a failure, not a skip.
. "$(dirname "$0")/lib.sh"

UI=$TOP/tests/ui
GOLD=$FIX/perf/golden

have() { command -v "$1" >/dev/null 2>&1; }
if ! have node || ! have npm || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
	not_ok "node, npm and chromium are installed (run scripts/deps.sh)"
	done_testing
	exit 1
fi

# The pages under test and the folded data they come from.
cat "$GOLD"/nofp.all.folded "$GOLD"/mt_burn.all.folded "$GOLD"/demo.all.folded \
	"$GOLD"/cxx_names.all.folded >"$TMP/small.folded"
check "small page written" "$PLATEAU" convert -o "$TMP/small.html" "$TMP/small.folded"
check "diff page written" "$PLATEAU" diff --format html -o "$TMP/diff.html" \
	"$FIX/folded/base.folded" "$FIX/folded/new.folded"
{
	# Padding first: control bytes near the start would make it look like protobuf.
	for i in $(seq 1 400); do echo "pad;filler_$i 1"; done
	printf 'a;</script><img src=x onerror=alert(1)>;"q'\''uote 5\n'
	printf 'a;bad\377\376utf8;ctl\001\033x 3\n'
} >"$TMP/hostile.folded"
check "hostile page written" "$PLATEAU" convert -o "$TMP/hostile.html" "$TMP/hostile.folded"
# The views (names, sandwich, left-heavy, keys): C++ and Rust names, recursion.
cat >"$TMP/views.folded" <<'EOF'
main;std::vector<int, std::allocator<int> >::push_back(int const&);operator new(unsigned long) 30
main;std::vector<int, std::allocator<int> >::push_back(int const&) 10
main;<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop::h0123456789abcdef;free 20
main;work;work;leaf 25
main;work;leaf 5
main;other;work;leaf 10
main;other;zeta 7
main;alpha 3
EOF
check "views page written" "$PLATEAU" convert -o "$TMP/views.html" "$TMP/views.folded"
# A flame chart (--flamechart keeps the input order): "run" and "init" come back.
printf '%s\n' 'main;init;load 5' 'main;run;step 3' 'main;init 2' 'main;run;step 4' 'main;run;io 2' >"$TMP/chart.folded"
check "flame chart page written" "$PLATEAU" flamegraph --format html --flamechart -o "$TMP/chart.html" "$TMP/chart.folded"
python3 "$UI/gen-profile.py" 200000 >"$TMP/big.folded"
check "200,000-frame page written" "$PLATEAU" convert -o "$TMP/big.html" "$TMP/big.folded"

# Screenshots of each view, to look at: build/ui-shots.
export SHOTS="${SHOTS:-${BUILD:-$TOP/build}/ui-shots}"
node_tap "$UI/viewer.test.mjs" "$TMP"
done_testing
