#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ringmaster namespace testbed: a client, a director and K backend nodes,
# each in its own network namespace, joined by veth pairs.
#
#   client (rmc-SUF)            director (rmd-SUF)             node i (rmnI-SUF)
#   c-eth0 198.18.0.2  <---->   d-in   198.18.0.1
#          2001:db8::2                 2001:db8::1
#                               d-nI   198.18.I.1     <---->   n-eth0 198.18.I.2
#                                      2001:db8:0:I::1                2001:db8:0:I::2
#                                                              lo     VIP4/32 VIP6/128
#
# The XDP program goes on the director's d-in. It forwards VIP packets by
# L2 direct server return: the node owns the VIP on lo and answers the
# client straight through the director's ordinary routing. Without XDP the
# director routes the VIP to node 1, so "no program attached" still has a
# defined outcome (every flow lands on node 1).
#
# Use as a library:
#   source scripts/testbed.sh
#   testbed_up 3            # sets the TB_* variables below
#   tb_exec "$TB_CLIENT_NS" cmd ...          # foreground, bpffs mounted
#   tb_spawn "${TB_NODE_NS[1]}" LOG cmd ...  # background, PID tracked
#   testbed_add_node        # node TB_NODES+1, live (not inside $(...))
#   testbed_down            # kills what runs inside, deletes everything
#
# Variables (arrays are indexed by node, 1..TB_NODES):
#   TB_SUF TB_NODES TB_STATE_DIR TB_BPFFS TB_VIP4 TB_VIP6
#   TB_VIP_DEFAULT_NODE (1: where the director routes the VIP without XDP)
#   TB_CLIENT_NS TB_CLIENT_IF TB_CLIENT_MAC TB_CLIENT_IP4 TB_CLIENT_IP6
#   TB_CLIENT_NET4 TB_CLIENT_NET6 (client link; more client addresses from
#     it can be added on TB_CLIENT_IF)
#   TB_DIR_NS TB_DIR_IN TB_DIR_IN_MAC TB_DIR_IN_IFINDEX TB_DIR_IN_IP4
#   TB_DIR_IN_IP6
#   TB_NODE_NS[i] TB_NODE_NAME[i] (node1...) TB_NODE_IF[i] TB_NODE_MAC[i]
#   TB_NODE_IP4[i] TB_NODE_IP6[i]
#   TB_DIR_NODE_IF[i] TB_DIR_NODE_MAC[i] TB_DIR_NODE_IFINDEX[i]
#   TB_DIR_NODE_IP4[i] TB_DIR_NODE_IP6[i]
# Ifindexes are those inside the director namespace. Anything that turns
# an ifindex into a device (a devmap update, say) must run there, through
# tb_exec: the kernel resolves it in the caller's namespace, where the same
# number is some other device.
#
# tb_exec and tb_spawn bind the testbed's own bpffs instance (TB_BPFFS) on
# /sys/fs/bpf: pins made by one command are seen by the next, and parallel
# testbeds never share /sys/fs/bpf/ringmaster.
# or as a command:
#   scripts/testbed.sh up [K] --state FILE
#   scripts/testbed.sh add-node --state FILE
#   scripts/testbed.sh exec --state FILE NS cmd ...
#   scripts/testbed.sh down --state FILE
#
# Only addresses from 198.18.0.0/15 and 2001:db8::/32 are used, nothing is
# configured in the root namespace: every veth is created from inside the
# director namespace with its peer placed directly in the other namespace.

# Overridable before testbed_up; everything else is derived.
TB_VIP4=${TB_VIP4:-198.19.255.1}
TB_VIP6=${TB_VIP6:-2001:db8:ffff::1}
# Highest node index: node i uses 198.18.i.0/24, so stay below 255.
TB_MAX_NODES=200

_tb_err()
{
	echo "testbed: $*" >&2
}

# Preconditions shared by every entry point. ethtool is needed because the
# veth offload settings are what make redirected frames arrive intact.
_tb_check_env()
{
	if [ "$(id -u)" -ne 0 ]; then
		_tb_err "must run as root (network namespaces)"
		return 1
	fi
	if ! command -v ip >/dev/null 2>&1; then
		_tb_err "ip not found: install the Debian package iproute2"
		return 1
	fi
	if ! command -v ethtool >/dev/null 2>&1; then
		_tb_err "ethtool not found: install the Debian package ethtool"
		return 1
	fi
}

