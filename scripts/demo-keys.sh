#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The sharding-by-key demo: `sudo make demo-keys`.
#   scripts/demo-keys.sh [BUILD]
# Builds a namespace testbed (a client, the director, 3 nodes), runs a real
# memcached (UDP on, bound to the VIP) on every node, defines a keyed
# service (--key memcached), stores 300 keys over UDP from as many source
# ports and shows that each key sits on the node `ringctl lookup --key`
# names, and nowhere else; then the same with --key flow for contrast.
# Nothing is configured outside the testbed's namespaces; everything is
# torn down on the way out.
set -u

BUILD=${1:-${BUILD:-build}}
KEYS=300
PORT=11211

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/e2e/lib.sh
source "$top/tests/e2e/lib.sh"
E2E_NAME=demo-keys
CLIENT="python3 $top/tests/e2e/keys_client.py"

if [ -t 1 ]; then
	B=$'\e[1m' D=$'\e[2m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'
else
	B='' D='' G='' R='' N=''
fi
head1() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
say() { printf '  %s\n' "$*"; }
indent() { sed "s/^/    $D/; s/\$/$N/"; }
die()
{
	printf '\n  %sdemo failed: %s%s\n' "$R" "$*" "$N" >&2
	exit 1
}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo-keys: needs root for network namespaces and XDP" >&2
	exit 1
fi
for t in "$RINGCTL" "$RINGLOAD"; do
	[ -x "$t" ] || die "$t missing: run make first"
done
command -v memcached >/dev/null || die "memcached missing: make deps"

cleanup()
{
	local rc=$? suf=${TB_SUF:-}
	trap - EXIT INT TERM
	if [ -n "$suf" ]; then
		head1 "Cleaning up"
		testbed_down
		say "testbed $suf and its memcached servers removed"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

printf '%sRingmaster: sharding by key%s (memcached over UDP, routed in XDP)\n' "$B" "$N"

head1 "1. Testbed, a memcached on each node"
testbed_up 3 >/dev/null || die "testbed_up"
work=$TB_STATE_DIR/demo-keys
mkdir -p "$work"
for ((i = 1; i <= TB_NODES; i++)); do
	tb_spawn "${TB_NODE_NS[i]}" "$work/mc$i.log" memcached -u root \
		-l "$TB_VIP4" -p "$PORT" -U "$PORT" -m 16 -t 1
done
for ((i = 1; i <= TB_NODES; i++)); do
	for ((t = 0; t < 100; t++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-flush "$TB_VIP4" "$PORT" \
			2>/dev/null && break
		sleep 0.1
	done
done
say "client $TB_CLIENT_IP4 -> director $TB_DIR_IN (XDP) -> node1..node3, memcached on $TB_VIP4:$PORT (UDP)"
e2e_attach >/dev/null || die "ringload attach"

python3 -c '
import sys
for i in range(int(sys.argv[1])):
    print("user:%d" % i)' "$KEYS" >"$work/keys"

# where each key is: asked of every memcached over TCP
where()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-held "$TB_VIP4" "$PORT" \
			"$work/keys" | sed "s/\$/ ${TB_NODE_NAME[i]}/"
	done
}
flush()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-flush "$TB_VIP4" "$PORT"
	done
}
run()
{
	local mode=$1 st
	flush
	e2e_ctl service del cache >/dev/null 2>&1
	e2e_ctl service add cache --vip "$TB_VIP4" --port "$PORT" --proto udp \
		--key "$mode" | indent
	e2e_add_nodes cache || die "node add"
	st=$(tb_exec "$TB_CLIENT_NS" $CLIENT mc-udp "$TB_VIP4" "$PORT" \
		"$work/keys" --op set)
	say "stored $KEYS keys over UDP, each from a fresh source port: $st"
	st=$(tb_exec "$TB_CLIENT_NS" $CLIENT mc-udp "$TB_VIP4" "$PORT" \
		"$work/keys" --op get)
	say "read them back, each from another fresh port: ${B}$(echo "$st" |
		e2e_json 'd["hits"]') of $KEYS hits$N"
	where >"$work/where-$mode"
}

head1 "2. --key memcached"
run memcached
say "ringctl lookup cache --key user:0 (the owner, computed as the kernel does):"
e2e_ctl lookup cache --key user:0 | indent
e2e_ctl lookup cache --key-file "$work/keys" >"$work/owners"
say "the first keys, where each memcached holds them (asked over TCP):"
awk 'NR == FNR { o[$1] = $2; next } FNR <= 8 { printf "%-10s on %s, lookup owner %s\n", $1, $2, o[$1] }' \
	"$work/owners" "$work/where-memcached" | indent
ok=$(awk 'NR == FNR { o[$1] = $2; next } { n[$1]++; if (o[$1] == $2) k++ }
	END { m = 0; for (x in n) if (n[x] > 1) m++; print k + 0, m }' \
	"$work/owners" "$work/where-memcached")
say "${G}$(echo "$ok" | awk '{ print $1 }') of $KEYS keys on their lookup owner, $(echo "$ok" | awk '{ print $2 }') on more than one node$N"
say "per node:"
awk '{ print $2 }' "$work/where-memcached" | sort | uniq -c | indent
e2e_ctl stats | awk '$1 == "key-routed" || $1 ~ /^key-fallback/' | indent

head1 "3. --key flow, for contrast"
run flow
say "keys now land wherever each request's flow hashes: a read from another port"
say "asks another node, and misses"

