#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make install / make uninstall, as a packager and a user run them:
#   - `make install DESTDIR=D` puts ringctl, ringload, the daemons, the man pages, the
#     bash completion and the systemd units under D/usr/local (PREFIX's
#     default), and the installed ringctl runs from there (`ring`); the
#     unit names the installed binaries;
#   - run as an unprivileged user with only D writable, install and
#     uninstall succeed: nothing is written outside DESTDIR;
#   - PREFIX=/usr puts units in /usr/lib/systemd/system (inside DESTDIR);
#   - `make uninstall` with the same variables removes exactly the files
#     install wrote (the file lists match; no file is left).
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d /tmp/rm-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"

mk() { make --no-print-directory -s BUILD="$BUILD" "$@"; }

for f in ringctl ringload man/ringctl.8 man/ringload.8; do
	[ -e "$BUILD/$f" ] || { echo "FAIL: $BUILD/$f missing: run make first"; echo "0 passed, 1 failed"; exit 1; }
done

d=$tmp/stage
check "make install DESTDIR" mk install DESTDIR="$d" >/dev/null
want="usr/local/lib/systemd/system/ringdecap@.service
usr/local/lib/systemd/system/ringexport.service
usr/local/lib/systemd/system/ringhealth.service
usr/local/lib/systemd/system/ringmaster@.service
usr/local/lib/systemd/system/ringneighd.service
usr/local/lib/systemd/system/ringsync.service
usr/local/sbin/ringctl
usr/local/sbin/ringexport
usr/local/sbin/ringhealth
usr/local/sbin/ringload
usr/local/sbin/ringsync
usr/local/share/bash-completion/completions/ringctl
usr/local/share/bash-completion/completions/ringexport
usr/local/share/bash-completion/completions/ringhealth
usr/local/share/bash-completion/completions/ringload
usr/local/share/bash-completion/completions/ringsync
usr/local/share/man/man8/ringctl.8
usr/local/share/man/man8/ringexport.8
usr/local/share/man/man8/ringhealth.8
usr/local/share/man/man8/ringload.8
usr/local/share/man/man8/ringsync.8"
got=$(cd "$d" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
check "install wrote exactly the expected files" test "$got" = "$want"
[ "$got" = "$want" ] || diff <(echo "$want") <(echo "$got")
check "binaries executable, pages and units 0644" sh -c "
	test -x '$d/usr/local/sbin/ringctl' && test -x '$d/usr/local/sbin/ringload' &&
	test \"\$(stat -c %a '$d/usr/local/share/man/man8/ringctl.8')\" = 644 &&
	test \"\$(stat -c %a '$d/usr/local/lib/systemd/system/ringmaster@.service')\" = 644"
out=$("$d/usr/local/sbin/ringctl" ring --nodes a,b,c --json)
check "the installed ringctl runs: ring --nodes a,b,c" \
	test "$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["nodes"]))' <<<"$out")" = 3
check "the installed ringload answers --help" sh -c "'$d/usr/local/sbin/ringload' --help | grep -q 'ringload attach IFACE'"
# the BPF object is in the binary (a skeleton): nothing loaded from a path
check "no .bpf.o path in ringload (the skeleton embeds the object)" sh -c "! strings '$d/usr/local/sbin/ringload' | grep -q '\.bpf\.o$'"
unit=$d/usr/local/lib/systemd/system/ringmaster@.service
check "the unit runs the installed binaries" sh -c "
	grep -q '^ExecStart=/usr/local/sbin/ringload attach %I' '$unit' &&
	grep -q '^ExecStop=-/usr/local/sbin/ringctl .*save --output /etc/ringmaster/%I.conf' '$unit' &&
	! grep -q '@[A-Z]*@' '$unit'"
check "the completion for ringload is the same script" \
	test "$(readlink "$d/usr/local/share/bash-completion/completions/ringload")" = ringctl
check "make uninstall DESTDIR" mk uninstall DESTDIR="$d" >/dev/null
left=$(cd "$d" && find . \( -type f -o -type l \) | wc -l)
check "uninstall removed every file install wrote ($left left)" test "$left" = 0

# As nobody, with only DESTDIR writable: a write anywhere else fails.
if command -v setpriv >/dev/null; then
	d2=$tmp/nobody
	mkdir -p "$d2" && chown 65534:65534 "$d2"
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$@"; }
	check "the build is up to date (make -q all, as nobody)" \
		asnobody make --no-print-directory -s -q BUILD="$BUILD" all
	check "make install as nobody, only DESTDIR writable" asnobody make --no-print-directory -s BUILD="$BUILD" install DESTDIR="$d2" PREFIX=/usr
	check "PREFIX=/usr: units in /usr/lib/systemd/system, binaries in /usr/sbin" \
		test -f "$d2/usr/lib/systemd/system/ringmaster@.service" -a -x "$d2/usr/sbin/ringctl"
	check "PREFIX=/usr: the unit names /usr/sbin" grep -q '^ExecStart=/usr/sbin/ringload' "$d2/usr/lib/systemd/system/ringmaster@.service"
	check "... make uninstall as nobody" asnobody make --no-print-directory -s BUILD="$BUILD" uninstall DESTDIR="$d2" PREFIX=/usr
	check "... nothing left" test "$(find "$d2" \( -type f -o -type l \) | wc -l)" = 0
else
	fail "setpriv missing (util-linux): cannot check that nothing is written outside DESTDIR"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
