# shellcheck shell=bash
# Shared by the static suites (sourced, not run): the repository root as
# cwd, BUILD as an absolute path, and the pass/fail counters the suites'
# closing "N passed, N failed" line reports.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD=$top/$BUILD ;; esac
cd "$top" || exit 1
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
