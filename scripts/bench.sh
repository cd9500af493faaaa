#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Ringmaster benchmarks: `make bench` (root). Runs every part of ringbench,
# prints markdown tables and writes BUILD/bench/results.json.
#
#   search   userspace ring search, random keys, 1k..1M entries
#   quality  ring balance and movement, beside Maglev and modulo hashing
#   kernel   per-packet cost, bpf_prog_test_run, director vs baseline;
#            new flows vs the design before the presence index
#            (BUILD/ringmaster-noidx.bpf.o) in the same rounds; the rows
#            on every CPU at once (scaling efficiency)
#   encap    per-packet cost of each forwarding method (l2, ipip, gue),
#            and of a second-chance hop list beside a flow without one
#   decap    per-packet cost of the node-side decapsulator: plain GUE
#            beside the second-chance decisions (kept, delivered, forwarded)
#   keys     per-packet cost of each key extractor (keys of 8, 32, 250
#            bytes) beside the flow-hash paths, bpf_prog_test_run
#   control  ringctl commands at 100 nodes x 1000 vnodes (reads, node
#            add/del, apply), each a fresh process; ring update steps, memory
#   health   the health checker at scale: 1,000 nodes at 1 s (rate, lag,
#            CPU), measured by tests/e2e/test_health_scale.sh, judged here
#   fleet    a fleet's convergence: a publish until every director's
#            ringsync applied it, 10 directors and 2 (scripts/bench-fleet.sh
#            on scripts/fleet.sh: etcd, BIRD, ringsync in namespaces)
#   live     forwarding rate in a namespace testbed (scripts/testbed.sh):
#            UDP flows, and memcached requests to a keyed service
#   katran   the director beside Katran's XDP balancer (issue 23), same
#            frames, harness and rounds: new and established flows, 1
#            and 65,536, l2/ipip/gue vs Katran's IPIP. Built from the
#            checkout in KATRAN_SRC (scripts/katran.sh); skipped, with
#            how to get one, without it
#
# Usage: scripts/bench.sh [BUILD]
# Environment: BENCH_ROUNDS (default 7, at least 5), BENCH_QUICK=1 (small
# sizes, for a smoke run), BENCH_PARTS="search quality ..." (a subset),
# BENCH_LIVE_NODES (default 4), BENCH_LIVE_PACKETS (frames per round),
# BENCH_OUT (default BUILD/bench: the JSON, the tables' sources, plots/),
# KATRAN_SRC (a Katran checkout, for part katran).
#
# Plots: scripts/bench-plot.py draws BENCH_OUT/results.json into
# BENCH_OUT/plots/*.svg with gnuplot (per-packet cost by path against
# flows and ring size beside the baseline, forwarding methods, search,
# ring balance and movement); docs/performance.md shows a run's.
#
# Network: only part "live" sends packets, and only inside the namespaces
# testbed.sh creates (198.18.0.0/15, 2001:db8::/32); the testbed is torn
# down on every exit path. Nothing is configured in the root namespace.
set -u

build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
bench=$build/ringbench
out=${BENCH_OUT:-$build/bench}
rounds=${BENCH_ROUNDS:-7}
parts=${BENCH_PARTS:-search quality kernel encap decap keys control health fleet live katran}
quick=()
[ "${BENCH_QUICK:-0}" = 1 ] && quick=(--quick)

if [ ! -x "$bench" ]; then
	echo "bench: $bench not built (make all)" >&2
	exit 1
