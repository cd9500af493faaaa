#!/usr/bin/env bash
# gen-man.sh BIN PAGE.8.in: the page with its generated parts filled in from
# the program's own option tables (BIN __options):
#   .\" @COMMANDS@   every command, its arguments, summary and options
#   .\" @GLOBAL@     the options every command takes
# Everything else in PAGE.8.in is copied as it is.
set -euo pipefail
bin=$1 page=$2
dump=$("$bin" __options)

# roff-safe text: backslashes, option dashes, leading dots and quotes
awk_lib='
function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/-/, "\\-", s)
	if (s ~ /^[.'"'"']/) s = "\\&" s
	return s
}
function opt(f) {
	# f: O cmd --long -s type ARG flags words extra help
	head = esc(f[3])
	if (f[4] != "-") head = "\\fB" esc(f[4]) "\\fR, \\fB" head
	else head = "\\fB" head
	head = head "\\fR"
	if (f[6] != "-") head = head " \\fI" esc(f[6]) "\\fR"
	print ".TP"
	print head
	line = esc(f[10])
	if (f[9] != "-") line = line " (" esc(f[9]) ")"
	print line
}
'

commands() {
	awk -F'\t' "$awk_lib"'
	$1 == "C" {
		if (open) print ".RE"
		open = 0
		# a daemon: one command without words, its options only
		wordless = $2 == ""
		if (wordless) next
		print ".SS \"" esc($2) (($3 != "-") ? " \\fI" esc($3) "\\fR" : "") "\""
		print esc($5) "."
		if ($4 == "S") print "A saved file (\\fBsave\\fR, \\fBrestore\\fR) may hold it."
	}
	$1 == "O" && $2 != "*" {
		if (!open && !wordless) { print ".RS"; open = 1 }
		split($0, f, "\t"); opt(f)
	}
	END { if (open) print ".RE" }' <<<"$dump"
}

global() {
	awk -F'\t' "$awk_lib"'
	$1 == "O" && $2 == "*" { split($0, f, "\t"); opt(f) }' <<<"$dump"
}

while IFS= read -r line; do
	case "$line" in
	'.\" @COMMANDS@') commands ;;
	'.\" @GLOBAL@') global ;;
	*) printf '%s\n' "$line" ;;
	esac
done <"$page"
