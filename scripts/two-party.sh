#!/usr/bin/env bash
# two-party.sh — one secure inference as two processes over loopback, checked against --clear.
#
#   bash scripts/two-party.sh SCIRUN PROGRAM.sciir INPUT.npy [scirun flags for both parties...]
#
# Starts the server (party 0, PROGRAM.sciir) on a free port, runs the client (party 1, the
# program's .client.sciir copy) on INPUT, and exits non-zero unless the client's raw output is
# bitwise equal to `SCIRUN --clear` (computed once and kept beside the program as
# PROGRAM.INPUT.clear.npy, redone when the program or the input is newer, so that timing this script
# times the secure run). Extra flags (--ot, --net, --streams, ...) go to both parties.
# For timing, wrap it: bash scripts/ab-time.sh 5 'bash scripts/two-party.sh ... --ot iknp' '...'.
set -euo pipefail
if [[ $# -lt 3 ]]; then
	echo "usage: $0 SCIRUN PROGRAM.sciir INPUT.npy [scirun flags...]" >&2
	exit 2
fi
scirun=$1 prog=$2 input=$3
shift 3
client=${prog%.sciir}.client.sciir
[[ -f $client ]] || { echo "$0: no client copy $client next to $prog" >&2; exit 2; }
tmp=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
ref=${prog%.sciir}.$(basename "${input%.npy}").clear.npy
if [[ ! -f $ref || $ref -ot $prog || $ref -ot $input ]]; then
	"$scirun" --clear "$prog" --input "$input" --raw --output "$ref" > /dev/null
fi
: > "$tmp/server.log" # exists before the loop reads it, however late the server starts
"$scirun" --party 0 "$prog" --listen 127.0.0.1:0 --quiet "$@" 2> "$tmp/server.log" &
server=$!
addr=
for _ in $(seq 200); do
	addr=$(sed -n 's/.* listening on //p' "$tmp/server.log")
	[[ -n $addr ]] && break
	kill -0 "$server" 2> /dev/null || break
	sleep 0.05
done
[[ -n $addr ]] || { echo "$0: the server did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
"$scirun" --party 1 "$client" --connect "$addr" --input "$input" --quiet --raw --output "$tmp/secure.npy" "$@" > /dev/null
wait "$server"
server=
cmp -s "$tmp/secure.npy" "$ref" || { echo "$0: secure output differs from --clear" >&2; exit 1; }
