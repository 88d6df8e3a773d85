#!/bin/bash
# plateau collapse against stackcollapse-perf.pl: the recorded goldens, the
# documented '(' difference, bad input, options, and --inline on a program
# recorded live.  Every comparison with the Perl script runs against its
# committed output (tests/fixtures/perf/README.md); with FLAMEGRAPH_DIR set
# to a FlameGraph checkout the live script is compared as well, and the
# --inline comparison (addr2line on a program built here) runs.
. "$(dirname "$0")/lib.sh"
P=$FIX/perf
G=$P/golden
FG=${FLAMEGRAPH_DIR:-}
SC=$FG/stackcollapse-perf.pl
have_perl=0
if [ -n "$FG" ]; then
	[ -f "$SC" ] || { echo "Bail out! FLAMEGRAPH_DIR=$FG has no stackcollapse-perf.pl"; exit 1; }
	have_perl=1
fi
# COLLAPSE_GOLDEN_WRITE=1 (tests/fixtures/perf/make-golden.sh) writes the
# goldens of section 6 from the live script.
WRITE=${COLLAPSE_GOLDEN_WRITE:-0}
[ "$WRITE" != 1 ] || [ $have_perl = 1 ] || { echo "Bail out! COLLAPSE_GOLDEN_WRITE=1 needs FLAMEGRAPH_DIR"; exit 1; }

# 1. Every golden of the MANIFEST, byte for byte, with --cut-paren.
n=0 bad=0
while read -r name opt args; do
	n=$((n + 1))
	# shellcheck disable=SC2086  # args is a word list
	if ! $PLATEAU collapse --cut-paren $args "$P/$name.perf.txt" 2>/dev/null |
		cmp -s - "$G/$name.$opt.folded"; then
		bad=$((bad + 1))
		echo "# differs: $name $opt ($args)"
	fi
done <"$G/MANIFEST"
check "all $n MANIFEST goldens match with --cut-paren" test "$bad" -eq 0 -a "$n" -gt 100

# 2. Without --cut-paren only names with '(' differ: cutting plateau's
# output the Perl way (not the comm, not Go's ".(...)." names, never at
# "(anonymous namespace)", before any _[k]/_[j]/_[i] annotation) and
# merging again gives the golden back.
cut_like_perl() {
	awk '
	function cut(f,    i, rest, tag) {
		tag = ""
		if (f ~ /_\[[kji]\]$/) {
			tag = substr(f, length(f) - 3)
			f = substr(f, 1, length(f) - 4)
		}
		if (f ~ /\.\(.*\)\./)
			return f tag
		for (i = 1; i <= length(f); i++) {
			if (substr(f, i, 1) != "(")
				continue
			rest = substr(f, i + 1, 20)
			if (rest != "anonymous namespace)")
				return substr(f, 1, i - 1) tag
		}
		return f tag
	}
	{
		count = $NF
		line = substr($0, 1, length($0) - length(count) - 1)
		n = split(line, fr, ";")
		out = fr[1]
		for (j = 2; j <= n; j++)
			out = out ";" cut(fr[j])
		sum[out] += count
	}
	END { for (k in sum) printf "%s %.0f\n", k, sum[k] }' "$1" | LC_ALL=C sort
}
n=0 bad=0 differ=0
while read -r name opt args; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	$PLATEAU collapse $args "$P/$name.perf.txt" >"$TMP/default.folded" 2>/dev/null
	cmp -s "$TMP/default.folded" "$G/$name.$opt.folded" || differ=$((differ + 1))
	cut_like_perl "$TMP/default.folded" >"$TMP/cut.folded"
	if ! cmp -s "$TMP/cut.folded" "$G/$name.$opt.folded"; then
		bad=$((bad + 1))
		echo "# default output differs beyond '(': $name $opt"
	fi
done <"$G/MANIFEST"
check "default output differs from Perl only in names with '(' ($n goldens)" test "$bad" -eq 0
check "names keep their parentheses by default ($differ goldens differ)" test "$differ" -gt 0
$PLATEAU collapse "$P/cxx_names.perf.txt" >"$TMP/cxx.folded"
check_grep "a C++ lambda stays whole" 'main::\{lambda\(int, int\)#1\}::operator\(\)' "$TMP/cxx.folded"