# Names and addresses of node i, derived so that testbed_up and
# testbed_add_node (and a later state load) can never disagree.
_tb_node_vars()
{
	local i=$1
	TB_NODE_NS[i]=rmn$i-$TB_SUF
	TB_NODE_NAME[i]=node$i
	TB_NODE_IF[i]=n-eth0
	TB_DIR_NODE_IF[i]=d-n$i
	TB_NODE_IP4[i]=198.18.$i.2
	TB_DIR_NODE_IP4[i]=198.18.$i.1
	TB_NODE_IP6[i]=2001:db8:0:$i::2
	TB_DIR_NODE_IP6[i]=2001:db8:0:$i::1
}

# Per-namespace sysctls, set before any veth exists in the namespace so the
# "default" values apply to it. IPv4 settings of a new namespace are copied
# from the root namespace, so nothing is assumed: rp_filter must be off
# because DSR replies from node i enter the director on d-nI while the
# director routes the VIP via d-n1; DAD is off so addresses work at once.
_tb_sysctl_common='
	echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter
	echo 0 > /proc/sys/net/ipv4/conf/default/rp_filter
	echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad
	echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad
	echo 0 > /proc/sys/net/ipv6/conf/default/accept_ra
'
_tb_sysctl_director='
	echo 1 > /proc/sys/net/ipv4/ip_forward
	echo 1 > /proc/sys/net/ipv6/conf/all/forwarding
	echo 0 > /proc/sys/net/ipv4/conf/all/send_redirects
	echo 0 > /proc/sys/net/ipv4/conf/default/send_redirects
'
# A node must not answer ARP for the VIP it holds on lo, the classic DSR
# real-server setting.
_tb_sysctl_node='
	echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore
	echo 2 > /proc/sys/net/ipv4/conf/all/arp_announce
'

_tb_ns_sysctl()
{
	ip netns exec "$1" sh -ec "$2"
}

# ethtool inside a namespace; it reports "Actual changes" on stdout.
_tb_ethtool()
{
	local ns=$1
	shift
	ip netns exec "$ns" ethtool "$@" >/dev/null
}

# Setup steps run through _tb_do, which stops at the first failure. Not
# `set -e` in a subshell: bash ignores -e there whenever the caller tests
# the result (testbed_up || ...), which is exactly how tests call it.
_tb_failed=0
_tb_do()
{
	[ "$_tb_failed" -eq 0 ] || return 1
	"$@" && return 0
	_tb_err "failed: $*"
	_tb_failed=1
	return 1
}

# Create node i's namespace, link, addresses and routes.
_tb_make_node()
{
	local i=$1 ns dif nif
	ns=${TB_NODE_NS[i]}
	dif=${TB_DIR_NODE_IF[i]}
	nif=${TB_NODE_IF[i]}
	_tb_failed=0
	_tb_do ip netns add "$ns"
	_tb_do _tb_ns_sysctl "$ns" "$_tb_sysctl_common$_tb_sysctl_node"
	_tb_do ip -n "$TB_DIR_NS" link add "$dif" type veth peer name "$nif" \
		netns "$ns"
	_tb_do ip -n "$TB_DIR_NS" addr add "${TB_DIR_NODE_IP4[i]}/24" dev "$dif"
	_tb_do ip -n "$TB_DIR_NS" -6 addr add "${TB_DIR_NODE_IP6[i]}/64" \
		dev "$dif" nodad
	_tb_do ip -n "$TB_DIR_NS" link set "$dif" up

	_tb_do ip -n "$ns" link set lo up
	_tb_do ip -n "$ns" addr add "$TB_VIP4/32" dev lo
	_tb_do ip -n "$ns" -6 addr add "$TB_VIP6/128" dev lo nodad
	_tb_do ip -n "$ns" addr add "${TB_NODE_IP4[i]}/24" dev "$nif"
	_tb_do ip -n "$ns" -6 addr add "${TB_NODE_IP6[i]}/64" dev "$nif" nodad
	_tb_do ip -n "$ns" link set "$nif" up
	_tb_do ip -n "$ns" route add default via "${TB_DIR_NODE_IP4[i]}"
	_tb_do ip -n "$ns" -6 route add default via "${TB_DIR_NODE_IP6[i]}"
	# Frames the director redirects into this veth are only delivered
	# when the receiving end runs NAPI: GRO turns it on.
	_tb_do _tb_ethtool "$ns" -K "$nif" gro on
	[ "$_tb_failed" -eq 0 ]
}

