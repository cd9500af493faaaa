#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringload and ringctl end to end, control plane only: attach / status /
# detach in both modes, state surviving re-attach, every ringctl command
# and its JSON, node states (drain / down / active and their gens), the
# connection table's settings (ringload --conn-table, ringctl config),
# save / restore, and every kind of bad input with its exit code and with
# the pinned maps unchanged.
#
# Everything happens in a network namespace this script creates (veth
# pairs made inside it) with its own bpffs: the script re-runs itself
# under `ip netns exec`, so nothing touches the root namespace and the
# pins go away with the mount namespace even if cleanup is cut short.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
LOAD=$E2E_BUILD/ringload
CTL=$E2E_BUILD/ringctl

# interfaces stay down: no packet moves a counter during the checks
ctl_links()
{
	ip -n "$1" link add name rmv0 type veth peer name rmv1 &&
		ip -n "$1" link add name rmv2 type veth peer name rmv3 || return
	# a device without native XDP, for --mode auto to fall back from
	ip -n "$1" link add name rmd0 type dummy 2>/dev/null ||
		ip -n "$1" link add name rmd0 type ifb 2>/dev/null
	return 0
}
e2e_own_netns rmt ctl_links

# ---- inside -------------------------------------------------------------
PIN=/sys/fs/bpf/rmt-ctl
PIN2=/sys/fs/bpf/rmt-ctl-copy
TMP=$(mktemp -d /tmp/rmt-ctl.XXXXXX)

cleanup()
{
	for i in rmv0 rmv1 rmv2 rmd0; do
		"$LOAD" detach "$i" --pin-dir "$PIN" >/dev/null 2>&1
		"$LOAD" detach "$i" --pin-dir "$PIN2" >/dev/null 2>&1
	done
	rm -rf "$PIN" "$PIN2" "$TMP"
	umount /sys/fs/bpf 2>/dev/null
}
trap cleanup EXIT

for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do echo 1 >"$f"; done 2>/dev/null

