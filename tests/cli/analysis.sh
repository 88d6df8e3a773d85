#!/bin/bash
# top, check, diff and convert on small folded fixtures, with golden output.
. "$(dirname "$0")/lib.sh"
F=$FIX/folded
G=$F/golden

# convert: folded round trip is sorted, merged, byte-stable.
printf 'b;c 2\na 1\nb;c 3\na;x 4\n' >"$TMP/in.folded"
printf 'a 1\na;x 4\nb;c 5\n' >"$TMP/want.folded"
check "convert folded to folded" $PLATEAU convert -o "$TMP/out.folded" "$TMP/in.folded"
check_same "folded output is sorted and merged" "$TMP/want.folded" "$TMP/out.folded"
$PLATEAU convert --format folded -o - "$F/base.folded" >"$TMP/base.out"
sort "$F/base.folded" >"$TMP/base.sorted"
check_same "convert -o - writes stdout" "$TMP/base.sorted" "$TMP/base.out"
check_status "convert without -o is a usage error" 2 $PLATEAU convert "$F/base.folded"
check_status "convert to an unknown format is a usage error" 2 $PLATEAU convert -o x.zzz "$F/base.folded"

# top
$PLATEAU top "$F/base.folded" >"$TMP/top.txt"
check_same "top by self (golden)" "$G/top-base.txt" "$TMP/top.txt"
$PLATEAU top --sort total -n 4 "$F/new.folded" >"$TMP/top-total.txt"
check_same "top --sort total -n 4 (golden)" "$G/top-new-total.txt" "$TMP/top-total.txt"
$PLATEAU top -n 0 "$F/base.folded" >"$TMP/top-all.txt"
check "top -n 0 shows every function" test "$(grep -c '%' "$TMP/top-all.txt")" -eq 12
check_grep "top states the 95% interval" '40\.00% \[ 37\.0- 43\.1\].*hash_block' "$TMP/top.txt"
check_status "top --sort bogus is a usage error" 2 $PLATEAU top --sort bogus "$F/base.folded"
check_status "top --by bogus is a usage error" 2 $PLATEAU top --by bogus "$F/base.folded"
check_status "top on a missing file fails" 1 $PLATEAU top "$TMP/nope.folded"
check_grep "the error names the file" "nope.folded: No such file" "$TMP/status.err"

# check: the CI gate
check_status "check flags a significant regression" 1 $PLATEAU check --baseline "$F/base.folded" "$F/new.folded"
check_grep "the report names the function" '^  FAIL .*sort_keys$' "$TMP/status.out"
check_status "check passes a within-noise change" 0 $PLATEAU check --baseline "$F/noise.folded" "$F/noise2.folded"
check_grep "growth over the limit but noise is called noise" '^  noise .*sort_keys$' "$TMP/status.out"
check_status "check passes when the growth is under --max-growth" 0 \
	$PLATEAU check --max-growth 25 --baseline "$F/base.folded" "$F/new.folded"
check_status "check --min-share ignores small functions" 0 \
	$PLATEAU check --min-share 90 --baseline "$F/base.folded" "$F/new.folded"
check_status "check --json" 1 $PLATEAU check --json --baseline "$F/base.folded" "$F/new.folded"
check "check --json is valid JSON with the verdict" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "regression" and d["regressions"] == 2
f = {x["name"]: x for x in d["functions"]}
assert f["sort_keys"]["regression"] and abs(f["sort_keys"]["growth_pp"] - 19.51) < 0.01
' "$TMP/status.out"
check_status "check without --baseline is a usage error" 2 $PLATEAU check "$F/new.folded"
check_status "check with two NEW files is a usage error" 2 $PLATEAU check --baseline "$F/base.folded" "$F/new.folded" "$F/new.folded"
check_status "check with an unreadable baseline fails" 1 $PLATEAU check --baseline "$TMP/none" "$F/new.folded"

# diff
$PLATEAU diff --format folded "$F/base.folded" "$F/new.folded" >"$TMP/diff.folded"
check_same "diff --format folded (golden)" "$G/diff.folded" "$TMP/diff.folded"
$PLATEAU diff -n --format folded "$F/base.folded" "$F/new.folded" >"$TMP/diffn.folded"
check_same "diff -n normalises base to new's total (golden)" "$G/diff-n.folded" "$TMP/diffn.folded"
$PLATEAU diff --format json "$F/base.folded" "$F/new.folded" >"$TMP/diff.json"
check "diff --format json flags significance" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in d["functions"]}
assert f["sort_keys"]["significant"] and f["sort_keys"]["delta_pp"] > 19
assert not f["tokenize"]["significant"]
s = {tuple(x["stack"]): x for x in d["stacks"]}
assert s[("app", "main", "compute", "sort_keys")]["new_total"] == 450
' "$TMP/diff.json"
$PLATEAU diff -o "$TMP/d.json" "$F/base.folded" "$F/new.folded"
check "diff -o X.json writes the JSON report" python3 -c 'import json,sys; assert "functions" in json.load(open(sys.argv[1]))' "$TMP/d.json"
check_status "diff to a format it cannot write is a usage error" 2 $PLATEAU diff --format pprof "$F/base.folded" "$F/new.folded"
check_status "diff with one file is a usage error" 2 $PLATEAU diff "$F/base.folded"

