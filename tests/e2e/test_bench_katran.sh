#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench's part katran where no Katran checkout is (a fresh machine,
# CI): the part is skipped loudly, saying how to get one, and the bench
# still finishes with its JSON; scripts/katran.sh refuses a directory that
# is not a checkout and downloads nothing unless told to fetch; ringbench
# katran refuses a missing object and bad arguments with the fix named.
# The measurement itself needs Katran's source (KATRAN_SRC=DIR make
# bench); nothing here fetches it.
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench=$E2E_BUILD/ringbench
e2e_require "bpf_prog_test_run, a network namespace" "$bench"
tmp=$(mktemp -d /tmp/rmt-bkat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The whole bench, part katran only, without KATRAN_SRC.
(cd "$E2E_ROOT" && env -u KATRAN_SRC BENCH_PARTS=katran \
	BENCH_OUT="$tmp/out" scripts/bench.sh "$E2E_BUILD") \
	>"$tmp/b.out" 2>"$tmp/b.err"
rc=$?
e2e_expect_eq "bench.sh without KATRAN_SRC exits 0" "$rc" 0
e2e_check "the part says why it is skipped" \
	grep -q "^skipped: KATRAN_SRC is not set" "$tmp/b.out"
e2e_check "and how to get a checkout" \
	grep -q "git clone https://github.com/facebookincubator/katran" \
	"$tmp/b.out"
e2e_check "and says so on stderr" \
	grep -q "part katran skipped" "$tmp/b.err"
e2e_expect_eq "results.json records the skip" \
	"$(python3 -c 'import json,sys
print(json.load(open(sys.argv[1]))["meta"]["status"]["katran"][:7])' \
		"$tmp/out/results.json" 2>&1)" skipped

# scripts/katran.sh: no checkout, no build; usage without arguments.
mkdir -p "$tmp/empty"
"$E2E_ROOT/scripts/katran.sh" build "$tmp/empty" "$tmp/k" \
	>"$tmp/k.out" 2>&1
e2e_expect_eq "katran.sh build of a non-checkout exits 1" "$?" 1
e2e_check "naming what is missing and how to get it" \
	grep -q "balancer.bpf.c not found: KATRAN_SRC must be a Katran checkout (scripts/katran.sh fetch DIR)" \
	"$tmp/k.out"
e2e_check "and building nothing" test ! -e "$tmp/k/balancer.bpf.o"
"$E2E_ROOT/scripts/katran.sh" >"$tmp/u.out" 2>&1
e2e_expect_eq "katran.sh without a command exits 2" "$?" 2
e2e_check "its usage names fetch and build" \
	sh -c "grep -q 'katran.sh fetch DIR' '$tmp/u.out' &&
		grep -q 'katran.sh build SRC OUTDIR' '$tmp/u.out'"
e2e_check "the fetch pin is a full commit id" \
	grep -Eq '^KATRAN_PIN=[0-9a-f]{40}$' "$E2E_ROOT/scripts/katran.sh"

# ringbench katran: usage, and an object that is not there.
"$bench" katran >"$tmp/r.out" 2>&1
e2e_expect_eq "ringbench katran without an object exits 2" "$?" 2
e2e_check "its usage names scripts/katran.sh build" \
	grep -q "katran KATRAN.bpf.o \[NOFLOOD.bpf.o\] (scripts/katran.sh build)" \
	"$tmp/r.out"
"$bench" --quick --rounds 5 katran "$tmp/none.bpf.o" >"$tmp/n.out" 2>&1
e2e_expect_eq "ringbench katran of a missing object exits 1" "$?" 1
e2e_check "naming the object" grep -q "katran: opening $tmp/none.bpf.o" \
	"$tmp/n.out"

e2e_finish
