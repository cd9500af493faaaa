#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The udp and exec health checks end to end: ringhealth in the director's
# namespace checks four nodes (node2 by its IPv6 address) running real
# rm_servers, at 1 s (udp; 800 ms timeout, so a busy machine does not
# fail a healthy node) and 1.5 s (exec) intervals, fall 3, rise 2.
#   - udp, payload "ping me", expected reply prefix "node" (rm_server
#     answers "NAME <payload>"): all healthy at once; node4's server
#     stopped: out after exactly fall failed checks; restarted: back after
#     exactly rise passed checks (counted in ringhealth -v's log; the
#     times are measured and printed beside fall x interval + timeout and
#     rise x interval, not judged: make test passes on a busy machine); node3's port
#     answered by a server of another name: out, the mismatch as its error
#     in show --json; a wrong --check-expect for the whole service
#     (fail-open off): every node out, each with the error;
#   - exec, a script run with RM_SERVICE, RM_NODE, RM_ADDR, RM_PORT in its
#     environment: exit 0 (a file of the node's holds its address)
#     healthy, exit 1 (no such file) unhealthy with "exec: exit 1", timed;
#     the command starts with no signal blocked or ignored; a script that
#     sleeps past the timeout fails ("timeout: no exec in ...") and neither
#     it nor the sleep it started is left running;
#   - SIGTERM ends ringhealth.
# The waits watch the checker's log (cheap); outcomes are read from
# ringctl show --json; times are the checker's own log times.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
INTERVAL=1000 TIMEOUT=800 FALL=3 RISE=2
# an exec check forks a shell: 250 ms was seen too short for that under a
# load average of 20, and a timed-out check is a failure
EXEC_INTERVAL=1500 EXEC_TIMEOUT=1200

e2e_require_director
[ -x "$RINGHEALTH" ] || e2e_die "$RINGHEALTH missing: run make first"
e2e_setup 4
work=$TB_STATE_DIR/probes
LOG=$work/ringhealth.log
mkdir -p "$work"

e2e_attach --conn-table 4096 >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
e2e_ctl service add app --vip "$TB_VIP4" --port "$E2E_PORT" --proto udp \
	>/dev/null || e2e_die "service app"
declare -a ADDR
for i in 1 2 3 4; do
	ADDR[i]=${TB_NODE_IP4[i]}
	[ "$i" -ne 2 ] || ADDR[i]=${TB_NODE_IP6[i]}
	e2e_ctl node add app "node$i" --mac "${TB_NODE_MAC[i]}" \
		--dev "${TB_DIR_NODE_IF[i]}" --addr "${ADDR[i]}" \
		>/dev/null || e2e_die "node add node$i --addr ${ADDR[i]}"
done
e2e_start_servers || e2e_die "servers started"

# ---- helpers ------------------------------------------------------------

# node_field NODE EXPR: EXPR over node NODE (n) of show --json.
node_field()
{
	e2e_ctl show app --json |
		e2e_json "[$2 for s in d['services'] for n in s['nodes'] if n['name'] == '$1'][0]"
}

# health NODE: "IN_RING STATE ERROR" of NODE.
health()
{
	node_field "$1" "'%s %s %s' % (n['in_ring'], n['health']['state'], n['health']['error'])"
}

# all_nodes EXPR: EXPR over every node (n) of show --json, joined by |.
all_nodes()
{
	e2e_ctl show app --json |
		e2e_json "'|'.join(str($1) for s in d['services'] for n in s['nodes'])"
}

# ring_health: "IN_RING:STATE:ERROR|..." of every node.
ring_health()
{
	all_nodes "'%s:%s:%s' % (n['in_ring'], n['health']['state'], n['health']['error'])"
}

