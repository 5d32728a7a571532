#!/usr/bin/python3
"""Train a small ViT-style encoder on MNIST and export it as ONNX (opset 17) for athosc.

Usage (from the repository root):

    /usr/bin/python3 scripts/train_vit.py --out testdata/vit-mnist

    [1,1,28,28] -> Conv 7x7 stride 7 (patch embedding, 16 patches of 32 features) -> [16,32]
                -> class token prepended (Concat) + position embedding -> [17,32]
                -> one pre-norm encoder block:
                     x + proj(attention(LayerNorm(x)))   2 heads of 16, softmax(Q·Kᵀ/4)·V
                     x + fc2(GELU(fc1(LayerNorm(x))))    32 -> 64 -> 32, GELU in erf form
                -> class token row (one-hot [1,17] times the tokens) -> LayerNorm -> Linear 10 -> [1,10]

Both attention products (Q·Kᵀ and softmax(…)·V) multiply two runtime tensors, batched over the
heads: [2,17,16]·[2,16,17] and [2,17,17]·[2,17,16]. The exported graph works on one image at a
time (2-D token matrices, which is what the fixed-point lowering takes); training runs the same
parameters batched. The data and helpers (idx reading, GoMNIST lookup) are those of
scripts/train_mnist.py; the run is deterministic for a given --seed (CPU).

Writes into --out: model.onnx, inputs/NNNNN.npy (+ labels.txt), expected/NNNNN.npy,
TRAINING.txt.
"""

import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mnist as tm  # noqa: E402

NUM_SAMPLES = 8
D, HEADS, MLP, PATCH = 32, 2, 64, 7
TOKENS = (28 // PATCH) ** 2 + 1


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(1, D, kernel_size=PATCH, stride=PATCH)
        self.cls = nn.Parameter(torch.zeros(1, D))
        self.pos = nn.Parameter(0.02 * torch.randn(TOKENS, D))
        self.ln1 = nn.LayerNorm(D)
        self.q = nn.Linear(D, D)
        self.k = nn.Linear(D, D)
        self.v = nn.Linear(D, D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, MLP)
        self.fc2 = nn.Linear(MLP, D)
        self.lnf = nn.LayerNorm(D)
        self.head = nn.Linear(D, 10)
        self.register_buffer("first", torch.eye(1, TOKENS), persistent=False)  # [1,T] one-hot

    def encode(self, x):
        """x: [..., T, D] -> [..., T, D] (one encoder block)."""
        dh = D // HEADS
        h = self.ln1(x)

        def heads(t):  # [..., T, D] -> [..., H, T, dh]
            return t.reshape(t.shape[:-1] + (HEADS, dh)).transpose(-3, -2)

        q, k, v = heads(self.q(h)) * (dh ** -0.5), heads(self.k(h)), heads(self.v(h))
        a = torch.softmax(q @ k.transpose(-1, -2), dim=-1)  # [..., H, T, T]
        o = (a @ v).transpose(-3, -2)  # [..., T, H, dh]
        o = o.reshape(o.shape[:-2] + (D,))  # [..., T, D]
        x = x + self.proj(o)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    def forward(self, x):
        """Batched training form: [N,1,28,28] -> [N,10]."""
        t = self.patch(x).flatten(2).transpose(1, 2)  # [N,16,D]
        t = torch.cat([self.cls.expand(x.shape[0], 1, D), t], 1) + self.pos
        return self.head(self.lnf(self.encode(t)[:, 0]))

    def single(self, x):
        """Exported form: [1,1,28,28] -> [1,10], on 2-D token matrices."""
        t = self.patch(x).reshape(D, TOKENS - 1).transpose(0, 1)  # [16,D]
        t = torch.cat([self.cls, t], 0) + self.pos  # [17,D]
        # The class token's row, as a product with a constant one-hot row (Slice of a runtime
        # tensor does not lower; a product with a constant does, exactly).
        return self.head(self.lnf(self.first @ self.encode(t)))


class Single(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m.single(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", help="directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    x_train, y_train, x_test, y_test = tm.prepare(args)

    model = ViT()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    train_seconds, _ = tm.fit(model, opt, x_train, y_train, x_test, y_test, args.epochs, args.batch, args.lr, args.seed, clip=1.0)
    model.eval()
    acc = tm.evaluate(model, x_test, y_test)
    print("final t10k accuracy: %.2f%%" % (100 * acc))

    single = Single(model).eval()
    with torch.no_grad():
        for i in range(4):  # the exported form computes what was trained
            a, b = model(x_test[i : i + 1]), single(x_test[i : i + 1])
            if not torch.allclose(a, b, atol=1e-5):
                sys.exit("single-image form differs from the batched form: %s vs %s" % (a, b))

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(single, torch.zeros(1, 1, 28, 28), onnx_path, opset_version=17,
                      input_names=["input"], output_names=["logits"], do_constant_folding=True)
    ops = tm.checked_ops(onnx_path)

    tm.write_samples(args.out, x_test, y_test, single, NUM_SAMPLES)
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_vit.py --out %s --seed %d --epochs %d --lr %g --batch %d\n"
                % (args.out, args.seed, args.epochs, args.lr, args.batch))
        f.write("parameters: %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("float t10k accuracy (10000 images): %.2f%%\n" % (100 * acc))
        f.write("training: 60000 MNIST training images, %d epochs, AdamW one-cycle (max lr %g, weight decay 0.01), batch %d, grad-norm clip 1, %.0f s on 2 shared cores\n"
                % (args.epochs, args.lr, args.batch, train_seconds))
        f.write(tm.versions())


if __name__ == "__main__":
    main()
