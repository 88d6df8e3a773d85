#!/bin/bash
# Every command that writes a file (record, convert, flamegraph and its
# palette.map, diff, collapse, query) writes it whole or not at all: a
# failure leaves an existing target byte-identical and no empty or
# temporary file beside it; a success replaces it; /dev/null, a FIFO and
# standard output are written in place.  See doc/plateau-record.md.
. "$(dirname "$0")/lib.sh"
case $PLATEAU in /*) ;; *) PLATEAU=$PWD/$PLATEAU ;; esac
F=$FIX/folded
P=$FIX/perf
D=$TMP/out
OLD=$TMP/old
seq 1 5000 >"$OLD" # 23,893 bytes that no command writes

# fresh TARGET: an empty $D holding only TARGET, a copy of $OLD.
fresh() {
	rm -rf "$D"
	mkdir -p "$D"
	cp "$OLD" "$D/$1"
}

# alone NAME FILE...: $D holds exactly FILE... (no temporary file left).
alone() {
	local name=$1 got want
	shift
	got=$(cd "$D" && ls -A | sort | tr '\n' ' ')
	want=$( (($#)) && printf '%s\n' "$@" | sort | tr '\n' ' ')
	if [ "$got" = "$want" ]; then ok "$name: nothing else in the directory"; else
		not_ok "$name: the directory holds '$got', want '$want'"
	fi
}

# kept NAME TARGET COMMAND...: run COMMAND in $D beside an old TARGET; it
# fails, TARGET is byte-identical and nothing else is left.
kept() {
	local name=$1 target=$2 rc
	shift 2
	fresh "$target"
	(cd "$D" && "$@") >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then ok "$name: fails (exit $rc)"; else
		not_ok "$name: exit 0, want a failure"
	fi
	check_same "$name: the old $target is byte-identical" "$OLD" "$D/$target"
	alone "$name" "$target"
}

# replaced NAME TARGET COMMAND...: COMMAND succeeds and TARGET is its new output.
replaced() {
	local name=$1 target=$2 rc
	shift 2
	fresh "$target"
	(cd "$D" && "$@") >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	if [ $rc -eq 0 ] && [ -s "$D/$target" ] && ! cmp -s "$OLD" "$D/$target"; then
		ok "$name: exit 0 and $target replaced"
	else
		not_ok "$name: exit $rc, $target $(cmp -s "$OLD" "$D/$target" && echo unchanged)"
		head -n 5 "$TMP/$name.err" | sed 's/^/# /'
	fi
}

# small COMMAND...: COMMAND with files limited to 2 KiB (writes past it fail with EFBIG).
small() { (trap '' XFSZ && ulimit -f 2 && exec "$@"); }

printf 'main;work 0\n' >"$TMP/zero.folded"
# 400 functions: every output of it (and its palette.map) is over 2 KiB.
for i in $(seq 400); do
	printf 'app;main;function_%d 1\n' "$i" >>"$TMP/big.folded"
	printf 'app 1 [000] 1.%06d: 1 cpu-clock:\n\t1 function_%d+0x1 (/app)\n\t2 main+0x1 (/app)\n\n' \
		"$i" "$i" >>"$TMP/big.perf.txt"
done
sort "$F/base.folded" >"$TMP/base.sorted"
sort "$F/new.folded" >"$TMP/new.sorted"

# same DESC SORTED FILE: FILE holds SORTED's lines (in any order).
same() {
	sort "$3" >"$TMP/same.sorted"
	check_same "$1" "$2" "$TMP/same.sorted"
}

# --- failures leave the old file ------------------------------------------------
# The issue's case: the default output, a program that does not exist.
kept "record of a missing program" plateau.pb.gz "$PLATEAU" record -- /nonexistent/prog
kept "record --agent of a missing program" t.pb.gz \
	"$PLATEAU" record --agent -o t.pb.gz -- /nonexistent/prog
# No samples (nothing to draw) or a few (more than 2 KiB of SVG): a failure either way.
kept "record: the SVG cannot be written" t.svg small "$PLATEAU" record -q -o t.svg -- true
kept "convert: nothing to draw" t.svg "$PLATEAU" convert "$TMP/zero.folded" -o t.svg
kept "convert: a bad input" t.pb.gz "$PLATEAU" convert /nonexistent.folded -o t.pb.gz
kept "convert: the disk fills" t.folded small "$PLATEAU" convert "$TMP/big.folded" -o t.folded
kept "flamegraph: nothing to draw" t.svg "$PLATEAU" flamegraph "$TMP/zero.folded" -o t.svg
kept "flamegraph --format html: nothing to draw" t.html \
	"$PLATEAU" flamegraph --format html "$TMP/zero.folded" -o t.html
kept "flamegraph: the disk fills" t.svg small "$PLATEAU" flamegraph "$TMP/big.folded" -o t.svg
kept "diff: nothing to draw" t.svg "$PLATEAU" diff "$TMP/zero.folded" "$TMP/zero.folded" -o t.svg
kept "diff: the disk fills" t.svg small "$PLATEAU" diff "$F/base.folded" "$F/new.folded" -o t.svg
kept "collapse: not perf script" t.folded "$PLATEAU" collapse "$F/base.folded" -o t.folded
kept "collapse: the disk fills" t.folded small "$PLATEAU" collapse "$TMP/big.perf.txt" -o t.folded
kept "query: no server" t.folded "$PLATEAU" query --server http://127.0.0.1:1 -o t.folded x
# --cp rewrites palette.map in the working directory: a failure keeps it too.
kept "flamegraph --cp: palette.map kept when the graph fails" palette.map \
	"$PLATEAU" flamegraph --cp "$TMP/zero.folded" -o /dev/null
kept "flamegraph --cp: palette.map kept when the disk fills" palette.map \
	small "$PLATEAU" flamegraph --cp "$TMP/big.folded" -o /dev/null
check_grep "a write error says why" 'File too large' "$TMP/convert: the disk fills.err"
fresh t.folded
rm "$D/t.folded"
check_status "a target in a missing directory is refused" 1 \
	"$PLATEAU" convert "$F/base.folded" -o "$D/no/such/dir/t.folded"
check_grep "... naming it" "cannot write $D/no/such/dir/t.folded: No such file" "$TMP/status.err"
alone "missing directory"

# --- successes replace it -------------------------------------------------------
replaced "convert" t.folded "$PLATEAU" convert "$F/base.folded" -o t.folded
same "convert: the new t.folded is the profile" "$TMP/base.sorted" "$D/t.folded"
alone "convert" t.folded
replaced "flamegraph" t.svg "$PLATEAU" flamegraph "$F/base.folded" -o t.svg
check_grep "flamegraph: a whole SVG" '</svg>' "$D/t.svg"
alone "flamegraph" t.svg
replaced "diff" t.svg "$PLATEAU" diff "$F/base.folded" "$F/new.folded" -o t.svg
alone "diff" t.svg
replaced "collapse" t.folded "$PLATEAU" collapse "$P/edge_misc.perf.txt" -o t.folded
alone "collapse" t.folded
replaced "flamegraph --cp" palette.map "$PLATEAU" flamegraph --cp "$F/base.folded" -o t.svg
check_grep "flamegraph --cp: palette.map has the colours" '^[^ ]+->rgb\(' "$D/palette.map"
alone "flamegraph --cp" palette.map t.svg
replaced "record" plateau.pb.gz "$PLATEAU" record -q -- sh -c 'exit 0'
check "record: the new plateau.pb.gz reads back" "$PLATEAU" convert "$D/plateau.pb.gz" -o "$TMP/rec.folded"
alone "record" plateau.pb.gz

# Permissions: a new file gets 0666 less the umask; a replaced one keeps its mode.
fresh t.folded
rm "$D/t.folded"
(umask 027 && "$PLATEAU" convert "$F/base.folded" -o "$D/t.folded")
check "a new file's mode is 0666 less the umask (640 under 027)" \
	test "$(stat -c %a "$D/t.folded")" = 640
chmod 600 "$D/t.folded"
"$PLATEAU" convert "$F/new.folded" -o "$D/t.folded"
check "a replaced file keeps its mode (600)" test "$(stat -c %a "$D/t.folded")" = 600
same "... and has the new content" "$TMP/new.sorted" "$D/t.folded"
# A symbolic link stays a link; the file it names is replaced.
ln -s t.folded "$D/link.folded"
"$PLATEAU" convert "$F/base.folded" -o "$D/link.folded"
check "a link stays a link" test -L "$D/link.folded"
same "... and the file it names is replaced" "$TMP/base.sorted" "$D/t.folded"
alone "symbolic link" t.folded link.folded

# --- non-regular targets are written in place ----------------------------------------
check "convert -o /dev/null" "$PLATEAU" convert --format folded "$F/base.folded" -o /dev/null
check "flamegraph -o /dev/null" "$PLATEAU" flamegraph "$F/base.folded" -o /dev/null
check "diff -o /dev/null" "$PLATEAU" diff "$F/base.folded" "$F/new.folded" -o /dev/null
check "collapse -o /dev/null" "$PLATEAU" collapse "$P/edge_misc.perf.txt" -o /dev/null
check "record -o /dev/null" "$PLATEAU" record -q -o /dev/null -- sh -c 'exit 0'
check "/dev/null is still a character device" test -c /dev/null
"$PLATEAU" convert --format folded "$F/base.folded" -o - >"$TMP/stdout.folded"
same "convert -o - writes standard output" "$TMP/base.sorted" "$TMP/stdout.folded"
rm -rf "$D" && mkdir -p "$D" && mkfifo "$D/fifo"
cat "$D/fifo" >"$TMP/fifo.folded" &
reader=$!
"$PLATEAU" convert --format folded "$F/base.folded" -o "$D/fifo" 2>"$TMP/fifo.err"
rc=$?
check "convert -o FIFO (exit $rc)" test $rc -eq 0
# A convert that failed may never have opened the FIFO: end the reader.
[ $rc -eq 0 ] || kill $reader 2>/dev/null
wait $reader
same "... the reader gets the profile" "$TMP/base.sorted" "$TMP/fifo.folded"
check "... and the FIFO is still one" test -p "$D/fifo"
alone "fifo" fifo

# --- record stopped by a signal writes what it gathered; the old file stays until then -----
for sig in INT TERM; do
	fresh t.pb.gz
	(cd "$D" && exec "$PLATEAU" record -q -o t.pb.gz -- \
		sh -c 'touch ready; exec sleep 30') 2>"$TMP/sig.err" &
	pid=$!
	for _ in $(seq 200); do [ -e "$D/ready" ] && break; sleep 0.05; done
	check_same "record, SIG$sig: while recording, the old file is intact" "$OLD" "$D/t.pb.gz"
	kill -"$sig" "$pid" 2>/dev/null
	wait "$pid"
	rc=$?
	check "record, SIG$sig: exit 0 (got $rc)" test "$rc" -eq 0
	check "record, SIG$sig: the profile gathered so far replaced it" \
		"$PLATEAU" convert "$D/t.pb.gz" -o "$TMP/sig.folded"
	alone "record, SIG$sig" t.pb.gz ready
done

done_testing
