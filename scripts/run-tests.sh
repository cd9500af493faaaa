#!/usr/bin/env bash
# One runner for every suite: the static checks in tests/static, the cmocka
# binaries in BUILD/tests, then the namespace end-to-end scripts in tests/e2e.
# Each suite runs even if an earlier one failed.
#
# A suite has one of three outcomes:
#   passed   exit 0 and no sign of a skip;
#   skipped  exit 77 (RM_TEST_SKIP, the automake convention; a suite that
#            cannot run, or ran only part of its checks, says why and exits
#            77), or exit 0 with output that admits a skip anyway: a closing
#            line "N passed, N failed, N skipped" with N skipped > 0, or
#            cmocka's "[  SKIPPED ] N test(s)" with N > 0;
#   failed   any other exit status.
# The last line is "suites: N passed, N failed, N skipped". On this
# project's machines and in CI every test must run, so a skip fails the run
# (exit 1) unless RM_ALLOW_SKIP=1 (a developer's laptop without root).
#
# Usage: scripts/run-tests.sh [--unit-only|--e2e-only] BUILD
# RM_TESTS_DIR (default: the repo's tests/) is where the suites are looked
# for; the runner's own test points it at a directory of fake suites.
set -u
mode=all
case "${1:-}" in
--unit-only) mode=unit; shift ;;
--e2e-only) mode=e2e; shift ;;
esac
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
tests=${RM_TESTS_DIR:-tests}
RM_TEST_SKIP=77

passed=0 failed=0 skipped=0 failed_names=() skipped_names=()
out=$(mktemp) || exit 1
bindir=$(mktemp -d) || exit 1
trap 'rm -f "$out"; rm -rf "$bindir"' EXIT

# The suites run Debian's python3 (scripts/install-deps.sh installs it),
# not a version manager's shim that comes first on PATH: pyenv's costs
# over a second a call on a busy machine, and the e2e suites call python3
# hundreds of times.
if [ -x /usr/bin/python3 ]; then
	ln -s /usr/bin/python3 "$bindir/python3" && PATH=$bindir:$PATH
fi

# Did a suite that exited 0 still skip something? Its output says so.
admits_skip() {
	grep -Eq '^\[  SKIPPED \] [1-9][0-9]* test' "$1" && return 0
	tail -n 1 "$1" | grep -Eq '(^|[^0-9])[0-9]+ passed, [0-9]+ failed, [1-9][0-9]* skipped'
}

run_suite() {
	local name=$1 rc; shift
	local start=$SECONDS
	echo "=== $name"
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	if [ $rc -eq 0 ] && admits_skip "$out"; then
		rc=$RM_TEST_SKIP
	fi
	case $rc in
	0)
		passed=$((passed + 1))
		echo "--- PASS $name ($((SECONDS - start))s)" ;;
	"$RM_TEST_SKIP")
		skipped=$((skipped + 1))
		skipped_names+=("$name")
		echo "--- SKIP $name ($((SECONDS - start))s)" ;;
	*)
		failed=$((failed + 1))
		failed_names+=("$name")
		echo "--- FAIL $name ($((SECONDS - start))s, exit $rc)" ;;
	esac
}

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: WARNING: not root; BPF and namespace suites will skip (run as root: make test)"
fi

if [ "$mode" != e2e ]; then
	for t in "$tests"/static/test_*.sh; do
		[ -f "$t" ] || continue
		run_suite "$(basename "$t" .sh)" env BUILD="$build" bash "$t"
	done
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		run_suite "$(basename "$t")" "$t"
	done
fi
if [ "$mode" != unit ]; then
	for t in "$tests"/e2e/test_*.sh; do
		[ -f "$t" ] || continue
		run_suite "$(basename "$t" .sh)" env BUILD="$build" bash "$t"
	done
fi

echo
ok=1
if [ $failed -gt 0 ]; then
	echo "failed suites: ${failed_names[*]}"
	ok=0
fi
if [ $skipped -gt 0 ]; then
	echo "skipped suites: ${skipped_names[*]}"
	if [ "${RM_ALLOW_SKIP:-0}" != 1 ]; then
		echo "run-tests: a skip is a failure here (every test must run: as root, make deps);" \
			"RM_ALLOW_SKIP=1 accepts skips"
		ok=0
	fi
fi
[ $passed -gt 0 ] || ok=0
echo "suites: $passed passed, $failed failed, $skipped skipped"
[ $ok -eq 1 ]
