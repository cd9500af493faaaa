#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sticky connections: the connection table keeps established flows on
# their node while the ring changes under them.
#
# 50 long-lived TCP connections (rm_client --hold) exchange data without
# pause, each chunk checked byte for byte as it comes back, while:
#   - two nodes join (a new namespace each, server started, node add),
#   - weights change (node1 3, node4 2),
#   - node5 is drained (new: no held connection is on it) and node2 is
#     drained (it carries some of them: a draining node keeps its flows),
#   - node3, which carries some of them too, is marked down.
# Checked:
#   - before any change, `ringctl show` counts on every node exactly the
#     connections its server holds open;
#   - every held connection not on node3 lives to the end: status ok, no
#     reset, no error, every byte echoed; the ones on node2 included;
#   - draining: node2 and node5 leave the ring with their gen unchanged;
#     node2 keeps its connections (show still counts them, its traffic
#     goes on); 500 new connections opened after it: none on node2 or
#     node5, the rest spread over the active nodes as their shares say;
#   - down: node3's gen moves on, show counts nothing on it, its traffic
#     stops at once. Its held connections are reset, as documented: with
#     L2 direct server return their next packet goes to the ring owner,
#     which has no socket for it and answers with a RST. 200 more new
#     connections: none on node2, node3 or node5;
#   - `ringctl stats --json` agrees with what the client did: conn-miss
#     at least one per connection opened (its first packet after the
#     SYN), conn-insert that plus one per node3 connection (re-remembered
#     on its new node), conn-stale at least one per node3 connection,
#     conn-hit and forwarded packets at least what the client is known to
#     have sent, nothing dropped or rate-limited.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HOLD=50          # long-lived connections
HOLD_SECONDS=600 # at most: they end on SIGTERM once every change is made, however long that took (a bound for a hang, not a judgement)
NEW1=500         # new connections after the drain
NEW2=200         # and after the down
TABLE=65536      # ringload attach --conn-table

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/sticky
mkdir -p "$work"

e2e_attach --conn-table "$TABLE" >/dev/null ||
	e2e_die "ringload attach $TB_DIR_IN --conn-table $TABLE"
e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" --proto tcp \
	>/dev/null && e2e_add_nodes web || e2e_die "service web with 3 nodes"
e2e_start_servers || e2e_die "servers started"
e2e_pass "director attached, service web on node1..node3"

# ---- helpers ------------------------------------------------------------

# nodes FILE: "NAME STATE CONNS RECENT GEN" per node of web (ringctl show).
nodes()
{
	e2e_ctl show web --json | e2e_json '[(n["name"], n["state"],
		n["conns"], n["conns_recent"], n["gen"])
		for s in d["services"] for n in s["nodes"]]' >"$1"
}

# field FILE NODE COL: column COL (2 state, 3 conns, 4 recent, 5 gen).
field()
{
	awk -v n="$2" -v c="$3" '$1 == n { print $c }' "$1"
}

# stats FILE: ringctl stats --json.
stats()
{
	e2e_ctl stats --json >"$1"
}

# node_packets FILE NODE: packets the director sent to NODE.
node_packets()
{
	e2e_json "[n['packets'] for s in d['services'] for n in s['nodes']
		   if n['name'] == '$2'][0]" <"$1"
}

# new_flows NAME COUNT: COUNT new connections from fresh source ports.
new_flows()
{
	e2e_alloc_sports "$2"
	e2e_flows "$work/$1" --vip "$TB_VIP4" --proto tcp --count "$2" \
		--sport-base "$E2E_SPORT" --timeout-ms 3000
}

# ---- settings -----------------------------------------------------------

e2e_ctl config --json >"$work/config.json" || e2e_fail "ringctl config --json"
max=$(e2e_json 'd["conn_table"]["max_entries"]' <"$work/config.json")
if [ "$max" -ge "$TABLE" ] && [ "$max" -lt $((TABLE + 1024)) ]; then
	e2e_pass "ringctl config: a connection table of $max entries (asked $TABLE)"
else
	e2e_fail "ringctl config: connection table of '$max' entries, asked $TABLE"
fi
e2e_check "ringctl config --udp-timeout 45" e2e_ctl config --udp-timeout 45
e2e_expect_eq "ringctl config reads the UDP timeout back" \
	"$(e2e_ctl config --json | e2e_json 'd["udp_timeout_s"]')" 45

# ---- the held connections -----------------------------------------------

e2e_alloc_sports "$HOLD"
ready=$work/hold.ready
e2e_client --vip "$TB_VIP4" --proto tcp --hold "$HOLD" \
	--duration "$HOLD_SECONDS" --sport-base "$E2E_SPORT" \
	--ready-file "$ready" >"$work/hold.out" 2>"$work/hold.err" &
HOLD_PID=$!
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'kill "$HOLD_PID" 2>/dev/null'
start=$SECONDS
e2e_wait_for 15 test -s "$ready" || e2e_die "held connections never ready: $(cat "$work/hold.err")"
e2e_expect_eq "$HOLD connections open" "$(cat "$ready")" "connected $HOLD $HOLD"
# every connection has exchanged data by now, and the servers' counters
# (refreshed every 100 ms) are current
sleep 1

