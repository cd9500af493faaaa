#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sharing d-in with another XDP program through the chain (no freplace):
# the root on d-in, the director in slot 0, and behind it in slot 1
# xc_count (tests/bpf/xdp_count.bpf.c), an independent program that
# counts packets by IP protocol in its own map and passes them all.
#   - chained: VIP flows land where `ringctl lookup` says and never reach
#     xc_count; N pings to the director's own address (not a VIP) reach
#     xc_count (its ICMP count moves by exactly N) and are answered;
#     status, chain show and doctor show the chain;
#   - `ringload detach`: xc_count stays and keeps counting (pings answered,
#     VIP flows now reach it and fall to the director's routing: node1);
#     the state survives;
#   - `ringload attach --chain` again: forwarding is back, xc_count still
#     sees the pings;
#   - `ringload chain del --slot 1`: the director forwards alone behind the
#     root; detaching it then takes the root off;
#   - in front of the director (slot 1): xc_count ends the chain, and
#     doctor says so; xf_front (tests/bpf/xdp_front.bpf.c), built with
#     rm_chain.h, hands packets on: the director behind it forwards, and
#     xf_front stays when the director is detached; nothing is left.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=100
PINGS=20
PIN=/sys/fs/bpf/ringmaster
XC_OBJ=$E2E_BUILD/tests/xdp_count.bpf.o
XC_MAP=$PIN/chain/d-in/1/xc_counts
XF_OBJ=$E2E_BUILD/tests/xdp_front.bpf.o

e2e_require_director
if [ ! -f "$XC_OBJ" ] || [ ! -f "$XF_OBJ" ]; then
	e2e_die "$XC_OBJ or $XF_OBJ missing: run make"
fi
e2e_setup 3
work=$TB_STATE_DIR/chain
mkdir -p "$work"
# whatever happens, the chain goes before the testbed
e2e_on_teardown "tb_exec '$TB_DIR_NS' '$RINGLOAD' chain del '$TB_DIR_IN' --slot 1 >/dev/null 2>&1; tb_exec '$TB_DIR_NS' '$RINGLOAD' chain del '$TB_DIR_IN' --slot 0 >/dev/null 2>&1; tb_exec '$TB_DIR_NS' '$RINGLOAD' detach '$TB_DIR_IN' >/dev/null 2>&1"

# step DESC CMD...: CMD must succeed; its output goes into the verdict.
step()
{
	local desc=$1 out=$work/step.out
	shift
	if "$@" >"$out" 2>&1; then
		e2e_pass "$desc: $(cat "$out")"
	else
		e2e_fail "$desc: $(cat "$out")"
	fi
}

if e2e_attach --chain >"$work/attach.out" 2>&1; then
	e2e_pass "ringload attach --chain: $(cat "$work/attach.out")"
else
	e2e_die "ringload attach --chain: $(cat "$work/attach.out")"
fi
if e2e_load chain add "$TB_DIR_IN" "$XC_OBJ" --slot 1 >"$work/add.out" 2>&1
then
	e2e_pass "ringload chain add: $(cat "$work/add.out")"
else
	e2e_die "ringload chain add: $(cat "$work/add.out")"
fi
if ! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ! e2e_add_nodes web; then
	e2e_die "service web (tcp4) with 3 nodes"
fi
e2e_start_servers || e2e_die "servers started"

# xc PROTO: packets of IP protocol PROTO xc_count has counted.
xc()
{
	tb_exec "$TB_DIR_NS" bpftool -j map lookup pinned "$XC_MAP" \
		key "$1" 0 0 0 | python3 -c '
import json, sys
d = json.load(sys.stdin)
v = d.get("formatted", d)["value"]
print(v if isinstance(v, int) else int.from_bytes(bytes(int(x, 16) for x in v), "little"))'
}

# xf: packets xf_front (slot 0) has counted
xf()
{
	tb_exec "$TB_DIR_NS" bpftool -j map lookup pinned \
		"$PIN/chain/d-in/0/xf_counts" key 0 0 0 0 | python3 -c '
import json, sys
d = json.load(sys.stdin)
v = d.get("formatted", d)["value"]
print(v if isinstance(v, int) else int.from_bytes(bytes(int(x, 16) for x in v), "little"))'
}

