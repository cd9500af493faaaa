#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The systemd units ringmaster@.service, ringhealth.service, ringsync.service
# and ringexport.service, installed (make install PREFIX=T,
# so its ExecStart/ExecStop name binaries that exist, and its man pages are
# found through MANPATH): `systemd-analyze verify` on an instance accepts
# it with no message at all. What its commands do on a live director
# (restart keeps the program and the flows, a "reboot" restores the saved
# file) is tests/e2e/test_system.sh.
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (package systemd): run scripts/install-deps.sh"; echo "0 passed, 1 failed"; exit 1; }

tmp=$(mktemp -d /tmp/rm-systemd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! make --no-print-directory -s BUILD="$BUILD" install PREFIX="$tmp" CONFDIR="$tmp/etc" >/dev/null; then
	echo "FAIL: make install PREFIX=$tmp"
	echo "0 passed, 1 failed"
	exit 1
fi
unit=$tmp/lib/systemd/system/ringmaster@.service
for iface in lo eth1 veth-a.b; do
	inst=$tmp/lib/systemd/system/ringmaster@$iface.service
	if MANPATH=$tmp/share/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$inst" >"$tmp/out" 2>&1 &&
		! [ -s "$tmp/out" ]; then
		pass "systemd-analyze verify ringmaster@$iface.service: no message"
	else
		fail "systemd-analyze verify ringmaster@$iface.service:"
		cat "$tmp/out"
	fi
done
# ringsync.service: its settings file exists on a configured director
printf 'RINGSYNC_ETCD=http://198.18.199.1:2379\nRINGSYNC_KEY=/ringmaster/fleet\n' \
	>"$tmp/etc/ringsync.env" 2>/dev/null ||
	{ mkdir -p "$tmp/etc" && printf 'RINGSYNC_ETCD=http://198.18.199.1:2379\nRINGSYNC_KEY=/ringmaster/fleet\n' >"$tmp/etc/ringsync.env"; }
if MANPATH=$tmp/share/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify \
	"$tmp/lib/systemd/system/ringsync.service" >"$tmp/out" 2>&1 &&
	! [ -s "$tmp/out" ] &&
	grep -q "^ExecStart=$tmp/sbin/ringsync --etcd" "$tmp/lib/systemd/system/ringsync.service"; then
	pass "systemd-analyze verify ringsync.service: no message; runs the installed ringsync"
else
	fail "systemd-analyze verify ringsync.service:"
	cat "$tmp/out"
fi
# A stop must not detach: nothing in the unit runs ringload detach/purge.
if grep -Eq '^Exec.*ringload +(detach|purge)' "$unit"; then
	fail "the unit detaches or purges"
else
	pass "no ExecStop/ExecStart detaches or purges (a stop keeps the director attached)"
fi
if grep -q "^ExecStart=$tmp/sbin/ringload attach %I --reuse" "$unit" &&
	grep -q "^ExecStop=-$tmp/sbin/ringctl --pin-dir \${PIN_DIR} save --output $tmp/etc/%I.conf" "$unit"; then
	pass "start attaches with --reuse, stop saves the live configuration"
else
	fail "ExecStart/ExecStop not as documented"
fi
# verify UNIT: systemd-analyze verify accepts the installed UNIT silently
verify()
{
	if MANPATH=$tmp/share/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify \
		"$tmp/lib/systemd/system/$1" >"$tmp/out" 2>&1 && ! [ -s "$tmp/out" ]; then
		pass "systemd-analyze verify $1: no message"
	else
		fail "systemd-analyze verify $1:"
		cat "$tmp/out"
	fi
}
# The health checker's unit: verified, and it runs the installed binary.
hunit=$tmp/lib/systemd/system/ringhealth.service
verify ringhealth.service
if grep -q "^ExecStart=$tmp/sbin/ringhealth --pin-dir /sys/fs/bpf/ringmaster$" "$hunit" &&
	[ -x "$tmp/sbin/ringhealth" ]; then
	pass "ringhealth.service runs the installed ringhealth"
else
	fail "ringhealth.service ExecStart or binary not as installed"
fi
# Routed nodes: the director's next-hop keeper and the node's decapsulator.
printf 'DECAP_ALLOW_SRC=198.18.0.1/32,2001:db8::1/128\n' >"$tmp/etc/decap.env"
for u in ringneighd.service ringdecap@eth1.service; do
	verify "$u"
done
if grep -q "^ExecStart=$tmp/sbin/ringload neighd --pin-dir /sys/fs/bpf/ringmaster$" \
	"$tmp/lib/systemd/system/ringneighd.service" &&
	grep -q "^ExecStart=$tmp/sbin/ringload decap attach %I --allow-src \${DECAP_ALLOW_SRC}" \
		"$tmp/lib/systemd/system/ringdecap@.service"; then
	pass "ringneighd and ringdecap@ run the installed ringload"
else
	fail "ringneighd/ringdecap@ ExecStart not as installed"
fi
# The metrics exporter's unit: verified without its optional settings
# file, and it runs the installed ringexport on the default address.
eunit=$tmp/lib/systemd/system/ringexport.service
verify ringexport.service
if grep -q "^ExecStart=$tmp/sbin/ringexport --listen \${RINGEXPORT_LISTEN} \$RINGEXPORT_OPTS$" "$eunit" &&
	grep -q '^Environment=RINGEXPORT_LISTEN=127.0.0.1:9842$' "$eunit" &&
	[ -x "$tmp/sbin/ringexport" ]; then
	pass "ringexport.service runs the installed ringexport on 127.0.0.1:9842"
else
	fail "ringexport.service ExecStart or binary not as installed"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
