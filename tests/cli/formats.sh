#!/bin/bash
# Conversions among folded, pprof and speedscope through `plateau convert`,
# checked against go tool pprof's reading of the files and against
# speedscope's published JSON schema; format detection from content;
# --sample-type; bad input.
. "$(dirname "$0")/lib.sh"

PF=$FIX/pprof
SCHEMA=$FIX/speedscope-schema.json
FOLDED=$FIX/folded/base.folded
command -v go >/dev/null || { echo "Bail out! go not found: run scripts/deps.sh"; exit 1; }
python3 -c 'import jsonschema' 2>/dev/null ||
	{ echo "Bail out! python3-jsonschema missing: run scripts/deps.sh"; exit 1; }

conv() { "$PLATEAU" convert "$@"; }

# A folded file with awkward content: spaces, UTF-8, decimals-free counts,
# a root-only count, a 1,000-frame stack.
make_awkward() {
	{
		echo "main;do work;caf$(printf '\xc3\xa9') 3"
		echo "main;[unknown];0x7f00 2"
		echo "main;std::vector<int>::push_back(int const&) 5"
		echo " 4"
		seq 1 1000 | sed 's/^/f/' | paste -sd';' | sed 's/$/ 7/'
	} >"$TMP/awkward.folded"
}
make_awkward

# --- folded -> pprof -> folded ---------------------------------------------
for f in "$FOLDED" "$TMP/awkward.folded" "$FIX"/perf/golden/demo.all.folded \
	"$FIX"/perf/golden/cxx_names.default.folded; do
	[ -f "$f" ] || continue
	n=$(basename "$f")
	conv -o "$TMP/direct.folded" "$f"
	check "folded -> pprof: $n" conv -o "$TMP/rt.pb.gz" "$f"
	check "go tool pprof -top loads plateau's pprof of $n" go tool pprof -top "$TMP/rt.pb.gz"
	conv -o "$TMP/rt.folded" "$TMP/rt.pb.gz"
	check_same "folded -> pprof -> folded is identical: $n" "$TMP/direct.folded" "$TMP/rt.folded"
done

printf 'a;b 1.5\na;c 0.25\nd 2\n' >"$TMP/dec.folded"
conv -o "$TMP/dec.pb.gz" "$TMP/dec.folded"
conv -o "$TMP/dec.rt.folded" "$TMP/dec.pb.gz"
printf 'a;b 1.5\na;c 0.25\nd 2\n' >"$TMP/dec.want"
check_same "decimal counts survive a pprof round trip" "$TMP/dec.want" "$TMP/dec.rt.folded"

printf 'a;b 3 5\na;c 0 2\nd 4 0\n' >"$TMP/diff.folded"
conv -o "$TMP/diff.pb.gz" "$TMP/diff.folded"
conv -o "$TMP/diff.rt.folded" "$TMP/diff.pb.gz"
check_same "differential folded survives a pprof round trip" "$TMP/diff.folded" "$TMP/diff.rt.folded"

# go tool pprof's numbers for a folded file are the folded file's.
conv -o "$TMP/base.pb.gz" "$FOLDED"
go tool pprof -top -nodecount=100 "$TMP/base.pb.gz" 2>/dev/null >"$TMP/top.txt"
check_grep "go tool pprof -top: total of base.folded" \
	'^Showing nodes accounting for 1000, 100% of 1000 total' "$TMP/top.txt"
check_grep "go tool pprof -top: hash_block's self and total" \
	'^ +400 +40\.00% .* 600 +60\.00% +hash_block$' "$TMP/top.txt"

