#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ringsync and `ringctl publish` against a real etcd (Debian's etcd-server,
# 3.4) with client TLS and then authentication, in the director's
# namespace on 127.0.0.1. A throwaway CA, a server certificate naming
# 127.0.0.1 and client certificates are made with openssl in the
# testbed's state directory.
#   TLS (etcd --cert-file --key-file --trusted-ca-file --client-cert-auth):
#   - publish with --cacert/--cert/--tls-key writes a revision; ringsync
#     with the same options applies it, and the next one, to the
#     director's live state;
#   - without the CA, without the client certificate, or with an http://
#     URL: publish fails at once (exit 1) and ringsync keeps retrying, each
#     saying in one line what is wrong and which option fixes it.
#   Auth (etcdctl: root, a read-only role on the key for the directors'
#   user, a read-write one for the operator's; auth enable):
#   - the running TLS-only ringsync says in one line that etcd wants a
#     user, and the director keeps its revision;
#   - publish as the operator works; as the read-only user, with a wrong
#     password, or with a client certificate carrying a CN (the 3.4
#     gateway refuses those under auth) it fails with the fix named;
#   - ringsync --user/--password-file applies; a wrong password is one
#     clear log line, retried, no exit;
#   - simple tokens (etcd --auth-token-ttl 2) expire while ringsync waits
#     on its watch (--interval-ms 5000): it renews them (logged), and
#     revisions published after the expiry are applied (time reported).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RINGSYNC=$E2E_BUILD/ringsync
URL=https://127.0.0.1:2379
KEY=/ringmaster/fleet
TTL=2          # etcd --auth-token-ttl, seconds
INTERVAL=5000  # ringsync --interval-ms in the token part: > TTL
FAIL_S=10      # a refused publish must end within this (no hang)

e2e_require_director
e2e_require_tools etcd etcdctl openssl curl "$RINGSYNC"
e2e_setup 2
W=$TB_STATE_DIR/etcd-tls
mkdir -p "$W/scratch"

# ---- certificates -----------------------------------------------------------
# The README's way: examples/fleet/etcd-certs.sh (CA, server, client
# without a CN); two wrong ones made here for the refusals.
EX=$E2E_ROOT/examples/fleet
DAYS=1 bash "$EX/etcd-certs.sh" "$W" 127.0.0.1 >"$W/certs.log" 2>&1 ||
	e2e_die "examples/fleet/etcd-certs.sh: $(cat "$W/certs.log")"
# bad NAME SUBJECT EXT: a certificate signed by that CA, as told
bad()
{
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj "$2" -keyout "$W/$1.key" -out "$W/$1.csr" 2>/dev/null &&
		openssl x509 -req -in "$W/$1.csr" -CA "$W/ca.pem" \
			-CAkey "$W/ca.key" -CAcreateserial -days 1 \
			-extfile <(printf '%b\n' "$3") -out "$W/$1.pem" 2>/dev/null
}
bad client-cn "/CN=director" "extendedKeyUsage=clientAuth" ||
	e2e_die "openssl: a client certificate with a CN"
bad server-only "/CN=etcd" \
	"subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth" ||
	e2e_die "openssl: a server certificate without clientAuth"
TLS=(--cacert "$W/ca.pem" --cert "$W/client.pem" --tls-key "$W/client.key")
for u in root director operator; do
	printf '%s-%s\n' "$u" "$TB_SUF" >"$W/$u.pw"
done
echo wrong >"$W/wrong.pw"

