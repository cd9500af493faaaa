#!/usr/bin/env bash
# Crash consistency: ringctl killed with SIGKILL at random points of
# RM_CRASH_CHANGES (300) changes (node add/del/set, service add/del, a
# 1,000-node restore, seed changes). After every kill:
# every service's live ring, as the next command sees it, is the one its
# node records give (`ringctl show --json`: ring_matches; a kill between
# a change's first and last write leaves RM_CFG_COMMITTING set, and the
# next command, a reader too, rewrites every map from the records before
# it goes on: counted below), the next command takes the lock and succeeds
# without any cleanup (the kernel released the dead one's flock), and at
# the end the pin dir holds the same pins as before, but for the spare
# ring arrays changes keep (rm_ring_spare_<id>, user/lib/state_spare.c: at
# most one per service, each a service's that exists, none half-pinned),
# and the outer ring map points at exactly one inner map per service
# (nothing pinned or kept behind by a dead writer).
set -u

# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
LOAD=$E2E_BUILD/ringload
CTL=$E2E_BUILD/ringctl
CHANGES=${RM_CRASH_CHANGES:-300}

crash_links() { ip -n "$1" link add name rmc0 type veth peer name rmc1; }
e2e_own_netns rmc crash_links

PIN=/sys/fs/bpf/rmt-crash
TMP=$(mktemp -d /tmp/rmt-crash.XXXXXX)
cleanup()
{
	"$LOAD" --pin-dir "$PIN" detach rmc0 --purge >/dev/null 2>&1
	rm -rf "$PIN" "$TMP"
	umount /sys/fs/bpf 2>/dev/null
}
trap cleanup EXIT
C() { "$CTL" --pin-dir "$PIN" "$@"; }

e2e_check "attach rmc0" "$LOAD" --pin-dir "$PIN" attach rmc0 --mode generic

# "ok" when every service's ring matches its node records, else why not
consistent()
{
	C show --json 2>"$TMP/show.err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
bad = [s["name"] for s in d["services"] if not s["ring_matches"]]
print("ok" if not bad else "ring differs from node records: " + " ".join(bad))
' 2>&1 || echo "show failed: $(cat "$TMP/show.err")"
}

# inner maps the outer ring map points at (one per service with a ring)
inner_maps()
{
	bpftool map dump pinned "$PIN/rm_rings" -j 2>/dev/null | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin) if e.get("value") not in (None, 0)))'
}
services() { C show --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["services"]))'; }
# the state's pins, the spares aside
state_pins()
{
	local f
	for f in "$PIN"/*; do
		case ${f##*/} in rm_ring_spare_*) ;; *) echo "${f##*/}" ;; esac
	done | sort | tr '\n' ' '
}
# spares that are not one whole pin of a service that exists
stray_spares()
{
	C show --json | python3 -c '
import json, os, re, sys
ids = {s["id"] for s in json.load(sys.stdin)["services"]}
for name in os.listdir(sys.argv[1]):
    m = re.fullmatch(r"rm_ring_spare_(\d+)", name)
    if name.startswith("rm_ring_spare_") and (not m or int(m[1]) not in ids):
        print(name)' "$PIN"
}

pins_before=$(state_pins)
RANDOM=4242 # the same kill points every run

# a 1,000-node configuration to restore
{
	echo "seed --set 000102030405060708090a0b0c0d0e0f"
	echo "service add big --vip 198.18.0.20 --port 80 --proto tcp --vnodes 100"
	for ((i = 0; i < 1000; i++)); do
		printf 'node add big n%d --mac 02:00:00:%02x:%02x:01 --dev rmc0\n' \
			"$i" $((i >> 8)) $((i & 255))
	done
} >"$TMP/big.conf"

