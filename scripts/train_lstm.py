#!/usr/bin/python3
"""Train a small LSTM sequence classifier on MNIST, each image read as a sequence of rows, and
export it as ONNX (opset 13) with the recurrent layer as one standard ONNX `LSTM` node.

Usage (from the repository root):

    /usr/bin/python3 scripts/train_lstm.py --out testdata/lstm-mnist

    [N,1,28,28] -> Reshape [N,14,56] (step t = image rows 2t and 2t+1)
                -> LSTM, hidden 32, one forward layer, zero initial state
                -> last hidden state h_14 [N,32] -> Linear 10 (logits)

Fourteen steps of two rows each keep the unrolled program small (athosc unrolls the LSTM over the
static sequence length, frontend/onnx/rnn.go). The data and the helpers (idx reading, GoMNIST
lookup) are those of scripts/train_mnist.py; the run is deterministic for a given --seed (fixed
seeds, a fixed shuffle generator, deterministic algorithms, a fixed thread count).

Writes into --out: model.onnx (batch 1, static shapes), inputs/NNNNN.npy (+ labels.txt),
expected/NNNNN.npy (PyTorch float logits) and TRAINING.txt.
"""

import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_mnist as tm  # noqa: E402

NUM_SAMPLES = 8


class LSTMMNIST(nn.Module):
    def __init__(self, steps, hidden):
        super().__init__()
        if 28 % steps != 0:
            raise ValueError("--steps %d does not divide the 28 image rows" % steps)
        self.steps = steps
        self.features = 28 * 28 // steps
        self.lstm = nn.LSTM(self.features, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, 10)

    def forward(self, x):
        x = x.reshape(-1, self.steps, self.features)
        _, (h, _) = self.lstm(x)  # h: [1, N, hidden], the state after the last step
        # Squeeze rather than h[0]: a runtime Gather has no HLIL form (HLIL has no runtime slicing).
        return self.fc(h.squeeze(0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", help="directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
    ap.add_argument("--steps", type=int, default=14, help="sequence length (divides 28)")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    x_train, y_train, x_test, y_test = tm.prepare(args)

    model = LSTMMNIST(args.steps, args.hidden)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    train_seconds, _ = tm.fit(model, opt, x_train, y_train, x_test, y_test, args.epochs, args.batch, args.lr, args.seed, clip=1.0)
    model.eval()
    acc = tm.evaluate(model, x_test, y_test)
    print("final t10k accuracy: %.2f%% (%d/%d)" % (100 * acc, round(acc * x_test.shape[0]), x_test.shape[0]))

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "model.onnx")
    # A static batch of 1 and constant folding: the exporter then writes the LSTM's weights
    # (PyTorch's gate order i, f, g, o permuted to ONNX's i, o, f, c) as initializers instead of
    # Slice/Concat chains. Its zero initial state comes as Expand(zeros, Shape(input)...), which
    # athosc folds.
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), onnx_path, opset_version=13,
                      input_names=["input"], output_names=["logits"], do_constant_folding=True)
    ops = tm.checked_ops(onnx_path)
    if "LSTM" not in ops:
        sys.exit("the exporter wrote no ONNX LSTM node: %s" % " ".join(ops))

    tm.write_samples(args.out, x_test, y_test, model, NUM_SAMPLES)
    with open(os.path.join(args.out, "TRAINING.txt"), "w") as f:
        f.write("command: /usr/bin/python3 scripts/train_lstm.py --out %s --steps %d --hidden %d --seed %d --epochs %d --lr %g --batch %d\n"
                % (args.out, args.steps, args.hidden, args.seed, args.epochs, args.lr, args.batch))
        f.write("parameters: %d\nonnx ops: %s\n" % (n_params, " ".join(ops)))
        f.write("float t10k accuracy (10000 images): %.2f%%\n" % (100 * acc))
        f.write("training: 60000 MNIST training images, %d epochs, Adam one-cycle (max lr %g), batch %d, grad-norm clip 1, %.0f s on 2 shared cores\n"
                % (args.epochs, args.lr, args.batch, train_seconds))
        f.write(tm.versions())


if __name__ == "__main__":
    main()
