#!/usr/bin/env bash
# The libFuzzer targets build against the code as it is now (two of them
# include ringctl's sources to reach static parsers) and every input of
# the seed corpus in tests/fuzz/corpus runs clean through its target:
# a change that breaks `make fuzz` shows here, in `make test`, not only
# in CI's fuzzing pass.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
fbuild=${FUZZ_BUILD:-build-fuzz}
passed=0 failed=0
if ! out=$(make -s --no-print-directory fuzz-build FUZZ_BUILD="$fbuild" 2>&1); then
	printf '%s\n' "$out"
	echo "FAIL: make fuzz-build"
	echo "0 passed, 1 failed"
	exit 1
fi
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	seeds=(tests/fuzz/corpus/"$name"/*)
	if [ ! -e "${seeds[0]}" ]; then
		echo "FAIL: $name has no seed corpus in tests/fuzz/corpus/$name"
		failed=$((failed + 1))
		continue
	fi
	# files as arguments: each runs once, no fuzzing
	if log=$("$fbuild/$name" -close_fd_mask=1 "${seeds[@]}" 2>&1); then
		echo "PASS: $name runs its ${#seeds[@]} seed inputs clean"
		passed=$((passed + 1))
	else
		printf '%s\n' "$log" | tail -n 30
		echo "FAIL: $name on its seed corpus"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
