#!/usr/bin/env bash
# Static analysis of the userspace code (user/: the library, ringctl,
# ringload): cppcheck, then clang's analyzer through scan-build over a
# build of its own (ANALYZE_BUILD). Any finding fails. A false positive
# is suppressed where it is, with `// cppcheck-suppress ID` and the reason
# on the line above, never for a whole file or check.
# Usage: scripts/analyze.sh ANALYZE_BUILD
set -u
abuild=${1:-build-analyze}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
fail=0

for t in cppcheck scan-build; do
	command -v "$t" >/dev/null || { echo "analyze: $t missing: make deps (clang-tools, cppcheck)"; exit 1; }
done

echo "analyze: cppcheck"
# missingIncludeSystem: system headers are not given (see cppcheck-macros.h)
if ! cppcheck -q --enable=warning,performance,portability --std=c11 \
	--inline-suppr --error-exitcode=1 --suppress=missingIncludeSystem \
	--include=tests/analyze/cppcheck-macros.h -D__x86_64__ \
	-Iinclude -Iuser/lib -Iuser/ringctl -Iuser/ringload user/; then
	echo "analyze: cppcheck: findings above"
	fail=1
fi

echo "analyze: scan-build (clang static analyzer)"
rm -rf "$abuild"
# the BPF objects are built with $(CLANG) as usual; scan-build analyzes
# what CC compiles: userspace
# --exclude: reports inside the build dir are in bpftool's generated
# skeleton (ringmaster.skel.h), whose error path frees through libbpf's
# bpf_object__destroy_skeleton(), which the analyzer cannot see into
# ("potential leak of s"): not our code, and not a leak
if ! scan-build --status-bugs --use-cc=gcc --exclude "$top/$abuild" -o "$abuild/report" \
	make -s --no-print-directory BUILD="$abuild" \
	"$abuild/ringctl" "$abuild/ringload"; then
	echo "analyze: scan-build: findings above (HTML report in $abuild/report)"
	fail=1
fi
[ $fail -eq 0 ] && echo "analyze: clean"
exit $fail
