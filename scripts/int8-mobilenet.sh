#!/usr/bin/env bash
# int8-mobilenet.sh — mobilenetv2-12-int8 end to end with the commands a user runs
# (docs/benchmarks.md, "Quantized (int8) MobileNetV2"):
#
#   bash scripts/int8-mobilenet.sh [WORKDIR]      (from the worktree root; ../shared must exist)
#
# 1. athosc compiles the model (no validation: a quantized model's ring and scale follow from its
#    quantization parameters; every comparison's width from its exact bound) and prints the
#    program's size, once for the two-party backends and once for sci3.
# 2. The images: the 5 photographs of ../shared/testdata/datasets/images-permissive and the first
#    CIFAR (default 15) CIFAR-10 test images, written as 32x32 PNGs by scripts/cifar_png.py and
#    upscaled like any photograph by the model's preprocessing (resize-shorter 256, centre crop
#    224): real photographs, at a low resolution. mkdata preprocesses them as meta.json says.
# 3. scirun --clear runs each folder as one batch (the clear backend checks every low-bit
#    comparison's bound on the values it sees); its float outputs are compared byte for byte with
#    ONNX Runtime's, produced here by onnxruntime-node (~/.cache/ort-node/run.js, made by
#    bash ../shared/tools/ort/setup.sh; without it only the photographs are compared, against the
#    fixtures in golden/testdata/int8/mobilenetv2). Then top-1 against the labels (below).
# 4. BLOCK=1: the first inverted-residual block (--outputs 480_quantized) two-party (scirun --local,
#    default backend) on chelsea, before (the compiler of BEFORE_REV, default cb4b1c9, every
#    comparison in Z_2^64) and after (low bits): bytes from --report, secure == clear, then the CPU
#    ratio by farm-bench (FARM_N alternating pairs), each under the heavy lock.
# 5. SECURE_FULL=N: the whole model securely with sci3 (scirun --local: the data parties and the
#    helper in one process) on the first N images (photographs first), one image per heavy-lock
#    hold, each output compared byte for byte with ONNX Runtime's.
set -euo pipefail
shared=../shared/testdata
model=$shared/models/mobilenetv2-12-int8/model.onnx
[[ -f $model ]] || { echo "$0: $model not found (run from the worktree root, with ../shared)" >&2; exit 2; }
lock=/work/wt/notes/heavy.lock
heavy() { if [[ -e $(dirname "$lock") ]]; then flock "$lock" "$@"; else "$@"; fi; }
work=${1:-$(mktemp -d)}
work=$(realpath -m "$work")
mkdir -p "$work/bin" "$work/in/photos/all"
go build -o "$work/bin/" ./cmd/athosc ./cmd/scirun ./cmd/mkdata
bin=$work/bin
"$bin/athosc" compile "$model" -o "$work/mnv2.sciir" | grep -E 'ReLU elements|low bits|wrote'
"$bin/athosc" compile "$model" --backend sci3 -o "$work/mnv2-3.sciir" | grep -E 'wrote'
ls -l "$model" "$work/mnv2.sciir" "$work/mnv2.client.sciir"

# --- images
for f in "$shared"/datasets/images-permissive/*.png "$shared"/datasets/images-permissive/*.jp*g; do
	ln -sf "$(realpath "$f")" "$work/in/photos/all/"
done
rm -rf "$work/in/cifar"
python3 scripts/cifar_png.py "$shared/datasets/cifar10/test_batch_first100.bin" "$work/in/cifar" --count "${CIFAR:-15}"
pre=(--size 224x224 --resize-shorter 256 --center-crop 224x224 --pixel-scale 0.00392156862745098
	--mean 0.485,0.456,0.406 --std 0.229,0.224,0.225)
for set in photos cifar; do
	rm -rf "$work/npy/$set"
	"$bin/mkdata" images --in "$work/in/$set" --out "$work/npy/$set" "${pre[@]}"
done
rm -f "$work/npy/photos/labels.txt" "$work/npy/photos/classes.txt" # one folder "all": no labels
# (set, npy, name) of every image, photographs first; mkdata numbers the files in sorted order.
list=()
while read -r n; do list+=("photos $n"); done < <(ls "$work/in/photos/all" | sort)
while read -r n; do list+=("cifar $n"); done < <(cd "$work/in/cifar" && ls */*.png | sort)