# 3. The reader behind flamegraph/convert/top: the same stacks, format detected.
n=0 bad=0
for f in "$P"/*.perf.txt; do
	case $f in */nocallchain.perf.txt) continue ;; esac # no call chains: no samples
	n=$((n + 1))
	$PLATEAU collapse "$f" >"$TMP/c.folded" 2>/dev/null
	if ! $PLATEAU convert -o "$TMP/x.folded" "$f" 2>"$TMP/convert.err" ||
		! cmp -s "$TMP/c.folded" "$TMP/x.folded"; then
		bad=$((bad + 1))
		echo "# convert differs: $f"
		head -3 "$TMP/convert.err" | sed 's/^/# /'
	fi
done
check "convert detects all $n perf script fixtures and writes the collapse output" test "$bad" -eq 0
$PLATEAU top -n 3 "$P/mt_burn.perf.txt" >"$TMP/top.txt"
check_grep "top reads perf script as cpu-clock nanoseconds" 'of cpu-clock/nanoseconds from [0-9]+ samples' "$TMP/top.txt"
$PLATEAU top -n 3 --sample-type samples "$P/multi_event.perf.txt" >"$TMP/top2.txt"
check_grep "the samples type counts samples" 'samples/count from 12 samples' "$TMP/top2.txt"

# 4. Options, inputs and exit status.
$PLATEAU collapse --help >"$TMP/help.txt"
check_status "--help exits 0" 0 $PLATEAU collapse --help
missing=""
for o in --pid --tid --inline --kernel --jit --all --addrs --event-filter --cut-paren --threads --output; do
	grep -q -- "$o" "$TMP/help.txt" || missing="$missing $o"
done
check "--help lists every option${missing:+ (missing:$missing)}" test -z "$missing"
check_status "an unknown option is a usage error" 2 $PLATEAU collapse --bogus "$P/demo.perf.txt"
check_status "a missing file fails" 1 $PLATEAU collapse "$TMP/nope.txt"
check_grep "the error names the file" "nope.txt: No such file" "$TMP/status.err"
$PLATEAU collapse <"$P/demo.perf.txt" >"$TMP/stdin.folded"
$PLATEAU collapse "$P/demo.perf.txt" >"$TMP/file.folded"
check_same "stdin gives the same output as a file" "$TMP/file.folded" "$TMP/stdin.folded"
gzip -c "$P/demo.perf.txt" >"$TMP/demo.perf.txt.gz"
$PLATEAU collapse "$TMP/demo.perf.txt.gz" >"$TMP/gz.folded"
check_same "gzip-compressed input is read" "$TMP/file.folded" "$TMP/gz.folded"
$PLATEAU collapse -o "$TMP/o.folded" "$P/demo.perf.txt"
check_same "-o writes the file" "$TMP/file.folded" "$TMP/o.folded"
for i in 1 2 3 4; do cat "$P/mt_burn.perf.txt" "$P/system_wide.perf.txt"; done >"$TMP/big.perf.txt"
$PLATEAU collapse -j 1 "$TMP/big.perf.txt" >"$TMP/j1.folded"
$PLATEAU collapse -j 4 "$TMP/big.perf.txt" >"$TMP/j4.folded"
check_same "4 parse threads give the 1-thread output" "$TMP/j1.folded" "$TMP/j4.folded"
$PLATEAU collapse "$P/multi_event.perf.txt" 2>"$TMP/ev.err" >/dev/null
check_grep "the event filter note names the event dropped" '^Filtering for events of type: cpu-clock$' "$TMP/ev.err"
$PLATEAU collapse "$P/edge_misc.perf.txt" 2>"$TMP/misc.err" >/dev/null
check_grep "unrecognized lines are reported with file and line" \
	'edge_misc.perf.txt:21: Unrecognized line: this line has no frame format' "$TMP/misc.err"

# 5. Bad input: clear errors or correct output, never a crash.
head -c 200000 "$PLATEAU" >"$TMP/garbage.bin"
check_status "binary garbage is refused" 1 $PLATEAU collapse "$TMP/garbage.bin"
check_grep "with a clear message" 'garbage.bin: binary data' "$TMP/status.err"
printf 'PERFILE2\0\0\0\0' >"$TMP/perf.data"
check_status "a perf.data file is refused" 1 $PLATEAU collapse "$TMP/perf.data"
check_grep "with a hint" "perf script -i" "$TMP/status.err"
awk 'BEGIN { srand(7); for (i = 0; i < 3000; i++) { s = ""; n = 1 + int(rand() * 40);
	for (j = 0; j < n; j++) s = s sprintf("%c", 32 + int(rand() * 95)); print s } }' >"$TMP/text-garbage.txt"
