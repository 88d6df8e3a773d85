#!/bin/bash
# tests/run.sh itself, on a small tree of stand-in suites: a suite that
# cannot run (not executable) and a build without unit tests fail the run
# instead of being skipped; a failing check, a short plan and a crash fail
# it; a healthy tree passes and prints the totals.
. "$(dirname "$0")/lib.sh"
RUN=${RUN_SH:-$TOP/tests/run.sh}
# tree NAME: a copy of run.sh with one passing unit test and one passing CLI suite.
tree() {
	local d=$TMP/$1
	mkdir -p "$d/tests/cli" "$d/build"
	cp "$RUN" "$d/tests/run.sh"
	printf '#!/bin/sh\nexit 0\n' >"$d/build/plateau"
	printf '#!/bin/sh\necho "ok 1 - unit"\necho "1..1"\n' >"$d/build/one_test"
	printf '#!/bin/bash\necho "ok 1 - cli"\necho "1..1"\n' >"$d/tests/cli/good.sh"
	printf '# sourced, not a suite\n' >"$d/tests/cli/lib.sh"
	chmod +x "$d/build/plateau" "$d/build/one_test" "$d/tests/cli/good.sh"
	echo "$d"
}
runit() { # DIR: run its run.sh; output in DIR/out, status in $rc
	(cd "$1" && bash tests/run.sh build >out 2>&1)
	rc=$?
}

d=$(tree healthy)
runit "$d"
check "a healthy tree passes" test "$rc" -eq 0
check_grep "... counting its 2 tests" '^2 passed, 0 failed$' "$d/out"

d=$(tree noexec)
printf '#!/bin/bash\necho "not ok 1 - would fail"\necho "1..1"\n' >"$d/tests/cli/forgotten.sh"
runit "$d"
check "a suite that is not executable fails the run" test "$rc" -ne 0
check_grep "... naming it" 'FAIL build/cli/forgotten: .*not executable' "$d/out"
check "... and is not reported as a skip or a pass" sh -c "! grep -q 'SKIP' '$d/out' && grep -q '^2 passed, 1 failed$' '$d/out'"

d=$(tree nounit)
rm "$d/build/one_test"
runit "$d"
check "a build without unit tests fails the run" test "$rc" -ne 0
check_grep "... saying so" 'FAIL build/unit: no unit tests' "$d/out"

d=$(tree short)
printf '#!/bin/bash\necho "ok 1 - first"\necho "1..3"\n' >"$d/tests/cli/short.sh"
chmod +x "$d/tests/cli/short.sh"
runit "$d"
check "a short plan fails the run" test "$rc" -ne 0
check_grep "... naming the plan" 'FAIL build/cli/short: planned 3 tests, ran 1' "$d/out"

d=$(tree notok)
printf '#!/bin/bash\necho "not ok 1 - broken"\necho "1..1"\n' >"$d/tests/cli/bad.sh"
chmod +x "$d/tests/cli/bad.sh"
runit "$d"
check "a not ok fails the run" test "$rc" -ne 0

d=$(tree crash)
printf '#!/bin/bash\necho "ok 1 - then a crash"\nkill -SEGV $$\n' >"$d/tests/cli/crash.sh"
chmod +x "$d/tests/cli/crash.sh"
runit "$d"
check "a crash fails the run" test "$rc" -ne 0

done_testing
