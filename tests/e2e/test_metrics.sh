#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Metrics: `ringctl stats --prometheus`, its --textfile mode, and
# ringexport scraped by a real Prometheus server.
#
# Known traffic: COUNT UDP flows of one datagram each (no retries) to a
# UDP service of 3 nodes, every one answered; the servers count the
# datagrams each node got. Checked:
#   - promtool check metrics accepts the output (text and textfile);
#   - every counter ringctl stats --json shows has its metric
#     (outcome=, event= or method= label; icmp-forwarded, which comes
#     on top of an outcome, as a packet event), with the same value;
#   - ringmaster_service_packets_total is exactly COUNT, each node's
#     ringmaster_node_packets_total exactly what its server received, and
#     the ring shares sum to 1 and match ringctl show;
#   - the change log feeds ringmaster_changes_total / ring_swaps_total;
#   - --textfile writes DIR/ringmaster.prom and leaves no temporary file;
#     an unwritable DIR is a clear error (exit 1);
#   - ringexport serves /metrics; with no state it serves ringmaster_up 0;
#     SIGTERM stops it cleanly;
#   - Prometheus (temp data dir, in the director namespace on loopback)
#     scrapes ringexport and its HTTP API answers a query for the service
#     counter with exactly COUNT, and for the per-node sum too;
#   - node health: with no checker every node is unchecked and in the
#     ring, and no checker metrics appear; once ringhealth runs a tcp
#     check that fails on every node (nothing listens on its port),
#     every node is unhealthy, kept in the ring by fail-open, and the
#     checker's counters appear with its failed checks.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COUNT=300
EXPORT_PORT=9842
PROM_PORT=9843
RINGEXPORT=${RINGEXPORT:-$E2E_BUILD/ringexport}

e2e_require_tools promtool prometheus curl "$RINGEXPORT"
e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/metrics
mkdir -p "$work"

e2e_service_up dns udp

e2e_udp_known "$work/flows" "$COUNT"

# metric NAME [LABELS]: the value of one sample ("" if absent).
metric()
{
	local key=$1
	[ -z "${2:-}" ] || key="$1{$2}"
	awk -v want="$key" '$1 == want { print $2 }' "$work/prom"
}

# the JSON first: a counter that moves in between (a stray packet counted
# as passed-not-service) is then at least as high in the scrape, as the
# check below wants
e2e_ctl stats --json >"$work/stats.json"
e2e_ctl stats --prometheus >"$work/prom"
e2e_expect_eq "ringctl stats --prometheus exits 0" "$?" 0
e2e_ctl show dns --json >"$work/show.json"
if out=$(promtool check metrics <"$work/prom" 2>&1); then
	e2e_pass "promtool check metrics accepts the output ($(grep -c '^# TYPE' "$work/prom") families)"
else
	e2e_fail "promtool check metrics: $out"
fi

# every counter of ringctl stats, under its label, same value
missing=$(python3 - "$work/stats.json" "$work/prom" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
prom = {}
for line in open(sys.argv[2]):
    if line.startswith("#") or not line.strip():
        continue
    k, v = line.rsplit(" ", 1)
    prom[k] = v
bad = []
for name, val in c.items():
    if name.startswith("conn-"):
        key = 'ringmaster_conn_table_events_total{event="%s"}' % name[5:]
    elif name.startswith("key-"):
        key = 'ringmaster_key_events_total{event="%s"}' % name[4:]
    elif name.startswith("encap-"):
        key = 'ringmaster_encap_packets_total{method="%s"}' % name[6:]
    elif name in ("icmp-forwarded", "hop-list-sent") or \
            name.startswith(("nexthop-", "quic-")):
        key = 'ringmaster_packet_events_total{event="%s"}' % name
    else:
        key = 'ringmaster_packets_total{outcome="%s"}' % name
    if key not in prom:
        bad.append(name + " missing")
    elif int(prom[key]) < val:
        bad.append("%s %s < %d" % (name, prom[key], val))
print(" ".join(bad))
PY
)
e2e_expect_eq "every counter of ringctl stats has its metric ($(e2e_json 'len(d["counters"])' <"$work/stats.json") of them)" "$missing" ""

e2e_expect_eq "ringmaster_service_packets_total{service=dns} is the $COUNT datagrams sent" \
	"$(metric ringmaster_service_packets_total 'service="dns"')" "$COUNT"
