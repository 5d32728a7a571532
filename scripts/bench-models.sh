#!/usr/bin/env bash
# Regenerates the "ImageNet-scale networks" section of docs/benchmarks.md and its plots
# (docs/models-*.png): builds the tools, runs `scibench models` (each secure inference as two scirun
# processes over loopback TCP), and splices the harness's results.md between the section's markers.
#
#   scripts/bench-models.sh                  # the set measured on the project's 2-core machine
#   scripts/bench-models.sh --net lan,wan    # any scibench models flags replace the default set
#
# Everything the harness wrote (JSON results, each party's report, the compiled programs) stays in
# $BENCH_OUT (default out/bench-models). See `scibench models -h` for the flags.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${BENCH_OUT:-out/bench-models}
mkdir -p "$out/bin"
go build -o "$out/bin/" ./cmd/scibench ./cmd/scirun ./cmd/athosc ./cmd/mkmodel

if [ $# -eq 0 ]; then
	# What fits in ~25 minutes on 2 shared cores: SqueezeNet by HE (scihe, and auto, which picks HE
	# for all its convolutions) on both OT sources, MiniONN, ResNet50 by auto on Ferret; by OT
	# (sciot) only the estimate, which the budget turns down for the ImageNet networks.
	set -- --models squeezenet,minionn,resnet50,densenet121 --backends sciot,scihe,auto --ot iknp,ferret --net lan \
		--only 'squeezenet/*/*/lan,minionn/sciot/*/lan,minionn/scihe/*/lan,resnet50/sciot/iknp/lan,resnet50/auto/ferret/lan,densenet121/sciot/iknp/lan,densenet121/scihe/ferret/lan' \
		--budget 12GiB --timeout 8m --max-total 22m
fi
"$out/bin/scibench" models --out "$out" --scirun "$out/bin/scirun" --athosc "$out/bin/athosc" \
	--mkmodel "$out/bin/mkmodel" "$@" >/dev/null

rm -f docs/models-*.png
cp "$out"/models-*.png docs/

doc=docs/benchmarks.md
begin='<!-- begin: scripts/bench-models.sh -->'
end='<!-- end: scripts/bench-models.sh -->'
if ! grep -qF "$begin" "$doc"; then
	printf '\n## ImageNet-scale networks (scibench models)\n\n%s\n%s\n' "$begin" "$end" >>"$doc"
fi
tmp=$(mktemp)
awk -v b="$begin" -v e="$end" -v f="$out/results.md" '
	$0 == b { print; while ((getline line < f) > 0) print line; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$doc" >"$tmp"
mv "$tmp" "$doc"
echo "updated $doc and docs/models-*.png from $out/results.md"