# pings: PINGS echo requests to the director's own address, all answered
# shellcheck disable=SC2317 # called through e2e_check
pings()
{
	tb_exec "$TB_CLIENT_NS" ping -q -n -c "$PINGS" -i 0.02 -W 2 \
		"$TB_DIR_IN_IP4" >"$work/ping.out" 2>&1 &&
		grep -q " $PINGS received" "$work/ping.out"
}

forwarded()
{
	e2e_ctl stats --json | e2e_json \
		'd["counters"]["forwarded-tx"] + d["counters"]["forwarded-redirect"]'
}

# ring_flows NAME BASE: N TCP flows to the VIP, all answered, each on the
# node ringctl lookup names
ring_flows()
{
	local name=$1 base=$2
	e2e_flows "$work/$name" --vip "$TB_VIP4" --proto tcp --count "$N" \
		--sport-base "$base" --retries 2 --timeout-ms 3000
	e2e_expect_eq "$name: $N flows answered" \
		"$(grep -vc ' FAIL$' "$work/$name")" "$N"
	if e2e_lookups "$work/$name.want" web "$TB_CLIENT_IP4" "$base" "$N"
	then
		e2e_expect_eq "$name: every flow on the node ringctl lookup names" \
			"$(e2e_mismatch "$work/$name.want" "$work/$name")" 0
	else
		e2e_fail "$name: ringctl lookup failed"
	fi
	e2e_expect_eq "$name: flows spread over all 3 nodes" \
		"$(awk '{ print $2 }' "$work/$name" | sort -u | wc -l)" 3
}

# ping_counted WHAT: PINGS answered pings, each seen by xc_count once
ping_counted()
{
	local before after
	before=$(xc 1)
	e2e_check "$1: $PINGS pings to $TB_DIR_IN_IP4 answered" pings
	after=$(xc 1)
	e2e_expect_eq "$1: xc_count's ICMP count moved by $PINGS" \
		"$((after - before))" "$PINGS"
}

# chain: "SLOT NAME" lines of ringload chain show --json
chain()
{
	e2e_load chain show "$TB_DIR_IN" --json |
		e2e_json '[(s["slot"], s["name"]) for s in d["chain"]]'
}

# ---- the director in slot 0, xc_count in slot 1 ---------------------------
e2e_expect_eq "chain show: rm_xdp in slot 0, xc_count in slot 1" \
	"$(chain | tr '\n' ' ')" "0 rm_xdp 1 xc_count "
e2e_expect_eq "ringload status: d-in's director is in the chain" \
	"$(e2e_load status --json | e2e_json '[(i["name"], i["attached"], [s["name"] for s in i["chain"]]) for i in d["interfaces"]]')" \
	"d-in True ['rm_xdp', 'xc_count']"
e2e_load status >"$work/status.txt"
e2e_check "ringload status lists the chain" \
	grep -q "slot 1  xc_count" "$work/status.txt"
e2e_ctl doctor "$TB_DIR_IN" >"$work/doctor.txt" 2>&1
e2e_check "ringctl doctor shows the chain and finds the director in it" \
	sh -c "grep -q 'slot 0 rm_xdp' '$work/doctor.txt' && grep -q 'slot 1 xc_count' '$work/doctor.txt' && ! grep -q 'not rm_xdp' '$work/doctor.txt'"

tcp0=$(xc 6)
e2e_alloc_sports "$N"
T1=$E2E_SPORT
ring_flows chained "$T1"
e2e_expect_eq "chained: the VIP flows never reached xc_count (TCP count)" \
	"$(xc 6)" "$tcp0"
ping_counted "chained"

# ---- the director detached: xc_count runs on ------------------------------
step "ringload detach" e2e_detach
e2e_expect_eq "chain show after detach: xc_count alone in slot 1" \
	"$(chain | tr '\n' ' ')" "1 xc_count "
ping_counted "director detached"
fwd0=$(forwarded)
tcp0=$(xc 6)
e2e_alloc_sports "$N"
e2e_flows "$work/detached" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$E2E_SPORT" --retries 2 --timeout-ms 3000
e2e_expect_eq "detached: $N VIP flows all answered by node1 (routing)" \
	"$(e2e_count "$work/detached" "${TB_NODE_NAME[TB_VIP_DEFAULT_NODE]}")" \
	"$N"
e2e_check "detached: xc_count now sees the VIP's TCP packets" \
	test "$(xc 6)" -gt "$tcp0"
