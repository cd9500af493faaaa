#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A fleet of directors (scripts/fleet.sh): client -> router (BIRD 2, ECMP
# over the directors, L4 hash) -> 3 directors (BIRD 2 announcing the VIP,
# Ringmaster, ringsync) -> 4 nodes; etcd in the router namespace holds the
# configuration document, published with `ringctl publish`.
#   1. ECMP spreads flows from 6 source addresses over all three
#      directors; every flow of a sample (6 per source address: one
#      process per lookup is slow on a busy machine) lands on the node
#      `ringctl lookup` names, and all three directors name the same node.
#   2. Membership changes (node4 joins / leaves, 20 times unless the time
#      bound stops it first) published once reach all three directors; the
#      time from publish to the last director's apply is reported (median,
#      max). On the first change real flows move only along the (from, to)
#      pairs the dry run predicted, in the predicted share.
#   3. Failover: 300 long-lived TCP connections stream data through the
#      directors; director 2 dies (BIRD and ringsync SIGKILLed, XDP
#      detached): the router drops it, and every connection goes on with
#      no reset, no error and no corrupted byte (rm_client checks every
#      echoed byte); the longest interruption is reported. Director 2
#      comes back (XDP, BIRD, ringsync re-announces): traffic reaches it
#      again, still no reset.
#   4. etcd stopped: every director keeps forwarding (flows land as
#      before) and reports the source unreachable; publishing fails; etcd
#      back, a new revision reaches all three.
#   5. A bad document (an interface no director has): published, every
#      director rejects and counts it, keeps its revision and its routing.
#   6. Withdraw: director 3's XDP detached (BIRD still up): ringsync
#      withdraws the VIP, the router drops it; attached again: announced.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FL_NSRC=6
# shellcheck source=scripts/fleet.sh
source "$E2E_ROOT/scripts/fleet.sh"
FL_BUILD=$E2E_BUILD

CHANGES=${CHANGES:-20}
CHANGE_SECONDS=${CHANGE_SECONDS:-75} # part 2 stops adding changes after this, once 3 are done (a count, whatever the machine's speed)
LOOKUPS=${LOOKUPS:-6} # flows per source address checked with ringctl lookup
HOLD=300

e2e_require_director
for t in bird birdc etcd curl "$E2E_BUILD/ringsync"; do
	command -v "$t" >/dev/null 2>&1 ||
		e2e_die "$t missing: scripts/install-deps.sh (bird2, etcd-server, curl), make"
done
exec {E2E_STDOUT}>&1 {E2E_STDERR}>&2
trap _e2e_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
e2e_on_teardown fleet_down
fleet_up 3 4 || e2e_die "fleet_up 3 directors, 4 nodes"
# lib.sh's client helpers (e2e_flows) run in TB_CLIENT_NS
TB_CLIENT_NS=$FL_CLIENT_NS TB_STATE_DIR=$FL_DIR TB_BPFFS=
e2e_log "fleet $FL_SUF in $FL_DIR"
W=$FL_DIR/work
mkdir -p "$W"

# status K EXPR: EXPR over `ringload status --json` of director K (d).
status()
{
	fleet_load "$1" status --json 2>/dev/null | e2e_json "$2" 2>/dev/null
}