# Read a link attribute inside a namespace: MAC or ifindex.
_tb_link_mac()
{
	ip -n "$1" -o link show dev "$2" |
		sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

_tb_link_index()
{
	ip -n "$1" -o link show dev "$2" | sed -n 's/^\([0-9]*\):.*/\1/p'
}

_tb_node_read_attrs()
{
	local i=$1
	TB_NODE_MAC[i]=$(_tb_link_mac "${TB_NODE_NS[i]}" "${TB_NODE_IF[i]}")
	TB_DIR_NODE_MAC[i]=$(_tb_link_mac "$TB_DIR_NS" "${TB_DIR_NODE_IF[i]}")
	TB_DIR_NODE_IFINDEX[i]=$(_tb_link_index "$TB_DIR_NS" \
		"${TB_DIR_NODE_IF[i]}")
	[ -n "${TB_NODE_MAC[i]}" ] && [ -n "${TB_DIR_NODE_MAC[i]}" ] &&
		[ -n "${TB_DIR_NODE_IFINDEX[i]}" ]
}

_tb_random_suffix()
{
	od -An -N3 -tx1 /dev/urandom | tr -d ' \n'
}

# Clear every TB_ variable this library sets, so a second testbed_up in
# the same shell (or a state load) starts clean.
# shellcheck disable=SC2034 # the arrays are the library's output
_tb_reset_vars()
{
	unset TB_NODE_NS TB_NODE_NAME TB_NODE_IF TB_NODE_MAC TB_NODE_IP4 \
		TB_NODE_IP6 TB_DIR_NODE_IF TB_DIR_NODE_MAC TB_DIR_NODE_IP4 \
		TB_DIR_NODE_IP6 TB_DIR_NODE_IFINDEX TB_PIDS
	declare -ga TB_NODE_NS TB_NODE_NAME TB_NODE_IF TB_NODE_MAC \
		TB_NODE_IP4 TB_NODE_IP6 TB_DIR_NODE_IF TB_DIR_NODE_MAC \
		TB_DIR_NODE_IP4 TB_DIR_NODE_IP6 TB_DIR_NODE_IFINDEX TB_PIDS
	TB_SUF='' TB_NODES=0 TB_CLIENT_NS='' TB_DIR_NS='' TB_STATE_DIR=''
	TB_BPFFS='' TB_STATE_FILE=''
}

# testbed_up [K]: build the testbed with K nodes (default 3). On failure
# everything already made is removed and 1 is returned.
testbed_up()
{
	local k=${1:-3} i
	_tb_check_env || return 1
	if [ -n "${TB_SUF:-}" ] && [ -e "/var/run/netns/$TB_DIR_NS" ]; then
		_tb_err "a testbed ($TB_SUF) is already up in this shell"
		return 1
	fi
	case $k in
	'' | *[!0-9]*)
		_tb_err "node count must be a number: $k"
		return 1
		;;
	esac
	if [ "$k" -lt 1 ] || [ "$k" -gt "$TB_MAX_NODES" ]; then
		_tb_err "node count must be 1..$TB_MAX_NODES"
		return 1
	fi

	_tb_reset_vars
	# A fresh suffix whose namespaces do not exist yet, so parallel runs
	# never share a name.
	for i in 1 2 3 4 5 6 7 8; do
		TB_SUF=$(_tb_random_suffix)
		[ -e "/var/run/netns/rmd-$TB_SUF" ] ||
			[ -e "/var/run/netns/rmc-$TB_SUF" ] || break
	done
	export TB_SUF TB_VIP4 TB_VIP6
	export TB_CLIENT_NS=rmc-$TB_SUF TB_DIR_NS=rmd-$TB_SUF
	export TB_CLIENT_IF=c-eth0 TB_DIR_IN=d-in
	export TB_CLIENT_IP4=198.18.0.2 TB_CLIENT_IP6=2001:db8::2
	export TB_DIR_IN_IP4=198.18.0.1 TB_DIR_IN_IP6=2001:db8::1
	export TB_CLIENT_NET4=198.18.0.0/24 TB_CLIENT_NET6=2001:db8::/64
	export TB_VIP_DEFAULT_NODE=1
	export TB_NODES=0
	TB_STATE_DIR=$(mktemp -d "/tmp/rm-tb-$TB_SUF.XXXXXX") || return 1
	export TB_STATE_DIR
	: >"$TB_STATE_DIR/pids"

	# One bpffs instance per testbed, bound over /sys/fs/bpf by tb_exec:
	# pins made by one command are seen by the next, and two testbeds
	# never see each other's /sys/fs/bpf/ringmaster.
	mkdir -p "$TB_STATE_DIR/bpffs"
	if mount -t bpf bpf "$TB_STATE_DIR/bpffs" 2>/dev/null; then
		export TB_BPFFS=$TB_STATE_DIR/bpffs
	else
		_tb_err "warning: cannot mount bpffs; tb_exec mounts one per call"
		export TB_BPFFS=
	fi

	_tb_failed=0
	_tb_do ip netns add "$TB_DIR_NS"
	_tb_do _tb_ns_sysctl "$TB_DIR_NS" "$_tb_sysctl_common$_tb_sysctl_director"
	_tb_do ip netns add "$TB_CLIENT_NS"
	_tb_do _tb_ns_sysctl "$TB_CLIENT_NS" "$_tb_sysctl_common"
	_tb_do ip -n "$TB_DIR_NS" link set lo up
	_tb_do ip -n "$TB_CLIENT_NS" link set lo up

	_tb_do ip -n "$TB_DIR_NS" link add "$TB_DIR_IN" type veth \
		peer name "$TB_CLIENT_IF" netns "$TB_CLIENT_NS"
	_tb_do ip -n "$TB_DIR_NS" addr add "$TB_DIR_IN_IP4/24" dev "$TB_DIR_IN"
	_tb_do ip -n "$TB_DIR_NS" -6 addr add "$TB_DIR_IN_IP6/64" \
		dev "$TB_DIR_IN" nodad
	_tb_do ip -n "$TB_DIR_NS" link set "$TB_DIR_IN" up

	_tb_do ip -n "$TB_CLIENT_NS" addr add "$TB_CLIENT_IP4/24" \
		dev "$TB_CLIENT_IF"
	_tb_do ip -n "$TB_CLIENT_NS" -6 addr add "$TB_CLIENT_IP6/64" \
		dev "$TB_CLIENT_IF" nodad
	_tb_do ip -n "$TB_CLIENT_NS" link set "$TB_CLIENT_IF" up
	_tb_do ip -n "$TB_CLIENT_NS" route add default via "$TB_DIR_IN_IP4"
	_tb_do ip -n "$TB_CLIENT_NS" -6 route add default via "$TB_DIR_IN_IP6"
	# A veth hands its peer skbs whose checksums are left to offload;
	# once the director's XDP program turns them into frames and
	# redirects them, nobody fills the checksum in and the node drops
	# the packet. Make the client compute them itself. GRO on the client
	# lets it receive frames the director sends back with XDP_TX.
	_tb_do _tb_ethtool "$TB_CLIENT_NS" -K "$TB_CLIENT_IF" tx off gro on
	if [ "$_tb_failed" -ne 0 ]; then
		_tb_err "building director/client failed"
		testbed_down
		return 1
	fi
	TB_DIR_IN_MAC=$(_tb_link_mac "$TB_DIR_NS" "$TB_DIR_IN")
	TB_DIR_IN_IFINDEX=$(_tb_link_index "$TB_DIR_NS" "$TB_DIR_IN")
	TB_CLIENT_MAC=$(_tb_link_mac "$TB_CLIENT_NS" "$TB_CLIENT_IF")
	export TB_DIR_IN_MAC TB_DIR_IN_IFINDEX TB_CLIENT_MAC

	for ((i = 1; i <= k; i++)); do
		if ! testbed_add_node; then
			testbed_down
			return 1
		fi
	done

	# Without XDP the VIP is routed to node 1, so detaching the program
	# sends traffic to a known place rather than into a black hole.
	if ! ip -n "$TB_DIR_NS" route add "$TB_VIP4/32" \
		via "${TB_NODE_IP4[1]}" dev "${TB_DIR_NODE_IF[1]}" ||
		! ip -n "$TB_DIR_NS" -6 route add "$TB_VIP6/128" \
			via "${TB_NODE_IP6[1]}" dev "${TB_DIR_NODE_IF[1]}"; then
		_tb_err "VIP route on the director failed"
		testbed_down
		return 1
	fi
	testbed_write_state "$TB_STATE_DIR/state"
}