for i in 1 2 3; do
	got=$(metric ringmaster_node_packets_total "service=\"dns\",node=\"node$i\"")
	e2e_expect_eq "node$i: ringmaster_node_packets_total = the $got datagrams its server received" \
		"$got" "$(e2e_server_count "$i" udp_datagrams)"
done
e2e_expect_eq "forwarded packets by outcome add up to $COUNT" \
	"$(($(metric ringmaster_packets_total 'outcome="forwarded-tx"') + $(metric ringmaster_packets_total 'outcome="forwarded-redirect"')))" \
	"$COUNT"
shares=$(python3 - "$work/show.json" "$work/prom" <<'PY'
import json, sys
show = {n["name"]: n["share"] for s in json.load(open(sys.argv[1]))["services"]
        for n in s["nodes"]}
prom = {}
for line in open(sys.argv[2]):
    if line.startswith('ringmaster_node_ring_share{service="dns"'):
        node = line.split('node="')[1].split('"')[0]
        prom[node] = float(line.split()[-1])
ok = set(show) == set(prom) and all(abs(show[n] - prom[n]) < 1e-9 for n in show) \
    and abs(sum(prom.values()) - 1) < 1e-9
print("ok" if ok else "show %s prom %s" % (show, prom))
PY
)
e2e_expect_eq "ring shares: as ringctl show says, summing to 1" "$shares" ok
e2e_expect_eq "ring entries: 3 nodes x 1000 vnodes" \
	"$(metric ringmaster_service_ring_entries 'service="dns"')" 3000
e2e_expect_eq "node states: node1 active 1, draining 0" \
	"$(metric ringmaster_node_state 'service="dns",node="node1",state="active"') $(metric ringmaster_node_state 'service="dns",node="node1",state="draining"')" "1 0"
e2e_expect_eq "change log: 4 changes (service add, 3 node adds), 4 ring swaps" \
	"$(metric ringmaster_changes_total) $(metric ringmaster_ring_swaps_total)" "4 4"
# the last change's time is the change log's last record's (not judged
# against the clock: how long ago it was depends on the machine's load)
last=$(metric ringmaster_last_change_timestamp_seconds)
rec=$(e2e_ctl history --json | e2e_json '"%.3f" % (d["changes"][-1]["time_ns"] / 1e9)')
if [ -n "$last" ] && [ "$last" = "$rec" ]; then
	e2e_pass "last change time is the change log's last record's ($last)"
else
	e2e_fail "last change time $last, the change log's last record $rec"
fi
e2e_expect_eq "seed set, state readable" \
	"$(metric ringmaster_seed_set) $(metric ringmaster_up)" "1 1"

# ---- textfile ----------------------------------------------------------

tdir=$work/textfile
mkdir -p "$tdir"
e2e_check "ringctl stats --prometheus --textfile DIR" \
	e2e_ctl stats --prometheus --textfile "$tdir"
e2e_expect_eq "DIR holds ringmaster.prom and nothing else" \
	"$(ls -A "$tdir")" ringmaster.prom
e2e_check "promtool check metrics accepts the textfile" \
	promtool check metrics <"$tdir/ringmaster.prom"
e2e_expect_eq "the textfile has the same families" \
	"$(grep -c '^# TYPE' "$tdir/ringmaster.prom")" "$(grep -c '^# TYPE' "$work/prom")"
e2e_ctl stats --prometheus --textfile "$work/no-such-dir" >/dev/null 2>"$work/tf.err"
rc=$?
e2e_expect_eq "an absent DIR: exit 1, says which directory" \
	"$rc $(grep -c 'no-such-dir' "$work/tf.err")" "1 1"

# ---- ringexport and Prometheus -----------------------------------------

tb_spawn "$TB_DIR_NS" "$work/ringexport.log" "$RINGEXPORT" \
	--listen "127.0.0.1:$EXPORT_PORT" --pin-dir /sys/fs/bpf/ringmaster
e2e_wait_for 10 grep -q 'serving /metrics' "$work/ringexport.log" ||
	e2e_die "ringexport did not start: $(cat "$work/ringexport.log")"
tb_exec "$TB_DIR_NS" curl -sS -D "$work/http.hdr" -o "$work/http.body" \
	"http://127.0.0.1:$EXPORT_PORT/metrics"
e2e_expect_eq "GET /metrics: 200, Prometheus text content type" \
	"$(head -1 "$work/http.hdr" | tr -d '\r' | awk '{ print $2 }') $(grep -ci '^content-type: text/plain; version=0.0.4' "$work/http.hdr")" "200 1"
e2e_check "promtool check metrics accepts what ringexport serves" \
	promtool check metrics <"$work/http.body"
