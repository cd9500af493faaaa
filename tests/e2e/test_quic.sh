#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# QUIC by connection ID (--key quic, QUIC-LB plaintext CIDs) end to end on
# the testbed, with QUIC packets made by the test (no QUIC stack: see
# docs/quic.md): three nodes with server IDs c4605e (the draft's first
# test vector), 000002, 000003 behind the director, rm_server counting
# the datagrams each receives.
#   control plane  service add --key quic, node add --server-id (unique
#                  and of the service's length, checked; refused on
#                  other services), show and save list the IDs, lookup
#                  --cid says server ID or ring, quic-cid makes CIDs that
#                  lookup routes to their node
#   migration      short-header packets of each node's CIDs, each from a
#                  fresh source port and from a second client address:
#                  every one reaches the node its CID names; the same
#                  packets to a 5-tuple service of the same nodes spread
#                  over them (a connection there would be lost)
#   Initials       a client's Initial and its retransmits from other ports
#                  reach the ring owner of the DCID lookup --cid names
#   ring change    100 CIDs (connections) over nodes 1 and 2, node 3
#                  added: every CID still reaches its node
#   counters       quic-cid-routed and quic-initial-hashed rose as sent
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/quic_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/quic_lib.sh"

PORT=443
CLIENT2=198.18.0.77 # the client's second address ("Wi-Fi to mobile")

quic_testbed quic

SID=(- c4605e 000002 000003)

# ---- control plane ----------------------------------------------------------
e2e_ctl service add quic --vip "$TB_VIP4" --port "$PORT" --proto udp \
	--key quic:3:4 >/dev/null || e2e_die "service add --key quic"
e2e_ctl service add flow --vip "$TB_VIP4" --port 8443 --proto udp \
	>/dev/null || e2e_die "service add flow"
for i in 1 2; do
	quic_node_add quic "$i" --server-id "${SID[i]}" || e2e_die "node add $i"
done
for ((i = 1; i <= TB_NODES; i++)); do
	quic_node_add flow "$i" || e2e_die "node add flow $i"
done
quic_node_add quic 3 --server-id "${SID[1]}" 2>"$work/err"
e2e_expect_eq "a server ID two nodes hold is refused (exit 1)" "$?" 1
e2e_check "... naming both nodes" grep -q "same server ID" "$work/err"
quic_node_add quic 3 --server-id 0003 2>"$work/err"
e2e_expect_eq "a server ID of another length is refused (exit 1)" "$?" 1
quic_node_add quic 3 --server-id 00x003 2>/dev/null
e2e_expect_eq "a server ID that is no hex is a usage error (exit 2)" "$?" 2
e2e_ctl node add flow extra --mac "${TB_NODE_MAC[3]}" \
	--dev "${TB_DIR_NODE_IF[3]}" --server-id 000009 2>/dev/null >&2
e2e_expect_eq "--server-id on a flow service is refused (exit 1)" "$?" 1
e2e_expect_eq "show --json lists the server IDs" \
	"$(e2e_ctl show quic --json | e2e_json '[n.get("server_id") for n in d["services"][0]["nodes"]]' | tr '\n' ' ')" \
	"c4605e 000002 "
e2e_ctl save >"$work/saved"
e2e_check "save writes each node's --server-id" \
	grep -q -- "--server-id 000002" "$work/saved"
e2e_check "save writes the --key quic spec" \
	grep -q -- "--key quic:3:4:0:self" "$work/saved"
e2e_expect_eq "lookup --cid: the draft's vector goes by its server ID" \
	"$(e2e_ctl lookup quic --cid 07c4605e4504cc4f --json | e2e_json '(d["node"], d["by"], d["server_id"])' | tr '\n' ' ')" \
	"${TB_NODE_NAME[1]} server-id c4605e "
e2e_expect_eq "lookup --cid: an unknown server ID goes by the ring" \
	"$(e2e_ctl lookup quic --cid 07c4605f4504cc4f --json | e2e_json '(d["by"], d["reason"])' | tr '\n' ' ')" \
	"ring unknown-server "
e2e_ctl quic-cid quic "${TB_NODE_NAME[2]}" --count 20 >"$work/cids2" ||
	e2e_fail "quic-cid"
bad=0
while read -r c; do
	[ "$(e2e_ctl lookup quic --cid "$c" --json | e2e_json 'd["node"]')" = "${TB_NODE_NAME[2]}" ] || bad=$((bad + 1))
done <"$work/cids2"
e2e_expect_eq "quic-cid: 20 CIDs, each routed to its node by lookup --cid" \
	"$(wc -l <"$work/cids2") $bad" "20 0"

# ---- packets ----------------------------------------------------------------
# short header: 0x41, the DCID, 24 bytes of "protected payload"
short()
{
	printf '41%s%s' "$1" 000102030405060708090a0b0c0d0e0f1011121314151617
}

