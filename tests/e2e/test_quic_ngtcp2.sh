#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# QUIC by connection ID with a real QUIC stack: Debian's unmodified
# gtlsclient (ngtcp2) through the director to rm_quic_server
# (tests/tools/rm_quic_server.c: ngtcp2 + nghttp3, every CID it issues
# made by rm_quic_cid_make() with its node's server ID), on four nodes
# that own the VIP (L2 direct return); node4 joins the ring late. Every
# server logs what it sees (tests/e2e/quic_logs.py reads it); a packet
# that reaches a node without its connection is logged there as a stray
# and answered with a stateless reset (the nodes share the reset secret),
# so a misrouted connection ends at once, visibly.
#   QUIC service    --key quic:2:6 on port 443, nodes 1-3
#     new port      8 connections; each client rebinds to a new source
#                   port (--nat-rebinding) after the handshake, then sends
#                   its request: every response comes, from the node that
#                   took the connection, every packet on it, no stray
#     new address   8 connections migrate (path validation, a new CID from
#                   NEW_CONNECTION_ID) to a second client address: same
#     100 held      100 connections with their request held open; node4
#                   added to the ring (it takes a share of the Initials'
#                   DCID hashes); the requests released: all 100 answered
#                   by the node that holds them, failures counted exactly
#     counters      quic-initial-hashed, quic-cid-routed rose, no fallback;
#                   no connection-table entry written
#   5-tuple service the same two migrations to port 8443 (no --key): a
#                   connection survives only when its new 5-tuple's ring
#                   owner is its node (ringctl lookup, checked for each);
#                   the others reach another node and are reset (some are)
#   control         the stock gtlsserver (random CIDs) behind a --key quic
#                   service: no packet CID-routed, connections break
#   bad input       a truncated long header, a 21-byte DCID, a version
#                   negotiation packet, an unknown version: each counted,
#                   on the node lookup names, the servers answer the next
#                   connection
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/quic_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/quic_lib.sh"

PORT=443       # the --key quic service
PORT5=8443     # a 5-tuple service of the same nodes
PORTC=4433     # the control: gtlsserver behind a --key quic service
SPEC=2:6       # 2-byte server IDs, 6-byte nonces: 9-byte CIDs
CLIENT2=198.18.0.77
K=8            # connections per migration case, QUIC service
K5=12          # connections per migration case, 5-tuple service
HELD=100
RM_QUIC_SERVER=${RM_QUIC_SERVER:-$E2E_BUILD/tools/rm_quic_server}
LOGS=$E2E_ROOT/tests/e2e/quic_logs.py

e2e_require_director
e2e_require_tools gtlsclient gtlsserver openssl "$RM_QUIC_SERVER"
e2e_setup 4
work=$TB_STATE_DIR/quic
mkdir -p "$work"
e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
quic_client2_add "$CLIENT2"
# a throwaway certificate (gtlsclient does not verify it)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
	-subj /CN=ringmaster-test >/dev/null 2>&1 || e2e_die "openssl req"
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')

sid()
{
	printf '%04x' "$1"
}
# start_quic I PORT [rm_quic_server options]: on node I, logging to
# $work/srv-PORT-nodeI.log; waits for its ready line.
declare -A QPID
start_quic()
{
	local i=$1 port=$2 log=$work/srv-$2-node$1.log
	shift 2
	tb_spawn "${TB_NODE_NS[i]}" "$log" "$RM_QUIC_SERVER" \
		--name "${TB_NODE_NAME[i]}" --addr "$TB_VIP4" --port "$port" \
		--cert "$work/cert.pem" --key "$work/key.pem" \
		--reset-secret "$SECRET" --max-seconds 900 "$@"
	QPID[$i,$port]=$TB_LAST_PID
	e2e_wait_for 20 grep -q '^ready ' "$log"
}
for ((i = 1; i <= TB_NODES; i++)); do
	for p in $PORT $PORT5; do
		start_quic "$i" "$p" --quic "$SPEC" --server-id "$(sid "$i")" ||
			e2e_die "rm_quic_server on node$i port $p"
	done
done

