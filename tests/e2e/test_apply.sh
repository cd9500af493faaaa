#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringctl apply: the live state made equal to a document (save's format).
#   - `save` output applies back unchanged ("no change", same save), and
#     into an empty pin dir it rebuilds the same configuration;
#   - a document that removes node3, adds node4 and doubles node1's weight:
#     the dry run prints the moves by from/to and changes nothing; applied,
#     real TCP flows (the same 1,000 source ports before and after) move
#     only along the predicted (from, to) pairs, in the predicted share
#     (binomial bound), and land where `ringctl lookup` says;
#   - the same document again: "no change", the ring map not swapped;
#   - a document with a syntax error (exit 2) or naming a missing
#     interface (exit 1) changes nothing;
#   - --revision is recorded and shown by `ringctl show --json` and
#     `ringload status --json` with its age.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLOWS=1000

e2e_require_director
e2e_setup 3
testbed_add_node || e2e_die "node4 added to the testbed"
work=$TB_STATE_DIR/apply
mkdir -p "$work"
PIN_B=/sys/fs/bpf/ringmaster-apply-b

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
if ! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ! e2e_add_nodes web 1 2 3; then
	e2e_die "service web on node1..node3"
fi
e2e_start_servers || e2e_die "servers started"

# ---- save applies back unchanged -----------------------------------------
e2e_ctl save >"$work/s0" || e2e_die "ringctl save"
out=$(e2e_ctl apply - <"$work/s0")
e2e_expect_eq "apply of save's output: exit 0, says no change" \
	"$?:$(echo "$out" | grep -c '^no change')" "0:1"
e2e_ctl save >"$work/s0.again"
e2e_check "save after that apply is identical" cmp -s "$work/s0" "$work/s0.again"

ok=1
# B's state made by an attach to an interface A does not use, then detached
e2e_load attach --pin-dir "$PIN_B" "${TB_DIR_NODE_IF[4]}" --mode skb \
	>/dev/null 2>&1 &&
	e2e_load detach --pin-dir "$PIN_B" "${TB_DIR_NODE_IF[4]}" \
		>/dev/null 2>&1 || ok=0
e2e_ctl --pin-dir "$PIN_B" apply - <"$work/s0" >/dev/null || ok=0
e2e_ctl --pin-dir "$PIN_B" save >"$work/s0.b" || ok=0
e2e_expect_eq "apply into an empty pin dir rebuilds the same configuration" \
	"$ok:$(cmp -s "$work/s0" "$work/s0.b" && echo same)" "1:same"

# ---- a change: dry run, then applied under real flows ---------------------
# node3 leaves, node4 joins, node1 weight 2
awk -v mac="${TB_NODE_MAC[4]}" -v dev="${TB_DIR_NODE_IF[4]}" '
	/^node add web node3 / { next }
	/^node add web node1 / { sub(/--weight 1$/, "--weight 2") }
	{ print }
	END { print "node add web node4 --mac " mac " --dev " dev " --weight 1" }
' "$work/s0" >"$work/d1"

e2e_ctl apply "$work/d1" --dry-run >"$work/dry.txt"
e2e_ctl apply "$work/d1" --dry-run --json >"$work/dry.json"
e2e_ctl save >"$work/s0.dry"
e2e_expect_eq "dry run: moves printed by from/to, nothing changed" \
	"$(grep -c ' -> ' "$work/dry.txt"):$(cmp -s "$work/s0" "$work/s0.dry" && echo same)" \
	"$(e2e_json 'len(d["services"][0]["moves"])' <"$work/dry.json"):same"
e2e_json '[(m["from"], m["to"], m["share"]) for m in d["services"][0]["moves"]]' \
	<"$work/dry.json" >"$work/pred"
p=$(e2e_json 'd["services"][0]["moved_share"]' <"$work/dry.json")
e2e_log "predicted: moved share $p; $(awk '{ printf "%s->%s %.3f  ", $1, $2, $3 }' "$work/pred")"

e2e_alloc_sports "$FLOWS"
FB=$E2E_SPORT
client=(--vip "$TB_VIP4" --proto tcp --timeout-ms 3000 --count "$FLOWS"
	--sport-base "$FB")
e2e_flows "$work/before" "${client[@]}"
e2e_expect_eq "before: $FLOWS flows answered" \
	"$(grep -vc ' FAIL$' "$work/before")" "$FLOWS"

