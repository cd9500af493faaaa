#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers shared by the e2e tests. Source it from a test script:
#
#   source "$(dirname "$0")/lib.sh"
#   e2e_setup 3                 # testbed, teardown trap on EXIT/INT/TERM
#   e2e_start_servers           # rm_server in every node namespace
#   e2e_client --vip "$TB_VIP4" --count 100 --sport-base 20000 >"$out"
#   e2e_check "100 flows answered" test "$(grep -vc FAIL "$out")" -eq 100
#   e2e_finish                  # prints "N passed, N failed, N skipped", exits
#
# A check that cannot run says why through e2e_skip; a suite with a skip
# and no failure exits 77 (RM_TEST_SKIP), which scripts/run-tests.sh counts
# as skipped (and CI as a failure).
#
# Paths: E2E_BUILD (default $BUILD or <repo>/build) holds tools/rm_server
# and tools/rm_client; the scripts run from any directory.

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/testbed.sh
source "$E2E_ROOT/scripts/testbed.sh"

E2E_BUILD=${E2E_BUILD:-${BUILD:-$E2E_ROOT/build}}
case $E2E_BUILD in
/*) ;;
*) E2E_BUILD=$PWD/$E2E_BUILD ;;
esac
RM_SERVER=${RM_SERVER:-$E2E_BUILD/tools/rm_server}
RM_CLIENT=${RM_CLIENT:-$E2E_BUILD/tools/rm_client}
E2E_PORT=${E2E_PORT:-8080}
# Servers end themselves after this long even if a teardown is missed.
E2E_SERVER_MAX_SECONDS=${E2E_SERVER_MAX_SECONDS:-900}
E2E_NAME=$(basename "$0" .sh)
E2E_PASSED=0
E2E_FAILED=0
E2E_SKIPPED=0
E2E_FINISHED=0
RM_TEST_SKIP=77
E2E_NEXT_SPORT=${E2E_NEXT_SPORT:-20000}
E2E_TEARDOWN_HOOKS=()
declare -a E2E_SERVER_PID

e2e_log()
{
	echo "[$E2E_NAME] $*"
}

e2e_pass()
{
	E2E_PASSED=$((E2E_PASSED + 1))
	echo "PASS: $*"
}

e2e_fail()
{
	E2E_FAILED=$((E2E_FAILED + 1))
	echo "FAIL: $*"
}

# e2e_skip WHY: a check that cannot run here, loudly.
e2e_skip()
{
	E2E_SKIPPED=$((E2E_SKIPPED + 1))
	echo "SKIP: $*"
}

# e2e_check DESC cmd...: pass when cmd succeeds.
e2e_check()
{
	local desc=$1
	shift
	if "$@"; then
		e2e_pass "$desc"
	else
		e2e_fail "$desc"
	fi
}

# e2e_expect_eq DESC GOT WANT
e2e_expect_eq()
{
	if [ "$2" = "$3" ]; then
		e2e_pass "$1"
	else
		e2e_fail "$1 (got '$2', want '$3')"
	fi
}

# Print the closing line the test runner reads and exit: nonzero when a
# check failed or when nothing was checked at all, 77 when a check skipped.
e2e_finish()
{
	E2E_FINISHED=1
	echo "$E2E_PASSED passed, $E2E_FAILED failed, $E2E_SKIPPED skipped"
	[ "$E2E_FAILED" -eq 0 ] && [ "$E2E_PASSED" -gt 0 ] || exit 1
	[ "$E2E_SKIPPED" -eq 0 ] || exit "$RM_TEST_SKIP"
	exit 0
}

# e2e_die MSG: a failure the test cannot go on from.
e2e_die()
{
	e2e_fail "$*"
	e2e_finish
}

# e2e_on_teardown CMD: run CMD (a string, eval'ed) at teardown before the
# testbed goes, last registered first: detach programs, stop daemons.
e2e_on_teardown()
{
	E2E_TEARDOWN_HOOKS+=("$1")
}

e2e_teardown()
{
	local i
	for ((i = ${#E2E_TEARDOWN_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${E2E_TEARDOWN_HOOKS[i]}" || true
	done
	E2E_TEARDOWN_HOOKS=()
	testbed_down
}

# On any exit: tear down, and if the test ended before e2e_finish (a
# crash, set -e, a signal) still print a closing line that says so. A
# signal's trap runs inside whatever redirection the interrupted command
# had (e2e_client ... >/dev/null), so output goes to the descriptors saved
# by e2e_setup.
_e2e_on_exit()
{
	local rc=$?
	trap - EXIT INT TERM
	{
		e2e_teardown
		if [ "$E2E_FINISHED" -eq 0 ]; then
			e2e_fail "test ended early (exit status $rc)"
			echo "$E2E_PASSED passed, $E2E_FAILED failed"
			[ "$rc" -ne 0 ] || rc=1
		fi
	} 1>&"${E2E_STDOUT:-1}" 2>&"${E2E_STDERR:-2}"
	exit "$rc"
}

# e2e_require [WHY [FILE...]]: root, which WHY needs (network namespaces),
# and the built FILEs (rm_server and rm_client).
e2e_require()
{
	local why=${1:-network namespaces} t
	# Not root: nothing here can run; say so and skip (exit 77), which
	# the runner counts as a skip, not a pass.
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: $E2E_NAME needs root ($why)"
		echo "0 passed, 0 failed, 1 skipped"
		exit "$RM_TEST_SKIP"
	fi
	if [ $# -gt 1 ]; then
		shift
	else
		set -- "$RM_SERVER" "$RM_CLIENT"
	fi
	for t in "$@"; do
		# programs must be executable; BPF objects only there
		if [ ! -x "$t" ] && { [[ $t != *.o ]] || [ ! -e "$t" ]; }; then
			echo "$E2E_NAME: $t missing: run make first" >&2
			exit 1
		fi
	done
}

# e2e_setup [K]: testbed with K nodes (3), torn down on EXIT/INT/TERM.
e2e_setup()
{
	e2e_require
	exec {E2E_STDOUT}>&1 {E2E_STDERR}>&2
	trap _e2e_on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	if ! testbed_up "${1:-3}"; then
		e2e_die "testbed_up ${1:-3}"
	fi
	e2e_log "testbed $TB_SUF: $TB_NODES nodes, state in $TB_STATE_DIR"
}

# e2e_own_netns PREFIX [LINKS_FN]: for control-plane suites that need no
# testbed, only a namespace and a bpffs of their own. Outside, it makes the
# namespace PREFIX-<random>, has LINKS_FN NS make its devices there, runs
# the script again inside under `ip netns exec` (whose mount namespace takes
# the bpffs and every pin with it) and exits with that run's status; the
# namespace goes on every exit. Inside (E2E_INNER set) it mounts the bpffs
# and returns.
e2e_own_netns()
{
	local prefix=$1 links=${2:-} ns
	if [ -n "${E2E_INNER:-}" ]; then
		mount -t bpf bpf /sys/fs/bpf || e2e_die "mount a bpffs of its own"
		return 0
	fi
	e2e_require "network namespaces, BPF" "$E2E_BUILD/ringload" \
		"$E2E_BUILD/ringctl"
	ns=$prefix-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	# shellcheck disable=SC2064 # the name is known now
	trap "ip netns del '$ns' 2>/dev/null" EXIT
	trap 'exit 130' INT HUP PIPE
	trap 'exit 143' TERM
	ip netns add "$ns" || e2e_die "ip netns add $ns"
	if [ -n "$links" ] && ! "$links" "$ns"; then
		e2e_die "$links: the devices of namespace $ns"
	fi
	ip netns exec "$ns" env E2E_INNER=1 E2E_BUILD="$E2E_BUILD" bash "$0"
	exit $?
}

# e2e_start_server I [PORT [NAME]]: rm_server in node I's namespace (as
# NAME, default the node's name), logging and counting into the testbed's
# state directory; waits for its ready line.
e2e_start_server()
{
	local i=$1 port=${2:-$E2E_PORT} name=${3:-${TB_NODE_NAME[$1]}} log t
	log=$TB_STATE_DIR/server-node$i.log
	tb_spawn "${TB_NODE_NS[i]}" "$log" "$RM_SERVER" \
		--name "$name" --port "$port" \
		--count-file "$TB_STATE_DIR/count-node$i" \
		--max-seconds "$E2E_SERVER_MAX_SECONDS"
	E2E_SERVER_PID[i]=$TB_LAST_PID
	for ((t = 0; t < 100; t++)); do
		grep -q ' ready ' "$log" 2>/dev/null && return 0
		kill -0 "$TB_LAST_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "$E2E_NAME: rm_server on node$i did not start:" >&2
	cat "$log" >&2
	return 1
}

# e2e_start_servers [PORT]: one rm_server per node.
# shellcheck disable=SC2120 # PORT is optional
e2e_start_servers()
{
	local i
	for ((i = 1; i <= TB_NODES; i++)); do
		e2e_start_server "$i" "${1:-$E2E_PORT}" || return 1
	done
}

# e2e_stop_server I: SIGTERM node I's server and wait (2 s at most).
e2e_stop_server()
{
	local pid=${E2E_SERVER_PID[$1]:-} t
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((t = 0; t < 40; t++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	E2E_SERVER_PID[$1]=
}

# e2e_stop_pid PID: SIGTERM a daemon the test started, SIGKILL if it is
# still there after 3 s.
e2e_stop_pid()
{
	local t
	kill -TERM "$1" 2>/dev/null || return 0
	for ((t = 0; t < 60; t++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$1" 2>/dev/null
}

# e2e_server_count I KEY: a counter of node I's server (tcp_accepted,
# tcp_accepted6, tcp_open, udp_datagrams, udp_datagrams6, bytes_echoed).
# The server refreshes the file every 100 ms: sleep 0.3 after traffic.
e2e_server_count()
{
	local f=$TB_STATE_DIR/count-node$1
	awk -v k="$2" '$1 == k { print $2; found = 1 }
		END { if (!found) print 0 }' "$f" 2>/dev/null || echo 0
}

# e2e_client ARGS...: rm_client in the client namespace.
e2e_client()
{
	tb_exec "$TB_CLIENT_NS" "$RM_CLIENT" "$@"
}

# e2e_alloc_sports N: set E2E_SPORT to the base of N source ports no
# earlier call handed out. rm_client reset-closes, so reuse would work
# too, but fresh ports keep every flow of a test distinct.
e2e_alloc_sports()
{
	if [ $((E2E_NEXT_SPORT + $1)) -gt 65536 ]; then
		E2E_NEXT_SPORT=20000
	fi
	# shellcheck disable=SC2034 # read by the tests
	E2E_SPORT=$E2E_NEXT_SPORT
	E2E_NEXT_SPORT=$((E2E_NEXT_SPORT + $1))
}

# e2e_tally FILE: "NODE COUNT" lines, by node name, from rm_client output
# (flow mode, or hold mode); failed flows are counted as FAIL.
e2e_tally()
{
	awk '$3 != "" { n[$3]++ } END { for (k in n) print k, n[k] }' \
		"$1" | sort
}

# e2e_tally_get FILE NODE: how many flows of FILE landed on NODE.
e2e_tally_get()
{
	awk -v k="$2" '$3 == k { n++ } END { print n + 0 }' "$1"
}

# e2e_chisq "OBSERVED..." "SHARES..." [ALPHA]: Pearson chi-square goodness
# of fit of observed counts to expected shares (any positive numbers,
# normalised; blank- or comma-separated, same order). Prints
# "chi2=... df=... p=..."; returns 0 when p >= ALPHA (default 0.001), 1
# when the fit is rejected, 2 on bad input. The p-value is the upper
# regularised incomplete gamma Q(df/2, chi2/2), computed here with the
# usual series / continued fraction split, so no scipy is needed.
e2e_chisq()
{
	python3 - "$1" "$2" "${3:-0.001}" <<'EOF'
import math
import sys


def nums(s):
    return [float(x) for x in s.replace(",", " ").split()]


def gamma_p_series(a, x):
    # P(a, x) = x^a e^-x / Gamma(a+1) * sum x^n / ((a+1)...(a+n))
    term = 1.0 / a
    total = term
    n = a
    for _ in range(10000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * 1e-15:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def gamma_q_cfrac(a, x):
    # Q(a, x) by the modified Lentz continued fraction
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h * math.exp(-x + a * math.log(x) - math.lgamma(a))


def gamma_q(a, x):
    if x <= 0.0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - gamma_p_series(a, x))
    return gamma_q_cfrac(a, x)


try:
    obs = nums(sys.argv[1])
    shares = nums(sys.argv[2])
    alpha = float(sys.argv[3])
except ValueError:
    print("chisq: bad number", file=sys.stderr)
    sys.exit(2)
if len(obs) != len(shares) or len(obs) < 2 or min(obs) < 0 \
        or min(shares) <= 0:
    print("chisq: need >= 2 counts >= 0 and as many shares > 0",
          file=sys.stderr)
    sys.exit(2)
total = sum(obs)
if total <= 0:
    print("chisq: no observations", file=sys.stderr)
    sys.exit(2)
norm = sum(shares)
exp = [total * s / norm for s in shares]
chi2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
df = len(obs) - 1
p = gamma_q(df / 2.0, chi2 / 2.0)
if min(exp) < 5:
    print("chisq: warning: an expected count is below 5", file=sys.stderr)
print("chi2=%.4f df=%d p=%.6g" % (chi2, df, p))
sys.exit(0 if p >= alpha else 1)
EOF
}

# e2e_wait_for SECONDS cmd...: poll cmd every 0.1 s until it succeeds;
# 1 if it never did.
e2e_wait_for()
{
	local limit=$1 t
	shift
	for ((t = 0; t < limit * 10; t++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# ---- the director: ringload, ringctl, flows and their owners -----------
#
#   e2e_require_director          ringctl, ringload, bpftool present
#   e2e_attach / e2e_detach [--pin-dir DIR] [--purge]
#                                 ringload attach|detach d-in (native XDP)
#   e2e_ctl / e2e_load ARGS...    ringctl / ringload in the director ns
#   e2e_add_nodes SVC [I...] [-- OPTS]  ringctl node add SVC nodeI ...
#   e2e_flows OUT ARGS...         rm_client flows: "SPORT NODE|FAIL" lines
#   e2e_lookups OUT SVC SRC BASE COUNT [OPTS]
#   e2e_lookup_ports OUT SVC SRC [OPTS] <PORTS
#                                 "SPORT NODE" per flow as ringctl lookup
#                                 names it
#   e2e_mismatch LOOKUPS FLOWS    flows not on the node LOOKUPS names
#   e2e_count FILE NODE           flows of FILE on NODE
#   e2e_moved FLOWS_A FLOWS_B     "MOVED TOTAL"; FLOWS_B.moves lists them
#   e2e_shares SVC [OPTS]         "NODE SHARE" lines from ringctl show
#   e2e_json EXPR                 evaluate EXPR over the JSON on stdin (d)
#   e2e_bg_start/_wait/_stop      a bounded background connection loop
#   e2e_check_clean SUF           nothing of testbed SUF is left
# OPTS are ringctl options such as --pin-dir DIR.

RINGCTL=${RINGCTL:-$E2E_BUILD/ringctl}
RINGLOAD=${RINGLOAD:-$E2E_BUILD/ringload}

e2e_require_director()
{
	local t
	for t in "$RINGCTL" "$RINGLOAD"; do
		if [ ! -x "$t" ]; then
			echo "$E2E_NAME: $t missing: run make first" >&2
			echo "0 passed, 1 failed"
			exit 1
		fi
	done
	if ! command -v bpftool >/dev/null 2>&1; then
		echo "$E2E_NAME: bpftool missing: run make deps as root" >&2
		echo "0 passed, 1 failed"
		exit 1
	fi
}

e2e_ctl()
{
	tb_exec "$TB_DIR_NS" "$RINGCTL" "$@"
}

e2e_load()
{
	tb_exec "$TB_DIR_NS" "$RINGLOAD" "$@"
}

# e2e_attach [--pin-dir DIR]: the XDP program on the director's d-in, in
# native mode. Output goes to the test's log.
# shellcheck disable=SC2120 # the options are optional
e2e_attach()
{
	e2e_load attach "$TB_DIR_IN" --mode native "$@"
}

# e2e_detach [--pin-dir DIR] [--purge]
# shellcheck disable=SC2120 # the options are optional
e2e_detach()
{
	e2e_load detach "$TB_DIR_IN" "$@"
}

# e2e_add_nodes SVC [I...] [-- ringctl options]: add node I (all nodes of
# the testbed when none is given), reached through the director's d-nI.
e2e_add_nodes()
{
	local svc=$1 i nodes=() opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		nodes+=("$1")
		shift
	done
	[ $# -eq 0 ] || { shift; opts=("$@"); }
	[ ${#nodes[@]} -gt 0 ] || mapfile -t nodes < <(seq 1 "$TB_NODES")
	for i in "${nodes[@]}"; do
		e2e_ctl "${opts[@]}" node add "$svc" "${TB_NODE_NAME[i]}" \
			--mac "${TB_NODE_MAC[i]}" --dev "${TB_DIR_NODE_IF[i]}" \
			>/dev/null || return 1
	done
}

# e2e_json EXPR: print the value of the Python expression EXPR, in which
# d is the JSON document read from stdin (lists print one item a line).
e2e_json()
{
	python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
if isinstance(v, (list, tuple)):
    for x in v:
        print(*x) if isinstance(x, (list, tuple)) else print(x)
else:
    print(v)
' "$1"
}

# e2e_lookup_ports OUT SVC SRC [ringctl options] <PORTS: where ringctl
# lookup sends the flows from SRC and each source port read from stdin
# (one a line) of SVC: one "SPORT NODE" line each, sorted by port; 1
# unless every lookup answered.
e2e_lookup_ports()
{
	local out=$1 svc=$2 src=$3 ports
	shift 3
	ports=$TB_STATE_DIR/lookup-ports.$$
	cat >"$ports"
	# one ringctl run for the batch (--sport-file), not one per flow
	tb_exec "$TB_DIR_NS" "$RINGCTL" "$@" lookup "$svc" --src "$src" \
		--sport-file - <"$ports" | sort -n >"$out"
	[ "$(wc -l <"$out")" -eq "$(wc -l <"$ports")" ]
	local rc=$?
	rm -f "$ports"
	return $rc
}

# e2e_lookups OUT SVC SRC BASE COUNT [ringctl options]: e2e_lookup_ports
# for the ports BASE..BASE+COUNT-1.
e2e_lookups()
{
	local out=$1 svc=$2 src=$3 base=$4 count=$5
	shift 5
	seq "$base" $((base + count - 1)) |
		e2e_lookup_ports "$out" "$svc" "$src" "$@"
}

# e2e_flows OUT rm_client ARGS...: run the flows; OUT gets "SPORT NODE"
# (or "SPORT FAIL") sorted by port, the raw lines go to OUT.raw. Returns
# rm_client's status (0: every flow answered).
e2e_flows()
{
	local out=$1 rc
	shift
	e2e_client "$@" >"$out.raw" 2>"$out.err"
	rc=$?
	awk '{ print $2, $3 }' "$out.raw" | sort -n >"$out"
	return $rc
}

# e2e_mismatch LOOKUPS FLOWS: how many flows of FLOWS (e2e_flows output)
# did not land on the node LOOKUPS names for their port (a failed flow or
# a port LOOKUPS lacks counts too).
e2e_mismatch()
{
	awk 'NR == FNR { want[$1] = $2; next }
		!($1 in want) || want[$1] != $2 { bad++ }
		END { print bad + 0 }' "$1" "$2"
}

# e2e_count FILE NODE: flows of FILE ("SPORT NODE" lines) on NODE.
e2e_count()
{
	awk -v k="$2" '$2 == k { n++ } END { print n + 0 }' "$1"
}

# e2e_shares SVC [ringctl options]: "NODE SHARE" for each node of SVC,
# the exact share of the hash space `ringctl show --json` reports.
e2e_shares()
{
	local svc=$1
	shift
	e2e_ctl "$@" show "$svc" --json |
		e2e_json '[(n["name"], n["share"]) for s in d["services"]
			   for n in s["nodes"]]'
}

# e2e_moved FILE_A FILE_B: compare two e2e_flows outputs of the same
# ports. Prints "moved total" and, one line each, "SPORT FROM TO" of every
# flow whose node changed (into FILE_B.moves).
e2e_moved()
{
	: >"$2.moves"
	awk -v m="$2.moves" 'NR == FNR { a[$1] = $2; next }
		$1 in a { n++; if (a[$1] != $2) { k++; print $1, a[$1], $2 > m } }
		END { print k + 0, n + 0 }' "$1" "$2"
}

# e2e_bg_start OUT BASE MAX_BATCHES MAX_SECONDS BATCH rm_client ARGS...:
# connections keep opening in the background: batches of BATCH flows,
# batch b from source ports BASE + b * BATCH on (allocate them with
# e2e_alloc_sports), at most MAX_BATCHES of them, for MAX_SECONDS at most.
# OUT gets the e2e_flows lines of every batch, OUT.raw rm_client's;
# OUT.batches one line per batch, "BASE FLAG": FLAG 1 when the file
# E2E_BG_MARK existed as the batch started (touch it after a change).
e2e_bg_start()
{
	local out=$1 max=$3 secs=$4 batch=$5
	E2E_BG_BASE=$2
	shift 5
	E2E_BG_STOP=$TB_STATE_DIR/bg-stop.$RANDOM
	E2E_BG_MARK=$TB_STATE_DIR/bg-mark.$RANDOM
	E2E_BG_OUT=$out
	rm -f "$E2E_BG_STOP" "$E2E_BG_MARK"
	: >"$out"
	: >"$out.raw"
	: >"$out.batches"
	(
		trap - EXIT INT TERM
		b=0
		end=$((SECONDS + secs))
		while [ "$b" -lt "$max" ] && [ "$SECONDS" -lt "$end" ] &&
			[ ! -e "$E2E_BG_STOP" ]; do
			base=$((E2E_BG_BASE + b * batch))
			flag=0
			[ ! -e "$E2E_BG_MARK" ] || flag=1
			e2e_flows "$out.b" --count "$batch" --sport-base "$base" \
				"$@"
			cat "$out.b" >>"$out"
			cat "$out.b.raw" >>"$out.raw"
			echo "$base $flag" >>"$out.batches"
			b=$((b + 1))
		done
		rm -f "$out.b" "$out.b.raw" "$out.b.err"
	) &
	E2E_BG_PID=$!
	e2e_on_teardown "e2e_bg_stop"
}

# e2e_bg_wait N [FLAG]: until N batches are done (with that FLAG when
# given); 10 s at most, 1 if the loop ended first.
e2e_bg_wait()
{
	local n=$1 flag=${2:-} t alive
	for ((t = 0; t < 200; t++)); do
		alive=0
		kill -0 "$E2E_BG_PID" 2>/dev/null && alive=1
		[ "$(awk -v f="$flag" 'f == "" || $2 == f' \
			"$E2E_BG_OUT.batches" | wc -l)" -lt "$n" ] || return 0
		[ "$alive" -eq 1 ] || return 1
		sleep 0.05
	done
	return 1
}

# e2e_bg_stop: end the loop after its current batch; waits for it.
e2e_bg_stop()
{
	[ -n "${E2E_BG_PID:-}" ] || return 0
	touch "$E2E_BG_STOP"
	wait "$E2E_BG_PID" 2>/dev/null
	E2E_BG_PID=
}

# e2e_check_clean SUF: after testbed_down, nothing of testbed SUF is
# left: no namespace, no testbed veth in the root namespace, no bpffs
# mount or state directory. Records one check each.
e2e_check_clean()
{
	local suf=$1
	e2e_expect_eq "no namespace left with suffix $suf" \
		"$(ip netns list | grep -c -- "-$suf\\b")" 0
	e2e_expect_eq "no testbed veth in the root namespace" \
		"$(ip -o link show type veth |
			grep -cE ': (d-in|d-n[0-9]+|c-eth0|n-eth0)[@:]')" 0
	e2e_expect_eq "no bpffs or state directory of testbed $suf left" \
		"$(grep -c "/rm-tb-$suf\\." /proc/mounts)$(find /tmp -maxdepth 1 \
			-name "rm-tb-$suf.*" | wc -l)" 00
}

# e2e_require_tools CMD...: fail (not skip: every test must run here) when
# a command is missing, naming the fix.
e2e_require_tools()
{
	local t
	for t in "$@"; do
		if ! command -v "$t" >/dev/null 2>&1 && [ ! -x "$t" ]; then
			echo "FAIL: $E2E_NAME: $t missing: scripts/install-deps.sh, make"
			echo "0 passed, 1 failed"
			exit 1
		fi
	done
}

# e2e_service_up SVC PROTO: the director attached, service SVC on the VIP
# and E2E_PORT with every node of the testbed, a server on each node;
# dies on failure.
e2e_service_up()
{
	e2e_attach >/dev/null || e2e_die "ringload attach"
	e2e_ctl service add "$1" --vip "$TB_VIP4" --port "$E2E_PORT" \
		--proto "$2" >/dev/null && e2e_add_nodes "$1" ||
		e2e_die "service $1 with $TB_NODES nodes"
	e2e_start_servers || e2e_die "servers started"
}

# e2e_udp_known OUT COUNT: known traffic: COUNT UDP flows of one datagram
# each (no retries) to the VIP, every one answered (checked); the servers'
# counters are current when it returns.
e2e_udp_known()
{
	e2e_alloc_sports "$2"
	e2e_flows "$1" --vip "$TB_VIP4" --proto udp --count "$2" \
		--sport-base "$E2E_SPORT" --retries 0 --timeout-ms 3000
	e2e_expect_eq "$2 UDP flows answered" "$(grep -vc ' FAIL$' "$1")" "$2"
	sleep 0.3
}

# e2e_prometheus DIR EXPORT_PORT PROM_PORT: a Prometheus server in the
# director's namespace on 127.0.0.1:PROM_PORT, its data in DIR/tsdb,
# scraping ringexport on 127.0.0.1:EXPORT_PORT every second (job
# ringmaster); dies when promtool refuses its configuration. Sets
# E2E_PROM_PORT for e2e_promql; testbed_down stops it.
e2e_prometheus()
{
	local dir=$1
	E2E_PROM_PORT=$3
	cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ringmaster
    static_configs:
      - targets: ['127.0.0.1:$2']
YML
	promtool check config "$dir/prometheus.yml" >/dev/null ||
		e2e_die "promtool check config"
	mkdir -p "$dir/tsdb"
	tb_spawn "$TB_DIR_NS" "$dir/prometheus.log" prometheus \
		--config.file="$dir/prometheus.yml" \
		--storage.tsdb.path="$dir/tsdb" \
		--web.listen-address="127.0.0.1:$E2E_PROM_PORT" \
		--web.console.templates=/nonexistent --web.console.libraries=/nonexistent
}

# e2e_promql QUERY: the first result's value from e2e_prometheus's server
# ("" if none yet).
e2e_promql()
{
	tb_exec "$TB_DIR_NS" curl -sS --get --data-urlencode "query=$1" \
		"http://127.0.0.1:$E2E_PROM_PORT/api/v1/query" 2>/dev/null |
		python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")
'
}
