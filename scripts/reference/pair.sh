#!/usr/bin/env bash
# pair.sh — run both parties of a C++ reference benchmark (EzPC SCI's sci-bench, or the Cheetah
# ReLU driver in scripts/reference/cheetah/) on this machine, over loopback, and print party 2's
# output (its RESULT line). Fails if either party fails.
#
#   bash scripts/reference/pair.sh BINARY [ARGS...]      # e.g. ~/.cache/sci-reference/sci/bin/sci-bench op=relu N=1048576 nt=1
#
# Both drivers take r=1|2 (party) and p=PORT; a free port is picked here. Run it under
# scripts/ab-time.sh to put a reference beside our own command (A B A B, medians).
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 BINARY [ARGS...]" >&2; exit 2; }
bin=$1
shift
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Cheetah's Ferret reads and writes pre-OT state under ./data when it exists: run in a fresh
# directory so that every run pays its full setup.
(cd "$tmp" && "$bin" r=1 p="$port" "$@" > "$tmp/p1.out" 2>&1) &
p1=$!
rc=0
(cd "$tmp" && "$bin" r=2 p="$port" "$@" > "$tmp/p2.out" 2>&1) || rc=$?
wait "$p1" || rc=$?
cat "$tmp/p2.out"
if [[ $rc -ne 0 ]]; then
	echo "$0: a party failed (exit $rc); party 1 said:" >&2
	cat "$tmp/p1.out" >&2
	exit "$rc"
fi
