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
# warns NAME OPTION VIA ARGS...: `record ARGS -- true` names OPTION once, with VIA.
warns() {
	local name=$1 opt=$2 via=$3
	shift 3
	rec "$name" -q "$@" -o "$TMP/$name.folded" -- true
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
rec agent_all -q --agent -g dwarf --stack-size 8192 --user-only --mmap-pages 64 --min-block 1ms \
	-o "$TMP/agent_all.folded" -- true
lines agent_all 5 "^plateau: warning: (-g|--stack-size|--user-only|--mmap-pages|--min-block) has no effect with --agent"
rec agent_none -q --agent -F 199 -d 5 -o "$TMP/agent_none.folded" -- true
lines agent_none 0 "warning"

done_testing
