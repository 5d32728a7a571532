#!/usr/bin/python3
"""Train LoLa's CIFAR-10 network (Brutzkus, Gilad-Bachrach, Elisha, ICML 2019; the network Falcon,
Lou et al., evaluates) with square activations by knowledge distillation, and export it as ONNX
(opset 13) for athosc --backend fhe.

Usage (from the repository root):

    /usr/bin/python3 scripts/train_cifar.py --out testdata/lola-cifar

    [N,3,32,32] -> Conv 8x8 stride 2 pad 1, 83 maps -> [N,83,14,14] -> x*x
                -> Conv 6x6 stride 2, 163 maps -> [N,163,5,5] -> x*x -> Flatten (4075)
                -> Linear 10 (logits)

THE DATA PROBLEM. There is no CIFAR-10 training set on this machine and no network: only
CIFAR-10 test images 0-99 (--data, the binary batch format) and a pretrained ReLU network,
OVAL21's "base" KW CIFAR-10 CNN (--teacher, BSD-3). So the student is not trained on labels but
distilled from that teacher: every training input is synthetic, made on the fly from test images
0-49 only (random 4-pixel-padded crops, horizontal flips, mixup of two images with a uniform
weight, brightness/contrast jitter and Gaussian noise), and the loss is the KL divergence between
the teacher's and the student's softened outputs (temperature --temp). Test images 50-99 are never
seen in training: accuracy on them is the honest figure; 0-99 is also reported (half seen). The
absolute accuracy is therefore far below LoLa's (74.1 % with the real training set); what the fhe
mode is judged on is the agreement of the fixed-point program with this float student.

QUANTIZATION-AWARE PHASE. The fhe mode computes with one scale s for inputs and weights and no
truncation, so its values grow by 11s bits through this network (x at s, conv at 2s, x² at 4s,
conv at 5s, x² at 10s, dense at 11s) and s = 4 is the most that fits the 63-bit CRT product;
weights of a few hundredths (what the float phase gives) mostly round to zero at 2^-4. So after
the float phase the layers' weights are multiplied by --mult A,C,E (biases to match: the same
network, logits times A^4 C^2 E), and --qat-steps more distillation steps run with the fhe
program's rounding in the forward pass (straight-through estimator). The exported weights are
the rounded ones (multiples of 2^-s), so the fixed-point program differs from the exported float
model only by the input's rounding.

Inputs are normalised as the teacher's are: (pixel/255 - mean) / std, mean (0.485, 0.456, 0.406),
std 0.225 (the same numbers as `mkdata cifar10 --mean 0.485,0.456,0.406 --std 0.225`).

The run is deterministic for a given --seed (fixed seeds, one seeded generator for the synthetic
data, deterministic kernels, fixed thread count; tm.deterministic of scripts/train_mnist.py).

Writes into --out: model.onnx, inputs/NNNNN.npy (+ labels.txt; test images 50-57, unseen),
expected/NNNNN.npy (float logits) and TRAINING.txt (command, accuracies, versions).
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mnist as tm  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.225, 0.225, 0.225)
SEEN = 50  # test images 0..SEEN-1 feed the synthetic data; SEEN..99 are held out
SAMPLES = range(50, 58)


def ste_round(t, frac):
    """t rounded to a multiple of 2^-frac in the forward pass, the identity in the backward pass
    (straight-through estimator)."""
    k = 2.0**frac
    return t + (torch.round(t * k) / k - t).detach()


class LoLaCIFAR(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 83, kernel_size=8, stride=2, padding=1)
        self.conv2 = nn.Conv2d(83, 163, kernel_size=6, stride=2)
        self.fc = nn.Linear(163 * 5 * 5, 10)
        self.qat = None  # the fhe mode's scale s during quantization-aware training

    def forward(self, x):
        s = self.qat
        if s is None:
            x = self.conv1(x)
            x = x * x  # square activation (exported as Mul(x, x))
            x = self.conv2(x)
            x = x * x
            return self.fc(torch.flatten(x, 1))
        # The fhe program's arithmetic (one scale s, no truncation): input and weights at s
        # fractional bits, each bias at its layer's output scale (2s, 5s, 11s).
        q = ste_round
        x = F.conv2d(q(x, s), q(self.conv1.weight, s), q(self.conv1.bias, 2 * s), stride=2, padding=1)
        x = x * x
        x = F.conv2d(x, q(self.conv2.weight, s), q(self.conv2.bias, 5 * s), stride=2)
        x = x * x
        return F.linear(torch.flatten(x, 1), q(self.fc.weight, s), q(self.fc.bias, 11 * s))

    def rescale(self, a, c, e):
        """Multiplies the layers' weights by a, c and e (and the biases to match): the same
        network with its logits multiplied by a^4 c^2 e, whose weights are large enough for s
        fractional bits. Returns that factor."""
        with torch.no_grad():
            self.conv1.weight.mul_(a)
            self.conv1.bias.mul_(a)
            self.conv2.weight.mul_(c)
            self.conv2.bias.mul_(a * a * c)
            self.fc.weight.mul_(e)
            self.fc.bias.mul_(a**4 * c * c * e)
        return a**4 * c * c * e

    def freeze_quantized(self):
        """Replaces every parameter by its quantized value (what the fhe program computes with) and
        leaves quantization-aware mode."""
        s = self.qat
        with torch.no_grad():
            for mod, fb in ((self.conv1, 2 * s), (self.conv2, 5 * s), (self.fc, 11 * s)):
                mod.weight.copy_(torch.round(mod.weight * 2.0**s) / 2.0**s)
                mod.bias.copy_(torch.round(mod.bias * 2.0**fb) / 2.0**fb)
        self.qat = None


class Teacher(nn.Module):
    """The OVAL21 base KW network, weights read from its ONNX file (checked against its layout)."""

    def __init__(self, onnx_path):
        super().__init__()
        import onnx
        from onnx import numpy_helper

        m = onnx.load(onnx_path)
        ops = [n.op_type for n in m.graph.node if n.op_type in ("Conv", "Gemm", "Relu")]
        if ops != ["Conv", "Relu", "Conv", "Relu", "Gemm", "Relu", "Gemm"]:
            raise SystemExit("teacher %s: unexpected layers %s" % (onnx_path, ops))
        w = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in m.graph.initializer}
        self.c1 = nn.Conv2d(3, 8, 4, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 16, 4, stride=2, padding=1)
        self.f1 = nn.Linear(1024, 100)
        self.f2 = nn.Linear(100, 10)
        layers = [n for n in m.graph.node if n.op_type in ("Conv", "Gemm")]
        with torch.no_grad():
            for mod, node in zip([self.c1, self.c2, self.f1, self.f2], layers):
                mod.weight.copy_(w[node.input[1]])
                mod.bias.copy_(w[node.input[2]])
        self.requires_grad_(False)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        x = F.relu(self.f1(torch.flatten(x, 1)))
        return self.f2(x)


def load_cifar_bin(path):
    """Images as float pixels in 0..1, [N,3,32,32], and labels."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size % 3073 != 0:
        raise SystemExit("%s: %d bytes is not a whole number of 3073-byte records" % (path, raw.size))
    raw = raw.reshape(-1, 3073)
    y = torch.from_numpy(raw[:, 0].astype(np.int64))
    x = torch.from_numpy(raw[:, 1:].astype(np.float32).reshape(-1, 3, 32, 32) / 255.0)
    return x, y