# Every pinned map, as bpftool dumps it (ring slots hold inner map ids,
# so a swapped ring shows too).
digest()
{
	local f
	for f in "$PIN"/*; do
		echo "== $f"
		bpftool -j map dump pinned "$f" 2>&1
	done | sha256sum | cut -d' ' -f1
}

json_ok() { python3 -m json.tool >/dev/null 2>&1; }

# jget JSON EXPR: python expression over the parsed document `d`.
jget()
{
	python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

# run_json DESC cmd...: exit 0 and valid JSON on stdout.
run_json()
{
	local d=$1 out
	shift
	if out=$("$@" 2>"$TMP/err") && printf '%s' "$out" | json_ok; then
		e2e_pass "$d"
	else
		e2e_fail "$d: $(head -c 300 <<<"$out") $(cat "$TMP/err")"
	fi
}

# bad WANT DESC cmd...: exit code WANT, one line on stderr, maps unchanged.
bad()
{
	local want=$1 d=$2 before after rc lines
	shift 2
	before=$(digest)
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	after=$(digest)
	lines=$(wc -l <"$TMP/err")
	if [ "$rc" -eq "$want" ] && [ "$before" = "$after" ] && [ "$lines" -eq 1 ]; then
		e2e_pass "$d -> $rc: $(cat "$TMP/err")"
	else
		e2e_fail "$d: rc $rc (want $want), maps $([ "$before" = "$after" ] && echo same || echo CHANGED), stderr: $(cat "$TMP/err")"
	fi
}

# unchanged DESC cmd...: exit 0 and maps unchanged (dry runs).
unchanged()
{
	local d=$1 before after
	shift
	before=$(digest)
	if "$@" >"$TMP/out" 2>"$TMP/err" && after=$(digest) && [ "$before" = "$after" ]; then
		e2e_pass "$d"
	else
		e2e_fail "$d: $(cat "$TMP/err") maps $([ "$before" = "${after:-}" ] && echo same || echo CHANGED)"
	fi
}

L() { "$LOAD" --pin-dir "$PIN" "$@"; }
C() { "$CTL" --pin-dir "$PIN" "$@"; }

# ---- ringload -------------------------------------------------------------
e2e_check "attach rmv0 native" L attach rmv0 --mode native
st=$(L status --json)
e2e_check "status --json is JSON" json_ok <<<"$st"
id0=$(jget "$st" 'd["prog_id"]')
e2e_check "status pin_dir" test "$(jget "$st" 'd["pin_dir"]')" = "$PIN"
e2e_check "status prog_id is the program on rmv0" \
	sh -c "ip link show rmv0 | grep -q 'prog/xdp id $id0 '"
e2e_check "status mode native" test "$(jget "$st" 'd["interfaces"][0]["mode"]')" = native
bad 1 "attach rmv0 again" L attach rmv0
e2e_check "attach rmv1 generic" L attach rmv1 --mode generic
e2e_check "rmv1 in generic mode" sh -c "ip link show rmv1 | grep -q xdpgeneric"
st=$(L status --json)
id1=$(jget "$st" '[i["prog_id"] for i in d["interfaces"] if i["name"]=="rmv1"][0]')
# state_maps ID: the maps of program ID but its own instance's read-only
# data (rm_chain_slot) and chain (rm_chain.h), which each load has
state_maps()
{
	bpftool prog show id "$1" -j | python3 -c '
import json, subprocess, sys
ids = json.load(sys.stdin)["map_ids"]
keep = []
for i in ids:
    m = json.loads(subprocess.check_output(["bpftool", "map", "show", "id", str(i), "-j"]))
    if not m["name"].endswith(".rodata") and m["name"] != "rm_chain":
        keep.append(i)
print(sorted(keep))'
}
maps0=$(state_maps "$id0")
maps1=$(state_maps "$id1")
e2e_check "both interfaces share the same maps" test -n "$maps0" -a "$maps0" = "$maps1"
# and those are the pinned state's: rm_config as pinned is among them
cfg_id=$(bpftool map show pinned "$PIN/rm_config" -j | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
e2e_check "the shared maps are the pinned state (rm_config id $cfg_id)" \
	python3 -c "import sys; sys.exit(0 if $cfg_id in $maps0 else 1)"
e2e_check "status text" sh -c "\"$LOAD\" --pin-dir $PIN status | grep -q rmv1"
if [ -e /sys/class/net/rmd0 ]; then
	bad 1 "attach native without driver support" L attach rmd0 --mode native
	e2e_check "the error suggests generic mode" grep -q -- "--mode generic" "$TMP/err"
	e2e_check "attach --mode auto falls back" sh -c "\"$LOAD\" --pin-dir $PIN attach rmd0 --mode auto 2>$TMP/err >/dev/null"
	e2e_check "the fallback is said on stderr" grep -q "falling back to generic" "$TMP/err"
	e2e_check "rmd0 runs generic XDP" sh -c "ip link show rmd0 | grep -q xdpgeneric"
	e2e_check "detach rmd0" L detach rmd0
else
	e2e_skip "no dummy or ifb device for the --mode auto fallback"
fi

# ---- ringctl: services and nodes ----------------------------------------
e2e_check "service add web" C service add web --vip 198.18.0.10 --port 80 --proto tcp --vnodes 100
e2e_check "service add dns (v6, 3-tuple)" C service add dns --vip 2001:db8::53 --port 53 --proto udp --hash 3tuple --vnodes 50
e2e_check "node add web a" C node add web a --mac 02:00:00:00:00:0a --dev rmv0
e2e_check "node add web b" C node add web b --mac 02:00:00:00:00:0b --dev rmv2 --weight 2
e2e_check "node add web c" C node add web c --mac 02:00:00:00:00:0c --dev rmv0
e2e_check "node add dns a" C node add dns a --mac 02:00:00:00:00:1a --dev rmv0
e2e_check "node set weight" C node set web c --weight 3
e2e_check "node set drain" C node set web c --drain
e2e_check "node set active" C node set web c --active
e2e_check "node set down" C node set web a --down
e2e_check "node set active again" C node set web a --active

# ---- node states: drain keeps the gen, down moves it on ------------------
# nodeval NODE KEY: KEY of node NODE of web in show --json
nodeval()
{
	jget "$(C show web --json)" "[n for s in d['services'] for n in s['nodes'] if n['name'] == '$1'][0]['$2']"
}
g0=$(nodeval c gen)
e2e_check "node set --drain" C node set web c --drain
e2e_check "drained: state draining" test "$(nodeval c state)" = draining
e2e_check "drained: gen unchanged ($g0)" test "$(nodeval c gen)" = "$g0"
e2e_check "drained: out of the ring" test "$(nodeval c keys)" = 0
e2e_check "node set --active after a drain" C node set web c --active
e2e_check "active again: gen unchanged, back in the ring" \
	test "$(nodeval c gen) $(nodeval c state) $(( $(nodeval c keys) > 0 ))" = "$g0 active 1"
e2e_check "node set --down" C node set web c --down
e2e_check "down: state down, gen + 1, out of the ring" \
	test "$(nodeval c state) $(nodeval c gen) $(nodeval c keys)" = "down $((g0 + 1)) 0"
e2e_check "node set --down again keeps the gen" C node set web c --down
e2e_check "down twice: gen + 1 only" test "$(nodeval c gen)" = $((g0 + 1))
e2e_check "node set --drain after down" C node set web c --drain
e2e_check "down -> draining: gen stays moved on" test "$(nodeval c state) $(nodeval c gen)" = "draining $((g0 + 1))"
e2e_check "node set --active after down" C node set web c --active
e2e_check "active after down: the new gen" test "$(nodeval c state) $(nodeval c gen)" = "active $((g0 + 1))"
C node set web c --drain >"$TMP/out"
e2e_check "node set --drain says the node keeps its flows" grep -q "draining (no new flows; keeps the ones it has)" "$TMP/out"
C node set web c --active >/dev/null
C node add web z --mac 02:00:00:00:00:1f --dev rmv0 >/dev/null
sz=$(nodeval z id)
gz=$(nodeval z gen)
C node set web z --drain >/dev/null
e2e_check "node del after a drain" C node del web z
C node add web y --mac 02:00:00:00:00:1e --dev rmv0 >/dev/null
e2e_check "second chance: a slot freed within the handover window is not reused" \
	test "$(nodeval y id)" != "$sz"
C node del web y >/dev/null
C config --handover-window 0 >/dev/null
C node add web x --mac 02:00:00:00:00:1d --dev rmv0 >/dev/null
e2e_check "window 0: a node reusing the slot gets a new gen" \
	test "$(nodeval x id) $(nodeval x gen)" = "$sz $((gz + 1))"
C node del web x >/dev/null
C config --handover-window 15m >/dev/null
# show reads a remembered ring's header alone: its entries and age must
# still be the replaced ring's
before=$(jget "$(C show web --json)" "d['services'][0]['entries']")
C node add web w --mac 02:00:00:00:00:1c --dev rmv0 >/dev/null
e2e_check "show --json: the ring a change replaced is generation 0, live, with its $before entries" \
	test "$(jget "$(C show web --json)" "(lambda g: (g['gen'], g['entries'], g['live'], 0 <= g['age_s'] < 60))(d['services'][0]['second_chance']['generations'][0])")" = "(0, $before, True, True)"
e2e_check "show: the remembered rings named with their age" \
	sh -c "\"$CTL\" --pin-dir $PIN show web | grep -Eq 'remembered rings: [0-9]+s'"
C node del web w >/dev/null

# ---- connection counts, counters, settings --------------------------------
sh_=$(C show --json)
e2e_check "show --json: every node has conns and conns_recent" \
	test "$(jget "$sh_" 'all("conns" in n and "conns_recent" in n for s in d["services"] for n in s["nodes"])')" = True
e2e_check "show --json: no connection on any node (links down)" \
	test "$(jget "$sh_" 'sum(s["conns"] for s in d["services"])')" = 0
pinned_max=$(bpftool -j map show pinned "$PIN/rm_conns" | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_entries"])')
e2e_check "show --json: conn_table.max_entries is the pinned table's ($pinned_max)" \
	test "$(jget "$sh_" 'd["conn_table"]["max_entries"]')" = "$pinned_max"
e2e_check "show text has the CONNS column and the table line" \
	sh -c "\"$CTL\" --pin-dir $PIN show web | grep -q CONNS && \"$CTL\" --pin-dir $PIN show | grep -q '^connection table: 0 of $pinned_max entries'"
st_=$(C stats --json)
e2e_check "stats --json has every conn counter" \
	test "$(jget "$st_" 'sorted(k for k in d["counters"] if k.startswith("conn-"))')" = \
	"['conn-hit', 'conn-insert', 'conn-insert-limited', 'conn-miss', 'conn-stale']"
e2e_check "stats text has the conn counters" sh -c "\"$CTL\" --pin-dir $PIN stats | grep -q '^conn-insert-limited '"
run_json "config --json" C config --json
cf=$(C config --json)
e2e_check "config: the defaults (udp 60 s, 200000 inserts/s)" \
	test "$(jget "$cf" 'd["udp_timeout_s"], d["conn_insert_rate"]')" = "(60, 200000)"
e2e_check "config: the table's size" test "$(jget "$cf" 'd["conn_table"]["max_entries"]')" = "$pinned_max"
e2e_check "ringload status: the table's size" \
	test "$(jget "$(L status --json)" 'd["conn_table"]')" = "$pinned_max"
unchanged "config --dry-run" C config --udp-timeout 5 --dry-run
e2e_check "config --udp-timeout 30 --conn-insert-rate 5000" C config --udp-timeout 30 --conn-insert-rate 5000
cf=$(C config --json)
e2e_check "config reads back" test "$(jget "$cf" 'd["udp_timeout_s"], d["conn_insert_rate"]')" = "(30, 5000)"
e2e_check "config --conn-insert-rate 0 (no limit) alone" C config --conn-insert-rate 0
e2e_check "config: only the rate changed" test "$(jget "$(C config --json)" 'd["udp_timeout_s"], d["conn_insert_rate"]')" = "(30, 0)"
e2e_check "config text" sh -c "\"$CTL\" --pin-dir $PIN config | grep -q '^udp-timeout *30 s'"
C config --conn-insert-rate 5000 >/dev/null
run_json "service list --json" C service list --json
run_json "show --json" C show --json
run_json "show web --json" C show web --json
run_json "lookup --json" C lookup web --src 198.18.1.1 --sport 40000 --json
run_json "lookup 3-tuple v6 --json" C lookup dns --src 2001:db8::1 --json
run_json "stats --json" C stats --json
run_json "seed --json" C seed --json
run_json "dry run --json" C node add web d --mac 02:00:00:00:00:0d --dev rmv0 --dry-run --json
sh_=$(C show --json)
e2e_check "show: web has 3 active nodes" test "$(jget "$sh_" '[n["state"] for s in d["services"] if s["name"]=="web" for n in s["nodes"]].count("active")')" = 3
e2e_check "show: live rings match the configuration" test "$(jget "$sh_" 'all(s["ring_matches"] for s in d["services"])')" = True
e2e_check "show: shares add up to 1" test "$(jget "$sh_" 'round(sum(n["share"] for s in d["services"] if s["name"]=="web" for n in s["nodes"]), 9)')" = 1.0
lk=$(C lookup web --src 198.18.1.1 --sport 40000 --json)
e2e_check "lookup names a node of web" sh -c "echo '$(jget "$lk" 'd["node"]')' | grep -qx '[abc]'"
e2e_check "lookup dst defaults to the VIP" test "$(jget "$lk" 'd["dst"]')" = 198.18.0.10
# a batch of flows (--sport-file) names the nodes single lookups name
for p in 40000 40001 40002 1 65535; do
	echo "$p $(jget "$(C lookup web --src 198.18.1.1 --sport "$p" --json)" 'd["node"]')"
done >"$TMP/single"
printf '40000\n40001\n 40002 \n1\n65535\n' >"$TMP/ports"
e2e_check "lookup --sport-file: SPORT NODE lines equal to single lookups" \
	sh -c "\"$CTL\" --pin-dir $PIN lookup web --src 198.18.1.1 --sport-file - <$TMP/ports | cmp -s - $TMP/single"
lk=$(C lookup web --src 198.18.1.1 --sport-file "$TMP/ports" --json)
e2e_check "lookup --sport-file --json: an array, one object a flow" test \
	"$(jget "$lk" '" ".join("%d %s" % (x["sport"], x["node"]) for x in d)')" = \
	"$(tr '\n' ' ' <"$TMP/single" | sed 's/ $//')"
e2e_check "lookup --sport-file on a 3-tuple service: every port one flow" test \
	"$(printf '1\n2\n' | C lookup dns --src 2001:db8::1 --sport-file - | cut -d' ' -f2 | sort -u | wc -l)" = 1
printf '40000\nnot-a-port\n' >"$TMP/badports"
printf '70000\n' >"$TMP/bigport"
e2e_check "show text has the bar chart" sh -c "\"$CTL\" --pin-dir $PIN show web | grep -q '#'"
e2e_check "stats text" sh -c "\"$CTL\" --pin-dir $PIN stats | grep -q dropped-no-node"
e2e_check "rm_tx_ports holds rmv2" sh -c "bpftool map dump pinned $PIN/rm_tx_ports | grep -q \"$(cat /sys/class/net/rmv2/ifindex)\""

# ---- dry runs change nothing --------------------------------------------
unchanged "node add --dry-run" C node add web d --mac 02:00:00:00:00:0d --dev rmv0 --dry-run
e2e_check "dry run reports the move" grep -q "moved:" "$TMP/out"
unchanged "node del --dry-run" C node del web b --dry-run
unchanged "node set --dry-run" C node set web b --weight 7 --dry-run
unchanged "service add --dry-run" C service add x --vip 198.18.0.99 --port 1 --proto tcp --dry-run
unchanged "service del --dry-run" C service del web --dry-run
unchanged "seed --set --dry-run" C seed --set 000102030405060708090a0b0c0d0e0f --dry-run
unchanged "restore --dry-run" sh -c "\"$CTL\" --pin-dir $PIN save | \"$CTL\" --pin-dir $PIN restore - --dry-run"

# ---- bad input: exit code, one line, nothing changed ---------------------
bad 2 "service add without --vip" C service add x --port 1 --proto tcp
bad 2 "service add bad vip" C service add x --vip 1.2.3 --port 1 --proto tcp
bad 2 "service add port out of range" C service add x --vip 198.18.0.9 --port 70000 --proto tcp
bad 2 "service add bad proto" C service add x --vip 198.18.0.9 --port 1 --proto sctp
bad 2 "service add bad hash" C service add x --vip 198.18.0.9 --port 1 --proto tcp --hash 4tuple
bad 2 "service add bad name" C service add 'x/y' --vip 198.18.0.9 --port 1 --proto tcp
bad 2 "service add vnodes out of range" C service add x --vip 198.18.0.9 --port 1 --proto tcp --vnodes 0
bad 1 "service add duplicate name" C service add web --vip 198.18.0.9 --port 1 --proto tcp
bad 1 "service add duplicate vip/port/proto" C service add x --vip 198.18.0.10 --port 80 --proto tcp
bad 1 "service del unknown" C service del nosuch
bad 2 "node add bad mac" C node add web d --mac zz:00:00:00:00:01 --dev rmv0
bad 2 "node add without --dev" C node add web d --mac 02:00:00:00:00:0d
bad 2 "node add weight 0" C node add web d --mac 02:00:00:00:00:0d --dev rmv0 --weight 0
bad 2 "node add weight 101" C node add web d --mac 02:00:00:00:00:0d --dev rmv0 --weight 101
bad 1 "node add multicast mac" C node add web d --mac 01:00:5e:00:00:01 --dev rmv0
bad 1 "node add unknown service" C node add nosuch d --mac 02:00:00:00:00:0d --dev rmv0
bad 1 "node add duplicate" C node add web a --mac 02:00:00:00:00:0d --dev rmv0
bad 1 "node add missing interface" C node add web d --mac 02:00:00:00:00:0d --dev nosuch0
bad 1 "node del unknown" C node del web nosuch
bad 2 "node set nothing" C node set web a
bad 2 "node set two states" C node set web a --drain --down
bad 1 "node set unknown" C node set web nosuch --weight 2
bad 2 "lookup bad src" C lookup web --src nonsense --sport 1
bad 2 "lookup wrong family" C lookup web --src 2001:db8::1 --sport 1
bad 1 "lookup unknown service" C lookup nosuch --src 198.18.1.1 --sport 1
bad 2 "lookup --sport-file with a line that is no port" C lookup web --src 198.18.1.1 --sport-file "$TMP/badports"
bad 2 "lookup --sport-file with a port over 65535" C lookup web --src 198.18.1.1 --sport-file "$TMP/bigport"
bad 2 "lookup --sport and --sport-file" C lookup web --src 198.18.1.1 --sport 1 --sport-file "$TMP/bigport"
bad 1 "lookup --sport-file missing" C lookup web --src 198.18.1.1 --sport-file "$TMP/nosuch"
bad 1 "show unknown service" C show nosuch
bad 2 "seed --set bad hex" C seed --set 1234
bad 2 "config --udp-timeout 0" C config --udp-timeout 0
bad 2 "config --udp-timeout over a day" C config --udp-timeout 86401
bad 2 "config --udp-timeout text" C config --udp-timeout 5s
bad 2 "config --conn-insert-rate negative" C config --conn-insert-rate -1
bad 2 "config --conn-insert-rate over 2^32" C config --conn-insert-rate 4294967296
bad 2 "config with an argument" C config frob
bad 2 "config set with an argument" C config frob --udp-timeout 5
bad 2 "unknown command" C frobnicate
bad 2 "unknown option" C show --frob
bad 1 "no state at pin dir" "$CTL" --pin-dir /sys/fs/bpf/nosuch show
printf 'service add ok --vip 198.18.0.70 --port 7 --proto tcp\nservice add x --vip bogus --port 1 --proto tcp\n' >"$TMP/bad1"
bad 2 "restore: malformed line" C restore "$TMP/bad1"
printf 'service add ok --vip 198.18.0.70 --port 7 --proto tcp\nnode add nosuch a --mac 02:00:00:00:00:01 --dev rmv0\n' >"$TMP/bad2"
bad 1 "restore: unknown service" C restore "$TMP/bad2"
bad 1 "restore: missing file" C restore "$TMP/nosuch"
if command -v setpriv >/dev/null; then
	bad 1 "not root" setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" --pin-dir "$PIN" show
fi
bad 2 "ringload bad mode" L attach rmv2 --mode turbo
bad 2 "ringload --conn-table 0" L attach rmv2 --conn-table 0
bad 2 "ringload --conn-table text" L attach rmv2 --conn-table many
bad 2 "ringload --conn-table over the limit" L attach rmv2 --conn-table 4294967295
bad 2 "ringload --conn-table on detach" L detach rmv0 --conn-table 4096
bad 1 "ringload attach with another --conn-table than the pinned one" \
	L attach rmv2 --mode generic --conn-table 1000
e2e_check "the refusal says how to resize" grep -q "ringload purge.*--conn-table 1000" "$TMP/err"
e2e_check "rmv2 runs nothing after the refusal" sh -c "! ip link show rmv2 | grep -q prog/xdp"
bad 1 "ringload missing interface" L attach nosuch0
bad 1 "ringload detach not attached" L detach rmv2
bad 1 "ringload purge while attached" L purge

# ---- save / restore ------------------------------------------------------
C node set web b --drain >/dev/null
C save >"$TMP/save1"
e2e_check "save lists the drained node" grep -q "node set web b --drain" "$TMP/save1"
e2e_check "save has the connection-table settings" grep -qx "config --udp-timeout 30 --conn-insert-rate 5000" "$TMP/save1"
before=$(digest)
e2e_check "restore of the same configuration" C restore "$TMP/save1"
C save >"$TMP/save2"
e2e_check "save after restore is identical" cmp -s "$TMP/save1" "$TMP/save2"
e2e_check "attach rmv2 to a second pin dir, --conn-table 4096" "$LOAD" --pin-dir "$PIN2" attach rmv2 --mode generic --conn-table 4096
max2=$(bpftool -j map show pinned "$PIN2/rm_conns" | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_entries"])')
# the kernel gives every possible CPU the same share of the table
want2=$(python3 -c '
n = 0
for r in open("/sys/devices/system/cpu/possible").read().strip().split(","):
    a, _, b = r.partition("-")
    n += int(b or a) - int(a) + 1
print(-(-4096 // n) * n)')
e2e_check "second pin dir: a table of 4096 entries, rounded up to whole CPUs ($max2)" \
	test "$max2" = "$want2"
e2e_check "ringctl config reports it" test "$(jget "$("$CTL" --pin-dir "$PIN2" config --json)" 'd["conn_table"]["max_entries"]')" = "$max2"
e2e_check "restore into the second pin dir" "$CTL" --pin-dir "$PIN2" restore - <"$TMP/save1"
"$CTL" --pin-dir "$PIN2" save >"$TMP/save3"
e2e_check "second pin dir saves the same configuration" cmp -s "$TMP/save1" "$TMP/save3"
# A map's entries in key order; node gens and the time a slot was freed
# (second chance keeps it from reuse for the handover window) are history,
# not configuration.
norm_dump()
{
	bpftool -j map dump pinned "$1" | python3 -c '
import json, sys
out = []
for e in json.load(sys.stdin):
    f = e.get("formatted", e)
    if isinstance(f.get("value"), dict):
        f["value"].pop("gen", None)
        f["value"].pop("freed_ns", None)
    out.append(json.dumps(f, sort_keys=True))
print("\n".join(sorted(out)))'
}
for m in rm_config rm_svc_meta rm_nodes rm_services rm_tx_ports; do
	e2e_check "second pin dir: $m identical" cmp -s \
		<(norm_dump "$PIN/$m") <(norm_dump "$PIN2/$m")
done
e2e_check "second pin dir: lookups agree" test \
	"$(C lookup web --src 198.18.7.7 --sport 999 --json)" = \
	"$("$CTL" --pin-dir "$PIN2" lookup web --src 198.18.7.7 --sport 999 --json)"
C service del dns >/dev/null
e2e_check "restore brings back a deleted service" C restore "$TMP/save1"
e2e_check "seed --set" C seed --set 000102030405060708090a0b0c0d0e0f
e2e_check "seed reads back" test "$(C seed)" = 000102030405060708090a0b0c0d0e0f

# ---- detach, re-attach, purge --------------------------------------------
cfg=$(C save)
e2e_check "detach rmv0" L detach rmv0
e2e_check "rmv0 runs nothing" sh -c "! ip link show rmv0 | grep -q prog/xdp"
st=$(L status --json)
e2e_check "status lists only rmv1" test "$(jget "$st" '[i["name"] for i in d["interfaces"]]')" = "['rmv1']"
e2e_check "detach rmv1" L detach rmv1
e2e_check "state survives detach" test "$(C save)" = "$cfg"
e2e_check "re-attach rmv0 generic" L attach rmv0 --mode generic
e2e_check "re-attach keeps services and nodes" test "$(C save)" = "$cfg"
st=$(L status --json)
e2e_check "status after re-attach" test "$(jget "$st" 'd["services"], d["nodes"]')" = "(2, 4)"
e2e_check "detach --purge" L detach rmv0 --purge
e2e_check "pin dir removed" test ! -e "$PIN"
# ---- a restore near the node limit reuses the slots it frees -----------
# 4 services x 1,000 nodes (4,000 of the 4,096 slots), then another 4,000:
# the second fits only in the slots of the nodes it deletes
near_limit_conf()
{
	local pfx=$1 mac=$2 s i
	echo "seed --set 000102030405060708090a0b0c0d0e0f"
	for s in 0 1 2 3; do
		echo "service add s$s --vip 198.18.2.$((s + 1)) --port 80 --proto tcp --vnodes 4"
		for ((i = 0; i < 1000; i++)); do
			printf 'node add s%d %s%d --mac 02:%s:%02x:%02x:%02x:01 --dev rmv2\n' \
				"$s" "$pfx" "$i" "$mac" "$s" $((i >> 8)) $((i & 255))
		done
	done
}
near_limit_conf a 0a >"$TMP/near-a.conf"
near_limit_conf b 0b >"$TMP/near-b.conf"
C2() { "$CTL" --pin-dir "$PIN2" "$@"; }
e2e_check "restore 4,000 nodes" C2 restore "$TMP/near-a.conf"
e2e_check "restore 4,000 other nodes (only in the slots the restore frees)" \
	C2 restore "$TMP/near-b.conf"
# a 4,000-node document is over the 128 KiB a single argument may be
C2 show --json >"$TMP/near-show.json"
jfile() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" <"$TMP/near-show.json"; }
e2e_check "after it: 4,000 nodes, all of the new configuration" test \
	"$(jfile '(sum(1 for s in d["services"] for n in s["nodes"]), all(n["name"].startswith("b") for s in d["services"] for n in s["nodes"]))')" = "(4000, True)"
e2e_check "after it: every live ring matches its records" test \
	"$(jfile 'all(s["ring_matches"] for s in d["services"])')" = True
e2e_check "after it: a flow's owner is a new node" sh -c \
	"\"$CTL\" --pin-dir $PIN2 lookup s0 --src 198.18.9.9 --sport 4242 | grep -q 'node b[0-9]'"
e2e_check "and back: restore the first 4,000" C2 restore "$TMP/near-a.conf"
{
	cat "$TMP/near-a.conf"
	for ((i = 0; i < 100; i++)); do
		printf 'node add s%d extra%d --mac 02:0c:00:00:%02x:01 --dev rmv2\n' $((i % 4)) "$i" "$i"
	done
} >"$TMP/near-over.conf"
e2e_check "a restore of more nodes than the limit still refuses, naming it" sh -c \
	"! \"$CTL\" --pin-dir $PIN2 restore $TMP/near-over.conf 2>$TMP/near-over.err && grep -q 'no free node slot' $TMP/near-over.err"
e2e_check "... and changed nothing" test "$(C2 save | grep -c '^node add s0 a')" = 1000
e2e_check "detach rmv2 (second pin dir)" "$LOAD" --pin-dir "$PIN2" detach rmv2
e2e_check "re-attach without --conn-table takes the pinned table" "$LOAD" --pin-dir "$PIN2" attach rmv2 --mode generic
e2e_check "... of the size it had" test "$(bpftool -j map show pinned "$PIN2/rm_conns" | python3 -c 'import json,sys; print(json.load(sys.stdin)["max_entries"])')" = "$max2"
e2e_check "re-attach with the same --conn-table" sh -c "\"$LOAD\" --pin-dir $PIN2 detach rmv2 >/dev/null && \"$LOAD\" --pin-dir $PIN2 attach rmv2 --mode generic --conn-table 4096 >/dev/null"
e2e_check "detach rmv2 --purge (second pin dir)" "$LOAD" --pin-dir "$PIN2" detach rmv2 --purge
e2e_check "nothing attached any more" sh -c "! ip link | grep -q prog/xdp"

e2e_finish