e2e_ctl service add h3 --vip "$TB_VIP4" --port "$PORT" --proto udp \
	--key "quic:$SPEC" >/dev/null || e2e_die "service add h3 --key quic"
e2e_ctl service add h3flow --vip "$TB_VIP4" --port "$PORT5" --proto udp \
	>/dev/null || e2e_die "service add h3flow"
for i in 1 2 3; do
	quic_node_add h3 "$i" --server-id "$(sid "$i")" || e2e_die "node add h3 $i"
	quic_node_add h3flow "$i" || e2e_die "node add h3flow $i"
done

# clients TAG PORT N [gtlsclient options]: N gtlsclients at once from the
# client namespace, client k asking for /TAG-k; returns when all ended
# (each bounded). $work/TAG/k/dl/TAG-k is the response body.
clients()
{
	local tag=$1 port=$2 n=$3
	shift 3
	mkdir -p "$work/$tag"
	# shellcheck disable=SC2016 # expanded by the inner bash
	tb_exec "$TB_CLIENT_NS" bash -c '
		dir=$1 vip=$2 port=$3 n=$4 tag=$5
		shift 5
		for ((k = 1; k <= n; k++)); do
			mkdir -p "$dir/$k/dl"
			timeout 300 gtlsclient -q --download="$dir/$k/dl" \
				--exit-on-all-streams-close \
				--handshake-timeout=60s "$@" "$vip" "$port" \
				"https://$vip/$tag-$k" >"$dir/$k/out" \
				2>"$dir/$k/err" &
		done
		wait' bash "$work/$tag" "$TB_VIP4" "$port" "$n" "$tag" "$@"
}
# mark PORT: the logs of PORT's servers from their current end on, as
# quic_logs.py arguments (NODE=LOG:LINE).
mark()
{
	local i log out=()
	for ((i = 1; i <= TB_NODES; i++)); do
		log=$work/srv-$1-node$i.log
		out+=("${TB_NODE_NAME[i]}=$log:$(wc -l <"$log")")
	done
	echo "${out[*]}"
}
# seen MARK TAG: what the servers logged since MARK, with TAG's bodies:
# $work/TAG.sum, .conns, .json (tests/e2e/quic_logs.py)
seen()
{
	# shellcheck disable=SC2086 # MARK is a list
	python3 "$LOGS" --out "$work/$2" --bodies "$work/$2" $1
}
# sum TAG KEY...: a count of TAG's summary (0 when absent)
sum()
{
	awk -v k="${*:2}" '{ v = $NF; $NF = "" }
		$0 == k " " { print v; f = 1 } END { if (!f) print 0 }' \
		"$work/$1.sum"
}
# per_node TAG: "NODE=CONNECTIONS..."
per_node()
{
	awk '$1 == "node" { printf "%s%s=%s", s, $2, $3; s = " " }' \
		"$work/$1.sum"
}
# stats N: snapshot N of the director's counters, "NAME VALUE" lines
stats()
{
	e2e_ctl stats --json |
		e2e_json '[(k, v) for k, v in d["counters"].items()]' \
			>"$work/stats.$1"
}
# delta A B NAME: how much counter NAME rose from snapshot A to B
delta()
{
	awk -v k="$3" '$1 == k { v[FILENAME] = $2 }
		END { print v[ARGV[2]] - v[ARGV[1]] }' \
		"$work/stats.$1" "$work/stats.$2"
}
conns_in_table()
{
	tb_exec "$TB_DIR_NS" bpftool -j map dump pinned \
		/sys/fs/bpf/ringmaster/rm_conns 2>/dev/null |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}
