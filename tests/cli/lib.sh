# Shared helpers for CLI tests: each script prints TAP ("ok N - what").
# Source it, call the checks, then `done_testing`.
set -u
: "${PLATEAU:?set PLATEAU to the plateau binary}"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FIX=$TOP/tests/fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/plateau-test.XXXXXX")
# Background processes (serve_start's servers, a suite's own) are killed
# at exit; $TMP is removed unless KEEP_TMP is set.
BG_PIDS=()
_lib_exit() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap _lib_exit EXIT
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

# serve_start NAME ARGS...: plateau serve ARGS in the background on
# 127.0.0.1, on a port the kernel picks, its stderr in $TMP/NAME.log.
# Waits up to 10 s for it to listen; sets URL (http://127.0.0.1:PORT) and
# SERVE_PID, which the EXIT trap kills.  When it does not start: URL is
# empty, its log is shown as TAP comments and the status is 1.
serve_start() {
	local name=$1 i
	shift
	: >"$TMP/$name.log"
	"$PLATEAU" serve --listen 127.0.0.1:0 "$@" 2>"$TMP/$name.log" &
	SERVE_PID=$!
	BG_PIDS+=("$SERVE_PID")
	URL=
	for i in $(seq 1 100); do
		URL=$(sed -n 's/^plateau serve: listening on \(http:[^,]*\),.*/\1/p' "$TMP/$name.log")
		[ -n "$URL" ] && return 0
		sleep 0.1
	done
	echo "# server $name did not start:"
	sed 's/^/# /' "$TMP/$name.log"
	return 1
}

# serve_stop [PID]: stop a server (default: the last started) and wait for it.
serve_stop() {
	kill "${1:-$SERVE_PID}" 2>/dev/null
	wait "${1:-$SERVE_PID}" 2>/dev/null
}

# node_tap SCRIPT ARGS...: run a browser test of tests/ui (node SCRIPT
# ARGS) and pass its "ok - " / "not ok - " / "# " lines on as this suite's
# TAP; a runner that fails without saying why is a failure too.  Installs
# playwright-core (pinned in tests/ui/package-lock.json) the first time;
# the browser is Debian's chromium, never one playwright downloads.
node_tap() {
	local out=$TMP/node_tap.out err=$TMP/node_tap.err rc line
	export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
	if [ ! -d "$TOP/tests/ui/node_modules/playwright-core" ]; then
		echo "# installing playwright-core into tests/ui/node_modules"
		npm ci --prefix "$TOP/tests/ui" --no-audit --no-fund --loglevel=error >&2
	fi
	node "$@" >"$out" 2>"$err"
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok "${line#ok - }" ;;
		"not ok - "*) not_ok "${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' "$out"; then
		not_ok "browser test runner $(basename "$1") exited with status $rc"
		sed 's/^/# /' "$err" | tail -20
	fi
}
