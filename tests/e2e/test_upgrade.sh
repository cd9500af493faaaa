#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# An upgrade over pins of an older layout. The older release is built here
# from its tree (git archive of OLD_COMMIT, main's last commit before the
# pinned state recorded its layout, into a temporary directory removed
# after): its ringload attaches and its ringctl configures two services
# (TCP/IPv4, UDP/IPv6) under traffic. Then this build's binaries:
#   - ringload attach is refused, in one line naming both layouts and the
#     way through (save, detach, purge, attach, restore, or --migrate), and
#     the state is untouched (same pins, same program, same configuration);
#   - ringload attach --migrate moves it over: the configuration (services,
#     nodes, seed, config) is identical after (ringctl save before and
#     after), the layout is recorded, the connection table is kept (every
#     entry, each node honouring as many as before), new flows go where
#     ringctl lookup says;
#   - attach again finds the same layout and just attaches (--reuse).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OLD_COMMIT=${OLD_COMMIT:-5e96606}
N=100
PIN=/sys/fs/bpf/ringmaster

e2e_require_director
if ! git -C "$E2E_ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null; then
	# a shallow clone: the commit is main's ancestor, fetch it
	git -C "$E2E_ROOT" fetch -q --depth=1 origin "$OLD_COMMIT" 2>/dev/null
fi
git -C "$E2E_ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null ||
	e2e_die "commit $OLD_COMMIT (the older release) is not in this clone: git fetch --unshallow"

e2e_setup 3
old=$(mktemp -d /tmp/rm-upgrade-old.XXXXXX)
e2e_on_teardown "rm -rf '$old'"
e2e_log "building $OLD_COMMIT in $old"
if ! git -C "$E2E_ROOT" archive "$OLD_COMMIT" | tar -x -C "$old" ||
	! make -C "$old" -s -j2 build/ringctl build/ringload >"$old/make.log" 2>&1; then
	tail -20 "$old/make.log" 2>/dev/null
	e2e_die "build of $OLD_COMMIT"
fi

work=$TB_STATE_DIR/upgrade
mkdir -p "$work"

as_old() { RINGCTL=$old/build/ringctl RINGLOAD=$old/build/ringload "$@"; }
pins() { tb_exec "$TB_DIR_NS" sh -c "ls $PIN | sort"; }
# each node's connection-table entries the data plane honours
conns() {
	e2e_ctl show --json | e2e_json \
		'" ".join("%s/%s=%d" % (s["name"], n["name"], n["conns"])
			  for s in d["services"] for n in s["nodes"])'
}
prog_id() {
	e2e_load status --json | e2e_json \
		'[i["prog_id"] for i in d["interfaces"] if i["name"] == "'"$TB_DIR_IN"'"][0]'
}

# ---- the older release ---------------------------------------------------------
if ! as_old e2e_attach >/dev/null ||
	! as_old e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
		--proto tcp >/dev/null || ! as_old e2e_add_nodes web 1 2 ||
	! as_old e2e_ctl service add dns6 --vip "$TB_VIP6" --port "$E2E_PORT" \
		--proto udp --hash 3tuple >/dev/null || ! as_old e2e_add_nodes dns6 ||
	! as_old e2e_ctl config --udp-timeout 77 >/dev/null; then
	e2e_die "the older release: attach, services web (tcp4) and dns6 (udp6)"
fi
e2e_start_servers || e2e_die "servers started"
e2e_alloc_sports "$N"
T1=$E2E_SPORT
e2e_flows "$work/before" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$T1" --retries 2 --timeout-ms 3000
e2e_expect_eq "the older release forwards: $N flows answered" \
	"$(grep -vc ' FAIL$' "$work/before")" "$N"
e2e_expect_eq "its pins carry no layout record" "$(pins | grep -c '^rm_layout$')" 0
pins >"$work/pins.before"
conns >"$work/conns.before"
id_before=$(prog_id)
e2e_ctl save >"$work/save.before" ||
	e2e_fail "this ringctl saves the older state"

# ---- refused ---------------------------------------------------------------
e2e_load attach "$TB_DIR_IN" --mode native >"$work/refused.out" 2>"$work/refused.err"
rc=$?
e2e_expect_eq "attach over the older layout: exit 1" "$rc" 1
e2e_expect_eq "... one line on stderr, nothing on stdout" \
	"$(wc -l <"$work/refused.err") $(wc -c <"$work/refused.out")" "1 0"
e2e_check "... naming both layouts and the way through ($(cat "$work/refused.err"))" \
	grep -q 'holds layout 0 .*this ringload has layout [1-9].*ringctl save.*ringload detach.*ringload purge.*ringctl restore.*--migrate' \
	"$work/refused.err"
e2e_expect_eq "... the pins untouched" "$(pins | cmp - "$work/pins.before" && echo same)" same
e2e_expect_eq "... the same program attached" "$(prog_id)" "$id_before"
e2e_ctl save >"$work/save.refused"
e2e_check "... the configuration untouched" cmp "$work/save.before" "$work/save.refused"

# ---- migrated ----------------------------------------------------------------
e2e_load attach "$TB_DIR_IN" --mode native --migrate >"$work/migrate.out" 2>&1
rc=$?
sed 's/^/    /' "$work/migrate.out"
e2e_expect_eq "attach --migrate: exit 0" "$rc" 0
e2e_ctl save >"$work/save.after"
e2e_check "the configuration is identical after (ringctl save)" \
	cmp "$work/save.before" "$work/save.after"
e2e_check "... seed, udp timeout, both services, 5 nodes in it" sh -c "
	grep -q '^seed --set [0-9a-f]\{32\}' '$work/save.after' &&
	grep -q '^config --udp-timeout 77' '$work/save.after' &&
	test \$(grep -c '^service add' '$work/save.after') = 2 &&
	test \$(grep -c '^node add' '$work/save.after') = 5"
e2e_expect_eq "the layout is recorded now" "$(pins | grep -c '^rm_layout$')" 1
kept=$(sed -n 's/.* \([0-9]*\) of \([0-9]*\) connection-table entries kept.*/\1 \2/p' "$work/migrate.out")
e2e_check "every connection-table entry kept ($kept)" \
	sh -c "set -- $kept; [ \"\${1:-0}\" -ge $N ] && [ \"\$1\" = \"\$2\" ]"
e2e_expect_eq "the director runs on $TB_DIR_IN again" \
	"$(e2e_load status --json | e2e_json '[i["attached"] for i in d["interfaces"] if i["name"] == "'"$TB_DIR_IN"'"][0]')" True

conns >"$work/conns.after"
e2e_check "... each node holds the entries it held ($(cat "$work/conns.after"))" \
	cmp "$work/conns.before" "$work/conns.after"
e2e_check "... $N of them on web's nodes" test "$(grep -o 'web/[^ ]*' "$work/conns.after" |
	awk -F= '{ n += $2 } END { print n }')" -ge "$N"
e2e_alloc_sports "$N"
e2e_flows "$work/new" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$E2E_SPORT" --retries 2 --timeout-ms 3000
if e2e_lookups "$work/new.want" web "$TB_CLIENT_IP4" "$E2E_SPORT" "$N"; then
	e2e_expect_eq "new flows answered, each where ringctl lookup says" \
		"$(grep -vc ' FAIL$' "$work/new") $(e2e_mismatch "$work/new.want" "$work/new")" "$N 0"
else
	e2e_fail "ringctl lookup"
fi

e2e_check "attach again: the same layout, left as it is (--reuse)" \
	e2e_load attach "$TB_DIR_IN" --mode native --reuse
e2e_finish
