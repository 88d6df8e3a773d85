#!/bin/bash
# Names of code no symbol names, the same whichever collector saw it
# (doc/symbolize.md, "Unnamed addresses" and "PLT stubs"): a stripped
# library (tests/fixtures/symnames/hotlib.c) whose static functions are
# sampled at many pcs and return addresses, and strlen called through the
# PLT of that library and of the program, recorded by `plateau record`
# and by the agent (libplateau.so).  Each unnamed function must be one
# frame, "libhot.so+0xSTART" in both; each PLT stub "strlen@plt" with the
# module it lives in.
. "$(dirname "$0")/lib.sh"
: "${BUILD:?set BUILD to the build directory}"
S=$FIX/symnames
LIB=$BUILD/libplateau.so
cd "$TMP" || exit 1
unset PLATEAU_MODES PLATEAU_HZ PLATEAU_OUTPUT PLATEAU_SERVER PLATEAU_TAGS PLATEAU_APP
if ldd "$LIB" | grep -q libasan; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
fi

# IBT PLTs (.plt.sec, as -fcf-protection builds them): a lazy .plt stub is one
# jmp, where timer samples do not land.  libhot.so's ELF addresses start at
# 0x200000, so an address's ELF vaddr is not its file offset (as in
# Debian's non-PIE python3.11): names must use the vaddr, as record does.
IBT="-fcf-protection=full -Wl,-z,ibtplt"
# shellcheck disable=SC2086
if cc -O2 -fPIC -shared -fno-builtin -fvisibility=hidden $IBT -Wl,-Ttext-segment=0x200000 -o libhot.so "$S/hotlib.c" &&
	strip libhot.so &&
	cc -O2 -g -fno-builtin $IBT -o symmain "$S/main.c" -L. -lhot -Wl,-rpath,"$TMP"; then
	ok "fixtures build (a stripped shared library and its program)"
else
	not_ok "fixtures build"
fi
check "libhot.so is stripped (no .symtab)" sh -c '! readelf -SW libhot.so | grep -q "\.symtab"'
check "libhot.so's text vaddrs are not its file offsets" sh -c \
	'readelf -lW libhot.so | awk "/LOAD/ && /R E/ { exit \$2 == \$3 }"'
check "both PLTs have a .plt.sec" sh -c 'readelf -SW libhot.so | grep -q "\.plt\.sec" && readelf -SW symmain | grep -q "\.plt\.sec"'

ARGS="20000 200000000"
folded() { "$PLATEAU" convert -o - --format folded --sample-type cpu "$1"; }
# stubs_hit FILE: some sample was taken in each of the two PLT stubs: a
# frame under hot_strlen and under main_strlen that is not libc's strlen
# (named right, strlen@plt; named wrong, anything else: the checks below
# tell which).  A stub is two instructions; in about one process in 30-60
# the timer never interrupts the CPU in one (an independent SIGPROF
# sampler in the same process saw 0 stub IPs exactly when the collectors
# did), so a run without one is repeated (up to 8 times): that is the sample the PLT
# checks need, not a retry of a failed check.
stubs_hit() {
	folded "$1" | awk '{ sub(/ [0-9.]+$/, ""); n = split($0, f, ";")
		for (i = 1; i < n; i++) if ((f[i] == "hot_strlen" || f[i] == "main_strlen") &&
			f[i + 1] !~ /^(__)?strlen(_[a-z0-9]+)?$/) hit[f[i]] = 1 }
		END { exit !(hit["hot_strlen"] && hit["main_strlen"]) }'
}
# collect NAME OUTPUT COMMAND...: run COMMAND up to 8 times, until both stubs are sampled
# (the ASan-built agent misses one more often: 2 runs in a row seen).
collect() {
	local name=$1 out=$2 try
	shift 2
	for try in 1 2 3 4 5 6 7 8; do
		if ! timeout 120 "$@" >/dev/null 2>"$TMP/$name.err"; then
			not_ok "$name runs: $(head -n 1 "$TMP/$name.err")"
			return
		fi
		stubs_hit "$out" && break
		echo "# $name: run $try took no sample in a PLT stub; again"
	done
	check "$name: samples in both PLT stubs (in $try of at most 8 runs)" stubs_hit "$out"
}
# shellcheck disable=SC2086
collect "plateau record" rec.pb.gz "$PLATEAU" record -q -F 999 -o rec.pb.gz -- ./symmain $ARGS
# shellcheck disable=SC2086
collect "the agent" ag.pb.gz env LD_PRELOAD="$LIB" PLATEAU_HZ=999 PLATEAU_OUTPUT="$TMP/ag.pb.gz" ./symmain $ARGS
# The distinct frames K levels below hot_run (K=1: two_sites, K=2: mix).
below() { # FILE K
	folded "$1" | awk -v k="$2" '{
		sub(/ [0-9.]+$/, ""); n = split($0, f, ";")
		for (i = 1; i <= n; i++) if (f[i] == "hot_run" && i + k <= n) print f[i + k] }' | sort -u
}
# "function module-path" for every pprof location named like ERE (go tool pprof -raw).
located() { # FILE ERE
	go tool pprof -raw "$1" 2>/dev/null | awk -v re="$2" '
		/^Mappings/ { m = 1; next }
		m && $1 ~ /^[0-9]+:$/ { id = $1; sub(/:/, "", id); path[id] = $3 }
		!m && $3 ~ /^M=/ && $4 ~ re { id = $3; sub(/M=/, "", id); want[$4 " " id] = 1 }
		END { for (k in want) { split(k, a, " "); print a[1], path[a[2]] } }' | sort -u
}

