#!/usr/bin/env bash
# One runner for every suite: the static checks in tests/static, the cmocka
# binaries in BUILD/tests, then the namespace end-to-end scripts in tests/e2e. Each suite runs even if an
# earlier one failed; the last line is "N passed, N failed".
# Usage: scripts/run-tests.sh [--unit-only|--e2e-only] BUILD
set -u
mode=all
case "${1:-}" in
--unit-only) mode=unit; shift ;;
--e2e-only) mode=e2e; shift ;;
esac
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

passed=0 failed=0 failed_names=()
run_suite() {
	local name=$1; shift
	local start=$SECONDS
	echo "=== $name"
	if "$@"; then
		passed=$((passed + 1))
		echo "--- PASS $name ($((SECONDS - start))s)"
	else
		failed=$((failed + 1))
		failed_names+=("$name")
		echo "--- FAIL $name ($((SECONDS - start))s)"
	fi
}

if [ "$(id -u)" -ne 0 ]; then
	echo "run-tests: WARNING: not root; BPF and namespace suites will skip (run: sudo make test)"
fi

if [ "$mode" != e2e ]; then
	for t in tests/static/test_*.sh; do
		[ -f "$t" ] || continue
		run_suite "$(basename "$t" .sh)" env BUILD="$build" bash "$t"
	done
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		run_suite "$(basename "$t")" "$t"
	done
fi
if [ "$mode" != unit ]; then
	for t in tests/e2e/test_*.sh; do
		[ -f "$t" ] || continue
		run_suite "$(basename "$t" .sh)" env BUILD="$build" bash "$t"
	done
fi

echo
if [ $failed -gt 0 ]; then
	echo "failed suites: ${failed_names[*]}"
fi
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