# bad input: one clear line naming file and line, exit 1, never a crash
# (--strict: without it a bad line among good ones is skipped, cli_errors.sh)
bad() {
	local desc=$1 pattern=$2
	check_status "$desc: exit 1" 1 $PLATEAU convert --strict -o "$TMP/x.folded" "$TMP/bad"
	check_grep "$desc: message" "$pattern" "$TMP/status.err"
}
printf 'a;b 1\na;b\n' >"$TMP/bad"
bad "line without count" "bad:2: line does not end with a sample count"
printf 'a;b -4\n' >"$TMP/bad"
bad "negative count" "bad:1: negative count '-4'"
printf 'a 18446744073709551616\n' >"$TMP/bad"
bad "overflowing count" "bad:1: count '18446744073709551616' overflows"
printf 'a 9223372036854775807\nb 9223372036854775807\n' >"$TMP/bad"
check "counts at the limit in different stacks are kept" $PLATEAU convert -o "$TMP/x.folded" "$TMP/bad"
check_same "... both, unchanged" "$TMP/bad" "$TMP/x.folded"
printf 'a 9223372036854775807\na 1\n' >"$TMP/bad"
bad "overflowing sum" "bad:2: sum of counts overflows"
: >"$TMP/bad"
bad "empty file" "bad: empty input"
printf '\n\n\n' >"$TMP/bad"
bad "blank lines only" "bad: no samples"
head -c 4096 /dev/urandom >"$TMP/bad"
check_status "binary garbage: exit 1" 1 $PLATEAU convert -o "$TMP/x.folded" "$TMP/bad"
check "binary garbage: one line" test "$(wc -l <"$TMP/status.err")" -eq 1
printf '\037\213\010\000garbage' >"$TMP/bad"
bad "truncated gzip" "bad: (truncated|corrupt) gzip"
python3 -c 'import sys; sys.stdout.write("a;" + "x" * (1 << 20) + ";b 3\n")' >"$TMP/big"
check "1 MiB frame name" $PLATEAU convert -o "$TMP/big.out" --format folded "$TMP/big"
check_same "1 MiB frame name round-trips" "$TMP/big" "$TMP/big.out"
python3 -c 'import sys; sys.stdout.write(";".join("f%d" % i for i in range(100000)) + " 7\n")' >"$TMP/deep"
check "100,000-frame stack" $PLATEAU convert --format folded -o "$TMP/deep.out" "$TMP/deep"
check_same "100,000-frame stack round-trips" "$TMP/deep" "$TMP/deep.out"
check "100,000-frame stack in top" $PLATEAU top "$TMP/deep"
$PLATEAU top "$TMP/deep" >"$TMP/deep.top"
check_grep "... its leaf holds all the self time" '100\.00%.* f99999$' "$TMP/deep.top"

# detection is by content: a control byte in a name does not make a folded file binary
printf 'a;we\001ird 3\nb 2\n' >"$TMP/ctl.pb.gz"
check "a folded file with a control byte, named .pb.gz, reads as folded" \
	$PLATEAU convert --format folded -o "$TMP/ctl.out" "$TMP/ctl.pb.gz"
check "... and keeps its counts" grep -q '^b 2$' "$TMP/ctl.out"

# perf script without call chains (right-aligned comms) is still perf script
check_status "perf script without call chains is recognised" 1 \
	$PLATEAU convert --format folded -o "$TMP/x.folded" "$FIX/perf/nocallchain.perf.txt"
check_grep "... and refused with the reason" "no perf script samples" "$TMP/status.err"
# a long `perf script --header` preamble does not hide the format
{ for i in $(seq 200); do echo "# cpu $i : some header line"; done; cat "$FIX/perf/mt_burn.perf.txt"; } >"$TMP/hdr.txt"
$PLATEAU convert --format folded -o "$TMP/hdr.folded" "$TMP/hdr.txt"
$PLATEAU collapse "$FIX/perf/mt_burn.perf.txt" >"$TMP/hdr.want"
check_same "200 comment lines before the samples" "$TMP/hdr.want" "$TMP/hdr.folded"

# perf script input keeps each frame's module (its dso)
$PLATEAU top --by module -n 0 "$FIX/perf/system_wide.perf.txt" >"$TMP/mod.txt"
check_grep "top --by module on perf script: kernel" '\[kernel\.kallsyms\]$' "$TMP/mod.txt"
check_grep "top --by module on perf script: libc" ' libc\.so\.6$' "$TMP/mod.txt"
$PLATEAU collapse "$FIX/perf/system_wide.perf.txt" >"$TMP/sw.collapse"
$PLATEAU convert --format folded -o "$TMP/sw.folded" "$FIX/perf/system_wide.perf.txt"
check_same "modules do not change the folded view" "$TMP/sw.collapse" "$TMP/sw.folded"

# --help lists every option of each command: the options are read from
# the command's option table in its source (src/cmd/CMD.c), not from the
# help itself, so an option missing from the help is caught.
options_of() { # CMD: the --long and -s names in src/cmd/CMD.c's option table
	python3 - "$TOP/src/cmd/$1.c" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
for short, long_ in re.findall(r"\bOPT_[A-Z]+\(\s*(0|'.')\s*,\s*\"([^\"]+)\"", src):
    print("--" + long_)
    if short != "0":
        print("-" + short.strip("'"))
PY
}
for cmd in top check diff convert; do
	$PLATEAU $cmd --help >"$TMP/help.txt"
	check_grep "$cmd --help prints usage" "^usage: plateau $cmd" "$TMP/help.txt"
	opts=$(options_of $cmd) missing=""
	for o in $opts; do
		grep -Eq -- "(^|[ ,])$o([ ,=]|$)" "$TMP/help.txt" || missing="$missing $o"
	done
	check "$cmd --help lists every option of its table ($(echo $opts | wc -w) found)${missing:+; missing:$missing}" \
		test -n "$opts" -a -z "$missing"
done
check_status "unknown command is a usage error" 2 $PLATEAU frobnicate
check_status "unknown option is a usage error" 2 $PLATEAU top --frobnicate "$F/base.folded"

done_testing
