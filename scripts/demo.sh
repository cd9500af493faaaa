#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Ringmaster demo: `make demo` (as root) runs it after building.
#   scripts/demo.sh [BUILD]
# Builds a namespace testbed (a client, the director, 3 nodes), attaches
# the XDP director, opens 3,000 real connections to a TCP service and
# shows where they landed next to the ring's exact shares; then adds a 4th
# node live, compares the dry run's prediction with what really moved,
# removes it again; then stops a node's server and lets ringhealth take
# it out of the ring and bring it back; and tears everything down. Nothing is configured
# outside the testbed's namespaces, and nothing is left behind.
set -u

BUILD=${1:-${BUILD:-build}}
FLOWS=3000
SPOT=300 # flows checked one by one against ringctl lookup

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The e2e helpers: testbed, servers, client, lookups, chi-square.
# shellcheck source=tests/e2e/lib.sh
source "$top/tests/e2e/lib.sh"
E2E_NAME=demo

if [ -t 1 ]; then
	B=$'\e[1m' D=$'\e[2m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'
else
	B='' D='' G='' R='' N=''
fi

head1()
{
	printf '\n%s== %s%s\n' "$B" "$*" "$N"
}

say()
{
	printf '  %s\n' "$*"
}

# indent: the output of a command, set off.
indent()
{
	sed "s/^/    $D/; s/\$/$N/"
}

die()
{
	printf '\n  %sdemo failed: %s%s\n' "$R" "$*" "$N" >&2
	exit 1
}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root for network namespaces and XDP: run make demo as root" >&2
	exit 1
fi
RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
for t in "$RINGCTL" "$RINGLOAD" "$RINGHEALTH" "$RM_SERVER" "$RM_CLIENT"; do
	[ -x "$t" ] || {
		echo "demo: $t missing: run make first" >&2
		exit 1
	}
done

