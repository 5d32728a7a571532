#!/usr/bin/env bash
# int8-mobilenet.sh — mobilenetv2-12-int8 end to end with the commands a user runs
# (docs/benchmarks.md, "Quantized (int8) MobileNetV2"):
#
#   bash scripts/int8-mobilenet.sh [WORKDIR]      (from the worktree root; ../shared must exist)
#
# 1. athosc compiles the model (no validation: a quantized model's ring and scale follow from its
#    quantization parameters) and prints the program's size.
# 2. mkdata preprocesses every image of ../shared/testdata/datasets/images-permissive as the
#    model's meta.json says (float inputs: scirun quantizes them as the model's QuantizeLinear).
# 3. scirun --clear runs all of them as one batch; its float outputs (dequantized as the model's
#    DequantizeLinear) are compared byte for byte with ONNX Runtime's: a fresh ORT run when
#    ~/.cache/ort-node/run.js exists (bash ../shared/tools/ort/setup.sh), else the fixtures in
#    golden/testdata/int8/mobilenetv2 (made by golden/testdata/int8/gen.sh).
# 4. The first inverted-residual block (cut with --outputs 480_quantized) runs securely
#    (scirun --local, default backend) on one image and its raw output is compared with --clear.
#    SECURE_FULL=1 runs the whole model securely instead (hours on a loaded 2-core machine).
set -euo pipefail
shared=../shared/testdata
model=$shared/models/mobilenetv2-12-int8/model.onnx
[[ -f $model ]] || { echo "$0: $model not found (run from the worktree root, with ../shared)" >&2; exit 2; }
work=${1:-$(mktemp -d)}
mkdir -p "$work/bin" "$work/in/all"
go build -o "$work/bin/" ./cmd/athosc ./cmd/scirun ./cmd/mkdata
bin=$work/bin
"$bin/athosc" compile "$model" -o "$work/mnv2.sciir" | grep -E 'ReLU elements|wrote|compiled'
ls -l "$model" "$work/mnv2.sciir" "$work/mnv2.client.sciir"
for f in "$shared"/datasets/images-permissive/*.png "$shared"/datasets/images-permissive/*.jp*g; do
	ln -sf "$(realpath "$f")" "$work/in/all/"
done
"$bin/mkdata" images --in "$work/in" --out "$work/npy" --size 224x224 --resize-shorter 256 \
	--center-crop 224x224 --pixel-scale 0.00392156862745098 --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225
rm -f "$work/npy/labels.txt" "$work/npy/classes.txt" # one folder "all": no real labels
names=($(ls "$work/in/all" | sort))
/usr/bin/time -f 'clear batch: %e s wall, %U+%S s CPU, %M KiB peak' \
	"$bin/scirun" --clear "$work/mnv2.sciir" --input "$work/npy/" --output "$work/clear/"
same=0
for i in "${!names[@]}"; do
	n=$(printf %05d "$i") stem=${names[$i]%.*}
	if [[ -f ~/.cache/ort-node/run.js ]]; then
		node ~/.cache/ort-node/run.js "$model" "$work/ort/$n" input="$work/npy/$n.npy" > /dev/null
		ref=$work/ort/$n/output.npy
	else
		ref=golden/testdata/int8/mobilenetv2/$stem.ort.npy
	fi
	# Both are float32 [1,1000]: compare the 4000 data bytes after the headers.
	if cmp -s <(tail -c 4000 "$work/clear/$n.npy") <(tail -c 4000 "$ref"); then
		same=$((same + 1))
	else
		echo "$stem: scirun --clear differs from ONNX Runtime ($ref)"
	fi
done
echo "scirun --clear == ONNX Runtime bit for bit on $same of ${#names[@]} images"
if [[ ${SECURE_FULL:-0} == 1 ]]; then
	prog=$work/mnv2.sciir
else
	"$bin/athosc" compile "$model" --outputs 480_quantized -o "$work/block1.sciir" | grep -E 'ReLU elements|wrote'
	prog=$work/block1.sciir
fi
x=$work/npy/00001.npy # chelsea.png
/usr/bin/time -f 'secure: %e s wall, %U+%S s CPU, %M KiB peak' \
	"$bin/scirun" --local "$prog" --input "$x" --output "$work/sec.npy" --raw --timeout 60m --session-timeout 0 2>&1 | grep -E '^ +(handshake|setup)|total|secure:' || true
"$bin/scirun" --clear "$prog" --input "$x" --output "$work/clr.npy" --raw > /dev/null
cmp "$work/sec.npy" "$work/clr.npy" && echo "secure == clear bit for bit ($(basename "$prog"), chelsea)"
