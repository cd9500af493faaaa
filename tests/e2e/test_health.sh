#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Health checks end to end: ringhealth in the director's namespace checks
# four nodes running real servers, at a 200 ms interval (timeout 100 ms,
# fall 3, rise 2), while 30 long-lived connections exchange data.
#   - tcp: node4's server killed: node4 leaves the ring after exactly fall
#     failed checks (counted in ringhealth -v's log; the time it took is
#     measured and printed, not judged: make test passes on a busy
#     machine), and from then on every new connection succeeds, none on
#     node4; its server restarted: back in after exactly rise passed checks;
#   - an operator drain during an outage (node3) is kept after recovery:
#     healthy again, still draining, out of the ring until --active;
#   - http: a Python http.server on every node, node2's answering 500:
#     node2 leaves, the others stay, show gives the status as the error;
#   - three of four servers stopped: two go out, the third would leave
#     fewer than 50% healthy, so fail-open keeps all in and the log says
#     why (FAIL-OPEN line, fail-open counter);
#   - one log line per transition; `ringctl show` text and JSON carry the
#     health, save/restore carries the check and not the outage;
#   - the held connections on node1, healthy throughout, all end ok, with
#     no reset;
#   - SIGTERM: ringhealth exits 0 and leaves node health as it was.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
INTERVAL=200 TIMEOUT=100 FALL=3 RISE=2
HTTP_PORT=8081
HOLD=30 HOLD_SECONDS=30

e2e_require_director
[ -x "$RINGHEALTH" ] || e2e_die "$RINGHEALTH missing: run make first"
e2e_setup 4
work=$TB_STATE_DIR/health
mkdir -p "$work"

# a small connection table: show walks it on every poll
e2e_attach --conn-table 4096 >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" --proto tcp \
	>/dev/null || e2e_die "service web"
for i in 1 2 3 4; do
	e2e_ctl node add web "node$i" --mac "${TB_NODE_MAC[i]}" \
		--dev "${TB_DIR_NODE_IF[i]}" --addr "${TB_NODE_IP4[i]}" \
		>/dev/null || e2e_die "node add node$i --addr ${TB_NODE_IP4[i]}"
done
e2e_start_servers || e2e_die "servers started"
e2e_check "service set web --check tcp --interval ${INTERVAL}ms ..." \
	e2e_ctl service set web --check tcp --interval "${INTERVAL}ms" \
	--timeout "${TIMEOUT}ms" --fall "$FALL" --rise "$RISE"

# ---- helpers ------------------------------------------------------------

# health NODE: "STATE IN_RING HEALTH OUT" of NODE, from show --json.
health()
{
	e2e_ctl show web --json | e2e_json "[(n['state'], n['in_ring'],
		n['health']['state'], n['health']['out']) for s in d['services']
		for n in s['nodes'] if n['name'] == '$1']"
}

in_ring() { [ "$(health "$1" | awk '{ print $2 }')" = "$2" ]; }
health_is() { [ "$(health "$1" | awk '{ print $3 }')" = "$2" ]; }

# wait_ring NODE True|False SECONDS: until show says so.
wait_ring()
{
	e2e_wait_for "$3" in_ring "$1" "$2"
}

# log_ms PATTERN: the time of the last log line matching PATTERN, in ms
# since the epoch (the log has local HH:MM:SS.mmm of today).
log_ms()
{
	local t
	t=$(grep -- "$1" "$work/ringhealth.log" | tail -1 | cut -d' ' -f1)
	[ -n "$t" ] || return 1
	echo $(($(date -d "$t" +%s%3N)))
}

new_flows()
{
	e2e_alloc_sports "$2"
	e2e_flows "$work/$1" --vip "$TB_VIP4" --proto tcp --count "$2" \
		--sport-base "$E2E_SPORT" --timeout-ms 2000
}

