#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Second chance (issue 22, docs/second-chance-tests.md): long-lived TCP
# connections through real stacks survive a ring change on a director
# whose connection table does not have them. Testbed (tests/e2e/
# gue_fleet.sh on scripts/fleet.sh, no etcd, no BIRD on the directors):
#
#   client -- router -- director A (d-up XDP; d-lan 198.18.150.201)
#                    \- director B (d-up XDP; d-lan 198.18.150.202)
#             router br0 198.18.150.0/24 -- node1..node5, GUE, each
#             running `ringload decap --allow-src 198.18.150.0/24` (the
#             directors and the other nodes: nodes forward to each other)
#
# The router's route to the VIP names one director (moved with `ip route
# replace`: the client's route moves). A and B get the same seed and the
# same services; each scenario has a service (a port) of its own, nodes
# node1..node3 at first, so its ring history is its own:
#   1. 300 connections (data every 200 ms) through A; node4 added on A
#      and B; the route moved to B, whose table never saw them; held 10 s
#      more. Second chance off (--handover-window 0): exactly the
#      connections whose owner `ringctl lookup` says changed are reset.
#      On: 0 resets, no stall (rm_client's count of waits longer than its
#      --timeout-ms, and no echo gap over STALL_MS), every connection
#      still echoed by its original node (an echo on the same socket).
#   5. New connections (SYN) after that change go to the current owner
#      (`ringctl lookup`) and stay there (held, 0 resets).
#   4. Two changes in a row (node4, then node5) on both, then the route
#      moved to B: connections whose owner two generations back is not
#      the current one (some moved twice) survive.
#   2. One director's table lost: save, detach, purge, attach (with a
#      small table, --conn-table), restore, then node4 added: 0 resets.
#   3. Idle connections (one message every IDLE_S), a spoofed ACK flood
#      (hping3 -A, bounded in count and time) until every one of their
#      entries is evicted from A's small table, then a ring change: 0
#      resets.
# Counts decide; times are reported.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FL_NSRC=1
FL_NO_ETCD=1
# shellcheck source=scripts/fleet.sh
source "$E2E_ROOT/scripts/fleet.sh"
FL_BUILD=$E2E_BUILD
# shellcheck source=tests/e2e/gue_fleet.sh
source "$E2E_ROOT/tests/e2e/gue_fleet.sh"

N1=${N1:-300}          # scenario 1: connections
N_OTHER=${N_OTHER:-100} # scenarios 2, 3, 5; 4 takes 200
HOLD_AFTER=${HOLD_AFTER:-10} # seconds held after the change
STALL_MS=${STALL_MS:-2000} # an echo gap this long is a stall
IDLE_S=${IDLE_S:-15}   # scenario 2: seconds between two messages
IDLE3_S=${IDLE3_S:-30} # scenario 3: the same (the flood takes longer)
SMALL_TABLE=1024       # scenario 2/3: A's table after the resize
WINDOW_ON=${WINDOW_ON:-15m}
CLIENT=198.18.200.2
SCENARIOS=${SCENARIOS:-1 5 4 2 3} # a subset when debugging one
# ports: a service per scenario
P1OFF=8081 P1ON=8082 P2=8083 P3=8084 P4=8085

e2e_require_director
command -v hping3 >/dev/null 2>&1 ||
	e2e_die "hping3 missing: scripts/install-deps.sh"
exec {E2E_STDOUT}>&1 {E2E_STDERR}>&2
trap _e2e_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
gf_up 2 5 || e2e_die "2 directors, 5 GUE nodes with decap"
TB_CLIENT_NS=$FL_CLIENT_NS TB_STATE_DIR=$FL_DIR TB_BPFFS=
e2e_log "fleet $FL_SUF in $FL_DIR"
W=$FL_DIR/work
mkdir -p "$W"
gf_servers $P1OFF $P1ON $P2 $P3 $P4 || e2e_die "servers on the nodes"

# Second chance is there when ringctl config takes --handover-window.
if "$RINGCTL" config --help 2>&1 | grep -q -- --handover-window; then
	HAVE_SC=1
else
	HAVE_SC=0
	e2e_log "this build has no second chance (ringctl config --handover-window): the OFF case runs, the ON cases fail"
fi

route_to()
{
	ip -n "$FL_ROUTER_NS" route replace "$FL_VIP4/32" \
		via "198.18.$((100 + $1)).2"
}

# window K VALUE: director K's handover window.
window()
{
	[ "$HAVE_SC" -eq 1 ] || return 0
	fleet_ctl "$1" config --handover-window "$2" >/dev/null
}