def normalise(x):
    m = torch.tensor(MEAN).view(1, 3, 1, 1)
    s = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - m) / s


def synthetic(pool, n, gen):
    """n synthetic pixel images (0..1) from the images in pool, drawn with gen."""
    idx = torch.randint(0, pool.shape[0], (n,), generator=gen)
    x = pool[idx]
    # random crop from the 4-pixel reflect-padded image
    padded = F.pad(x, (4, 4, 4, 4), mode="reflect")
    ox = torch.randint(0, 9, (n,), generator=gen)
    oy = torch.randint(0, 9, (n,), generator=gen)
    x = torch.stack([padded[i, :, oy[i] : oy[i] + 32, ox[i] : ox[i] + 32] for i in range(n)])
    flip = torch.rand(n, generator=gen) < 0.5
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)
    # mixup with another image of the batch for half of them
    lam = torch.rand(n, generator=gen)
    lam = torch.where(torch.rand(n, generator=gen) < 0.5, torch.ones(n), 0.5 + 0.5 * lam)
    perm = torch.randperm(n, generator=gen)
    x = lam.view(-1, 1, 1, 1) * x + (1 - lam.view(-1, 1, 1, 1)) * x[perm]
    # brightness / contrast jitter and noise
    c = 0.7 + 0.6 * torch.rand(n, 1, 1, 1, generator=gen)
    b = 0.2 * (torch.rand(n, 1, 1, 1, generator=gen) - 0.5)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (x - mean) * c + mean + b
    sigma = 0.05 * torch.rand(n, 1, 1, 1, generator=gen)
    x = x + sigma * torch.randn(x.shape, generator=gen)
    return x.clamp(0, 1)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).sum().item()


