#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringctl doctor: healthy on a working testbed (exit 0), and each check
# names the thing broken on purpose (exit 1, a finding of that check about
# that subject), one at a time, repaired before the next:
#   attached    program detached
#   xdp-mode    attached in generic mode
#   checksum    TX checksum offload back on at the client's veth
#   nodes       node2's interface down; node3's port deleted from the
#               devmap (and the fix the doctor prints repairs it); node1's
#               MTU lowered; GRO off at node2's end of its veth; a
#               neighbour entry with another MAC for node1
#   rp-filter   strict rp_filter on d-n2
#   rings       a service with no node
#   counters    UDP traffic to that service while the doctor samples
#   seed        the seed flag cleared in rm_config
#   conn-table  a 64-entry table filled by 300 UDP flows
# then healthy again once all is repaired (before the last one).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PIN=/sys/fs/bpf/ringmaster
e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/doctor
mkdir -p "$work"
e2e_service_up web tcp
dir_ns=$TB_DIR_NS

# doctor NAME [OPTS]: run the doctor (JSON) into $work/NAME.json; its exit
# status in $work/NAME.rc.
doctor()
{
	local name=$1
	shift
	e2e_ctl doctor --interval 300ms --json "$@" >"$work/$name.json" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}

# found NAME CHECK WORD: did check CHECK report a finding mentioning WORD?
found()
{
	python3 - "$work/$1.json" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
hit = [f for c in d["checks"] if c["check"] == sys.argv[2]
       for f in c["findings"]
       if sys.argv[3] in f["subject"] + " " + f["problem"]]
print("yes" if hit and not d["healthy"] else "no")
PY
}

# expect_finding NAME CHECK WORD DESC
expect_finding()
{
	e2e_expect_eq "$4: exit 1, check $2 names $3" \
		"$(cat "$work/$1.rc") $(found "$1" "$2" "$3")" "1 yes"
}

healthy()
{
	doctor "$1"
	e2e_expect_eq "$2: healthy, exit 0" \
		"$(cat "$work/$1.rc") $(e2e_json 'd["healthy"], d["findings"]' <"$work/$1.json" | tr '\n' ' ')" \
		"0 True 0 "
	[ "$(cat "$work/$1.rc")" = 0 ] || cat "$work/$1.json"
}

# some traffic first: neighbour entries for the nodes, as in real life
e2e_alloc_sports 30
e2e_flows "$work/warm" --vip "$TB_VIP4" --proto tcp --count 30 --sport-base "$E2E_SPORT"
healthy base "a working testbed"
e2e_ctl doctor --interval 300ms >"$work/base.txt"
e2e_check "text output ends with 'healthy: 0 findings'" grep -q '^healthy: 0 findings' "$work/base.txt"

# ---- the program --------------------------------------------------------
e2e_detach >/dev/null
doctor detached
expect_finding detached attached "no interface" "program detached"
doctor detached-if "$TB_DIR_IN"
expect_finding detached-if attached "$TB_DIR_IN" "program detached, doctor $TB_DIR_IN"
e2e_attach --mode generic >/dev/null 2>&1
doctor generic
expect_finding generic xdp-mode "$TB_DIR_IN" "generic mode"
e2e_detach >/dev/null && e2e_attach >/dev/null

ip netns exec "$TB_CLIENT_NS" ethtool -K "$TB_CLIENT_IF" tx on >/dev/null
doctor csum
expect_finding csum checksum "$TB_CLIENT_IF" "client veth with TX checksum offload"
ip netns exec "$TB_CLIENT_NS" ethtool -K "$TB_CLIENT_IF" tx off >/dev/null

# ---- nodes --------------------------------------------------------------
ip -n "$dir_ns" link set "${TB_DIR_NODE_IF[2]}" down
doctor down
expect_finding down nodes "web/node2" "node2's interface down"
ip -n "$dir_ns" link set "${TB_DIR_NODE_IF[2]}" up