# testbed_add_node: add node TB_NODES+1 (namespace, veth, addresses, VIP)
# while the testbed runs; TB_NODES becomes its index. Call it directly, not
# in $(...): a subshell's variables are lost.
testbed_add_node()
{
	local i
	if [ -z "${TB_SUF:-}" ]; then
		_tb_err "no testbed is up"
		return 1
	fi
	i=$((TB_NODES + 1))
	if [ "$i" -gt "$TB_MAX_NODES" ]; then
		_tb_err "at most $TB_MAX_NODES nodes"
		return 1
	fi
	_tb_node_vars "$i"
	if ! _tb_make_node "$i" || ! _tb_node_read_attrs "$i"; then
		_tb_err "building node $i failed"
		ip netns del "${TB_NODE_NS[i]}" 2>/dev/null || true
		return 1
	fi
	TB_NODES=$i
	export TB_NODES
	testbed_write_state "$TB_STATE_DIR/state"
	[ -z "${TB_STATE_FILE:-}" ] || testbed_write_state "$TB_STATE_FILE"
}

# The list of every variable, in the order the state file lists them.
_tb_scalars="TB_SUF TB_NODES TB_CLIENT_NS TB_DIR_NS TB_CLIENT_IF TB_DIR_IN
TB_CLIENT_IP4 TB_CLIENT_IP6 TB_CLIENT_NET4 TB_CLIENT_NET6 TB_DIR_IN_IP4
TB_DIR_IN_IP6 TB_DIR_IN_MAC TB_DIR_IN_IFINDEX TB_CLIENT_MAC TB_VIP4 TB_VIP6
TB_VIP_DEFAULT_NODE TB_STATE_DIR TB_BPFFS"
_tb_arrays="TB_NODE_NS TB_NODE_NAME TB_NODE_IF TB_NODE_MAC TB_NODE_IP4
TB_NODE_IP6 TB_DIR_NODE_IF TB_DIR_NODE_MAC TB_DIR_NODE_IP4 TB_DIR_NODE_IP6
TB_DIR_NODE_IFINDEX"