# --- ONNX Runtime's outputs
ort=0
[[ -f ~/.cache/ort-node/run.js ]] && ort=1
ref() { # ref SET INDEX NAME -> the reference output file
	local set=$1 n=$2 name=$3
	if ((ort)); then
		[[ -f $work/ort/$set/$n/output.npy ]] ||
			node ~/.cache/ort-node/run.js "$model" "$work/ort/$set/$n" input="$work/npy/$set/$n.npy" > /dev/null
		echo "$work/ort/$set/$n/output.npy"
	elif [[ $set == photos ]]; then
		echo "golden/testdata/int8/mobilenetv2/${name%.*}.ort.npy"
	fi
}
# Both are float32 [1,1000]: compare the 4000 data bytes after the headers.
same_bytes() { cmp -s <(tail -c 4000 "$1") <(tail -c 4000 "$2"); }

# --- in the clear
same=0 total=0
for set in photos cifar; do
	heavy /usr/bin/time -f "clear batch ($set): %e s wall, %U+%S s CPU, %M KiB peak" \
		"$bin/scirun" --clear "$work/mnv2.sciir" --input "$work/npy/$set/" --output "$work/clear/$set/" > /dev/null
done
declare -A idx=()
for e in "${list[@]}"; do
	read -r set name <<< "$e"
	i=${idx[$set]:-0}
	idx[$set]=$((i + 1))
	n=$(printf %05d "$i")
	r=$(ref "$set" "$n" "$(basename "$name")")
	if [[ -z $r ]]; then
		echo "$set/$name: no ONNX Runtime reference (bash ../shared/tools/ort/setup.sh)"
		continue
	fi
	total=$((total + 1))
	if same_bytes "$work/clear/$set/$n.npy" "$r"; then
		same=$((same + 1))
	else
		echo "$set/$name: scirun --clear differs from ONNX Runtime ($r)"
	fi
done
echo "scirun --clear == ONNX Runtime bit for bit on $same of $total images"

# Top-1 against the labels: the photographs' natural labels (SOURCES.txt), the CIFAR-10 classes by
# coarse sets of ImageNet classes (a 1000-class model has no CIFAR head; "cat" is 281-285, "dog"
# 151-268, ...). Reads the float32 outputs directly (no numpy).
python3 - "$work" <<'EOF'
import os, struct, sys
work = sys.argv[1]
def top1(path):
    b = open(path, "rb").read()
    v = struct.unpack("<1000f", b[-4000:])
    return max(range(1000), key=lambda i: (v[i], -i))
r = lambda a, b: set(range(a, b + 1))
photos = {"chelsea": r(281, 285), "coffee": {967}, "pelican": {144}, "rocket": {657, 744}}
cifar = {"airplane": {404, 895, 908}, "automobile": {436, 468, 511, 609, 627, 656, 661, 717, 751, 817},
         "bird": r(7, 24) | r(80, 100) | r(127, 146), "cat": r(281, 285), "deer": {351, 352, 353},
         "dog": r(151, 268), "frog": {30, 31, 32}, "horse": {339, 603},
         "ship": {472, 484, 510, 554, 576, 625, 628, 724, 780, 814, 833, 871, 914},
         "truck": {555, 569, 675, 717, 734, 864, 867}}
names = sorted(os.listdir(os.path.join(work, "in/photos/all")))
right = labelled = 0
for i, n in enumerate(names):
    t = top1(os.path.join(work, "clear/photos/%05d.npy" % i))
    want = photos.get(os.path.splitext(n)[0])
    ok = want is not None and t in want
    labelled += want is not None
    right += ok
    print(f"  photo {n}: top-1 {t}" + ("" if want is None else (" (right)" if ok else " (wrong)")))
