#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Two directors, one seed: no shared state, the same routing.
#
# Director A keeps its state in the default pin dir, director B in
# another (--pin-dir), both in the testbed's director namespace. They get
# the same seed (`ringctl seed --set`, a fresh random one each run) and
# the same services and nodes, but defined differently: B's services in
# the other order (other service ids), its nodes added in other orders,
# and in one service a node added, removed and added again (other node
# slots and generations). Then
#   - `ringctl lookup` on A and on B name the same node for 1,000 TCP/IPv4
#     and 500 UDP/IPv6 flows, and `ringctl show` the same shares,
#   - real traffic: the flows run with A attached to d-in, then A is
#     detached and B attached on the same interface, and every flow lands
#     on the same node as under A (and where the lookups said),
#   - control: given another seed, B routes about 2/3 of the flows
#     elsewhere (the agreement above is not an accident of the setup).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NT=1000 # TCP/IPv4 flows
NU=500  # UDP/IPv6 flows
PIN_A=/sys/fs/bpf/ringmaster
PIN_B=/sys/fs/bpf/ringmaster-b

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/two
mkdir -p "$work"

hex32()
{
	od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
}
SEED=$(hex32)
e2e_log "seed $SEED"

# ---- director B: defined first, then detached (its state stays) ---------
B=(--pin-dir "$PIN_B")
ok=1
e2e_attach "${B[@]}" >/dev/null || ok=0
e2e_ctl "${B[@]}" seed --set "$SEED" >/dev/null || ok=0
e2e_ctl "${B[@]}" service add webu6 --vip "$TB_VIP6" --port "$E2E_PORT" \
	--proto udp >/dev/null || ok=0
e2e_ctl "${B[@]}" service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ok=0
e2e_add_nodes webu6 2 3 -- "${B[@]}" || ok=0
e2e_add_nodes web 3 -- "${B[@]}" || ok=0
e2e_add_nodes webu6 1 -- "${B[@]}" || ok=0
e2e_add_nodes web 2 -- "${B[@]}" || ok=0
e2e_ctl "${B[@]}" node del web node3 >/dev/null || ok=0
e2e_add_nodes web 1 3 -- "${B[@]}" || ok=0
e2e_detach "${B[@]}" >/dev/null || ok=0
e2e_expect_eq "director B ($PIN_B): seed, services webu6+web, nodes in its own order; detached" \
	"$ok" 1

# ---- director A: attached -------------------------------------------------
ok=1
e2e_attach >/dev/null || ok=0
e2e_ctl seed --set "$SEED" >/dev/null || ok=0
e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" --proto tcp \
	>/dev/null || ok=0
e2e_ctl service add webu6 --vip "$TB_VIP6" --port "$E2E_PORT" \
	--proto udp >/dev/null || ok=0
e2e_add_nodes web || ok=0
e2e_add_nodes webu6 || ok=0
e2e_expect_eq "director A ($PIN_A): same seed, services web+webu6, nodes 1,2,3; attached" \
	"$ok" 1
e2e_start_servers || e2e_die "servers started"

# The definitions really differ: service ids and node slots.
ids()
{
	e2e_ctl "$@" show --json | e2e_json \
		'[(s["name"], s["id"], ",".join("%s:%d" % (n["name"], n["id"])
		   for n in s["nodes"])) for s in d["services"]]' | sort
}
ids "${B[@]}" >"$work/ids.b"
ids >"$work/ids.a"
e2e_check "A and B hold their services and nodes under other ids ($(tr '\n' ' ' <"$work/ids.a")/ $(tr '\n' ' ' <"$work/ids.b"))" \
	test "$(cat "$work/ids.a")" != "$(cat "$work/ids.b")"

# ---- the same answers from ringctl ------------------------------------------
shares()
{
	for s in web webu6; do
		e2e_shares "$s" "$@" | sed "s/^/$s /" | sort
	done
}
shares >"$work/shares.a"
shares "${B[@]}" >"$work/shares.b"
e2e_check "ringctl show: the same shares on A and B ($(awk '$1 == "web" { printf "%s=%.4f ", $2, $3 }' "$work/shares.a"))" \
	cmp -s "$work/shares.a" "$work/shares.b"

