#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`'s fleet part keeps working: scripts/bench-fleet.sh with a
# fleet of three directors (etcd, BIRD and ringsync started for real, as
# scripts/fleet.sh does) and two rounds each for three and two directors
# exits 0, prints both rows, writes each count's median, min and max in
# its JSON (every one a real time: above 0, min <= median <= max, within
# the part's 30 s bound), and leaves no namespace, process or directory
# behind. Times are printed, never judged: performance is `make bench`'s
# business.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_require "network namespaces, etcd, BIRD" "$E2E_BUILD/ringctl" \
	"$E2E_BUILD/ringload" "$E2E_BUILD/ringsync" \
	"$E2E_BUILD/ringmaster.bpf.o"
for t in bird birdc etcd curl; do
	command -v "$t" >/dev/null 2>&1 ||
		e2e_die "$t missing: scripts/install-deps.sh (bird2, etcd-server, curl)"
done
tmp=$(mktemp -d /tmp/rmt-bfleet.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

ns_before=$(ip netns list | grep -c '^rf' || true)
dirs_before=$(find /tmp -maxdepth 1 -name 'rm-fleet-*' | wc -l)
if BENCH_FLEET_D=3 "$E2E_ROOT/scripts/bench-fleet.sh" "$E2E_BUILD" \
	"$tmp/f.json" 2 >"$tmp/f.out" 2>"$tmp/f.err"; then
	e2e_pass "bench-fleet.sh with 3 directors, 2 rounds, exits 0"
else
	e2e_fail "bench-fleet.sh exits $?: $(tail -5 "$tmp/f.err")"
fi
for d in 3 2; do
	e2e_check "row: $d directors" grep -q "^| $d | [0-9]" "$tmp/f.out"
done
e2e_expect_eq "the JSON: 2 rounds, both counts, each a real time" \
	"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["rounds"] == 2 and sorted(d["directors"]) == ["2", "3"]
for v in d["directors"].values():
    ok = ok and 0 < v["min"] <= v["median"] <= v["max"] <= 30000
    ok = ok and v["publish_median"] > 0
print("ok" if ok else d)' "$tmp/f.json" 2>&1)" ok
e2e_expect_eq "no fleet namespace left" \
	"$(ip netns list | grep -c '^rf' || true)" "$ns_before"
e2e_expect_eq "no fleet directory left" \
	"$(find /tmp -maxdepth 1 -name 'rm-fleet-*' | wc -l)" "$dirs_before"
# the bracket keeps the pattern from matching this check's own shell
e2e_check "no process of the fleet left (etcd, BIRD, ringsync)" \
	sh -c "! pgrep -f '/tmp/[r]m-fleet-' >/dev/null"

e2e_finish
