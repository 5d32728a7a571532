#!/usr/bin/env bash
# The README's first set-up command: builds the tools, compiles the bundled MNIST model with
# autotuning on the bundled validation inputs, runs it in the clear, then runs a secure two-party
# inference (server and client as two processes over loopback TCP) and checks that the secure
# output is bitwise equal to the cleartext one.
set -euo pipefail
cd "$(dirname "$0")/.."

go build -o bin/ ./cmd/athosc ./cmd/scirun ./cmd/mkdata
mkdir -p out
echo "== compile: bin/athosc testdata/mnist-small/model.onnx --validate testdata/mnist-small/inputs -o out/mnist-small.sciir"
bin/athosc testdata/mnist-small/model.onnx --validate testdata/mnist-small/inputs -o out/mnist-small.sciir
input=testdata/mnist-small/inputs/00000.npy
label=$(grep "^$(basename "$input") " testdata/mnist-small/inputs/labels.txt | cut -d' ' -f2)

echo
echo "== cleartext fixed-point reference: bin/scirun --clear out/mnist-small.sciir --input $input"
bin/scirun --clear out/mnist-small.sciir --input "$input" --output out/clear.npy --raw

echo
echo "== secure inference, server (party 0, holds the weights):"
echo "   bin/scirun --party 0 out/mnist-small.sciir --listen 127.0.0.1:0   (log: out/server.log)"
rm -f out/server.log
bin/scirun --party 0 out/mnist-small.sciir --listen 127.0.0.1:0 --quiet 2>out/server.log &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.* listening on //p' out/server.log)
	[ -n "$addr" ] && break
	kill -0 $server 2>/dev/null || break
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "the server did not start:" >&2
	cat out/server.log >&2
	exit 1
fi
echo "== secure inference, client (party 1, holds the input, program without weights):"
echo "   bin/scirun --party 1 out/mnist-small.client.sciir --connect $addr --input $input --report out/report.json"
bin/scirun --party 1 out/mnist-small.client.sciir --connect "$addr" --input "$input" \
	--output out/secure.npy --raw --report out/report.json
wait $server
trap - EXIT

echo
echo "(label of $input: $label)"
if cmp -s out/clear.npy out/secure.npy; then
	echo "the secure output is bitwise equal to the cleartext run (out/secure.npy, out/clear.npy); report: out/report.json"
else
	echo "MISMATCH: the secure output differs from the cleartext run" >&2
	exit 1
fi

echo
echo "== the same inference with HE linear layers and silent OT, both parties in one process:"
echo "   bin/scirun --local out/mnist-small.sciir --input $input --backend scihe --ot ferret --quiet"
bin/scirun --local out/mnist-small.sciir --input "$input" --backend scihe --ot ferret --quiet \
	--output out/secure-he.npy --raw
if cmp -s out/clear.npy out/secure-he.npy; then
	echo "scihe + ferret: bitwise equal to the cleartext run too"
else
	echo "MISMATCH: scihe + ferret differs from the cleartext run" >&2
	exit 1
fi
echo "per-layer plot of the two-process run: bin/scirun plot out/report.json -o out/report.png"
