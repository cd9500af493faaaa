#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Katran's XDP balancer for bench part "katran" (issue 23: the peer an
# operator would pick instead, measured side by side). Nothing of Katran
# lives in this repository: the object is compiled from a checkout.
#
#   scripts/katran.sh fetch DIR        clone Katran into DIR at the pinned
#                                      commit (the operator runs this; no
#                                      test or CI step downloads anything)
#   scripts/katran.sh build SRC OUTDIR compile SRC/katran/lib/bpf/
#                                      balancer.bpf.c into OUTDIR:
#     balancer.bpf.o          as Katran's own build makes it
#                             (build_bpf_modules_opensource.sh, no -d
#                             DEFINES: IPIP encapsulation, no options)
#     balancer-noflood.bpf.o  the same with MAX_CONN_RATE raised, so every
#                             SYN writes the LRU (Katran stops writing it
#                             past 125,000 new flows/s, which a benchmark
#                             loop exceeds): reported beside the default
#
# The flags are Katran's Makefile-bpf rule (clang -emit-llvm piped to llc
# -march=bpf, -DDEBUG -D__KERNEL__, its -Wno-* set, -O2 -g), with the
# machine's clang and llc (14 here) instead of its fetched clang 12.
set -eu

# The commit the figures in docs/performance.md were measured at.
KATRAN_URL=https://github.com/facebookincubator/katran
KATRAN_PIN=19f08fec82fb7b5fb14d935a80057bdc0897c8de

usage()
{
	sed -n '8,20p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

katran_build()
{
	local src=$1 out=$2 cc=${CLANG:-clang} llc=${LLC:-llc} name defs
	local bpf=$src/katran/lib/bpf/balancer.bpf.c

	if [ ! -f "$bpf" ]; then
		echo "katran: $bpf not found: KATRAN_SRC must be a Katran" \
			"checkout (scripts/katran.sh fetch DIR)" >&2
		return 1
	fi
	for t in "$cc" "$llc"; do
		command -v "$t" >/dev/null || {
			echo "katran: $t not found (make deps: clang llvm)" >&2
			return 1
		}
	done
	mkdir -p "$out"
	for name in balancer balancer-noflood; do
		defs=()
		[ "$name" = balancer-noflood ] &&
			defs=(-DMAX_CONN_RATE=1000000000000ULL)
		# the includes name katran/lib/...; Makefile-bpf adds a copy of
		# linux_includes as include/: the same directory here
		"$cc" -I"$src/katran/lib/linux_includes" -I"$src" "${defs[@]}" \
			-DDEBUG -D__KERNEL__ -Wno-unused-value \
			-Wno-pointer-sign -Wno-compare-distinct-pointer-types \
			-O2 -emit-llvm -c -g "$bpf" -o - |
			"$llc" -march=bpf -filetype=obj -o "$out/$name.bpf.o.tmp"
		mv "$out/$name.bpf.o.tmp" "$out/$name.bpf.o"
	done
	# the commit measured, for the report (an archive has none)
	if [ -e "$src/.git" ]; then
		git -C "$src" rev-parse HEAD >"$out/commit"
	else
		echo "unknown (not a git checkout)" >"$out/commit"
	fi
}

case ${1:-} in
fetch)
	[ $# -eq 2 ] || usage
	git clone "$KATRAN_URL" "$2"
	git -C "$2" checkout -q "$KATRAN_PIN"
	echo "katran: $2 at $KATRAN_PIN; now: KATRAN_SRC=$2 make bench"
	;;
build)
	[ $# -eq 3 ] || usage
	katran_build "$2" "$3"
	;;
*)
	usage
	;;
esac