e2e_ctl quic-cid quic "${TB_NODE_NAME[1]}" --count 20 >"$work/cids1"
: >"$work/pkts"
port=30000
for f in cids1 cids2; do
	while read -r c; do
		# the connection's client moves: a new port each packet, then
		# a new address
		echo "$TB_CLIENT_IP4 $port $PORT $(short "$c")"
		echo "$CLIENT2 $port $PORT $(short "$c")"
		port=$((port + 1))
	done <"$work/$f" >>"$work/pkts"
done
before=$(quic_counts)
routed0=$(quic_stat quic-cid-routed)
quic_send "$work/pkts" || e2e_fail "send"
after=$(quic_counts)
read -r -a b <<<"$before"
read -r -a a <<<"$after"
e2e_expect_eq "migration: 40 datagrams of node1's CIDs and 40 of node2's from 40 ports on 2 addresses, each on its node" \
	"$((a[0] - b[0])) $((a[1] - b[1])) $((a[2] - b[2]))" "40 40 0"
e2e_expect_eq "quic-cid-routed rose by 80" \
	"$(($(quic_stat quic-cid-routed) - routed0))" 80

# Initials: a client's random DCID, sent from 5 ports: one node, the one
# lookup --cid names
dcid=2b1d3c4e5f60718293a4b5c6
owner=$(e2e_ctl lookup quic --cid "$dcid" --json | e2e_json 'd["node"]')
for ((i = 1; i <= TB_NODES; i++)); do
	[ "${TB_NODE_NAME[i]}" = "$owner" ] && oi=$i
done
hashed0=$(quic_stat quic-initial-hashed)
: >"$work/init"
for p in 31001 31002 31003 31004 31005; do
	echo "$TB_CLIENT_IP4 $p $PORT c0000000010c${dcid}08$(printf '%02x' $((p % 256)))0102030405060700$(printf 'ab%.0s' $(seq 1 40))"
done >"$work/init"
before=$(quic_counts)
quic_send "$work/init"
after=$(quic_counts)
read -r -a b <<<"$before"
read -r -a a <<<"$after"
e2e_expect_eq "Initial and 4 retransmits from other ports: all on the DCID's ring owner ($owner)" \
	"$((a[oi - 1] - b[oi - 1]))" 5
e2e_expect_eq "quic-initial-hashed rose by 5" \
	"$(($(quic_stat quic-initial-hashed) - hashed0))" 5

# ---- ring change: 100 connections open, node3 added --------------------------
e2e_ctl quic-cid quic "${TB_NODE_NAME[1]}" --count 50 >"$work/c1"
e2e_ctl quic-cid quic "${TB_NODE_NAME[2]}" --count 50 >"$work/c2"
cat "$work/c1" "$work/c2" | awk -v s="$TB_CLIENT_IP4" -v d="$PORT" \
	-v t=000102030405060708090a0b0c0d0e0f '{ print s, 32000 + NR, d, "41" $1 t }' \
	>"$work/ring"
before=$(quic_counts)
quic_send "$work/ring"
mid=$(quic_counts)
quic_node_add quic 3 --server-id "${SID[3]}" || e2e_fail "node add node3"
e2e_ctl show quic --json | e2e_json 'len(d["services"][0]["nodes"])' >"$work/n"
quic_send "$work/ring"
after=$(quic_counts)
read -r -a b <<<"$before"
read -r -a m <<<"$mid"
read -r -a a <<<"$after"
e2e_expect_eq "before: 50 connections' packets on node1, 50 on node2" \
	"$((m[0] - b[0])) $((m[1] - b[1])) $((m[2] - b[2]))" "50 50 0"
e2e_expect_eq "after node3 joined the ring: the same, none moved" \
	"$((a[0] - m[0])) $((a[1] - m[1])) $((a[2] - m[2]))" "50 50 0"
e2e_expect_eq "node3 is in the service" "$(cat "$work/n")" 3

# ---- the control: the same packets to a 5-tuple service ----------------------
e2e_ctl service del quic >/dev/null || e2e_fail "service del quic"
e2e_ctl service add quic5 --vip "$TB_VIP4" --port "$PORT" --proto udp \
	>/dev/null || e2e_fail "service add quic5 (5-tuple)"
for ((i = 1; i <= TB_NODES; i++)); do
	quic_node_add quic5 "$i" || e2e_fail "node add quic5 $i"
done
before=$(quic_counts)
quic_send "$work/pkts" || e2e_fail "send to the 5-tuple service"
after=$(quic_counts)
read -r -a b <<<"$before"
read -r -a a <<<"$after"
spread=0
for ((i = 0; i < TB_NODES; i++)); do
	[ $((a[i] - b[i])) -gt 0 ] && spread=$((spread + 1))
done
e2e_log "5-tuple service: node datagrams $((a[0] - b[0])) $((a[1] - b[1])) $((a[2] - b[2]))"
e2e_check "5-tuple: the same 80 datagrams spread over $spread nodes (a migrating connection is lost there)" \
	test "$spread" -ge 2

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
