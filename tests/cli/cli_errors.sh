#!/bin/bash
# Usage errors, unreadable inputs and bad folded lines: one line saying
# what is wrong (plus "did you mean" lines), never the whole help; bad
# folded lines skipped with a warning naming them, or refused by --strict;
# several inputs merged by the commands that read them.
. "$(dirname "$0")/lib.sh"
F=$FIX/folded

# run ARGS...: plateau ARGS, stdout to out, stderr to err, status in rc.
run() {
	"$PLATEAU" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
}

# check_err DESC WANT_RC LINE...: the last run exited WANT_RC and its
# stderr is exactly these lines (so no help and no second error).
check_err() {
	local desc=$1 want=$2
	shift 2
	printf '%s\n' "$@" >"$TMP/want.err"
	if [ "$rc" -eq "$want" ] && cmp -s "$TMP/want.err" "$TMP/err"; then ok "$desc"; else
		not_ok "$desc (exit $rc, want $want; stderr differs)"
		diff -u "$TMP/want.err" "$TMP/err" | head -30 | sed 's/^/# /'
	fi
}

# --- (a) unknown commands and options ----------------------------------------
run flamegrph
check_err "a mistyped command: one line, the similar command, exit 2" 2 \
	"plateau: 'flamegrph' is not a plateau command. See 'plateau --help'." \
	"The most similar command is" "$(printf '\tflamegraph')"
run co
check_err "a command prefix names every command it starts" 2 \
	"plateau: 'co' is not a plateau command. See 'plateau --help'." \
	"The most similar commands are" "$(printf '\tcollapse')" "$(printf '\tconvert')"
run frobnicate
check_err "an unknown command like none: one line only" 2 \
	"plateau: 'frobnicate' is not a plateau command. See 'plateau --help'."
run help flamegrph
check_err "help of a mistyped command: the same" 2 \
	"plateau: 'flamegrph' is not a plateau command. See 'plateau --help'." \
	"The most similar command is" "$(printf '\tflamegraph')"
run --frobnicate
check_err "an unknown top-level option: one line" 2 \
	"plateau: unknown option '--frobnicate'. See 'plateau --help'."

run record --mmap-page 4 -- true
check_err "record --mmap-page: one line, did you mean --mmap-pages, exit 2" 2 \
	"plateau record: unknown option '--mmap-page'. See 'plateau record --help'." \
	"did you mean '--mmap-pages'?"
run top --line 5 "$F/base.folded"
check_err "top --line: did you mean --lines" 2 \
	"plateau top: unknown option '--line'. See 'plateau top --help'." \
	"did you mean '--lines'?"
run flamegraph --color red "$F/base.folded"
check_err "flamegraph --color: did you mean --colors" 2 \
	"plateau flamegraph: unknown option '--color'. See 'plateau flamegraph --help'." \
	"did you mean '--colors'?"
run top -lines 5 "$F/base.folded"
check_err "a long option with one dash: did you mean it with two" 2 \
	"plateau top: unknown option '-lines'. See 'plateau top --help'." \
	"did you mean '--lines'?"
run top -n many "$F/base.folded"
check_err "a bad option value: one line, no help" 2 \
	"plateau top: option --lines expects an integer, not 'many'. See 'plateau top --help'."
run top --sort
check_err "a missing option value: one line, no help" 2 \
	"plateau top: option '--sort' requires a value. See 'plateau top --help'."
# The option table's parser is shared: every command answers the same way.
for cmd in check collapse convert diff flamegraph push query record serve top; do
	run $cmd --no-such-option
	check_err "$cmd: an unknown option is one line, exit 2" 2 \
		"plateau $cmd: unknown option '--no-such-option'. See 'plateau $cmd --help'."
done
run convert "$F/base.folded"
check_err "convert without -o: one line" 2 \
	"plateau: error: convert needs -o OUT (see 'plateau convert --help')"
run diff "$F/base.folded"
check_err "diff with one profile: one line" 2 \
	"plateau: error: diff takes two profiles, BASE and NEW (see 'plateau diff --help')"
run check "$F/base.folded"
check_err "check without --baseline: one line" 2 \
	"plateau: error: check needs --baseline BASE (see 'plateau check --help')"

# --- (b) record's -e: usage line, --help and the manual agree --------------------
run record --help
events=$(sed -n 's/^usage: .*\[-e \([a-z|]*\)\].*/\1/p' "$TMP/out" | tr '|' ' ')
check "record's usage line names its events" test -n "$events"
eline=$(grep -E '^ *-e, --event' "$TMP/out")
for ev in $events; do
	check "record --help's -e line names '$ev'" grep -qw -- "$ev" <<<"$eline"
	check "doc/plateau-record.md's event table has '$ev'" \
		grep -q "^| \`$ev\`" "$TOP/doc/plateau-record.md"
done
run record -e bogus -o "$TMP/x.folded" -- true
for ev in $events; do
	check "record -e bogus lists '$ev' as accepted" grep -qw -- "$ev" "$TMP/err"
done

# --- (c) an input in no known format ----------------------------------------------
head -c 4000 "$PLATEAU" >"$TMP/elf.bin"
run top "$TMP/elf.bin"
check_err "binary that is not pprof: unrecognised format, naming the file" 1 \
	"plateau: error: $TMP/elf.bin: unrecognised format (expected folded, perf script or pprof)"
printf '# Notes\n\nSome prose, no counts.\n<html>\n' >"$TMP/notes.txt"
run top "$TMP/notes.txt"
check_err "text that is not folded: unrecognised format, no line warnings" 1 \
	"plateau: error: $TMP/notes.txt: unrecognised format (expected folded, perf script or pprof)"
