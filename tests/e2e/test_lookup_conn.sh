#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `ringctl lookup` and the connection table: for a flow the table holds,
# lookup names the node the table sends it to and whether that differs
# from the ring's owner.
#
# HOLD long-lived TCP connections are opened to 3 nodes; then node4 joins
# (some flows' ring owner becomes node4, their connections stay put), then
# node1 goes down (its entries become stale). Checked, per held flow:
#   - before the change: an entry, valid, on the ring owner (differs false);
#   - after node4 joins: the entry still names the node it had, and
#     differs is true exactly for the flows whose ring owner moved (at
#     least one); the table's nodes, counted, are what each server holds;
#   - after node1 is down: no entry sends node1's flows to node1 any more
#     (stale, or already remembered on the ring owner by their next
#     packet), the others are unchanged;
#   - a flow never opened: no entry; the text output says the same.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HOLD=60

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/lookup
mkdir -p "$work"

e2e_service_up web tcp

e2e_alloc_sports "$HOLD"
base=$E2E_SPORT
ready=$work/hold.ready
e2e_client --vip "$TB_VIP4" --proto tcp --hold "$HOLD" --duration 120 \
	--sport-base "$base" --ready-file "$ready" \
	>"$work/hold.out" 2>"$work/hold.err" &
hold_pid=$!
e2e_on_teardown "kill $hold_pid 2>/dev/null"
e2e_wait_for 20 test -s "$ready" || e2e_die "held connections never ready: $(cat "$work/hold.err")"
e2e_expect_eq "$HOLD connections open" "$(cat "$ready")" "connected $HOLD $HOLD"
sleep 1

# lookups FILE: "SPORT OWNER FOUND VALID CONN_NODE DIFFERS" per held flow.
lookups()
{
	# shellcheck disable=SC2016 # expanded by the inner sh
	tb_exec "$TB_DIR_NS" sh -c '
		ctl=$1 src=$2 base=$3 n=$4
		for p in $(seq "$base" $((base + n - 1))); do
			"$ctl" lookup web --src "$src" --sport "$p" --json
		done' sh "$RINGCTL" "$TB_CLIENT_IP4" "$base" "$HOLD" |
		python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    c = d["conn"]
    print(d["sport"], d["node"], c["found"], c.get("valid"),
          c.get("node", "-"), c.get("differs", "-"))
' >"$1"
}

lookups "$work/before"
e2e_expect_eq "before any change: every held flow has a valid entry on its ring owner" \
	"$(awk '$3 == "True" && $4 == "True" && $5 == $2 && $6 == "False"' "$work/before" | wc -l)" "$HOLD"

testbed_add_node || e2e_die "testbed_add_node"
e2e_start_server 4 || e2e_die "server on node4"
e2e_add_nodes web 4 || e2e_die "node add web node4"
lookups "$work/after"
moved=$(awk 'NR == FNR { o[$1] = $2; next } $2 != o[$1]' "$work/before" "$work/after" | wc -l)
e2e_log "after node4 joined: $moved of $HOLD held flows have a new ring owner"
if [ "$moved" -gt 0 ]; then
	e2e_pass "node4 took the ring ownership of $moved held flows"
else
	e2e_fail "node4 owns none of the $HOLD held flows"
fi
e2e_expect_eq "after: each entry still names the node it had, valid" \
	"$(awk 'NR == FNR { o[$1] = $5; next } $3 == "True" && $4 == "True" && $5 == o[$1]' "$work/before" "$work/after" | wc -l)" "$HOLD"
e2e_expect_eq "after: differs is true exactly for the flows whose ring owner moved" \
	"$(awk '($2 != $5) != ($6 == "True")' "$work/after" | wc -l)" 0
for i in 1 2 3; do
	e2e_expect_eq "node$i: the table's entries match the connections its server holds" \
		"$(awk -v n="node$i" '$5 == n' "$work/after" | wc -l)" "$(e2e_server_count "$i" tcp_open)"
done
e2e_ctl lookup web --src "$TB_CLIENT_IP4" --sport "$((base + HOLD - 1))" >"$work/text"
e2e_check "text output names the table's node" grep -q "connection table: node node[1-3] " "$work/text"
mv_port=$(awk '$2 != $5 { print $1; exit }' "$work/after")
e2e_ctl lookup web --src "$TB_CLIENT_IP4" --sport "$mv_port" >"$work/text2"
e2e_check "text output of a moved flow says it differs from the ring owner" \
	grep -q "DIFFERS from the ring owner" "$work/text2"

e2e_check "node1 down" e2e_ctl node set web node1 --down
lookups "$work/down"
on1=$(awk '$5 == "node1"' "$work/after" | wc -l)
# node1's flows: stale, or (their next packet came) remembered again on
# their ring owner; no entry sends anything to node1 any more
e2e_expect_eq "down: none of node1's $on1 entries still sends to node1; the others unchanged" \
	"$(awk 'NR == FNR { o[$1] = $5; next }
		o[$1] == "node1" && ($4 == "False" || ($5 == $2 && $5 != "node1")) ||
		o[$1] != "node1" && $4 == "True" && $5 == o[$1]' "$work/after" "$work/down" | wc -l)" "$HOLD"

e2e_alloc_sports 1
e2e_expect_eq "a flow never opened: no entry" \
	"$(e2e_ctl lookup web --src "$TB_CLIENT_IP4" --sport "$E2E_SPORT" --json | e2e_json 'd["conn"]["found"]')" False
e2e_ctl lookup web --src "$TB_CLIENT_IP4" --sport "$E2E_SPORT" >"$work/text3"
e2e_check "text output says: no entry" grep -q "connection table: no entry" "$work/text3"

e2e_finish
