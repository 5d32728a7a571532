#!/usr/bin/env bash
# All of MNIST t10k through the fhe mode's encrypted path, in ten 1000-image batches, each output
# compared byte for byte with `scirun --clear` (docs/fhe.md, "All of t10k encrypted").
#
#   bash scripts/fhe-mnist-t10k.sh BIN WORK     # BIN holds athosc, mkdata, scirun; WORK is scratch
#   BLOCKS="3 7" bash scripts/fhe-mnist-t10k.sh BIN WORK   # only those batches
#
# Run from the repository, with ../shared beside it. About 15–40 minutes on 2 cores, 2.4 GB peak.
set -euo pipefail
bin=${1:?usage: $0 BIN WORK}
work=${2:?usage: $0 BIN WORK}
mnist=../shared/testdata/datasets/mnist
[[ -d $mnist ]] || { echo "$0: $mnist not found (the shared corpus)" >&2; exit 1; }
mkdir -p "$work"
[[ -d $work/val ]] || "$bin/mkdata" mnist --from-dir "$mnist" --set t10k --scale 1 --from 0 --count 500 --out "$work/val"
"$bin/athosc" compile testdata/lola-mnist/model.onnx --backend fhe --validate "$work/val" --scales 4 -q -o "$work/lola.sciir"
right=0 total=0
for k in ${BLOCKS:-0 1 2 3 4 5 6 7 8 9}; do
	blk=$work/blk$k
	[[ -d $blk ]] || "$bin/mkdata" mnist --from-dir "$mnist" --set t10k --scale 1 --from $((k * 1000)) --count 1000 --out "$blk"
	"$bin/scirun" --clear "$work/lola.sciir" --input "$blk" --output "$work/clear$k/" --raw --quiet > /dev/null
	"$bin/scirun" --local "$work/lola.sciir" --input "$blk" --output "$work/enc$k/" --raw --timeout 60m > "$work/enc$k.txt" 2> "$work/enc$k.log"
	for f in "$work/clear$k"/*.npy; do
		cmp -s "$f" "$work/enc$k/${f##*/}" || { echo "$0: ${f##*/}: the encrypted output differs from --clear" >&2; exit 1; }
	done
	line=$(grep '^accuracy:' "$work/enc$k.txt")
	echo "batch $k: $line; $(grep '^batch:' "$work/enc$k.txt" | sed 's/ (handshake.*)//')"
	r=${line#accuracy: }; r=${r%%/*}; right=$((right + r)); total=$((total + 1000))
done
echo "t10k through the encrypted path: $right/$total, every output equal to --clear"
