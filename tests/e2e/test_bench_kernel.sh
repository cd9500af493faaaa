#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringbench's kernel part keeps working: a --quick run measures every row
# with its own checks (verdict, output bytes, counters, the bare table
# lookup's hits), the new flows beside the design before the presence
# index (--reference), and every row on every CPU at once (each thread's
# verdict and frame, the counters of all CPUs: counts, not speed), and
# `ringbench kernel CANDIDATE.bpf.o` loads a data plane
# on the director's maps and measures it against the director (an A/A
# run: the built object as its own candidate). Timings are printed, never
# judged: performance is `make bench`'s business. make bench's kernel
# plots (scripts/bench-plot.py) drawn from this run's JSON are valid SVGs
# with their curves (tests/static/check_svg.py). No network: everything
# runs through bpf_prog_test_run.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench=$E2E_BUILD/ringbench
obj=$E2E_BUILD/ringmaster.bpf.o
ref=$E2E_BUILD/ringmaster-noidx.bpf.o
e2e_require bpf_prog_test_run "$bench" "$obj" "$ref" "$E2E_BUILD/baseline.bpf.o"
tmp=$(mktemp -d /tmp/rmt-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# rows_ok FILE: no row of the run FAILED, and the 1k ring has all 5 rows.
# shellcheck disable=SC2317 # called through e2e_check
rows_ok()
{
	! grep -q "FAILED" "$1" && [ "$(grep -c '^| 1k |' "$1")" -ge 5 ]
}

# json_rows FILE: "STATUS bare|- PATH" of every row of the JSON ("bare":
# the row has the bare table lookup).
json_rows()
{
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rings"]:
    for row in r["rows"]:
        print(row["status"], "bare" if "bare_table_lookup_ns" in row else "-",
              row["path"])' "$1"
}

# allcpu_rows FILE: "STATUS CPUS EFFICIENCY>0 PATH" of every all-CPU row.
allcpu_rows()
{
	python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["all_cpus"]
for r in a["rows"]:
    print(r["status"], a["cpus"], r.get("efficiency", 0) > 0, r["path"])' "$1"
}

# The quick run against the baseline, with the design before the index.
if "$bench" --quick --rounds 5 --reference "$ref" --json "$tmp/k.json" \
	kernel >"$tmp/k.out" 2>"$tmp/k.err"; then
	e2e_pass "ringbench --quick kernel exits 0"
else
	e2e_fail "ringbench --quick kernel exits $?: $(tail -3 "$tmp/k.err")"
fi
# a row's own reason, into the log: the output goes with $tmp
grep FAILED "$tmp/k.out" | head -5 | sed 's/^/    /'
e2e_check "every row measured, none FAILED" rows_ok "$tmp/k.out"
json_rows "$tmp/k.json" >"$tmp/k.rows" 2>&1
e2e_check "the JSON holds every row as ok" \
	test "$(grep -vc '^ok ' "$tmp/k.rows")" -eq 0 -a \
	"$(wc -l <"$tmp/k.rows")" -ge 10
e2e_check "each established-flow row has the bare table lookup" \
	test "$(grep -c '^ok bare connection-table hit' "$tmp/k.rows")" -ge 2
e2e_check "the bare lookup table is printed" \
	grep -q "^### Established flows, 65,536 cycling" "$tmp/k.out"
allcpu_rows "$tmp/k.json" >"$tmp/a.rows" 2>&1
e2e_expect_eq "every all-CPU row measured on all $(nproc) CPUs" \
	"$(grep -c "^ok $(nproc) True " "$tmp/a.rows")" 5
e2e_check "the all-CPU table is printed" \
	grep -q "^### Every CPU at once, ring 16k" "$tmp/k.out"
e2e_expect_eq "the new flows beside the design before the index measured" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["new_flows_vs_reference"]["status"])' \
		"$tmp/k.json" 2>&1)" ok
e2e_expect_eq "a verdict for every all-CPU row" \
	"$(grep -Ec '^target: every CPU at once: .*, (met|missed) ' "$tmp/k.out")" 5
e2e_check "a verdict for the new flows against the reference" \
	grep -Eq '^target: 65,536 new flows at 16k vs the design before the presence index: .*, (met|missed) ' "$tmp/k.out"
e2e_check "no retired ratio to the baseline among the targets" \
	sh -c "! grep -q '^target: .*baseline)' '$tmp/k.out'"

# make bench's kernel plots, from this real run's figures
python3 -c 'import json, sys
json.dump({"meta": {}, "kernel": json.load(open(sys.argv[1]))}, open(sys.argv[2], "w"))' \
	"$tmp/k.json" "$tmp/results.json"
