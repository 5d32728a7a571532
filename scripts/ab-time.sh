#!/usr/bin/env bash
# ab-time.sh — time two commands in alternation (A B A B ...), whole process, and print medians.
#
#   bash scripts/ab-time.sh N 'COMMAND_A' 'COMMAND_B'
#
# Runs one warm-up of each, then N pairs. Each run is timed by GNU time (/usr/bin/time): wall
# seconds, CPU seconds (user + system) and peak RSS of the largest process. Prints the median of
# each column per command and the median of the pairwise wall ratios A/B. Alternating keeps the
# ratio meaningful on a shared machine whose speed drifts; quote medians, not single runs.
# A command that exits non-zero stops the script (a benchmark that fails must not be timed).
set -euo pipefail
if [[ $# -ne 3 || ! $1 =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 N 'COMMAND_A' 'COMMAND_B'" >&2
	exit 2
fi
n=$1 a=$2 b=$3
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time at /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # run CMD OUTFILE: appends "wall cpu maxrss_kib"
	if ! /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" bash -c "$1" > /dev/null 2> "$tmp/err"; then
		echo "$0: command failed: $1" >&2
		tail -5 "$tmp/err" >&2
		exit 1
	fi
	read -r wall user sys rss < <(tail -1 "$tmp/t")
	awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {print w, u + s, r}' >> "$2"
}

run "$a" /dev/null
run "$b" /dev/null
for ((i = 1; i <= n; i++)); do
	run "$a" "$tmp/a"
	run "$b" "$tmp/b"
	echo "pair $i/$n: A $(tail -1 "$tmp/a" | cut -d' ' -f1) s, B $(tail -1 "$tmp/b" | cut -d' ' -f1) s" >&2
done

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for x in a b; do
	name=A cmd=$a
	[[ $x == b ]] && name=B cmd=$b
	printf '%s: median wall %s s, cpu %s s, peak RSS %s MiB  (%s)\n' "$name" \
		"$(cut -d' ' -f1 "$tmp/$x" | median)" "$(cut -d' ' -f2 "$tmp/$x" | median)" \
		"$(cut -d' ' -f3 "$tmp/$x" | median | awk '{printf "%.0f", $1 / 1024}')" "$cmd"
done
printf 'A/B wall: median of %d pairs %s\n' "$n" "$(paste -d' ' "$tmp/a" "$tmp/b" | awk '{print $1 / $4}' | median)"