# add_node SVC I DIRECTOR...: node I joins SVC on each director.
add_node()
{
	local svc=$1 i=$2 k
	shift 2
	for k in "$@"; do
		fleet_ctl "$k" node add "$svc" "node$i" --via gue \
			--addr "${GF_NODE_IP[i]}" >/dev/null || return 1
	done
}

# lookups K SVC BASE COUNT: "SPORT NODE" of the client's flows, as
# director K names their owner now.
lookups()
{
	seq "$3" $(($3 + $4 - 1)) |
		fleet_ctl "$1" lookup "$2" --src "$CLIENT" --sport-file - |
		sort -n
}

# in_table K SVC BASE COUNT: how many of those flows director K's
# connection table holds.
in_table()
{
	seq "$3" $(($3 + $4 - 1)) |
		fleet_ctl "$1" lookup "$2" --src "$CLIENT" --sport-file - --json |
		grep -o '"conn":{"found":true' | wc -l
}

# hold_start NAME PORT COUNT BASE GAP_MS TIMEOUT_MS: COUNT connections to
# PORT from ports BASE.., a chunk echoed every GAP_MS, in the background
# (120 s at most; hold_stop ends it); returns once all are connected.
hold_start()
{
	local name=$1
	rm -f "$W/$name.ready"
	ip netns exec "$FL_CLIENT_NS" "$RM_CLIENT" --vip "$FL_VIP4" \
		--port "$2" --src "$CLIENT" --hold "$3" --sport-base "$4" \
		--gap-ms "$5" --timeout-ms "$6" --duration 120 --parallel 32 \
		--ready-file "$W/$name.ready" >"$W/$name.out" 2>"$W/$name.err" &
	HOLD_PID=$!
	e2e_on_teardown "kill $HOLD_PID 2>/dev/null"
	e2e_wait_for 60 test -s "$W/$name.ready" || return 1
	[ "$(cat "$W/$name.ready")" = "connected $3 $3" ]
}

# hold_stop NAME: end the connections (SIGTERM: rm_client prints its
# lines), wait for it (15 s at most), "SPORT NODE" into NAME.orig.
hold_stop()
{
	local t
	kill -TERM "$HOLD_PID" 2>/dev/null
	for ((t = 0; t < 150; t++)); do
		kill -0 "$HOLD_PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$HOLD_PID" 2>/dev/null
	awk '{ print $2, $3 }' "$W/$1.out" | sort -n >"$W/$1.orig"
}

# field NAME KEY: "SPORT VALUE" of KEY=VALUE of every connection.
field()
{
	awk -v k="$2" '{ for (i = 4; i <= NF; i++) { split($i, a, "=");
		if (a[1] == k) print $2, a[2] } }' "$W/$1.out" | sort -n
}

# tally NAME: "connections resets errors stalls maxgap" of a hold run.
tally()
{
	awk -v s="$STALL_MS" '{ n++; for (i = 4; i <= NF; i++) {
		split($i, a, "=");
		if (a[1] == "resets" && a[2] > 0) r++;
		if (a[1] == "errors" && a[2] > 0) e++;
		if (a[1] == "max_gap_ms") { if (a[2] >= s) st++; if (a[2] > m) m = a[2] } } }
		END { print n + 0, r + 0, e + 0, st + 0, m + 0 }' "$W/$1.out"
}

# counters: "NAME VALUE" of every counter, the nodes' decap counters
# summed ("node NAME") and the directors' ("dirK NAME").
counters()
{
	local i k
	{
		for ((i = 1; i <= FL_N; i++)); do
			gf_decap "$i" status --json | grep -o '"counters":{[^}]*}' |
				grep -o '"[a-z0-9-]*":[0-9]*' | sed 's/^/node /'
		done
		for k in 1 2; do
			fleet_ctl "$k" stats --json | grep -o '"counters":{[^}]*}' |
				grep -o '"[a-z0-9-]*":[0-9]*' | sed "s/^/dir$k /"
		done
	} | tr -d '"' | awk -F'[ :]' '{ n[$1 " " $2] += $3 }
		END { for (c in n) print c, n[c] }' | sort
}

# grown BEFORE AFTER: "NAME=GROWTH" of every counter that moved, NAME
# as "node:NAME" or "dirK:NAME".
grown()
{
	join <(sed 's/ /:/' "$1") <(sed 's/ /:/' "$2") |
		awk '$3 != $2 { printf "%s=%d ", $1, $3 - $2 }'
}