# --- genuine Go profiles against go tool pprof's reading ------------------
for g in "$PF"/golden/*.folded; do
	b=$(basename "$g" .folded)
	n=${b%%.*} t=${b#*.}
	conv -o "$TMP/$b.folded" --format folded --sample-type "$t" "$PF/$n.pb.gz"
	check_same "pprof -> folded matches go tool pprof -raw: $n $t" "$g" "$TMP/$b.folded"
done

for n in go_cpu go_heap; do
	check "pprof -> pprof: $n" conv -o "$TMP/$n.rt.pb.gz" "$PF/$n.pb.gz"
	check "go tool pprof -top loads the rewritten $n" go tool pprof -top "$TMP/$n.rt.pb.gz"
	types=$(go tool pprof -raw "$PF/$n.pb.gz" 2>/dev/null | sed -n '/^Samples:$/{n;p;q}' |
		sed 's/\[dflt\]//g; s|/[^ ]*||g')
	for t in $types; do
		go tool pprof -traces -sample_index="$t" "$PF/$n.pb.gz" >"$TMP/a.traces" 2>/dev/null
		go tool pprof -traces -sample_index="$t" "$TMP/$n.rt.pb.gz" >"$TMP/b.traces" 2>/dev/null
		check_same "pprof -> pprof keeps stacks, inline marks, labels, values: $n $t" \
			"$TMP/a.traces" "$TMP/b.traces"
	done
done
go tool pprof -raw "$PF/go_cpu.pb.gz" 2>/dev/null | sed -n '/^PeriodType/,/^Samples/p' >"$TMP/a.hdr"
go tool pprof -raw "$TMP/go_cpu.rt.pb.gz" 2>/dev/null | sed -n '/^PeriodType/,/^Samples/p' >"$TMP/b.hdr"
check_same "pprof -> pprof keeps period, time and duration" "$TMP/a.hdr" "$TMP/b.hdr"
go tool pprof -traces "$PF/go_cpu.pb.gz" 2>/dev/null | grep -c '(inline)' >"$TMP/n.inline"
go tool pprof -traces "$TMP/go_cpu.rt.pb.gz" 2>/dev/null | grep -c '(inline)' >"$TMP/m.inline"
check "the fixture has inlined frames" test "$(cat "$TMP/n.inline")" -gt 0
check_same "inlined frames stay inlined" "$TMP/n.inline" "$TMP/m.inline"

gzip -dc "$PF/go_cpu.pb.gz" >"$TMP/raw.pb"
conv -o "$TMP/raw.folded" --format folded --sample-type cpu "$TMP/raw.pb"
check_same "raw (uncompressed) profile.proto reads like gzip" "$PF/golden/go_cpu.cpu.folded" \
	"$TMP/raw.folded"

# --- default type and --sample-type ---------------------------------------
conv -o "$TMP/default.folded" --format folded "$PF/go_heap.pb.gz"
check_same "default sample type is the last (inuse_space), as go tool pprof" \
	"$PF/golden/go_heap.inuse_space.folded" "$TMP/default.folded"
conv -o "$TMP/heap_alloc.pb.gz" --sample-type alloc_space "$PF/go_heap.pb.gz"
go tool pprof -top "$TMP/heap_alloc.pb.gz" 2>/dev/null >"$TMP/top.txt"
check_grep "--sample-type becomes pprof's default_sample_type" '^Type: alloc_space$' "$TMP/top.txt"
conv -o "$TMP/again.folded" --format folded "$TMP/heap_alloc.pb.gz"
check_same "default_sample_type is honoured on reading" "$PF/golden/go_heap.alloc_space.folded" \
	"$TMP/again.folded"
check_status "--sample-type with a wrong name exits 1" 1 \
	conv -o "$TMP/x.folded" --sample-type nope "$PF/go_heap.pb.gz"
check_grep "the error names the available types" \
	"no sample type 'nope' \(it has: alloc_objects, alloc_space, inuse_objects, inuse_space\)" \
	"$TMP/status.err"

# --- detection from content, not name -------------------------------------
cp "$PF/go_cpu.pb.gz" "$TMP/profile.txt"
conv -o "$TMP/d1.folded" --format folded --sample-type cpu "$TMP/profile.txt"
check_same "pprof bytes in a .txt file are read as pprof" "$PF/golden/go_cpu.cpu.folded" \
	"$TMP/d1.folded"
cp "$TMP/raw.pb" "$TMP/profile.folded"
conv -o "$TMP/d2.folded" --format folded --sample-type cpu "$TMP/profile.folded"
check_same "raw pprof named .folded is read as pprof" "$PF/golden/go_cpu.cpu.folded" \
	"$TMP/d2.folded"
cp "$FOLDED" "$TMP/stacks.pb.gz"
conv -o "$TMP/d3.folded" "$TMP/stacks.pb.gz"
conv -o "$TMP/d4.folded" "$FOLDED"
check_same "folded text named .pb.gz is read as folded" "$TMP/d4.folded" "$TMP/d3.folded"
gzip -c "$FOLDED" >"$TMP/stacks.gz"
conv -o "$TMP/d5.folded" --format folded "$TMP/stacks.gz"
check_same "gzip-compressed folded is read as folded" "$TMP/d4.folded" "$TMP/d5.folded"

# --- speedscope -----------------------------------------------------------
cat >"$TMP/ss.py" <<'EOF'
# usage: ss.py SCHEMA FILE.json [FOLDED TYPE_INDEX]: validate against the
# schema, check the structure, and (given FOLDED) that the profile at
# TYPE_INDEX folds back to FOLDED's lines.
import json, sys
import jsonschema

schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2], encoding="utf-8"))
jsonschema.validate(doc, schema)
frames = doc["shared"]["frames"]
assert doc["exporter"] == "plateau 0.1.0", doc["exporter"]
assert 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
for p in doc["profiles"]:
    assert p["type"] == "sampled"
    assert len(p["samples"]) == len(p["weights"]), p["name"]
    assert all(w != 0 for w in p["weights"]), "zero weight kept"
    assert abs(sum(p["weights"]) - p["endValue"]) < 1e-6, p["name"]
    for s in p["samples"]:
        assert all(0 <= i < len(frames) for i in s), "frame index out of range"
if len(sys.argv) > 3:
    p = doc["profiles"][int(sys.argv[4])]
    sums = {}
    for s, w in zip(p["samples"], p["weights"]):
        k = ";".join(frames[i]["name"] for i in s)
        sums[k] = sums.get(k, 0) + w
    want = {}
    for line in open(sys.argv[3], encoding="utf-8"):
        k, _, v = line.rstrip("\n").rpartition(" ")
        want[k] = want.get(k, 0) + float(v)
    got = {k: v for k, v in sums.items() if v}
    assert got == want, (sorted(got.items())[:5], sorted(want.items())[:5])
print("ok")
EOF
conv -o "$TMP/base.json" "$FOLDED"
check "folded -> speedscope validates against speedscope's schema" \
	python3 "$TMP/ss.py" "$SCHEMA" "$TMP/base.json" "$TMP/d4.folded" 0
conv -o "$TMP/awkward.json" "$TMP/awkward.folded"
conv -o "$TMP/awkward.direct" --format folded "$TMP/awkward.folded"
check "awkward folded -> speedscope: valid, same stacks" \
	python3 "$TMP/ss.py" "$SCHEMA" "$TMP/awkward.json" "$TMP/awkward.direct" 0
for g in "$PF"/golden/*.folded; do
	b=$(basename "$g" .folded)
	n=${b%%.*} t=${b#*.}
	conv -o "$TMP/$n.json" "$PF/$n.pb.gz"
	i=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print([p['name'] for p in d['profiles']].index(sys.argv[2]))" "$TMP/$n.json" "$t")
	check "pprof -> speedscope: $n $t is valid and matches go tool pprof" \
		python3 "$TMP/ss.py" "$SCHEMA" "$TMP/$n.json" "$g" "$i"
done
check_grep "speedscope units: bytes" '"name":"alloc_space","unit":"bytes"' "$TMP/go_heap.json"
check_grep "speedscope units: count is none" '"name":"alloc_objects","unit":"none"' \
	"$TMP/go_heap.json"
check_grep "speedscope units: nanoseconds" '"name":"cpu","unit":"nanoseconds"' "$TMP/go_cpu.json"
check_grep "speedscope: the default type is the active profile" '"activeProfileIndex":1,' \
	"$TMP/go_cpu.json"
check_status "speedscope is an output format only" 1 conv -o "$TMP/x.folded" "$TMP/base.json"

# --- bad input: one line naming the file, exit 1, never a crash -----------
head -c 300 "$PF/go_heap.pb.gz" >"$TMP/truncated.pb.gz"
printf '\x08\x96\x01\x10\x05' >"$TMP/wrong.pb"                 # varints where messages belong
printf '\x32\x05hello\x0a\x02\x08\x01' >"$TMP/nostring0.pb"      # string_table[0] is "hello"
printf '\x12\xff\xff\xff\xff\x0f\x00' >"$TMP/hugelen.pb"          # a length past the end
printf 'hello\x01\x02\x03world\xff\xfe\n' >"$TMP/text.pb"        # text with control bytes
head -c 4096 "$PLATEAU" >"$TMP/garbage.bin"                        # binary garbage
: >"$TMP/empty.pb.gz"
gzip -c /dev/null >"$TMP/emptygz.pb.gz"
for f in truncated.pb.gz wrong.pb nostring0.pb hugelen.pb text.pb garbage.bin empty.pb.gz \
	emptygz.pb.gz; do
	check_status "bad input $f: exit 1" 1 conv -o "$TMP/out.folded" "$TMP/$f"
	if [ "$(wc -l <"$TMP/status.err")" -eq 1 ] && grep -q "$TMP/$f" "$TMP/status.err"; then
		ok "bad input $f: one-line error naming the file"
	else
		not_ok "bad input $f: one-line error naming the file"
		sed 's/^/# /' "$TMP/status.err" | head -5
	fi
done
check_grep "truncated gzip is reported as such" 'truncated gzip data' \
	<(conv -o "$TMP/out.folded" "$TMP/truncated.pb.gz" 2>&1)
check_grep "a wrong protobuf is reported as such" 'not a valid pprof profile' \
	<(conv -o "$TMP/out.folded" "$TMP/wrong.pb" 2>&1)
check_grep "string_table[0] is checked" 'string_table\[0\] is not the empty string' \
	<(conv -o "$TMP/out.folded" "$TMP/nostring0.pb" 2>&1)

done_testing