# ---- etcd ------------------------------------------------------------------------
# etcd_start NAME PORT CERT: etcd with client TLS on 127.0.0.1:PORT (peer
# PORT+1) in the director's namespace, serving certificate CERT, data and
# log in $W; its PID in ETCD_PID; waits until it answers (15 s).
etcd_start()
{
	local name=$1 port=$2 t
	tb_spawn "$TB_DIR_NS" "$W/$name.log" etcd --name "$name" \
		--data-dir "$W/$name.data" \
		--listen-client-urls "https://127.0.0.1:$port" \
		--advertise-client-urls "https://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
		--initial-cluster "$name=http://127.0.0.1:$((port + 1))" \
		--cert-file "$W/$3.pem" --key-file "$W/$3.key" \
		--trusted-ca-file "$W/ca.pem" --client-cert-auth \
		--auth-token simple --auth-token-ttl "$TTL"
	ETCD_PID=$TB_LAST_PID
	e2e_on_teardown "e2e_stop_pid $ETCD_PID"
	for ((t = 0; t < 150; t++)); do
		tb_exec "$TB_DIR_NS" curl -sf -m 1 --cacert "$W/ca.pem" \
			--cert "$W/client.pem" --key "$W/client.key" \
			"https://127.0.0.1:$port/version" >/dev/null 2>&1 &&
			return 0
		sleep 0.1
	done
	return 1
}

etcd_start etcd 2379 server ||
	e2e_die "etcd with client TLS started: $(tail -3 "$W/etcd.log")"
ETCD_MAIN=$ETCD_PID

# publish OUT FILE [options]: ringctl publish; exit status, its output
# (stdout and stderr) in OUT, the time it took in ms in PUB_MS.
publish()
{
	local out=$1 f=$2 rc t0
	shift 2
	t0=$(date +%s%3N)
	tb_exec "$TB_DIR_NS" timeout 30 "$RINGCTL" publish "$f" --etcd "$URL" \
		--key "$KEY" "$@" >"$out" 2>&1
	rc=$?
	PUB_MS=$(($(date +%s%3N) - t0))
	return $rc
}

# sync_start NAME [ringsync options]: ringsync in the director's
# namespace, log in $W/NAME.log; its PID in SYNC_PID.
sync_start()
{
	local name=$1
	shift
	tb_spawn "$TB_DIR_NS" "$W/$name.log" "$RINGSYNC" --etcd "$URL" \
		--key "$KEY" --backoff-max-ms 1000 "$@"
	SYNC_PID=$TB_LAST_PID
	e2e_on_teardown "e2e_stop_pid $SYNC_PID"
}

applied()
{
	e2e_ctl show --json 2>/dev/null | e2e_json 'd["applied"]["revision"]' 2>/dev/null
}