cleanup()
{
	local rc=$? suf=${TB_SUF:-}
	trap - EXIT INT TERM
	[ -n "$suf" ] || exit "$rc"
	head1 "Cleaning up"
	testbed_down
	local ns veth
	ns=$(ip netns list | grep -c -- "-$suf\\b")
	veth=$(ip -o link show type veth |
		grep -cE ': (d-in|d-n[0-9]+|c-eth0|n-eth0)[@:]')
	if [ "$ns" -eq 0 ] && [ "$veth" -eq 0 ]; then
		say "testbed $suf removed: no namespace, veth, program or pinned map left"
	else
		say "${R}left behind: $ns namespace(s), $veth veth(s)$N"
		rc=1
	fi
	[ "$rc" -ne 0 ] || [ -z "${DEMO_OK:-}" ] ||
		printf '\n%sDone in %d s.%s\n' "$B" $((SECONDS - start)) "$N"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$SECONDS
work=''
DEMO_OK=''

# bars FLOWFILE SHARES: one line per node: flows, observed share, the
# ring's share, and a bar of the observed share.
bars()
{
	local flows=$1 shares=$2
	awk 'NR == FNR { n[$2]++; total++; next }
		{ name[++k] = $1; share[k] = $2; if (n[$1] > max) max = n[$1] }
		END {
			printf "    %-7s %6s %9s %11s\n", "NODE", "FLOWS",
				"OBSERVED", "RING SHARE"
			for (i = 1; i <= k; i++) {
				c = n[name[i]] + 0
				bar = ""
				for (j = 0; j < int(40 * c / max + 0.5); j++)
					bar = bar "#"
				printf "    %-7s %6d %8.1f%% %10.1f%%  %s\n", name[i],
					c, 100 * c / total, 100 * share[i], bar
			}
		}' "$flows" "$shares"
}

# connections NAME: the demo's FLOWS connections, all from the same
# source ports every time; "SPORT NODE" lines into $work/NAME.
connections()
{
	local name=$1 t0 ms ok
	t0=$(date +%s%N)
	e2e_flows "$work/$name" --vip "$TB_VIP4" --proto tcp --count "$FLOWS" \
		--sport-base "$PORTS" --timeout-ms 3000
	ms=$((($(date +%s%N) - t0) / 1000000))
	ok=$(grep -vc ' FAIL$' "$work/$name")
	if [ "$ok" -eq "$FLOWS" ]; then
		say "$G$ok of $FLOWS connections answered$N in $ms ms; each node names itself in its greeting:"
	else
		say "$R$ok of $FLOWS connections answered$N in $ms ms:"
	fi
	e2e_shares web >"$work/$name.shares"
	bars "$work/$name" "$work/$name.shares"
	[ "$ok" -eq "$FLOWS" ] || die "connections failed"
}

# chisq NAME: how well the counts fit the ring's shares.
chisq()
{
	local name=$1 obs='' shares='' node share res
	while read -r node share; do
		obs="$obs $(e2e_count "$work/$name" "$node")"
		shares="$shares $share"
	done <"$work/$name.shares"
	res=$(e2e_chisq "$obs" "$shares" 0.001 2>/dev/null)
	res=${res##*p=}
	say "$(printf 'chi-square test against the ring'"'"'s shares: p = %.3f' "$res") (above 0.001: the counts fit)"
}

# ---------------------------------------------------------------------------
printf '%sRingmaster demo%s: an XDP L4 load balancer with a consistent-hash ring\n' "$B" "$N"

head1 "1. Testbed"
testbed_up 3 >/dev/null || die "testbed_up"
work=$TB_STATE_DIR/demo
mkdir -p "$work"
say "network namespaces (suffix $TB_SUF), nothing in the root namespace:"
say "  client  $TB_CLIENT_IP4  ->  director $TB_DIR_IN (XDP)  ->  node1, node2, node3"
say "  every node holds the VIP $TB_VIP4 and answers the client directly (DSR)"
e2e_start_servers || die "servers"
say "a small server on each node greets every connection with its name"

head1 "2. Director"
e2e_attach 2>&1 | indent
[ "${PIPESTATUS[0]}" -eq 0 ] || die "ringload attach"
e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" --proto tcp |
	indent
e2e_add_nodes web || die "ringctl node add"
say "ringctl node add web node1|node2|node3 ... ; ringctl show web:"
e2e_ctl show web | indent

head1 "3. $FLOWS connections"
e2e_alloc_sports "$FLOWS"
PORTS=$E2E_SPORT
say "from $TB_CLIENT_IP4, source ports $PORTS-$((PORTS + FLOWS - 1)), to $TB_VIP4:$E2E_PORT"
connections round1
chisq round1
e2e_lookups "$work/spot" web "$TB_CLIENT_IP4" "$PORTS" "$SPOT" ||
	die "ringctl lookup"
bad=$(awk 'NR == FNR { w[$1] = $2; next } $1 in w && w[$1] != $2 { k++ }
	END { print k + 0 }' "$work/spot" "$work/round1")
say "spot check: $((SPOT - bad)) of the first $SPOT went exactly where \`ringctl lookup\` says"
[ "$bad" -eq 0 ] || die "$bad flows off their lookup"

head1 "4. Adding node4, live"
testbed_add_node >/dev/null || die "testbed_add_node"
e2e_start_server 4 || die "server on node4"
add=(node add web node4 --mac "${TB_NODE_MAC[4]}" --dev "${TB_DIR_NODE_IF[4]}")
say "ringctl ${add[*]:0:4} ... --dry-run: the prediction, nothing changed yet"
e2e_ctl "${add[@]}" --dry-run | indent
predicted=$(e2e_ctl "${add[@]}" --dry-run --json |
	e2e_json 'd["services"][0]["moved_share"]')
e2e_ctl "${add[@]}" | indent
say "the same $FLOWS connections again (same source ports: each SYN"
say "follows the new ring and forgets its old connection-table entry):"
connections round2
read -r moved total < <(e2e_moved "$work/round1" "$work/round2")
to4=$(awk '$3 == "node4"' "$work/round2.moves" | wc -l)
say "$(printf 'moved: %s%d of %d flows (%.1f%%)%s, predicted by the dry run: %.1f%%' \
	"$B" "$moved" "$total" "$(awk -v a="$moved" -v b="$total" \
	'BEGIN { print 100 * a / b }')" "$N" "$(awk -v p="$predicted" \
	'BEGIN { print 100 * p }')")"
say "$(printf 'binomial tolerance (4 sigma): +/- %.1f%%' "$(awk -v p="$predicted" \
	-v n="$total" 'BEGIN { print 100 * 4 * sqrt(p * (1 - p) / n) }')")"
if [ "$to4" -eq "$moved" ]; then
	say "${G}all $moved moved flows went to node4$N; every other flow stayed put"
else
	say "${R}only $to4 of $moved moved flows went to node4$N"
fi
say "(hash % N, going from 3 to 4 nodes, would have moved about 3/4 of all flows)"

head1 "5. Removing node4"
say "ringctl node del web node4 --dry-run:"
e2e_ctl node del web node4 --dry-run | indent
e2e_ctl node del web node4 | indent
say "the same $FLOWS connections once more:"
connections round3
read -r moved total < <(e2e_moved "$work/round1" "$work/round3")
if [ "$moved" -eq 0 ]; then
	say "${G}all $total flows are back on the node they had before node4 came$N"
else
	say "${R}$moved of $total flows are not where they were before node4 came$N"
fi

head1 "6. A node fails; the ring heals itself"
for i in 1 2 3; do
	e2e_ctl node set web "node$i" --addr "${TB_NODE_IP4[i]}" >/dev/null ||
		die "ringctl node set --addr"
done
say "ringctl node set web nodeI --addr ADDR: where the checks go"
e2e_ctl service set web --check tcp --interval 500ms --timeout 300ms | indent
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH"
healthy()
{
	[ "$(e2e_ctl show web --json | e2e_json "sum(n['health']['state'] ==
		'healthy' for s in d['services'] for n in s['nodes'])")" = 3 ]
}
e2e_wait_for 10 healthy || die "nodes never healthy"
say "ringhealth runs beside the director: every node healthy"
e2e_stop_server 2
say "${B}node2's server stopped$N; ringhealth's log:"
node2_out() { grep -q "web node2: out of the ring" "$work/ringhealth.log"; }
e2e_wait_for 10 node2_out || die "node2 never left the ring"
grep -E "node2" "$work/ringhealth.log" | cut -d' ' -f1,3- | indent
e2e_ctl show web | indent
say "the same $FLOWS connections: nobody has to type ringctl node set --down"
connections round4
[ "$(e2e_count "$work/round4" node2)" -eq 0 ] || die "flows on node2"
say "${G}none on node2, every one answered$N; node1 and node3 keep their own flows"
e2e_start_server 2 || die "server on node2"
node2_in() { grep -q "web node2: back in the ring" "$work/ringhealth.log"; }
e2e_wait_for 10 node2_in || die "node2 never came back"
say "node2's server restarted: two passed checks (rise 2) bring it back:"
grep -E "node2: (unhealthy -> healthy|back in)" "$work/ringhealth.log" |
	cut -d' ' -f1,3- | indent
connections round5
read -r moved total < <(e2e_moved "$work/round1" "$work/round5")
[ "$moved" -eq 0 ] && say "${G}all $total flows are back where they started$N"

say "the director's counters (ringctl stats):"
e2e_ctl stats | awk '$1 ~ /^forwarded-|^dropped-no-node|^conn-hit/' |
	indent
DEMO_OK=1
