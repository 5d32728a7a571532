#!/usr/bin/python3
"""Train a Falcon-style variant of LoLa's MNIST network whose large fully-connected layer
(845 -> hidden) is block-circulant with block size k, and export it as ONNX (opset 13) for
athosc --backend fhe.

Usage (from the repository root):

    /usr/bin/python3 scripts/train_lola_bc.py --k 8  --out testdata/lola-mnist-bc8
    /usr/bin/python3 scripts/train_lola_bc.py --k 16 --out testdata/lola-mnist-bc16

The network is scripts/train_lola.py's (conv 5x5/2 -> x*x -> dense -> x*x -> dense) with the
hidden width rounded up to a multiple of k (100 -> 104 for k = 8, 112 for k = 16) and the 845
inputs padded (virtually) to 848. The big layer's weight is parametrised by the first row of
each k x k block (Falcon, after CirCNN): block (I, J) holds c[I, J, (j - i) mod k] at row i,
column j, so every row of a block is its first row rotated right by the row's index. The
trailing 3 padded input columns are dropped from the exported matrix, which is an ordinary Gemm
whose weights simply have that structure (athosc detects it exactly).

Training starts from the dense model in testdata/lola-mnist (its weights projected onto the
block-circulant set: each block's first row is the mean of the block's wrapped diagonals; the new
hidden units start at zero) and fine-tunes all layers with scripts/train_mnist.py's loop, then
runs --qat-epochs quantization-aware epochs with the fhe program's rounding at scale --scale in
the forward pass (straight-through, scripts/train_cifar.py's ste_round); the exported weights are
the rounded ones, so the fhe program differs from the exported float model only by the input's
rounding. The run is deterministic for a given --seed.

Writes into --out: model.onnx, inputs/NNNNN.npy (+ labels.txt), expected/NNNNN.npy, TRAINING.txt.
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mnist as tm  # noqa: E402
import train_lola as tl  # noqa: E402
from train_cifar import ste_round  # noqa: E402

IN = 5 * 13 * 13


def round_up(n, k):
    return (n + k - 1) // k * k


def circulant_index(rows, cols, k):
    """For a (rows x cols) block-circulant matrix of block size k, the index of each entry in the
    flattened first-row tensor c[rows/k, cols/k, k]."""
    i = torch.arange(rows).view(-1, 1)
    j = torch.arange(cols).view(1, -1)
    nb_in = cols // k
    return ((i // k) * nb_in + (j // k)) * k + torch.remainder(j - i, k)


class BlockCirculantLinear(nn.Module):
    """A linear layer IN -> out whose (out x round_up(IN, k)) weight is block-circulant."""

    def __init__(self, n_in, n_out, k):
        super().__init__()
        self.n_in, self.n_out, self.k = n_in, n_out, k
        self.cols = round_up(n_in, k)
        self.first = nn.Parameter(torch.zeros(n_out // k, self.cols // k, k))
        self.bias = nn.Parameter(torch.zeros(n_out))
        self.register_buffer("index", circulant_index(n_out, self.cols, k), persistent=False)

    def weight(self):
        return self.first.reshape(-1)[self.index][:, : self.n_in]

    def forward(self, x):
        return nn.functional.linear(x, self.weight(), self.bias)

    def project(self, w):
        """Sets the first rows to the least-squares block-circulant fit of w (n_out' x n_in,
        n_out' <= n_out): the mean of each block's entries with the same (j - i) mod k."""
        full = torch.zeros(self.n_out, self.cols)
        mask = torch.zeros(self.n_out, self.cols)
        full[: w.shape[0], : w.shape[1]] = w
        mask[: w.shape[0], : w.shape[1]] = 1
        idx = self.index.reshape(-1)
        s = torch.zeros(self.first.numel()).index_add_(0, idx, full.reshape(-1))
        n = torch.zeros(self.first.numel()).index_add_(0, idx, mask.reshape(-1))
        with torch.no_grad():
            self.first.copy_((s / n.clamp(min=1)).view_as(self.first))


class LoLaBC(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.hidden = round_up(100, k)
        self.conv = nn.Conv2d(1, 5, kernel_size=5, stride=2, padding=1)
        self.fc1 = BlockCirculantLinear(IN, self.hidden, k)
        self.fc2 = nn.Linear(self.hidden, 10)

    qat = None  # the fhe mode's scale s during quantization-aware training

    def forward(self, x):
        s = self.qat
        if s is None:
            x = self.conv(x)
            x = x * x
            x = torch.flatten(x, 1)
            x = self.fc1(x)
            x = x * x
            return self.fc2(x)
        # The fhe program's arithmetic (one scale s, no truncation): input and weights at s
        # fractional bits, each bias at its layer's output scale (2s, 5s, 11s). Rounding the
        # first rows rounds every weight of the block-circulant layer.
        q = ste_round
        x = nn.functional.conv2d(q(x, s), q(self.conv.weight, s), q(self.conv.bias, 2 * s), stride=2, padding=1)
        x = torch.flatten(x * x, 1)
        w1 = q(self.fc1.first, s).reshape(-1)[self.fc1.index][:, : self.fc1.n_in]
        x = nn.functional.linear(x, w1, q(self.fc1.bias, 5 * s))
        return nn.functional.linear(x * x, q(self.fc2.weight, s), q(self.fc2.bias, 11 * s))

    def freeze_quantized(self):
        """Replaces every parameter by its quantized value (what the fhe program computes with) and
        leaves quantization-aware mode."""
        s = self.qat
        with torch.no_grad():
            for p, frac in ((self.conv.weight, s), (self.conv.bias, 2 * s), (self.fc1.first, s),
                            (self.fc1.bias, 5 * s), (self.fc2.weight, s), (self.fc2.bias, 11 * s)):
                p.copy_(torch.round(p * 2.0**frac) / 2.0**frac)
        self.qat = None

    def dense(self):
        """The same function as an ordinary LoLa network (scripts/train_lola.py's class) whose
        fc1 weight has the block-circulant structure, for export."""
        m = tl.LoLaMNIST(hidden=self.hidden)
        with torch.no_grad():
            m.conv.load_state_dict(self.conv.state_dict())
            m.fc1.weight.copy_(self.fc1.weight())
            m.fc1.bias.copy_(self.fc1.bias)
            m.fc2.load_state_dict(self.fc2.state_dict())
        return m.eval()


def warm_start(model, onnx_path):
    """Initialises model from the dense LoLa network's weights (fc1 projected)."""
    import onnx
    from onnx import numpy_helper

    w = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in onnx.load(onnx_path).graph.initializer}
    with torch.no_grad():
        model.conv.weight.copy_(w["conv.weight"])
        model.conv.bias.copy_(w["conv.bias"])
        model.fc1.project(w["fc1.weight"])
        model.fc1.bias.zero_()
        model.fc1.bias[:100] = w["fc1.bias"]
        model.fc2.weight.zero_()
        model.fc2.weight[:, :100] = w["fc2.weight"]
        model.fc2.bias.copy_(w["fc2.bias"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--k", type=int, required=True, help="block size (8 or 16)")
    ap.add_argument("--dense", default="testdata/lola-mnist/model.onnx", help="the dense model to start from")
    ap.add_argument("--data", help="directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--qat-epochs", type=int, default=4, help="quantization-aware epochs at the fhe scale --scale after the float ones (0: none)")
    ap.add_argument("--qat-lr", type=float, default=3e-4)
    ap.add_argument("--scale", type=int, default=4, help="the fhe mode's scale s of the quantization-aware phase")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.k < 2 or args.k & (args.k - 1):
        sys.exit("--k must be a power of two >= 2")

    x_train, y_train, x_test, y_test = tm.prepare(args)

    model = LoLaBC(args.k)
    warm_start(model, args.dense)
    model.eval()
    acc0 = tm.evaluate(model, x_test, y_test)
    print("projected dense weights, before fine-tuning: t10k %.2f%%" % (100 * acc0), flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_seconds, _ = tm.fit(model, opt, x_train, y_train, x_test, y_test, args.epochs, args.batch, args.lr, args.seed, clip=1.0)
    model.eval()
    acc_float = tm.evaluate(model, x_test, y_test)
    print("float t10k accuracy: %.2f%%" % (100 * acc_float), flush=True)
    qat_seconds = 0.0
    if args.qat_epochs > 0:
        model.qat = args.scale
        opt = torch.optim.Adam(model.parameters(), lr=args.qat_lr)
        qat_seconds, _ = tm.fit(model, opt, x_train, y_train, x_test, y_test, args.qat_epochs, args.batch, args.qat_lr, args.seed + 1, clip=1.0)
        model.freeze_quantized()
    model.eval()
    acc = tm.evaluate(model, x_test, y_test)
    print("final t10k accuracy (exported weights): %.2f%%" % (100 * acc))

    export = model.dense()
    acc_export = tm.evaluate(export, x_test, y_test)
    if acc_export != acc:
        sys.exit("exported network scores %.4f, trained %.4f" % (acc_export, acc))
    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(export, torch.zeros(1, 1, 28, 28), onnx_path, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=False)
    ops = tm.checked_ops(onnx_path)

    tm.write_samples(args.out, x_test, y_test, export, tl.NUM_SAMPLES)
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_lola_bc.py --k %d --out %s --seed %d --epochs %d --lr %g --batch %d --qat-epochs %d --qat-lr %g --scale %d\n"
                % (args.k, args.out, args.seed, args.epochs, args.lr, args.batch, args.qat_epochs, args.qat_lr, args.scale))
        f.write("block size k = %d; fc1 %d -> %d block-circulant (%d x %d blocks of %d x %d; %d free weights instead of %d)\n"
                % (args.k, IN, model.hidden, model.hidden // args.k, model.fc1.cols // args.k, args.k, args.k,
                   model.fc1.first.numel(), IN * model.hidden))
        f.write("parameters (trained): %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("float t10k accuracy (10000 images): projected before fine-tuning %.2f%%, after the float epochs %.2f%%, exported (rounded) weights %.2f%%\n"
                % (100 * acc0, 100 * acc_float, 100 * acc))
        f.write("training: warm start from %s, 60000 MNIST training images, %d epochs, Adam one-cycle (max lr %g), batch %d, grad-norm clip 1, %.0f s; then %d quantization-aware epochs at s = %d (max lr %g), %.0f s; 2 shared cores\n"
                % (args.dense, args.epochs, args.lr, args.batch, train_seconds, args.qat_epochs, args.scale, args.qat_lr, qat_seconds))
        f.write(tm.versions())


if __name__ == "__main__":
    main()
