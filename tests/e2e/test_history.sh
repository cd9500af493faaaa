#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The change log: every change ringctl commits appends one record (time,
# who, the command, the services whose ring changed, the exact moved
# share); --dry-run and refused commands append nothing; `ringctl history`
# prints it as text and JSON. `ringctl apply` of a document and the
# health checker (ringhealth taking nodes out of a ring) append theirs.
#
# The moved share of each change is checked against what --dry-run
# predicted for the same command just before it (exact, same keys).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/history
mkdir -p "$work"
e2e_attach >/dev/null || e2e_die "ringload attach"

e2e_expect_eq "a fresh state: no change recorded" \
	"$(e2e_ctl history --json | e2e_json 'd["appended"]')" 0
e2e_ctl history >"$work/empty.txt"
e2e_check "text output of an empty log says so" grep -q 'no change recorded' "$work/empty.txt"

e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" --proto tcp \
	>/dev/null && e2e_add_nodes web 1 2 || e2e_die "service web with 2 nodes"

# change DESC ringctl-args...: predict with --dry-run, do it, and check
# the new record: one more, what = the command, moved share = predicted.
n=3
change()
{
	local desc=$1 pred got
	shift
	pred=$(e2e_ctl "$@" --dry-run --json | e2e_json \
		'sum(s["moved_share"] for s in d["services"])')
	e2e_ctl "$@" >/dev/null || { e2e_fail "$desc: ringctl $*"; return; }
	n=$((n + 1))
	e2e_ctl history --json >"$work/h.json"
	got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["changes"][-1]
print(d["appended"], c["seq"], c["who"].split(":")[0],
      c["what"].endswith(sys.argv[2]), repr(c["moved_share"]))
' "$work/h.json" "$*")
	e2e_expect_eq "$desc: record $n by ringctl, the command, moved share as predicted ($pred)" \
		"$got" "$n $n ringctl True $(python3 -c "print(repr(float('$pred')))")"
}
change "node3 joins" node add web node3 --mac "${TB_NODE_MAC[3]}" --dev "${TB_DIR_NODE_IF[3]}"
change "node1 weight 3" node set web node1 --weight 3
change "node2 drained" node set web node2 --drain
change "node2 back" node set web node2 --active

e2e_ctl node set web node1 --weight 2 --dry-run >/dev/null
e2e_ctl node add web node3 --mac "${TB_NODE_MAC[3]}" --dev "${TB_DIR_NODE_IF[3]}" >/dev/null 2>&1
e2e_expect_eq "a dry run and a refused command (duplicate node) append nothing" \
	"$(e2e_ctl history --json | e2e_json 'd["appended"]')" "$n"

e2e_ctl history >"$work/h.txt"
e2e_expect_eq "text: a header and one line per change" "$(wc -l <"$work/h.txt")" $((n + 1))
e2e_check "text: the service add moves nothing (an empty ring)" \
	grep -qE '^1 .* ringctl:[^ ]+ +1 +0\.0000%  ringctl .*service add web' "$work/h.txt"
e2e_check "text: the first node takes the whole keyspace" \
	grep -qE '^2 .* ringctl:[^ ]+ +1 +100\.0000%  ringctl .*node add web node1' "$work/h.txt"
e2e_expect_eq "ring swaps: one per change" \
	"$(e2e_json 'd["ring_swaps"]' <"$work/h.json")" "$n"

# ---- apply: a document without node3 -------------------------------------
e2e_ctl save >"$work/doc" || e2e_die "ringctl save"
grep -v ' node3 ' "$work/doc" >"$work/doc2"
e2e_ctl apply "$work/doc2" >/dev/null || e2e_fail "ringctl apply"
n=$((n + 1))
e2e_ctl history --json >"$work/h.json"
e2e_expect_eq "apply: record $n, by ringctl, the command, one service, node3's share moved" \
	"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["changes"][-1]
print(d["appended"], c["who"].split(":")[0], c["what"].endswith("apply " + sys.argv[2]),
      c["services"], c["moved_share"] > 0)
' "$work/h.json" "$work/doc2")" "$n ringctl True 1 True"
e2e_ctl apply "$work/doc2" >/dev/null
e2e_expect_eq "apply of the same document again: no change, no record" \
	"$(e2e_ctl history --json | e2e_json 'd["appended"]')" "$n"

# ---- ringhealth: no server listens on the nodes, so a tcp check fails
# and (fail-open off) both nodes leave the ring: one record by ringhealth.
RINGHEALTH=${RINGHEALTH:-$E2E_BUILD/ringhealth}
[ -x "$RINGHEALTH" ] || e2e_die "$RINGHEALTH missing: run make first"
for i in 1 2; do
	e2e_ctl node set web "node$i" --addr "${TB_NODE_IP4[i]}" >/dev/null ||
		e2e_die "node set node$i --addr"
done
e2e_ctl service set web --check tcp --interval 200ms --timeout 200ms \
	--fall 1 --rise 1 --panic-share 0 >/dev/null || e2e_die "service set web --check tcp"
n=$((n + 3))
tb_spawn "$TB_DIR_NS" "$work/ringhealth.log" "$RINGHEALTH"
# both_out: node1 and node2 of web out of the ring for health
both_out()
{
	[ "$(e2e_ctl show web --json | e2e_json \
		'sum(1 for s in d["services"] for x in s["nodes"] if x["health"]["out"])')" = 2 ]
}
e2e_check "ringhealth takes node1 and node2 out of the ring" e2e_wait_for 15 both_out
kill "$TB_LAST_PID" 2>/dev/null
e2e_ctl history --json >"$work/h.json"
e2e_expect_eq "ringhealth's records: who ringhealth, what names the nodes out, the last one moves the whole ring away" \
	"$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
hc = [c for c in d["changes"] if c["who"] == "ringhealth"]
outs = " ".join(c["what"] for c in hc)
print(len(hc) >= 1, "web node1 out (unhealthy)" in outs, "web node2 out (unhealthy)" in outs,
      sum(c["moved_share"] for c in hc) >= 1.0, d["appended"] == int(sys.argv[2]) + len(hc))
' "$work/h.json" "$n")" "True True True True True"

e2e_finish
