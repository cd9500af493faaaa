#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian package, as an operator meets it:
#   - `make deb` builds it with Debian's tools (dpkg-buildpackage) and
#     lintian finds no error in it;
#   - `dpkg -i` installs it into this machine's root; the installed
#     ringctl and ringload print the package's version, ringload --help
#     answers, man pages, completion and units are where Debian puts them;
#   - the demo's core runs on the installed binaries: attach on a namespace
#     testbed, a service with three nodes, flows answered where ringctl
#     lookup says;
#   - `dpkg --purge` leaves nothing it installed: the files of the
#     directories it wrote to are as before, and none of its own is left.
# The package is never left installed: a trap purges it on every exit; a
# machine that already has it is not touched (the test fails).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=100
PKG=ringmaster
# where the package writes (and /etc, /run): the same files after the purge
DIRS=(/usr/sbin /usr/share/man/man8 /usr/share/bash-completion/completions
	/lib/systemd/system /usr/lib/systemd/system /etc /run/ringmaster)

for t in dpkg-buildpackage lintian dh; do
	command -v "$t" >/dev/null ||
		e2e_die "$t missing (dpkg-dev, lintian, debhelper): scripts/install-deps.sh"
done
if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q installed; then
	e2e_die "$PKG is already installed on this machine: not touching it"
fi

# ---- build -----------------------------------------------------------------
deb_dir=$E2E_BUILD/deb
rm -f "$deb_dir"/${PKG}_*.deb "$deb_dir"/${PKG}-dbgsym_*.deb
e2e_log "make deb (dpkg-buildpackage, lintian)"
if make -C "$E2E_ROOT" -s deb BUILD="$E2E_BUILD" >"$E2E_BUILD/deb.log" 2>&1; then
	e2e_pass "make deb: built, lintian --fail-on error passes"
else
	tail -30 "$E2E_BUILD/deb.log"
	e2e_die "make deb"
fi
deb=$(ls "$deb_dir"/${PKG}_*_"$(dpkg --print-architecture)".deb)
version=$(dpkg-deb -f "$deb" Version)
e2e_expect_eq "the package's version is debian/changelog's" "$version" \
	"$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$E2E_ROOT/debian/changelog")"
e2e_check "it depends on libbpf, libxdp, libcurl, libjson-c, libmicrohttpd" sh -c "
	dpkg-deb -f '$deb' Depends | grep -q libbpf1 &&
	dpkg-deb -f '$deb' Depends | grep -q libxdp1 &&
	dpkg-deb -f '$deb' Depends | grep -q libcurl4 &&
	dpkg-deb -f '$deb' Depends | grep -q libjson-c5 &&
	dpkg-deb -f '$deb' Depends | grep -q libmicrohttpd12"
# ringctl links its libraries but libc in (Makefile: RM_CTL_STATIC), and
# the package names their sources for rebuilds on their security updates
e2e_check "Built-Using names what ringctl links in" sh -c "
	for src in libbpf elfutils zlib json-c nettle glibc; do
		dpkg-deb -f '$deb' Built-Using | grep -q \"\$src (= \" || exit 1
	done"

# ---- install ---------------------------------------------------------------
e2e_setup 3
# dpkg's own records of it too (not all of /var/lib/dpkg: other packages
# may be installed meanwhile)
snapshot() {
	{
		find "${DIRS[@]}" -xdev 2>/dev/null
		ls -d /usr/share/doc/$PKG* /var/lib/dpkg/info/$PKG* 2>/dev/null
	} | sort
}
snapshot >"$TB_STATE_DIR/files.before"
e2e_on_teardown "dpkg --purge $PKG >/dev/null 2>&1"
e2e_check "dpkg -i $(basename "$deb")" dpkg -i "$deb"
dpkg -L "$PKG" | sort >"$TB_STATE_DIR/pkg.files"
e2e_expect_eq "ringctl --version" "$(/usr/sbin/ringctl --version)" \
	"ringctl $version"
e2e_expect_eq "the installed ringctl needs glibc alone (libc, its loader)" \
	"$(readelf -d /usr/sbin/ringctl | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
		grep -Ev '^(libc\.so\.6|ld-linux[-a-z0-9_]*\.so\.[0-9]+)$')" ""
e2e_expect_eq "ringload --version" "$(/usr/sbin/ringload --version)" \
	"ringload $version"
