#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Detach and attach again under traffic.
#   - attached: flows land where `ringctl lookup` says (TCP/IPv4 and
#     UDP/IPv6),
#   - `ringload detach`: the program leaves d-in, the VIP falls to the
#     director's own routing, which sends it to node1, so every flow is
#     answered by node1; the data plane counts nothing meanwhile; servers,
#     services, nodes, rings and seed are all still there (state kept),
#   - `ringload attach` again: the very flows of the first run and new
#     ones land where `ringctl lookup` says, on the same nodes as before,
#   - a second attach on the same interface is refused and harms nothing,
#   - `ringload detach --purge` removes the pinned state; the testbed's
#     teardown leaves nothing behind.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=300
PIN=/sys/fs/bpf/ringmaster

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/attach
mkdir -p "$work"

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
if ! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ! e2e_add_nodes web ||
	! e2e_ctl service add webu6 --vip "$TB_VIP6" --port "$E2E_PORT" \
		--proto udp >/dev/null || ! e2e_add_nodes webu6; then
	e2e_die "services web (tcp4) and webu6 (udp6) with 3 nodes"
fi
e2e_start_servers || e2e_die "servers started"
e2e_pass "attached, services web (tcp4) and webu6 (udp6) on node1..node3"

# status_iface: "MODE ATTACHED" of d-in in ringload status, or "none".
status_iface()
{
	e2e_load status --json | e2e_json \
		'[(i["mode"], str(i["attached"]).lower()) for i in d["interfaces"]
		  if i["name"] == "'"$TB_DIR_IN"'"] or "none"'
}

# xdp_on: does d-in run an XDP program at all (ip link says)?
# shellcheck disable=SC2317 # called through e2e_check
xdp_on()
{
	ip -n "$TB_DIR_NS" -d link show dev "$TB_DIR_IN" | grep -q 'xdp'
}

# shellcheck disable=SC2317 # called through e2e_check
xdp_off()
{
	! xdp_on
}

# state: services, nodes, shares and seed as ringctl reports them.
state()
{
	{
		e2e_ctl seed --json
		e2e_ctl show --json
	} | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if "seed" in d:
        print("seed", d["seed"], d.get("seeded"))
        continue
    for s in d["services"]:
        print(s["name"], s["vip"], s["port"], s["proto"], s["entries"],
              s["ring_matches"])
        for n in s["nodes"]:
            print(" ", n["name"], n["state"], n["weight"], n["share"],
                  n["mac"], n["dev"])
'
}

# forwarded: packets the data plane has forwarded so far.
forwarded()
{
	e2e_ctl stats --json | e2e_json \
		'd["counters"]["forwarded-tx"] + d["counters"]["forwarded-redirect"]'
}

# flows NAME SVC VIP PROTO SRC BASE: N flows; checks all answered and each
# on the node ringctl lookup names (lookups kept in NAME.want).
ring_flows()
{
	local name=$1 svc=$2 vip=$3 proto=$4 src=$5 base=$6
	e2e_flows "$work/$name" --vip "$vip" --proto "$proto" --count "$N" \
		--sport-base "$base" --retries 2 --timeout-ms 3000
	e2e_expect_eq "$name: $N $proto flows answered" \
		"$(grep -vc ' FAIL$' "$work/$name")" "$N"
	if e2e_lookups "$work/$name.want" "$svc" "$src" "$base" "$N"; then
		e2e_expect_eq "$name: every flow on the node ringctl lookup names ($(tr -d '\n' <"$work/$name.err" | sed 's/.*nodes: //'))" \
			"$(e2e_mismatch "$work/$name.want" "$work/$name")" 0
	else
		e2e_fail "$name: ringctl lookup failed"
	fi
}

# node1_flows NAME VIP PROTO BASE: N flows, all answered by node1.
node1_flows()
{
	local name=$1 vip=$2 proto=$3 base=$4
	e2e_flows "$work/$name" --vip "$vip" --proto "$proto" --count "$N" \
		--sport-base "$base" --retries 2 --timeout-ms 3000
	e2e_expect_eq "$name: $N $proto flows to $vip all answered by node1" \
		"$(e2e_count "$work/$name" "${TB_NODE_NAME[TB_VIP_DEFAULT_NODE]}")" \
		"$N"
}

# ---- attached -------------------------------------------------------------
e2e_expect_eq "ringload status: $TB_DIR_IN attached natively" \
	"$(status_iface)" "native true"
