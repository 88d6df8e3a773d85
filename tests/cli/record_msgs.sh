#!/bin/bash
# What plateau record tells the user: the options the in-process agent
# ignores, the remedy when the kernel drops records (by kind of
# recording), the share of unnamed frames with its reason and fix, and
# whole sample counts.  Fixtures from tests/fixtures/record/ are compiled
# here with cc into $TMP/bin.  No timing assertions.
. "$(dirname "$0")/lib.sh"
. "$FIX/record/lib.sh"
R=$FIX/record
BIN=$TMP/bin
mkdir -p "$BIN"

# lines NAME N PATTERN: exactly N lines of $TMP/NAME.err match the ERE.
lines() {
	local got
	got=$(grep -Ec -- "$3" "$TMP/$1.err")
	if [ "$got" -eq "$2" ]; then ok "$1: $2 line(s) matching /$3/"; else
		not_ok "$1: $got lines match /$3/, want $2"
		head -n 8 "$TMP/$1.err" | sed 's/^/# /'
	fi
}

# --- the options the agent ignores: one warning each --------------------------
# A sanitized agent (the ASan suite) loads its runtime after the program's
# libraries: tell the runtime that is fine, for the agent's recordings only.
AGENT_ASAN=${ASAN_OPTIONS:-}
if ldd "$BUILD/libplateau.so" | grep -q libasan; then
	AGENT_ASAN="${ASAN_OPTIONS:+${ASAN_OPTIONS}:}verify_asan_link_order=0:detect_leaks=0"
fi
arec() { ASAN_OPTIONS=$AGENT_ASAN rec "$@"; }
# warns NAME OPTION VIA ARGS...: `record ARGS -- true` names OPTION once, with VIA.
warns() {
	local name=$1 opt=$2 via=$3
	shift 3
	arec "$name" -q "$@" -o "$TMP/$name.folded" -- true
	lines "$name" 1 "^plateau: warning: $opt has no effect with $via \(the in-process agent [a-z]"
	lines "$name" 1 "warning: .* has no effect"
}
warns agent_g -g --agent --agent -g fp
warns agent_stack --stack-size --agent --agent --stack-size 1024
warns agent_user --user-only --agent --agent --user-only
warns agent_pages --mmap-pages --agent --agent --mmap-pages 8
warns agent_minblock --min-block --agent --agent --min-block 1ms
warns alloc_minblock --min-block "-e alloc" -e alloc --min-block 1ms
warns lock_pages --mmap-pages "-e lock" -e lock --mmap-pages 8
arec agent_all -q --agent -g dwarf --stack-size 8192 --user-only --mmap-pages 64 --min-block 1ms \
	-o "$TMP/agent_all.folded" -- true
lines agent_all 5 "^plateau: warning: (-g|--stack-size|--user-only|--mmap-pages|--min-block) has no effect with --agent"
arec agent_none -q --agent -F 199 -d 5 -o "$TMP/agent_none.folded" -- true
lines agent_none 0 "warning"

# --- lost records: the remedy fits the ring that overflowed -----------------------
built=1
for f in "pingpong pingpong.c -O2 -g -fno-omit-frame-pointer" "burner burner.c -O2 -g -fno-omit-frame-pointer" \
	"stripped split.c -O2"; do
	set -- $f
	name=$1 src=$2
	shift 2
	cc -std=gnu11 "$@" -Wall -Wextra -Werror -pthread -I"$R" "$R/$src" -o "$BIN/$name" \
		2>"$TMP/build-$name.err" || {
		built=0
		not_ok "build fixture $name"
		sed 's/^/# /' "$TMP/build-$name.err" | head -5
	}
done
strip "$BIN/stripped" || built=0
[ $built -eq 1 ] && ok "fixtures build (pingpong, burner, stripped split)"