e2e_check "ringload --help lists attach" sh -c \
	"/usr/sbin/ringload --help | grep -q 'ringload attach IFACE'"
e2e_check "man pages, completion and units the Debian way" sh -c "
	test -f /usr/share/man/man8/ringctl.8.gz &&
	test -f /usr/share/bash-completion/completions/ringctl &&
	test -L /usr/share/bash-completion/completions/ringload &&
	grep -q '^ExecStart=/usr/sbin/ringload attach %I' /lib/systemd/system/ringmaster@.service"

# ---- the demo's core on the installed binaries -------------------------------
RINGCTL=/usr/sbin/ringctl
RINGLOAD=/usr/sbin/ringload
if ! e2e_attach >/dev/null ||
	! e2e_ctl service add web --vip "$TB_VIP4" --port "$E2E_PORT" \
		--proto tcp >/dev/null || ! e2e_add_nodes web; then
	e2e_die "installed ringload attach, ringctl service add web, 3 nodes"
fi
e2e_start_servers || e2e_die "servers started"
e2e_alloc_sports "$N"
e2e_flows "$TB_STATE_DIR/flows" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$E2E_SPORT" --retries 2 --timeout-ms 3000
if e2e_lookups "$TB_STATE_DIR/want" web "$TB_CLIENT_IP4" "$E2E_SPORT" "$N"; then
	e2e_expect_eq "$N flows answered, each by the node ringctl lookup names" \
		"$(grep -vc ' FAIL$' "$TB_STATE_DIR/flows") $(e2e_mismatch "$TB_STATE_DIR/want" "$TB_STATE_DIR/flows")" "$N 0"
else
	e2e_fail "ringctl lookup"
fi

# ---- an upgrade over an older layout keeps the running director ------------
# Pins without a layout record are the layout from before records: the
# package installed again (dpkg runs its postinst as for an upgrade) in the
# director's namespace and bpffs must move the state over by itself.
e2e_ctl save >"$TB_STATE_DIR/save.before"
tb_exec "$TB_DIR_NS" rm /sys/fs/bpf/ringmaster/rm_layout ||
	e2e_fail "rm_layout removed (an older layout)"
# shellcheck disable=SC2317 # called through e2e_check
refused() { ! e2e_attach --reuse 2>/dev/null; }
e2e_check "attach refuses the older layout" refused
tb_exec "$TB_DIR_NS" dpkg -i "$deb" >"$TB_STATE_DIR/upgrade.out" 2>&1
rc=$?
sed 's/^/    /' "$TB_STATE_DIR/upgrade.out"
e2e_expect_eq "dpkg -i over the running director (the upgrade's postinst)" "$rc" 0
e2e_ctl save >"$TB_STATE_DIR/save.after"
e2e_check "... the configuration is the same (ringctl save)" \
	cmp "$TB_STATE_DIR/save.before" "$TB_STATE_DIR/save.after"
e2e_check "... the layout recorded again" \
	tb_exec "$TB_DIR_NS" test -e /sys/fs/bpf/ringmaster/rm_layout
e2e_alloc_sports "$N"
e2e_flows "$TB_STATE_DIR/flows2" --vip "$TB_VIP4" --proto tcp --count "$N" \
	--sport-base "$E2E_SPORT" --retries 2 --timeout-ms 3000
e2e_expect_eq "... $N new flows answered after the upgrade" \
	"$(grep -vc ' FAIL$' "$TB_STATE_DIR/flows2")" "$N"

e2e_check "ringload detach --purge" e2e_detach --purge

# ---- purge -------------------------------------------------------------------
e2e_check "dpkg --purge $PKG" dpkg --purge "$PKG"
e2e_check "... no longer known to dpkg" sh -c \
	"! dpkg-query -W -f='\${Status}' $PKG 2>/dev/null | grep -q installed"
left=$(while read -r f; do [ "$f" = / ] || [ -d "$f" ] || ! [ -e "$f" ] || echo "$f"; done <"$TB_STATE_DIR/pkg.files")
e2e_expect_eq "none of its $(wc -l <"$TB_STATE_DIR/pkg.files") paths left" "$left" ""
snapshot >"$TB_STATE_DIR/files.after"
e2e_check "$(IFS=,; echo "${DIRS[*]}"): the same files as before" \
	diff "$TB_STATE_DIR/files.before" "$TB_STATE_DIR/files.after"
e2e_finish