# change I: one ringctl command, as the I-th of the mix
change()
{
	local i=$1 s=svc$((RANDOM % 4)) n=node$((RANDOM % 16))
	# every 30th: replace everything with the 1,000-node configuration
	if [ $((i % 30)) -eq 29 ]; then
		echo restore "$TMP/big.conf"
		return
	fi
	case $((RANDOM % 10)) in
	0) echo service add "$s" --vip 198.18.1.$((RANDOM % 4 + 1)) --port 80 --proto tcp --vnodes 200 ;;
	1) echo service del "$s" ;;
	2 | 3) echo node add "$s" "$n" --mac "02:00:00:00:01:$(printf %02x $((RANDOM % 256)))" --dev rmc0 --weight $((RANDOM % 3 + 1)) ;;
	4) echo node del "$s" "$n" ;;
	5) echo node set "$s" "$n" --weight $((RANDOM % 4 + 1)) ;;
	6) echo node set "$s" "$n" "--$([ $((RANDOM % 2)) = 0 ] && echo drain || echo down)" ;;
	7) echo node set "$s" "$n" --active ;;
	8) echo seed --set "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')" ;;
	9) echo node add "$s" "$n" --mac 02:00:00:00:02:01 --dev rmc0 ;;
	esac
}

# Kill points: uniform over 1.5 times what a change takes here and now
# (the machine may be loaded), measured on a few real changes, so kills
# land before, during and after the commit.
C service add svc0 --vip 198.18.1.1 --port 80 --proto tcp --vnodes 200 >/dev/null
t0=$(date +%s%N)
for n in 0 1 2 3; do
	C node add svc0 "node$n" --mac "02:00:00:00:01:0$n" --dev rmc0 >/dev/null
done
span_ms=$(( ($(date +%s%N) - t0) / 4000000 * 3 / 2 + 1 ))
echo "kill points: 0-$span_ms ms into a change"

killed=0 completed=0 refused=0 inconsistent=0 lockfail=0 restores=0 repaired=0
for ((i = 0; i < CHANGES; i++)); do
	# shellcheck disable=SC2046 # the words of the change
	set -- $(change "$i")
	[ "$1" = restore ] && restores=$((restores + 1))
	# a random point, or never (one in five runs to the end)
	if [ $((RANDOM % 5)) -eq 0 ]; then
		C "$@" >/dev/null 2>&1
	else
		ms=$(( (RANDOM * 32768 + RANDOM) % span_ms + 1 ))
		# the "Killed" note of bash goes to the test's log otherwise
		{ timeout -s KILL "$((ms / 1000)).$(printf %03d $((ms % 1000)))" \
			"$CTL" --pin-dir "$PIN" "$@" >/dev/null 2>&1; } 2>/dev/null
	fi
	rc=$?
	case $rc in
	0) completed=$((completed + 1)) ;;
	137) killed=$((killed + 1)) ;;
	*) refused=$((refused + 1)) ;; # unknown node, duplicate...: a clean refusal
	esac
	[ "$rc" -eq 137 ] || continue
	state=$(consistent)
	grep -q "was interrupted" "$TMP/show.err" && repaired=$((repaired + 1))
	if [ "$state" != ok ]; then
		inconsistent=$((inconsistent + 1))
		echo "after change $i ($*, exit $rc): $state"
	fi
	# the next writer gets the lock without cleanup (a dry run: no change)
	if ! timeout 20 "$CTL" --pin-dir "$PIN" seed --set 000102030405060708090a0b0c0d0e0f --dry-run >/dev/null 2>"$TMP/err"; then
		lockfail=$((lockfail + 1))
		echo "after change $i ($*, exit $rc): the next command failed: $(cat "$TMP/err")"
	fi
done
echo "changes $CHANGES: killed $killed, completed $completed, refused $refused (restores $restores); $repaired kills landed mid-change and the next command completed them"
e2e_check "every kill left a consistent state ($inconsistent did not)" test "$inconsistent" -eq 0
e2e_check "after every kill the next command succeeded without cleanup ($lockfail did not)" test "$lockfail" -eq 0
e2e_check "some changes were killed mid-way ($killed)" test "$killed" -gt 0
e2e_check "some changes completed ($completed)" test "$completed" -gt 0
e2e_check "the same pins as before, spares aside" test "$(state_pins)" = "$pins_before"
e2e_check "spares: each a whole pin of a live service ($(stray_spares | tr '\n' ' ')none stray)" test -z "$(stray_spares)"
nsvc=$(services)
e2e_check "one inner ring map per service, none left behind ($(inner_maps) maps, $nsvc services)" test "$(inner_maps)" = "$nsvc"
e2e_check "a last change goes through" C service add last --vip 198.18.2.1 --port 80 --proto udp

e2e_finish