# until_ok SECONDS cmd...: cmd every 50 ms until it succeeds, for SECONDS
# at most by the clock and by count; 1 if it never did.
until_ok()
{
	local end=$((SECONDS + $1)) max=$(($1 * 20 + 20)) t
	shift
	for ((t = 0; t < max && SECONDS <= end; t++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# expect_soon DESC WANT cmd...: cmd prints WANT within 3 s (the checker
# logs a change just before it commits it).
expect_soon()
{
	local desc=$1 want=$2 end=$((SECONDS + 3)) got t
	shift 2
	for ((t = 0; t < 10; t++)); do
		got=$("$@")
		[ "$got" != "$want" ] && [ "$SECONDS" -le "$end" ] || break
		sleep 0.2
	done
	e2e_expect_eq "$desc" "$got" "$want"
}

# log_count PATTERN: lines of the checker's log matching PATTERN;
# log_more PATTERN N: more than N of them.
log_count() { grep -c -- "$1" "$LOG"; }
log_more() { [ "$(log_count "$1")" -gt "$2" ]; }

# log_ms PATTERN: the time of the last log line matching PATTERN, in ms
# since the epoch (the log has local HH:MM:SS.mmm of today).
log_ms()
{
	local t
	t=$(grep -- "$1" "$LOG" | tail -1 | cut -d' ' -f1)
	[ -n "$t" ] || return 1
	date -d "$t" +%s%3N
}

# checks_to NODE out|back: how many checks took NODE to its last change:
# the failed ones from its last "-> failing" to its last "-> unhealthy"
# (out), or the passed ones after its last failed check up to its last
# "-> healthy" (back). A transition line comes just before its check's own
# -v line, so the check that made the change is counted after it.
checks_to()
{
	awk -v n="app $1: " -v way="$2" '
		index($0, n) { L[++k] = $0 }
		END {
			to = way == "out" ? " -> unhealthy (" : " -> healthy ("
			for (i = k; i > 0 && !index(L[i], to); i--) ;
			for (j = i - 1; j > 0; j--)
				if (way == "out" ? index(L[j], " -> failing (") : index(L[j], n "FAILED")) break
			for (m = j + 1; m < i; m++)
				c += index(L[m], n (way == "out" ? "FAILED" : "ok (")) > 0
			print i ? c + 1 : 0
		}' "$LOG"
}

# timed NODE out|back SINCE_MS BOUND_MS WHAT N: NODE's next "out of" /
# "back in the ring" line (the log had N before the change) comes, within
# 30 s (a hang's bound, not a judgement), after exactly fall failed / rise
# passed checks; the time it took from SINCE_MS is printed beside BOUND_MS.
timed()
{
	local node=$1 way=$2 since=$3 bound=$4 what=$5 n=$6 pat at want=$FALL
	pat="app $node: out of the ring"
	[ "$way" = out ] || pat="app $node: back in the ring" want=$RISE
	if until_ok 30 log_more "$pat" "$n" && at=$(log_ms "$pat"); then
		e2e_log "$what: $node $way $((at - since)) ms after the change (fall x interval + timeout or rise x interval: $bound ms)"
		e2e_expect_eq "$what: $node $way after exactly $want $([ "$way" = out ] && echo failed || echo passed) checks" \
			"$(checks_to "$node" "$way")" "$want"
	else
		e2e_fail "$what: $node not $way 30 s after the change: $(health "$node")"
	fi
}

# back_in NODE N WHAT: NODE's next "back in the ring" line (the log had N)
# within 10 s: a check named WHAT.
back_in()
{
	if until_ok 60 log_more "app $1: back in the ring" "$2"; then
		e2e_pass "$3: $1 back in"
	else
		e2e_fail "$3: $1 not back: $(health "$1")"
	fi
}

# server_up_ms I: when node I's server listened (its log's mtime, in ms).
server_up_ms()
{
	stat -c %.3Y "$TB_STATE_DIR/server-node$1.log" | tr -d .
}

# ---- udp ------------------------------------------------------------------

e2e_check "service set app --check udp --check-payload 'ping\\sme' --check-expect node ..." \
	e2e_ctl service set app --check udp --check-payload 'ping\sme' \
	--check-expect node --interval "${INTERVAL}ms" \
	--timeout "${TIMEOUT}ms" --fall "$FALL" --rise "$RISE"
e2e_expect_eq "show --json: the udp check, its payload and expected prefix" \
	"$(e2e_ctl show app --json | e2e_json "' '.join(s['check'][k]
		for s in d['services'] for k in ('type', 'payload', 'expect'))")" \
	'udp ping\sme node'

# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown '[ "$E2E_FAILED" -eq 0 ] || { echo "--- ringhealth.log"; cat "$LOG"; }'
tb_spawn "$TB_DIR_NS" "$LOG" "$RINGHEALTH" -v
HEALTH_PID=$TB_LAST_PID
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'kill "$HEALTH_PID" 2>/dev/null'

until_ok 10 log_more "unchecked -> healthy" 3 ||
	e2e_die "udp: not all four healthy: $(cat "$LOG")"
expect_soon "udp: all four nodes healthy and in the ring (the first reply decides)" \
	"True:healthy:|True:healthy:|True:healthy:|True:healthy:" ring_health
sleep 0.3 # the servers' count files
e2e_expect_eq "udp: the probes reached the servers (node1 over IPv4, node2 over IPv6)" \
	"$([ "$(e2e_server_count 1 udp_datagrams)" -gt 0 ] && echo v4)$([ "$(e2e_server_count 2 udp_datagrams6)" -gt 0 ] && echo v6)" \
	v4v6

# a server stops, and comes back
limit=$((FALL * INTERVAL + TIMEOUT))
n=$(log_count "app node4: out of the ring")
stopped=$(date +%s%3N)
e2e_stop_server 4
timed node4 out "$stopped" "$limit" "udp, server stopped" "$n"
got=$(health node4)
case $got in
"False unhealthy udp: Connection refused" | "False unhealthy timeout: no reply in $TIMEOUT ms")
	e2e_pass "udp: node4 out, unhealthy, show --json error '${got#False unhealthy }'" ;;
*) e2e_fail "udp: node4 after its server stopped: '$got'" ;;
esac
n=$(log_count "app node4: back in the ring")
e2e_start_server 4 || e2e_die "restart node4's server"
timed node4 back "$(server_up_ms 4)" $((RISE * INTERVAL + INTERVAL / 10)) \
	"udp, server restarted" "$n"

# node3's port answered by another server: the reply does not match
n=$(log_count "app node3: out of the ring")
e2e_stop_server 3
e2e_start_server 3 "$E2E_PORT" other3 || e2e_die "node3's port answered as other3"
until_ok 10 log_more "app node3: out of the ring" "$n" ||
	e2e_fail "udp: node3 answered by 'other3' still in: $(health node3)"
expect_soon "udp: node3's port answers 'other3 ping me': out, the mismatch in show --json" \
	"False unhealthy udp: reply does not match --check-expect" health node3
expect_soon "udp: the other three stay in" "True|True|False|True" \
	all_nodes "n['in_ring']"
n=$(log_count "app node3: back in the ring")
e2e_stop_server 3
e2e_start_server 3 || e2e_die "node3's own server again"
back_in node3 "$n" "udp, its own server again"

# a wrong expected prefix for the whole service
n=$(log_count ": out of the ring")
e2e_check "service set app --check-expect pong --panic-share 0 (a wrong prefix, no fail-open)" \
	e2e_ctl service set app --check-expect pong --panic-share 0
until_ok 10 log_more ": out of the ring" $((n + 3)) ||
	e2e_fail "udp: a wrong prefix: not all out: $(cat "$LOG")"
bad="False:unhealthy:udp: reply does not match --check-expect"
expect_soon "udp: a wrong expected prefix: every node out, each with the error" \
	"$bad|$bad|$bad|$bad" ring_health

# ---- exec -------------------------------------------------------------------

# check.sh, shell builtins only (quick on a loaded machine): healthy when
# $dir/$RM_NODE.ok holds the node's address; with $dir/$RM_NODE.slow it
# first waits for a sleep (both pids noted).
dir=$work/exec
mkdir -p "$dir"
cat >"$dir/check.sh" <<END_OF_CHECK
#!/bin/sh
dir=$dir
echo "\$RM_SERVICE \$RM_NODE \$RM_ADDR \$RM_PORT" >"\$dir/\$RM_NODE.env"
while read -r k v; do
	case \$k in SigBlk: | SigIgn:) printf '%s %s ' "\$k" "\$v" ;; esac
