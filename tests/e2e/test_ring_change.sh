#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ring changes under load. A fixed set of 3,000 TCP flows (source ports
# P..P+2999) is opened on 3 nodes, again after a 4th node joins, and again
# after node2 leaves; the node of every flow is compared across the runs.
#
# Adding node4:
#   - `ringctl node add --dry-run --json` predicts the moved share p and
#     changes nothing; p is node4's exact share of the new ring,
#   - the share of the flows that changed node is p within
#     4 * sqrt(p(1-p)/n) + 1/n (binomial; a false alarm ~1e-4),
#   - every flow that moved went to node4,
# Removing node2:
#   - every flow node2 had moved, no other flow moved, the share of moved
#     flows matches the dry-run prediction as above, and they spread over
#     the remaining nodes as the dry run's per-node moves say (chi-square,
#     alpha 0.001).
# During each change connections keep opening (batches of 200 from fresh
# ports, 16 in flight): all of them complete, except a handshake the ring
# swap splits (SYN before it, ACK after it, of a flow the change moves:
# the SYN wrote no connection entry, so the ACK follows the new ring to a
# node that never saw the SYN, which resets it). That failure is rare
# (about one per 60 changes at 15,000 connections/s, 64 in flight) and is
# only accepted when it is exactly that: reset during connect, a flow of
# the node the change adds or removes (asked of ringctl lookup), and no
# more of them than connections in flight. Batches begun after the change
# land where `ringctl lookup` says.
#
# The connections of the first run were reset-closed, but the director's
# connection table keeps their entries (it does not follow FIN/RST) and
# would send a reused 5-tuple's non-SYN packets to its old node; before
# reopening the same flows on the grown ring the test empties the table.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLOWS=3000
SAMPLE=500    # flows of each run also checked against ringctl lookup
BG_BATCH=200  # background connections per batch
BG_MAX=40     # batches per change, at most
BG_SECONDS=20 # and seconds
BG_PARALLEL=16 # connections in flight at once

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/ring
mkdir -p "$work"

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
if ! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ! e2e_add_nodes web; then
	e2e_die "service web with 3 nodes"
fi
e2e_start_servers || e2e_die "servers started"
e2e_pass "director attached, service web on node1..node3"

e2e_alloc_sports "$FLOWS"
FBASE=$E2E_SPORT
client=(--vip "$TB_VIP4" --proto tcp --timeout-ms 3000)

# run NAME: the fixed flows; checks they all complete and that the first
# SAMPLE land where ringctl lookup says.
run()
{
	local name=$1 bad
	e2e_flows "$work/$name" "${client[@]}" --count "$FLOWS" \
		--sport-base "$FBASE"
	e2e_expect_eq "$name: $FLOWS flows answered ($(tr -d '\n' \
		<"$work/$name.err" | sed 's/.*nodes: //'))" \
		"$(grep -vc ' FAIL$' "$work/$name")" "$FLOWS"
	if e2e_lookups "$work/$name.want" web "$TB_CLIENT_IP4" "$FBASE" \
		"$SAMPLE"; then
		bad=$(e2e_mismatch "$work/$name.want" "$work/$name")
		# the lookups cover only the sample
		bad=$((bad - (FLOWS - SAMPLE)))
		e2e_expect_eq "$name: $SAMPLE flows on the node ringctl lookup names" \
			"$bad" 0
	else
		e2e_fail "$name: ringctl lookup failed"
	fi
}

# dry_run NAME ringctl-args...: the prediction, into $work/NAME.dry;
# prints "MOVED_SHARE" and leaves the moves as "FROM TO SHARE" lines.
dry_run()
{
	local name=$1
	shift
	e2e_ctl "$@" --dry-run --json >"$work/$name.dry" || return 1
	e2e_json 'd["services"][0]["moved_share"]' <"$work/$name.dry" &&
		e2e_json '[(m["from"], m["to"], m["share"])
			   for m in d["services"][0]["moves"]]' \
			<"$work/$name.dry" >"$work/$name.moves"
}

