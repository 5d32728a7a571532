#!/usr/bin/env bash
# The README's first set-up command: builds the tools, compiles the bundled MNIST model with
# autotuning on the bundled validation inputs, and runs an inference on one of them.
set -euo pipefail
cd "$(dirname "$0")/.."

go build -o bin/ ./cmd/athosc ./cmd/scirun ./cmd/mkdata
mkdir -p out
echo "== compile: bin/athosc testdata/mnist-small/model.onnx --validate testdata/mnist-small/inputs -o out/mnist-small.sciir"
bin/athosc testdata/mnist-small/model.onnx --validate testdata/mnist-small/inputs -o out/mnist-small.sciir
input=testdata/mnist-small/inputs/00000.npy
echo
echo "== run (cleartext fixed-point reference): bin/scirun --clear out/mnist-small.sciir --input $input"
bin/scirun --clear out/mnist-small.sciir --input "$input"
echo "(label of $input: $(grep "^$(basename "$input") " testdata/mnist-small/inputs/labels.txt | cut -d' ' -f2))"
