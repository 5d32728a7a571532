#!/usr/bin/env python3
"""cifar_png.py — write CIFAR-10 binary-batch images as PNG files, one folder per class.

    python3 scripts/cifar_png.py BATCH.bin OUTDIR [--from N] [--count N]

Each record of a CIFAR-10 binary batch is 1 label byte and 3072 pixel bytes (1024 red, 1024
green, 1024 blue, 32x32 row-major). The images are written unchanged (32x32 RGB, 8 bits) as
OUTDIR/<class name>/<index>.png, so that `mkdata images` can preprocess them like any photograph
(for mobilenetv2-12-int8: resize-shorter 256, which upscales them, and centre-crop 224; see
scripts/int8-mobilenet.sh). Standard library only.
"""
import argparse
import os
import struct
import zlib

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def png(width, height, rgb):
    """A minimal RGB PNG: IHDR, one IDAT (filter 0 on every row), IEND."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + rgb[y * width * 3:(y + 1) * width * 3] for y in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batch")
    ap.add_argument("out")
    ap.add_argument("--from", dest="start", type=int, default=0)
    ap.add_argument("--count", type=int, default=-1)
    a = ap.parse_args()
    data = open(a.batch, "rb").read()
    if len(data) % 3073:
        raise SystemExit(f"{a.batch}: {len(data)} bytes is not a whole number of 3073-byte records")
    n = len(data) // 3073
    end = n if a.count < 0 else min(n, a.start + a.count)
    if a.start >= end:
        raise SystemExit(f"{a.batch}: no image in [{a.start}, {end}) (the batch holds {n})")
    for i in range(a.start, end):
        rec = data[i * 3073:(i + 1) * 3073]
        label, px = rec[0], rec[1:]
        if label >= len(CLASSES):
            raise SystemExit(f"{a.batch}: record {i} has label {label}")
        rgb = bytes(px[c * 1024 + p] for p in range(1024) for c in range(3))
        d = os.path.join(a.out, CLASSES[label])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"cifar{i:05d}.png"), "wb") as f:
            f.write(png(32, 32, rgb))
    print(f"wrote {end - a.start} images to {a.out}")


if __name__ == "__main__":
    main()
