#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench's plots: a quick real run of the bench parts that need no root
# (BENCH_QUICK=1, parts search and quality, into a scratch BENCH_OUT) writes
# results.json and, through scripts/bench-plot.py and gnuplot,
# plots/search.svg, quality-balance.svg and quality-movement.svg: each well
# formed, an <svg> with its size, its title and legend entries, and curves
# drawn (tests/static/check_svg.py). bench-plot.py refuses a results file
# that is not JSON, and a part with no row to plot. The kernel plots come
# from the kernel part's JSON in tests/e2e/test_bench_kernel.sh (root).
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"
for t in gnuplot python3; do
	command -v $t >/dev/null || { echo "FAIL: $t missing: run scripts/install-deps.sh"; echo "0 passed, 1 failed"; exit 1; }
done
[ -x "$BUILD/ringbench" ] || { echo "FAIL: $BUILD/ringbench missing: run make"; echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d /tmp/rm-plot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

check "a quick bench run of search and quality exits 0" \
	env BENCH_QUICK=1 BENCH_ROUNDS=5 BENCH_PARTS="search quality" \
	BENCH_OUT="$tmp/out" scripts/bench.sh "$BUILD" >"$tmp/bench.log" 2>&1 ||
	tail -n 5 "$tmp/bench.log"
plots=$tmp/out/plots
svg()
{
	local out
	if out=$(python3 tests/static/check_svg.py "$@"); then pass "$out"; else fail "$out"; fi
}
svg "$plots/search.svg" "Ring search in userspace" "indexed (rm_search.h)" "plain binary search"
svg "$plots/quality-balance.svg" "Balance" "ring, " "maglev, " "modulo, "
svg "$plots/quality-movement.svg" "Movement" "vnodes: add" "vnodes: remove" "maglev, M = 65537: add" "modulo, hash % N: remove"
check "no kernel plot from a run without the kernel part" test ! -e "$plots/kernel-ring-size.svg"
check "the run's plots are named in its output" grep -q "^plots: .*search.svg" "$tmp/bench.log"

# refusals: not JSON; a part present with nothing to plot
echo '{' >"$tmp/bad.json"
check "bench-plot.py: a results file that is not JSON: exit 1" \
	sh -c "! python3 scripts/bench-plot.py '$tmp/bad.json' '$tmp/p2' 2>/dev/null"
echo '{"meta": {}, "quality": {"rows": []}, "search": {"rings": [{"entries": 1}]}}' >"$tmp/empty.json"
check "bench-plot.py: parts without rows: exit 1, naming them" \
	sh -c "! python3 scripts/bench-plot.py '$tmp/empty.json' '$tmp/p3' 2>'$tmp/e3' && grep -q 'not plotted: search.svg quality' '$tmp/e3'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
