#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringbench's decap part keeps working: a --quick run measures plain GUE
# decapsulation and every second-chance decision with its own checks
# (verdict, the decision's counter moved by exactly the repeat count, no
# other). Timings are printed, never judged: performance is `make
# bench`'s business. No traffic: bpf_prog_test_run in a namespace the
# part makes itself (unshare; gone with the process).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench=$E2E_BUILD/ringbench
e2e_require bpf_prog_test_run "$bench" "$E2E_BUILD/decap.bpf.o" \
	"$E2E_BUILD/trafficgen.bpf.o"
tmp=$(mktemp -d /tmp/rmt-bdecap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if "$bench" --quick --rounds 5 --json "$tmp/d.json" decap >"$tmp/d.out" \
	2>"$tmp/d.err"; then
	e2e_pass "ringbench --quick decap exits 0"
else
	e2e_fail "ringbench --quick decap exits $?: $(tail -3 "$tmp/d.err")"
fi
e2e_check "no row FAILED" sh -c "! grep -q FAILED '$tmp/d.out'"
e2e_expect_eq "the JSON holds the 5 cases, each ok" \
	"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for c in d["cases"] if c["status"] == "ok" and c["net_ns"] > 0))' \
		"$tmp/d.json" 2>&1)" 5
for row in "plain decap" "SYN: kept" "socket here: delivered" \
	"no socket: forwarded" "listener only: forwarded"; do
	e2e_check "row: $row" grep -q "^| [^|]*$row" "$tmp/d.out"
done

e2e_finish