# got GROWN NAME: NAME's growth in GROWN (0 if it did not move).
got()
{
	local v
	v=$(echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p")
	echo "${v:-0}"
}

# moved BEFORE AFTER: ports whose node differs ("SPORT" lines).
moved()
{
	awk 'NR == FNR { a[$1] = $2; next } ($1 in a) && a[$1] != $2 { print $1 }' \
		"$1" "$2"
}

# ---- the directors -----------------------------------------------------------
ok=1
for k in 1 2; do
	fleet_load "$k" attach d-up --mode native >/dev/null || ok=0
	fleet_ctl "$k" seed --set "$FL_SEED" >/dev/null || ok=0
	# no history while the services are built node by node (a new
	# state remembers 15 minutes): each scenario's first change is its
	# services' first remembered generation
	window "$k" 0 || ok=0
	fleet_ctl "$k" config --encap-src4 "${GF_SRC[k]}" >/dev/null || ok=0
	for p in $P1OFF $P1ON $P2 $P3 $P4; do
		fleet_ctl "$k" service add "s$p" --vip "$FL_VIP4" --port "$p" \
			--proto tcp >/dev/null || ok=0
		for i in 1 2 3; do add_node "s$p" "$i" "$k" || ok=0; done
	done
done
route_to 1 || ok=0
e2e_expect_eq "A and B: one seed, 5 services of node1..3 by GUE, own outer sources; route to A" \
	"$ok" 1
fleet_ctl 1 save --fleet >"$W/a.doc"
fleet_ctl 2 save --fleet >"$W/b.doc"
e2e_check "A and B hold the same configuration (save --fleet)" \
	cmp -s "$W/a.doc" "$W/b.doc"

# scenario1 NAME PORT: the A -> B run of scenario 1; sets MOVED (count)
# and the files NAME.*.
scenario1()
{
	local name=$1 port=$2 svc=s$2 base
	e2e_alloc_sports "$N1"
	base=$E2E_SPORT
	route_to 1
	hold_start "$name" "$port" "$N1" "$base" 200 3000 ||
		e2e_fail "$name: $N1 connections through A"
	add_node "$svc" 4 1 2 || e2e_fail "$name: node4 added on A and B"
	sleep 1
	route_to 2 || e2e_fail "$name: route moved to B"
	sleep "$HOLD_AFTER"
	hold_stop "$name"
	lookups 2 "$svc" "$base" "$N1" >"$W/$name.now"
	moved "$W/$name.orig" "$W/$name.now" >"$W/$name.moved"
	MOVED=$(wc -l <"$W/$name.moved")
	field "$name" resets | awk '$2 > 0 { print $1 }' >"$W/$name.reset"
}

# run N: scenario N is selected
run()
{
	[[ " $SCENARIOS " == *" $1 "* ]]
}

# ---- 1. off: the problem --------------------------------------------------
sc1_off()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	window 1 0
	window 2 0
	scenario1 s1off $P1OFF
	read -r n r e st mg < <(tally s1off)
	e2e_log "off: $n connections, $MOVED changed owner (ringctl lookup), $r reset, $e with errors, longest gap $mg ms"
	e2e_check "off: some connections changed owner ($MOVED of $N1)" \
		test "$MOVED" -gt 0 -a "$n" -eq "$N1"
	e2e_expect_eq "off: the connections reset are exactly those whose owner changed ($r reset, $MOVED predicted)" \
		"$(cmp -s "$W/s1off.moved" "$W/s1off.reset" && echo same)" same
}

# ---- 1. on: second chance -----------------------------------------------
sc1_on()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	window 1 "$WINDOW_ON"
	window 2 "$WINDOW_ON"
	# new connections of scenario 5: their owner before the change
	e2e_alloc_sports "$N_OTHER"
	B5=$E2E_SPORT
	lookups 2 "s$P1ON" "$B5" "$N_OTHER" >"$W/s5.before"
	counters >"$W/c1.before"
	scenario1 s1on $P1ON
	counters >"$W/c1.after"
	g=$(grown "$W/c1.before" "$W/c1.after")
	e2e_log "on: counters: $g"
	read -r n r e st mg < <(tally s1on)
	e2e_log "on: $n connections, $MOVED changed owner, $r reset, $e with errors, $st gaps >= $STALL_MS ms, longest gap $mg ms"
	[ "$HAVE_SC" -eq 1 ] || e2e_fail "on: second chance is not in this build (no ringctl config --handover-window)"
	e2e_check "on: some connections changed owner ($MOVED of $N1)" \
		test "$MOVED" -gt 0 -a "$n" -eq "$N1"
	e2e_expect_eq "on: resets, connections with errors or stalls (none)" \
		"$r $e $st" "0 0 0"
	e2e_expect_eq "on: every connection still echoed to the end by its original node ($(grep -c 'status=ok' "$W/s1on.out") ok)" \
		"$(grep -c ' status=ok ' "$W/s1on.out")" "$N1"
	# the node with the socket is the last hop (the oldest owner): it
	# delivers without a lookup (sc-local-exhausted); a first hop with
	# the socket counts sc-local-socket
	e2e_check "on: B sent hop lists, nodes forwarded them to each other and delivered them ($(got "$g" dir2:hop-list-sent) sent, $(got "$g" node:sc-forwarded) forwarded, $(($(got "$g" node:sc-local-socket) + $(got "$g" node:sc-local-exhausted))) delivered)" \
		test "$(got "$g" dir2:hop-list-sent)" -gt 0 -a \
		"$(got "$g" node:sc-forwarded)" -gt 0 -a \
		$(($(got "$g" node:sc-local-socket) + $(got "$g" node:sc-local-exhausted))) -gt 0
	e2e_expect_eq "on: no hop-list packet dropped by a node (malformed, loop, not allowed, TTL)" \
		"$(got "$g" node:dropped-hops-malformed) $(got "$g" node:dropped-hop-loop) $(got "$g" node:dropped-hop-not-allowed) $(got "$g" node:dropped-hop-ttl)" \
		"0 0 0 0"
}