# http_server I STATUS: a Python http.server on node I answering STATUS.
http_server()
{
	tb_spawn "${TB_NODE_NS[$1]}" "$work/http-node$1.log" python3 -c '
import http.server, sys
status = int(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(status)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
' "$HTTP_PORT" "$2"
}

log_has() { grep -q -- "$1" "$work/ringhealth.log"; }
log_lines() { wc -l <"$work/ringhealth.log"; }
# checks_to NODE RESULT STATE FROM: how many checks of NODE logged RESULT
# (FAILED or ok) from log line FROM on, up to and including the one that
# moved it to STATE (its transition line comes just before its own line)
checks_to()
{
	tail -n +"$4" "$work/ringhealth.log" | awk -v n="web $1: " -v r="$2" -v st="$3" '
		index($0, n r) { c++ }
		index($0, n) && index($0, " -> " st " (") { print c + 1; exit }'
}

# ---- the checker --------------------------------------------------------

# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown '[ "$E2E_FAILED" -eq 0 ] || { echo "--- ringhealth.log"; cat "$work/ringhealth.log"; }'
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH" -v
HEALTH_PID=$TB_LAST_PID
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'kill "$HEALTH_PID" 2>/dev/null'
all_healthy()
{
	[ "$(e2e_ctl show web --json | e2e_json "sum(n['health']['state'] ==
		'healthy' for s in d['services'] for n in s['nodes'])")" = 4 ]
}
if e2e_wait_for 5 all_healthy; then
	e2e_pass "ringhealth: all four nodes healthy (the first result decides)"
else
	cat "$work/ringhealth.log"
	e2e_die "nodes not healthy: $(e2e_ctl show web 2>&1)"
fi

# ---- long-lived connections ----------------------------------------------

e2e_alloc_sports "$HOLD"
ready=$work/hold.ready
e2e_client --vip "$TB_VIP4" --proto tcp --hold "$HOLD" \
	--duration "$HOLD_SECONDS" --sport-base "$E2E_SPORT" \
	--ready-file "$ready" >"$work/hold.out" 2>"$work/hold.err" &
HOLD_PID=$!
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'kill "$HOLD_PID" 2>/dev/null'
e2e_wait_for 15 test -s "$ready" || e2e_die "held connections never ready: $(cat "$work/hold.err")"
sleep 0.5
held1=$(e2e_server_count 1 tcp_open)
e2e_log "held connections on node1: $held1 of $HOLD"
[ "$held1" -gt 0 ] || e2e_die "no held connection on node1"

# ---- tcp: a node's server dies, and comes back ----------------------------

# Detection: node4 leaves after exactly fall failed checks, whatever the
# machine's load; the time it took, from the moment the server is told to
# stop to the log line of the commit that took node4 out (the checker's own
# clock), is printed beside fall x interval + timeout, not judged (the
# 10 s wait only ends a hang).
limit=$((FALL * INTERVAL + TIMEOUT))
from=$(($(log_lines) + 1))
killed=$(date +%s%3N)
e2e_stop_server 4
if wait_ring node4 False 10 && out_at=$(log_ms "web node4: out of the ring"); then
	e2e_log "DETECTION: node4 left the ring $((out_at - killed)) ms after its server was stopped (fall x interval + timeout = ${limit} ms)"
	e2e_expect_eq "node4 out after exactly fall ($FALL) failed checks" \
		"$(checks_to node4 FAILED unhealthy "$from")" "$FALL"
else
	e2e_fail "node4 still in the ring 10 s after its server died: $(health node4)"
fi
e2e_expect_eq "node4: operator state untouched, health unhealthy, out" \
	"$(health node4)" "active False unhealthy True"
log_has "web node4: .* -> unhealthy (connect: Connection refused" &&
	e2e_pass "log: web node4 -> unhealthy, with the reason" ||
	e2e_fail "no transition line for node4: $(cat "$work/ringhealth.log")"
e2e_ctl show web >"$work/show.1"
grep -q "node4 .*unhealthy since" "$work/show.1" &&
	grep -q "last error: connect: Connection refused" "$work/show.1" &&
	e2e_pass "ringctl show: node4 unhealthy since ..., last error" ||
	e2e_fail "ringctl show lacks node4's health: $(cat "$work/show.1")"
new_flows out4 200
e2e_expect_eq "200 new connections with node4 out: all answered, none on node4" \
	"$(grep -c ' FAIL$' "$work/out4") $(e2e_count "$work/out4" node4)" "0 0"

from=$(($(log_lines) + 1))
e2e_start_server 4 || e2e_die "restart node4's server"
# from the moment it listened: its ready line's time (the log's mtime)
up=$(($(stat -c %.3Y "$TB_STATE_DIR/server-node4.log" | tr -d .)))
if wait_ring node4 True 10 && in_at=$(log_ms "web node4: back in the ring"); then
	e2e_log "RECOVERY: node4 back in the ring $((in_at - up)) ms after its server listened (rise x interval = $((RISE * INTERVAL)) ms)"
	e2e_expect_eq "node4 back after exactly rise ($RISE) passed checks" \
		"$(checks_to node4 ok healthy "$from")" "$RISE"
else
	e2e_fail "node4 not back 10 s after its server restarted: $(health node4)"
fi
log_has "web node4: unhealthy -> healthy" &&
	e2e_pass "log: web node4 unhealthy -> healthy" ||
	e2e_fail "no recovery line for node4"

# ---- an operator drain during an outage is kept -----------------------------

e2e_stop_server 3
wait_ring node3 False 10 || e2e_fail "node3 did not leave"
e2e_check "node set web node3 --drain during its outage" \
	e2e_ctl node set web node3 --drain
e2e_start_server 3 || e2e_die "restart node3's server"
e2e_wait_for 5 health_is node3 healthy || e2e_fail "node3 never healthy again"
e2e_expect_eq "node3 recovered: healthy, still draining, not in the ring" \
	"$(health node3)" "draining False healthy False"
e2e_check "node set web node3 --active" e2e_ctl node set web node3 --active
e2e_expect_eq "node3 active again: in the ring" "$(health node3)" \
	"active True healthy False"

# ---- http: a node answering 500 ----------------------------------------------

for i in 1 2 3 4; do
	if [ "$i" -eq 2 ]; then http_server "$i" 500; else http_server "$i" 200; fi
done
# every HTTP server listening before the check switches: a check's first
# result decides at once, and python can take seconds to start on a busy
# machine (all four refused, fail-open, then node1 out for a moment)
for i in 1 2 3 4; do
	e2e_wait_for 20 tb_exec "$TB_DIR_NS" bash -c \
		"exec 3<>/dev/tcp/${TB_NODE_IP4[i]}/$HTTP_PORT" 2>/dev/null ||
		e2e_fail "node$i's HTTP server listening on $HTTP_PORT"
done
e2e_check "service set web --check http --check-port $HTTP_PORT --check-path /health" \
	e2e_ctl service set web --check http --check-port "$HTTP_PORT" \
	--check-path /health --timeout "${INTERVAL}ms"
if wait_ring node2 False 10; then
	e2e_pass "http: node2 answering 500 left the ring"
else
	e2e_fail "http: node2 still in: $(health node2)"
fi
sleep $((INTERVAL * (FALL + 1)))e-3
e2e_expect_eq "http: node1, node3, node4 in the ring" \
	"$(health node1 | cut -d' ' -f2) $(health node3 | cut -d' ' -f2) $(health node4 | cut -d' ' -f2)" \
	"True True True"
e2e_expect_eq "show --json: node2's error is the status" \
	"$(e2e_ctl show web --json | e2e_json "[n['health']['error'] for s in d['services'] for n in s['nodes'] if n['name'] == 'node2'][0]")" \
	"http: status 500, want 200"
new_flows outh 100
e2e_expect_eq "100 new connections: all answered, none on node2" \
	"$(grep -c ' FAIL$' "$work/outh") $(e2e_count "$work/outh" node2)" "0 0"

# ---- save / restore ----------------------------------------------------------

e2e_ctl save >"$work/saved" || e2e_fail "ringctl save"
grep -q "^service set web --check http --check-port $HTTP_PORT --check-path /health --interval ${INTERVAL}ms --timeout ${INTERVAL}ms --fall $FALL --rise $RISE$" "$work/saved" &&
	grep -q "^node add web node1 .* --addr ${TB_NODE_IP4[1]}$" "$work/saved" &&
	e2e_pass "save writes the check and the addresses" ||
	e2e_fail "save: $(cat "$work/saved")"
e2e_check "restore of the saved configuration" \
	tb_exec "$TB_DIR_NS" "$RINGCTL" restore "$work/saved"
e2e_expect_eq "after restore: node2 still out (health is kept, not reset)" \
	"$(health node2 | cut -d' ' -f2,3)" "False unhealthy"
e2e_check "service set web --check tcp (back to the TCP check)" \
	e2e_ctl service set web --check tcp --check-port 0 --timeout "${TIMEOUT}ms"
# node2 healthy means the checker runs the new check (its HTTP server
# still answers 500): every node's first tcp result is in
e2e_wait_for 10 all_healthy || e2e_fail "not all healthy with the tcp check: $(e2e_ctl show web)"

# ---- fail-open: three of four down ---------------------------------------------

for i in 2 3 4; do e2e_stop_server "$i"; done
sleep $(((FALL + 3) * INTERVAL))e-3
e2e_wait_for 3 log_has "web: FAIL-OPEN" || true
e2e_ctl show web --json >"$work/failopen.json"
e2e_expect_eq "fail-open: 3 of 4 unhealthy, all kept in the ring" \
	"$(e2e_json "[n['name'] for s in d['services'] for n in s['nodes']
		if n['health']['state'] == 'unhealthy' and n['in_ring']
		and n['health']['fail_open']]" <"$work/failopen.json" | sort | xargs)" \
	"node2 node3 node4"
log_has "web: FAIL-OPEN: only 1 of 4 active nodes healthy, fewer than 50%" &&
	e2e_pass "log says why: $(grep -m1 FAIL-OPEN "$work/ringhealth.log" | cut -d' ' -f3-)" ||
	e2e_fail "no FAIL-OPEN line: $(cat "$work/ringhealth.log")"
fo=$(e2e_json "d['health_checker']['fail-open']" <"$work/failopen.json")
[ "$fo" -ge 1 ] && e2e_pass "counter fail-open = $fo" || e2e_fail "counter fail-open = $fo"
for i in 2 3 4; do e2e_start_server "$i" || e2e_die "restart node$i"; done
e2e_wait_for 5 all_healthy || e2e_fail "not all healthy after fail-open"
log_has "web: fail-open over" && e2e_pass "log: fail-open over" ||
	e2e_fail "no 'fail-open over' line"

# ---- SIGTERM leaves health as it was --------------------------------------------------

e2e_stop_server 4
wait_ring node4 False 10 || e2e_fail "node4 did not leave (before SIGTERM)"
before=$(health node4)
kill -TERM "$HEALTH_PID"
e2e_wait_for 3 sh -c "! kill -0 $HEALTH_PID 2>/dev/null" || e2e_fail "ringhealth did not exit on SIGTERM"
log_has "stopping; node health stays as published" &&
	e2e_pass "ringhealth: SIGTERM, exit logged" || e2e_fail "no exit line"
e2e_expect_eq "after SIGTERM node4 stays as it was" "$(health node4)" "$before"

# ---- one line per transition; counters -------------------------------------------

# after the exit: the counters are final, the log complete
e2e_ctl stats --json >"$work/stats.json"
trans=$(e2e_json "d['health_checker']['transitions']" <"$work/stats.json")
lines=$(grep -cE ' -> (healthy|unhealthy|failing)' "$work/ringhealth.log")
e2e_expect_eq "one log line per transition (counter transitions = log lines)" \
	"$lines" "$trans"
checks=$(e2e_json "d['health_checker']['checks']" <"$work/stats.json")
[ "$checks" -gt 100 ] && e2e_pass "stats: $checks checks, $trans transitions" ||
	e2e_fail "stats: only $checks checks"

# ---- the held connections -----------------------------------------------------------


wait "$HOLD_PID"
HOLD_PID=
out=$work/hold.out
e2e_expect_eq "node1's $held1 held connections: all ok, no reset, no error" \
	"$(awk '$3 == "node1" && $6 == "errors=0" && $7 == "resets=0" &&
		$8 == "status=ok"' "$out" | wc -l)" "$held1"

e2e_finish
