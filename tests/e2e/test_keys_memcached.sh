#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Sharding by key with real memcached servers (Debian's memcached, UDP on,
# bound to the VIP on each node's lo, replies by L2 DSR) behind the
# director. A client stores and reads 2,000 keys over UDP, every request
# from a fresh source port (tests/e2e/keys_client.py):
#   --key memcached: every read hits; each node, asked over TCP, holds
#     exactly the keys `ringctl lookup --key-file` names it the owner of,
#     and no key is on two nodes; the director counted key-routed for
#     every request and no fallback; the keyed service survives
#     save/restore and still routes;
#   --key flow (the same workload): requests follow their flows, reads
#     miss and a read-through cache leaves keys on several nodes;
#   adding a fourth node: `--dry-run --json` predicts node4's share p; the
#     keys whose owner changes all go to node4, their share is p within a
#     binomial bound, and reading all keys again misses exactly those.
#   --ring ketama and md5-vnodes: reads hit, keys sit on their lookup
#     owners, which are those hashlib computes the way libmemcached's
#     ketama and md5-vnodes clients do; --ring is saved, restored and
#     applied; bad specs are usage errors.
# Both hit rates are printed.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEYS=2000
PORT=11211
CLIENT="python3 $E2E_ROOT/tests/e2e/keys_client.py"

e2e_require_director
command -v memcached >/dev/null 2>&1 ||
	e2e_die "memcached not installed: make deps (Debian package memcached)"
e2e_setup 3
work=$TB_STATE_DIR/keys-mc
mkdir -p "$work"

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"