# ---- 5. new connections after the change ---------------------------------
sc5()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	lookups 2 "s$P1ON" "$B5" "$N_OTHER" >"$W/s5.want"
	hold_start s5 $P1ON "$N_OTHER" "$B5" 200 3000 ||
		e2e_fail "new: $N_OTHER connections through B"
	sleep 4
	hold_stop s5
	read -r n r e st mg < <(tally s5)
	e2e_check "new: some of them would have had another owner before ($(moved "$W/s5.before" "$W/s5.want" | wc -l))" \
		test "$(moved "$W/s5.before" "$W/s5.want" | wc -l)" -gt 0
	e2e_expect_eq "new: every one on its current owner (ringctl lookup)" \
		"$(e2e_mismatch "$W/s5.want" "$W/s5.orig")" 0
	e2e_expect_eq "new: and stays there (resets, errors)" "$r $e" "0 0"
}

# ---- 4. two changes in a row ---------------------------------------------
sc4()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	e2e_alloc_sports 200
	B4=$E2E_SPORT
	route_to 1
	hold_start s4 $P4 200 "$B4" 200 3000 || e2e_fail "two: 200 connections through A"
	add_node "s$P4" 4 1 2 || e2e_fail "two: node4 added"
	lookups 2 "s$P4" "$B4" 200 >"$W/s4.gen1"
	add_node "s$P4" 5 1 2 || e2e_fail "two: node5 added"
	sleep 1
	route_to 2
	# every connection sends 25 chunks in these 5 s
	sleep 5
	hold_stop s4
	lookups 2 "s$P4" "$B4" 200 >"$W/s4.gen2"
	old=$(moved "$W/s4.orig" "$W/s4.gen2" | wc -l)
	twice=$(join <(moved "$W/s4.orig" "$W/s4.gen1") <(moved "$W/s4.gen1" "$W/s4.gen2") | wc -l)
	read -r n r e st mg < <(tally s4)
	e2e_log "two: $old of 200 away from their first owner, $twice moved twice; $r reset, $e with errors, longest gap $mg ms"
	e2e_check "two: connections two generations old whose owner changed ($old, $twice of them twice)" \
		test "$old" -gt 0 -a "$twice" -gt 0
	e2e_expect_eq "two: resets, connections with errors or stalls (none)" \
		"$r $e $st" "0 0 0"
}

# Scenarios 2 and 3 hold idle connections (a message every IDLE_S): the
# loss or the eviction and then the ring change happen between two
# messages, so no packet of theirs puts an entry back in between; the
# next message finds no entry and a changed owner.

# idle_check NAME SVC LABEL IDLE_S: the change came within the idle time; after
# one more message each, the connections are ended and counted.
idle_check()
{
	local name=$1 svc=$2 label=$3 idle=$4 m n r e st mg
	e2e_check "$label: the change came within the idle time ($((t_change - t_ready)) s of $idle)" \
		test $((t_change - t_ready)) -lt "$idle"
	lookups 1 "$svc" "$BASE" "$N_OTHER" >"$W/$name.now"
	sleep $((t_ready + idle + 5 - SECONDS)) 2>/dev/null
	hold_stop "$name"
	m=$(moved "$W/$name.orig" "$W/$name.now" | wc -l)
	read -r n r e st mg < <(tally "$name")
	e2e_log "$label: $m of $N_OTHER changed owner; $r reset, $e with errors"
	e2e_check "$label: some connections changed owner ($m)" test "$m" -gt 0
	e2e_expect_eq "$label: resets, connections with errors" "$r $e" "0 0"
	e2e_expect_eq "$label: every connection echoed its message after the change" \
		"$(field "$name" chunks | awk '$2 < 2' | wc -l)" 0
}

