#!/usr/bin/env bash
# Run every libFuzzer target in FUZZ_BUILD for FUZZ_SECONDS (default 60)
# from its seed corpus tests/fuzz/corpus/<target> (new inputs go to
# FUZZ_BUILD/corpus/<target>, the tree stays as it is).
# Prints one line per target with its executions; a crash, a sanitizer
# report or a broken oracle fails the run and leaves the input as
# FUZZ_BUILD/crash-*.
# Usage: scripts/fuzz.sh FUZZ_BUILD
set -u
fbuild=${1:-build-fuzz}
secs=${FUZZ_SECONDS:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

failed=0 ran=0
for bin in "$fbuild"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=$(basename "$bin")
	seeds=tests/fuzz/corpus/$name
	work=$fbuild/corpus/$name
	mkdir -p "$work"
	log=$fbuild/$name.log
	# the CLI target prints rings and usage errors: keep them off the log
	mask=0
	[ "$name" = fuzz_cli ] && mask=3
	"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-max_len=4096 -print_final_stats=1 -close_fd_mask=$mask \
		-artifact_prefix="$fbuild/crash-$name-" \
		"$work" "$seeds" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1)
	ran=$((ran + 1))
	if [ $rc -eq 0 ]; then
		echo "fuzz: $name: ${execs:-?} executions in ${secs} s, ${cov:-cov: ?}, no finding"
	else
		failed=$((failed + 1))
		echo "fuzz: $name: FAILED (exit $rc) after ${execs:-?} executions; log $log:"
		grep -E 'ERROR|oracle broken|SUMMARY|Test unit written' "$log" | head -n 20
	fi
done
[ $ran -gt 0 ] || { echo "fuzz: no target found in $fbuild: make fuzz-build"; exit 1; }
echo "fuzz: $ran targets, $failed failed"
[ $failed -eq 0 ]