e2e_check "bench-plot.py draws the kernel part" \
	python3 "$E2E_ROOT/scripts/bench-plot.py" "$tmp/results.json" "$tmp/plots"
plot_ok()
{
	local out
	if out=$(python3 "$E2E_ROOT/tests/static/check_svg.py" "$@"); then
		e2e_pass "$out"
	else
		e2e_fail "$out"
	fi
}
plot_ok "$tmp/plots/kernel-ring-size.svg" "Per-packet cost by path against ring size" \
	"ring search (TCP SYN), 1 flow" "connection-table hit (TCP ACK), 65,536 flows" baseline
plot_ok "$tmp/plots/kernel-flows.svg" "Per-packet cost, 1 flow and 65,536 flows" \
	"baseline, 1 flow" "director, 65,536 flows"

# A/A: the built director as its own candidate, same checks.
if "$bench" --quick --rounds 5 --json "$tmp/c.json" kernel "$obj" \
	>"$tmp/c.out" 2>"$tmp/c.err"; then
	e2e_pass "ringbench --quick kernel CANDIDATE exits 0"
else
	e2e_fail "ringbench kernel CANDIDATE exits $?: $(tail -3 "$tmp/c.err")"
fi
e2e_check "the candidate run names its candidate" \
	grep -q "^Candidate $obj against the built director" "$tmp/c.out"
e2e_check "every candidate row measured, none FAILED" rows_ok "$tmp/c.out"
e2e_expect_eq "the JSON names the candidate" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["candidate"])' \
		"$tmp/c.json" 2>&1)" "$obj"

# A candidate that sends every new flow to node 1 must fail the ring rows
# (their output is checked against the ring's owner) and exit 3, while
# the table-hit rows, which never search the ring, still measure.
mkdir -p "$tmp/src"
read -r -a bpf_cflags <<<"$(make -s -C "$E2E_ROOT" --no-print-directory print-bpf-cflags)"
cp -r "$E2E_ROOT/bpf" "$E2E_ROOT/include" "$tmp/src/"
sed -i 's/^\t\telse if (rm_ring_owner(svc_id, h, &node_id))$/\t\telse if ((node_id = 1) \&\& h == 7 \&\&\n\t\t\t rm_ring_owner(svc_id, h, \&node_id))/' \
	"$tmp/src/bpf/ringmaster.bpf.c"
if ! grep -q '^		else if ((node_id = 1) && h == 7 &&$' "$tmp/src/bpf/ringmaster.bpf.c"; then
	e2e_fail "the ring search call in bpf/ringmaster.bpf.c moved: update this test's sed"
elif ! (cd "$tmp/src" && clang "${bpf_cflags[@]}" \
	-c bpf/ringmaster.bpf.c -o "$tmp/wrong.o") 2>"$tmp/cc.err"; then
	e2e_fail "building the wrong candidate: $(tail -3 "$tmp/cc.err")"
else
	"$bench" --quick --rounds 5 kernel "$tmp/wrong.o" >"$tmp/w.out" 2>&1
	rc=$?
	e2e_expect_eq "a wrong candidate exits 3 (a path not verified)" "$rc" 3
	e2e_check "its ring rows fail on the output frame" test \
		"$(grep -c 'ring search (TCP SYN).*FAILED: path not verified: candidate output differs' "$tmp/w.out")" -eq 4
	e2e_check "its table-hit rows still measure" test \
		"$(grep 'connection-table hit' "$tmp/w.out" | grep -vc FAILED)" -eq 4
fi

# Bad candidates and arguments: defined exits, the problem named.
"$bench" --quick kernel "$tmp/nosuch.o" >/dev/null 2>"$tmp/e1"
rc=$?
e2e_check "a missing candidate exits 1 naming it (rc $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q 'opening the candidate $tmp/nosuch.o' '$tmp/e1'"
"$bench" --quick kernel "$E2E_BUILD/baseline.bpf.o" >/dev/null 2>"$tmp/e2"
rc=$?
e2e_check "a candidate without rm_xdp exits 1 saying so (rc $rc)" \
	sh -c "[ $rc -eq 1 ] && grep -q 'has no program rm_xdp' '$tmp/e2'"
"$bench" kernel "$obj" "$obj" >/dev/null 2>"$tmp/e3"
rc=$?
e2e_check "two candidates are a usage error: exit 2 (rc $rc)" \
	sh -c "[ $rc -eq 2 ] && grep -q 'usage: ringbench kernel' '$tmp/e3'"

e2e_finish