done </proc/\$\$/status >"\$dir/\$RM_NODE.sig"
if [ -e "\$dir/\$RM_NODE.slow" ]; then
	sleep 20 &
	echo "\$\$ \$!" >>"\$dir/\$RM_NODE.pids"
	wait
fi
want=
[ ! -r "\$dir/\$RM_NODE.ok" ] || read -r want <"\$dir/\$RM_NODE.ok"
[ "\$want" = "\$RM_ADDR" ]
END_OF_CHECK
chmod +x "$dir/check.sh"
# whatever a failed run left: ours, by pid
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'cat "$dir"/*.pids 2>/dev/null | xargs -r kill -9 2>/dev/null'
for i in 1 2 3; do echo "${ADDR[i]}" >"$dir/node$i.ok"; done

n=$(log_count "unchecked -> ")
e2e_check "service set app --check exec --check-cmd $dir/check.sh --interval ${EXEC_INTERVAL}ms --timeout ${EXEC_TIMEOUT}ms" \
	e2e_ctl service set app --check exec --check-cmd "$dir/check.sh" \
	--interval "${EXEC_INTERVAL}ms" --timeout "${EXEC_TIMEOUT}ms" \
	--panic-share 50
until_ok 10 log_more "unchecked -> " $((n + 3)) ||
	e2e_fail "exec: not every node checked: $(cat "$LOG")"
