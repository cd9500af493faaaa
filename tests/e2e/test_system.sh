#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ringmaster as an installed system tool, on a live director:
#   - bash completion offers the live director's service names and a
#     service's node names (read through ringctl, with the line's
#     --pin-dir);
#   - the installed systemd unit's own commands (ExecStart/ExecStop lines
#     of ringmaster@.service as make install wrote it, %I the director's
#     interface, run in the director's namespace the way systemd runs them):
#       * a restart (stop, then start) keeps the XDP program (same prog id)
#         and every connection opened across it is answered,
#       * stop writes the live configuration to CONFDIR/IFACE.conf,
#       * after a "reboot" (detach --purge: program and bpffs state gone),
#         start attaches again and restores that file: the same
#         configuration, and the same flows land on the same nodes.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=100
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

e2e_require_director
e2e_setup 2
work=$TB_STATE_DIR/system
mkdir -p "$work"
prefix=$work/prefix conf=$work/etc
if ! make -C "$top" --no-print-directory -s BUILD="$E2E_BUILD" install \
	PREFIX="$prefix" CONFDIR="$conf" >"$work/install.out" 2>&1; then
	e2e_die "make install PREFIX=$prefix: $(cat "$work/install.out")"
fi
unit=$prefix/lib/systemd/system/ringmaster@.service
e2e_attach >/dev/null || e2e_die "ringload attach $TB_DIR_IN"
if ! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
	--proto tcp >/dev/null || ! e2e_add_nodes web ||
	! e2e_ctl service add dns --vip "$TB_VIP4" --port 53 --proto udp \
		--hash 3tuple >/dev/null || ! e2e_add_nodes dns 2 ||
	! e2e_ctl node set web "${TB_NODE_NAME[2]}" --weight 3 >/dev/null; then
	e2e_die "services web and dns with their nodes"
fi
e2e_start_servers || e2e_die "servers started"
e2e_pass "attached; services web (2 nodes) and dns (1 node)"

# ---- completion of live names ------------------------------------------
# comp WORD...: the candidates, sorted, on one line, completed in the
# director's namespace with the built tools first in PATH
comp()
{
	tb_exec "$TB_DIR_NS" env PATH="$E2E_BUILD:$PATH" bash --norc -c '
		source "$0" || exit 1
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
		_ringmaster
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' \
		"$top/completion/ringctl" "$@"
}
nodes_web=$(printf '%s\n' "${TB_NODE_NAME[1]}" "${TB_NODE_NAME[2]}" | sort | tr '\n' ' ' | sed 's/ $//')
e2e_expect_eq "complete 'ringctl node add ': the live services" "$(comp ringctl node add "")" "dns web"
e2e_expect_eq "complete 'ringctl show w': web" "$(comp ringctl show w)" "web"
e2e_expect_eq "complete 'ringctl node del web ': web's nodes" "$(comp ringctl node del web "")" "$nodes_web"
e2e_expect_eq "complete 'ringctl node set dns ': dns's node" "$(comp ringctl node set dns "")" "${TB_NODE_NAME[2]}"
e2e_expect_eq "complete with --pin-dir of no director: nothing" \
	"$(comp ringctl --pin-dir /sys/fs/bpf/rm-none lookup "")" ""

# ---- the unit's commands -------------------------------------------------
# unit_run KEY: the unit's KEY= lines (ExecStart, ExecStop), in order, as
# systemd runs them: %I the interface, PIN_DIR and RINGLOAD_OPTS from the
# environment, a leading '-' ignores a failure. Output to the log.
unit_run()
{
	local key=$1 line ignore rc
	while IFS= read -r line; do
		line=${line#"$key="}
		ignore=0
		[ "${line:0:1}" != - ] || { ignore=1; line=${line:1}; }
		line=${line//%I/$TB_DIR_IN}
		echo "+ $line" >>"$work/unit.log"
		tb_exec "$TB_DIR_NS" env PIN_DIR=/sys/fs/bpf/ringmaster \
			RINGLOAD_OPTS="--mode native" bash -c "$line" \
			>>"$work/unit.log" 2>&1
		rc=$?
		[ $rc -eq 0 ] || [ $ignore -eq 1 ] || return $rc
	done < <(grep "^$key=" "$unit")
}
prog_id()
{
	e2e_load status --json | e2e_json \
		'[i["prog_id"] for i in d["interfaces"] if i["name"] == "'"$TB_DIR_IN"'"][0]'
}
saved()
{
	e2e_ctl save | grep -v '^#'
}

id0=$(prog_id)
e2e_check "unit start on an attached director: attach --reuse leaves it" \
	unit_run ExecStart
e2e_expect_eq "... the same XDP program ($id0)" "$(prog_id)" "$id0"
e2e_alloc_sports "$N"
F1=$E2E_SPORT
e2e_flows "$work/before" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$F1" --retries 2 --timeout-ms 3000
e2e_expect_eq "before: $N flows answered" "$(grep -vc ' FAIL$' "$work/before")" "$N"

# restart under traffic: batches of 20 connections keep opening
e2e_alloc_sports 2000
e2e_bg_start "$work/bg" "$E2E_SPORT" 100 60 20 --vip "$TB_VIP4" --proto tcp \
	--retries 2 --timeout-ms 3000
e2e_bg_wait 2 || e2e_fail "background connections started"
saved >"$work/live.conf"
e2e_check "unit stop (systemctl stop)" unit_run ExecStop
e2e_check "unit start again (a restart)" unit_run ExecStart
touch "$E2E_BG_MARK"
e2e_bg_wait 2 1 || e2e_fail "background connections after the restart"
e2e_bg_stop
e2e_expect_eq "restart: the same XDP program ($id0)" "$(prog_id)" "$id0"
total=$(wc -l <"$work/bg")
e2e_expect_eq "restart: all $total connections across it answered" \
	"$(grep -c ' FAIL$' "$work/bg")" 0
e2e_check "stop wrote $conf/$TB_DIR_IN.conf" test -s "$conf/$TB_DIR_IN.conf"
e2e_expect_eq "... the live configuration" \
	"$(grep -v '^#' "$conf/$TB_DIR_IN.conf")" "$(cat "$work/live.conf")"

# "reboot": bpffs and the attachment are gone
e2e_detach --purge >>"$work/unit.log" 2>&1 || e2e_fail "ringload detach --purge"
xdp_on() { ip -n "$TB_DIR_NS" link show dev "$TB_DIR_IN" | grep -q xdp; }
xdp_off() { ! xdp_on; }
e2e_check "after the reboot no XDP program on $TB_DIR_IN" xdp_off
e2e_check "unit start after the reboot: attach, restore $TB_DIR_IN.conf" \
	unit_run ExecStart
e2e_expect_eq "the configuration is back" "$(saved)" "$(cat "$work/live.conf")"
e2e_flows "$work/after" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$F1" --retries 2 --timeout-ms 3000
e2e_expect_eq "after the reboot: $N flows answered" "$(grep -vc ' FAIL$' "$work/after")" "$N"
read -r moved total < <(e2e_moved "$work/before" "$work/after")
e2e_expect_eq "after the reboot: the same $total flows on the same nodes" "$moved" 0
e2e_check "unit stop after the reboot" unit_run ExecStop
e2e_check "the director is still attached after the stop" xdp_on

suf=$TB_SUF
e2e_detach --purge >/dev/null 2>&1
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
