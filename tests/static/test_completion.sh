#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Bash completion (completion/ringctl, also ringload's and the daemons'): sourced in bash,
# COMP_WORDS/COMP_CWORD set as bash sets them, what COMPREPLY holds for
# commands, subcommands, a command's options (and not another's), an enum
# option's words (and --key's suggested extractors), interface names for
# --dev and attach. The live names (services, nodes) are checked against a
# director in tests/e2e/test_system.sh.
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"
[ -x "$BUILD/ringctl" ] || { echo "FAIL: $BUILD/ringctl missing: run make"; echo "0 passed, 1 failed"; exit 1; }
export PATH=$BUILD:$PATH
cands=$(mktemp /tmp/rm-comp.XXXXXX)
trap 'rm -f "$cands"' EXIT

# comp WORD...: COMPREPLY, sorted, one line, for the words with the cursor
# on the last one (a fresh bash each time: nothing carries over)
comp()
{
	bash --norc --noprofile -c '
		source completion/ringctl || exit 1
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
		_ringmaster
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' bash "$@"
}

# expect "WANT" WORD...: exactly these candidates, and nothing on stderr
expect()
{
	local want=$1 got errs
	shift
	errs=$( { got=$(comp "$@"); } 2>&1; echo "$got" >"$cands")
	got=$(cat "$cands")
	if [ -n "$errs" ]; then
		fail "[$*] -> stderr: $errs"
	elif [ "$got" = "$want" ]; then
		pass "[$*] -> $want"
	else
		fail "[$*] -> '$got', want '$want'"
	fi
}

ifaces=$(ls /sys/class/net | sort | tr '\n' ' ' | sed 's/ $//')
expect "apply config diff doctor history lookup node publish quic-cid restore ring save seed service show stats top" ringctl ""
expect "node" ringctl no
expect "add del set" ringctl node ""
expect "add del list set" ringctl service ""
expect "save seed service show stats" ringctl s
expect "--addr --dev --dry-run --gue-port --help --json --mac --pin-dir --server-id --verbose --via --weight" ringctl node add web a --
expect "gue ipip l2" ringctl node add web a --via ""
expect "--dev --dry-run" ringctl node add web a --d
expect "--help --json --nodes --seed --verbose --vnodes" ringctl ring --nodes a,b --
expect "--active --addr --dev --down --drain --dry-run --gue-port --help --json --mac --pin-dir --verbose --via --weight" ringctl node set web a --
expect "--help --json --pin-dir --prometheus --textfile --verbose" ringctl stats --
expect "--help --interval --json --once --pin-dir --verbose" ringctl top --
expect "--interval" ringctl doctor --i
expect "--help --json --pin-dir --verbose" ringctl history --
expect "tcp udp" ringctl service add x --vip 198.18.0.1 --proto ""
expect "3tuple 5tuple" ringctl --pin-dir /tmp service add x --hash ""
expect "dns flow memcached" ringctl service add x --proto udp --key ""
expect "memcached" ringctl service add x --key m
expect "--key --key-file" ringctl lookup web --ke
expect "$ifaces" ringctl node add web a --mac 02:00:00:00:00:01 --dev ""
expect "lo" ringctl node add web a --dev l
expect "attach chain decap detach migrate neighd purge status" ringload ""
expect "attach detach status" ringload decap ""
expect "--allow-hop --allow-src --gue-port --help --mode --pin-dir --verbose" ringload decap attach lo --
expect "$ifaces" ringload attach ""
expect "auto generic native skb" ringload attach lo --mode ""
expect "--chain --conn-table --help --migrate --mode --pin-dir --reuse --slot --verbose" ringload attach lo --
expect "add del show" ringload chain ""
expect "--help --pin-dir --slot --verbose" ringload chain del lo --
expect "--purge" ringload detach lo --pu
# the daemons: one command without words, options only
expect "--decap-pin-dir --help --listen --pin-dir --verbose" ringexport --
expect "--decap-pin-dir --help --listen --pin-dir --verbose" ringexport --listen :9842 --
expect "" ringexport ""
expect "--interval-ms" ringsync --etcd http://x --key k --i
expect "--bird-protocol --bird-socket --birdc" ringsync --bi
expect "--help --pin-dir --verbose" ringhealth -v --
expect "" ringhealth ""
# no director at this pin dir: no names, no error output
expect "" ringctl --pin-dir /sys/fs/bpf/rm-no-such-dir node add ""
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