# memcached i: UDP and TCP on the VIP only, so UDP replies leave from it
start_memcached()
{
	local i=$1 t
	tb_spawn "${TB_NODE_NS[i]}" "$work/memcached-$i.log" \
		memcached -u root -l "$TB_VIP4" -p "$PORT" -U "$PORT" -m 64 \
		-t 2 -c 1024
	for ((t = 0; t < 100; t++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-flush "$TB_VIP4" "$PORT" \
			2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
for ((i = 1; i <= TB_NODES; i++)); do
	start_memcached "$i" || e2e_die "memcached on node$i"
done
e2e_pass "memcached (UDP on) on node1..node$TB_NODES, bound to $TB_VIP4"

# keys of varied shape and length
python3 -c '
import random, sys
r = random.Random(15)
for i in range(int(sys.argv[1])):
    print("%s:%d:%s" % (r.choice(["user", "session", "cart", "k"]), i,
          "x" * r.randrange(0, 40)))' "$KEYS" >"$work/keys"

# node -> keys it holds, asked of each memcached directly over TCP
held()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-held "$TB_VIP4" "$PORT" \
			"$work/keys" | sed "s/\$/ ${TB_NODE_NAME[i]}/"
	done
}
flush_all()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		tb_exec "${TB_NODE_NS[i]}" $CLIENT mc-flush "$TB_VIP4" "$PORT" ||
			return 1
	done
}
client()
{
	tb_exec "$TB_CLIENT_NS" $CLIENT mc-udp "$TB_VIP4" "$PORT" "$work/keys" "$@"
}
jget()
{
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}
svc_mc()
{
	e2e_ctl service del mc >/dev/null 2>&1
	e2e_ctl service add mc --vip "$TB_VIP4" --port "$PORT" --proto udp \
		"$@" >/dev/null && e2e_add_nodes mc
}

# ---- --key memcached ----------------------------------------------------
svc_mc --key memcached || e2e_die "service mc --key memcached"
e2e_expect_eq "service list shows the extractor" \
	"$(e2e_ctl service list --json | e2e_json '[s["key"] for s in d if s["name"] == "mc"]')" \
	memcached
e2e_ctl stats --json >"$work/stats0.json"

set_stats=$(client --op set)
get_stats=$(client --op get --out "$work/keyed.reads")
e2e_expect_eq "keyed: $KEYS keys stored over UDP ($set_stats)" \
	"$(jget "$set_stats" stored)" "$KEYS"
keyed_hits=$(jget "$get_stats" hits)
e2e_expect_eq "keyed: every read hits ($get_stats)" "$keyed_hits" "$KEYS"

e2e_ctl lookup mc --key-file "$work/keys" >"$work/owners" ||
	e2e_fail "ringctl lookup --key-file"
held >"$work/held"
if res=$(python3 - "$work/owners" "$work/held" "$KEYS" <<'EOF'
import collections, sys
owner = dict(l.split() for l in open(sys.argv[1]))
on = collections.defaultdict(list)
for l in open(sys.argv[2]):
    k, n = l.split()
    on[k].append(n)
keys = int(sys.argv[3])
errs = []
if len(owner) != keys:
    errs.append("%d owners for %d keys" % (len(owner), keys))
multi = sum(1 for v in on.values() if len(v) > 1)
missing = keys - len(on)
wrong = sum(1 for k, v in on.items() if v != [owner.get(k)])
per = collections.Counter(owner.values())
if multi or missing or wrong:
    errs.append("%d keys on several nodes, %d on none, %d off their owner"
                % (multi, missing, wrong))
print("; ".join(errs) if errs else "per node %s" % dict(sorted(per.items())))
sys.exit(1 if errs else 0)
EOF
); then
	e2e_pass "keyed: every key on exactly one node, its ringctl lookup --key owner ($res)"
else
	e2e_fail "keyed: $res"
fi

# one key, the way an operator asks
k1=$(head -1 "$work/keys")
o1=$(e2e_ctl lookup mc --key "$k1" --json | e2e_json 'd["node"]')
e2e_expect_eq "lookup --key '$k1' agrees with --key-file" "$o1" \
	"$(awk -v k="$k1" '$1 == k { print $2 }' "$work/owners")"

e2e_ctl stats --json >"$work/stats1.json"
if res=$(python3 - "$work/stats0.json" "$work/stats1.json" "$KEYS" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["counters"]
b = json.load(open(sys.argv[2]))["counters"]
d = {k: b[k] - a[k] for k in b}
n = 2 * int(sys.argv[3])
fb = {k: v for k, v in d.items() if k.startswith("key-fallback") and v}
errs = []
if d["key-routed"] < n:
    errs.append("key-routed %d < %d" % (d["key-routed"], n))
if fb:
    errs.append("fallbacks %s" % fb)
for k in ("conn-insert", "conn-hit", "conn-miss"):
    if d[k]:
        errs.append("%s %d: keyed services skip the table" % (k, d[k]))
print("; ".join(errs) if errs else "key-routed +%d, no fallback, no "
      "connection-table use" % d["key-routed"])
sys.exit(1 if errs else 0)
EOF
); then
	e2e_pass "keyed: director counters: $res"
else
	e2e_fail "keyed: director counters: $res"
fi

# save / restore / apply keep every extractor, and routing with it: the
# saved file (with a token key whose delimiters need escapes and a bytes
# key beside memcached) restores and applies back unchanged
e2e_ctl service add tok --vip "$TB_VIP4" --port 7001 --proto udp \
	--key 'token:8:\s\t\r\n|:200' >/dev/null || e2e_fail "service add tok"
e2e_ctl service add byt --vip "$TB_VIP4" --port 7002 --proto udp --hash 3tuple \
	--key bytes:4:16 --vnodes 50 >/dev/null || e2e_fail "service add byt"
e2e_ctl save >"$work/saved" || e2e_fail "ringctl save"
e2e_check "save writes --key memcached" grep -q -- '^service add mc .*--key memcached$' "$work/saved"
e2e_check "save writes the token key escaped, on one line" \
	grep -qxF -- "service add tok --vip $TB_VIP4 --port 7001 --proto udp --hash 5tuple --vnodes 1000 --key token:8:\\s\\t\\r\\n|:200" "$work/saved"
e2e_check "save writes the bytes key" grep -q -- '^service add byt .*--hash 3tuple --vnodes 50 --key bytes:4:16$' "$work/saved"
e2e_ctl restore "$work/saved" >/dev/null || e2e_fail "ringctl restore"
e2e_ctl save >"$work/saved2" || e2e_fail "ringctl save after restore"
e2e_check "restore: saved again, the same file" cmp -s "$work/saved" "$work/saved2"
e2e_expect_eq "apply of the saved file: nothing changes" \
	"$(e2e_ctl apply "$work/saved" --json | e2e_json 'd["changed"]')" False
e2e_ctl save >"$work/saved3" || e2e_fail "ringctl save after apply"
e2e_check "apply: saved again, the same file" cmp -s "$work/saved" "$work/saved3"
# a changed extractor is a change apply sees and makes
sed 's/--key bytes:4:16$/--key bytes:4:8/' "$work/saved" >"$work/changed"
e2e_expect_eq "apply of a changed --key: byt changes" \
	"$(e2e_ctl apply "$work/changed" --json | e2e_json '[s["service"] + " " + s["change"] for s in d["services"]]')" "byt changed"
e2e_check "apply made it: save shows --key bytes:4:8" \
	grep -q -- '^service add byt .*--key bytes:4:8$' <(e2e_ctl save)
e2e_ctl service del tok >/dev/null || e2e_fail "service del tok"
e2e_ctl service del byt >/dev/null || e2e_fail "service del byt"
get2=$(client --op get)
e2e_expect_eq "after restore every read still hits ($get2)" \
	"$(jget "$get2" hits)" "$KEYS"
e2e_expect_eq "after restore lookups unchanged" \
	"$(e2e_ctl lookup mc --key-file "$work/keys" | cmp - "$work/owners" && echo same)" same

# bad input: a key extractor on TCP, a malformed spec, a key too long
e2e_ctl service add bad --vip "$TB_VIP4" --port 11212 --proto tcp \
	--key memcached >/dev/null 2>&1
e2e_expect_eq "--key memcached on tcp: usage error" "$?" 2
e2e_ctl service add bad --vip "$TB_VIP4" --port 11212 --proto udp \
	--key bytes:600:10 >/dev/null 2>&1
e2e_expect_eq "--key bytes:600:10: usage error" "$?" 2
e2e_ctl lookup mc --key "$(printf 'x%.0s' $(seq 251))" >/dev/null 2>&1
e2e_expect_eq "lookup of a 251-byte memcached key: usage error" "$?" 2

# ---- --ring ketama / md5-vnodes: the owners existing clients compute ------
# Every request still lands on the node ringctl lookup names, and those
# owners are the ones a libmemcached ketama client (servers node1..3, port
# 11211: ketama hashes "node1-0", ...) and an md5-vnodes client compute:
# checked against hashlib here, against libmemcached in test_ketama.
flush_all || e2e_fail "flush_all"
svc_mc --key memcached --ring ketama || e2e_die "service mc --ring ketama"
e2e_expect_eq "service list shows the ring" \
	"$(e2e_ctl service list --json | e2e_json '[s["ring"] for s in d if s["name"] == "mc"]')" \
	ketama
st=$(client --op set)
gt=$(client --op get)
e2e_expect_eq "ketama: $KEYS keys stored, every read hits ($gt)" \
	"$(jget "$st" stored) $(jget "$gt" hits)" "$KEYS $KEYS"
e2e_ctl lookup mc --key-file "$work/keys" >"$work/owners-ketama" ||
	e2e_fail "ringctl lookup --key-file, ketama"
held >"$work/held-ketama"
e2e_expect_eq "show: a ring of 3 x 160 ketama points, 160 a node" \
	"$(e2e_ctl show mc --json | e2e_json '"%s %d %s" % next((s["ring"], s["entries"], sorted(set(n["vnodes"] for n in s["nodes"]))) for s in d["services"] if s["name"] == "mc")')" \
	"ketama 480 [160]"
e2e_expect_eq "ketama: every key on its lookup owner, once" \
	"$(sort "$work/held-ketama" | cmp - <(sort "$work/owners-ketama") && echo same)" same
e2e_ctl service add mv --vip "$TB_VIP4" --port 11213 --proto udp \
	--key memcached --ring 'md5-vnodes:{node}#vnode{i}:128' >/dev/null &&
	e2e_add_nodes mv || e2e_fail "service mv --ring md5-vnodes"
e2e_ctl lookup mv --key-file "$work/keys" >"$work/owners-md5" ||
	e2e_fail "ringctl lookup --key-file, md5-vnodes"
if res=$(python3 - "$work/keys" "$work/owners-ketama" "$work/owners-md5" \
	"${TB_NODE_NAME[@]:1:3}" <<'EOF'
import bisect, hashlib, struct, sys

keys = [l.rstrip("\n") for l in open(sys.argv[1])]
nodes = sys.argv[4:]

def md5(s):
    return hashlib.md5(s.encode()).digest()

def owners(points, hash_of):
    points.sort()
    at = [p for p, _, _ in points]
    out = {}
    for k in keys:
        i = bisect.bisect_left(at, hash_of(k))
        out[k] = points[i % len(points)][1]
    return out

# libmemcached weighted ketama, equal weights: 160 points a server, 4 a
# digest of "HOST-K" (port 11211 left out), little-endian words
kp = [(struct.unpack("<I", md5("%s-%d" % (n, k))[4 * x:4 * x + 4])[0], n, k)
      for n in nodes for k in range(40) for x in range(4)]
ket = owners(kp, lambda k: struct.unpack("<I", md5(k)[:4])[0])
# md5-vnodes {node}#vnode{i} x 128: big-endian prefix
vp = [(struct.unpack(">I", md5("%s#vnode%d" % (n, i))[:4])[0], n, i)
      for n in nodes for i in range(128)]
vn = owners(vp, lambda k: struct.unpack(">I", md5(k)[:4])[0])
errs = []
for name, want, path in (("ketama", ket, sys.argv[2]),
                         ("md5-vnodes", vn, sys.argv[3])):
    got = dict(l.split() for l in open(path))
    bad = sum(1 for k in keys if got.get(k) != want[k])
    if bad or len(got) != len(keys):
        errs.append("%s: %d of %d owners differ" % (name, bad, len(keys)))
print("; ".join(errs) if errs else "%d keys, both schemes" % len(keys))
sys.exit(1 if errs else 0)
EOF
); then
	e2e_pass "ringctl lookup owners = hashlib's ketama and md5-vnodes owners: $res"
else
	e2e_fail "owners against hashlib: $res"
fi
# save / restore / apply keep --ring; a changed --ring is a change
e2e_ctl save >"$work/saved-ring" || e2e_fail "ringctl save"
e2e_check "save writes --ring ketama" \
	grep -q -- '^service add mc .*--key memcached --ring ketama$' "$work/saved-ring"
e2e_check "save writes --ring md5-vnodes" \
	grep -qF -- "--key memcached --ring md5-vnodes:{node}#vnode{i}:128" "$work/saved-ring"
e2e_ctl restore "$work/saved-ring" >/dev/null || e2e_fail "ringctl restore"
e2e_check "restore: saved again, the same file" \
	cmp -s "$work/saved-ring" <(e2e_ctl save)
e2e_expect_eq "restore: lookups unchanged" \
	"$(e2e_ctl lookup mc --key-file "$work/keys" | cmp - "$work/owners-ketama" && echo same)" same
e2e_expect_eq "apply of the saved file: nothing changes" \
	"$(e2e_ctl apply "$work/saved-ring" --json | e2e_json 'd["changed"]')" False
sed 's/{i}:128$/{i}:64/' "$work/saved-ring" >"$work/changed-ring"
e2e_expect_eq "apply of a changed --ring: mv changes" \
	"$(e2e_ctl apply "$work/changed-ring" --json | e2e_json '[s["service"] + " " + s["change"] for s in d["services"]]')" "mv changed"
e2e_check "apply made it: save shows COUNT 64" \
	grep -qF -- '--ring md5-vnodes:{node}#vnode{i}:64' <(e2e_ctl save)
gt=$(client --op get)
e2e_expect_eq "ketama: after restore and apply every read still hits" \
	"$(jget "$gt" hits)" "$KEYS"
e2e_ctl service del mv >/dev/null || e2e_fail "service del mv"
# bad --ring specs: usage errors
for bad in foo 'md5-vnodes:{node}:10' 'md5-vnodes:{node}-{i}:0' \
	'md5-vnodes:{node}-{i}:5000' 'md5-vnodes:{node}-{i}'; do
	e2e_ctl service add bad --vip "$TB_VIP4" --port 11212 --proto udp \
		--key memcached --ring "$bad" >/dev/null 2>&1
	e2e_expect_eq "--ring '$bad': usage error" "$?" 2
done
e2e_ctl service add bad --vip "$TB_VIP4" --port 11212 --proto udp \
	--ring ketama >/dev/null 2>&1
e2e_expect_eq "--ring ketama without --key: usage error" "$?" 2

# ---- --key flow: the same workload ----------------------------------------
flush_all || e2e_fail "flush_all"
svc_mc --key flow || e2e_die "service mc --key flow"
set_stats=$(client --op set)
get_stats=$(client --op getset)
get3=$(client --op get)
flow_hits=$(jget "$get_stats" hits)
flow_hits2=$(jget "$get3" hits)
held >"$work/held-flow"
multi=$(awk '{ n[$1]++ } END { for (k in n) if (n[k] > 1) m++; print m + 0 }' \
	"$work/held-flow")
e2e_log "hit rate, --key memcached: $keyed_hits/$KEYS;" \
	"--key flow: $flow_hits/$KEYS on the first read, $flow_hits2/$KEYS" \
	"on the second (read-through fills), $multi keys on several nodes"
e2e_check "flow: reads miss (first read $flow_hits/$KEYS hits, < 60%)" \
	test "$flow_hits" -lt $((KEYS * 6 / 10))
e2e_check "flow: keys land on several nodes ($multi keys on 2 or more)" \
	test "$multi" -gt $((KEYS / 10))
echo "RESULT keys_memcached hit_rate_keyed=$keyed_hits/$KEYS" \
	"hit_rate_flow=$flow_hits/$KEYS hit_rate_flow_second=$flow_hits2/$KEYS" \
	"keys_on_several_nodes_flow=$multi"

# ---- a fourth node ----------------------------------------------------------
flush_all || e2e_fail "flush_all"
svc_mc --key memcached || e2e_die "service mc --key memcached"
st=$(client --op set)
e2e_expect_eq "keys stored again with --key memcached" "$(jget "$st" stored)" "$KEYS"
e2e_ctl lookup mc --key-file "$work/keys" >"$work/before"
testbed_add_node || e2e_die "testbed_add_node"
start_memcached 4 || e2e_die "memcached on node4"
dry=$(e2e_ctl --dry-run --json node add mc node4 --mac "${TB_NODE_MAC[4]}" \
	--dev "${TB_DIR_NODE_IF[4]}") || e2e_fail "dry run of node add"
e2e_ctl lookup mc --key-file "$work/keys" | cmp -s - "$work/before"
e2e_expect_eq "the dry run changed nothing" "$?" 0
p=$(echo "$dry" | e2e_json 'sum(m["share"] for s in d["services"] for m in s["moves"] if m["to"] == "node4")')
e2e_add_nodes mc 4 || e2e_fail "node add node4"
e2e_ctl lookup mc --key-file "$work/keys" >"$work/after"
read -r moved total < <(e2e_moved "$work/before" "$work/after")
e2e_expect_eq "every moved key went to node4" \
	"$(awk '$3 != "node4"' "$work/after.moves" | wc -l)" 0
if res=$(python3 -c '
import math, sys
p, k, n = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
lim = 4 * math.sqrt(p * (1 - p) / n) + 1 / n
print("moved %d of %d = %.3f, predicted %.3f +- %.3f" % (k, n, k / n, p, lim))
sys.exit(0 if abs(k / n - p) <= lim else 1)' "$p" "$moved" "$total"); then
	e2e_pass "share of keys moved as the dry run predicts: $res"
else
	e2e_fail "share of keys moved: $res"
fi
client --op get --out "$work/reads4" >/dev/null
awk '$2 == "miss" { print $1 }' "$work/reads4" | sort >"$work/missed"
awk '{ print $1 }' "$work/after.moves" | sort >"$work/moved"
e2e_check "reads miss exactly the $moved moved keys (now owned by empty node4)" \
	cmp -s "$work/missed" "$work/moved"
e2e_expect_eq "every other read hits" \
	"$(awk '$2 == "hit"' "$work/reads4" | wc -l)" $((KEYS - moved))

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_expect_eq "no memcached left running" \
	"$(pgrep -x memcached | while read -r pid; do ip netns identify "$pid"; done | grep -c -- "-$suf\$")" 0
e2e_finish
