#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages ringctl(8) and ringload(8), and the daemons' (ringexport,
# ringsync, ringhealth: options, exit status, unit), as built (BUILD/man/*.8, their
# command and option lists generated from the programs' tables):
#   - they render without a warning (groff -ww -z -man, man --warnings -l);
#   - every command `PROG --help` lists, and every long option
#     `PROG CMD --help` lists, appears in the rendered page;
#   - they hold the exit status, the files (pin dir, saved configuration),
#     the node-side direct-server-return setup and the systemd unit;
#   - every ringctl/ringload command line of the README and of the documents
#     in tests/readme-docs.list is among the pages' examples.
set -u
# shellcheck source=tests/static/lib.sh
. "$(dirname "$0")/lib.sh"
for t in groff man; do
	command -v $t >/dev/null || { echo "FAIL: $t missing: run scripts/install-deps.sh"; echo "0 passed, 1 failed"; exit 1; }
done
tmp=$(mktemp -d /tmp/rm-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# text of a page on one long line per paragraph, no hyphenation
render() { groff -man -rLL=400n -rHY=0 -Tascii -P-cbou "$1" 2>/dev/null; }
# no_warnings PROG PAGE: groff and man render it without a warning
no_warnings()
{
	check "$1.8: groff -ww -z -man, no warning" \
		sh -c "groff -ww -z -man '$2' 2>'$tmp/w' && ! test -s '$tmp/w'"
	[ -s "$tmp/w" ] && cat "$tmp/w"
	check "$1.8: man --warnings -l, no warning" \
		sh -c "MANWIDTH=80 man --warnings -l '$2' 2>'$tmp/w' >/dev/null && ! test -s '$tmp/w'"
	[ -s "$tmp/w" ] && cat "$tmp/w"
}
# squeeze blanks, for comparing command lines
squeeze() { tr -s ' \t' ' ' | sed 's/^ //; s/ $//'; }

for prog in ringctl ringload; do
	page=$BUILD/man/$prog.8 bin=$BUILD/$prog
	if [ ! -f "$page" ] || [ ! -x "$bin" ]; then
		fail "$page or $bin missing: run make"
		continue
	fi
	no_warnings "$prog" "$page"
	render "$page" >"$tmp/$prog.txt"
	squeeze <"$tmp/$prog.txt" >"$tmp/$prog.sq"
	# commands, from the usage listing: the words before ARGS and options
	mapfile -t cmds < <("$bin" --help | awk -v p="$prog" '$1 == p {
		w = ""; for (i = 2; i <= NF && $i ~ /^[a-z]/; i++) w = w (w ? " " : "") $i; if (w) print w }')
	missing=()
	nopt=0
	for c in "${cmds[@]}"; do
		grep -q -- "^$c\b" "$tmp/$prog.sq" || missing+=("command '$c'")
		# shellcheck disable=SC2086 # the command's words
		for o in $("$bin" $c --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
			nopt=$((nopt + 1))
			grep -q -- "$o\b" "$tmp/$prog.sq" || missing+=("$c $o")
		done
	done
	check "$prog.8: all ${#cmds[@]} commands and $nopt command options of --help are in the page${missing[*]:+ (missing: ${missing[*]})}" \
		test ${#missing[@]} -eq 0 -a ${#cmds[@]} -ge 4
	missing=()
	for s in "EXIT STATUS" "FILES" "/sys/fs/bpf/ringmaster" "/etc/ringmaster/IFACE.conf" \
		"ringmaster@IFACE.service" "arp_ignore" "arp_announce" "SEE ALSO" "EXAMPLES"; do
		grep -qF -- "$s" "$tmp/$prog.sq" || missing+=("'$s'")
	done
	check "$prog.8: exit status, files (pin dir, saved file), DSR, the unit, examples${missing[*]:+ (missing: ${missing[*]})}" \
		test ${#missing[@]} -eq 0
done

# The daemons' pages: one command without words, its options from the table.
for prog in ringexport ringsync ringhealth; do
	page=$BUILD/man/$prog.8 bin=$BUILD/$prog
	if [ ! -f "$page" ] || [ ! -x "$bin" ]; then
		fail "$page or $bin missing: run make"
		continue
	fi
	no_warnings "$prog" "$page"
	render "$page" | squeeze >"$tmp/$prog.sq"
	missing=()
	nopt=0
	for o in $("$bin" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
		nopt=$((nopt + 1))
		grep -q -- "$o\b" "$tmp/$prog.sq" || missing+=("$o")
	done
	for s in "EXIT STATUS" "FILES" "$prog.service" "SEE ALSO" "EXAMPLES"; do
		grep -qF -- "$s" "$tmp/$prog.sq" || missing+=("'$s'")
	done
	check "$prog.8: all $nopt options of --help, exit status, files, the unit, examples${missing[*]:+ (missing: ${missing[*]})}" \
		test ${#missing[@]} -eq 0 -a $nopt -ge 2
done

check "ringctl.8: the node setup (VIP on lo, rp_filter)" \
	sh -c "grep -q 'ip addr add 203.0.113.10/32 dev lo' '$tmp/ringctl.sq' && grep -q 'rp_filter' '$tmp/ringctl.sq'"
check "ringload.8: detaching is explicit (systemctl stop keeps traffic)" \
	sh -c "grep -q 'ringload detach eth1' '$tmp/ringload.sq' && grep -qi 'restart drops traffic\|neither a stop nor a restart drops traffic' '$tmp/ringload.sq'"

# The documents' command lines (comment and build/ dropped) in the examples.
mapfile -t docs < <(grep -v '^#' tests/readme-docs.list)
missing=()
n=0
while IFS= read -r line; do
	line=${line%%#*}
	line=$(squeeze <<<"${line#*build/}")
	[ -n "$line" ] || continue
	n=$((n + 1))
	sed 's/ *#.*//' "$tmp/${line%% *}.sq" | grep -qxF -- "$line" || missing+=("'$line'")
done < <(grep -hE '^ {4,}(build/)?(ringctl|ringload) ' "${docs[@]}" | grep -v '\.\.\.')
check "all $n ringctl/ringload lines of the README and docs/ are in the pages' examples${missing[*]:+ (add to man/*.8.in: ${missing[*]})}" \
	test ${#missing[@]} -eq 0 -a "$n" -ge 10
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