# lost NAME: the summary's count of lost records, which must be over 0 for
# the test to say anything (a ring of one page cannot hold the records).
lost() {
	local n
	n=$(sed -n 's/^plateau record: wrote .* samples in [0-9.]*s, \([0-9]*\) lost,.*/\1/p' "$TMP/$1.err")
	if [ "${n:-0}" -gt 0 ]; then ok "$1: records were lost ($n)"; else
		not_ok "$1: nothing was lost ('${n:-no summary}'): the remedy cannot be checked"
	fi
}
rec lost_offcpu -e offcpu -g fp --mmap-pages 1 -o "$TMP/lost_offcpu.folded" -- "$BIN/pingpong" 20000
lost lost_offcpu
lines lost_offcpu 1 '^plateau record: the kernel dropped [0-9]+ records \(ring full\), all context switches \(off-CPU\): raise --mmap-pages, or set --min-block'
lines lost_offcpu 0 'lower -F'
rec lost_minblock -e offcpu -g fp --mmap-pages 1 --min-block 10us -o "$TMP/lost_minblock.folded" -- "$BIN/pingpong" 20000
lost lost_minblock
lines lost_minblock 1 '^plateau record: the kernel dropped .*raise --mmap-pages, or raise --min-block'
rec lost_wall -e wall -g fp --mmap-pages 1 -o "$TMP/lost_wall.folded" -- "$BIN/pingpong" 20000
lost lost_wall
lines lost_wall 1 '^plateau record: the kernel dropped [0-9]+ records \(ring full\).* context switches \(off-CPU\): raise --mmap-pages.*--min-block'
rec lost_cpu -F 20000 -g fp --mmap-pages 1 -o "$TMP/lost_cpu.folded" -- "$BIN/burner" 1000 2
lost lost_cpu
lines lost_cpu 1 '^plateau record: the kernel dropped [0-9]+ records \(ring full\): lower -F or raise --mmap-pages$'
lines lost_cpu 0 'min-block'
"$PLATEAU" record --help >"$TMP/help.err" 2>&1
lines help 1 '^ +--mmap-pages N +ring buffer pages per CPU.*raise it when records are lost'

# --- unnamed frames: the share of frames, the reason and the fix ---------------------
# The folded stacks say which frames are unnamed (MODULE+0xOFFSET, and
# [unknown] for an address in no mapping): the summary's share of frames
# must be theirs, weighted by value, the comm aside.
rec stripped -F 999 -o "$TMP/stripped.folded" -- "$BIN/stripped" 30
want=$(awk '{ v = $NF; n = split($1, f, ";")
	for (i = 2; i <= n; i++) { all += v; if (f[i] ~ /\+0x[0-9a-f]+$/ || f[i] == "[unknown]") un += v } }
	END { if (all) printf "%.1f", 100 * un / all }' "$TMP/stripped.folded")
got=$(sed -n 's/^plateau record: wrote .*unnamed frames: \([0-9.]*\)% of frames.*/\1/p' "$TMP/stripped.err")
samples=$(sed -n 's/^plateau record: wrote .*, in \([0-9.]*\)% of samples.*/\1/p' "$TMP/stripped.err")
echo "# stripped: $got% of frames unnamed (the folded stacks say $want%), in $samples% of samples"
check "stripped: the summary's share of frames ($got%) is the folded stacks' ($want%)" \
	awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(a != "" && b != "" && d < 0.15 && d > -0.15) }'
check "stripped: fewer frames than samples are unnamed ($got% < $samples%)" \
	awk -v a="$got" -v b="$samples" 'BEGIN { exit !(a + 0 < b + 0 && a + 0 < 100) }'
lines stripped 1 '^plateau record: stripped \([0-9.]+% of frames\): the file has no \.symtab and no debug file was found: install its debug symbols \(Debian: the -dbgsym package'

# --- sample counts are whole -------------------------------------------------
# Off-CPU nanoseconds in a folded file: the number of samples behind them is an estimate.
"$PLATEAU" top -n 1 "$TMP/lost_offcpu.folded" >"$TMP/top_est.err" 2>&1
lines top_est 1 '^Total .* from about [0-9,]+ samples;'
"$PLATEAU" top -n 1 "$FIX/folded/base.folded" >"$TMP/top_exact.err" 2>&1
lines top_exact 1 '^Total 1,000 of samples/count from 1,000 samples;'
for f in lost_offcpu lost_wall lost_cpu stripped top_est top_exact; do
	lines "$f" 0 '[0-9]\.[0-9]+ samples'
done

done_testing
