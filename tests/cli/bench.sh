#!/bin/bash
# bench/compare.py prints only what it measured: inferno's times when
# INFERNO_DIR holds its binaries (here, stand-ins that run plateau), else
# "not measured", never a figure copied from elsewhere.  Tiny inputs, one
# run each: no timing is asserted.
. "$(dirname "$0")/lib.sh"
P=$FIX/perf
PY=$(python3 -c 'import sys; print(sys.executable)') # the interpreter itself, not a shim
COMPARE=${COMPARE:-$TOP/bench/compare.py}
mkdir -p "$TMP/nopath"
# compare OUT [ENV...]: run compare.py on the demo fixture, output to $TMP/OUT.
# PATH is an empty directory: no inferno installed on this machine is found.
compare() {
	local out=$1
	shift
	env -u FLAMEGRAPH_DIR -u INFERNO_DIR PATH="$TMP/nopath" RUNS=1 BENCH_OUT="$TMP/bench" "$@" \
		"$PY" "$COMPARE" "$PLATEAU" "$P/demo.perf.txt" "$P/golden/demo.default.folded" \
		>"$TMP/$out" 2>&1
}

compare none.txt
check "compare.py runs without the peers" grep -q '^  plateau collapse ' "$TMP/none.txt"
check_grep "without INFERNO_DIR: inferno-collapse-perf not measured" \
	'^  inferno-collapse-perf: not measured' "$TMP/none.txt"
check_grep "... and inferno-flamegraph not measured" '^  inferno-flamegraph: not measured' "$TMP/none.txt"
check "... and no figure for inferno at all (none copied)" \
	sh -c "! grep -E 'inferno[^:]*[0-9]+(\\.[0-9]+)? (s|MiB)|REFERENCE' '$TMP/none.txt'"

mkdir -p "$TMP/empty"
compare empty.txt INFERNO_DIR="$TMP/empty"
check_grep "INFERNO_DIR without the binaries: not measured, naming the directory" \
	"^  inferno-collapse-perf: not measured \\(INFERNO_DIR=$TMP/empty has no executable" "$TMP/empty.txt"

# Stand-ins with inferno's names: the timing lines come from running them.
mkdir -p "$TMP/inferno"
printf '#!/bin/sh\necho ran >>"%s/collapse.ran"\nexec "%s" collapse --cut-paren "$@"\n' "$TMP" "$PLATEAU" \
	>"$TMP/inferno/inferno-collapse-perf"
printf '#!/bin/sh\necho ran >>"%s/flamegraph.ran"\nexec "%s" flamegraph "$@"\n' "$TMP" "$PLATEAU" \
	>"$TMP/inferno/inferno-flamegraph"
chmod +x "$TMP/inferno/"*
compare inferno.txt INFERNO_DIR="$TMP/inferno"
check "with INFERNO_DIR: inferno-collapse-perf was run" test -s "$TMP/collapse.ran"
check_grep "... and its measured time printed" '^  inferno-collapse-perf +[0-9]+\.[0-9]{3} s ' "$TMP/inferno.txt"
check_grep "... with the ratio" '=> collapse: plateau [0-9.]+x faster than inferno-collapse-perf' "$TMP/inferno.txt"
check "with INFERNO_DIR: inferno-flamegraph was run" test -s "$TMP/flamegraph.ran"
check_grep "... and its measured time printed" '^  inferno-flamegraph +[0-9]+\.[0-9]{3} s ' "$TMP/inferno.txt"
check "... and nothing says not measured" sh -c "! grep -q 'not measured' '$TMP/inferno.txt'"

done_testing
