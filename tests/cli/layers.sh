#!/bin/bash
# The parts of src/ keep their arrows (doc/architecture.md, issue 15):
# scripts/check-layers.py passes on the tree, and fails, naming file and
# line, on a copy with one wrong include planted in each direction the
# document forbids.
. "$(dirname "$0")/lib.sh"

check "every #include of src/ follows doc/architecture.md" python3 "$TOP/scripts/check-layers.py" "$TOP"

# plant FILE LINE: a copy of the tree (src/ and the document) with LINE
# added to src/FILE; the checker must refuse it and name the place.
plant() {
	local file=$1 line=$2 copy=$TMP/copy.$_n
	mkdir -p "$copy/doc" "$copy/scripts"
	cp -r "$TOP/src" "$copy/"
	cp "$TOP/doc/architecture.md" "$copy/doc/"
	printf '%s\n' "$line" >>"$copy/src/$file"
	if python3 "$TOP/scripts/check-layers.py" "$copy" >"$TMP/plant.out" 2>&1; then
		not_ok "a planted '$line' in src/$file is refused"
	elif grep -q "^src/$file:[0-9]*: .*may not include" "$TMP/plant.out"; then
		ok "a planted '$line' in src/$file is refused, naming the file and line"
	else
		not_ok "a planted '$line' in src/$file: no line names the file"
		sed 's/^/# /' "$TMP/plant.out" | head -5
	fi
	rm -rf "$copy"
}

plant format/folded.c '#include "render/flamegraph.h"'
plant profile/profile.c '#include "format/format.h"'
plant symbol/symbolize.c '#include "record/record.h"'
plant store/selector.c '#include "cmd/cmd.h"'
plant server/auth.c '#include "cmd/cmd.h"'
plant record/record.c '#include "render/output.h"'
plant agent/core/config.c '#include "util/strbuf.h"'
# "(tests)" arrows hold for tests only: store's tests read fixtures
# through format/, the store itself may not.
plant store/plan.c '#include "format/format.h"'

# A new folder of src/ needs its row (and so its arrows) in the document.
copy=$TMP/newpart
mkdir -p "$copy/doc" "$copy/src/newpart"
cp -r "$TOP/src" "$copy/"
mkdir -p "$copy/src/newpart"
cp "$TOP/doc/architecture.md" "$copy/doc/"
if python3 "$TOP/scripts/check-layers.py" "$copy" >"$TMP/new.out" 2>&1; then
	not_ok "a folder of src/ without a row in the document is refused"
else
	check_grep "a folder of src/ without a row in the document is refused" "^src/newpart: a part with no row" "$TMP/new.out"
fi

# The walks of doc/architecture.md name files: each must exist.
missing=$(grep -o '`src/[A-Za-z0-9_/.-]*\.[ch]`' "$TOP/doc/architecture.md" | tr -d '`' | sort -u |
	while read -r f; do [ -e "$TOP/$f" ] || echo "$f"; done)
if [ -z "$missing" ]; then ok "every file doc/architecture.md names exists"; else
	not_ok "doc/architecture.md names files that do not exist: $missing"
fi

done_testing