# wait_rev REV [SECONDS]: until every director has applied REV; LAST_AT
# is then the latest of their apply times (seconds since the epoch).
wait_rev()
{
	local rev=$1 lim=${2:-15} k a end=$((SECONDS + ${2:-15}))
	local -a at=()
	while [ "$SECONDS" -le "$end" ]; do
		for ((k = 1; k <= FL_D; k++)); do
			[ -z "${at[k]:-}" ] || continue
			# sed, not python: one process less per poll
			a=$(fleet_load "$k" status --json 2>/dev/null | sed -n \
				's/.*"applied":{[^}]*"revision":\([0-9]*\),"applied_at":\([0-9.]*\).*/\1 \2/p')
			[ "${a% *}" != "$rev" ] || at[k]=${a#* }
		done
		if [ "${#at[@]}" -eq "$FL_D" ]; then
			LAST_AT=$(printf '%s\n' "${at[@]}" | sort -g | tail -1)
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# publish FILE [options]: the new revision on stdout.
publish()
{
	fleet_publish "$@" --json | e2e_json 'd["revision"]'
}

# redirected K: packets director K has forwarded so far.
redirected()
{
	fleet_ctl "$1" stats --json | e2e_json 'd["counters"]["forwarded-redirect"]'
}

for ((i = 1; i <= FL_N; i++)); do
	tb_spawn "${FL_NODE_NS[i]}" "$W/server-node$i.log" "$RM_SERVER" \
		--name "node$i" --port "$FL_PORT" --max-seconds 600
	e2e_on_teardown "kill $TB_LAST_PID 2>/dev/null"
	server_pid[i]=$TB_LAST_PID
done

fleet_doc 1 2 3 >"$W/doc3"
fleet_doc 1 2 3 4 >"$W/doc4"
REV=$(publish "$W/doc3")
ok=1
for ((k = 1; k <= FL_D; k++)); do fleet_director_start "$k" || ok=0; done
wait_rev "$REV" 30 || ok=0
fleet_wait_nexthops 3 20 || ok=0
e2e_expect_eq "3 directors: revision $REV applied by ringsync, announced over BGP, router has 3 ECMP next hops" \
	"$ok:$(fleet_nexthops)" "1:3"

# ---- 1. ECMP spread; every flow where ringctl lookup says ---------------
before=()
for ((k = 1; k <= FL_D; k++)); do before[k]=$(redirected "$k"); done
: >"$W/flows1"
for src in "${FL_CLIENT_SRCS[@]}"; do
	ip netns exec "$FL_CLIENT_NS" "$RM_CLIENT" --vip "$FL_VIP4" \
		--port "$FL_PORT" --src "$src" --count 100 --sport-base 40000 \
		--timeout-ms 3000 2>/dev/null >>"$W/flows1"
done
NF=$(wc -l <"$W/flows1")
spread=
for ((k = 1; k <= FL_D; k++)); do
	spread="$spread d$k=$(($(redirected "$k") - before[k]))"
done
e2e_expect_eq "1. $NF flows from ${#FL_CLIENT_SRCS[@]} source addresses answered" \
	"$(grep -vc ' FAIL' "$W/flows1")" "$((${#FL_CLIENT_SRCS[@]} * 100))"
e2e_check "1. ECMP spread the flows over all three directors (packets:$spread)" \
	test "$(echo "$spread" | grep -o '=[1-9]' | wc -l)" -eq 3
# ringctl lookup on every director for a sample (LOOKUPS flows per source
# address: one process per lookup is slow on a busy machine)
awk -v n="$LOOKUPS" '++seen[$1] <= n { print $1, $2 }' "$W/flows1" \
	>"$W/sample1"
NS=$(wc -l <"$W/sample1")
for ((k = 1; k <= FL_D; k++)); do
	ip netns exec "${FL_DIR_NS[k]}" xargs -P 2 -n 2 sh -c \
		'"$0" --pin-dir "$1" lookup web --src "$2" --sport "$3" --json' \
		"$E2E_BUILD/ringctl" "${FL_PIN[k]}" <"$W/sample1" 2>/dev/null |
		python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    print(d["src"], d["sport"], d["node"])' | sort >"$W/lookup1.d$k"
done
e2e_expect_eq "1. the three directors' ringctl lookup name the same node for $NS sampled flows" \
	"$(md5sum <"$W/lookup1.d1"):$(md5sum <"$W/lookup1.d2"):$(wc -l <"$W/lookup1.d3")" \
	"$(md5sum <"$W/lookup1.d3"):$(md5sum <"$W/lookup1.d1"):$NS"
e2e_expect_eq "1. each sampled flow, whichever director ECMP chose, on the node ringctl lookup names" \
	"$(awk 'NR == FNR { want[$1 " " $2] = $3; next }
		($1 " " $2) in want && want[$1 " " $2] == $3 { ok++ }
		END { print ok + 0 }' "$W/lookup1.d1" "$W/flows1")" "$NS"

# ---- 2. membership changes through etcd ------------------------------------
src=198.18.200.2
client2=(--vip "$FL_VIP4" --port "$FL_PORT" --src "$src" --count 600
	--sport-base 50000 --timeout-ms 3000)
fleet_ctl 1 apply - --dry-run --json <"$W/doc4" >"$W/dry.json"
e2e_json '[(m["from"], m["to"]) for m in d["services"][0]["moves"]]' \
	<"$W/dry.json" >"$W/pred"
p=$(e2e_json 'd["services"][0]["moved_share"]' <"$W/dry.json")
e2e_flows "$W/f2a" "${client2[@]}"
lat=()
t_start=$SECONDS
done_changes=0
for ((c = 1; c <= CHANGES; c++)); do
	[ $((c % 2)) -eq 1 ] && doc=$W/doc4 || doc=$W/doc3
	t0=$(date +%s.%N)
	rev=$(publish "$doc" --expect-revision "$REV")
	if [ -z "$rev" ] || ! wait_rev "$rev" 60; then
		e2e_fail "2. change $c (revision ${rev:-none}) reached every director"
		break
	fi
	REV=$rev
	lat+=("$(awk -v a="$LAST_AT" -v b="$t0" 'BEGIN { printf "%d", (a - b) * 1000 }')")
	done_changes=$c
	if [ "$c" -eq 1 ]; then
		e2e_flows "$W/f2b" "${client2[@]}"
		read -r moved total < <(e2e_moved "$W/f2a" "$W/f2b")
		bad=$(awk 'NR == FNR { ok[$1 " " $2] = 1; next }
			!(($2 " " $3) in ok) { n++ } END { print n + 0 }' \
			"$W/pred" "$W/f2b.moves")
		e2e_expect_eq "2. node4 joined: all 600 flows answered; moved only along predicted (from, to) pairs ($moved of $total moved)" \
			"$(grep -vc ' FAIL$' "$W/f2b"):$bad" "600:0"
		e2e_check "2. moved share $moved/$total matches the dry run's $p (4 sigma)" \
			python3 -c "
import math, sys
p, k, n = $p, $moved, $total
sys.exit(0 if abs(k / n - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1 / n else 1)"
		t_start=$SECONDS # the bound is for the changes alone
	fi
	[ "$c" -lt 3 ] || [ $((SECONDS - t_start)) -lt "$CHANGE_SECONDS" ] || break
done
stats=$(printf '%s\n' "${lat[@]}" | sort -n | awk '{ v[NR] = $1 }
	END { if (NR) printf "median %d ms, max %d ms over %d changes", v[int((NR + 1) / 2)], v[NR], NR }')
[ "$done_changes" -eq "$CHANGES" ] || stats="$stats (stopped by the ${CHANGE_SECONDS} s bound)"
e2e_log "publish -> applied on all 3 directors: $stats"
e2e_check "2. $done_changes changes each reached all three directors: $stats" \
	test "$done_changes" -ge 3
# leave the fleet on doc3 for the rest
if [ "$(e2e_json 'len(d["services"][0]["nodes"])' < <(fleet_ctl 1 show --json))" != 3 ]; then
	REV=$(publish "$W/doc3" --expect-revision "$REV")
	wait_rev "$REV" || e2e_fail "2. back to 3 nodes"
fi

# ---- 3. failover under 300 long-lived connections ---------------------------
rm -f "$W/hold.ready"
ip netns exec "$FL_CLIENT_NS" "$RM_CLIENT" --vip "$FL_VIP4" --port "$FL_PORT" \
	--hold "$HOLD" --duration 90 --sport-base 20000 --parallel 64 \
	--timeout-ms 8000 --gap-ms 20 --ready-file "$W/hold.ready" \
	>"$W/hold" 2>"$W/hold.err" &
hold_pid=$!
e2e_on_teardown "kill $hold_pid 2>/dev/null"
e2e_wait_for 20 test -s "$W/hold.ready" || e2e_fail "3. $HOLD connections opened"
sleep 3
d2a=$(redirected 2)
sleep 1
d2b=$(redirected 2)
t_kill=$(date +%s%N)
fleet_director_kill 2
fleet_wait_nexthops 2 10
withdraw_ms=$((($(date +%s%N) - t_kill) / 1000000))
e2e_expect_eq "3. director 2 killed while carrying traffic ($((d2b - d2a)) packets in 1 s): router withdrew it in $withdraw_ms ms" \
	"$(fleet_nexthops)" 2
sleep 4
t_back=$(date +%s%N)
fleet_director_start 2 || e2e_fail "3. director 2 restarted"
fleet_wait_nexthops 3 20
back_ms=$((($(date +%s%N) - t_back) / 1000000))
e2e_expect_eq "3. director 2 back: XDP attached, ringsync re-announced it in $back_ms ms, 3 next hops" \
	"$(fleet_nexthops)" 3
sleep 2
d2c=$(redirected 2)
sleep 1
d2d=$(redirected 2)
e2e_check "3. traffic spreads to director 2 again ($((d2d - d2c)) packets in 1 s)" \
	test $((d2d - d2c)) -gt 0
# end the held connections now (rm_client reports on SIGTERM as at the end)
kill -TERM "$hold_pid" 2>/dev/null # (it may have ended: 90 s)
wait "$hold_pid"
e2e_expect_eq "3. all $HOLD connections held to the end: no reset, no stall over 8 s, no corrupted byte ($(tail -1 "$W/hold.err"))" \
	"$(awk '$6 == "errors=0" && $7 == "resets=0" && $8 == "status=ok"' "$W/hold" | wc -l)" \
	"$HOLD"
gaps=$(sed -n 's/.*max_gap_ms=\([0-9]*\).*/\1/p' "$W/hold" | sort -n | awk '
	{ v[NR] = $1; if ($1 > 100) n++ }
	END { printf "longest interruption %d ms; %d connections paused > 100 ms; median longest pause %d ms",
		v[NR], n, v[int((NR + 1) / 2)] }')
e2e_log "failover: $gaps"
e2e_check "3. failover and return: $gaps" test -n "$gaps"

# ---- 4. etcd down -----------------------------------------------------------
client4=(--vip "$FL_VIP4" --port "$FL_PORT" --src 198.18.200.10 --count 300
	--sport-base 30000 --timeout-ms 3000)
e2e_flows "$W/f4a" "${client4[@]}"
fleet_etcd_stop
down=0
for ((t = 0; t < 50 && down < FL_D; t++)); do
	down=0
	for ((k = 1; k <= FL_D; k++)); do
		[ "$(status "$k" 'd["applied"]["source_reachable"]')" = False ] &&
			down=$((down + 1))
	done
	sleep 0.1
done
e2e_expect_eq "4. etcd stopped: every director reports its source unreachable" \
	"$down" "$FL_D"
e2e_flows "$W/f4b" "${client4[@]}"
e2e_expect_eq "4. etcd down: 300 flows answered, each on the same node as before" \
	"$(grep -vc ' FAIL$' "$W/f4b"):$(cmp -s "$W/f4a" "$W/f4b" && echo same)" \
	"300:same"
fleet_publish "$W/doc4" >/dev/null 2>&1
e2e_expect_eq "4. publish while etcd is down fails" "$?" 1
fleet_etcd_start || e2e_fail "4. etcd restarted"
t0=$(date +%s.%N)
REV=$(publish "$W/doc4" --expect-revision "$REV")
if wait_rev "$REV" 30; then
	e2e_pass "4. etcd back: revision $REV published, applied by every director $(awk -v a="$LAST_AT" -v b="$t0" 'BEGIN { printf "%d", (a - b) * 1000 }') ms after publish began"
else
	e2e_fail "4. etcd back: revision ${REV:-none} applied by every director"
fi

# ---- 5. a bad document --------------------------------------------------------
{ cat "$W/doc4"; echo "node add web node9 --mac 02:00:00:00:00:09 --dev nosuchdev9"; } >"$W/bad"
e2e_flows "$W/f5a" "${client4[@]}"
BAD=$(publish "$W/bad" --expect-revision "$REV")
rej=0
for ((t = 0; t < 50 && rej < FL_D; t++)); do
	rej=0
	for ((k = 1; k <= FL_D; k++)); do
		[ "$(status "$k" '"%s %s" % (d["applied"]["rejected_revision"], d["applied"]["revision"])')" = "$BAD $REV" ] &&
			rej=$((rej + 1))
	done
	sleep 0.1
done
e2e_expect_eq "5. bad revision ${BAD:-none}: every director rejected and counted it, kept revision $REV" \
	"$rej" "$FL_D"
e2e_flows "$W/f5b" "${client4[@]}"
e2e_expect_eq "5. flows still on the same nodes after the bad document" \
	"$(grep -vc ' FAIL$' "$W/f5b"):$(cmp -s "$W/f5a" "$W/f5b" && echo same)" \
	"300:same"
e2e_check "5. the rejection is in ringsync's log on every director" \
	test "$(grep -l "revision $BAD rejected" "$FL_DIR"/ringsync-d*.log | wc -l)" -eq "$FL_D"

# ---- 6. withdraw while the director cannot forward --------------------------
fleet_load 3 detach d-up >/dev/null
fleet_wait_nexthops 2 10
e2e_expect_eq "6. director 3's XDP detached: ringsync withdrew the VIP" \
	"$(fleet_nexthops)" 2
fleet_load 3 attach d-up --mode native >/dev/null
fleet_wait_nexthops 3 10
e2e_expect_eq "6. attached again: announced again" "$(fleet_nexthops)" 3

# ---- 7. node health: each director checks for itself ------------------------
# The document gives every node its address and the service a TCP check;
# each director runs its own ringhealth. node4's server stops: every
# director takes it out by itself, and flows avoid it; it comes back.
fleet_doc 1 2 3 4 | sed 's|^node add web node\([0-9]*\) .*$|& --addr 198.18.150.1\1|' >"$W/doc7"
echo "service set web --check tcp --interval 300ms --timeout 300ms --fall 2 --rise 2" >>"$W/doc7"
REV=$(publish "$W/doc7" --expect-revision "$BAD")
wait_rev "$REV" 30 || e2e_fail "7. revision ${REV:-none} with the health check applied everywhere"
for ((k = 1; k <= FL_D; k++)); do
	_fl_spawn "ringhealth-d$k" "${FL_DIR_NS[k]}" "$FL_BUILD/ringhealth" \
		--pin-dir "${FL_PIN[k]}"
done
# in_ring of node N on director K: "true"/"false"
in_ring() {
	fleet_ctl "$1" show --json | e2e_json '[ str(n["in_ring"]).lower() + " " + n["health"]["state"] for s in d["services"] for n in s["nodes"] if n["name"] == "'"$2"'" ]'
}
# wait_health NODE WANT SECONDS: every director's "in_ring state" for NODE
# starts with WANT within SECONDS
wait_health() {
	local node=$1 want=$2 end=$((SECONDS + $3)) k n
	while [ "$SECONDS" -le "$end" ]; do
		n=0
		for ((k = 1; k <= FL_D; k++)); do
			[[ "$(in_ring "$k" "$node")" == "$want"* ]] && n=$((n + 1))
		done
		[ "$n" -eq "$FL_D" ] && return 0
		sleep 0.1
	done
	return 1
}
e2e_check "7. every director checked every node and found it healthy" \
	wait_health node4 "true healthy" 15
# log_delay SINCE: per director, ms from SINCE (seconds since midnight,
# local time as ringhealth logs) to its first line after it saying node4
# left or rejoined the ring (its log's own timestamps:
# polling show on a loaded machine would time the poll, not the checker)
log_delay() {
	local k
	for ((k = 1; k <= FL_D; k++)); do
		awk -v t0="$1" '/ node4: .* the ring/ { split($1, h, ":"); t = h[1] * 3600 + h[2] * 60 + h[3];
			if (t >= t0) { printf "%d ", (t - t0) * 1000; exit } }' "$FL_DIR/ringhealth-d$k.log"
	done
}
now_s() { date +%H:%M:%S.%N | awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }'; }
t_kill=$(now_s)
kill "${server_pid[4]}" 2>/dev/null
if wait_health node4 "false " 15; then
	e2e_pass "7. node4's server stopped: all $FL_D directors took it out by themselves (fall 2 x 300 ms + 300 ms timeout; ms after the kill, by each ringhealth's log: $(log_delay "$t_kill"))"
else
	e2e_fail "7. node4's server stopped: every director took it out ($(for ((k = 1; k <= FL_D; k++)); do in_ring "$k" node4; done | tr '\n' ' '))"
fi
e2e_flows "$W/f7" "${client4[@]}"
e2e_expect_eq "7. 300 flows answered, none by node4" \
	"$(grep -vc ' FAIL$' "$W/f7"):$(grep -c ' node4$' "$W/f7")" "300:0"
t_back=$(now_s)
tb_spawn "${FL_NODE_NS[4]}" "$W/server-node4b.log" "$RM_SERVER" \
	--name node4 --port "$FL_PORT" --max-seconds 600
e2e_on_teardown "kill $TB_LAST_PID 2>/dev/null"
if wait_health node4 "true healthy" 15; then
	e2e_pass "7. node4's server back: every director put it back (rise 2; ms after the restart, by each ringhealth's log: $(log_delay "$t_back"))"
else
	e2e_fail "7. node4's server back: every director put it back"
fi
e2e_check "7. ringhealth logged the transitions on every director" \
	test "$(grep -l "node4" "$FL_DIR"/ringhealth-d*.log | wc -l)" -eq "$FL_D"

# ---- teardown ------------------------------------------------------------------
suf=$FL_SUF dir=$FL_DIR
e2e_teardown
e2e_expect_eq "nothing of fleet $suf left (namespaces, mounts, files)" \
	"$(ip netns list | grep -c -- "-$suf\\b"):$(grep -c "$dir" /proc/mounts):$(test -e "$dir" && echo left)" \
	"0:0:"
e2e_finish
