#!/usr/bin/python3
"""Train LoLa's MNIST network (Brutzkus, Gilad-Bachrach, Elisha, "Low Latency Privacy Preserving
Inference", ICML 2019; the CryptoNets architecture) with square activations, and export it as
ONNX (opset 13) for athosc --backend fhe.

Usage (from the repository root):

    /usr/bin/python3 scripts/train_lola.py --out testdata/lola-mnist

    [N,1,28,28] -> Conv 5x5 stride 2 pad 1, 5 maps -> [N,5,13,13] -> x*x -> Flatten (845)
                -> Linear 100 -> x*x -> Linear 10 (logits)

Every layer is a polynomial, so the network runs non-interactively on BGV ciphertexts. The data
and the helpers (idx reading, GoMNIST lookup, deterministic set-up) are those of
scripts/train_mnist.py; the run is deterministic for a given --seed.

Writes into --out: model.onnx, inputs/NNNNN.npy (+ labels.txt), expected/NNNNN.npy and README.md.
"""

import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mnist as tm  # noqa: E402

NUM_SAMPLES = 8


class LoLaMNIST(nn.Module):
    def __init__(self, hidden=100):
        super().__init__()
        self.conv = nn.Conv2d(1, 5, kernel_size=5, stride=2, padding=1)
        self.fc1 = nn.Linear(5 * 13 * 13, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = self.conv(x)
        x = x * x  # square activation (exported as Mul(x, x))
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = x * x
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", help="directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    x_train, y_train, x_test, y_test = tm.prepare(args)

    model = LoLaMNIST()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_seconds, _ = tm.fit(model, opt, x_train, y_train, x_test, y_test, args.epochs, args.batch, args.lr, args.seed, clip=1.0)
    model.eval()
    acc = tm.evaluate(model, x_test, y_test)
    print("final t10k accuracy: %.2f%%" % (100 * acc))

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), onnx_path, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=False)
    ops = tm.checked_ops(onnx_path)

    tm.write_samples(args.out, x_test, y_test, model, NUM_SAMPLES)
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_lola.py --out %s --seed %d --epochs %d --lr %g --batch %d\n"
                % (args.out, args.seed, args.epochs, args.lr, args.batch))
        f.write("parameters: %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("float t10k accuracy (10000 images): %.2f%%\n" % (100 * acc))
        f.write("training: 60000 MNIST training images, %d epochs, Adam one-cycle (max lr %g), batch %d, grad-norm clip 1, %.0f s on 2 shared cores\n"
                % (args.epochs, args.lr, args.batch, train_seconds))
        f.write(tm.versions())


if __name__ == "__main__":
    main()