key=$(printf '%08x' "${TB_DIR_NODE_IFINDEX[3]}" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4 \3 \2 \1/')
# shellcheck disable=SC2086 # the key is four bytes
tb_exec "$dir_ns" bpftool map delete pinned "$PIN/rm_tx_ports" key hex $key
doctor devmap
expect_finding devmap nodes "rm_tx_ports" "node3's port deleted from the devmap"
e2e_check "the fix the doctor prints (save | restore) puts it back" \
	tb_exec "$dir_ns" sh -c "'$RINGCTL' save | '$RINGCTL' restore - >/dev/null"

ip -n "$dir_ns" link set "${TB_DIR_NODE_IF[1]}" mtu 1400
doctor mtu
expect_finding mtu nodes "MTU 1400" "node1's MTU lowered"
ip -n "$dir_ns" link set "${TB_DIR_NODE_IF[1]}" mtu 1500

ip netns exec "${TB_NODE_NS[2]}" ethtool -K "${TB_NODE_IF[2]}" gro off >/dev/null
doctor gro
expect_finding gro nodes "web/node2" "GRO off at node2's end of the veth"
ip netns exec "${TB_NODE_NS[2]}" ethtool -K "${TB_NODE_IF[2]}" gro on >/dev/null

ip -n "$dir_ns" neigh replace "${TB_NODE_IP4[1]}" lladdr 02:00:5e:00:00:99 \
	dev "${TB_DIR_NODE_IF[1]}" nud permanent
doctor neigh
expect_finding neigh nodes "not among the 1 neighbour" "another MAC in node1's neighbour entry"
ip -n "$dir_ns" neigh replace "${TB_NODE_IP4[1]}" lladdr "${TB_NODE_MAC[1]}" \
	dev "${TB_DIR_NODE_IF[1]}" nud reachable

ip netns exec "$dir_ns" sysctl -qw "net.ipv4.conf.${TB_DIR_NODE_IF[2]}.rp_filter=1"
doctor rp
expect_finding rp rp-filter "${TB_DIR_NODE_IF[2]}" "strict rp_filter"
ip netns exec "$dir_ns" sysctl -qw "net.ipv4.conf.${TB_DIR_NODE_IF[2]}.rp_filter=0"

# ---- services, counters, seed -------------------------------------------
e2e_ctl service add dns --vip "$TB_VIP4" --port "$E2E_PORT" --proto udp >/dev/null
doctor empty
expect_finding empty rings dns "a service with no node"
# dropped flows wait out their timeout: 300 flows 20 at a time, 400 ms
# each, keep packets coming for the 6 s the doctor's window needs at most
e2e_alloc_sports 300
e2e_client --vip "$TB_VIP4" --proto udp --count 300 --parallel 20 \
	--sport-base "$E2E_SPORT" --retries 0 --timeout-ms 400 >/dev/null 2>&1 &
flood=$!
sleep 0.2
e2e_ctl doctor --interval 1s --json >"$work/drops.json" 2>/dev/null
echo $? >"$work/drops.rc"
wait "$flood"
expect_finding drops counters dropped-no-node "UDP traffic to the empty service"
e2e_ctl service del dns >/dev/null

tb_exec "$dir_ns" bpftool map dump pinned "$PIN/rm_config" -j >"$work/config.json"
read -r -a cfg < <(python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))[0]["value"]
print(*v)' "$work/config.json")
bad=("${cfg[@]}")
bad[20]=0x00 # rm_config.flags: seed 16 bytes, udp_timeout_s 4
tb_exec "$dir_ns" bpftool map update pinned "$PIN/rm_config" key hex 00 00 00 00 value hex "${bad[@]#0x}"
doctor seed
expect_finding seed seed rm_config "seed flag cleared"
tb_exec "$dir_ns" bpftool map update pinned "$PIN/rm_config" key hex 00 00 00 00 value hex "${cfg[@]#0x}"

healthy repaired "everything repaired"

# ---- a full connection table -------------------------------------------
e2e_ctl save >"$work/saved"
e2e_detach --purge >/dev/null
e2e_attach --conn-table 64 >/dev/null || e2e_die "attach --conn-table 64"
e2e_ctl restore - <"$work/saved" >/dev/null || e2e_die "restore"
e2e_ctl service add dns --vip "$TB_VIP4" --port "$E2E_PORT" --proto udp >/dev/null &&
	e2e_add_nodes dns || e2e_die "service dns"
e2e_alloc_sports 300
e2e_flows "$work/fill" --vip "$TB_VIP4" --proto udp --count 300 --sport-base "$E2E_SPORT"
e2e_ctl show --json | e2e_json 'd["conn_table"]' | sed 's/^/conn table: /'
doctor full
expect_finding full conn-table "entries in use" "300 UDP flows in a 64-entry table"

e2e_finish
