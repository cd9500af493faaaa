#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringctl top, driven in tmux with known traffic:
#   - COUNT UDP datagrams (one per flow, no retries) to service dns of 3
#     nodes; top, running full screen in a tmux pane, shows dns with
#     PACKETS = COUNT and each node with exactly what its server got, the
#     nodes sorted by packet rate while a bounded stream to one flow runs
#     (that flow's node first, with a rate > 0), and quits on q;
#   - --once --json: rates over one interval, totals equal to ringctl
#     stats --json; a drop outcome (dropped-no-node, traffic to a service
#     with no node) shows a rate > 0, and the text frame highlights it.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COUNT=240
e2e_require_tools tmux
e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/top
mkdir -p "$work"
e2e_service_up dns udp

e2e_udp_known "$work/flows" "$COUNT"

# top in a tmux pane of its own server (socket in the state dir)
sock=$TB_STATE_DIR/tmux.sock
cat >"$work/run-top" <<SH
#!/bin/sh
TB_BPFFS='$TB_BPFFS' exec ip netns exec '$TB_DIR_NS' sh -c '$_tb_exec_sh' sh '$RINGCTL' top --interval 500ms
SH
chmod +x "$work/run-top"
tmux -S "$sock" new-session -d -s top -x 150 -y 40 "$work/run-top" ||
	e2e_die "tmux new-session"
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'tmux -S "$sock" kill-server 2>/dev/null'
screen()
{
	tmux -S "$sock" capture-pane -p -t top 2>/dev/null
}
e2e_wait_for 15 sh -c "tmux -S '$sock' capture-pane -p -t top | grep -q '^dns '" ||
	e2e_die "top never showed service dns: $(screen)"
sleep 1
screen >"$work/screen1"
e2e_expect_eq "top shows dns with PACKETS = the $COUNT datagrams sent" \
	"$(awk '$1 == "dns" && $2 == "*" { print $6 }' "$work/screen1")" "$COUNT"
e2e_ctl stats --json >"$work/stats0.json"
for i in 1 2 3; do
	got=$(e2e_server_count "$i" udp_datagrams)
	e2e_expect_eq "top: node$i PACKETS = what its server received" \
		"$(awk -v n="node$i" '$1 == n { print $7 }' "$work/screen1")" "$got"
	# each flow was one datagram: every one a new flow of its node
	e2e_expect_eq "stats: node$i new flows = the $got one-datagram flows its server received" \
		"$(e2e_json "[n['new_flows'] for s in d['services'] for n in s['nodes'] if n['name'] == 'node$i'][0]" <"$work/stats0.json")" \
		"$got"
done
e2e_check "top shows the header and outcomes/s" grep -q '^outcomes/s: ' "$work/screen1"

# a bounded stream of one flow: its node must come first, with a rate
e2e_alloc_sports 1
e2e_lookups "$work/owner" dns "$TB_CLIENT_IP4" "$E2E_SPORT" 1
owner=$(awk '{ print $2 }' "$work/owner")
(
	for ((k = 0; k < 40; k++)); do
		e2e_client --vip "$TB_VIP4" --proto udp --count 1 \
			--sport-base "$E2E_SPORT" --retries 0 --timeout-ms 500 >/dev/null 2>&1
	done
) &
stream=$!
e2e_on_teardown "kill $stream 2>/dev/null"
first=
for ((t = 0; t < 60; t++)); do
	sleep 0.25
	screen >"$work/screen2"
	first=$(awk '$1 == "dns" { on = 1; next } on && $1 ~ /^node/ { print $1, $4; exit }' "$work/screen2")
	[ "${first%% *}" != "$owner" ] || [ "${first##* }" = 0 ] || break
done
wait "$stream"
e2e_expect_eq "while one flow streams, its node ($owner) is listed first with a rate > 0" \
	"$(echo "$first" | awk '{ print $1, ($2 > 0) }')" "$owner 1"

tmux -S "$sock" send-keys -t top q
e2e_wait_for 10 sh -c "! tmux -S '$sock' has-session -t top 2>/dev/null" 
e2e_expect_eq "q quits top (the pane's process ended)" \
	"$(tmux -S "$sock" has-session -t top 2>/dev/null && echo running)" ""

# ---- --once / --json ----------------------------------------------------
e2e_ctl stats --json >"$work/stats.json"
e2e_ctl top --once --json --interval 500ms >"$work/once.json"
e2e_expect_eq "top --json: totals as ringctl stats says" \
	"$(e2e_json '[(n["name"], n["packets"]) for s in d["services"] for n in s["nodes"]]' <"$work/once.json" | sort)" \
	"$(e2e_json '[(n["name"], n["packets"]) for s in d["services"] for n in s["nodes"]]' <"$work/stats.json" | sort)"
