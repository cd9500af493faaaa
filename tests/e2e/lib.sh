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
#   e2e_finish                  # prints "N passed, N failed", exits
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
E2E_FINISHED=0
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
# check failed or when nothing was checked at all.
e2e_finish()
{
	E2E_FINISHED=1
	echo "$E2E_PASSED passed, $E2E_FAILED failed"
	[ "$E2E_FAILED" -eq 0 ] && [ "$E2E_PASSED" -gt 0 ]
	exit $?
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

e2e_require()
{
	# Not root: nothing here can run; say so and skip, as the runner
	# expects, rather than fail.
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: $E2E_NAME needs root (network namespaces)"
		echo "0 passed, 0 failed, 1 skipped"
		exit 0
	fi
	local t
	for t in "$RM_SERVER" "$RM_CLIENT"; do
		if [ ! -x "$t" ]; then
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

# e2e_start_server I [PORT]: rm_server in node I's namespace, logging and
# counting into the testbed's state directory; waits for its ready line.
e2e_start_server()
{
	local i=$1 port=${2:-$E2E_PORT} log t
	log=$TB_STATE_DIR/server-node$i.log
	tb_spawn "${TB_NODE_NS[i]}" "$log" "$RM_SERVER" \
		--name "${TB_NODE_NAME[i]}" --port "$port" \
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
