#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The checker at scale: one service of 1,000 nodes checked by tcp, against
# a real listener (rm_server) on 1,000 addresses of 198.19.16.0/22 in the
# director's namespace, every 5 s with a 4 s timeout (a listener that a
# loaded machine keeps waiting is not a failing node; make bench checks
# every 1 s: HEALTH_SCALE_INTERVAL_MS, HEALTH_SCALE_TIMEOUT_MS). Nothing
# here judges speed (make test must pass on a busy machine); what it
# asserts are counts:
#   - every node is healthy and in the ring;
#   - over a window of at least two rounds (the checker's own counter grew
#     by 2 x 1,000 checks, however long that took), no check failed: the
#     checker keeps 1,000 probes in flight without losing one.
# The rate (checks per second against 1,000 per interval), the lag and ringhealth's
# CPU time are measured over the window and printed; with
# HEALTH_SCALE_JSON=FILE they are written there, and `make bench` (part
# health, scripts/bench.sh) judges them against their targets.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
NODES=1000 PORT=9000 WINDOW=10
INTERVAL_MS=${HEALTH_SCALE_INTERVAL_MS:-5000}
TIMEOUT_MS=${HEALTH_SCALE_TIMEOUT_MS:-4000}

e2e_require_director
[ -x "$RINGHEALTH" ] || e2e_die "$RINGHEALTH missing: run make first"
e2e_setup 1
work=$TB_STATE_DIR/scale
mkdir -p "$work"

e2e_attach --conn-table 4096 >/dev/null || e2e_die "ringload attach $TB_DIR_IN"

# 1,000 addresses on the director's lo, one listener for all of them
addr() { echo "198.19.$((16 + $1 / 250)).$((1 + $1 % 250))"; }
for ((i = 0; i < NODES; i++)); do
	echo "address add $(addr "$i")/32 dev lo"
done >"$work/addrs"
ip -n "$TB_DIR_NS" -batch "$work/addrs" || e2e_die "addresses on lo"
tb_spawn "$TB_DIR_NS" "$work/server.log" "$RM_SERVER" --name scale \
	--port "$PORT" --max-seconds 300
e2e_wait_for 5 grep -q ' ready ' "$work/server.log" || e2e_die "listener"

{
	echo "service add big --vip 198.19.255.2 --port $PORT --proto tcp --vnodes 10"
	echo "service set big --check tcp --interval ${INTERVAL_MS}ms --timeout ${TIMEOUT_MS}ms"
	for ((i = 0; i < NODES; i++)); do
		echo "node add big n$i --mac ${TB_NODE_MAC[1]} --dev ${TB_DIR_NODE_IF[1]} --addr $(addr "$i")"
	done
} >"$work/config"
e2e_check "restore: service big with $NODES nodes and a tcp check every $INTERVAL_MS ms" \
	tb_exec "$TB_DIR_NS" "$RINGCTL" restore "$work/config"

# on failure: the checker's own lines (not the per-node ones) and counters
dump_on_fail()
{
	[ "$E2E_FAILED" -eq 0 ] && return
	grep -v " big n" "$work/ringhealth.log"
	echo "transition lines: $(grep -c " -> " "$work/ringhealth.log")"
	grep -o '"health_checker.*' "$work/c1" 2>/dev/null
}
e2e_on_teardown dump_on_fail
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH"
HEALTH_PID=$TB_LAST_PID
t0=$SECONDS
# shellcheck disable=SC2016 # expanded at teardown
e2e_on_teardown 'kill "$HEALTH_PID" 2>/dev/null'

healthy()
{
	e2e_ctl show big --json | e2e_json "sum(n['health']['state'] ==
		'healthy' and n['in_ring'] for s in d['services']
		for n in s['nodes'])"
}
for ((t = 0; t < 240; t++)); do
	[ "$(healthy)" = "$NODES" ] && break
	sleep 0.5
done
e2e_expect_eq "all $NODES nodes healthy and in the ring ($((SECONDS - t0)) s after start)" "$(healthy)" "$NODES"

counter() { e2e_json "d['health_checker']['$1']" <"$2"; }
cpu() { awk '{ print $14 + $15 }' "/proc/$HEALTH_PID/stat"; }
hz=$(getconf CLK_TCK)
e2e_ctl stats --json >"$work/c0"
c0=$(cpu)
s0=$(date +%s%3N)
# the window: two rounds of checks, by the checker's count; the bound only
# ends a hang (two rounds take two intervals when the checker keeps up)
base=$(counter checks "$work/c0")
for ((t = 0; t < 600; t++)); do
	sleep 0.5
	e2e_ctl stats --json >"$work/c1"
	[ $(($(counter checks "$work/c1") - base)) -ge $((2 * NODES)) ] &&
		[ $(($(date +%s%3N) - s0)) -ge $((WINDOW * 1000)) ] && break
done
c1=$(cpu)
s1=$(date +%s%3N)
ms=$((s1 - s0))
checks=$(($(counter checks "$work/c1") - base))
failed=$(($(counter checks-failed "$work/c1") - $(counter checks-failed "$work/c0")))
late=$(($(counter checks-late "$work/c1") - $(counter checks-late "$work/c0")))
lag=$(counter lag-max-ms "$work/c1")
cpu_ms=$(((c1 - c0) * 1000 / hz))
load=$(cut -d' ' -f1-3 /proc/loadavg)
e2e_log "SCALE: $checks checks in $ms ms ($((checks * 1000 / ms))/s) for $NODES nodes at $INTERVAL_MS ms; failed $failed, late (> 100 ms) $late, max lag $lag ms"
e2e_log "SCALE: ringhealth CPU ${cpu_ms} ms in ${ms} ms = $(awk -v c="$cpu_ms" -v m="$ms" 'BEGIN { printf "%.1f", 100 * c / m }')% of one core (load average: $load)"
e2e_check "two rounds of checks: $checks >= $((2 * NODES))" test "$checks" -ge $((2 * NODES))
e2e_expect_eq "no check failed" "$failed" 0
if [ -n "${HEALTH_SCALE_JSON:-}" ]; then
	printf '{"nodes":%d,"interval_ms":%d,"window_ms":%d,"checks":%d,"checks_per_s":%s,"checks_failed":%d,"checks_late":%d,"lag_max_ms":%s,"cpu_ms":%d,"cpu_pct":%s,"loadavg":"%s"}\n' \
		"$NODES" "$INTERVAL_MS" "$ms" "$checks" "$(awk -v c="$checks" -v m="$ms" 'BEGIN { printf "%.1f", c * 1000 / m }')" \
		"$failed" "$late" "$lag" "$cpu_ms" \
		"$(awk -v c="$cpu_ms" -v m="$ms" 'BEGIN { printf "%.1f", 100 * c / m }')" "$load" >"$HEALTH_SCALE_JSON"
fi

e2e_finish
