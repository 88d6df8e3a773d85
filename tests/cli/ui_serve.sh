#!/bin/bash
# Browser tests of the web UI of plateau serve (tests/ui/ui.test.mjs in
# headless chromium), turned into TAP.  The server runs on 127.0.0.1 with
# real recorded profiles pushed at several times of the last hour, two
# label values for group by and a second version for the diff.  Needs node,
# npm and chromium (scripts/deps.sh): a missing one is a failure.
. "$(dirname "$0")/lib.sh"

UI=$TOP/tests/ui
GOLD=$FIX/perf/golden

have() { command -v "$1" >/dev/null 2>&1; }
if ! have node || ! have npm || ! have curl || ! [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
	not_ok "node, npm, curl and chromium are installed (run scripts/deps.sh)"
	done_testing
	exit 1
fi

serve_start ui --data "$TMP/store" || { not_ok "plateau serve started"; done_testing; exit 1; }

# push NAME FILE FROM: a folded push of FILE to series NAME, 10 s from FROM.
push() {
	curl -s -o "$TMP/push.out" -w '%{http_code}' --data-binary @"$2" \
		"$URL/ingest?name=$1&from=$3&until=$(($3 + 10))&format=folded"
}

# v1 (region eu): the demo recording every 100 s from 55 min ago; v2
# (region us): the same with match_length tripled, every 150 s in the last
# 28 min; another app once.  The timeline has shape, the diff a change.
NOW=$(date +%s)
sed 's/;match_length 189189189$/;match_length 567567567/' "$GOLD/demo.all.folded" >"$TMP/v2.folded"
cp "$GOLD/demo.all.folded" "$TMP/v1.folded"
bad=0
for i in $(seq 0 29); do
	[ "$(push 'shop.cpu%7Bregion%3Deu%2Cversion%3Dv1%7D' "$TMP/v1.folded" $((NOW - 3300 + i * 100)))" = 200 ] || bad=1
done
for i in $(seq 0 10); do
	[ "$(push 'shop.cpu%7Bregion%3Dus%2Cversion%3Dv2%7D' "$TMP/v2.folded" $((NOW - 1680 + i * 150)))" = 200 ] || bad=1
done
[ "$(push 'checkout.cpu%7Bregion%3Deu%7D' "$GOLD/nofp.all.folded" $((NOW - 1200)))" = 200 ] || bad=1
if [ $bad -eq 0 ]; then ok "42 folded pushes to plateau serve"; else
	not_ok "42 folded pushes to plateau serve"
	sed 's/^/# /' "$TMP/push.out"
fi

mkdir -p "$TMP/shots"
node_tap "$UI/ui.test.mjs" "$URL" "$TMP/shots" "$TMP/v1.folded" "$TMP/v2.folded"
# UI_SHOTS=DIR keeps the screenshots (doc/ui/*.png come from there).
if [ -n "${UI_SHOTS:-}" ]; then
	mkdir -p "$UI_SHOTS" && cp "$TMP"/shots/*.png "$UI_SHOTS"/
fi
done_testing