def distill(model, teacher, opt, sched, pool, gen, steps, args, x_all, labels, logit_scale=1.0):
    """steps of distillation on synthetic inputs (the student's logits divided by logit_scale);
    returns (wall, CPU) seconds."""
    seen, unseen = slice(0, SEEN), slice(SEEN, x_all.shape[0])
    t0, c0 = time.time(), time.process_time()
    running = 0.0
    for step in range(1, steps + 1):
        model.train()
        xb = normalise(synthetic(pool, args.batch, gen))
        with torch.no_grad():
            soft = F.softmax(teacher(xb) / args.temp, dim=1)
        out = model(xb) / logit_scale
        loss = F.kl_div(F.log_softmax(out / args.temp, dim=1), soft, reduction="batchmean") * args.temp**2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running += loss.item()
        if step % args.log_every == 0 or step == steps:
            model.eval()
            print("step %d: loss %.4f, seen %d/%d, unseen %d/%d (%.0fs)" % (
                step, running / args.log_every, accuracy(model, x_all[seen], labels[seen]), SEEN,
                accuracy(model, x_all[unseen], labels[unseen]), x_all.shape[0] - SEEN, time.time() - t0), flush=True)
            running = 0.0
    return time.time() - t0, time.process_time() - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default="../shared/testdata/datasets/cifar10/test_batch_first100.bin")
    ap.add_argument("--teacher", default="../shared/testdata/models/cifar10-oval-base-kw/model.onnx")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--temp", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=100)
    ap.add_argument("--scale", type=int, default=4, help="the fhe mode's scale s of the quantization-aware phase")
    ap.add_argument("--mult", type=lambda v: [float(t) for t in v.split(",")], default=[2.0, 4.0, 16.0],
                    help="A,C,E: multipliers of the three layers' weights before the quantization-aware phase")
    ap.add_argument("--qat-steps", type=int, default=200)
    ap.add_argument("--qat-lr", type=float, default=2e-4)
    args = ap.parse_args()
    for p in (args.data, args.teacher):
        if not os.path.exists(p):
            raise SystemExit("%s is missing (the shared test data; see --help)" % p)
    tm.deterministic(args)

    pix, labels = load_cifar_bin(args.data)
    x_all = normalise(pix)
    seen, unseen = slice(0, SEEN), slice(SEEN, pix.shape[0])
    teacher = Teacher(args.teacher).eval()
    t_seen, t_unseen = accuracy(teacher, x_all[seen], labels[seen]), accuracy(teacher, x_all[unseen], labels[unseen])
    print("teacher: %d/%d on 0-%d, %d/%d on %d-%d" % (t_seen, SEEN, SEEN - 1, t_unseen, pix.shape[0] - SEEN, SEEN, pix.shape[0] - 1))

    model = LoLaCIFAR()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    gen = torch.Generator().manual_seed(args.seed)
    pool = pix[seen]
    train_wall, train_cpu = distill(model, teacher, opt, sched, pool, gen, args.steps, args, x_all, labels)
    model.eval()
    f_seen, f_unseen = accuracy(model, x_all[seen], labels[seen]), accuracy(model, x_all[unseen], labels[unseen])
    # Quantization-aware phase: rescale the layers so that their weights survive s fractional
    # bits, fine-tune with the fhe program's rounding in the forward pass, export the rounded
    # weights (then the fixed-point program differs from the float model only by the input's
    # rounding).
    a, c, e = args.mult
    kappa = model.rescale(a, c, e)
    model.qat = args.scale
    opt = torch.optim.Adam(model.parameters(), lr=args.qat_lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.qat_lr, total_steps=args.qat_steps)
    w, c_ = distill(model, teacher, opt, sched, pool, gen, args.qat_steps, args, x_all, labels, logit_scale=kappa)
    train_wall, train_cpu = train_wall + w, train_cpu + c_
    model.freeze_quantized()
    model.eval()
    s_seen, s_unseen = accuracy(model, x_all[seen], labels[seen]), accuracy(model, x_all[unseen], labels[unseen])
    with torch.no_grad():
        agree = (model(x_all).argmax(1) == teacher(x_all).argmax(1)).sum().item()

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(model, torch.zeros(1, 3, 32, 32), onnx_path, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=False)
    ops = tm.checked_ops(onnx_path)

    in_dir, exp_dir = os.path.join(args.out, "inputs"), os.path.join(args.out, "expected")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(exp_dir, exist_ok=True)
    lines = []
    with torch.no_grad():
        for i in SAMPLES:
            name = "%05d.npy" % i
            xi = x_all[i : i + 1]
            tm.write_npy_f32(os.path.join(in_dir, name), xi.numpy())
            tm.write_npy_f32(os.path.join(exp_dir, name), model(xi).numpy())
            lines.append("%s %d" % (name, labels[i].item()))
    with open(os.path.join(in_dir, "labels.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    n_unseen = pix.shape[0] - SEEN
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_cifar.py --out %s --seed %d --steps %d --batch %d --lr %g --temp %g "
                "--scale %d --mult %s --qat-steps %d --qat-lr %g\n"
                % (args.out, args.seed, args.steps, args.batch, args.lr, args.temp, args.scale,
                   ",".join("%g" % v for v in args.mult), args.qat_steps, args.qat_lr))
        f.write("parameters: %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("training data: synthetic (crops, flips, mixup, jitter, noise) of CIFAR-10 test images 0-%d only, "
                "soft labels from the teacher (temperature %g); %d steps of %d\n" % (SEEN - 1, args.temp, args.steps, args.batch))
        f.write("teacher (OVAL21 base KW, ReLU): %d/%d on test 0-%d (seen), %d/%d on test %d-99 (unseen), %d/100 on 0-99\n"
                % (t_seen, SEEN, SEEN - 1, t_unseen, n_unseen, SEEN, t_seen + t_unseen))
        f.write("after the float phase: %d/%d seen, %d/%d unseen; layers then multiplied by %s (logits by %g), "
                "%d quantization-aware steps at s = %d, weights exported rounded to multiples of 2^-%d\n"
                % (f_seen, SEEN, f_unseen, n_unseen, args.mult, kappa, args.qat_steps, args.scale, args.scale))
        f.write("student float accuracy: %d/%d on test 0-%d (seen), %d/%d on test %d-99 (unseen), %d/100 on 0-99; "
                "top-1 agreement with the teacher on 0-99: %d/100\n"
                % (s_seen, SEEN, SEEN - 1, s_unseen, n_unseen, SEEN, s_seen + s_unseen, agree))
        f.write("training time: %.0f s wall, %.0f CPU-s (2 shared cores, loaded)\n" % (train_wall, train_cpu))
        f.write(tm.versions())
    print(open(os.path.join(args.out, "TRAINING.txt")).read())


if __name__ == "__main__":
    main()