e2e_ctl apply "$work/d1" >"$work/apply.txt"
e2e_expect_eq "apply: exit 0, prints the same moves it applies" \
	"$?:$(grep -c ' -> ' "$work/apply.txt")" "0:$(wc -l <"$work/pred")"
e2e_flows "$work/after" "${client[@]}"
e2e_expect_eq "after: $FLOWS flows answered" \
	"$(grep -vc ' FAIL$' "$work/after")" "$FLOWS"
read -r moved total < <(e2e_moved "$work/before" "$work/after")
unpredicted=$(awk 'NR == FNR { ok[$1 " " $2] = 1; next }
	!(($2 " " $3) in ok) { n++ } END { print n + 0 }' \
	"$work/pred" "$work/after.moves")
e2e_expect_eq "every moved flow went along a predicted (from, to) pair ($moved of $total moved)" \
	"$unpredicted" 0
e2e_check "moved share $moved/$total matches the predicted $p (4 sigma)" \
	python3 -c "
import math, sys
p, k, n = $p, $moved, $total
sys.exit(0 if abs(k / n - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1 / n else 1)"
e2e_lookups "$work/want" web "$TB_CLIENT_IP4" "$FB" 300 ||
	e2e_fail "ringctl lookup"
e2e_expect_eq "300 flows on the node ringctl lookup names" \
	"$(($(e2e_mismatch "$work/want" "$work/after") - (FLOWS - 300)))" 0

# ---- the same document again: nothing -------------------------------------
ring_id()
{
	tb_exec "$TB_DIR_NS" bpftool map lookup pinned \
		/sys/fs/bpf/ringmaster/rm_rings key 0 0 0 0 -j |
		e2e_json 'd["value"]'
}
id1=$(ring_id)
out=$(e2e_ctl apply "$work/d1" --json)
e2e_expect_eq "the same document twice: changed=false, ring map not swapped" \
	"$(echo "$out" | e2e_json 'd["changed"]'):$(ring_id)" "False:$id1"

# ---- bad documents change nothing -----------------------------------------
e2e_ctl save >"$work/s1"
bad_line=$(($(wc -l <"$work/s0") + 1)) # the line each bad document appends
{ cat "$work/s0"; echo "node add web node9 --mac 02:00:00:00:00:zz --dev d-n1"; } >"$work/bad1"
e2e_ctl apply "$work/bad1" >/dev/null 2>"$work/bad1.err"
rc=$?
e2e_ctl save >"$work/s1.b1"
e2e_expect_eq "syntax error: exit 2, line named, nothing changed ($(cat "$work/bad1.err"))" \
	"$rc:$(grep -c "line $bad_line:" "$work/bad1.err"):$(cmp -s "$work/s1" "$work/s1.b1" && echo same)" \
	"2:1:same"
{ cat "$work/s0"; echo "node add web node9 --mac 02:00:00:00:00:09 --dev nosuchdev0"; } >"$work/bad2"
e2e_ctl apply "$work/bad2" >/dev/null 2>"$work/bad2.err"
rc=$?
e2e_ctl save >"$work/s1.b2"
e2e_expect_eq "missing interface: exit 1, the line and interface named, nothing changed ($(cat "$work/bad2.err"))" \
	"$rc:$(grep -c "line $bad_line: .*nosuchdev0.*(nothing changed)" "$work/bad2.err"):$(cmp -s "$work/s1" "$work/s1.b2" && echo same)" \
	"1:1:same"
e2e_flows "$work/after2" "${client[@]}"
e2e_check "flows still where the good document put them" \
	cmp -s "$work/after" "$work/after2"

# ---- the applied revision -------------------------------------------------
e2e_ctl apply "$work/d1" --revision 42 --source "test /ringmaster" >/dev/null
sleep 1.1
e2e_expect_eq "show --json: applied revision 42, age >= 1 s" \
	"$(e2e_ctl show --json | e2e_json '"%d %s" % (d["applied"]["revision"], d["applied"]["age_s"] >= 1)')" \
	"42 True"
e2e_expect_eq "ringload status --json: applied revision 42" \
	"$(e2e_load status --json | e2e_json 'd["applied"]["revision"]')" 42

e2e_load purge --pin-dir "$PIN_B" >/dev/null 2>&1
suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