e2e_check "ip link shows the XDP program on $TB_DIR_IN" xdp_on
e2e_alloc_sports "$N"
T1=$E2E_SPORT
e2e_alloc_sports "$N"
U1=$E2E_SPORT
ring_flows tcp_attached web "$TB_VIP4" tcp "$TB_CLIENT_IP4" "$T1"
ring_flows udp_attached webu6 "$TB_VIP6" udp "$TB_CLIENT_IP6" "$U1"
e2e_expect_eq "attached: flows spread over all 3 nodes" \
	"$(awk '{ print $2 }' "$work/tcp_attached" | sort -u | wc -l)" 3
state >"$work/state.before"

# ---- detached -------------------------------------------------------------
if e2e_detach >"$work/detach.out" 2>&1; then
	e2e_pass "ringload detach: $(cat "$work/detach.out")"
else
	e2e_fail "ringload detach: $(cat "$work/detach.out")"
fi
e2e_expect_eq "ringload status: $TB_DIR_IN no longer listed" \
	"$(status_iface)" none
e2e_check "no XDP program left on $TB_DIR_IN" xdp_off
fwd0=$(forwarded)

e2e_alloc_sports "$N"
node1_flows tcp_detached "$TB_VIP4" tcp "$E2E_SPORT"
e2e_alloc_sports "$N"
node1_flows udp_detached "$TB_VIP6" udp "$E2E_SPORT"
# the ports of the first run too: no program, no memory of them
node1_flows tcp_detached_again "$TB_VIP4" tcp "$T1"
e2e_expect_eq "detached: the data plane forwarded nothing" "$(forwarded)" \
	"$fwd0"

alive=0
for ((i = 1; i <= TB_NODES; i++)); do
	kill -0 "${E2E_SERVER_PID[i]}" 2>/dev/null && alive=$((alive + 1))
done
e2e_expect_eq "every node server still runs" "$alive" "$TB_NODES"
state >"$work/state.detached"
e2e_check "services, nodes, rings and seed survived the detach ($(grep -c '^ ' "$work/state.detached") node entries)" \
	cmp -s "$work/state.before" "$work/state.detached"
e2e_lookups "$work/tcp_detached.want" web "$TB_CLIENT_IP4" "$T1" "$N"
e2e_check "ringctl lookup answers as before while detached" \
	cmp -s "$work/tcp_attached.want" "$work/tcp_detached.want"

# ---- attached again -------------------------------------------------------
if e2e_attach >"$work/attach.out" 2>&1; then
	e2e_pass "ringload attach again: $(cat "$work/attach.out")"
else
	e2e_fail "ringload attach again: $(cat "$work/attach.out")"
fi
e2e_expect_eq "ringload status: $TB_DIR_IN attached natively again" \
	"$(status_iface)" "native true"
ring_flows tcp_reattached web "$TB_VIP4" tcp "$TB_CLIENT_IP4" "$T1"
e2e_check "the first run's TCP flows are back on their nodes" \
	cmp -s "$work/tcp_attached" "$work/tcp_reattached"
ring_flows udp_reattached webu6 "$TB_VIP6" udp "$TB_CLIENT_IP6" "$U1"
e2e_check "the first run's UDP flows are back on their nodes" \
	cmp -s "$work/udp_attached" "$work/udp_reattached"
e2e_alloc_sports "$N"
ring_flows tcp_new web "$TB_VIP4" tcp "$TB_CLIENT_IP4" "$E2E_SPORT"
e2e_check "attached again: the data plane forwards" \
	test "$(forwarded)" -gt "$fwd0"

# ---- a second attach is refused, harmlessly -------------------------------
if e2e_attach >"$work/attach2.out" 2>&1; then
	e2e_fail "a second ringload attach on $TB_DIR_IN succeeded"
else
	e2e_pass "a second ringload attach is refused: $(head -1 "$work/attach2.out")"
fi
e2e_expect_eq "ringload status after the refused attach" \
	"$(status_iface)" "native true"
ring_flows tcp_after_refused web "$TB_VIP4" tcp "$TB_CLIENT_IP4" "$T1"

# ---- detach --purge ---------------------------------------------------------
e2e_detach --purge >/dev/null 2>&1
e2e_check "ringload detach --purge removes $PIN" \
	tb_exec "$TB_DIR_NS" test ! -e "$PIN"
e2e_check "no XDP program left on $TB_DIR_IN" xdp_off
e2e_alloc_sports "$N"
node1_flows tcp_purged "$TB_VIP4" tcp "$E2E_SPORT"

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
