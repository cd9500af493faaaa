#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# A fleet of three directors with GUE nodes from one etcd document, each
# director with its own outer source (docs/fleet-local-settings.md):
# client -> router (BIRD, ECMP) -> 3 directors (ringsync) -> 4 GUE nodes
# running `ringload decap` (tests/e2e/gue_fleet.sh).
#   1. The fleet's document (no outer source) is applied by all three;
#      each director is given its own source locally (config
#      --encap-src4) and keeps it.
#   2. save writes it in a local section, save --fleet leaves it out and
#      is the same on all three directors; publish refuses the full save
#      (exit 2, the key unchanged).
#   3. A shared change (a node added, the UDP timeout) published from one
#      director's save --fleet reaches all three; each keeps its source.
#   4. A document written into etcd behind publish's back with another
#      director's source and a shared change: the change applies, the
#      sources stay (ringsync applies with --keep-local).
#   5. Real TCP flows spread by ECMP over the three: every flow answered
#      by the node `ringctl lookup` names, and on the wire (tcpdump on
#      each director's LAN port) every GUE packet of director k has
#      director k's source.
#   6. ringctl apply of a document whose only change is the outer source
#      writes it (it used to say "no change"); apply --keep-local of the
#      same document changes nothing.
#   7. An encrypted QUIC service (--quic-key-file) in the fleet's
#      document: every director loads the key from the file it names, and
#      decrypts the draft's vector to the node of its server ID; a
#      document naming a key file that is not there is rejected by every
#      director, which keeps the revision before it and its key.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FL_NSRC=3
# shellcheck source=scripts/fleet.sh
source "$E2E_ROOT/scripts/fleet.sh"
FL_BUILD=$E2E_BUILD
# shellcheck source=tests/e2e/gue_fleet.sh
source "$E2E_ROOT/tests/e2e/gue_fleet.sh"

FLOWS=100 # per client source address

e2e_require_director
for t in bird birdc etcd etcdctl curl tcpdump "$E2E_BUILD/ringsync"; do
	command -v "$t" >/dev/null 2>&1 ||
		e2e_die "$t missing: scripts/install-deps.sh (bird2, etcd-server, etcd-client, curl, tcpdump), make"
done
exec {E2E_STDOUT}>&1 {E2E_STDERR}>&2
trap _e2e_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
gf_up 3 4 || e2e_die "fleet of 3 directors and 4 GUE nodes with decap"
TB_CLIENT_NS=$FL_CLIENT_NS TB_STATE_DIR=$FL_DIR TB_BPFFS=
e2e_log "fleet $FL_SUF in $FL_DIR"
W=$FL_DIR/work
mkdir -p "$W"
gf_servers "$FL_PORT" || e2e_die "servers on the nodes"

# applied_rev K: the revision director K's ringsync applied.
applied_rev()
{
	fleet_load "$1" status --json 2>/dev/null |
		sed -n 's/.*"applied":{[^}]*"revision":\([0-9]*\),.*/\1/p'
}

# wait_rev REV: until all three directors applied REV (20 s at most).
wait_rev()
{
	local k t
	for ((t = 0; t < 200; t++)); do
		for ((k = 1; k <= FL_D; k++)); do
			[ "$(applied_rev "$k")" = "$1" ] || break
		done
		[ "$k" -le "$FL_D" ] || return 0
		sleep 0.1
	done
	return 1
}

# jfield KEY: the value of a flat field of the JSON on stdin (sed, not
# python: a python start takes seconds on a loaded machine).
jfield()
{
	sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\).*/\1/p'
}

# cfg K KEY: a field of director K's config --json.
cfg()
{
	fleet_ctl "$1" config --json | jfield "$2"
}

# sources: "K SRC" of every director, from config --json.
sources()
{
	local k
	for ((k = 1; k <= FL_D; k++)); do
		echo "$k $(cfg "$k" encap_src4)"
	done
}
want_sources()
{
	local k
	for ((k = 1; k <= FL_D; k++)); do echo "$k ${GF_SRC[k]}"; done
}
want_sources >"$W/sources.want"