# wait_applied REV SECONDS: until the director's applied revision is REV;
# the time from the call in ms in WAIT_MS.
wait_applied()
{
	local t0 end=$((SECONDS + $2))
	t0=$(date +%s%3N)
	while [ "$SECONDS" -le "$end" ]; do
		if [ "$(applied)" = "$1" ]; then
			WAIT_MS=$(($(date +%s%3N) - t0))
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# wait_log FILE REGEX SECONDS
wait_log()
{
	local t
	for ((t = 0; t < $3 * 10; t++)); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# doc W1 W2: node1 and node2 of the testbed with weights W1 and W2.
doc()
{
	echo "seed --set 000102030405060708090a0b0c0d0e0f"
	echo "service add web --vip $TB_VIP4 --port $E2E_PORT --proto tcp"
	echo "node add web ${TB_NODE_NAME[1]} --mac ${TB_NODE_MAC[1]} --dev ${TB_DIR_NODE_IF[1]} --weight $1"
	echo "node add web ${TB_NODE_NAME[2]} --mac ${TB_NODE_MAC[2]} --dev ${TB_DIR_NODE_IF[2]} --weight $2"
}

# weights: the live state's node weights, "node1=W node2=W".
weights()
{
	e2e_ctl save 2>/dev/null | sed -n \
		's/^node add web \([^ ]*\) .*--weight \([0-9]*\).*/\1=\2/p' |
		sort | tr '\n' ' ' | sed 's/ $//'
}

e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"

# ---- TLS ------------------------------------------------------------------------
doc 1 1 >"$W/doc1"
doc 1 2 >"$W/doc2"
doc 2 2 >"$W/doc3"
doc 3 2 >"$W/doc4"
doc 3 3 >"$W/doc5"

publish "$W/p1" "$W/doc1" "${TLS[@]}" --json
rc=$?
R1=$(e2e_json 'd["revision"]' <"$W/p1" 2>/dev/null)
e2e_expect_eq "TLS: publish --cacert --cert --tls-key writes a revision ($(tr -d '\n' <"$W/p1"))" \
	"$rc:${R1:+set}" "0:set"

sync_start sync-tls "${TLS[@]}" --interval-ms 1000
SYNC_TLS=$SYNC_PID
wait_applied "$R1" 20
e2e_expect_eq "TLS: ringsync --cacert --cert --tls-key applied revision $R1 to the director" \
	"$(applied):$(weights)" "$R1:node1=1 node2=1"

publish "$W/p2" "$W/doc2" "${TLS[@]}" --json
R2=$(e2e_json 'd["revision"]' <"$W/p2" 2>/dev/null)
wait_applied "$R2" 20 && e2e_log "revision $R2 applied ${WAIT_MS} ms after publish returned"
e2e_expect_eq "TLS: the next revision ($R2, node2 weight 2) reaches the director through the watch" \
	"$(applied):$(weights)" "$R2:node1=1 node2=2"

publish "$W/p-noca" "$W/doc3" --cert "$W/client.pem" --tls-key "$W/client.key"
rc=$?
e2e_expect_eq "TLS: publish without --cacert: exit 1 in ${PUB_MS} ms (< ${FAIL_S} s), says to give --cacert ($(cat "$W/p-noca"))" \
	"$rc:$((PUB_MS < FAIL_S * 1000)):$(grep -c 'not signed by a CA this host trusts: give the CA that signed it with --cacert FILE.*nothing written' "$W/p-noca")" \
	"1:1:1"
publish "$W/p-nocert" "$W/doc3" --cacert "$W/ca.pem"
rc=$?
e2e_expect_eq "TLS: publish without a client certificate: exit 1 in ${PUB_MS} ms, says to give --cert and --tls-key ($(cat "$W/p-nocert"))" \
	"$rc:$((PUB_MS < FAIL_S * 1000)):$(grep -c 'requires a client certificate (etcd --client-cert-auth): give --cert FILE --tls-key FILE' "$W/p-nocert")" \
	"1:1:1"
tb_exec "$TB_DIR_NS" timeout 30 "$RINGCTL" publish "$W/doc3" \
	--etcd http://127.0.0.1:2379 --key "$KEY" >"$W/p-http" 2>&1
rc=$?
e2e_expect_eq "TLS: publish to an http:// URL of the TLS etcd: exit 1, says to use https:// ($(cat "$W/p-http"))" \
	"$rc:$(grep -c 'use an https:// URL' "$W/p-http")" "1:1"
# etcd serving a certificate without clientAuth: its own gateway cannot
# dial it under --client-cert-auth
if etcd_start etcd-bad 2479 server-only; then
	tb_exec "$TB_DIR_NS" timeout 30 "$RINGCTL" publish "$W/doc3" \
		--etcd https://127.0.0.1:2479 --key "$KEY" "${TLS[@]}" \
		>"$W/p-eku" 2>&1
	rc=$?
	e2e_expect_eq "TLS: etcd's certificate lacks clientAuth: publish exit 1, names the extendedKeyUsage fix ($(cat "$W/p-eku"))" \
		"$rc:$(grep -c 'must allow clientAuth too' "$W/p-eku")" "1:1"
else
	e2e_fail "etcd with a serverAuth-only certificate started: $(tail -3 "$W/etcd-bad.log")"
fi
e2e_stop_pid "$ETCD_PID"
tb_exec "$TB_DIR_NS" "$RINGCTL" publish "$W/doc3" --etcd "$URL" --key "$KEY" \
	--cacert "$W/ca.pem" --cert "$W/client.pem" >"$W/p-nokey" 2>&1
e2e_expect_eq "publish --cert without --tls-key: usage error (exit 2)" "$?" 2

# ringsync with a part missing: into a scratch pin dir (it must apply
# nothing anyway); alive, retrying, and one line saying why.
sync_start sync-noca --pin-dir "$W/scratch" --cert "$W/client.pem" \
	--tls-key "$W/client.key"
P_NOCA=$SYNC_PID
sync_start sync-nocert --pin-dir "$W/scratch" --cacert "$W/ca.pem"
P_NOCERT=$SYNC_PID
wait_log "$W/sync-noca.log" 'etcd unreachable' 10
wait_log "$W/sync-nocert.log" 'etcd unreachable' 10
sleep 3 # several retries (backoff 100 ms .. 1 s)
e2e_expect_eq "TLS: ringsync without --cacert: still retrying, one line naming the fix ($(grep unreachable "$W/sync-noca.log" | head -1))" \
	"$(kill -0 "$P_NOCA" 2>/dev/null && echo alive):$(grep -c 'etcd unreachable' "$W/sync-noca.log"):$(grep -c 'give the CA that signed it with --cacert FILE' "$W/sync-noca.log")" \
	"alive:1:1"
e2e_expect_eq "TLS: ringsync without a client certificate: still retrying, one line naming the fix ($(grep unreachable "$W/sync-nocert.log" | head -1))" \
	"$(kill -0 "$P_NOCERT" 2>/dev/null && echo alive):$(grep -c 'etcd unreachable' "$W/sync-nocert.log"):$(grep -c 'give --cert FILE --tls-key FILE' "$W/sync-nocert.log")" \
	"alive:1:1"
e2e_stop_pid "$P_NOCA"
e2e_stop_pid "$P_NOCERT"
e2e_expect_eq "TLS: the failing ringsyncs end on SIGTERM" \
	"$(grep -c 'stopped (SIGTERM)' "$W/sync-noca.log" "$W/sync-nocert.log" | cut -d: -f2 | tr '\n' ' ')" "1 1 "

# ---- authentication -------------------------------------------------------
tb_exec "$TB_DIR_NS" bash "$EX/etcd-auth.sh" "$KEY" "$W" --endpoints "$URL" \
	--cacert "$W/ca.pem" --cert "$W/client.pem" --key "$W/client.key" \
	>"$W/etcdctl.log" 2>&1
ok=$((! $?))
e2e_expect_eq "auth: examples/fleet/etcd-auth.sh: root, roles fleet-read/fleet-write on $KEY, users director/operator, auth enabled ($(tail -1 "$W/etcdctl.log"))" \
	"$ok" 1

wait_log "$W/sync-tls.log" 'give --user NAME --password-file FILE' 10
sleep 2
e2e_expect_eq "auth: the running ringsync without a user says in one line that etcd wants one, director keeps revision $R2 ($(grep refused "$W/sync-tls.log" | head -1))" \
	"$(grep -c 'etcd refused' "$W/sync-tls.log"):$(grep -c 'give --user NAME --password-file FILE' "$W/sync-tls.log"):$(applied)" \
	"1:1:$R2"
e2e_stop_pid "$SYNC_TLS"

OP=(--user operator --password-file "$W/operator.pw")
publish "$W/p3" "$W/doc3" "${TLS[@]}" "${OP[@]}" --json
rc=$?
R3=$(e2e_json 'd["revision"]' <"$W/p3" 2>/dev/null)
e2e_expect_eq "auth: publish --user operator --password-file writes revision ${R3:-none}" \
	"$rc:${R3:+set}" "0:set"

publish "$W/p-ro" "$W/doc4" "${TLS[@]}" --user director \
	--password-file "$W/director.pw"
rc=$?
e2e_expect_eq "auth: publish as the read-only director user: exit 1, permission denied, names the fix ($(cat "$W/p-ro"))" \
	"$rc:$(grep -c "permission denied: grant user 'director' a role with access to the key" "$W/p-ro")" \
	"1:1"
publish "$W/p-wrong" "$W/doc4" "${TLS[@]}" --user operator \
	--password-file "$W/wrong.pw"
rc=$?
e2e_expect_eq "auth: publish with a wrong password: exit 1 in ${PUB_MS} ms, says so ($(cat "$W/p-wrong"))" \
	"$rc:$((PUB_MS < FAIL_S * 1000)):$(grep -c "authentication failed.*user 'operator' and the password in --password-file do not match" "$W/p-wrong")" \
	"1:1:1"
publish "$W/p-cn" "$W/doc4" --cacert "$W/ca.pem" --cert "$W/client-cn.pem" \
	--tls-key "$W/client-cn.key" "${OP[@]}"
rc=$?
e2e_expect_eq "auth: publish with a client certificate carrying a CN: exit 1, says to issue it without one ($(cat "$W/p-cn"))" \
	"$rc:$(grep -c 'issue the --cert certificate without one' "$W/p-cn")" "1:1"

sync_start sync-wrong --pin-dir "$W/scratch" "${TLS[@]}" --user director \
	--password-file "$W/wrong.pw"
P_WRONG=$SYNC_PID
sync_start sync-auth "${TLS[@]}" --user director --password-file \
	"$W/director.pw" --interval-ms "$INTERVAL"
P_AUTH=$SYNC_PID
wait_applied "$R3" 20
e2e_expect_eq "auth: ringsync --user director --password-file applied revision $R3" \
	"$(applied):$(weights)" "$R3:node1=2 node2=2"
wait_log "$W/sync-wrong.log" 'etcd refused' 10
sleep 2
e2e_expect_eq "auth: ringsync with a wrong password: still retrying, one line saying so ($(grep refused "$W/sync-wrong.log" | head -1))" \
	"$(kill -0 "$P_WRONG" 2>/dev/null && echo alive):$(grep -c 'etcd refused' "$W/sync-wrong.log"):$(grep -c "authentication failed.*do not match an etcd user" "$W/sync-wrong.log")" \
	"alive:1:1"
e2e_stop_pid "$P_WRONG"

# ---- token expiry -----------------------------------------------------------
# Idle longer than the TTL while ringsync waits on its watch; then
# publish: the change must still arrive, with the token renewed.
lat=()
ok=1
for d in doc4 doc5; do
	sleep $((TTL + 2))
	publish "$W/p-$d" "$W/$d" "${TLS[@]}" "${OP[@]}" --json || ok=0
	rev=$(e2e_json 'd["revision"]' <"$W/p-$d" 2>/dev/null)
	if wait_applied "$rev" 20; then
		lat+=("$WAIT_MS")
	else
		ok=0
	fi
done
R5=$rev
renewed=$(grep -c 'auth token expired (etcd --auth-token-ttl): renewed' "$W/sync-auth.log")
e2e_log "token TTL $TTL s, watch $INTERVAL ms: publish-to-applied ${lat[*]} ms, $renewed renewal lines"
e2e_expect_eq "auth: after the token expired (TTL $TTL s) two revisions were applied (${lat[*]} ms after publish), renewals logged, nothing refused" \
	"$ok:$(applied):$((renewed >= 1)):$(grep -c 'etcd refused' "$W/sync-auth.log")" \
	"1:$R5:1:0"
e2e_expect_eq "auth: the director holds the last document" "$(weights)" \
	"node1=3 node2=3"
e2e_stop_pid "$P_AUTH"
e2e_check "ringsync --user ended on SIGTERM" grep -q 'stopped (SIGTERM)' \
	"$W/sync-auth.log"
e2e_log "ringsync log: $(tr '\n' '|' <"$W/sync-auth.log")"

e2e_stop_pid "$ETCD_MAIN"
suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_expect_eq "no etcd left from this test" \
	"$(pgrep -f "rm-tb-$suf" | wc -l)" 0
e2e_finish
