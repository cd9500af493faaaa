#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# What the README and the documents in docs/ tell a user to type works as
# typed, as root without sudo. The documents are README.md and those listed
# in tests/readme-docs.list, read in that order. Every command line of their
# indented blocks is either run or named below as skipped, with the reason
# (a line this test does not know fails it, so a new command needs a
# decision here):
#   - make demo, make, make deps, make help: run as typed (BUILD as given);
#   - make install / make uninstall: run with DESTDIR added (a staging dir);
#   - ringctl ring / diff (build/ or installed): run, offline;
#   - the live ringload / ringctl examples: run in order on a namespace
#     testbed, eth1 being the director's interface, in a scratch directory
#     (ringctl save > director.conf), /etc/ringmaster a scratch directory;
#   - ringload chain add: the docs' counter.bpf.o is the chain tests'
#     tests/bpf/xdp_count.bpf.o, as built;
#   - routed nodes: the director's namespace gets routes to the docs'
#     node subnets (198.19.20.0/24, 2001:db8:20::/64) on eth1; ringload
#     neighd (a daemon) runs for 2 s and must stop cleanly on SIGTERM; the
#     decap lines run in the node's namespace, eth0 being its interface;
#   - make test (this run), make bench (minutes; `make bench` itself),
#     systemctl (systemd is not PID 1 here; the unit's commands run in
#     test_system.sh), lines with a "..." placeholder: skipped.
# And the documents hang together: every relative link in README.md and
# docs/*.md names a file that exists (and a heading of it, for #anchors),
# and every docs/*.md is linked from the README's map.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

e2e_require_director
command -v sudo >/dev/null && e2e_pass "(sudo is installed here; no command below uses it)"

# The links first: they need no testbed.
if links=$(python3 "$top/tests/e2e/doc_links.py" "$top" 2>&1); then
	e2e_pass "links between README.md and docs/: $links"
else
	e2e_fail "links between README.md and docs/: $links"
fi

# The documents, in order; their command lines: indented 4+ spaces,
# comments dropped, continuation lines (only a comment) skipped.
mapfile -t docs < <(grep -v '^#' "$top/tests/readme-docs.list")
for d in "${docs[@]}"; do
	[ -f "$top/$d" ] || e2e_fail "tests/readme-docs.list names $d, which does not exist"
done
mapfile -t lines < <(cd "$top" && grep -hE '^ {4,}[a-z]' "${docs[@]}" |
	sed 's/#.*//; s/^ *//; s/ *$//' | grep -E '^(make|ringctl|ringload|build/|systemctl|sudo|mkdir)( |$)')
[ ${#lines[@]} -ge 20 ] || e2e_die "only ${#lines[@]} command lines found in ${docs[*]}"

live=()
node_side=()
skipped=()
run_make()
{
	local line=$1 out=$2
	# shellcheck disable=SC2086 # the README's words
	(cd "$top" && eval "$line BUILD=\"\$E2E_BUILD\" ${3:-}") >"$out" 2>&1
}
work=$(mktemp -d /tmp/rm-readme.XXXXXX)
e2e_on_teardown "rm -rf '$work'"
for line in "${lines[@]}"; do
	case "$line" in
	sudo\ *) e2e_fail "documented line uses sudo: $line" ;;
	*...*) skipped+=("$line (a placeholder)") ;;
	"make test") skipped+=("$line (this very run)") ;;
	"make bench") skipped+=("$line (minutes; make bench is its own check)") ;;
	systemctl\ *) skipped+=("$line (systemd is not PID 1 here: test_system.sh runs the unit's commands)") ;;
	"make demo" | "make" | "make deps" | "make help")
		if run_make "$line" "$work/out"; then
			e2e_pass "$line: exit 0 ($(tail -n 1 "$work/out"))"
		else
			e2e_fail "$line: $(tail -n 5 "$work/out")"
		fi
		;;
	"make install"* | "make uninstall"*)
		if run_make "$line" "$work/out" "DESTDIR=$work/stage"; then
			e2e_pass "$line DESTDIR=...: exit 0"
		else
			e2e_fail "$line DESTDIR=...: $(tail -n 5 "$work/out")"
		fi
		;;
	build/ringctl\ ring* | build/ringctl\ diff* | ringctl\ ring\ * | ringctl\ diff\ *)
		if (cd "$work" && PATH=$E2E_BUILD:$PATH eval "${line#build/}") >"$work/out" 2>&1; then
			e2e_pass "$line: exit 0"
		else
			e2e_fail "$line: $(cat "$work/out")"
		fi
		;;
	ringload\ decap\ *) node_side+=("$line") ;;
	ringctl\ * | ringload\ * | "mkdir -p /etc/ringmaster") live+=("$line") ;;
	*) e2e_fail "documented line not known to this test: $line" ;;
	esac
done

# The live examples, in the documents' order, on a testbed: eth1 is the
# director's interface (its nodes' MACs need not exist to be configured),
# /etc/ringmaster a directory of the scratch one (nothing is written to
# the machine's /etc).
e2e_setup 1
e2e_on_teardown "e2e_load detach '$TB_DIR_IN' --purge >/dev/null 2>&1"
scratch=$TB_STATE_DIR/readme
mkdir -p "$scratch"
ip -n "$TB_DIR_NS" route add 198.19.20.0/24 dev "$TB_DIR_IN" &&
	ip -n "$TB_DIR_NS" -6 route add 2001:db8:20::/64 dev "$TB_DIR_IN" ||
	e2e_fail "routes to the docs' routed-node subnets"
for line in "${live[@]}"; do
	cmd=${line//eth1/$TB_DIR_IN}
	cmd=${cmd//\/etc\/ringmaster/$scratch\/etc}
	# the docs' other program: the chain tests' counter
	[[ $cmd == "ringload chain add"* ]] &&
		cmd=${cmd//counter.bpf.o/$E2E_BUILD/tests/xdp_count.bpf.o}
	# a daemon: 2 s, then SIGTERM, which it must take as a clean stop
	[[ $cmd == "ringload neighd"* ]] && cmd="timeout --preserve-status -s TERM 2 $cmd"
	if tb_exec "$TB_DIR_NS" env PATH="$E2E_BUILD:$PATH" bash -c "cd '$scratch' && $cmd" >"$work/out" 2>&1; then
		e2e_pass "$line: exit 0"
	else
		e2e_fail "$line: $(tail -n 3 "$work/out")"
	fi
done
# the node side of routed forwarding, on the testbed's node
for line in "${node_side[@]}"; do
	cmd=${line//eth0/${TB_NODE_IF[1]}}
	if tb_exec "${TB_NODE_NS[1]}" env PATH="$E2E_BUILD:$PATH" bash -c "$cmd" >"$work/out" 2>&1; then
		e2e_pass "$line (on the node): exit 0"
	else
		e2e_fail "$line (on the node): $(tail -n 3 "$work/out")"
	fi
done
e2e_expect_eq "the routed-node lines ran (3 on the node)" "${#node_side[@]}" 3
e2e_expect_eq "the live examples ran (${#live[@]})" "$((${#live[@]} >= 15))" 1
for s in "${skipped[@]}"; do
	echo "skipped, by design: $s"
done
suf=$TB_SUF
e2e_teardown
e2e_check_clean "$suf"
e2e_finish