check_status "text that is not perf script fails" 1 $PLATEAU collapse "$TMP/text-garbage.txt"
check_grep "saying no samples were found" 'no samples found' "$TMP/status.err"
: >"$TMP/empty.txt"
check_status "an empty file is fine" 0 $PLATEAU collapse "$TMP/empty.txt"
check "and gives empty output" test ! -s "$TMP/status.out"
check_status "the profile reader refuses an empty file" 1 $PLATEAU top "$TMP/empty.txt"
{
	printf 'big 1 1.0: 3 cpu-clock:\n\t 1 '
	head -c 1048576 /dev/zero | tr '\0' 'x'
	printf ' (/x)\n\ndeep 2 1.0: 4 cpu-clock:\n'
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "\t %x f%d+0x1 (/x)\n", i, i % 7 }'
	printf '\ncut 3 1.0: 5 cpu-clock:\n\t 1 lost (/x)\n'
} >"$TMP/large.perf.txt"
check_status "a 1 MiB name and a 100,000-frame stack collapse" 0 \
	$PLATEAU collapse "$TMP/large.perf.txt"
cp "$TMP/status.out" "$TMP/large.folded"
check "the 1 MiB name is whole" test "$(head -1 "$TMP/large.folded" | wc -c)" -eq $((4 + 1048576 + 3))
check "the stack has 100,000 frames" test "$(sed -n 2p "$TMP/large.folded" | tr ';' '\n' | wc -l)" -eq 100001
check "the final sample without a blank line is dropped" test "$(wc -l <"$TMP/large.folded")" -eq 2

# 6. Against the Perl script: its outputs for these inputs are committed
# (tests/fixtures/perf/perl/, written by make-golden.sh) and always
# compared; with FLAMEGRAPH_DIR set the live script is compared too.
# perl_same DESC GOLDEN OUTPUT PERL-ARGS...: OUTPUT equals the golden (and
# the live script's output for PERL-ARGS).  In write mode the golden is
# the live output.
perl_same() {
	local desc=$1 golden=$2 out=$3 gz=0
	shift 3
	case $golden in *.gz) gz=1 ;; esac
	if [ $have_perl = 1 ]; then
		perl "$SC" "$@" >"$TMP/live.perl" 2>/dev/null
		if [ "$WRITE" = 1 ]; then
			if [ $gz = 1 ]; then gzip -n -9 -c "$TMP/live.perl" >"$golden"; else cp "$TMP/live.perl" "$golden"; fi
		fi
		cmp -s "$TMP/live.perl" "$out" || { echo "# $desc: differs from the live script"; return 1; }
	fi
	if [ $gz = 1 ]; then gzip -dc "$golden" >"$TMP/golden.perl"; else cp "$golden" "$TMP/golden.perl"; fi || return 1
	cmp -s "$TMP/golden.perl" "$out" || { echo "# $desc: differs from the golden $golden"; return 1; }
}
PG=$P/perl
[ "$WRITE" = 1 ] && mkdir -p "$PG/random"
live=${FG:+ and the live script}
check "large input: identical to the Perl script's output (golden$live)" \
	perl_same large "$PG/large.folded.gz" "$TMP/large.folded" "$TMP/large.perf.txt"
printf 'one 1 1.0: 5 cpu-clock:\n\t 1 a (/x)\n' >"$TMP/s1.txt"
printf 'two 2 1.0: 7 cpu-clock:\n\t 1 b (/x)\n\n' >"$TMP/s2.txt"
$PLATEAU collapse "$TMP/s1.txt" "$TMP/s2.txt" >"$TMP/s.folded"
check "several files are one stream, as Perl's <> reads them (golden$live)" \
	perl_same streams "$PG/streams.folded" "$TMP/s.folded" "$TMP/s1.txt" "$TMP/s2.txt"
