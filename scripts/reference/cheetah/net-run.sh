#!/usr/bin/env bash
# net-run.sh — one OpenCheetah whole-network inference (sqnet or resnet50), both parties on this
# machine over loopback, one thread each, random weights and input from gen-net-inputs.py.
#
#   CHEETAH_BIN=DIR DATA=DIR bash scripts/reference/cheetah/net-run.sh sqnet|resnet50
#
# CHEETAH_BIN holds OpenCheetah's NET-cheetah binaries (see README.md: with nt=1 they need the exit
# fix described there); DATA holds NET_model_random_scale12.inp (the server's stdin) and
# NET_input_random_scale12.inp (the client's). Runs in a fresh directory, so Ferret sets up from
# scratch; Ferret's destructor aborts at exit without ./data, so exit codes are ignored and the
# run counts as done when the client prints its label. Prints both parties' time and traffic lines.
# Wrap it in scripts/ab-time.sh to put it beside ours.
set -uo pipefail
net=${1:?usage: $0 sqnet|resnet50}
bin=${CHEETAH_BIN:?set CHEETAH_BIN}/$net-cheetah
data=${DATA:?set DATA}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cd "$d"
"$bin" r=1 k=12 ell=37 nt=1 p="$port" < "$data/${net}_model_random_scale12.inp" > server.log 2>&1 &
server=$!
sleep 1
"$bin" r=2 k=12 ell=37 nt=1 ip=127.0.0.1 p="$port" < "$data/${net}_input_random_scale12.inp" > client.log 2>&1
wait "$server"
if ! grep -q "predicted label" client.log; then
	echo "$0: the client did not finish:" >&2
	tail -n 20 client.log >&2
	exit 1
fi
grep -h "Total time taken\|Total comm\|Total data sent" server.log client.log
