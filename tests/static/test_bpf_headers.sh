#!/usr/bin/env bash
# Every BPF object includes only kernel UAPI headers, libbpf's headers and the
# project's own: no glibc header. glibc under -target bpf wants gnu/stubs-32.h,
# which only libc6-dev-i386 has, so a glibc include builds on a machine that
# happens to carry that package and fails on a fresh one. Dependencies come
# from clang -M with the Makefile's own BPF flags.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
flags=$(make -s --no-print-directory print-bpf-cflags) || { echo "FAIL: make print-bpf-cflags"; exit 1; }
clang=${CLANG:-clang}
arch_inc=/usr/include/$(${CC:-gcc} -dumpmachine)
clang_inc=$($clang -print-resource-dir)/include

fail=0 checked=0
for src in bpf/*.bpf.c tests/bpf/*.bpf.c; do
	# shellcheck disable=SC2086
	deps=$($clang $flags -M "$src" 2>&1) || { echo "FAIL: $src: clang -M failed:"; echo "$deps"; fail=1; continue; }
	while read -r dep; do
		case "$dep" in
		""|*.o:|"\\") continue ;;
		bpf/*|tests/bpf/*|include/*|build/*) ;;                    # the project's own
		/usr/include/linux/*|/usr/include/asm-generic/*) ;; # kernel UAPI
		"$arch_inc"/asm/*) ;;                          # kernel UAPI, per arch
		/usr/include/bpf/*) ;;                          # libbpf
		"$clang_inc"/*) ;;                              # the compiler's own (stdint, stdbool)
		*)
			echo "FAIL: $src includes $dep (not kernel UAPI, libbpf or the project's own)"
			case "$dep" in
			*gnu/stubs*|*/features.h|*/sys/*|*/bits/*) echo "      that is a glibc header: a fresh machine without libc6-dev-i386 cannot build it" ;;
			esac
			fail=1 ;;
		esac
		checked=$((checked + 1))
	done < <(printf '%s\n' "$deps" | tr ' ' '\n' | sed 's/\\$//')
done
[ "$checked" -gt 0 ] || { echo "FAIL: no header dependency was read"; exit 1; }
echo "checked $checked header dependencies of $(ls bpf/*.bpf.c tests/bpf/*.bpf.c | wc -l) BPF objects"
[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
