#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Every shell script of the tree (tests, scripts, the demos, CI, the
# examples, the bash completion) passes shellcheck at warning level, with
# the files it sources followed. Shell is where our tests and demos live;
# a quoting slip or a bad arithmetic test there fails silently (a wait
# loop that never waits), which is what this catches.
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"
command -v shellcheck >/dev/null || { echo "FAIL: shellcheck missing (package shellcheck): run scripts/install-deps.sh"; echo "0 passed, 1 failed"; exit 1; }

tmp=$(mktemp -d /tmp/rm-shellcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The check itself must see a fault: a file test inside (( )), the slip
# that sat in scripts/demo-fleet.sh until this suite found it.
printf '#!/usr/bin/env bash\nfor ((t = 0; t < 3 && ! -s "$1"; t++)); do sleep 1; done\n' >"$tmp/bad.sh"
refuses() { ! shellcheck -S warning "$1" >/dev/null 2>&1; }
check "shellcheck refuses a file test inside (( ))" refuses "$tmp/bad.sh"

# Shell scripts: *.sh, files whose first line names a shell, and the
# completion (bash, no shebang), outside build/ and .git.
scripts=()
while IFS= read -r -d '' f; do
	case $f in
	./build/* | ./.git/*) continue ;;
	*.sh) ;;
	./completion/*) ;;
	*) head -n 1 "$f" 2>/dev/null | grep -Eq '^#!.*[/ ](ba)?sh( |$)' || continue ;;
	esac
	scripts+=("${f#./}")
done < <(find . -type f ! -name '*.o' -print0 | sort -z)
check "found the scripts (at least 40)" test "${#scripts[@]}" -ge 40

# One shellcheck per script, as many at once as there are CPUs (a script
# that sources the e2e library makes shellcheck read it all again).
printf '%s\0' "${scripts[@]}" |
	xargs -0 -P "$(nproc)" -I{} sh -c \
		'o=$2/$(echo "$1" | tr / _); shellcheck -x -s bash -S warning "$1" >"$o.out" 2>&1; echo $? >"$o.rc"' \
		sh {} "$tmp"
for f in "${scripts[@]}"; do
	o=$tmp/$(echo "$f" | tr / _)
	if [ "$(cat "$o.rc" 2>/dev/null)" = 0 ]; then
		pass "shellcheck $f"
	else
		fail "shellcheck $f:"
		sed 's/^/    /' "$o.out"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
