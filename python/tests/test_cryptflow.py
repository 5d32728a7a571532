"""Tests of the cryptflow Python package on the bundled MNIST model (testdata/mnist-small)."""

import os

import numpy as np
import pytest

import cryptflow


def test_compile_from_folder_and_infer_local_equals_clear(mnist, tmp_path):
    model, val, xs, ys = mnist
    prog = cryptflow.compile(model, str(tmp_path / "m.sciir"), validate=val)
    assert os.path.exists(prog.path) and os.path.exists(prog.client_path)
    assert prog.backend == "auto" and prog.input_shape == (1, 1, 28, 28)
    assert 2 <= prog.bits <= 64 and len(prog.id) == 64
    ref = cryptflow.clear(prog, xs[0])
    res = cryptflow.infer_local(prog, xs[0])
    assert res.top_class == ys[0] == ref.top_class
    assert res.output.shape == (1, 10) and res.output.dtype == np.float32
    np.testing.assert_array_equal(res.output, ref.output)  # bitwise the same ring values, decoded alike
    assert res.class_name is None


def test_compile_from_arrays_serve_and_infer(mnist, tmp_path):
    model, _, xs, ys = mnist
    prog = cryptflow.compile(model, str(tmp_path / "arr.sciir"), samples=xs, labels=ys, backend="scihe")
    assert prog.backend == "scihe"
    with cryptflow.serve(prog) as server:
        assert server.address.startswith("127.0.0.1:")
        for i in (1, 2):
            res = cryptflow.infer(server.address, prog, xs[i][0])  # without the leading 1: accepted
            assert res.top_class == ys[i]
    # The server ended with the context; a client now fails with scirun's error.
    with pytest.raises(cryptflow.CryptflowError):
        cryptflow.infer(server.address, prog, xs[0], extra_args=["--connect-timeout", "1s"])


def test_pinned_ring_and_open_program(mnist, tmp_path):
    model, _, _, _ = mnist
    out = str(tmp_path / "pinned.sciir")
    prog = cryptflow.compile(model, out, bits=32, scale=8, backend="sciot")
    again = cryptflow.open_program(out)
    assert (again.bits, again.scale, again.backend, again.id) == (32, 8, "sciot", prog.id)


def test_errors(mnist, tmp_path, monkeypatch):
    model, val, xs, ys = mnist
    prog = cryptflow.compile(model, str(tmp_path / "e.sciir"), bits=32, scale=8)
    with pytest.raises(cryptflow.CryptflowError, match="shape"):
        cryptflow.clear(prog, np.zeros((3, 3), np.float32))
    with pytest.raises(cryptflow.CryptflowError, match="backend"):
        cryptflow.compile(model, str(tmp_path / "x.sciir"), backend="clear")
    with pytest.raises(ValueError):
        cryptflow.compile(model, str(tmp_path / "x.sciir"), validate=val, samples=xs)
    with pytest.raises(ValueError):
        cryptflow.compile(model, str(tmp_path / "x.sciir"), samples=xs, labels=ys[:3])
    monkeypatch.setenv("CRYPTFLOW_BIN", str(tmp_path))
    with pytest.raises(cryptflow.CryptflowError, match="not in CRYPTFLOW_BIN"):
        cryptflow.clear(prog, xs[0])


DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def test_class_names_and_batch(mnist, tmp_path):
    model, val, xs, ys = mnist
    prog = cryptflow.compile(model, str(tmp_path / "named.sciir"), validate=val, classes=DIGITS)
    assert prog.classes == tuple(DIGITS)
    with cryptflow.serve(prog) as server:
        results = cryptflow.infer_batch(server.address, prog, xs[:3])  # one session for the three
    assert [r.top_class for r in results] == ys[:3]
    assert [r.class_name for r in results] == [DIGITS[y] for y in ys[:3]]
    for r, x in zip(results, xs[:3]):
        assert r.output.shape == (1, 10)
        np.testing.assert_array_equal(r.output, cryptflow.clear(prog, x).output)
    local = cryptflow.infer_local_batch(prog, list(xs[3:5]))
    assert [r.top_class for r in local] == ys[3:5] and local[0].class_name == DIGITS[ys[3]]
    assert cryptflow.infer_local(prog, xs[0]).class_name == DIGITS[ys[0]]
    with pytest.raises(ValueError):
        cryptflow.compile(model, str(tmp_path / "x.sciir"), bits=32, scale=8, classes=["a", ""])