expect_soon "exec: exit 0 healthy and in (node1-3, no error left from the udp check), exit 1 out (node4: no file)" \
	"True:healthy:|True:healthy:|True:healthy:|False:unhealthy:exec: exit 1" \
	ring_health
e2e_expect_eq "exec: the command's environment (node2: RM_SERVICE RM_NODE RM_ADDR RM_PORT)" \
	"$(cat "$dir/node2.env")" "app node2 ${ADDR[2]} $E2E_PORT"
# (signals 32 and 33 are glibc's own: posix_spawn leaves them ignored)
read -r _ blk _ ign <"$dir/node1.sig"
e2e_expect_eq "exec: the command starts with no signal blocked, none of 1-31 ignored (SigBlk $blk, SigIgn $ign)" \
	"$((0x$blk)) $((0x$ign & 0x7fffffff))" "0 0"

n=$(log_count "app node4: back in the ring")
echo "${ADDR[4]}" >"$dir/node4.ok"
back_in node4 "$n" "exec, its file made (exit 0)"

# outage NODE WHAT ERROR BREAK FIX: eval BREAK; NODE leaves within fall x
# interval + timeout, with ERROR in show --json; eval FIX: back in.
outage()
{
	local node=$1 what=$2 err=$3 n t0
	n=$(log_count "app $node: out of the ring")
	t0=$(date +%s%3N)
	eval "$4"
	timed "$node" out "$t0" $((FALL * EXEC_INTERVAL + EXEC_TIMEOUT)) "$what" "$n"
	expect_soon "$what: $node out, '$err' in show --json" \
		"False unhealthy $err" health "$node"
	n=$(log_count "app $node: back in the ring")
	eval "$5"
	back_in "$node" "$n" "$what, repaired"
}
# shellcheck disable=SC2016 # expanded by outage
outage node3 "exec, exit 1 (its file removed)" "exec: exit 1" \
	'rm "$dir/node3.ok"' 'echo "${ADDR[3]}" >"$dir/node3.ok"'
# past the timeout: killed, a failure, nothing left running
# shellcheck disable=SC2016 # expanded by outage
outage node1 "exec, sleeping past the timeout" \
	"timeout: no exec in $EXEC_TIMEOUT ms" \
	'touch "$dir/node1.slow"' 'rm "$dir/node1.slow"'

# running PID: the process exists and is no zombie (an orphan's zombie
# stays where pid 1 does not reap)
running()
{
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}
pids=$(xargs <"$dir/node1.pids" 2>/dev/null)
n=$(echo "$pids" | wc -w)
left=
for p in $pids; do running "$p" && left="$left $p"; done
if [ "$n" -ge $((FALL * 2)) ] && [ -z "$left" ]; then
	e2e_pass "exec: $((n / 2)) timed-out checks: each script and the sleep it started killed, none left running"
else
	e2e_fail "exec: timed-out checks' processes ($pids), still running:${left:- none} (want >= $FALL checks)"
fi

# ---- SIGTERM ---------------------------------------------------------------

kill -TERM "$HEALTH_PID"
if until_ok 3 sh -c "! kill -0 $HEALTH_PID 2>/dev/null"; then
	e2e_pass "ringhealth: SIGTERM, it exits"
else
	e2e_fail "ringhealth did not exit on SIGTERM"
fi
e2e_log "ringhealth: $(grep -cE ' -> (healthy|unhealthy|failing)' "$LOG") transitions logged"

e2e_finish
