#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# QUIC-LB encrypted CIDs (--key quic with --quic-key-file) end to end on
# the testbed, with QUIC packets made by the test: three nodes with
# server IDs ed793a (the draft's first encrypted vector), 000002, 000003;
# the director decrypts each DCID in XDP with the kernel's AES.
#   key handling   a key file others may read, or that holds no key, is
#                  refused; show and save name the file, never the key;
#                  save | restore keeps the service encrypted; a
#                  restore that fails puts the key back as it was; one
#                  that drops the service, or service del, wipes its key
#   control plane  lookup --cid decrypts the draft's vector to its node;
#                  quic-cid makes encrypted CIDs lookup routes to their
#                  node (and whose plaintext octets name no server ID)
#   packets        short headers of each node's CIDs from 40 ports and a
#                  second address: every one on its node, counted
#                  quic-cid-routed; the same over IPv6 to a service on
#                  the IPv6 VIP
#   no crypto      the plaintext object (what a kernel without the BPF
#                  crypto kfuncs gets) is not attached over the crypto
#                  object's pins; attached on its own, ringctl refuses
#                  the encrypted service at configuration, with the
#                  reason
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=tests/e2e/quic_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/quic_lib.sh"

PORT=443
CLIENT2=198.18.0.77
KEY=8f95f09245765f80256934e50c66207f # the draft's test vectors' key

quic_testbed quic_crypt

SID=(- ed793a 000002 000003)
add_svc()
{
	e2e_ctl service add "$1" --vip "$TB_VIP4" --port "$PORT" --proto udp \
		--key quic:3:4 "${@:2}"
}

# ---- key handling -----------------------------------------------------------
keyf=$work/lb.key
(umask 077 && echo "$KEY" >"$keyf")
cp "$keyf" "$work/open.key" && chmod 644 "$work/open.key"
(umask 077 && echo "8f95f092" >"$work/short.key")
add_svc q --quic-key-file "$work/open.key" >/dev/null 2>"$work/err"
e2e_expect_eq "a key file others may read is refused (exit 2)" "$?" 2
e2e_check "... saying chmod 600" grep -q "chmod 600" "$work/err"
add_svc q --quic-key-file "$work/short.key" >/dev/null 2>"$work/err"
e2e_expect_eq "a key file without 32 hex digits is refused (exit 2)" "$?" 2
e2e_ctl service add f --vip "$TB_VIP4" --port 8443 --proto udp \
	--quic-key-file "$keyf" >/dev/null 2>&1
e2e_expect_eq "--quic-key-file without --key quic is refused (exit 2)" "$?" 2
add_svc q --quic-key-file "$keyf" >/dev/null ||
	e2e_die "service add --key quic --quic-key-file"
for i in 1 2 3; do
	quic_node_add q "$i" --server-id "${SID[i]}" || e2e_die "node add $i"
done
e2e_ctl show q >"$work/show"
e2e_ctl show q --json >"$work/show.json"
e2e_ctl save >"$work/saved"
e2e_check "show says encrypted, and the key's file" \
	grep -q "encrypted CIDs (AES-128-ECB, four passes), key from $keyf" \
	"$work/show"
e2e_expect_eq "show --json: encryption, key loaded, its file" \
	"$(e2e_json '(d["services"][0]["quic_encryption"], d["services"][0]["quic_key_loaded"], d["services"][0]["quic_key_file"])' <"$work/show.json" | tr '\n' ' ')" \
	"aes-128-ecb True $keyf "
e2e_check "save writes --quic-key-file with the file" \
	grep -q -- "--key quic:3:4:0:self --quic-key-file $keyf" "$work/saved"
e2e_check "neither show nor save prints the key" \
	test "$(cat "$work/show" "$work/show.json" "$work/saved" | grep -ci "$KEY")" = 0

# ---- control plane ----------------------------------------------------------
e2e_expect_eq "lookup --cid: the draft's encrypted vector decrypts to its server ID" \
	"$(e2e_ctl lookup q --cid 0720b1d07b359d3c --json | e2e_json '(d["node"], d["by"], d["server_id"])' | tr '\n' ' ')" \
	"${TB_NODE_NAME[1]} server-id ed793a "
e2e_ctl quic-cid q "${TB_NODE_NAME[2]}" --count 20 >"$work/cids2" ||
	e2e_fail "quic-cid"
bad=0
plain=0
while read -r c; do
	[ "$(e2e_ctl lookup q --cid "$c" --json | e2e_json 'd["node"]')" = "${TB_NODE_NAME[2]}" ] || bad=$((bad + 1))
	[ "${c:2:6}" = 000002 ] && plain=$((plain + 1))
done <"$work/cids2"
e2e_expect_eq "quic-cid: 20 encrypted CIDs, each routed to its node by lookup --cid, none in plaintext" \
	"$(wc -l <"$work/cids2") $bad $plain" "20 0 0"

# ---- packets ----------------------------------------------------------------
e2e_ctl quic-cid q "${TB_NODE_NAME[1]}" --count 20 >"$work/cids1"
: >"$work/pkts"
port=30000
for f in cids1 cids2; do
	while read -r c; do
		p=41${c}000102030405060708090a0b0c0d0e0f1011121314151617
		echo "$TB_CLIENT_IP4 $port $PORT $p"
		echo "$CLIENT2 $port $PORT $p"
		port=$((port + 1))
	done <"$work/$f" >>"$work/pkts"