# within K N P: K moved of N is P within 4 binomial sigmas + 1/N.
# shellcheck disable=SC2317 # called through e2e_check
within()
{
	awk -v k="$1" -v n="$2" -v p="$3" 'BEGIN {
		d = k / n - p; if (d < 0) d = -d
		exit !(d <= 4 * sqrt(p * (1 - p) / n) + 1 / n) }'
}

# tolerance N P: the bound, for the log.
tolerance()
{
	awk -v n="$1" -v p="$2" \
		'BEGIN { printf "%.4f", 4 * sqrt(p * (1 - p) / n) + 1 / n }'
}

# change NAME ringctl-args...: apply the change while the background loop
# opens connections; checks that the loop ran across it and that the
# batches begun after it follow the new ring exactly. The failed
# connections, "PORT REASON", go to NAME.failed for split_ok.
change()
{
	local name=$1 bad cmd=("${@:2}")
	e2e_alloc_sports $((BG_MAX * BG_BATCH))
	e2e_bg_start "$work/$name.bg" "$E2E_SPORT" "$BG_MAX" "$BG_SECONDS" \
		"$BG_BATCH" "${client[@]}" --parallel "$BG_PARALLEL"
	e2e_bg_wait 2 || e2e_fail "$name: background connections started"
	if e2e_ctl "${cmd[@]}" >/dev/null; then
		touch "$E2E_BG_MARK"
		e2e_pass "$name: ringctl ${cmd[*]:0:4} while connections open"
	else
		e2e_fail "$name: ringctl ${cmd[*]}"
	fi
	e2e_bg_wait 2 1 ||
		e2e_fail "$name: background connections after the change"
	e2e_bg_stop
	awk '$3 == "FAIL" { r = $0; sub(/^[^ ]+ [^ ]+ FAIL /, "", r)
		print $2, r }' "$work/$name.bg.raw" >"$work/$name.failed"
	# the batches begun after the change follow the new ring exactly
	awk '$2 == 1 { print $1 }' "$work/$name.bg.batches" | head -2 |
		while read -r b; do seq "$b" $((b + BG_BATCH - 1)); done |
		e2e_lookup_ports "$work/$name.bg.want" web "$TB_CLIENT_IP4"
	bad=$(awk 'NR == FNR { w[$1] = $2; next }
		$1 in w && w[$1] != $2 { k++ } END { print k + 0 }' \
		"$work/$name.bg.want" "$work/$name.bg")
	e2e_expect_eq "$name: $(wc -l <"$work/$name.bg.want") connections begun after the change on the node ringctl lookup names" \
		"$bad" 0
}

# split_ok NAME OWNER: every background connection of change NAME
# completed, or failed as a handshake split by the ring swap does: reset
# during connect, a flow OWNER owns on the side of the change where OWNER
# is in the ring (node4 after the add, node2 before the removal), and no
# more of them than connections in flight (--parallel).
split_ok()
{
	local name=$1 owner=$2 n fails split=0 other
	n=$(wc -l <"$work/$name.bg")
	fails=$(wc -l <"$work/$name.failed")
	if [ "$fails" -eq 0 ]; then
		e2e_pass "$name: all $n background connections around the change completed"
		return
	fi
	split=$(grep -c ' connect: Connection reset by peer$' \
		"$work/$name.failed")
	awk '{ print $1 }' "$work/$name.failed" |
		e2e_lookup_ports "$work/$name.failed.owner" web "$TB_CLIENT_IP4"
	other=$(awk -v o="$owner" '$2 != o' "$work/$name.failed.owner" | wc -l)
	if [ "$split" -eq "$fails" ] && [ "$other" -eq 0 ] &&
		[ "$fails" -le "$BG_PARALLEL" ]; then
		e2e_pass "$name: $n background connections, all completed but $fails handshake(s) split by the ring swap (flows of $owner, reset at connect)"
	else
		e2e_fail "$name: $fails of $n background connections failed ($split reset at connect, $other not $owner's): $(head -3 "$work/$name.failed" | tr '\n' ';')"
	fi
}

# ---- 3 nodes --------------------------------------------------------------
run before