# count_since MARK REGEX: lines matching REGEX in the logs since MARK
# (grep: cheap enough to poll on a loaded machine, unlike python)
count_since()
{
	local a log n=0
	for a in $1; do
		log=${a#*=}
		n=$((n + $(tail -n +"$((${log##*:} + 1))" "${log%:*}" |
			grep -c -- "$2")))
	done
	echo "$n"
}
# at_least N MARK REGEX: N such lines or more
at_least()
{
	[ "$(count_since "$2" "$3")" -ge "$1" ]
}
# bg_wait PID SECONDS: a background client run, bounded
bg_wait()
{
	local t
	for ((t = 0; t < $2 * 10; t++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	wait "$1" 2>/dev/null
}
# new_address TAG PORT N: N connections that migrate to CLIENT2 after
# their handshake: the client's route to the VIP gets CLIENT2 as its
# source once every client has its first socket (the server saw its
# Initial) and before the migrations, 20 s after the handshakes (the
# checks then see whether each migration came from CLIENT2).
new_address()
{
	local m pid tag=$1 port=$2 n=$3
	m=$(mark "$port")
	clients "$tag" "$port" "$n" --change-local-addr=20s --delay-stream=21s &
	pid=$!
	e2e_wait_for 120 at_least "$n" "$m" '^accept ' ||
		e2e_fail "$tag: $n connections (saw $(count_since "$m" '^accept '))"
	tb_exec "$TB_CLIENT_NS" ip route replace default via "$TB_DIR_IN_IP4" \
		dev "$TB_CLIENT_IF" src "$CLIENT2"
	bg_wait "$pid" 330
	tb_exec "$TB_CLIENT_NS" ip route replace default via "$TB_DIR_IN_IP4" \
		dev "$TB_CLIENT_IF" src "$TB_CLIENT_IP4"
	seen "$m" "$tag"
}

# ---- QUIC service: migration to a new port -----------------------------------
stats 0
m=$(mark $PORT)
clients rebind $PORT $K --change-local-addr=500ms --nat-rebinding \
	--delay-stream=1500ms
seen "$m" rebind
e2e_log "new port: connections per node: $(per_node rebind)"
e2e_expect_eq "new port: $K connections, $K answered by the node that took them" \
	"$(sum rebind conns) $(sum rebind answered)" "$K $K"
e2e_expect_eq "... each moved to a new port of the same address before its request, which came from there" \
	"$(sum rebind moved_then_asked) $(sum rebind moved_same_ip)" "$K $K"
e2e_expect_eq "... the rebound packets carried a CID of the connection (its server ID)" \
	"$(sum rebind move_cid)" "$K"
e2e_expect_eq "... no packet reached another node" "$(sum rebind misrouted)" 0

# ---- QUIC service: migration to a new address --------------------------------
new_address addr $PORT $K
e2e_expect_eq "new address: $K connections, $K answered by the node that took them" \
	"$(sum addr conns) $(sum addr answered)" "$K $K"
e2e_expect_eq "... each came from $TB_CLIENT_IP4, migrated to $CLIENT2 and sent its request from there" \
	"$(sum addr accept_ip "$TB_CLIENT_IP4") $(sum addr moved_then_asked) $(sum addr asked_ip "$CLIENT2")" \
	"$K $K $K"
e2e_expect_eq "... with a new CID from NEW_CONNECTION_ID (made with the server ID)" \
	"$(sum addr move_new_cid)" "$K"
e2e_expect_eq "... no packet reached another node" "$(sum addr misrouted)" 0

# ---- QUIC service: 100 connections held open across a ring change -------------
m=$(mark $PORT)
clients hold $PORT $HELD --timeout=300s &
hold_pid=$!
e2e_wait_for 240 at_least $HELD "$m" '^request .* held=1$' ||
	e2e_fail "$HELD requests held (saw $(count_since "$m" '^request .* held=1$'))"
seen "$m" held
# ten of them: where lookup --cid sends each connection's CID
lookup_some()
{
	local conn node rest
	while read -r conn node rest; do
		echo "$conn $node $(e2e_ctl lookup h3 --cid "$conn" --json |
			e2e_json '"%s %s" % (d["node"], d["by"])')"
	done < <(head -n 10 "$work/held.conns")
}
quic_node_add h3 4 --server-id "$(sid 4)" || e2e_fail "node add h3 node4"
share=$(e2e_shares h3 | awk '$1 == "node4" { print $2 }')
e2e_check "ring change: node4 joined with the $HELD connections open, and took a share of the ring (${share:-none})" \
	awk -v s="${share:-0}" 'BEGIN { exit !(s > 0) }'
lookup_some >"$work/held.after"
e2e_expect_eq "... lookup --cid: 10 of the connections' CIDs still go to their node by server ID" \
	"$(awk '$2 == $3 && $4 == "server-id"' "$work/held.after" | wc -l)" 10
for ((i = 1; i <= TB_NODES; i++)); do
	kill -USR1 "${QPID[$i,$PORT]}"
done
bg_wait "$hold_pid" 330
# the clients are gone once they sent their close: let the servers log it
e2e_wait_for 60 at_least $HELD "$m" '^close .*why=client$'
seen "$m" hold
stats 2
ok=$(sum hold answered)
e2e_log "held: connections per node: $(per_node hold)"
e2e_expect_eq "... released: $HELD answered, each by its node; failures" \
	"$ok $((HELD - ok))" "$HELD 0"
e2e_expect_eq "... each client's close reached its node (after the change)" \
	"$(sum hold closed_by_client)" "$HELD"
e2e_expect_eq "... no packet reached another node" "$(sum hold misrouted)" 0

# ---- the director: counters, no table --------------------------------------------
e2e_expect_eq "quic-initial-hashed: at least one Initial per connection" \
	"$(($(delta 0 2 quic-initial-hashed) >= 2 * K + HELD))" 1
e2e_check "quic-cid-routed: the rest by server ID ($(delta 0 2 quic-cid-routed))" \
	test "$(delta 0 2 quic-cid-routed)" -gt 0
fb=0
for c in config cid-length unknown-server version-negotiation \
	unknown-version truncated cid-too-long; do
	fb=$((fb + $(delta 0 2 "quic-fallback-$c")))
done
e2e_expect_eq "... no packet fell back to the ring or the flow" "$fb" 0
e2e_expect_eq "... no connection-table entry written (conn-insert, rm_conns)" \
	"$(delta 0 2 conn-insert) $(conns_in_table)" "0 0"

# ---- the 5-tuple service: the same migrations lose connections ----------------------
# check5 TAG: each connection survived exactly when ringctl lookup sends
# its new 5-tuple to its node; the others were reset by another node
check5()
{
	local tag=$1 conn node to stayed want bad=0 n=0 lost
	while read -r conn node to stayed; do
		n=$((n + 1))
		want=$(e2e_ctl lookup h3flow --src "${to%:*}" --sport "${to##*:}" \
			--json 2>/dev/null | e2e_json 'd["node"]')
		[ "$([ "$want" = "$node" ] && echo 1 || echo 0)" = "$stayed" ] ||
			bad=$((bad + 1))
	done <"$work/$tag.conns"
	lost=$(awk '$4 == 0' "$work/$tag.conns" | wc -l)
	e2e_log "$tag: $n connections, $lost lost to another node"
	e2e_expect_eq "$tag: $K5 connections; each stayed exactly when its new 5-tuple's ring owner is its node" \
		"$n $bad" "$K5 0"
	e2e_expect_eq "... the stayed ones answered, the lost ones reset by the node they reached" \
		"$(sum "$tag" answered) $(sum "$tag" reset_elsewhere)" \
		"$((K5 - lost)) $lost"
	e2e_check "... a 5-tuple service loses migrating connections ($lost of $K5)" \
		test "$lost" -ge 1
}
stats 3
m=$(mark $PORT5)
clients rebind5 $PORT5 $K5 --change-local-addr=500ms --nat-rebinding \
	--delay-stream=1500ms --timeout=30s
seen "$m" rebind5
check5 rebind5
new_address addr5 $PORT5 $K5
check5 addr5
stats 4
e2e_check "the 5-tuple service writes table entries ($(delta 3 4 conn-insert))" \
	test "$(delta 3 4 conn-insert)" -gt 0

# ---- the control: gtlsserver's random CIDs behind a --key quic service -----------
mkdir -p "$work/htdocs"
for ((k = 1; k <= K5; k++)); do
	echo "control" >"$work/htdocs/ctl-$k"
done
e2e_ctl service add h3rand --vip "$TB_VIP4" --port "$PORTC" --proto udp \
	--key "quic:$SPEC" >/dev/null || e2e_fail "service add h3rand"
for i in 1 2 3; do
	quic_node_add h3rand "$i" --server-id "$(sid "$i")" ||
		e2e_fail "node add h3rand $i"
	tb_spawn "${TB_NODE_NS[i]}" "$work/gtlsserver-node$i.log" gtlsserver \
		-q -d "$work/htdocs" --timeout=15s "$TB_VIP4" "$PORTC" \
		"$work/key.pem" "$work/cert.pem"
done
sleep 1
stats 5
clients ctl $PORTC $K5 --timeout=15s --handshake-timeout=15s
stats 6
ok=0
for ((k = 1; k <= K5; k++)); do
	[ "$(cat "$work/ctl/$k/dl/ctl-$k" 2>/dev/null)" = control ] && ok=$((ok + 1))
done
e2e_log "control: $ok of $K5 gtlsserver connections answered"
e2e_expect_eq "control: random CIDs carry no server ID: no packet CID-routed" \
	"$(delta 5 6 quic-cid-routed)" 0
e2e_check "... their packets go by the ring's hash of each DCID: connections break ($((K5 - ok)) of $K5)" \
	test "$ok" -lt "$K5"

# ---- bad input through the director ----------------------------------------------------
# send SPORT HEX...: one datagram each to the VIP's QUIC service
send()
{
	tb_exec "$TB_CLIENT_NS" python3 - "$TB_VIP4" "$PORT" "$@" <<'PY'
import socket, sys
vip, port, sport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", sport))
for h in sys.argv[4:]:
    s.sendto(bytes.fromhex(h), (vip, port))
PY
}
pad()
{
	printf '%*s' "$1" '' | tr ' ' '0'
}
dcid=3c4e5f60718293a4
bad_trunc=c00000000108c460                # the DCID cut
bad_long=c00000000115$(pad 42)00$(pad 40) # a 21-byte DCID
bad_vn=800000000008${dcid}080102030405060700000001
bad_ver=c01a2a3a4a08${dcid}0801020304050607$(pad 2400) # 1200+ bytes
# the servers' drop lines name each by its length
len()
{
	echo $((${#1} / 2))
}
stats 7
m=$(mark $PORT)
send 41001 "$bad_trunc"
send 41002 "$bad_long"
send 41003 "$bad_vn"
send 41004 "$bad_ver"
e2e_wait_for 30 at_least 4 "$m" '^drop \|^vn '
stats 8
e2e_expect_eq "bad input: truncated, 21-byte DCID, version negotiation, unknown version: one count each" \
	"$(delta 7 8 quic-fallback-truncated) $(delta 7 8 quic-fallback-cid-too-long) $(delta 7 8 quic-fallback-version-negotiation) $(delta 7 8 quic-fallback-unknown-version)" \
	"1 1 1 1"
# where each went: the flow's owner, or the ring owner of the DCID
flow_owner=$(e2e_ctl lookup h3 --src "$TB_CLIENT_IP4" --sport 41001 --json 2>/dev/null |
	e2e_json 'd["node"]')
flow_owner2=$(e2e_ctl lookup h3 --src "$TB_CLIENT_IP4" --sport 41002 --json 2>/dev/null |
	e2e_json 'd["node"]')
ring_owner=$(e2e_ctl lookup h3 --cid "$dcid" --json | e2e_json 'd["node"]')
# landed REGEX: the nodes whose server logged REGEX since the mark
landed()
{
	local a out=()
	for a in $m; do
		[ "$(count_since "$a" "$1")" -eq 0 ] || out+=("${a%%=*}")
	done
	echo "${out[*]}"
}
e2e_expect_eq "... each on the node the director's rule names (flow, flow, DCID ring, DCID ring)" \
	"$(landed "drop .*len=$(len "$bad_trunc") ") $(landed "drop .*len=$(len "$bad_long") ") $(landed "drop .*len=$(len "$bad_vn") ") $(landed '^vn ')" \
	"$flow_owner $flow_owner2 $ring_owner $ring_owner"
alive=0
for ((i = 1; i <= TB_NODES; i++)); do
	kill -0 "${QPID[$i,$PORT]}" 2>/dev/null && alive=$((alive + 1))
done
m=$(mark $PORT)
clients after $PORT 1
seen "$m" after
e2e_expect_eq "... every server still runs, and the next connection is answered" \
	"$alive $(sum after answered)" "$TB_NODES 1"

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
