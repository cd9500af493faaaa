#!/usr/bin/env bash
# scripts/run-tests.sh gives skips their own status: fake suites that pass,
# fail and skip (exit 77, or exit 0 admitting a skip in cmocka's words or in
# a closing "N skipped" line) run through the real runner, whose last line
# and exit status are checked, with and without RM_ALLOW_SKIP=1.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rm-runner.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
check() {
	local d=$1; shift
	if "$@"; then passed=$((passed + 1)); echo "PASS: $d"
	else failed=$((failed + 1)); echo "FAIL: $d"; fi
}

# suite NAME BODY: a fake script suite under $tmp/<dir>/NAME.sh
suite() { mkdir -p "$(dirname "$tmp/$1")"; printf '%s\n' "$2" >"$tmp/$1.sh"; }
# unit NAME BODY: a fake "binary" suite under BUILD/tests
unit() {
	mkdir -p "$tmp/build/tests"
	printf '#!/bin/sh\n%s\n' "$2" >"$tmp/build/tests/$1"
	chmod +x "$tmp/build/tests/$1"
}
# run MODE... : the runner over the fakes; sets $last and $rc
run() {
	out=$(env "$@" RM_TESTS_DIR="$tmp/tests" bash "$top/scripts/run-tests.sh" "$tmp/build" 2>&1)
	rc=$?
	last=$(printf '%s\n' "$out" | tail -n 1)
}

suite tests/static/test_ok 'echo "1 passed, 0 failed"; exit 0'
unit test_ok 'echo "[  PASSED  ] 3 test(s)."; exit 0'
suite tests/e2e/test_ok 'echo "4 passed, 0 failed, 0 skipped"; exit 0'
run RM_ALLOW_SKIP=0
check "all pass: last line" test "$last" = "suites: 3 passed, 0 failed, 0 skipped"
check "all pass: exit 0" test "$rc" -eq 0

suite tests/e2e/test_skip77 'echo "SKIP: no root"; exit 77'
run RM_ALLOW_SKIP=0
check "exit 77 is a skip" test "$last" = "suites: 3 passed, 0 failed, 1 skipped"
check "a skip fails the run" test "$rc" -ne 0
check "the runner says a skip is a failure" grep -q "a skip is a failure" <<<"$out"
check "the skipped suite is named" grep -q "skipped suites: test_skip77" <<<"$out"
run RM_ALLOW_SKIP=1
check "RM_ALLOW_SKIP=1: same count" test "$last" = "suites: 3 passed, 0 failed, 1 skipped"
check "RM_ALLOW_SKIP=1: exit 0" test "$rc" -eq 0
rm "$tmp/tests/e2e/test_skip77.sh"

unit test_cmocka_skip 'echo "[  SKIPPED ] 2 test(s), listed below:"; exit 0'
run RM_ALLOW_SKIP=0
check "cmocka's SKIPPED line with exit 0 is a skip" test "$last" = "suites: 3 passed, 0 failed, 1 skipped"
check "... and fails the run" test "$rc" -ne 0
rm "$tmp/build/tests/test_cmocka_skip"

suite tests/e2e/test_line_skip 'echo "5 passed, 0 failed, 1 skipped"; exit 0'
run RM_ALLOW_SKIP=0
check "a closing 'N skipped' line with exit 0 is a skip" test "$last" = "suites: 3 passed, 0 failed, 1 skipped"
rm "$tmp/tests/e2e/test_line_skip.sh"

suite tests/static/test_bad 'echo "0 passed, 1 failed"; exit 1'
unit test_crash 'kill -SEGV $$'
run RM_ALLOW_SKIP=1
check "failures counted" test "$last" = "suites: 3 passed, 2 failed, 0 skipped"
check "a failure fails the run" test "$rc" -ne 0
check "failed suites named" grep -q "failed suites: test_bad test_crash" <<<"$out"

rm -rf "$tmp/tests" "$tmp/build"
mkdir -p "$tmp/tests" "$tmp/build"
run RM_ALLOW_SKIP=1
check "nothing ran: a failure" test "$rc" -ne 0
check "nothing ran: counts" test "$last" = "suites: 0 passed, 0 failed, 0 skipped"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
