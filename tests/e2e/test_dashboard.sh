#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Grafana dashboard (dashboards/ringmaster.json) against a real
# Prometheus: a TCP service of 3 nodes with real servers on the testbed,
# ringexport serving the director's metrics, Prometheus (temporary data
# dir, in the director's namespace on loopback) scraping it every second,
# ringhealth checking the nodes. Driven while Prometheus scrapes: TCP
# connections (traffic, new flows, connection-table entries), a node's
# server stopped and started again (health transitions, the ring-out and
# ring-in swaps), a weight change (a ring change). Then every PromQL
# expression of the dashboard, its variables replaced ($instance and
# $service by the values Prometheus has for them, $__rate_interval by the
# time Prometheus has been scraping), goes to Prometheus' /api/v1/query
# (tests/e2e/dash_queries.py):
#   - the dashboard's shape: unique panel ids, every panel with a title, the
#     ${datasource} variable and a target; each variable's label_values()
#     has values;
#   - every expression returns data (a typo'd metric or label returns
#     none), and the panels of what was driven show a value above zero
#     (traffic, new flows, table fill and events, health, transitions,
#     ring changes, shares).
# The provisioning example (dashboards/provisioning/*.yaml) names the
# dashboard's directory and is valid YAML with Grafana's keys.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EXPORT_PORT=9852
PROM_PORT=9853
FLOWS=300
RINGEXPORT=${RINGEXPORT:-$E2E_BUILD/ringexport}
RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
DASH=$E2E_ROOT/dashboards/ringmaster.json

e2e_require_tools promtool prometheus curl "$RINGEXPORT" "$RINGHEALTH"
e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/dashboard
mkdir -p "$work"

# ---- the provisioning example (no testbed needed) ---------------------------
e2e_check "provisioning example: a Grafana file provider for the dashboards directory" \
	python3 -c '
import sys
t = open(sys.argv[1]).read()
sys.exit(not all(k in t for k in ("apiVersion: 1", "providers:", "type: file", "path:")))
' "$E2E_ROOT/dashboards/provisioning/ringmaster.yaml"

# ---- the director, its servers and the checker --------------------------------
e2e_service_up web tcp
for i in 1 2 3; do
	e2e_ctl node set web "node$i" --addr "${TB_NODE_IP4[i]}" >/dev/null ||
		e2e_die "node set node$i --addr"
done
e2e_ctl service set web --check tcp --interval 200ms --timeout 100ms \
	--fall 2 --rise 1 >/dev/null || e2e_die "service set web --check tcp"
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH"
tb_spawn "$TB_DIR_NS" "$work/ringexport.log" "$RINGEXPORT" \
	--listen "127.0.0.1:$EXPORT_PORT"
e2e_wait_for 10 grep -q 'serving /metrics' "$work/ringexport.log" ||
	e2e_die "ringexport did not start: $(cat "$work/ringexport.log")"

e2e_prometheus "$work" "$EXPORT_PORT" "$PROM_PORT"
prom_start=$SECONDS
# until_prom QUERY VALUE: Prometheus answers VALUE (60 s at most: a hang)
until_prom()
{
	local t
	for ((t = 0; t < 600; t++)); do
		[ "$(e2e_promql "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# exported NAME: the value the director exports now
exported()
{
	e2e_ctl stats --prometheus | awk -v m="$1" '$1 == m { print $2 }'
}
e2e_check "Prometheus scrapes ringexport (up = 1)" until_prom 'up{job="ringmaster"}' 1
healthy3()
{
	[ "$(e2e_ctl show web --json | e2e_json "sum(n['health']['state'] ==
		'healthy' for s in d['services'] for n in s['nodes'])")" = 3 ]
}
e2e_check "ringhealth: the 3 nodes healthy" e2e_wait_for 15 healthy3

# ---- driven: traffic, a health transition, a ring change --------------------
e2e_alloc_sports "$FLOWS"
e2e_flows "$work/flows" --vip "$TB_VIP4" --proto tcp --count "$FLOWS" \
	--sport-base "$E2E_SPORT"
e2e_expect_eq "$FLOWS TCP connections answered" \
	"$(grep -vc ' FAIL$' "$work/flows")" "$FLOWS"
# in_ring NODE WANT: NODE's in_ring is WANT (True, False)
in_ring()
{
	[ "$(e2e_ctl show web --json | e2e_json "[n['in_ring'] for s in d['services']
		for n in s['nodes'] if n['name'] == '$1'][0]")" = "$2" ]
}
e2e_stop_server 3
e2e_check "node3's server stopped: out of the ring (a health transition, a ring swap)" \
	e2e_wait_for 15 in_ring node3 False
e2e_start_server 3 || e2e_die "node3's server restarted"
e2e_check "node3's server back: in the ring again" \
	e2e_wait_for 15 in_ring node3 True
e2e_check "a ring change: node set web node1 --weight 2" \
	e2e_ctl node set web node1 --weight 2
e2e_alloc_sports "$FLOWS"
e2e_flows "$work/flows2" --vip "$TB_VIP4" --proto tcp --count "$FLOWS" \
	--sport-base "$E2E_SPORT"
e2e_expect_eq "$FLOWS more TCP connections answered" \
	"$(grep -vc ' FAIL$' "$work/flows2")" "$FLOWS"
# Prometheus has the final counts: its last scrape is after the last change
swaps=$(exported ringmaster_ring_swaps_total)
e2e_check "Prometheus has every ring swap ($swaps)" \
	until_prom "ringmaster_ring_swaps_total" "$swaps"
e2e_check "Prometheus has the last flows ($((2 * FLOWS)) new flows or more)" \
	until_prom "ringmaster_service_new_flows_total >= bool $((2 * FLOWS))" 1

# ---- every expression of the dashboard -------------------------------------
instance=127.0.0.1:$EXPORT_PORT
window=$((SECONDS - prom_start + 10))s
positive=(
	"Director up" "Connection table fill" "Packets/s, all services"
	"Packets/s per service" "Bits/s per service" "Packets/s per node"
	"New flows/s per service" "New flows/s per node" "Bits/s per node"
	"Table events/s" "Table entries per node" "Nodes by health"
	"Health transitions" "Ring changes" "Ring share per node"
)
args=()
for p in "${positive[@]}"; do args+=(--positive "$p"); done
tb_exec "$TB_DIR_NS" python3 "$E2E_ROOT/tests/e2e/dash_queries.py" "$DASH" \
	"http://127.0.0.1:$PROM_PORT" "instance=$instance" service=web \
	"__rate_interval=$window" "${args[@]}" >"$work/queries" 2>&1
rc=$?
while IFS= read -r line; do
	case $line in
	"ok   "*) e2e_pass "${line#ok   }" ;;
	"FAIL "*) e2e_fail "${line#FAIL }" ;;
	*) e2e_fail "dash_queries.py: $line" ;;
	esac
done <"$work/queries"
e2e_expect_eq "dash_queries.py exits 0" "$rc" 0

e2e_finish
