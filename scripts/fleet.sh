#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fleet testbed: a client, a router running BIRD 2, D directors each
# running BIRD 2 + Ringmaster + ringsync, N nodes, and etcd; every piece
# in its own network namespace, joined by veths.
#
#   client (rfc)                router (rfr)                  director k (rfdK)
#   c0 198.18.200.2/24  <--->   r-c  198.18.200.1/24
#      +.10-.41 (sources)       r-dK 198.18.10K.1/24  <--->   d-up  198.18.10K.2 (XDP)
#                               lo   198.18.199.1 (etcd)      d-lan (no address)
#                               br0  198.18.150.1/24 (node LAN)
#                                 r-lK  <------------------->   d-lan of director k
#                                 r-nI  <--->  node I (rfnI): n0 198.18.150.(10+I)
#                                                             lo VIP/32
#
# The router learns the VIP from every director over eBGP and installs one
# ECMP route (BIRD kernel protocol, merge paths on; L4 multipath hash).
# A director's XDP program on d-up sends each flow to its node over the
# node LAN (L2 DSR: destination MAC rewritten, out of d-lan); the node
# answers the client through the router. Every director reaches every node
# through its own d-lan, so one configuration document (node MACs, dev
# d-lan) fits all of them: that is what etcd holds and ringsync applies.
#
# Each director keeps its pinned state on its own bpffs, mounted at
# $FL_DIR/bpffs-dK (ip netns exec remounts /sys, so /sys/fs/bpf would not
# outlive one call), and every ringctl/ringload call names it with
# --pin-dir. etcd runs in the router namespace, listening on 198.18.199.1
# (reached by the directors through their uplinks) and 127.0.0.1, with its
# data in $FL_DIR/etcd.
#
# Use as a library (bash):
#   source scripts/fleet.sh
#   fleet_up 3 3 || ...         # FL_* variables below; fleet_down on exit
#   fleet_director_start K      # XDP, BIRD, ringsync on director K
#   fleet_director_kill K       # SIGKILL its BIRD and ringsync, detach XDP
#   fleet_etcd_start / fleet_etcd_stop
#   fleet_publish FILE [ringctl publish options]
#   fleet_ctl K ARGS... / fleet_load K ARGS...   ringctl/ringload on K
#   fleet_nexthops              next hops of the VIP route on the router
#   fleet_doc [NODE_IDX...]     a configuration document on stdout
#   fleet_down
# Variables: FL_SUF FL_DIR FL_D FL_N FL_VIP4 FL_PORT FL_KEY FL_ETCD
#   FL_CLIENT_NS FL_ROUTER_NS FL_DIR_NS[k] FL_PIN[k] FL_NODE_NS[i]
#   FL_NODE_MAC[i] FL_SEED FL_CLIENT_SRCS (the client's source addresses)
# FL_NO_ETCD=1: fleet_up starts no etcd (a fleet driven by ringctl alone).
# Paths: FL_BUILD (default $BUILD or <repo>/build) holds ringctl, ringload,
# ringsync; FL_EXAMPLES the BIRD templates (examples/fleet).
#
# Addresses: 198.18.0.0/15 only; nothing is configured in the root
# namespace; every daemon runs inside a namespace and is stopped by
# fleet_down (which the caller must run on every exit path).

