#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringbench's encap part keeps working: a --quick run measures every
# forwarding method's row with its checks (verdict XDP_TX, the director's
# frame equal to the baseline's, the counters, the next-hop record taken
# or not), and `ringbench encap CANDIDATE.bpf.o...` runs data planes on
# the director's maps as more variants of every row, checked the same
# way (an A/A run: the built object as its own candidates), with their
# table. Timings are printed, never judged: performance is `make
# bench`'s business. No traffic leaves the process's own network
# namespace (the part makes one with unshare): everything runs through
# bpf_prog_test_run.
set -u
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench=$E2E_BUILD/ringbench
obj=$E2E_BUILD/ringmaster.bpf.o
e2e_require bpf_prog_test_run "$bench" "$obj" "$E2E_BUILD/baseline.bpf.o"
tmp=$(mktemp -d /tmp/rmt-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# cand_rows FILE: "STATUS NCANDS METHOD" of every row of the candidates
cand_rows()
{
	python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["candidates"]:
    print(r["status"], len([o for o in r["objects"] if o["vs_l2"] > 0]),
          r["method"])' "$1"
}

if "$bench" --quick --rounds 5 --json "$tmp/e.json" encap "$obj" "$obj" \
	>"$tmp/e.out" 2>"$tmp/e.err"; then
	e2e_pass "ringbench --quick encap with two candidates exits 0"
else
	e2e_fail "ringbench --quick encap exits $?: $(tail -3 "$tmp/e.err")"
fi
e2e_check "no row FAILED" sh -c "! grep -q FAILED '$tmp/e.out'"
e2e_check "the candidates' table is printed" \
	grep -q "^### Candidates" "$tmp/e.out"
e2e_expect_eq "every method's row has both candidates' figures" \
	"$(grep -c '^| .* ([0-9.]*x) | .* ([0-9.]*x) | .* ([0-9.]*x) |$' "$tmp/e.out")" 4
cand_rows "$tmp/e.json" >"$tmp/e.rows" 2>&1
e2e_expect_eq "the JSON holds the four rows as ok, with both candidates" \
	"$(grep -c '^ok 2 ' "$tmp/e.rows")" 4

# Bad candidates and arguments: defined exits, the problem named.
"$bench" --quick encap "$tmp/nosuch.o" >/dev/null 2>"$tmp/e1"
rc=$?
e2e_check "a missing candidate exits 1 naming it (rc $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q 'opening the candidate $tmp/nosuch.o' '$tmp/e1'"
"$bench" encap "$obj" "$obj" "$obj" "$obj" "$obj" "$obj" "$obj" \
	>/dev/null 2>"$tmp/e2"
rc=$?
e2e_check "seven candidates are a usage error: exit 2 (rc $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'usage: ringbench encap' '$tmp/e2'"

e2e_finish
