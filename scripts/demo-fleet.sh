#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The fleet demo: `sudo make demo-fleet`.
#   scripts/demo-fleet.sh [BUILD]
# Builds the fleet testbed (scripts/fleet.sh: a client, a router running
# BIRD 2, 3 directors with BIRD 2 + Ringmaster + ringsync, 3 nodes, etcd),
# publishes one configuration document to etcd, opens 150 long-lived TCP
# connections streaming data, kills director 2 (BIRD and ringsync SIGKILLed,
# XDP detached) while data flows, brings it back, and shows that no
# connection was reset and no byte corrupted. Everything lives in
# namespaces and is torn down at the end, whatever happens.
set -u

BUILD=${1:-${BUILD:-build}}
HOLD=150
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/fleet.sh
source "$top/scripts/fleet.sh"
FL_BUILD=$(cd "$BUILD" && pwd)
CLIENT=$FL_BUILD/tools/rm_client
SERVER=$FL_BUILD/tools/rm_server

if [ -t 1 ]; then
	B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'
else
	B='' G='' R='' N=''
fi
head1() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
say() { printf '  %s\n' "$*"; }
route() { ip -n "$FL_ROUTER_NS" route show "$FL_VIP4/32" | sed 's/^/    /'; }
die() { printf '%sdemo-fleet: %s%s\n' "$R" "$*" "$N"; exit 1; }

for t in bird birdc etcd curl "$FL_BUILD/ringsync" "$CLIENT"; do
	command -v "$t" >/dev/null 2>&1 ||
		die "$t missing: run make deps and make"
done
trap 'fleet_down' EXIT
trap 'exit 130' INT TERM

head1 "Building the fleet: client -> router (BIRD) -> 3 directors -> 3 nodes, etcd"
fleet_up 3 3 || die "fleet_up failed"
say "namespaces *-$FL_SUF, state in $FL_DIR"
for ((i = 1; i <= FL_N; i++)); do
	ip netns exec "${FL_NODE_NS[i]}" "$SERVER" --name "node$i" \
		--port "$FL_PORT" --max-seconds 300 >/dev/null 2>&1 &
	echo $! >"$FL_DIR/server$i.pid"
done

head1 "One document in etcd: ringctl publish (compare-and-swap)"
fleet_doc >"$FL_DIR/doc"
sed 's/^/    /' "$FL_DIR/doc"
fleet_publish "$FL_DIR/doc" | sed 's/^/  /'

head1 "Directors: XDP attached, BIRD started, ringsync applies and announces"
for k in 1 2 3; do fleet_director_start "$k" || die "director $k"; done
for ((t = 0; t < 300 && $(fleet_nexthops) < 3; t++)); do sleep 0.1; done
grep -h 'applied\|announcing' "$FL_DIR"/ringsync-d*.log | sed 's/^/  /'
say "the router's route to the VIP (one ECMP route, three next hops):"
route

head1 "$HOLD long-lived connections, each echoing every byte it sends"
ip netns exec "$FL_CLIENT_NS" "$CLIENT" --vip "$FL_VIP4" --port "$FL_PORT" \
	--hold "$HOLD" --duration 20 --sport-base 20000 --timeout-ms 8000 \
	--gap-ms 20 --ready-file "$FL_DIR/ready" >"$FL_DIR/hold" \
	2>"$FL_DIR/hold.err" &
hold=$!
for ((t = 0; t < 200; t++)); do
	[ -s "$FL_DIR/ready" ] && break
	sleep 0.1
done
say "$(cat "$FL_DIR/ready" 2>/dev/null)"
sleep 3

head1 "Director 2 dies: BIRD and ringsync killed, XDP detached"
t0=$(date +%s%N)
fleet_director_kill 2
for ((t = 0; t < 200 && $(fleet_nexthops) != 2; t++)); do sleep 0.05; done
say "router withdrew it after $((($(date +%s%N) - t0) / 1000000)) ms:"
route
sleep 4

head1 "Director 2 comes back: ringsync re-announces once it can forward"
t0=$(date +%s%N)
fleet_director_start 2 || die "director 2 restart"
for ((t = 0; t < 400 && $(fleet_nexthops) != 3; t++)); do sleep 0.05; done
say "announced again after $((($(date +%s%N) - t0) / 1000000)) ms:"
route

head1 "The connections"
wait "$hold"
tail -1 "$FL_DIR/hold.err" | sed 's/^/  /'
ok=$(awk '$6 == "errors=0" && $7 == "resets=0" && $8 == "status=ok"' \
	"$FL_DIR/hold" | wc -l)
gap=$(sed -n 's/.*max_gap_ms=\([0-9]*\).*/\1/p' "$FL_DIR/hold" | sort -n |
	tail -1)
if [ "$ok" -eq "$HOLD" ]; then
	say "${G}all $HOLD connections survived: no reset, no error, every byte echoed intact${N}"
else
	say "${R}$((HOLD - ok)) of $HOLD connections were hurt${N}"
fi
say "longest pause of any connection: $gap ms (the flows director 2 carried"
say "waited for the router to move them; TCP retransmitted, nothing was lost)"
[ "$ok" -eq "$HOLD" ]