# ---- 2. one director's table lost ----------------------------------------
sc2()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	e2e_alloc_sports "$N_OTHER"
	BASE=$E2E_SPORT
	route_to 1
	hold_start s2 $P2 "$N_OTHER" "$BASE" $((IDLE_S * 1000)) 5000 ||
		e2e_fail "lost: $N_OTHER idle connections through A"
	t_ready=$SECONDS
	ok=1
	fleet_ctl 1 save -o "$W/a.save" || ok=0
	fleet_load 1 detach d-up >/dev/null || ok=0
	fleet_load 1 purge >/dev/null || ok=0
	fleet_load 1 attach d-up --mode native --conn-table "$SMALL_TABLE" \
		>/dev/null || ok=0
	fleet_ctl 1 restore "$W/a.save" >/dev/null || ok=0
	e2e_expect_eq "lost: A saved, detached, purged, attached (--conn-table $SMALL_TABLE), restored: no entry left" \
		"$ok:$(in_table 1 "s$P2" "$BASE" "$N_OTHER")" "1:0"
	add_node "s$P2" 4 1 || e2e_fail "lost: node4 added on A"
	t_change=$SECONDS
	idle_check s2 "s$P2" lost "$IDLE_S"
}

# ---- 3. a flood evicts the entries of idle connections --------------------
sc3()
{
	local n r e st mg old twice m ok held left round cpu pass g flood_pid
	e2e_alloc_sports "$N_OTHER"
	BASE=$E2E_SPORT
	hold_start s3 $P3 "$N_OTHER" "$BASE" $((IDLE3_S * 1000)) 5000 ||
		e2e_fail "flood: $N_OTHER idle connections through A"
	t_ready=$SECONDS
	held=$(in_table 1 "s$P3" "$BASE" "$N_OTHER")
	# ACKs from spoofed sources (198.18.200.250-251, on no host), a new
	# source port each: flows the table takes in as a handshake's ACK.
	# The kernel's LRU keeps an entry that was looked up again (the idle
	# connections' entries) in its active list and evicts from the
	# inactive one: flows seen once (hping3 --rand-source) only churn the
	# inactive list and never push those out (measured: 61 of 100 left
	# after 4 x 4500 such flows). So each range of 200 flows is sent
	# three times (referenced too: the active list fills with them and
	# is rotated), range after range, until the connections' entries are
	# gone (measured: after the third range). Senders on each CPU: each
	# CPU evicts from its own LRU list. Bounded: 8 ranges, 3 x 2 x 200
	# packets and 5 s each at most, and the idle time.
	round=0
	left=$held
	flood_pid=()
	while [ "$left" -gt 0 ] && [ "$round" -lt 8 ] &&
		[ $((SECONDS - t_ready)) -lt $((IDLE3_S - 6)) ]; do
		# the three sends of a range at once: one process start each
		# instead of three in a row on a busy machine
		for cpu in 0 1; do
			for pass in 1 2 3; do
				ip netns exec "$FL_CLIENT_NS" taskset -c "$cpu" \
					timeout 5 hping3 -q -A -a "198.18.200.25$cpu" \
					-s $((1024 + round * 200)) -p "$P3" -i u20 \
					-c 200 "$FL_VIP4" >"$W/flood$cpu.$pass.log" 2>&1 &
				flood_pid+=($!)
			done
		done
		wait "${flood_pid[@]}" 2>/dev/null
		flood_pid=()
		round=$((round + 1))
		left=$(in_table 1 "s$P3" "$BASE" "$N_OTHER")
	done
	e2e_log "flood: $round range(s) of 200 flows per CPU, 3 times each; $(fleet_ctl 1 config | grep conn-table | sed 's/ (.*//')"
	e2e_expect_eq "flood: the entries of the $N_OTHER idle connections evicted ($held before)" \
		"$held:$left" "$N_OTHER:0"
	add_node "s$P3" 4 1 || e2e_fail "flood: node4 added on A"
	t_change=$SECONDS
	idle_check s3 "s$P3" flood "$IDLE3_S"
}

if run 1; then
	sc1_off
	sc1_on
fi
# 5 needs 1's change
if run 5 && run 1; then sc5; fi
if run 4; then sc4; fi
if run 2; then sc2; fi
# 3 needs 2's small table
if run 3 && run 2; then sc3; fi

e2e_finish
