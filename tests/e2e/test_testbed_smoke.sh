#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The testbed alone, no XDP program: the director routes the VIP to node 1,
# so every answer must name node1. Proves the plumbing (namespaces, veths,
# DSR node setup, return routing, the tools) before any test puts the load
# balancer in the path, and that teardown leaves nothing behind.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_setup 3
out=$(mktemp /tmp/rm-smoke.XXXXXX)
e2e_on_teardown "rm -f '$out'"
e2e_start_servers || e2e_die "servers started"
e2e_pass "rm_server running on $TB_NODES nodes"

# All flows of FILE answered, each by node1.
all_node1()
{
	local file=$1 want=$2
	[ "$(awk '$3 == "node1"' "$file" | wc -l)" -eq "$want" ] &&
		[ "$(wc -l <"$file")" -eq "$want" ]
}

# One flow per protocol and family.
for vip in "$TB_VIP4" "$TB_VIP6"; do
	for proto in tcp udp; do
		e2e_alloc_sports 1
		if e2e_client --vip "$vip" --proto "$proto" --count 1 \
			--sport-base "$E2E_SPORT" >"$out" 2>/dev/null &&
			all_node1 "$out" 1; then
			e2e_pass "$proto to $vip answered by node1 ($(cat "$out"))"
		else
			e2e_fail "$proto to $vip: $(cat "$out")"
		fi
	done
done

# The client's source address is what the server side sees: flows come
# from the client's own address, not a rewritten one.
e2e_alloc_sports 1
e2e_client --vip "$TB_VIP4" --count 1 --sport-base "$E2E_SPORT" >"$out" \
	2>/dev/null
e2e_expect_eq "v4 flow line names source address and port" \
	"$(cut -d' ' -f1,2 "$out")" "$TB_CLIENT_IP4 $E2E_SPORT"

# 200 TCP connections, concurrently.
e2e_alloc_sports 200
start=$(date +%s%N)
if e2e_client --vip "$TB_VIP4" --count 200 --sport-base "$E2E_SPORT" \
	>"$out" && all_node1 "$out" 200; then
	e2e_pass "200 TCP connections, all node1 ($((($(date +%s%N) - start) / 1000000)) ms)"
else
	e2e_fail "200 TCP connections: $(grep -c FAIL "$out") failed"
fi

# The same source ports again at once: reset-closing leaves no TIME_WAIT.
if e2e_client --vip "$TB_VIP4" --count 200 --sport-base "$E2E_SPORT" \
	>"$out" 2>/dev/null && all_node1 "$out" 200; then
	e2e_pass "200 TCP connections again from the same source ports"
else
	e2e_fail "source ports reused: $(grep -c FAIL "$out") failed"
fi

e2e_alloc_sports 200
if e2e_client --vip "$TB_VIP6" --proto udp --count 200 \
	--sport-base "$E2E_SPORT" >"$out" 2>/dev/null && all_node1 "$out" 200
then
	e2e_pass "200 UDP v6 flows, all node1"
else
	e2e_fail "200 UDP v6 flows: $(grep -c FAIL "$out") failed"
fi

# Nothing reached nodes 2 and 3: traffic followed the director's route.
sleep 0.3
e2e_expect_eq "node2 and node3 saw no traffic" \
	"$(e2e_server_count 2 tcp_accepted)/$(e2e_server_count 3 tcp_accepted)/$(e2e_server_count 2 udp_datagrams)" \
	"0/0/0"
# 2 single flows + 1 source check + 2 x 200
e2e_expect_eq "node1 counted every TCP connection" \
	"$(e2e_server_count 1 tcp_accepted)" 403
e2e_expect_eq "node1 counted every UDP datagram" \
	"$(e2e_server_count 1 udp_datagrams)" 202

# Long-lived connections: echo checked for 2 seconds.
e2e_alloc_sports 20
if e2e_client --vip "$TB_VIP6" --hold 20 --duration 2 \
	--sport-base "$E2E_SPORT" >"$out" 2>/dev/null &&
	[ "$(grep -c 'status=ok' "$out")" -eq 20 ]; then
	e2e_pass "20 held v6 connections echoed for 2 s"
else
	e2e_fail "held connections: $(grep -vc 'status=ok' "$out") not ok"
fi

# A node added live is reachable from the director (without XDP the VIP
# still goes to node 1, so reach it by its own address).
if testbed_add_node && i=$TB_NODES && e2e_start_server "$i"; then
	e2e_alloc_sports 1
	if tb_exec "$TB_DIR_NS" "$RM_CLIENT" --vip "${TB_NODE_IP4[i]}" \
		--count 1 --sport-base "$E2E_SPORT" 2>/dev/null |
		grep -q " node$i\$"; then
		e2e_pass "node$i added live and answers"
	else
		e2e_fail "node$i added live but does not answer"
	fi
else
	e2e_fail "testbed_add_node"
fi

# bpffs: a pin made in one tb_exec is visible to the next one.
tb_exec "$TB_DIR_NS" mkdir /sys/fs/bpf/smoke 2>/dev/null
e2e_check "bpffs shared between tb_exec calls" \
	tb_exec "$TB_DIR_NS" test -d /sys/fs/bpf/smoke

# Teardown leaves no namespace and no veth in the root namespace.
suf=$TB_SUF
e2e_teardown
e2e_expect_eq "no namespace left with suffix $suf" \
	"$(ip netns list | grep -c -- "-$suf")" 0
e2e_expect_eq "no veth of the testbed in the root namespace" \
	"$(ip -o link show type veth | grep -cE ': (d-in|d-n[0-9]+|c-eth0|n-eth0)[@:]')" 0

# The command-line form: up, exec, add-node, down through a state file.
state=$(mktemp -u /tmp/rm-smoke-state.XXXXXX)
tb=$E2E_ROOT/scripts/testbed.sh
e2e_on_teardown "[ ! -e '$state' ] || '$tb' down --state '$state'"
if "$tb" up 2 --state "$state" >/dev/null; then
	# shellcheck disable=SC1090
	suf=$(. "$state" && echo "$TB_SUF")
	e2e_check "CLI up: 2 nodes in the state file" \
		grep -qx 'TB_NODES=2' "$state"
	"$tb" add-node --state "$state" >/dev/null
	e2e_check "CLI add-node: 3 nodes in the state file" \
		grep -qx 'TB_NODES=3' "$state"
	e2e_check "CLI exec: client reaches node 3 by address" \
		"$tb" exec --state "$state" client \
		sh -c 'ping -c1 -W2 -q 198.18.3.2 >/dev/null' 
	"$tb" down --state "$state"
	e2e_expect_eq "CLI down removes every namespace" \
		"$(ip netns list | grep -c -- "-$suf")" 0
else
	e2e_fail "CLI up"
fi
rm -f "$state"

e2e_finish