# testbed_vars: print KEY=VALUE lines. Arrays are written as NAME[i]=VALUE,
# which `source` turns back into bash arrays and any other reader can still
# split at the first '='.
testbed_vars()
{
	local v i ref
	for v in $_tb_scalars; do
		printf '%s=%s\n' "$v" "${!v:-}"
	done
	for v in $_tb_arrays; do
		for ((i = 1; i <= TB_NODES; i++)); do
			ref="${v}[$i]"
			printf '%s[%d]=%s\n' "$v" "$i" "${!ref:-}"
		done
	done
}

testbed_write_state()
{
	local f=$1
	testbed_vars >"$f.tmp.$$" && mv -f "$f.tmp.$$" "$f"
}

# testbed_load_state FILE: restore the TB_ variables of a testbed made by
# another process. Lines are checked before sourcing: the file is data.
testbed_load_state()
{
	local f=$1 bad
	if [ ! -r "$f" ]; then
		_tb_err "no state file $f"
		return 1
	fi
	bad=$(grep -Ev '^TB_[A-Z0-9_]+(\[[0-9]+\])?=[A-Za-z0-9_.:/-]*$' "$f" ||
		true)
	if [ -n "$bad" ]; then
		_tb_err "malformed state file $f"
		return 1
	fi
	_tb_reset_vars
	# shellcheck disable=SC1090
	source "$f"
	local v
	for v in $_tb_scalars; do
		export "${v?}"
	done
	TB_STATE_FILE=$f
}

