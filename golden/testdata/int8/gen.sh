#!/bin/sh
# Regenerates the ONNX Runtime reference outputs of golden/int8_test.go (run from the worktree
# root, with ONNX Runtime installed by bash /work/shared/tools/ort/setup.sh). The tests read only
# the .npy files this writes; they never need node.
set -e
shared=../shared/testdata
tmp=$(mktemp -d)
mkdir -p "$tmp/in/all"
for f in "$shared"/datasets/images-permissive/*.png "$shared"/datasets/images-permissive/*.jp*g; do
	ln -s "$(realpath "$f")" "$tmp/in/all/"
done
# The ImageNet preprocessing of the model's meta.json, as the test applies it (internal/input).
go run ./cmd/mkdata images --in "$tmp/in" --out "$tmp/npy" --size 224x224 --resize-shorter 256 \
	--center-crop 224x224 --pixel-scale 0.00392156862745098 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225
i=0
for f in $(ls "$tmp/in/all" | sort); do
	n=$(printf %05d $i)
	node ~/.cache/ort-node/run.js "$shared/models/mobilenetv2-12-int8/model.onnx" "$tmp/ort/$n" input="$tmp/npy/$n.npy"
	cp "$tmp/ort/$n/output.npy" "golden/testdata/int8/mobilenetv2/${f%.*}.ort.npy"
	i=$((i + 1))
done
# The small hand-made graphs of golden/int8_test.go: INT8_WRITE=DIR makes the test write them
# (model.onnx and input .npy files per case), then ONNX Runtime runs them.
INT8_WRITE="$tmp/small" go test ./golden -run TestInt8SmallGraphsORT -count=1
for d in "$tmp"/small/*/; do
	c=$(basename "$d")
	node ~/.cache/ort-node/run.js "$d/model.onnx" "$d/out" x=$d/x.npy
	mkdir -p golden/testdata/int8/small
	cp "$d/x.npy" "golden/testdata/int8/small/$c.x.npy"
	cp "$d/out/y.npy" "golden/testdata/int8/small/$c.y.npy"
done
rm -rf "$tmp"
