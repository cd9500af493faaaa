#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Fleet convergence (bench part "fleet", issue 23): how long after a
# publish every director of a fleet has applied the new revision. The
# fleet of scripts/fleet.sh on this machine: etcd and the router's BIRD,
# D directors each with XDP, BIRD and ringsync (watching the fleet key),
# two nodes. Each round publishes a one-node change (node 2 out, then
# back) and waits for every director's ringsync to log "revision R
# applied"; the round's figure is the last of those log times less the
# time just before `ringctl publish` started (so publish's own process is
# in it; the table shows that process's own time, start to exit, too:
# the directors may be done before it has exited). Rounds with all D
# directors, then with two of them (the others killed): the issue's "ten
# directors converge 1.24 s after a publish (two: 0.29 s)".
#
# Usage: scripts/bench-fleet.sh BUILD OUT_JSON [ROUNDS]
# Prints a markdown table; writes {"directors": {"10": {...}, "2": {...}}}
# with each count's median/min/max in ms to OUT_JSON. Exit 1 when a
# director did not apply a revision within 30 s (the part failed).
# BENCH_FLEET_D (default 10) sets the larger fleet.
#
# Network: only scripts/fleet.sh's namespaces (198.18.0.0/15); fleet_down
# on every way out.
set -u

build=${1:?usage: bench-fleet.sh BUILD OUT_JSON [ROUNDS]}
json=${2:?usage: bench-fleet.sh BUILD OUT_JSON [ROUNDS]}
rounds=${3:-7}
dmax=${BENCH_FLEET_D:-10}
top=$(cd "$(dirname "$0")/.." && pwd)
export BUILD=$build
# shellcheck source=scripts/fleet.sh
source "$top/scripts/fleet.sh"

trap 'fleet_down; exit 130' INT TERM
trap 'fleet_down' EXIT

# ms of the day from HH:MM:SS.mmm (ringsync's log stamps, local time)
day_ms()
{
	awk -F'[:.]' '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }' <<<"$1"
}

# applied_ms K REV: ms of the day director K's ringsync applied REV, or
# nothing yet
applied_ms()
{
	local line
	line=$(grep -m1 "ringsync: revision $2 applied" \
		"$FL_DIR/ringsync-d$1.log" 2>/dev/null) || return 0
	day_ms "${line%% *}"
}

# mark_t0 just before publish FILE, which prints the new revision (in a
# command substitution, so it cannot set T0 itself)
mark_t0()
{
	T0=$(day_ms "$(date +%H:%M:%S.%3N)")
}
publish()
{
	fleet_publish "$1" --json |
		sed -n 's/.*"revision":\([0-9]*\).*/\1/p'
}

# converge REV N: the ms from T0 until directors 1..N all applied REV
# (30 s at most: 1 when one did not)
converge()
{
	local rev=$1 n=$2 k t last ms
	for ((t = 0; t < 600; t++)); do
		last=0
		for ((k = 1; k <= n; k++)); do
			ms=$(applied_ms "$k" "$rev")
			[ -n "$ms" ] || break
			[ "$ms" -gt "$last" ] && last=$ms
		done
		if [ "$k" -gt "$n" ]; then
			# a round across midnight
			[ "$last" -ge "$T0" ] || last=$((last + 86400000))
			echo $((last - T0))
			return 0
		fi
		sleep 0.05
	done
	echo "bench-fleet: director $k did not apply revision $rev in 30 s:" \
		"$(tail -n 2 "$FL_DIR/ringsync-d$k.log")" >&2
	return 1
}

# stats MS...: "median min max"
stats()
{
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      print m, v[1], v[NR] }'
}

# rounds_of N: ROUNDS publishes with N directors running; "median min max"
rounds_of()
{
	local n=$1 r rev ms all=() pub=() live t1
	for ((r = 1; r <= rounds; r++)); do
		# node 2 out, or back: each round a change from the live
		# document (kept in a file: this runs in a subshell)
		live=$(cat "$FL_DIR/live")
		mark_t0
		rev=$(publish "$FL_DIR/doc$((3 - live))") || return 1
		t1=$(day_ms "$(date +%H:%M:%S.%3N)")
		[ "$t1" -ge "$T0" ] || t1=$((t1 + 86400000))
		pub+=($((t1 - T0)))
		if [ -z "$rev" ] || [ "$rev" = "$(cat "$FL_DIR/live-rev")" ]; then
			echo "bench-fleet: publish made no new revision" >&2
			return 1
		fi
		echo $((3 - live)) >"$FL_DIR/live"
		echo "$rev" >"$FL_DIR/live-rev"
		ms=$(converge "$rev" "$n") || return 1
		all+=("$ms")
		sleep 0.3 # BIRD and ringsync settle; the rounds do not overlap
	done
	echo "$(stats "${all[@]}") $(stats "${pub[@]}")"
}

fleet_up "$dmax" 2 >/dev/null || { echo "bench-fleet: fleet_up failed" >&2; exit 1; }
fleet_doc 1 >"$FL_DIR/doc1"
fleet_doc 1 2 >"$FL_DIR/doc2"
mark_t0
rev=$(publish "$FL_DIR/doc2")
echo 2 >"$FL_DIR/live"
echo "$rev" >"$FL_DIR/live-rev"
for ((k = 1; k <= dmax; k++)); do
	fleet_director_start "$k" || { echo "bench-fleet: director $k" >&2; exit 1; }
done
converge "$rev" "$dmax" >/dev/null || exit 1

read -r big_med big_min big_max pub_med pub_min pub_max \
	< <(rounds_of "$dmax") || exit 1
[ -n "${pub_max:-}" ] || exit 1
for ((k = 3; k <= dmax; k++)); do fleet_director_kill "$k"; done
read -r two_med two_min two_max pub2_med pub2_min pub2_max \
	< <(rounds_of 2) || exit 1
[ -n "${pub2_max:-}" ] || exit 1

echo
echo "### Fleet convergence: a publish until every director applied it" \
	"(etcd, BIRD and ringsync as in scripts/fleet.sh, on this machine;" \
	"a one-node change; median [min-max] of $rounds rounds, ms)"
echo
echo "| directors | publish until all applied | the publish command, start to exit |"
echo "|---:|---:|---:|"
echo "| $dmax | $big_med [$big_min-$big_max] | $pub_med [$pub_min-$pub_max] |"
echo "| 2 | $two_med [$two_min-$two_max] | $pub2_med [$pub2_min-$pub2_max] |"
printf '{"rounds":%s,"directors":{"%s":{"median":%s,"min":%s,"max":%s,"publish_median":%s},"2":{"median":%s,"min":%s,"max":%s,"publish_median":%s}}}\n' \
	"$rounds" "$dmax" "$big_med" "$big_min" "$big_max" "$pub_med" \
	"$two_med" "$two_min" "$two_max" "$pub2_med" >"$json"