e2e_alloc_sports "$NT"
TB=$E2E_SPORT
e2e_alloc_sports "$NU"
UB=$E2E_SPORT
t0=$SECONDS
if ! e2e_lookups "$work/tcp.a" web "$TB_CLIENT_IP4" "$TB" "$NT" ||
	! e2e_lookups "$work/tcp.b" web "$TB_CLIENT_IP4" "$TB" "$NT" "${B[@]}" ||
	! e2e_lookups "$work/udp.a" webu6 "$TB_CLIENT_IP6" "$UB" "$NU" ||
	! e2e_lookups "$work/udp.b" webu6 "$TB_CLIENT_IP6" "$UB" "$NU" "${B[@]}"
then
	e2e_fail "ringctl lookup on A and B"
fi
e2e_expect_eq "ringctl lookup: A and B agree on all $NT TCP flows ($((SECONDS - t0)) s for all lookups)" \
	"$(e2e_mismatch "$work/tcp.a" "$work/tcp.b")" 0
e2e_expect_eq "ringctl lookup: A and B agree on all $NU UDP/IPv6 flows" \
	"$(e2e_mismatch "$work/udp.a" "$work/udp.b")" 0

# ---- real traffic through A, then through B -------------------------------
traffic()
{
	local name=$1
	e2e_flows "$work/$name.tcp" --vip "$TB_VIP4" --proto tcp \
		--count "$NT" --sport-base "$TB" --timeout-ms 3000
	e2e_flows "$work/$name.udp" --vip "$TB_VIP6" --proto udp \
		--count "$NU" --sport-base "$UB" --retries 2 --timeout-ms 3000
	e2e_expect_eq "$name: all $NT TCP and $NU UDP/IPv6 flows answered ($(tr -d '\n' <"$work/$name.tcp.err" | sed 's/.*nodes: //'))" \
		"$(cat "$work/$name.tcp" "$work/$name.udp" | grep -vc ' FAIL$')" \
		$((NT + NU))
	e2e_expect_eq "$name: every flow on the node the lookups named" \
		"$(($(e2e_mismatch "$work/tcp.a" "$work/$name.tcp") + \
			$(e2e_mismatch "$work/udp.a" "$work/$name.udp")))" 0
}
traffic via_a

ok=1
e2e_detach >/dev/null || ok=0
e2e_attach "${B[@]}" >/dev/null || ok=0
e2e_expect_eq "A detached, B attached to $TB_DIR_IN" "$ok" 1
e2e_expect_eq "ringload status: $TB_DIR_IN runs B's state" \
	"$(e2e_load status --json "${B[@]}" | e2e_json \
		'[i["name"] for i in d["interfaces"] if i["attached"]]')" \
	"$TB_DIR_IN"
traffic via_b
e2e_check "every TCP flow on the same node under B as under A" \
	cmp -s "$work/via_a.tcp" "$work/via_b.tcp"
e2e_check "every UDP/IPv6 flow on the same node under B as under A" \
	cmp -s "$work/via_a.udp" "$work/via_b.udp"

# ---- control: another seed routes differently -----------------------------
e2e_ctl "${B[@]}" seed --set "$(hex32)" >/dev/null ||
	e2e_fail "ringctl seed --set on B"
e2e_lookups "$work/tcp.c" web "$TB_CLIENT_IP4" "$TB" "$NT" "${B[@]}" ||
	e2e_fail "ringctl lookup on B with another seed"
differ=$(e2e_mismatch "$work/tcp.a" "$work/tcp.c")
# P(same node) = sum of share products, ~1/3: ~667 of 1000 differ, sd 15
e2e_check "another seed: $differ of $NT flows on another node (expected ~2/3)" \
	test "$differ" -gt $((NT / 2))

# ---- both states purged -----------------------------------------------------
e2e_detach "${B[@]}" --purge >/dev/null 2>&1
e2e_load purge >/dev/null 2>&1
e2e_check "both pin dirs removed" \
	tb_exec "$TB_DIR_NS" sh -c "test ! -e $PIN_A && test ! -e $PIN_B"

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