e2e_expect_eq "ringexport serves the same service counter" \
	"$(awk '$1 == "ringmaster_service_packets_total{service=\"dns\"}" { print $2 }' "$work/http.body")" "$COUNT"

tb_spawn "$TB_DIR_NS" "$work/ringexport-none.log" "$RINGEXPORT" \
	--listen "127.0.0.1:$((EXPORT_PORT + 10))" --pin-dir /sys/fs/bpf/no-such-state
none_pid=$TB_LAST_PID
e2e_wait_for 10 grep -q 'serving /metrics' "$work/ringexport-none.log" ||
	e2e_die "second ringexport did not start"
e2e_expect_eq "no state: ringexport serves ringmaster_up 0" \
	"$(tb_exec "$TB_DIR_NS" curl -sS "http://127.0.0.1:$((EXPORT_PORT + 10))/metrics" | grep '^ringmaster_up ')" \
	"ringmaster_up 0"
kill -TERM "$none_pid"
e2e_wait_for 5 sh -c "! kill -0 $none_pid 2>/dev/null"
e2e_expect_eq "SIGTERM: ringexport logs its stop and exits" \
	"$(kill -0 "$none_pid" 2>/dev/null && echo running) $(grep -c 'ringexport: stopped' "$work/ringexport-none.log")" " 1"

e2e_prometheus "$work" "$EXPORT_PORT" "$PROM_PORT"
q='ringmaster_service_packets_total{job="ringmaster",service="dns"}'
got=
for ((t = 0; t < 300; t++)); do
	got=$(e2e_promql "$q")
	[ "$got" != "$COUNT" ] || break
	sleep 0.1
done
e2e_expect_eq "Prometheus scraped ringexport: $q = $COUNT" "$got" "$COUNT"
e2e_expect_eq "Prometheus: sum of ringmaster_node_packets_total over dns's nodes = $COUNT" \
	"$(e2e_promql 'sum(ringmaster_node_packets_total{service="dns"})')" "$COUNT"
e2e_expect_eq "Prometheus: the target is up" "$(e2e_promql 'up{job="ringmaster"}')" 1

# ---- node health ------------------------------------------------------
# health_of STATE: "IN_RING FAIL_OPEN HEALTH" per node, from a fresh scrape
health_of()
{
	local i out=
	e2e_ctl stats --prometheus >"$work/prom" || return 1
	for i in 1 2 3; do
		out+="$(metric ringmaster_node_in_ring "service=\"dns\",node=\"node$i\"")"
		out+=" $(metric ringmaster_node_fail_open "service=\"dns\",node=\"node$i\"")"
		out+=" $(metric ringmaster_node_health "service=\"dns\",node=\"node$i\",state=\"$1\"");"
	done
	echo "$out"
}
e2e_expect_eq "no checker: every node unchecked and in the ring" \
	"$(health_of unchecked)" "1 0 1;1 0 1;1 0 1;"
e2e_expect_eq "no checker: no checker metrics" \
	"$(grep -c '^ringmaster_health_check' "$work/prom")" 0
for i in 1 2 3; do
	e2e_ctl node set dns "node$i" --addr "${TB_NODE_IP4[i]}" >/dev/null ||
		e2e_die "node set node$i --addr"
done
e2e_ctl service set dns --check tcp --check-port $((E2E_PORT + 1)) \
	--interval 200ms --timeout 200ms \
	--fall 1 --rise 1 >/dev/null || e2e_die "service set dns --check tcp"
RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH"
all_failed() { [ "$(health_of unhealthy)" = "1 1 1;1 1 1;1 1 1;" ]; }
e2e_check "a failing tcp check: every node unhealthy, kept in the ring by fail-open" \
	e2e_wait_for 15 all_failed
kill "$TB_LAST_PID" 2>/dev/null
e2e_check "promtool check metrics accepts the output with health metrics" \
	promtool check metrics <"$work/prom"
e2e_expect_eq "the checker's counters: failed checks counted, fail-open once, 3 targets" \
	"$(python3 -c '
import sys
m = {}
for line in open(sys.argv[1]):
    if line.startswith("ringmaster_health_check"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
print(m.get("ringmaster_health_checker_events_total{event=\"checks-failed\"}", 0) >= 3,
      m.get("ringmaster_health_checker_events_total{event=\"fail-open\"}"),
      m.get("ringmaster_health_check_targets"))
' "$work/prom")" "True 1.0 3.0"

e2e_finish