# Runs in a namespace with the testbed's bpffs on /sys/fs/bpf. ip netns exec
# gives every call a private mount namespace with a fresh sysfs, which hides
# any bpffs, so it is bound (or, failing that, mounted) again each time.
# shellcheck disable=SC2016 # expanded by the inner sh
_tb_exec_sh='
if [ -z "$TB_BPFFS" ] || ! mount --bind "$TB_BPFFS" /sys/fs/bpf 2>/dev/null
then
	mount -t bpf bpf /sys/fs/bpf 2>/dev/null
fi
exec "$@"'

# tb_exec NS cmd...: run cmd in namespace NS (foreground).
tb_exec()
{
	local ns=$1
	shift
	TB_BPFFS=${TB_BPFFS:-} ip netns exec "$ns" sh -c "$_tb_exec_sh" sh "$@"
}

# A background command keeps only stdin/out/err: a copy of the test's
# output pipe held by a long-lived server would keep whoever reads that
# pipe waiting after the test is over.
# shellcheck disable=SC2016 # expanded by the inner bash
_tb_spawn_sh='
for f in /proc/$$/fd/*; do
	n=${f##*/}
	[ "$n" -le 2 ] || exec {n}>&-
done
'"$_tb_exec_sh"

# tb_spawn NS LOG cmd...: run cmd in NS in the background, output to LOG;
# the PID is recorded and testbed_down ends it. Sets TB_LAST_PID. The
# command is started directly (not through a function) so that $! is the
# PID of cmd itself: ip netns exec and bash both exec without forking.
tb_spawn()
{
	local ns=$1 log=$2
	shift 2
	TB_BPFFS=${TB_BPFFS:-} ip netns exec "$ns" bash -c "$_tb_spawn_sh" \
		bash "$@" >"$log" 2>&1 </dev/null &
	TB_LAST_PID=$!
	# Not a job of the caller: no "Terminated" noise when it is ended.
	disown "$TB_LAST_PID" 2>/dev/null
	TB_PIDS+=("$TB_LAST_PID")
	[ -z "${TB_STATE_DIR:-}" ] || echo "$TB_LAST_PID" >>"$TB_STATE_DIR/pids"
}

# All namespaces of this testbed, director last (it holds the veths).
_tb_all_ns()
{
	local i
	echo "$TB_CLIENT_NS"
	for ((i = 1; i <= TB_NODES; i++)); do
		echo "${TB_NODE_NS[i]}"
	done
	# A node being added when a failure struck is not counted yet.
	[ ! -e "/var/run/netns/rmn$((TB_NODES + 1))-$TB_SUF" ] ||
		echo "rmn$((TB_NODES + 1))-$TB_SUF"
	echo "$TB_DIR_NS"
}