done
routed0=$(quic_stat quic-cid-routed)
e2e_expect_eq "40 datagrams of node1's encrypted CIDs and 40 of node2's from 40 ports on 2 addresses, each on its node" \
	"$(quic_deltas "$work/pkts")" "40 40 0"
e2e_expect_eq "quic-cid-routed rose by 80" \
	"$(($(quic_stat quic-cid-routed) - routed0))" 80

# the same CIDs over IPv6: a service of the same configuration and key on
# the IPv6 VIP, its nodes with the same server IDs
e2e_ctl service add q6 --vip "$TB_VIP6" --port "$PORT" --proto udp \
	--key quic:3:4 --quic-key-file "$keyf" >/dev/null ||
	e2e_die "service add q6"
for i in 1 2 3; do
	quic_node_add q6 "$i" --server-id "${SID[i]}" || e2e_die "node add q6 $i"
done
port=31000
for f in cids1 cids2; do
	while read -r c; do
		echo "$TB_CLIENT_IP6 $port $PORT 41${c}000102030405060708090a0b0c0d0e0f1011121314151617"
		port=$((port + 1))
	done <"$work/$f"
done >"$work/pkts6"
routed0=$(quic_stat quic-cid-routed)
e2e_expect_eq "IPv6: 20 datagrams of node1's encrypted CIDs and 20 of node2's from 40 ports, each on its node" \
	"$(QUIC_VIP=$TB_VIP6 quic_deltas "$work/pkts6")" "20 20 0"
e2e_expect_eq "IPv6: quic-cid-routed rose by 40" \
	"$(($(quic_stat quic-cid-routed) - routed0))" 40
e2e_ctl service del q6 >/dev/null || e2e_fail "service del q6"

# ---- save | restore ----------------------------------------------------------
e2e_ctl restore "$work/saved" >/dev/null || e2e_fail "restore"
e2e_expect_eq "after restore: the vector still decrypts to node1" \
	"$(e2e_ctl lookup q --cid 0720b1d07b359d3c --json | e2e_json 'd["node"]')" \
	"${TB_NODE_NAME[1]}"
e2e_expect_eq "after restore: the same 80 datagrams on their nodes" \
	"$(quic_deltas "$work/pkts")" "40 40 0"

# ---- a key's life over failed and committed changes ---------------------------
# slot's record in rm_quic_keys: its 16 key octets and the set word, hex
key_record()
{
	tb_exec "$TB_DIR_NS" bpftool map lookup pinned \
		/sys/fs/bpf/ringmaster/rm_quic_keys key "$1" 0 0 0 -j |
		e2e_json '"".join(x[2:] for x in d["value"][:20])'
}
zeros=0000000000000000000000000000000000000000
e2e_expect_eq "service q's record holds its key" "$(key_record 0)" "${KEY}01000000"
(umask 077 && echo 000102030405060708090a0b0c0d0e0f >"$work/other.key")
{
	sed "s|--quic-key-file $keyf|--quic-key-file $work/other.key|" "$work/saved"
	grep "^service add" "$work/saved" # a second q: refused at replay
} >"$work/fails"
e2e_ctl restore "$work/fails" >/dev/null 2>"$work/err"
e2e_expect_eq "a restore that fails after writing a new key (exit 1)" "$?" 1
e2e_expect_eq "... puts the key back" "$(key_record 0)" "${KEY}01000000"
e2e_expect_eq "... and the vector still decrypts to node1" \
	"$(e2e_ctl lookup q --cid 0720b1d07b359d3c --json | e2e_json 'd["node"]')" \
	"${TB_NODE_NAME[1]}"
grep -v "^service add q\|^node add q" "$work/saved" >"$work/dropq"
echo "service add p --vip $TB_VIP4 --port 8443 --proto udp" >>"$work/dropq"
e2e_ctl restore "$work/dropq" >/dev/null || e2e_fail "restore without q"
e2e_expect_eq "a restore that drops the encrypted service wipes its key" \
	"$(key_record 0)" "$zeros"
e2e_ctl restore "$work/saved" >/dev/null || e2e_fail "restore of q again"
qid=$(e2e_ctl service list --json | e2e_json '[s["id"] for s in d if s["name"] == "q"][0]')
e2e_expect_eq "restored again, q's key is back in its slot" \
	"$(key_record "$qid")" "${KEY}01000000"

# ---- a director without BPF crypto --------------------------------------------
e2e_ctl service del q >/dev/null || e2e_fail "service del"
e2e_expect_eq "service del wipes the key" "$(key_record "$qid")" "$zeros"
e2e_detach >/dev/null || e2e_fail "detach"
RM_QUIC_CRYPT=0 e2e_attach >/dev/null 2>"$work/err"
e2e_expect_eq "the plaintext object over the crypto object's pins is refused (exit 1)" \
	"$?" 1
e2e_check "... saying how to move the configuration over" \
	grep -q "ringload purge" "$work/err"
e2e_load purge >/dev/null || e2e_fail "ringload purge"
RM_QUIC_CRYPT=0 e2e_attach >/dev/null || e2e_die "attach, plaintext object"
add_svc q --quic-key-file "$keyf" >/dev/null 2>"$work/err"
e2e_expect_eq "plaintext director: an encrypted service is refused (exit 1)" \
	"$?" 1
e2e_check "... saying the kernel has no BPF crypto" \
	grep -q "cannot decrypt QUIC CIDs" "$work/err"
e2e_expect_eq "... and nothing was added" \
	"$(e2e_ctl service list --json | e2e_json 'len(d)')" 0
add_svc q >/dev/null
e2e_expect_eq "the plaintext service is still taken" "$?" 0

suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