# Random perf-script-like text, seeded (the inputs are committed too: awk's
# rand() differs between awk implementations): every option, byte for byte.
n=0 bad=0
for seed in $(seq 1 40); do
	r=$PG/random/$seed.perf.txt
	if [ "$WRITE" = 1 ]; then
		awk -v seed="$seed" -f - >"$r" <<'EOF'
function pick(s,    a, n) { n = split(s, a, "|"); return a[int(rand() * n) + 1] }
function many(s, k,    out, i, n) { n = int(rand() * (k + 1)); out = ""; for (i = 0; i < n; i++) out = out pick(s); return out }
BEGIN {
	srand(seed)
	H = "a|ab|x 1|java|V8 W|0|12|1/2|3//4|[000]|1.5:|:|cpu-clock:|cpu-clock:ppp:|faults:| |\t|  |9|007|00"
	F = "main|+0x1a|+0xAB|(|)| (|[unknown]|->|(anonymous namespace)|::|;|\"|'|Lorg/x;|.(|).|_[i]|_[j]|/tmp/perf-1.map|[kernel.kallsyms]|vmlinux|unknown| |x|1|(deleted)"
	n = int(rand() * 60) + 1
	for (i = 0; i < n; i++) {
		k = rand()
		if (k < 0.3) print many(H, 6)
		else if (k < 0.6) print pick("\t| |  |") pick("1|ab|7f|_|x y") many(" |\t", 2) many(F, 6) " (" many(F "|/x|[y]", 4) ")" many(")| |x", 2)
		else if (k < 0.8) print ""
		else if (k < 0.85) print "#" many(H, 3)
		else print many(H "|" F, 5)
	}
}
EOF
	fi
	o=0
	for opt in "" "--pid" "--tid --all" "--addrs --kernel" "--event-filter=faults"; do
		n=$((n + 1)) o=$((o + 1))
		# shellcheck disable=SC2086
		$PLATEAU collapse --cut-paren $opt "$r" >"$TMP/r.out" 2>/dev/null
		# shellcheck disable=SC2086
		if ! perl_same "seed $seed options '$opt'" "$PG/random/$seed.$o.folded" "$TMP/r.out" $opt "$r"; then
			bad=$((bad + 1))
		fi
	done
done
check "random perf-script-like text: identical to Perl ($n runs, golden$live)" test "$bad" -eq 0 -a "$n" -eq 200

# 7. --inline on a program compiled and recorded here.
inline_test() {
	cat >"$TMP/inl.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) double inl_hot(double x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
__attribute__((noinline)) double inl_outer(double x)
{
	return inl_hot(x) + 1;
}
int main(int argc, char **argv)
{
	double s = 0;
	long n = argc > 1 ? atol(argv[1]) : 150000;
	for (long i = 0; i < n; i++)
		s += inl_outer((double)i);
	printf("%f\n", s);
	return 0;
}
EOF
	cc -O2 -g -fno-omit-frame-pointer -o "$TMP/inl" "$TMP/inl.c" || return 1
	perf record -q -g -F 999 -o "$TMP/inl.data" "$TMP/inl" >/dev/null 2>&1 || return 2
	perf script -i "$TMP/inl.data" >"$TMP/inl.perf.txt" 2>/dev/null || return 2
	grep -q inl_outer "$TMP/inl.perf.txt" || return 2
	return 0
}
inline_test
rc=$?
if [ $rc = 0 ]; then
	$PLATEAU collapse --inline "$TMP/inl.perf.txt" >"$TMP/inl.folded"
	check_grep "--inline shows the inlined function under its caller" ';inl_outer;inl_hot( |;)' "$TMP/inl.folded"
	$PLATEAU collapse "$TMP/inl.perf.txt" >"$TMP/noinl.folded"
	check "without --inline it is not there (its caller is)" \
		sh -c "grep -q ';inl_outer' '$TMP/noinl.folded' && ! grep -q inl_hot '$TMP/noinl.folded'"
	# Only live: the input is recorded here, so there is no golden for it.
	if [ $have_perl = 1 ]; then
		perl "$SC" --inline "$TMP/inl.perf.txt" >"$TMP/inl.perl" 2>/dev/null
		check_same "--inline output is identical to the Perl script's (addr2line)" \
			"$TMP/inl.perl" "$TMP/inl.folded"
	fi
elif [ $rc = 1 ]; then
	not_ok "the --inline test program does not compile"
else
	skip "perf record does not work here: live --inline test"
fi

done_testing
