#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sharding DNS by QNAME. Three caching resolvers (Debian's dnsmasq, bound
# to the VIP on each node's lo, replies by L2 DSR) behind the director
# forward to an authoritative server (A records, TTL 3600) in the client's
# namespace on 198.18.0.53: a minimal one in tests/e2e/keys_client.py that
# records which resolver asked for which name (dnsmasq's own query log
# drops lines under load). A client sends 2,000 names x 5 queries, each
# from a fresh source port, each query's letters in another mix of upper
# and lower case.
#   --key dns: every query answered; the authoritative server saw each
#     name exactly once, asked by the resolver `ringctl lookup --key-file`
#     (and --qname, in any case) names the owner;
#   --key flow: the same workload; the authoritative server saw names up
#     to once per resolver.
# Both counts are printed: the cache-locality gain in one number.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAMES=2000
REPEAT=5
AUTH4=198.18.0.53
ZONE=zone.test
CLIENT="python3 $E2E_ROOT/tests/e2e/keys_client.py"

e2e_require_director
command -v dnsmasq >/dev/null 2>&1 ||
	e2e_die "dnsmasq not installed: make deps (Debian package dnsmasq-base)"
e2e_setup 3
work=$TB_STATE_DIR/keys-dns
mkdir -p "$work"

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"

# a DNS server at addr answers (the probe's name is no host- name)
dns_ready()
{
	local ns=$1 addr=$2 t
	for ((t = 0; t < 100; t++)); do
		tb_exec "$ns" python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
s.sendto(struct.pack("!HHHHHH", 1, 0x100, 1, 0, 0, 0) +
         b"\x05ready\x04zone\x04test\x00\x00\x01\x00\x01", (sys.argv[1], 53))
s.recv(512)' "$addr" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

tb_exec "$TB_CLIENT_NS" ip addr add "$AUTH4/24" dev "$TB_CLIENT_IF" ||
	e2e_die "authoritative address"
tb_spawn "$TB_CLIENT_NS" "$work/auth.out" python3 \
	"$E2E_ROOT/tests/e2e/keys_client.py" dns-auth "$AUTH4" "$ZONE" \
	"$work/auth.log" 600
dns_ready "$TB_CLIENT_NS" "$AUTH4" || e2e_die "authoritative server"

# caching dnsmasq, nothing read from /etc, in the foreground
declare -a RES_PID
start_resolvers()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		tb_spawn "${TB_NODE_NS[i]}" "$work/res$i.out" dnsmasq \
			--keep-in-foreground --conf-file=/dev/null --no-hosts \
			--no-resolv --bind-interfaces --user=root --group=root \
			--pid-file="$work/res$i.pid" --listen-address="$TB_VIP4" \
			--server="$AUTH4" --cache-size=10000 \
			--dns-forward-max=1000
		RES_PID[i]=$TB_LAST_PID
		dns_ready "${TB_NODE_NS[i]}" "$TB_VIP4" || return 1
	done
}
stop_resolvers()
{
	local i t
	for ((i = 1; i <= TB_NODES; i++)); do
		kill "${RES_PID[i]}" 2>/dev/null
		for ((t = 0; t < 50; t++)); do
			kill -0 "${RES_PID[i]}" 2>/dev/null || break
			sleep 0.1
		done
	done
}
start_resolvers || e2e_die "resolvers"
e2e_pass "authoritative server on $AUTH4, caching dnsmasq on node1..node$TB_NODES at $TB_VIP4"

seq 0 $((NAMES - 1)) | sed "s/^/host-/; s/\$/.$ZONE/" >"$work/names"
for ((i = 1; i <= TB_NODES; i++)); do
	echo "${TB_NODE_IP4[i]} ${TB_NODE_NAME[i]}"
done >"$work/node-ips"