fi
mkdir -p "$out"
rm -f "$out"/*.json "$out"/targets.tsv
is_root=0
[ "$(id -u)" -eq 0 ] && is_root=1
start_all=$SECONDS
# Other work on the machine shows in every figure: record how busy it was.
load0=$(cut -d' ' -f1-3 /proc/loadavg)

# Status of each part: ok, failed (with a reason) or skipped.
declare -A status

# run_part NAME ringbench-args...: JSON to $out/NAME.json. ringbench exits
# 0 (done), 3 (done, but a path could not be verified: the JSON says
# which) or anything else (failed: the JSON may be incomplete).
run_part()
{
	local name=$1 rc t0=$SECONDS
	shift
	echo
	echo "## $name"
	"$bench" --rounds "$rounds" "${quick[@]}" --json "$out/$name.json" \
		--targets "$out/targets.tsv" "$@"
	rc=$?
	case $rc in
	0) status[$name]=ok ;;
	3) status[$name]="ok, with unverified paths" ;;
	*)
		status[$name]="failed (exit $rc)"
		rm -f "$out/$name.json"
		;;
	esac
	echo "($name: $((SECONDS - t0)) s)"
}

skip_part()
{
	echo
	echo "## $1"
	echo "skipped: $2"
	status[$1]="skipped: $2"
}

want()
{
	case " $parts " in *" $1 "*) return 0 ;; esac
	return 1
}

echo "# Ringmaster benchmarks"
echo
echo "$(uname -r), $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' \
	/proc/cpuinfo | head -1)), rounds $rounds${quick:+, quick}, load" \
	"average $load0 at the start"

want search && run_part search search
want quality && run_part quality quality

if want kernel; then
	if [ $is_root -eq 1 ]; then
		ref=()
		[ -f "$build/ringmaster-noidx.bpf.o" ] &&
			ref=(--reference "$build/ringmaster-noidx.bpf.o")
		run_part kernel "${ref[@]}" kernel
	else
		skip_part kernel "needs root (bpf_prog_test_run)"
	fi
fi

if want encap; then
	if [ $is_root -eq 1 ]; then
		run_part encap encap
	else
		skip_part encap "needs root (bpf_prog_test_run, a namespace)"
	fi
fi

if want decap; then
	if [ $is_root -eq 1 ]; then
		run_part decap decap
	else
		skip_part decap "needs root (bpf_prog_test_run, a namespace)"
	fi
fi

if want keys; then
	if [ $is_root -eq 1 ]; then
		run_part keys keys
	else
		skip_part keys "needs root (bpf_prog_test_run)"
	fi
fi

if want control; then
	if [ $is_root -eq 1 ]; then
		run_part control control "$build/ringctl"
	else
		skip_part control "needs root (BPF maps, namespaces)"
	fi
fi

# The health checker at scale: test_health_scale.sh (make test checks only
# its counts) measures 1,000 nodes at 1 s and writes the figures; the
# targets are judged here, where a busy machine is part of the reading.
health_part()
{
	local t0=$SECONDS j=$out/health.json rate lag cpu
	echo
	echo "## health"
	rm -f "$j"
	if ! BUILD=$build HEALTH_SCALE_JSON=$j HEALTH_SCALE_INTERVAL_MS=1000 \
		HEALTH_SCALE_TIMEOUT_MS=500 bash tests/e2e/test_health_scale.sh \
		>"$out/health.log" 2>&1 || [ ! -s "$j" ]; then
		tail -n 5 "$out/health.log"
		status[health]="failed (see $out/health.log)"
		rm -f "$j"
		return
	fi
	rate=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["checks_per_s"])' "$j")
	lag=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["lag_max_ms"])' "$j")
	cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_pct"])' "$j")
	echo
	echo "| 1,000 nodes, tcp check every 1 s | measured |"
	echo "|---|---:|"
	echo "| checks per second | $rate |"
	echo "| largest lag of a check (ms) | $lag |"
	echo "| ringhealth CPU (% of one core) | $cpu |"
	verdict() { awk -v v="$1" -v w="$2" -v op="$3" 'BEGIN {
		ok = op == ">=" ? v >= w : v < w; print ok ? "met" : "missed" }'; }
	printf '%s\t%s\t%s\t%s\t%s\n' \
		"health checks keep up, 1,000 nodes at 1 s" ">= 950 checks/s" \
		"$rate/s" "$(verdict "$rate" 950 '>=')" "ringhealth, tcp" \
		"no health check two intervals late" "< 2000 ms" "$lag ms" \
		"$(verdict "$lag" 2000 '<')" "max lag over the window" \
		"health checker CPU, 1,000 nodes at 1 s" "< 100% of a core" \
		"$cpu%" "$(verdict "$cpu" 100 '<')" "utime + stime" \
		>>"$out/targets.tsv"
	status[health]=ok
	echo "(health: $((SECONDS - t0)) s)"
}

if want health; then
	if [ $is_root -eq 1 ]; then
		health_part
	else
		skip_part health "needs root (network namespaces)"
	fi
fi

# A fleet on this machine (etcd, BIRD, ringsync): the time from a publish
# until every director applied it, reported (the issue set no target).
fleet_part()
{
	local t0=$SECONDS j=$out/fleet.json d=${BENCH_FLEET_D:-10}
	echo
	echo "## fleet"
	rm -f "$j"
	if ! scripts/bench-fleet.sh "$build" "$j" "$rounds" \
		2>"$out/fleet.log" || [ ! -s "$j" ]; then
		tail -n 5 "$out/fleet.log"
		status[fleet]="failed (see $out/fleet.log)"
		rm -f "$j"
		return
	fi
	printf '%s\t%s\t%s\t%s\t%s\n' \
		"fleet convergence, $d directors on this machine" "reported" \
		"$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["directors"][sys.argv[2]]; print("%s ms (%s-%s)" % (s["median"], s["min"], s["max"]))' "$j" "$d")" \
		"n/a" "publish until every ringsync applied it (issue 23: 1.24 s)" \
		"fleet convergence, 2 directors" "reported" \
		"$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["directors"]["2"]; print("%s ms (%s-%s)" % (s["median"], s["min"], s["max"]))' "$j")" \
		"n/a" "the same with two (issue 23: 0.29 s)" >>"$out/targets.tsv"
	status[fleet]=ok
	echo "(fleet: $((SECONDS - t0)) s)"
}

if want fleet; then
	if [ $is_root -ne 1 ]; then
		skip_part fleet "needs root (network namespaces)"
	elif ! command -v bird >/dev/null || ! command -v etcd >/dev/null; then
		skip_part fleet "needs bird and etcd (make deps)"
	else
		fleet_part
	fi
fi

# The live part builds a testbed; testbed_down runs on every way out.
live_part()
{
	local nodes=${BENCH_LIVE_NODES:-4} args=()
	[ -z "${BENCH_LIVE_PACKETS:-}" ] ||
		args=(--packets "$BENCH_LIVE_PACKETS")
	# shellcheck source=scripts/testbed.sh
	source scripts/testbed.sh
	trap 'testbed_down; exit 130' INT TERM
	trap 'testbed_down' EXIT
	if ! testbed_up "$nodes" >"$out/testbed.log" 2>&1; then
		cat "$out/testbed.log" >&2
		skip_part live "testbed_up failed (see $out/testbed.log)"
		testbed_down
		trap - INT TERM EXIT
		return
	fi
	run_part live live --state "$TB_STATE_DIR/state" "${args[@]}"
	testbed_down
	trap - INT TERM EXIT
}

if want live; then
	if [ $is_root -ne 1 ]; then
		skip_part live "needs root (network namespaces)"
	elif [ ! -f scripts/testbed.sh ]; then
		skip_part live "scripts/testbed.sh not present"
	elif ! command -v ip >/dev/null || ! command -v ethtool >/dev/null; then
		skip_part live "needs ip and ethtool (make deps)"
	else
		live_part
	fi
fi

# Katran beside the director: its balancer is compiled from the
# operator's checkout; nothing is downloaded here.
katran_part()
{
	local kdir=$build/katran
	if ! scripts/katran.sh build "$KATRAN_SRC" "$kdir" \
		>"$out/katran-build.log" 2>&1; then
		echo
		echo "## katran"
		cat "$out/katran-build.log" >&2
		status[katran]="failed (building Katran: see $out/katran-build.log)"
		return
	fi
	echo
	echo "Katran: $KATRAN_SRC at commit $(cat "$kdir/commit")"
	run_part katran katran "$kdir/balancer.bpf.o" \
		"$kdir/balancer-noflood.bpf.o"
}

if want katran; then
	if [ $is_root -ne 1 ]; then
		skip_part katran "needs root (bpf_prog_test_run, a namespace)"
	elif [ -z "${KATRAN_SRC:-}" ]; then
		skip_part katran "KATRAN_SRC is not set: no Katran checkout\
 to build its balancer from. Get one: git clone\
 https://github.com/facebookincubator/katran DIR (or scripts/katran.sh\
 fetch DIR: the pinned commit); then KATRAN_SRC=DIR make bench"
		echo "bench: part katran skipped: KATRAN_SRC is not set" >&2
	else
		katran_part
	fi
fi

# ---- summary -------------------------------------------------------------

json_str()
{
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/ }
	printf '"%s"' "$s"
}

echo
echo "## Targets"
echo
echo "| target | wanted | measured | verdict | note |"
echo "|---|---|---|---|---|"
if [ -f "$out/targets.tsv" ]; then
	while IFS=$'\t' read -r name want meas verdict note; do
		echo "| $name | $want | $meas | **$verdict** | $note |"
	done <"$out/targets.tsv"
fi
for p in $parts; do
	case ${status[$p]:-} in
	ok*) ;;
	*) echo "| $p | | ${status[$p]:-not run} | n/a | |" ;;
	esac
done

res=$out/results.json
{
	printf '{"meta":{'
	printf '"kernel":%s,' "$(json_str "$(uname -r)")"
	printf '"cpus":%s,' "$(nproc)"
	printf '"cpu":%s,' "$(json_str "$(sed -n 's/^model name[^:]*: //p' \
		/proc/cpuinfo | head -1)")"
	printf '"commit":%s,' "$(json_str "$(git rev-parse --short HEAD \
		2>/dev/null || echo unknown)")"
	printf '"date":%s,' "$(json_str "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
	printf '"loadavg_start":%s,"loadavg_end":%s,' "$(json_str "$load0")" \
		"$(json_str "$(cut -d' ' -f1-3 /proc/loadavg)")"
	printf '"rounds":%s,"quick":%s,' "$rounds" \
		"$([ ${#quick[@]} -gt 0 ] && echo true || echo false)"
	printf '"seconds":%s,"status":{' "$((SECONDS - start_all))"
	sep=
	for p in $parts; do
		printf '%s"%s":%s' "$sep" "$p" "$(json_str "${status[$p]:-not run}")"
		sep=,
	done
	printf '}}'
	for p in search quality kernel encap decap keys control health fleet live katran; do
		if [ -s "$out/$p.json" ]; then
			printf ',"%s":' "$p"
			tr -d '\n' <"$out/$p.json"
		else
			printf ',"%s":null' "$p"
		fi
	done
	printf ',"targets":['
	sep=
	if [ -f "$out/targets.tsv" ]; then
		while IFS=$'\t' read -r name want meas verdict note; do
			printf '%s{"target":%s,"wanted":%s,"measured":%s,' "$sep" \
				"$(json_str "$name")" "$(json_str "$want")" \
				"$(json_str "$meas")"
			printf '"verdict":%s,"note":%s}' "$(json_str "$verdict")" \
				"$(json_str "$note")"
			sep=,
		done <"$out/targets.tsv"
	fi
	printf ']}\n'
} >"$res"
if command -v python3 >/dev/null &&
	! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$res"; then
	echo "bench: $res is not valid JSON" >&2
	exit 1
fi
failed=0
rm -rf "$out/plots"
if ! command -v gnuplot >/dev/null; then
	echo "bench: gnuplot missing (make deps): no plots" >&2
	failed=1
elif ! python3 scripts/bench-plot.py "$res" "$out/plots" >"$out/plots.log"; then
	echo "bench: plotting failed: $(cat "$out/plots.log")" >&2
	failed=1
else
	echo
	echo "plots: $(xargs <"$out/plots.log")"
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "results: $res ($((SECONDS - start_all)) s)"

for p in $parts; do
	case ${status[$p]:-} in
	failed*) failed=1 ;;
	esac
done
exit $failed