print(f"photographs: top-1 right on {right} of {labelled} labelled")
lab = [l.split() for l in open(os.path.join(work, "npy/cifar/labels.txt"))]
cls = [l.strip() for l in open(os.path.join(work, "npy/cifar/classes.txt"))]
right = 0
for f, c in lab:
    t = top1(os.path.join(work, "clear/cifar", f))
    ok = t in cifar[cls[int(c)]]
    right += ok
    print(f"  cifar {f} ({cls[int(c)]}): top-1 {t}" + (" (right)" if ok else ""))
print(f"upscaled CIFAR-10: top-1 in the label's ImageNet set on {right} of {len(lab)}")
EOF

# --- the first inverted-residual block, two-party, before and after
if [[ ${BLOCK:-0} == 1 ]]; then
	before=$work/before
	if [[ ! -x $before/bin/athosc ]]; then
		rm -rf "$before" && mkdir -p "$before/src"
		git archive "${BEFORE_REV:-cb4b1c9}" | tar -x -C "$before/src"
		(cd "$before/src" && go build -o "$before/bin/" ./cmd/athosc)
	fi
	"$before/bin/athosc" compile "$model" --outputs 480_quantized -o "$work/block-before.sciir" | grep -E 'ReLU elements|wrote'
	"$bin/athosc" compile "$model" --outputs 480_quantized -o "$work/block-after.sciir" | grep -E 'ReLU elements|low bits|wrote'
	x=$work/npy/photos/00001.npy # chelsea.png
	for v in before after; do
		"$bin/scirun" --clear "$work/block-$v.sciir" --input "$x" --output "$work/block-$v.clr.npy" --raw > /dev/null
		heavy /usr/bin/time -f "block $v: %e s wall, %U+%S s CPU, %M KiB peak" "$bin/scirun" --local "$work/block-$v.sciir" \
			--input "$x" --output "$work/block-$v.sec.npy" --raw --report "$work/block-$v.json" \
			--timeout 60m --session-timeout 0 2>&1 | grep -E '^ +(handshake|setup)|total|block'
		cmp "$work/block-$v.sec.npy" "$work/block-$v.clr.npy" && echo "block $v: secure == clear bit for bit"
	done
	cmp "$work/block-before.clr.npy" "$work/block-after.clr.npy" && echo "block: before == after bit for bit"
	run() { echo "exec $bin/scirun --local $work/block-$1.sciir --input $x --output $work/fb-$1.npy --raw --timeout 60m --session-timeout 0 >>$work/fb-$1.log 2>&1"; }
	for _ in $(seq "${FARM_N:-2}"); do # one alternating pair (after, before) per lock hold
		heavy farm-bench -n 1 --warmup 0 --timeout 3000 --vs "sh -c '$(run before)'" -- sh -c "$(run after)"
	done
fi

# --- the whole model securely, three parties (sci3)
if [[ ${SECURE_FULL:-0} -gt 0 ]]; then
	done=0 eq=0
	declare -A idx=()
	for e in "${list[@]}"; do
		((done < SECURE_FULL)) || break
		read -r set name <<< "$e"
		i=${idx[$set]:-0}
		idx[$set]=$((i + 1))
		n=$(printf %05d "$i")
		r=$(ref "$set" "$n" "$(basename "$name")")
		[[ -n $r ]] || { echo "$set/$name: no ONNX Runtime reference"; continue; }
		out=$work/sec3/$set/$n
		mkdir -p "$(dirname "$out")"
		heavy /usr/bin/time -f "sci3 $set/$name: %e s wall, %U+%S s CPU (all three parties), %M KiB peak" \
			"$bin/scirun" --local "$work/mnv2-3.sciir" --input "$work/npy/$set/$n.npy" --output "$out.npy" \
			--report "$out.json" --timeout 150m --session-timeout 0 > "$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
		grep -E 'sci3 |total' "$out.log" || true
		done=$((done + 1))
		if same_bytes "$out.npy" "$r"; then
			eq=$((eq + 1))
			echo "sci3 $set/$name: == ONNX Runtime bit for bit"
		else
			echo "sci3 $set/$name: differs from ONNX Runtime ($r)"
		fi
	done
	echo "sci3 whole model == ONNX Runtime bit for bit on $eq of $done images"
fi
