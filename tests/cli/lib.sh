# Shared helpers for CLI tests: each script prints TAP ("ok N - what").
# Source it, call the checks, then `done_testing`.
set -u
: "${PLATEAU:?set PLATEAU to the plateau binary}"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FIX=$TOP/tests/fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/plateau-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
export LC_ALL=C
_n=0

ok() { _n=$((_n + 1)); echo "ok $_n - $*"; }
not_ok() { _n=$((_n + 1)); echo "not ok $_n - $*"; }
skip() { _n=$((_n + 1)); echo "ok $_n - # SKIP $*"; }

# check DESC COMMAND...: passes when the command exits 0.
check() {
	local desc=$1
	shift
	if "$@" >"$TMP/check.out" 2>&1; then ok "$desc"; else
		not_ok "$desc"
		sed 's/^/# /' "$TMP/check.out" | head -20
	fi
}

# check_status DESC WANT COMMAND...: passes when the command exits WANT.
check_status() {
	local desc=$1 want=$2 rc
	shift 2
	"$@" >"$TMP/status.out" 2>"$TMP/status.err"
	rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$desc"; else
		not_ok "$desc (exit $rc, want $want)"
		sed 's/^/# /' "$TMP/status.err" | head -10
	fi
}

# check_same DESC EXPECTED_FILE ACTUAL_FILE: byte-identical files.
check_same() {
	if cmp -s "$2" "$3"; then ok "$1"; else
		not_ok "$1"
		diff -u "$2" "$3" | head -30 | sed 's/^/# /'
	fi
}

# check_grep DESC PATTERN FILE: FILE has a line matching the ERE.
check_grep() {
	if grep -Eq -- "$2" "$3"; then ok "$1"; else
		not_ok "$1: no line matches /$2/ in $3"
		head -10 "$3" | sed 's/^/# /'
	fi
}

done_testing() { echo "1..$_n"; }
