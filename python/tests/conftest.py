"""Test set-up: the cryptflow package from this checkout and the tools built from it."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))


@pytest.fixture(scope="session", autouse=True)
def tools(tmp_path_factory):
    """Builds athosc and scirun into a temporary folder and points CRYPTFLOW_BIN at it, unless
    CRYPTFLOW_BIN is already set (scripts/test.sh sets it)."""
    if os.environ.get("CRYPTFLOW_BIN"):
        yield os.environ["CRYPTFLOW_BIN"]
        return
    go = shutil.which("go")
    if go is None:
        pytest.skip("neither CRYPTFLOW_BIN nor the go command is available to provide the tools")
    bin_dir = str(tmp_path_factory.mktemp("bin"))
    subprocess.run([go, "build", "-o", bin_dir + os.sep, "./cmd/athosc", "./cmd/scirun"], cwd=ROOT, check=True)
    os.environ["CRYPTFLOW_BIN"] = bin_dir
    yield bin_dir
    del os.environ["CRYPTFLOW_BIN"]


@pytest.fixture(scope="session")
def mnist():
    """The bundled MNIST model, its validation folder, and its eight inputs and labels as arrays."""
    import numpy as np

    d = os.path.join(ROOT, "testdata", "mnist-small")
    labels = {}
    with open(os.path.join(d, "inputs", "labels.txt")) as f:
        for line in f:
            name, label = line.split()
            labels[name] = int(label)
    names = sorted(labels)
    xs = np.stack([np.load(os.path.join(d, "inputs", n)) for n in names])
    ys = [labels[n] for n in names]
    return os.path.join(d, "model.onnx"), os.path.join(d, "inputs"), xs, ys