for c in rec ag; do
	name=$([ $c = rec ] && echo "plateau record" || echo "the agent")
	below $c.pb.gz 1 >"$c.site"
	below $c.pb.gz 2 >"$c.leaf"
	check_grep "$name: two_sites (stripped, two return addresses) is libhot.so+0xSTART" \
		'^libhot\.so\+0x[0-9a-f]+$' "$c.site"
	check "$name: two_sites is one frame, not one per return address ($(wc -l <"$c.site"))" \
		test "$(wc -l <"$c.site")" -eq 1
	check_grep "$name: mix (stripped, sampled at many pcs) is libhot.so+0xSTART" \
		'^libhot\.so\+0x[0-9a-f]+$' "$c.leaf"
	check "$name: mix is one frame, not one per pc ($(wc -l <"$c.leaf"))" \
		test "$(wc -l <"$c.leaf")" -eq 1
	located $c.pb.gz '^libhot\.so\+0x' >"$c.mods"
	check "$name: mix's and two_sites' module is libhot.so (and only it)" awk -v a="$(cat "$c.site")" \
		-v b="$(cat "$c.leaf")" '($1 == a || $1 == b) { n++; if ($2 !~ /\/libhot\.so$/) bad = 1 }
		END { exit bad || n != 2 }' "$c.mods"
	located $c.pb.gz '@plt$|^\[plt\]$' >"$c.plt"
	check_grep "$name: libhot.so's PLT stub is strlen@plt, module libhot.so" \
		'^strlen@plt .*/libhot\.so$' "$c.plt"
	check_grep "$name: the program's PLT stub is strlen@plt, module symmain" \
		'^strlen@plt .*/symmain$' "$c.plt"
	check "$name: strlen@plt sits under hot_strlen and under main_strlen" sh -c \
		"$PLATEAU convert -o - --format folded --sample-type cpu $c.pb.gz | grep -q ';hot_strlen;strlen@plt ' &&
		 $PLATEAU convert -o - --format folded --sample-type cpu $c.pb.gz | grep -q ';main_strlen;strlen@plt '"
done
check_same "both collectors give two_sites the same name" rec.site ag.site
check_same "both collectors give mix the same name" rec.leaf ag.leaf
# The name's offset is the function's start as the ELF file gives it.
start=$(sed 's/.*+0x//' rec.leaf)
check "mix's offset 0x$start starts an FDE of libhot.so's .eh_frame" sh -c \
	"readelf -wf libhot.so | grep -Eq 'pc=0*$start\.\.'"
done_testing