run flamegraph --strict "$TMP/notes.txt"
check_err "the same under --strict" 1 \
	"plateau: error: $TMP/notes.txt: unrecognised format (expected folded, perf script or pprof)"

# --- (d) a bad line in a folded file -------------------------------------------------
{ head -n 2 "$F/base.folded"; echo "app;main;truncated by a crash"; tail -n +3 "$F/base.folded"; } >"$TMP/bad.folded"
WARN="plateau: warning: $TMP/bad.folded:3: line does not end with a sample count; line skipped"
"$PLATEAU" top "$F/base.folded" >"$TMP/top-good.txt"
run top "$TMP/bad.folded"
check_err "top: the bad line is skipped with one warning naming file:3" 0 "$WARN"
check_same "top: the other lines are read" "$TMP/top-good.txt" "$TMP/out"
run top --strict "$TMP/bad.folded"
check_err "top --strict refuses it, naming file:3" 1 \
	"plateau: error: $TMP/bad.folded:3: line does not end with a sample count"
run flamegraph -o "$TMP/bad.svg" "$TMP/bad.folded"
check_err "flamegraph: skipped with a warning" 0 "$WARN"
run convert -o "$TMP/bad.out.folded" "$TMP/bad.folded"
check_err "convert: skipped with a warning" 0 "$WARN"
check_same "convert: the good lines are kept" "$TMP/bad.out.folded" \
	<(LC_ALL=C sort "$F/base.folded")
run diff -o "$TMP/bad-diff.svg" "$F/base.folded" "$TMP/bad.folded"
check_err "diff: skipped with a warning" 0 "$WARN"
run check --baseline "$F/base.folded" "$TMP/bad.folded"
check_err "check: skipped with a warning" 0 "$WARN"
for cmd in flamegraph convert diff check; do
	case $cmd in
	flamegraph) args=(-o "$TMP/s.svg" "$TMP/bad.folded") ;;
	convert) args=(-o "$TMP/s.folded" "$TMP/bad.folded") ;;
	diff) args=(-o "$TMP/s.svg" "$F/base.folded" "$TMP/bad.folded") ;;
	check) args=(--baseline "$F/base.folded" "$TMP/bad.folded") ;;
	esac
	run $cmd --strict "${args[@]}"
	check_err "$cmd --strict refuses it, naming file:3" 1 \
		"plateau: error: $TMP/bad.folded:3: line does not end with a sample count"
done
# Many bad lines: the first 10 named, then their count.
{
	echo "a;b 5"
	for i in $(seq 1 25); do echo "junk line $i of a log"; done
} >"$TMP/junk.folded"
run top "$TMP/junk.folded"
check "25 bad lines: exit 0" test "$rc" -eq 0
check "25 bad lines: 11 warning lines" test "$(wc -l <"$TMP/err")" -eq 11
check_grep "the first named is line 2" "junk\.folded:2: line does not end" "$TMP/err"
check_grep "the last named is line 11" "junk\.folded:11: line does not end" "$TMP/err"
check "line 12 is not named" test "$(grep -c 'junk\.folded:12:' "$TMP/err")" -eq 0
check_grep "then the count of the rest" "junk\.folded: 15 more lines skipped \(25 in all\)$" "$TMP/err"

# --- (e) several inputs -----------------------------------------------------------------
run top "$F/base.folded" "$F/new.folded"
check "top of two files: exit 0" test "$rc" -eq 0
cp "$TMP/out" "$TMP/top2.txt"
check_grep "top a b counts both files' samples (1,000 + 1,304)" "from 2,304 samples" "$TMP/top2.txt"
cat "$F/base.folded" "$F/new.folded" | "$PLATEAU" top >"$TMP/top-cat.txt"
check_same "top a b equals top of their concatenation" "$TMP/top-cat.txt" "$TMP/top2.txt"
run convert -o "$TMP/merged.folded" "$F/base.folded" "$F/new.folded"
check "convert merges two inputs" test "$rc" -eq 0
"$PLATEAU" top "$TMP/merged.folded" >"$TMP/top-merged.txt"
check_same "top a b equals top of convert's merge" "$TMP/top-merged.txt" "$TMP/top2.txt"
run flamegraph -o "$TMP/two.svg" "$F/base.folded" "$F/new.folded"
check "flamegraph merges two inputs" test "$rc" -eq 0
P=$FIX/pprof
run top "$P/go_cpu.pb.gz" "$P/go_cpu.pb.gz"
check "pprof: top of two files: exit 0" test "$rc" -eq 0
cp "$TMP/out" "$TMP/top-pp2.txt"
run convert -o "$TMP/pp2.pb.gz" "$P/go_cpu.pb.gz" "$P/go_cpu.pb.gz"
check "pprof: convert merges two inputs" test "$rc" -eq 0
"$PLATEAU" top "$TMP/pp2.pb.gz" >"$TMP/top-pp-merged.txt"
check_same "pprof: top a b equals top of convert's merge" "$TMP/top-pp-merged.txt" "$TMP/top-pp2.txt"
check_grep "pprof: the merge has both files' samples" "from 120 samples" "$TMP/top-pp2.txt"
run top "$F/base.folded" "$P/go_heap.pb.gz"
check_err "different sample types: one error naming both files" 1 \
	"plateau: error: $F/base.folded and $P/go_heap.pb.gz: cannot merge profiles of different sample types (samples/count and alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes)"

done_testing