# ---- 1. one document, three directors, three sources ----------------------
{
	echo "seed --set $FL_SEED"
	echo "config --udp-timeout 60 --conn-insert-rate 200000"
	echo "service add web --vip $FL_VIP4 --port $FL_PORT --proto tcp --vnodes 100"
	gf_node_doc web 1 2 3
} >"$W/doc0"
REV=$(fleet_publish "$W/doc0" --json | jfield revision)
ok=1
for ((k = 1; k <= FL_D; k++)); do
	fleet_director_start "$k" || ok=0
done
wait_rev "$REV" || ok=0
for ((k = 1; k <= FL_D; k++)); do
	fleet_ctl "$k" config --encap-src4 "${GF_SRC[k]}" >/dev/null || ok=0
done
e2e_expect_eq "revision $REV applied by 3 directors; each given its own outer source ($(sources | tr '\n' ' '))" \
	"$ok:$(sources | cmp -s - "$W/sources.want" && echo own)" "1:own"

# ---- 2. save, save --fleet, publish -----------------------------------------
ok=1
for ((k = 1; k <= FL_D; k++)); do
	fleet_ctl "$k" save >"$W/save$k" || ok=0
	fleet_ctl "$k" save --fleet >"$W/fleet$k" || ok=0
	grep -qx "config --encap-src4 ${GF_SRC[k]} --encap-src6 none" \
		"$W/save$k" || ok=0
	! grep -q -- '--encap-src' "$W/fleet$k" || ok=0
done
e2e_expect_eq "save writes each director's own source, save --fleet none" "$ok" 1
e2e_check "save --fleet is the same on the three directors" sh -c \
	"cmp -s $W/fleet1 $W/fleet2 && cmp -s $W/fleet1 $W/fleet3"
fleet_publish "$W/save1" >"$W/pub-local.out" 2>&1
rc=$?
e2e_expect_eq "publish of a full save: exit 2, names the line and save --fleet ($(tr -d '\n' <"$W/pub-local.out"))" \
	"$rc:$(grep -c 'sets --encap-src4.*save --fleet' "$W/pub-local.out")" "2:1"
e2e_expect_eq "the key is still at revision $REV" \
	"$(ip netns exec "$FL_ROUTER_NS" etcdctl --endpoints http://127.0.0.1:2379 \
		get "$FL_KEY" -w json | jfield mod_revision)" "$REV"

# ---- 3. a shared change from one director's save --fleet ------------------
sed 's/--udp-timeout 60 /--udp-timeout 50 /' "$W/fleet1" >"$W/doc1"
gf_node_doc web 4 >>"$W/doc1"
REV=$(fleet_publish "$W/doc1" --json | jfield revision)
ok=1
wait_rev "$REV" || ok=0
for ((k = 1; k <= FL_D; k++)); do
	[ "$(cfg "$k" udp_timeout_s)" = 50 ] || ok=0
	fleet_ctl "$k" save --fleet | grep -q '^node add web node4 ' || ok=0
done
e2e_expect_eq "revision $REV (node4, UDP timeout 50) applied by all three" "$ok" 1
e2e_expect_eq "each director kept its own source ($(sources | tr '\n' ' '))" \
	"$(sources | cmp -s - "$W/sources.want" && echo own)" own

# ---- 4. another director's source in etcd, behind publish's back ----------
{
	sed 's/--udp-timeout 50 /--udp-timeout 45 /' "$W/doc1"
	echo "config --encap-src4 ${GF_SRC[1]} --encap-src6 none"
} >"$W/doc2"
ip netns exec "$FL_ROUTER_NS" etcdctl --endpoints http://127.0.0.1:2379 \
	put "$FL_KEY" <"$W/doc2" >/dev/null || e2e_fail "etcdctl put"
