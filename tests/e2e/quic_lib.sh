# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers of the QUIC end-to-end tests (test_quic.sh, test_quic_crypt.sh,
# test_quic_ngtcp2.sh): nodes added to a service, the client's second
# address, datagrams made by the test, sent from the client, counted at
# the nodes. Sourced after lib.sh; called with the testbed up.

# quic_node_add SVC I [ARGS...]: node I of the testbed into SVC (its MAC,
# through its director interface), ringctl's own options after
quic_node_add()
{
	e2e_ctl node add "$1" "${TB_NODE_NAME[$2]}" --mac "${TB_NODE_MAC[$2]}" \
		--dev "${TB_DIR_NODE_IF[$2]}" "${@:3}" >/dev/null
}

# quic_client2_add ADDR: the client's second address, for a migration to
# a new source address ("Wi-Fi to mobile")
quic_client2_add()
{
	tb_exec "$TB_CLIENT_NS" ip addr add "$1/24" dev "$TB_CLIENT_IF" ||
		e2e_die "second client address $1"
}

# quic_testbed NAME: three nodes behind the director (attached), rm_server
# on PORT on each, the client's second address CLIENT2; the test's files
# go in work (TB_STATE_DIR/NAME)
quic_testbed()
{
	e2e_require_director
	e2e_setup 3
	work=$TB_STATE_DIR/$1
	mkdir -p "$work"
	e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
	e2e_start_servers "$PORT" || e2e_die "rm_server on port $PORT"
	quic_client2_add "$CLIENT2"
}

# quic_send FILE: each line "SRC SPORT DPORT HEX" one datagram to the VIP
# (QUIC_VIP, or TB_VIP4; an IPv6 VIP wants IPv6 sources)
quic_send()
{
	tb_exec "$TB_CLIENT_NS" python3 - "${QUIC_VIP:-$TB_VIP4}" "$1" <<'PY'
import socket, sys
vip = sys.argv[1]
family = socket.AF_INET6 if ":" in vip else socket.AF_INET
for line in open(sys.argv[2]):
    src, sport, dport, payload = line.split()
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((src, int(sport)))
    s.sendto(bytes.fromhex(payload), (vip, int(dport)))
    s.close()
PY
}

# quic_counts: datagrams each node's servers received, "N1 N2 N3"
quic_counts()
{
	local i out=()
	sleep 0.4
	for ((i = 1; i <= TB_NODES; i++)); do
		out+=("$(e2e_server_count "$i" udp_datagrams)")
	done
	echo "${out[*]}"
}

# quic_deltas FILE: quic_send FILE, then the datagrams each node got of
# it, "D1 D2 D3"
quic_deltas()
{
	local before after i out=()
	local -a b a
	before=$(quic_counts)
	quic_send "$1" || return 1
	after=$(quic_counts)
	read -r -a b <<<"$before"
	read -r -a a <<<"$after"
	for ((i = 0; i < TB_NODES; i++)); do
		out+=("$((a[i] - b[i]))")
	done
	echo "${out[*]}"
}

# quic_stat NAME: the director's counter NAME
quic_stat()
{
	e2e_ctl stats --json | e2e_json "d['counters']['$1']"
}
