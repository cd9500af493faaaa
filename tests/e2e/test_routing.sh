#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ring routing with the XDP program in the path: for TCP and UDP, over
# IPv4 and IPv6, 1,000 real flows each from distinct source ports
#   - all complete, answered by a node,
#   - each on exactly the node `ringctl lookup` names for it,
#   - spread over the nodes as the ring's exact shares (`ringctl show
#     --json`) say: Pearson chi-square at a family-wise alpha of 0.001
#     (Bonferroni: 0.00025 per service),
# and the director's counters (`ringctl stats --json`) and the nodes' own
# counters agree with the traffic.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FLOWS=1000
ALPHA=0.00025 # 0.001 over the four services

e2e_require_director
e2e_setup 3
work=$TB_STATE_DIR/routing
mkdir -p "$work"

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
e2e_pass "ringload attached natively to $TB_DIR_IN"

# name vip proto client-address
services=(
	"web $TB_VIP4 tcp $TB_CLIENT_IP4"
	"webu $TB_VIP4 udp $TB_CLIENT_IP4"
	"web6 $TB_VIP6 tcp $TB_CLIENT_IP6"
	"webu6 $TB_VIP6 udp $TB_CLIENT_IP6"
)
ok=1
for s in "${services[@]}"; do
	read -r svc vip proto src <<<"$s"
	if ! e2e_ctl service add "$svc" --vip "$vip" --port "$E2E_PORT" \
		--proto "$proto" >/dev/null || ! e2e_add_nodes "$svc"; then
		ok=0
	fi
done
e2e_expect_eq "4 services with $TB_NODES nodes each defined" "$ok" 1
e2e_start_servers || e2e_die "servers started"

declare -A sent_on # "SVC NODE" -> flows the client saw answered there
for s in "${services[@]}"; do
	read -r svc vip proto src <<<"$s"
	e2e_alloc_sports "$FLOWS"
	base=$E2E_SPORT
	t0=$SECONDS
	e2e_flows "$work/$svc" --vip "$vip" --proto "$proto" \
		--count "$FLOWS" --sport-base "$base" --retries 2 \
		--timeout-ms 3000
	e2e_expect_eq "$svc: $FLOWS $proto flows to $vip answered" \
		"$(grep -vc ' FAIL$' "$work/$svc")" "$FLOWS"
	e2e_expect_eq "$svc: every flow came from $src" \
		"$(awk -v a="$src" '$1 != a' "$work/$svc.raw" | wc -l)" 0

	if e2e_lookups "$work/$svc.want" "$svc" "$src" "$base" "$FLOWS"; then
		bad=$(e2e_mismatch "$work/$svc.want" "$work/$svc")
		e2e_expect_eq "$svc: every flow on the node ringctl lookup names ($((SECONDS - t0)) s)" \
			"$bad" 0
	else
		e2e_fail "$svc: ringctl lookup answered $(wc -l <"$work/$svc.want") of $FLOWS"
	fi

	# observed counts against the exact shares, node by node
	e2e_shares "$svc" >"$work/$svc.shares"
	obs='' shares='' view=''
	while read -r node share; do
		n=$(e2e_count "$work/$svc" "$node")
		sent_on["$svc $node"]=$n
		obs="$obs $n" shares="$shares $share"
		view="$view $node=$n/$(awk -v s="$share" -v n="$FLOWS" \
			'BEGIN { printf "%.1f", s * n }')"
	done <"$work/$svc.shares"
	if res=$(e2e_chisq "$obs" "$shares" "$ALPHA" 2>&1); then
		e2e_pass "$svc: observed/expected$view: $res"
	else
		e2e_fail "$svc: distribution off the ring's shares:$view: $res"
	fi
done

# The nodes' own counters: every TCP connection the client saw answered
# was accepted by that node and no other; every datagram answered was
# received there (a resent one counts twice, so at least).
sleep 0.3
ok=1 detail=''
for ((i = 1; i <= TB_NODES; i++)); do
	node=${TB_NODE_NAME[i]}
	# tcp_accepted and udp_datagrams count both families
	a6=$(e2e_server_count "$i" tcp_accepted6)
	a4=$(($(e2e_server_count "$i" tcp_accepted) - a6))
	u6=$(e2e_server_count "$i" udp_datagrams6)
	u4=$(($(e2e_server_count "$i" udp_datagrams) - u6))
	detail="$detail $node=$a4/$a6/$u4/$u6"
	[ "$a4" -eq "${sent_on["web $node"]}" ] &&
		[ "$a6" -eq "${sent_on["web6 $node"]}" ] &&
		[ "$u4" -ge "${sent_on["webu $node"]}" ] &&
		[ "$u6" -ge "${sent_on["webu6 $node"]}" ] || ok=0
done
e2e_expect_eq "node servers counted what the client saw (tcp4/tcp6/udp4/udp6:$detail)" \
	"$ok" 1

# The director's counters: nothing dropped, at least one packet per
# datagram and three per TCP connection (SYN, ACK, RST) forwarded, each
# service's packets the sum of its nodes', every node's at least its
# flows' worth.
e2e_ctl stats --json >"$work/stats.json" || e2e_fail "ringctl stats --json"
for s in "${services[@]}"; do
	read -r svc vip proto src <<<"$s"
	echo "$svc $proto $(for ((i = 1; i <= TB_NODES; i++)); do
		printf '%s=%s,' "${TB_NODE_NAME[i]}" \
			"${sent_on["$svc ${TB_NODE_NAME[i]}"]}"
	done)"
done >"$work/sent"
if res=$(python3 - "$work/stats.json" "$work/sent" "$FLOWS" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
flows = int(sys.argv[3])
c = d["counters"]
errs = []
per = {"tcp": 3, "udp": 1}
sent = {}
for line in open(sys.argv[2]):
    name, proto, nodes = line.split()
    sent[name] = (proto, dict(kv.split("=") for kv in
                              nodes.strip(",").split(",")))
need = sum(per[p] * flows for p, _ in sent.values())
fwd = c["forwarded-tx"] + c["forwarded-redirect"]
if fwd < need:
    errs.append("forwarded %d < %d" % (fwd, need))
for k in ("redirect-failed", "dropped-malformed", "dropped-fragment",
          "dropped-no-node"):
    if c[k]:
        errs.append("%s = %d" % (k, c[k]))
total = 0
for s in d["services"]:
    proto, on = sent[s["name"]]
    total += s["packets"]
    if s["packets"] < per[proto] * flows:
        errs.append("%s: %d packets < %d" % (s["name"], s["packets"],
                                             per[proto] * flows))
    if sum(n["packets"] for n in s["nodes"]) != s["packets"]:
        errs.append("%s: nodes do not add up" % s["name"])
    for n in s["nodes"]:
        want = per[proto] * int(on[n["name"]])
        if n["packets"] <= 0 or n["packets"] < want:
            errs.append("%s/%s: %d packets < %d" % (s["name"], n["name"],
                                                    n["packets"], want))
if fwd < total:
    errs.append("forwarded %d < services' %d" % (fwd, total))
print("; ".join(errs) if errs else
      "forwarded %d packets (>= %d), services %d, nothing dropped"
      % (fwd, need, total))
sys.exit(1 if errs else 0)
EOF
); then
	e2e_pass "ringctl stats consistent with the traffic: $res"
else
	e2e_fail "ringctl stats: $res"
fi

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