REV=$(ip netns exec "$FL_ROUTER_NS" etcdctl --endpoints http://127.0.0.1:2379 \
	get "$FL_KEY" -w json | jfield mod_revision)
ok=1
wait_rev "$REV" || ok=0
for ((k = 1; k <= FL_D; k++)); do
	[ "$(cfg "$k" udp_timeout_s)" = 45 ] || ok=0
done
e2e_expect_eq "revision $REV (UDP timeout 45, director 1's source) applied by all three" \
	"$ok" 1
e2e_expect_eq "... and directors 2 and 3 kept their own source ($(sources | tr '\n' ' '))" \
	"$(sources | cmp -s - "$W/sources.want" && echo own)" own

# ---- 5. traffic through ECMP; the sources on the wire ---------------------
# every director's BGP session up first: a session that is late (a loaded
# machine) leaves its director out of the route, and out of the traffic
fleet_wait_nexthops "$FL_D" 30
e2e_expect_eq "the router's VIP route names all $FL_D directors (ECMP)" \
	"$(fleet_nexthops)" "$FL_D"
for ((k = 1; k <= FL_D; k++)); do
	# bounded: at most 20000 packets, 60 s; stopped after the flows
	ip netns exec "$FL_ROUTER_NS" timeout 60 tcpdump -l -n -p -c 20000 \
		-i "r-l$k" "udp dst port 6080" >"$W/wire$k" 2>"$W/wire$k.err" &
	tcpdump_pid[k]=$!
	e2e_on_teardown "kill ${tcpdump_pid[k]} 2>/dev/null"
done
for ((k = 1; k <= FL_D; k++)); do
	e2e_wait_for 5 grep -q 'listening on' "$W/wire$k.err" ||
		e2e_fail "tcpdump on r-l$k started"
done
ok=1
: >"$W/flows"
: >"$W/want"
for src in "${FL_CLIENT_SRCS[@]}"; do
	ip netns exec "$FL_CLIENT_NS" "$RM_CLIENT" --vip "$FL_VIP4" \
		--port "$FL_PORT" --src "$src" --count "$FLOWS" \
		--sport-base 30000 --timeout-ms 3000 --retries 2 \
		>"$W/flows.raw" 2>/dev/null || ok=0
	awk '{ print $1 ":" $2, $3 }' "$W/flows.raw" >>"$W/flows"
	seq 30000 $((30000 + FLOWS - 1)) >"$W/ports"
	fleet_ctl 1 lookup web --src "$src" --sport-file - <"$W/ports" |
		awk -v s="$src" '{ print s ":" $1, $2 }' >>"$W/want"