# testbed_down: end the processes started in the testbed, delete its
# namespaces (which deletes the veths), unmount its bpffs, remove its state
# directory. Safe to call twice and on a half-built testbed.
testbed_down()
{
	local ns pid pids t mine
	[ -n "${TB_SUF:-}" ] || return 0
	mine=" $(_tb_all_ns | tr '\n' ' ') "

	# Tracked PIDs first, politely; a PID is only signalled while it is
	# still inside one of our namespaces, so a recycled PID is safe.
	pids="${TB_PIDS[*]:-}"
	[ -z "${TB_STATE_DIR:-}" ] || [ ! -r "$TB_STATE_DIR/pids" ] ||
		pids="$pids $(cat "$TB_STATE_DIR/pids")"
	for pid in $pids; do
		ns=$(ip netns identify "$pid" 2>/dev/null) || continue
		[[ -n $ns && $mine == *" $ns "* ]] || continue
		kill -TERM "$pid" 2>/dev/null || true
	done
	# Anything else still running in our namespaces (started by tests
	# through tb_exec, say) would keep a namespace and its veths alive.
	for ((t = 0; t < 20; t++)); do
		pids=
		for ns in $mine; do
			pids="$pids $(ip netns pids "$ns" 2>/dev/null || true)"
		done
		[ -n "${pids// /}" ] || break
		# shellcheck disable=SC2086
		[ "$t" -ne 0 ] || kill -TERM $pids 2>/dev/null || true
		sleep 0.1
	done
	for ns in $mine; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
	done

	for ns in $mine; do
		[ ! -e "/var/run/netns/$ns" ] || ip netns del "$ns" ||
			_tb_err "could not delete namespace $ns"
	done
	if [ -n "${TB_STATE_DIR:-}" ] && [ -d "$TB_STATE_DIR" ]; then
		if mountpoint -q "$TB_STATE_DIR/bpffs" 2>/dev/null; then
			umount "$TB_STATE_DIR/bpffs" ||
				umount -l "$TB_STATE_DIR/bpffs"
		fi
		if [ -n "${TB_KEEP_LOGS:-}" ]; then
			_tb_err "logs kept in $TB_STATE_DIR"
		else
			rm -rf "$TB_STATE_DIR"
		fi
	fi
	[ -z "${TB_STATE_FILE:-}" ] || rm -f "$TB_STATE_FILE"
	_tb_reset_vars
}

# Map a namespace alias used by the CLI to its name: client, director,
# nodeN, or a literal namespace name.
_tb_ns_alias()
{
	case $1 in
	client) echo "$TB_CLIENT_NS" ;;
	director) echo "$TB_DIR_NS" ;;
	node[0-9]*) echo "${TB_NODE_NS[${1#node}]:-}" ;;
	*) echo "$1" ;;
	esac
}

_tb_usage()
{
	cat >&2 <<'EOF'
usage: testbed.sh up [K] --state FILE     build a testbed with K nodes (3)
       testbed.sh add-node --state FILE   add one node to it
       testbed.sh exec --state FILE NS cmd...
                 NS: client, director, nodeN or a namespace name
       testbed.sh down --state FILE       tear it down
The state file holds KEY=VALUE lines; `source FILE` in bash restores the
TB_* variables, arrays included (TB_NODE_NS[1]=...).
EOF
	exit 2
}

_tb_main()
{
	local cmd=${1:-} state='' k='' args=() ns
	[ -n "$cmd" ] || _tb_usage
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--state)
			[ $# -ge 2 ] || _tb_usage
			state=$2
			shift 2
			;;
		--state=*)
			state=${1#--state=}
			shift
			;;
		*)
			args+=("$1")
			shift
			;;
		esac
	done
	[ -n "$state" ] || _tb_usage
	case $cmd in
	up)
		k=${args[0]:-3}
		if [ -e "$state" ]; then
			echo "testbed: $state exists; down it first" >&2
			exit 1
		fi
		# Interrupted halfway: leave nothing behind.
		trap 'testbed_down; exit 130' INT TERM
		testbed_up "$k" || exit 1
		trap - INT TERM
		TB_STATE_FILE=$state
		testbed_write_state "$state"
		echo "testbed $TB_SUF up: $TB_NODES nodes, state in $state"
		;;
	add-node)
		testbed_load_state "$state" || exit 1
		testbed_add_node || exit 1
		echo "node$TB_NODES added: ${TB_NODE_NS[TB_NODES]}"
		;;
	exec)
		testbed_load_state "$state" || exit 1
		[ ${#args[@]} -ge 2 ] || _tb_usage
		ns=$(_tb_ns_alias "${args[0]}")
		[ -n "$ns" ] || {
			echo "testbed: no namespace ${args[0]}" >&2
			exit 1
		}
		tb_exec "$ns" "${args[@]:1}"
		;;
	down)
		testbed_load_state "$state" || exit 1
		testbed_down
		;;
	*)
		_tb_usage
		;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	_tb_main "$@"
fi