svc_dns()
{
	e2e_ctl service del dns >/dev/null 2>&1
	e2e_ctl service add dns --vip "$TB_VIP4" --port 53 --proto udp \
		"$@" >/dev/null && e2e_add_nodes dns
}
# run the workload; the authoritative server's log lines of it in $1
workload()
{
	local out=$1 before st
	before=$(wc -l <"$work/auth.log")
	st=$(tb_exec "$TB_CLIENT_NS" $CLIENT dns "$TB_VIP4" "$work/names" \
		--repeat "$REPEAT" --mixed-case)
	e2e_log "client: $st"
	e2e_expect_eq "$2: every query answered" \
		"$(echo "$st" | e2e_json 'd["noerror"]')" $((NAMES * REPEAT))
	tail -n +$((before + 1)) "$work/auth.log" | grep '^host-' >"$out"
}

# ---- --key dns ------------------------------------------------------------
svc_dns --key dns || e2e_die "service dns --key dns"
workload "$work/auth-keyed" keyed
auth_keyed=$(wc -l <"$work/auth-keyed")
e2e_ctl lookup dns --key-file "$work/names" >"$work/owners" ||
	e2e_fail "ringctl lookup --key-file"
if res=$(python3 - "$work/owners" "$work/auth-keyed" "$work/node-ips" "$NAMES" <<'EOF'
import collections, sys
owner = dict(l.split() for l in open(sys.argv[1]))
node_of = dict(l.split() for l in open(sys.argv[3]))
asked = collections.defaultdict(list)
for l in open(sys.argv[2]):
    name, src = l.split()
    asked[name].append(node_of.get(src, src))
names = int(sys.argv[4])
errs = []
if len(owner) != names:
    errs.append("%d owners for %d names" % (len(owner), names))
never = sum(1 for n in owner if n not in asked)
several = sum(1 for v in asked.values() if len(v) > 1)
wrong = sum(1 for n, v in asked.items() if set(v) != {owner.get(n)})
if never or several or wrong:
    errs.append("%d names never fetched, %d fetched more than once, %d "
                "by another resolver than their owner"
                % (never, several, wrong))
print("; ".join(errs) if errs else "per resolver %s" %
      dict(sorted(collections.Counter(owner.values()).items())))
sys.exit(1 if errs else 0)
EOF
); then
	e2e_pass "keyed: each name fetched once, by its lookup owner, for $REPEAT mixed-case queries ($res)"
else
	e2e_fail "keyed: $res"
fi
e2e_expect_eq "keyed: the authoritative server saw each name once" \
	"$auth_keyed" "$NAMES"
n1=$(sed -n 7p "$work/names")
up=$(echo "$n1" | tr 'a-z' 'A-Z')
e2e_expect_eq "lookup --qname $up. names the --key-file owner of $n1" \
	"$(e2e_ctl lookup dns --qname "$up." --json | e2e_json 'd["node"]')" \
	"$(awk -v k="$n1" '$1 == k { print $2 }' "$work/owners")"

# ---- --key flow: the same workload, caches emptied --------------------------
stop_resolvers
start_resolvers || e2e_die "resolvers restarted"
svc_dns --key flow || e2e_die "service dns --key flow"
workload "$work/auth-flow" flow
auth_flow=$(wc -l <"$work/auth-flow")
# 5 queries over 3 resolvers reach 3 * (1 - (2/3)^5) = 2.6 of them on
# average: about 5,200 fetches
e2e_check "flow: the authoritative server saw names up to once per resolver ($auth_flow fetches)" \
	test "$auth_flow" -ge $((NAMES * 2)) -a "$auth_flow" -le $((NAMES * TB_NODES))
e2e_log "authoritative fetches for $NAMES names x $REPEAT queries:" \
	"--key dns $auth_keyed, --key flow $auth_flow"
echo "RESULT keys_dns auth_fetches_keyed=$auth_keyed auth_fetches_flow=$auth_flow" \
	"names=$NAMES repeat=$REPEAT resolvers=$TB_NODES"

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_expect_eq "no dnsmasq of the test left running" \
	"$(pgrep -x dnsmasq | while read -r pid; do ip netns identify "$pid"; done | grep -c -- "-$suf\$")" 0
e2e_finish