done
sort -o "$W/flows" "$W/flows"
sort -o "$W/want" "$W/want"
n=$((FLOWS * ${#FL_CLIENT_SRCS[@]}))
e2e_expect_eq "$n TCP flows from ${#FL_CLIENT_SRCS[@]} sources answered" \
	"$ok:$(grep -vc ' FAIL$' "$W/flows")" "1:$n"
e2e_expect_eq "every flow answered by the node ringctl lookup names" \
	"$(e2e_mismatch "$W/want" "$W/flows")" 0
sleep 0.5
for ((k = 1; k <= FL_D; k++)); do kill "${tcpdump_pid[k]}" 2>/dev/null; done
wait 2>/dev/null
for ((k = 1; k <= FL_D; k++)); do
	# "IP SRC.PORT > DST.6080: UDP, length N"
	own=$(awk -v s="${GF_SRC[k]}" '$2 == "IP" { split($3, a, "."); ip = a[1] "." a[2] "." a[3] "." a[4]; if (ip == s) o++; else x++ } END { print o + 0, x + 0 }' "$W/wire$k")
	e2e_check "director $k: GUE packets on the wire, all from ${GF_SRC[k]} (own, other: $own)" \
		test "${own% *}" -gt 0 -a "${own#* }" -eq 0
done

# ---- 6. apply: the outer source alone is a change --------------------------
fleet_ctl 2 save >"$W/save2" || e2e_fail "save on director 2"
sed "s/--encap-src4 ${GF_SRC[2]} /--encap-src4 198.18.150.222 /" "$W/save2" \
	>"$W/save2.src"
out=$(fleet_ctl 2 apply --keep-local "$W/save2.src" 2>"$W/keep.err")
e2e_expect_eq "apply --keep-local of a document with only another source: no change, a note, source kept" \
	"$(echo "$out" | grep -c '^no change'):$(grep -c 'ignored' "$W/keep.err"):$(cfg 2 encap_src4)" \
	"1:1:${GF_SRC[2]}"
out=$(fleet_ctl 2 apply "$W/save2.src")
e2e_expect_eq "apply of a document whose only change is the outer source writes it" \
	"$(echo "$out" | grep -c '^local: ');$(echo "$out" | grep -c '^no change'):$(cfg 2 encap_src4)" \
	"1;0:198.18.150.222"
fleet_ctl 2 apply "$W/save2" >/dev/null
e2e_expect_eq "and back" "$(cfg 2 encap_src4)" "${GF_SRC[2]}"

# ---- 7. an encrypted QUIC service from the fleet's document ----------------
# the draft's test vectors' key: its vector 0720b1d07b359d3c decrypts to
# server ID ed793a
(umask 077 && echo 8f95f09245765f80256934e50c66207f >"$W/lb.key")
quic_doc()
{
	cat "$W/doc1"
	echo "service add q --vip $FL_VIP4 --port 443 --proto udp --key quic:3:4 --quic-key-file $1"
	gf_node_doc q 1 | sed 's/$/ --server-id ed793a/'
	gf_node_doc q 2 | sed 's/$/ --server-id 000002/'
}
# cid_node K: the node director K sends the vector's CID to, and why
cid_node()
{
	fleet_ctl "$1" lookup q --cid 0720b1d07b359d3c --json |
		sed -n 's/.*"node":"\([^"]*\)".*"by":"\([^"]*\)".*/\1 \2/p'
}
quic_doc "$W/lb.key" >"$W/doc3"
REV=$(fleet_publish "$W/doc3" --json | jfield revision)
ok=1
wait_rev "$REV" || ok=0
for ((k = 1; k <= FL_D; k++)); do
	[ "$(cid_node "$k")" = "node1 server-id" ] || ok=0
done
[ "$ok" = 1 ] || tail -n 2 "$FL_DIR"/ringsync-d*.log
e2e_expect_eq "revision $REV (an encrypted QUIC service) applied by all three, each decrypting the vector to node1" \
	"$ok" 1
# publish checks the document, so it goes into etcd behind its back
quic_doc "$W/no-such.key" >"$W/doc4"
fleet_publish "$W/doc4" >/dev/null 2>&1
e2e_expect_eq "publish refuses a document naming a key file that is not there (exit 2)" \
	"$?" 2
ip netns exec "$FL_ROUTER_NS" etcdctl --endpoints http://127.0.0.1:2379 \
	put "$FL_KEY" <"$W/doc4" >/dev/null || e2e_fail "etcdctl put"
BAD=$(ip netns exec "$FL_ROUTER_NS" etcdctl --endpoints http://127.0.0.1:2379 \
	get "$FL_KEY" -w json | jfield mod_revision)
ok=0
for ((t = 0; t < 200 && ok == 0; t++)); do
	ok=1
	for ((k = 1; k <= FL_D; k++)); do
		fleet_load "$k" status --json 2>/dev/null |
			grep -q "\"rejected_revision\":${BAD}[,}]" || ok=0
	done
	[ "$ok" = 1 ] || sleep 0.1
done
for ((k = 1; k <= FL_D; k++)); do
	[ "$(applied_rev "$k")" = "$REV" ] || ok=0
	[ "$(cid_node "$k")" = "node1 server-id" ] || ok=0
done
e2e_expect_eq "revision $BAD (a key file that is not there) rejected by all three, which keep $REV and its key" \
	"$ok" 1

e2e_finish