e2e_expect_eq "detached: the data plane forwarded nothing" "$(forwarded)" \
	"$fwd0"
e2e_expect_eq "detached: services and nodes kept" \
	"$(e2e_ctl show --json | e2e_json '[len(s["nodes"]) for s in d["services"]]')" 3

# ---- the director back in slot 0 ------------------------------------------
step "ringload attach --chain again" e2e_attach --chain
e2e_expect_eq "chain show: rm_xdp back in slot 0" \
	"$(chain | tr '\n' ' ')" "0 rm_xdp 1 xc_count "
ring_flows rechained "$T1"
e2e_check "the first run's flows are back on their nodes" \
	cmp -s "$work/chained" "$work/rechained"
ping_counted "attached again"

# a slot taken is refused
e2e_load chain add "$TB_DIR_IN" "$XC_OBJ" --slot 0 >"$work/taken.out" 2>&1
rc=$?
e2e_expect_eq "chain add into the director's slot: refused, exit 1 ($(head -1 "$work/taken.out"))" "$rc" 1
e2e_expect_eq "and the chain is as it was" "$(chain | tr '\n' ' ')" \
	"0 rm_xdp 1 xc_count "

# ---- xc_count removed: the director alone behind the root -----------------
step "ringload chain del --slot 1" e2e_load chain del "$TB_DIR_IN" --slot 1
e2e_check "its pinned maps are gone" tb_exec "$TB_DIR_NS" test ! -e "$XC_MAP"
e2e_expect_eq "chain show: the director alone" "$(chain | tr '\n' ' ')" \
	"0 rm_xdp "
e2e_alloc_sports "$N"
ring_flows alone "$E2E_SPORT"
e2e_check "non-VIP traffic still reaches the host" pings

e2e_detach >"$work/detach2.out" 2>&1
e2e_check "the last detach takes the root off d-in" \
	sh -c "! ip -n '$TB_DIR_NS' -d link show dev '$TB_DIR_IN' | grep -q xdp"
e2e_check "and the chain's pins" tb_exec "$TB_DIR_NS" test ! -e "$PIN/chain"
e2e_check "the state survives" tb_exec "$TB_DIR_NS" test -e "$PIN/rm_config"

# ---- in front of the director ---------------------------------------------
# xc_count knows nothing of the chain: in front, it ends it, and doctor
# says so
step "the director in slot 1" e2e_attach --chain --slot 1
step "xc_count in slot 0" e2e_load chain add "$TB_DIR_IN" "$XC_OBJ" --slot 0
e2e_ctl doctor "$TB_DIR_IN" >"$work/doctor2.txt" 2>&1
e2e_check "doctor: an independent program in front of the director is a finding" \
	grep -q "'xc_count' in slot 0 is before the director (slot 1) and does not hand packets on" "$work/doctor2.txt"
step "xc_count out of slot 0" e2e_load chain del "$TB_DIR_IN" --slot 0
# xf_front hands packets on (rm_chain.h): the director behind it forwards
step "a cooperating program in slot 0" e2e_load chain add "$TB_DIR_IN" "$XF_OBJ" --slot 0
e2e_expect_eq "chain show: xf_front in slot 0, rm_xdp in slot 1" \
	"$(chain | tr '\n' ' ')" "0 xf_front 1 rm_xdp "
xf0=$(xf)
e2e_alloc_sports "$N"
ring_flows behind_front "$E2E_SPORT"
e2e_check "behind xf_front: pings answered" pings
e2e_check "xf_front saw the VIP flows and the pings (at least $((N * 3 + PINGS)) packets: $(($(xf) - xf0)))" \
	test "$(($(xf) - xf0))" -ge $((N * 3 + PINGS))
e2e_ctl doctor "$TB_DIR_IN" >"$work/doctor3.txt" 2>&1
e2e_check "doctor: no finding about the chain" \
	grep -q "ok   chain" "$work/doctor3.txt"
e2e_detach >/dev/null 2>&1
e2e_expect_eq "detach: xf_front stays" "$(chain | tr '\n' ' ')" "0 xf_front "
e2e_load chain del "$TB_DIR_IN" --slot 0 >/dev/null 2>&1
e2e_check "the last chain del takes the root off d-in" \
	sh -c "! ip -n '$TB_DIR_NS' -d link show dev '$TB_DIR_IN' | grep -q xdp"

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