# new flows at a known pace: 30 rounds of 20 one-datagram flows
e2e_alloc_sports 600
(
	for ((k = 0; k < 30; k++)); do
		e2e_client --vip "$TB_VIP4" --proto udp --count 20 --parallel 20 \
			--sport-base $((E2E_SPORT + k * 20)) --retries 0 \
			--timeout-ms 500 >/dev/null 2>&1
		sleep 0.1
	done
) &
burst=$!
e2e_on_teardown "kill $burst 2>/dev/null"
sleep 0.3
e2e_ctl top --once --json --interval 1s >"$work/flows.json"
e2e_ctl stats --json >"$work/flows-stats.json"
e2e_ctl top --once --interval 1s >"$work/flows.txt"
wait "$burst"
e2e_expect_eq "top --json: while new flows arrive, every node has new flows/s > 0" \
	"$(e2e_json '[n["name"] for s in d["services"] for n in s["nodes"] if n["new_flows_per_s"] > 0]' <"$work/flows.json" | sort | xargs)" \
	"node1 node2 node3"
# in flows over the interval: rates are floats, their sums round apart
e2e_expect_eq "top --json: the service's new flows/s is its nodes' sum" \
	"$(e2e_json '[(s["name"], round(s["new_flows_per_s"] * d["interval_s"]), sum(round(n["new_flows_per_s"] * d["interval_s"]) for n in s["nodes"])) for s in d["services"]]' <"$work/flows.json" | awk '$2 > 0 && $2 == $3 { print $1 }')" \
	"dns"
e2e_expect_eq "stats --json while new flows arrive: the service's new flows are its nodes' sum" \
	"$(e2e_json '[s["name"] for s in d["services"] if s["new_flows"] > 0 and s["new_flows"] == sum(n["new_flows"] for n in s["nodes"])]' <"$work/flows-stats.json")" \
	"dns"
e2e_expect_eq "top: the FLOWS/S column shows a rate for every node" \
	"$(awk '$1 ~ /^node/ && $6 > 0 { print $1 }' "$work/flows.txt" | sort | xargs)" \
	"node1 node2 node3"
e2e_expect_eq "top --json: no traffic, no rate" \
	"$(e2e_json 'd["services"][0]["packets_per_s"]' <"$work/once.json")" 0

e2e_ctl service add empty --vip "$TB_VIP4" --port $((E2E_PORT + 1)) --proto udp >/dev/null
# dropped flows wait out their timeout: 400 flows 20 at a time, 300 ms
# each, keep packets coming for the 6 s both top runs need at most
e2e_alloc_sports 400
e2e_client --vip "$TB_VIP4" --port $((E2E_PORT + 1)) --proto udp --count 400 \
	--parallel 20 --sport-base "$E2E_SPORT" --retries 0 --timeout-ms 300 >/dev/null 2>&1 &
flood=$!
sleep 0.2
e2e_ctl top --once --json --interval 1s >"$work/drops.json"
e2e_ctl top --once --interval 1s >"$work/drops.txt"
wait "$flood"
if [ "$(e2e_json 'd["outcomes_per_s"]["dropped-no-node"] > 0' <"$work/drops.json")" = True ]; then
	e2e_pass "top --json: dropped-no-node/s > 0 while the empty service gets traffic"
else
	e2e_fail "top --json: no dropped-no-node rate: $(cat "$work/drops.json")"
fi
e2e_check "top --once prints the frame without colours" \
	sh -c "grep -q 'dropped-no-node [1-9]' '$work/drops.txt' && ! grep -q \$'\\033' '$work/drops.txt'"

# state and health per node: node2 drained by the operator, no checker
e2e_ctl node set dns node2 --drain >/dev/null || e2e_die "node set node2 --drain"
e2e_ctl top dns --once --json --interval 100ms >"$work/state.json"
e2e_ctl top dns --once --interval 100ms >"$work/state.txt"
e2e_expect_eq "top --json: each node's state, health and whether it is in the ring" \
	"$(e2e_json '" ".join("%s:%s:%s:%s" % (n["name"], n["state"], n["health"], n["in_ring"]) for n in sorted(d["services"][0]["nodes"], key=lambda n: n["name"]))' <"$work/state.json")" \
	"node1:active:unchecked:True node2:draining:unchecked:False node3:active:unchecked:True"
e2e_check "top text: node2's row says draining, no health verdict (-), share 0" \
	grep -qE '^ +node2 +draining +- .* 0\.000%$' "$work/state.txt"

e2e_finish