declare -a held
total=0
for i in 1 2 3; do
	held[i]=$(e2e_server_count "$i" tcp_open)
	total=$((total + held[i]))
done
e2e_log "held connections: node1 ${held[1]}, node2 ${held[2]}, node3 ${held[3]}"
e2e_expect_eq "the servers hold the $HOLD connections" "$total" "$HOLD"
if [ "${held[2]}" -eq 0 ] || [ "${held[3]}" -eq 0 ]; then
	e2e_die "node2 and node3 must carry held connections (node2 ${held[2]}, node3 ${held[3]})"
fi
nodes "$work/nodes.0"
for i in 1 2 3; do
	e2e_expect_eq "ringctl show: node$i has ${held[i]} connections, as its server says" \
		"$(field "$work/nodes.0" "node$i" 3) $(field "$work/nodes.0" "node$i" 4)" \
		"${held[i]} ${held[i]}"
done
gen2=$(field "$work/nodes.0" node2 5)
gen3=$(field "$work/nodes.0" node3 5)

# ---- ring changes under the held connections ----------------------------

for k in 1 2; do
	if ! testbed_add_node; then
		e2e_die "testbed_add_node"
	fi
	e2e_start_server "$TB_NODES" || e2e_die "server on node$TB_NODES"
	e2e_add_nodes web "$TB_NODES" || e2e_die "ringctl node add web node$TB_NODES"
done
e2e_pass "node4 and node5 joined"
e2e_check "weights: node1 3" e2e_ctl node set web node1 --weight 3
e2e_check "weights: node4 2" e2e_ctl node set web node4 --weight 2
e2e_check "drain node5 (no held connection on it)" \
	e2e_ctl node set web node5 --drain
stats "$work/stats.drain0"
e2e_check "drain node2 (${held[2]} held connections on it)" \
	e2e_ctl node set web node2 --drain
sleep 1
stats "$work/stats.drain1"

nodes "$work/nodes.1"
e2e_expect_eq "drained: node2 and node5 draining, gens unchanged" \
	"$(field "$work/nodes.1" node2 2) $(field "$work/nodes.1" node2 5) $(field "$work/nodes.1" node5 2)" \
	"draining $gen2 draining"
e2e_expect_eq "drained node2 still has its ${held[2]} connections, all busy" \
	"$(field "$work/nodes.1" node2 3) $(field "$work/nodes.1" node2 4)" \
	"${held[2]} ${held[2]}"
e2e_expect_eq "drained node5 has no connection" \
	"$(field "$work/nodes.1" node5 3)" 0
if [ "$(node_packets "$work/stats.drain1" node2)" -gt \
	"$(node_packets "$work/stats.drain0" node2)" ]; then
	e2e_pass "traffic goes on to drained node2"
else
	e2e_fail "no traffic to drained node2 after the drain"
fi

acc2=$(e2e_server_count 2 tcp_accepted)
acc5=$(e2e_server_count 5 tcp_accepted)
new_flows new1 "$NEW1"
e2e_expect_eq "$NEW1 new connections after the drain answered" \
	"$(grep -vc ' FAIL$' "$work/new1")" "$NEW1"
e2e_expect_eq "none of them on drained node2 or node5" \
	"$(e2e_count "$work/new1" node2) $(e2e_count "$work/new1" node5)" "0 0"
sleep 0.3
e2e_expect_eq "the servers of node2 and node5 accepted none" \
	"$(($(e2e_server_count 2 tcp_accepted) - acc2)) $(($(e2e_server_count 5 tcp_accepted) - acc5))" \
	"0 0"
# the rest follow the weights: node1 3, node3 1, node4 2
e2e_shares web >"$work/shares.1"
obs='' shares=''
for n in node1 node3 node4; do
	obs="$obs $(e2e_count "$work/new1" "$n")"
	shares="$shares $(awk -v n="$n" '$1 == n { print $2 }' "$work/shares.1")"
done
if res=$(e2e_chisq "$obs" "$shares" 2>/dev/null); then
	e2e_pass "new connections follow the shares of node1/3/4 ($obs vs$shares: $res)"
else
	e2e_fail "new connections do not follow the shares ($obs vs$shares: $res)"
fi

# ---- down ---------------------------------------------------------------

e2e_check "down node3 (${held[3]} held connections on it)" \
	e2e_ctl node set web node3 --down
down_at=$((SECONDS - start))
sleep 1
stats "$work/stats.down0"
nodes "$work/nodes.2"
e2e_expect_eq "down: node3 down, its gen moved on, no connection counted" \
	"$(field "$work/nodes.2" node3 2) $(field "$work/nodes.2" node3 5) $(field "$work/nodes.2" node3 3)" \
	"down $((gen3 + 1)) 0"
e2e_expect_eq "node2 still has its ${held[2]} connections" \
	"$(field "$work/nodes.2" node2 3)" "${held[2]}"

new_flows new2 "$NEW2"
e2e_expect_eq "$NEW2 new connections after the down answered" \
	"$(grep -vc ' FAIL$' "$work/new2")" "$NEW2"