FL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FL_BUILD=${FL_BUILD:-${BUILD:-$FL_ROOT/build}}
case $FL_BUILD in
/*) ;;
*) FL_BUILD=$PWD/$FL_BUILD ;;
esac
FL_EXAMPLES=${FL_EXAMPLES:-$FL_ROOT/examples/fleet}
FL_VIP4=${FL_VIP4:-198.19.255.1}
FL_PORT=${FL_PORT:-8080}
FL_KEY=${FL_KEY:-/ringmaster/fleet}
FL_ETCD_ADDR=198.18.199.1
FL_ETCD=http://$FL_ETCD_ADDR:2379
FL_ROUTER_AS=65000
FL_NSRC=${FL_NSRC:-32}

_fl_err()
{
	echo "fleet: $*" >&2
}

# fl_do CMD...: run a setup step; the first failure is remembered.
_fl_failed=0
_fl_do()
{
	[ "$_fl_failed" -eq 0 ] || return 1
	"$@" && return 0
	_fl_err "failed: $*"
	_fl_failed=1
	return 1
}

_fl_sysctl()
{
	ip netns exec "$1" sh -ec "$2"
}

_fl_mac()
{
	ip -n "$1" -o link show dev "$2" |
		sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# _fl_spawn NAME NS CMD...: a daemon in NS, its PID in $FL_DIR/NAME.pid,
# its output in $FL_DIR/NAME.log.
_fl_spawn()
{
	local name=$1 ns=$2
	shift 2
	ip netns exec "$ns" "$@" >>"$FL_DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$FL_DIR/$name.pid"
	disown $! 2>/dev/null
}

# _fl_kill NAME SIGNAL: signal the daemon NAME and wait for it (3 s).
_fl_kill()
{
	local f=$FL_DIR/$1.pid pid t
	[ -r "$f" ] || return 0
	pid=$(cat "$f")
	rm -f "$f"
	kill "-$2" "$pid" 2>/dev/null || return 0
	for ((t = 0; t < 60; t++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
}

_fl_all_ns()
{
	local k
	echo "$FL_CLIENT_NS" "$FL_ROUTER_NS"
	for ((k = 1; k <= FL_D; k++)); do echo "${FL_DIR_NS[k]}"; done
	for ((k = 1; k <= FL_N; k++)); do echo "${FL_NODE_NS[k]}"; done
}

_fl_bird_conf()
{
	# $1 template, $2 output, then KEY=VALUE substitutions
	local in=$1 out=$2 kv sed_args=()
	shift 2
	for kv in "$@"; do
		sed_args+=(-e "s|@${kv%%=*}@|${kv#*=}|g")
	done
	sed "${sed_args[@]}" "$in" >"$out"
}

# fleet_up D N: build the fleet (no daemon but etcd and the router's BIRD
# yet: fleet_director_start each director). 1 on failure, everything made
# removed.
fleet_up()
{
	local d=${1:-3} n=${2:-3} k i peer ns
	if [ "$(id -u)" -ne 0 ]; then
		_fl_err "must run as root"
		return 1
	fi
	FL_D=$d FL_N=$n
	FL_SUF=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	FL_DIR=$(mktemp -d "/tmp/rm-fleet-$FL_SUF.XXXXXX") || return 1
	FL_CLIENT_NS=rfc-$FL_SUF FL_ROUTER_NS=rfr-$FL_SUF
	declare -ga FL_DIR_NS FL_PIN FL_NODE_NS FL_NODE_MAC FL_CLIENT_SRCS
	for ((k = 1; k <= d; k++)); do
		FL_DIR_NS[k]=rfd$k-$FL_SUF
		FL_PIN[k]=$FL_DIR/bpffs-d$k/ringmaster
	done
	for ((i = 1; i <= n; i++)); do FL_NODE_NS[i]=rfn$i-$FL_SUF; done
	FL_SEED=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

	_fl_failed=0
	local common='
		echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter
		echo 0 > /proc/sys/net/ipv4/conf/default/rp_filter
		echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad
	'
	for ns in $(_fl_all_ns); do
		_fl_do ip netns add "$ns"
		_fl_do _fl_sysctl "$ns" "$common"
		_fl_do ip -n "$ns" link set lo up
	done
	# router: forwards, hashes ECMP on the 5-tuple (v4 and v6)
	_fl_do _fl_sysctl "$FL_ROUTER_NS" '
		echo 1 > /proc/sys/net/ipv4/ip_forward
		echo 1 > /proc/sys/net/ipv4/fib_multipath_hash_policy
		echo 1 > /proc/sys/net/ipv6/fib_multipath_hash_policy
		echo 0 > /proc/sys/net/ipv4/conf/all/send_redirects
		echo 0 > /proc/sys/net/ipv4/conf/default/send_redirects'
	_fl_do ip -n "$FL_ROUTER_NS" addr add "$FL_ETCD_ADDR/32" dev lo
	# client
	_fl_do ip -n "$FL_ROUTER_NS" link add r-c type veth peer name c0 \
		netns "$FL_CLIENT_NS"
	_fl_do ip -n "$FL_ROUTER_NS" addr add 198.18.200.1/24 dev r-c
	_fl_do ip -n "$FL_ROUTER_NS" link set r-c up
	_fl_do ip -n "$FL_CLIENT_NS" addr add 198.18.200.2/24 dev c0
	FL_CLIENT_SRCS=(198.18.200.2)
	for ((i = 0; i < FL_NSRC - 1; i++)); do
		_fl_do ip -n "$FL_CLIENT_NS" addr add "198.18.200.$((10 + i))/24" \
			dev c0
		FL_CLIENT_SRCS+=("198.18.200.$((10 + i))")
	done
	_fl_do ip -n "$FL_CLIENT_NS" link set c0 up
	_fl_do ip -n "$FL_CLIENT_NS" route add default via 198.18.200.1
	# the client computes its own checksums: a redirected frame gets no
	# offload help downstream
	_fl_do ip netns exec "$FL_CLIENT_NS" ethtool -K c0 tx off >/dev/null
	# node LAN: a bridge in the router namespace
	_fl_do ip -n "$FL_ROUTER_NS" link add br0 type bridge
	_fl_do ip -n "$FL_ROUTER_NS" addr add 198.18.150.1/24 dev br0
	_fl_do ip -n "$FL_ROUTER_NS" link set br0 up
	for ((i = 1; i <= n; i++)); do
		ns=${FL_NODE_NS[i]}
		_fl_do _fl_sysctl "$ns" '
			echo 1 > /proc/sys/net/ipv4/conf/all/arp_ignore
			echo 2 > /proc/sys/net/ipv4/conf/all/arp_announce'
		_fl_do ip -n "$FL_ROUTER_NS" link add "r-n$i" type veth peer \
			name n0 netns "$ns"
		_fl_do ip -n "$FL_ROUTER_NS" link set "r-n$i" master br0 up
		_fl_do ip -n "$ns" addr add "198.18.150.$((10 + i))/24" dev n0
		_fl_do ip -n "$ns" addr add "$FL_VIP4/32" dev lo
		_fl_do ip -n "$ns" link set n0 up
		_fl_do ip -n "$ns" route add default via 198.18.150.1
		FL_NODE_MAC[i]=$(_fl_mac "$ns" n0)
	done
	for ((k = 1; k <= d; k++)); do
		ns=${FL_DIR_NS[k]}
		_fl_do _fl_sysctl "$ns" '
			echo 1 > /proc/sys/net/ipv4/ip_forward'
		_fl_do ip -n "$FL_ROUTER_NS" link add "r-d$k" type veth peer \
			name d-up netns "$ns"
		_fl_do ip -n "$FL_ROUTER_NS" addr add "198.18.$((100 + k)).1/24" \
			dev "r-d$k"
		_fl_do ip -n "$FL_ROUTER_NS" link set "r-d$k" up
		_fl_do ip -n "$ns" addr add "198.18.$((100 + k)).2/24" dev d-up
		_fl_do ip -n "$ns" link set d-up up
		_fl_do ip -n "$ns" route add default via "198.18.$((100 + k)).1"
		_fl_do ip -n "$FL_ROUTER_NS" link add "r-l$k" type veth peer \
			name d-lan netns "$ns"
		_fl_do ip -n "$FL_ROUTER_NS" link set "r-l$k" master br0 up
		_fl_do ip -n "$ns" link set d-lan up
		# frames the director redirects into d-lan are taken in by
		# the peer only with NAPI: GRO on
		_fl_do ip netns exec "$FL_ROUTER_NS" ethtool -K "r-l$k" gro on \
			>/dev/null
		_fl_do mkdir -p "$FL_DIR/bpffs-d$k"
		_fl_do mount -t bpf bpf "$FL_DIR/bpffs-d$k"
	done
	# the router's BIRD: one BGP session per director
	_fl_do _fl_bird_conf "$FL_EXAMPLES/bird-router.conf" \
		"$FL_DIR/bird-router.conf" ROUTER_ID=198.18.199.1 \
		LOG="$FL_DIR/bird-router.blog" LOCAL_AS=$FL_ROUTER_AS \
		VIP_NETS="$FL_VIP4/32"
	for ((k = 1; k <= d; k++)); do
		peer="198.18.$((100 + k)).2"
		echo "protocol bgp d$k from director { neighbor $peer as $((FL_ROUTER_AS + k)); }" \
			>>"$FL_DIR/bird-router.conf"
	done
	if [ "$_fl_failed" -ne 0 ]; then
		fleet_down
		return 1
	fi
	_fl_spawn bird-router "$FL_ROUTER_NS" bird -f -c \
		"$FL_DIR/bird-router.conf" -s "$FL_DIR/bird-router.ctl" \
		-P "$FL_DIR/bird-router.bpid"
	[ -n "${FL_NO_ETCD:-}" ] || fleet_etcd_start || { fleet_down; return 1; }
}

# fleet_etcd_start: etcd in the router namespace, data in $FL_DIR/etcd;
# waits until it answers (15 s at most).
fleet_etcd_start()
{
	local t
	_fl_spawn etcd "$FL_ROUTER_NS" etcd --name fleet \
		--data-dir "$FL_DIR/etcd" \
		--listen-client-urls "$FL_ETCD,http://127.0.0.1:2379" \
		--advertise-client-urls "$FL_ETCD" \
		--listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster fleet=http://127.0.0.1:2380
	for ((t = 0; t < 150; t++)); do
		ip netns exec "$FL_ROUTER_NS" curl -sf -m 1 \
			http://127.0.0.1:2379/version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	_fl_err "etcd did not start: $(tail -3 "$FL_DIR/etcd.log")"
	return 1
}

fleet_etcd_stop()
{
	_fl_kill etcd TERM
}

fleet_ctl()
{
	local k=$1
	shift
	ip netns exec "${FL_DIR_NS[k]}" "$FL_BUILD/ringctl" --pin-dir \
		"${FL_PIN[k]}" "$@"
}

fleet_load()
{
	local k=$1
	shift
	ip netns exec "${FL_DIR_NS[k]}" "$FL_BUILD/ringload" "$@" --pin-dir \
		"${FL_PIN[k]}"
}

# fleet_director_start K: XDP on d-up, BIRD (VIP protocol disabled until
# ringsync enables it), ringsync watching the fleet key.
fleet_director_start()
{
	local k=$1 ns=${FL_DIR_NS[1]}
	ns=${FL_DIR_NS[k]}
	fleet_load "$k" attach d-up --mode native >/dev/null || return 1
	_fl_bird_conf "$FL_EXAMPLES/bird-director.conf" \
		"$FL_DIR/bird-d$k.conf" ROUTER_ID="198.18.$((100 + k)).2" \
		LOG="$FL_DIR/bird-d$k.blog" VIP4="$FL_VIP4" \
		LOCAL_ADDR="198.18.$((100 + k)).2" LOCAL_AS=$((FL_ROUTER_AS + k)) \
		PEER_ADDR="198.18.$((100 + k)).1" PEER_AS=$FL_ROUTER_AS ||
		return 1
	_fl_spawn "bird-d$k" "$ns" bird -f -c "$FL_DIR/bird-d$k.conf" \
		-s "$FL_DIR/bird-d$k.ctl" -P "$FL_DIR/bird-d$k.bpid"
	_fl_spawn "ringsync-d$k" "$ns" "$FL_BUILD/ringsync" --etcd "$FL_ETCD" \
		--key "$FL_KEY" --pin-dir "${FL_PIN[k]}" \
		--bird-socket "$FL_DIR/bird-d$k.ctl" --bird-protocol vip \
		--interval-ms 500 --backoff-max-ms 1000
}

# fleet_director_kill K: the director dies: BIRD and ringsync killed
# (SIGKILL: no goodbye), its XDP program detached.
fleet_director_kill()
{
	local k=$1
	_fl_kill "bird-d$k" KILL
	_fl_kill "ringsync-d$k" KILL
	fleet_load "$k" detach d-up >/dev/null
}

# fleet_publish FILE [options]: ringctl publish from the router namespace.
fleet_publish()
{
	local f=$1
	shift
	ip netns exec "$FL_ROUTER_NS" "$FL_BUILD/ringctl" publish "$f" \
		--etcd http://127.0.0.1:2379 --key "$FL_KEY" "$@"
}

# fleet_nexthops: how many next hops the router's VIP route has (0: none).
fleet_nexthops()
{
	local r
	r=$(ip -n "$FL_ROUTER_NS" route show "$FL_VIP4/32" 2>/dev/null)
	[ -n "$r" ] || { echo 0; return; }
	if echo "$r" | grep -q nexthop; then
		echo "$r" | grep -c nexthop
	else
		echo 1
	fi
}

# fleet_wait_nexthops N S: until the router's VIP route has N next hops
# (S seconds at most): a BGP session comes up on its own time, and ECMP
# spreads over the directors the route names.
fleet_wait_nexthops()
{
	local want=$1 lim=$2 t
	for ((t = 0; t < lim * 20; t++)); do
		[ "$(fleet_nexthops)" = "$want" ] && return 0
		sleep 0.05
	done
	return 1
}

# fleet_doc [I...]: the fleet's document with nodes I... (all by default),
# each with weight 1, or I:W for weight W.
fleet_doc()
{
	local spec i w
	[ $# -gt 0 ] || set -- $(seq 1 "$FL_N")
	echo "# ringmaster fleet configuration (ringctl publish)"
	echo "seed --set $FL_SEED"
	echo "config --udp-timeout 60 --conn-insert-rate 200000"
	echo "service add web --vip $FL_VIP4 --port $FL_PORT --proto tcp --hash 5tuple --vnodes 1000"
	for spec in "$@"; do
		i=${spec%%:*}
		w=1
		[ "$spec" = "$i" ] || w=${spec#*:}
		echo "node add web node$i --mac ${FL_NODE_MAC[i]} --dev d-lan --weight $w"
	done
}

fleet_down()
{
	local ns pid f t pids k
	[ -n "${FL_SUF:-}" ] || return 0
	for f in "$FL_DIR"/*.pid; do
		[ -e "$f" ] || continue
		kill -TERM "$(cat "$f")" 2>/dev/null
	done
	for ((t = 0; t < 30; t++)); do
		pids=
		for ns in $(_fl_all_ns); do
			pids="$pids $(ip netns pids "$ns" 2>/dev/null)"
		done
		[ -n "${pids// /}" ] || break
		[ "$t" -ne 10 ] || kill -KILL $pids 2>/dev/null
		sleep 0.1
	done
	for ns in $(_fl_all_ns); do
		[ ! -e "/var/run/netns/$ns" ] || ip netns del "$ns" ||
			_fl_err "could not delete namespace $ns"
	done
	for ((k = 1; k <= FL_D; k++)); do
		mountpoint -q "$FL_DIR/bpffs-d$k" 2>/dev/null &&
			{ umount "$FL_DIR/bpffs-d$k" || umount -l "$FL_DIR/bpffs-d$k"; }
	done
	if [ -n "${FL_KEEP_LOGS:-}" ]; then
		_fl_err "logs kept in $FL_DIR"
	else
		rm -rf "$FL_DIR"
	fi
	FL_SUF=
}