# ---- add node4 ------------------------------------------------------------
testbed_add_node || e2e_die "testbed_add_node"
e2e_start_server 4 || e2e_die "server on node4"
add=(node add web node4 --mac "${TB_NODE_MAC[4]}" --dev "${TB_DIR_NODE_IF[4]}")
p_add=$(dry_run add "${add[@]}") || e2e_die "ringctl node add --dry-run"
e2e_expect_eq "dry run: every predicted move goes to node4" \
	"$(awk '$2 != "node4"' "$work/add.moves" | wc -l)" 0
e2e_expect_eq "dry run changed nothing (3 nodes in the ring)" \
	"$(e2e_shares web | wc -l)" 3

change add "${add[@]}"
split_ok add node4
share4=$(e2e_shares web | awk '$1 == "node4" { print $2 }')
e2e_check "predicted moved share $p_add is node4's share $share4 of the new ring" \
	awk -v a="$p_add" -v b="${share4:-0}" \
	'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }'

# the same 5-tuples open again: their SYNs must forget the entries the
# closed connections left, or moved flows would reset (conntrack.h)
run after_add
read -r k n < <(e2e_moved "$work/before" "$work/after_add")
tol=$(tolerance "$n" "$p_add")
obs=$(awk -v k="$k" -v n="$n" 'BEGIN { printf "%.4f", k / n }')
e2e_check "add: $k of $n flows moved: observed $obs, predicted $(printf '%.4f' "$p_add") (tolerance $tol)" \
	within "$k" "$n" "$p_add"
e2e_expect_eq "add: every moved flow went to node4" \
	"$(awk '$3 != "node4"' "$work/after_add.moves" | wc -l)" 0

# ---- remove node2 ---------------------------------------------------------
p_del=$(dry_run del node del web node2) || e2e_die "ringctl node del --dry-run"
e2e_expect_eq "dry run: every predicted move comes from node2" \
	"$(awk '$1 != "node2"' "$work/del.moves" | wc -l)" 0
share2=$(e2e_shares web | awk '$1 == "node2" { print $2 }')
e2e_check "predicted moved share $p_del is node2's share $share2" \
	awk -v a="$p_del" -v b="${share2:-0}" \
	'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }'

change del node del web node2
# no flush: node2's entries died with its slot, the others agree with
# the ring
run after_del
read -r k n < <(e2e_moved "$work/after_add" "$work/after_del")
tol=$(tolerance "$n" "$p_del")
obs=$(awk -v k="$k" -v n="$n" 'BEGIN { printf "%.4f", k / n }')
e2e_check "del: $k of $n flows moved: observed $obs, predicted $(printf '%.4f' "$p_del") (tolerance $tol)" \
	within "$k" "$n" "$p_del"
e2e_expect_eq "del: every moved flow was node2's" \
	"$(awk '$2 != "node2"' "$work/after_del.moves" | wc -l)" 0
e2e_expect_eq "del: every flow node2 had moved" \
	"$(e2e_count "$work/after_del" node2)/$(e2e_count "$work/after_add" node2)" \
	"0/$k"
# where node2's flows went, against the dry run's per-node moves
obs='' shares='' view=''
while read -r _ to share; do
	c=$(awk -v t="$to" '$3 == t' "$work/after_del.moves" | wc -l)
	obs="$obs $c" shares="$shares $share"
	view="$view $to=$c/$(awk -v s="$share" -v p="$p_del" -v k="$k" \
		'BEGIN { printf "%.1f", k * s / p }')"
done <"$work/del.moves"
if res=$(e2e_chisq "$obs" "$shares" 0.001 2>&1); then
	e2e_pass "del: node2's flows spread as predicted (observed/expected):$view: $res"
else
	e2e_fail "del: node2's flows spread off the prediction:$view: $res"
fi

# Failed connections of the removal (if any) were node2's: put node2 back
# (the ring depends only on seed, names and weights, so it is the ring of
# before the removal) and ask.
if [ -s "$work/del.failed" ]; then
	e2e_add_nodes web 2 || e2e_fail "node2 added back"
fi
split_ok del node2

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
