#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A fleet (scripts/fleet.sh) whose nodes are reached by GUE and run the
# project's decapsulator: for test_fleet_local.sh and
# test_second_chance.sh. Source it after lib.sh and fleet.sh.
#
#   director k: d-lan gets 198.18.150.(200+k)/24 on the node LAN, its own
#               outer source (GF_SRC[k]); the nodes are reached through
#               it (connected route, permanent neighbours: no ARP race
#               under XDP).
#   node i:     n0 198.18.150.(10+i) (GF_NODE_IP[i]) runs `ringload decap`
#               with its pins on a bpffs of its own (GF_DECAP_PIN[i]),
#               --allow-src 198.18.150.0/24: every director and every
#               other node (second-chance forwards come from nodes);
#               permanent neighbours for the other nodes, forwarding on
#               (the decap's FIB lookup for a forward answers nothing
#               without it; the kernel itself forwards nothing here, no
#               redirects sent). The router's end of n0 (r-nI) takes in
#               what the node's XDP transmits back out of n0 (a
#               node-to-node forward) only with an XDP program of its own
#               (GRO on was not enough on this kernel: every forward was
#               lost, measured): any program that passes will do, the
#               decapsulator with empty maps passes everything.
#
#   gf_up D N                 fleet_up, then the above; 1 on failure
#   gf_servers PORT...        rm_server for each PORT on every node
#   gf_decap I ARGS...        ringload decap ARGS on node I (its pin dir)
#   gf_node_doc I...          "node add SVC nodeI --via gue ..." lines
# Teardown: gf_up registers its own hook (lib.sh's e2e_on_teardown) that
# runs before fleet_down.

GF_LAN=198.18.150.0/24
declare -a GF_SRC GF_NODE_IP GF_DECAP_PIN

_gf_down()
{
	local i
	for ((i = 1; i <= FL_N; i++)); do
		mountpoint -q "$FL_DIR/bpffs-n$i" 2>/dev/null &&
			{ umount "$FL_DIR/bpffs-n$i" || umount -l "$FL_DIR/bpffs-n$i"; }
	done
	return 0
}

gf_decap()
{
	local i=$1
	shift
	ip netns exec "${FL_NODE_NS[i]}" "$FL_BUILD/ringload" decap "$@" \
		--pin-dir "${GF_DECAP_PIN[i]}"
}

gf_up()
{
	local d=$1 n=$2 k i j ok=1
	e2e_on_teardown fleet_down
	fleet_up "$d" "$n" || return 1
	e2e_on_teardown _gf_down
	for ((i = 1; i <= n; i++)); do
		GF_NODE_IP[i]=198.18.150.$((10 + i))
		GF_DECAP_PIN[i]=$FL_DIR/bpffs-n$i/decap
	done
	for ((k = 1; k <= d; k++)); do
		GF_SRC[k]=198.18.150.$((200 + k))
		ip -n "${FL_DIR_NS[k]}" addr add "${GF_SRC[k]}/24" dev d-lan ||
			ok=0
		for ((i = 1; i <= n; i++)); do
			ip -n "${FL_DIR_NS[k]}" neigh replace "${GF_NODE_IP[i]}" \
				lladdr "${FL_NODE_MAC[i]}" dev d-lan nud permanent ||
				ok=0
		done
	done
	for ((i = 1; i <= n; i++)); do
		for ((j = 1; j <= n; j++)); do
			[ "$i" -ne "$j" ] || continue
			ip -n "${FL_NODE_NS[i]}" neigh replace "${GF_NODE_IP[j]}" \
				lladdr "${FL_NODE_MAC[j]}" dev n0 nud permanent ||
				ok=0
		done
		ip netns exec "${FL_NODE_NS[i]}" sh -ec '
			echo 1 > /proc/sys/net/ipv4/ip_forward
			echo 0 > /proc/sys/net/ipv4/conf/all/send_redirects
			echo 0 > /proc/sys/net/ipv4/conf/n0/send_redirects' ||
			ok=0
		ip -n "$FL_ROUTER_NS" link set "r-n$i" xdpdrv \
			obj "$FL_BUILD/decap.bpf.o" sec xdp || ok=0
		mkdir -p "$FL_DIR/bpffs-n$i" &&
			mount -t bpf bpf "$FL_DIR/bpffs-n$i" || ok=0
		gf_decap "$i" attach n0 --mode native --allow-src "$GF_LAN" \
			>>"$FL_DIR/decap-n$i.log" 2>&1 || ok=0
	done
	[ "$ok" -eq 1 ]
}

# gf_servers PORT...: rm_server on every node for each PORT, named after
# the node; waits for each one's ready line.
gf_servers()
{
	local i p log
	for ((i = 1; i <= FL_N; i++)); do
		for p in "$@"; do
			log=$FL_DIR/server-n$i-$p.log
			tb_spawn "${FL_NODE_NS[i]}" "$log" "$RM_SERVER" \
				--name "node$i" --port "$p" --max-seconds 600
			e2e_on_teardown "kill $TB_LAST_PID 2>/dev/null"
		done
	done
	for ((i = 1; i <= FL_N; i++)); do
		for p in "$@"; do
			e2e_wait_for 5 grep -q ' ready ' \
				"$FL_DIR/server-n$i-$p.log" || return 1
		done
	done
}

# gf_node_doc SVC I...: the document lines of GUE nodes I... of SVC.
gf_node_doc()
{
	local svc=$1 i
	shift
	for i in "$@"; do
		echo "node add $svc node$i --via gue --addr ${GF_NODE_IP[i]}"
	done
}