e2e_expect_eq "none of them on node2, node3 or node5" \
	"$(e2e_count "$work/new2" node2) $(e2e_count "$work/new2" node3) $(e2e_count "$work/new2" node5)" \
	"0 0 0"
sleep 1
stats "$work/stats.down1"
e2e_expect_eq "no packet for node3 after it went down" \
	"$(node_packets "$work/stats.down1" node3)" \
	"$(node_packets "$work/stats.down0" node3)"
if kill -0 "$HOLD_PID" 2>/dev/null; then
	e2e_pass "every change happened while the connections were held (down at ${down_at}s)"
else
	e2e_fail "the held connections ended before the changes were over ($((SECONDS - start))s)"
fi
# end them now: rm_client reports on SIGTERM as at the end of its duration
# (it is the child of the background e2e_client, HOLD_PID, by way of ip
# netns exec and sh, which both exec)
pkill -TERM -P "$HOLD_PID" 2>/dev/null

# ---- the held connections' fate ----------------------------------------

wait "$HOLD_PID"
HOLD_PID=
out=$work/hold.out
e2e_expect_eq "every held connection reported" \
	"$(grep -c ' status=' "$out")" "$HOLD"
for i in 1 2 3; do
	e2e_expect_eq "node$i's connections, as its server counted them" \
		"$(awk -v n="node$i" '$3 == n' "$out" | wc -l)" "${held[i]}"
done
# fields: SRC SPORT NODE bytes= chunks= errors= resets= status=
e2e_expect_eq "connections off node3: all ok, no reset, no error" \
	"$(awk '$3 != "node3" && !($6 == "errors=0" && $7 == "resets=0" &&
		$8 == "status=ok") { bad++ } END { print bad + 0 }' "$out")" 0
e2e_expect_eq "drained node2's ${held[2]} connections among them, to the end" \
	"$(awk '$3 == "node2" && $8 == "status=ok"' "$out" | wc -l)" "${held[2]}"
e2e_expect_eq "node3's ${held[3]} connections reset (down: RST from the ring owner)" \
	"$(awk '$3 == "node3" && $7 != "resets=0" && $8 == "status=reset"' \
		"$out" | wc -l)" "${held[3]}"
minchunks=$(awk '$3 != "node3" { split($5, c, "="); if (m == "" || c[2] < m) m = c[2] }
	END { print m + 0 }' "$out")
if [ "$minchunks" -ge 100 ]; then
	e2e_pass "data flowed all along: at least $minchunks chunks echoed per connection"
else
	e2e_fail "a connection echoed only $minchunks chunks"
fi
sleep 0.3
sent=$(awk '{ split($4, b, "="); s += b[2] } END { print s + 0 }' "$out")
echoed=0
for ((i = 1; i <= TB_NODES; i++)); do
	echoed=$((echoed + $(e2e_server_count "$i" bytes_echoed)))
done
if [ "$sent" -gt 0 ] && [ "$echoed" -ge "$sent" ]; then
	e2e_pass "every byte echoed: the client checked $sent, the servers echoed $echoed"
else
	e2e_fail "client checked $sent bytes, servers echoed $echoed"
fi

# ---- counters -----------------------------------------------------------

stats "$work/stats.end"
opened=$((HOLD + NEW1 + NEW2))
chunks=$(awk '{ split($5, c, "="); s += c[2] } END { print s + 0 }' "$out")
if res=$(python3 - "$work/stats.end" "$opened" "${held[3]}" "$chunks" \
	"$HOLD" $((NEW1 + NEW2)) <<'EOF'
import json
import sys

c = json.load(open(sys.argv[1]))["counters"]
opened, down, chunks, hold, short = map(int, sys.argv[2:])
fwd = c["forwarded-tx"] + c["forwarded-redirect"]
# per connection SYN and ACK; a short one resets too; a held one sends a
# packet per chunk at least
sent = 2 * hold + 3 * short + chunks
checks = [
    ("conn-insert >= %d" % (opened + down), c["conn-insert"] >= opened + down),
    ("conn-miss >= %d" % opened, c["conn-miss"] >= opened),
    ("conn-stale >= %d" % down, c["conn-stale"] >= down),
    ("conn-hit >= %d" % chunks, c["conn-hit"] >= chunks),
    ("conn-insert-limited == 0", c["conn-insert-limited"] == 0),
    ("dropped-no-node == 0", c["dropped-no-node"] == 0),
    ("forwarded >= %d" % sent, fwd >= sent),
]
text = ", ".join("%s (%s)" % (name, "ok" if ok else "NO") for name, ok in checks)
print("insert %d miss %d stale %d hit %d forwarded %d: %s" % (
    c["conn-insert"], c["conn-miss"], c["conn-stale"], c["conn-hit"], fwd,
    text))
sys.exit(0 if all(ok for _, ok in checks) else 1)
EOF
); then
	e2e_pass "ringctl stats consistent with the traffic: $res"
else
	e2e_fail "ringctl stats: $res"
fi

e2e_finish
