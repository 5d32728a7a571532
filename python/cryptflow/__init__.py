"""Secure two-party neural-network inference from Python, with numpy arrays in and out.

cryptflow compiles an ONNX or TensorFlow classifier into a secure-inference program, serves it,
and runs inferences against it, by running the cryptflow-go tools ``athosc`` and ``scirun``:

    >>> import cryptflow, numpy as np
    >>> prog = cryptflow.compile("model.onnx", "model.sciir", samples=xs, labels=ys)
    >>> with cryptflow.serve(prog) as server:                        # the model owner
    ...     res = cryptflow.infer(server.address, prog, xs[0])        # the client
    >>> res.top_class, res.class_name, res.output                     # int, str or None, ndarray

The tools are found in the folder named by the ``CRYPTFLOW_BIN`` environment variable, else on
``PATH`` (in a checkout: ``go build -o bin/ ./cmd/...``).

Why the binaries and ``.npy`` files rather than a C shared library (``go build
-buildmode=c-shared``): a secure inference takes hundreds of milliseconds to minutes and moves
megabytes to gigabytes between the parties, so a process start and an ``.npy`` file per call
cost nothing measurable; in exchange the Python package runs exactly the programs whose
behaviour the project's documentation and tests pin (same flags, same errors, same bitwise
output), needs no cgo toolchain or per-platform wheels, keeps the Go runtime (its threads and
signal handlers) out of the Python process, and a crash or a hung peer ends a child process that
can be killed rather than the interpreter. A server is a separate process in deployment anyway.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Optional, Sequence

import numpy as np

__all__ = [
    "CryptflowError",
    "Program",
    "Result",
    "Server",
    "compile",
    "open_program",
    "serve",
    "infer",
    "infer_local",
    "infer_batch",
    "infer_local_batch",
    "clear",
]


class CryptflowError(Exception):
    """A tool failed or could not be found; the message carries the tool's own error."""


def _tool(name: str) -> str:
    """Returns the path of tool ``name`` (CRYPTFLOW_BIN, then PATH)."""
    d = os.environ.get("CRYPTFLOW_BIN")
    if d:
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        raise CryptflowError(f"{name} is not in CRYPTFLOW_BIN={d} (build it: go build -o {d}/ ./cmd/{name})")
    path = shutil.which(name)
    if path:
        return path
    raise CryptflowError(
        f"{name} is not on PATH: in the cryptflow-go checkout run `go build -o bin/ ./cmd/...` and add bin/ "
        "to PATH, or set CRYPTFLOW_BIN to the folder that holds the tools"
    )


def _run(args: Sequence[str], timeout: Optional[float] = None) -> str:
    """Runs a tool; returns its stdout, or raises CryptflowError with its stderr."""
    try:
        p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise CryptflowError(f"{os.path.basename(args[0])} did not finish within {timeout} s") from e
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        tail = "\n".join(msg[-5:]) if msg else f"exit status {p.returncode}"
        raise CryptflowError(f"{os.path.basename(args[0])} {' '.join(args[1:3])} ...: {tail}")
    return p.stdout


@dataclasses.dataclass(frozen=True)
class Program:
    """A compiled program: the server's copy (with the weights) and the client's beside it."""

    path: str  #: the server's copy, NAME.sciir
    client_path: str  #: the client's copy, NAME.client.sciir (no weights)
    id: str  #: the program ID both parties compare before a session
    bits: int  #: the ring bitwidth l
    scale: int  #: the fixed-point scale s
    backend: str  #: the two-party backend recorded (auto, sciot, scihe)
    input_shape: tuple  #: the shape of the program's input
    classes: Optional[tuple] = None  #: the class names the program records (athosc --classes), else None


def open_program(path: str) -> Program:
    """Reads a program's description (``athosc disasm``) from its server copy NAME.sciir."""
    out = _run([_tool("athosc"), "disasm", path])

    def find(pattern: str) -> re.Match:
        m = re.search(pattern, out, re.MULTILINE)
        if not m:
            raise CryptflowError(f"athosc disasm {path}: no {pattern!r} in its output")
        return m

    ring = find(r"^ring Z_2\^(\d+)\s+scale (\d+)")
    shape = find(r'^\s+in0 ".*" = %\d+ \[([\d,]+)\]').group(1)
    cm = re.search(r"^\s+classes (\d+): (.*)$", out, re.MULTILINE)
    classes = None
    if cm:
        names = tuple(cm.group(2).split(", "))
        if len(names) == int(cm.group(1)):  # a name with ", " in it: leave the names to scirun's lines
            classes = names
    client = path[: -len(".sciir")] + ".client.sciir" if path.endswith(".sciir") else path + ".client"
    return Program(
        path=path,
        client_path=client,
        id=find(r"^program id ([0-9a-f]+)").group(1),
        bits=int(ring.group(1)),
        scale=int(ring.group(2)),
        backend=find(r"default backend (\w+)").group(1),
        input_shape=tuple(int(d) for d in shape.split(",")),
        classes=classes,
    )


def compile(
    model: str,
    out: str,
    *,
    validate: Optional[str] = None,
    samples: Optional[np.ndarray] = None,
    labels: Optional[Sequence[int]] = None,
    bits: Optional[int] = None,
    scale: Optional[int] = None,
    backend: Optional[str] = None,
    net: Optional[str] = None,
    classes: Optional[Sequence[str]] = None,
    extra_args: Sequence[str] = (),
) -> Program:
    """Compiles the ONNX or TensorFlow model at ``model`` into ``out`` (NAME.sciir; the client's
    copy NAME.client.sciir is written beside it), as ``athosc MODEL -o OUT`` does.

    The bitwidth and scale are autotuned on the validation data: a folder ``validate`` as
    ``athosc --validate`` reads it, or ``samples``, an array whose first axis runs over the
    inputs (each the model input's shape, or it without leading 1-dimensions), with optional
    integer ``labels``. ``bits`` and ``scale`` pin them instead; ``backend`` (auto by default,
    sciot, scihe) and ``net`` (lan by default, wan, BANDWIDTH[,RTT]) choose the engines.
    ``classes`` names the classes (name k for class k), recorded in the program as athosc
    ``--classes FILE`` records them, so that every Result carries its ``class_name``.
    ``extra_args`` go to athosc as they are (e.g. ``["--headroom", "2"]``).
    """
    if validate is not None and samples is not None:
        raise ValueError("give validate (a folder) or samples (an array), not both")
    if labels is not None and samples is None:
        raise ValueError("labels need samples")
    args = [_tool("athosc"), model, "-o", out]
    for flag, v in (("--bitwidth", bits), ("--scale", scale), ("--backend", backend), ("--net", net)):
        if v is not None:
            args += [flag, str(v)]
    with tempfile.TemporaryDirectory(prefix="cryptflow-val-") as tmp:
        if samples is not None:
            xs = np.asarray(samples, dtype=np.float32)
            if xs.ndim < 1 or len(xs) == 0:
                raise ValueError("samples: want an array of one or more inputs along its first axis")
            if labels is not None and len(labels) != len(xs):
                raise ValueError(f"{len(labels)} labels for {len(xs)} samples")
            lines = []
            for i, x in enumerate(xs):
                name = f"{i:05d}.npy"
                np.save(os.path.join(tmp, name), x)
                if labels is not None:
                    lines.append(f"{name} {int(labels[i])}\n")
            if lines:
                with open(os.path.join(tmp, "labels.txt"), "w") as f:
                    f.writelines(lines)
            validate = tmp
        if classes is not None:
            names = [str(c) for c in classes]
            if not names or any(not c.strip() or "\n" in c for c in names):
                raise ValueError("classes: want one or more non-empty names without line breaks")
            cls_path = os.path.join(tmp, "classes.cryptflow.txt")
            with open(cls_path, "w") as f:
                f.writelines(c + "\n" for c in names)
            args += ["--classes", cls_path]
        if validate is not None:
            args += ["--validate", validate]
        _run(args + list(extra_args))
    return open_program(out)


@dataclasses.dataclass
class Result:
    """The output of one inference, as the client sees it."""

    output: np.ndarray  #: the decoded output (float32, the output's shape)
    top_class: int  #: the index of the highest score (scirun's "top class")
    class_name: Optional[str]  #: its name when the program records class names, else None


# scirun's line per output: "... top class 7 seven (13.45)" (the name only when the program
# records class names), in a batch "NAME.npy logits: top class 7 seven (13.45), label: right".
_TOP = re.compile(r"top class (\d+)(?: (.*?))? \(([^()]*)\)(?:, label.*)?$", re.MULTILINE)


def _class_name(program: Optional[Program], top: int, printed: Optional[str]) -> Optional[str]:
    if program is not None and program.classes is not None and 0 <= top < len(program.classes):
        return program.classes[top]
    return printed or None


def _result(stdout: str, out_path: str, program: Optional[Program] = None) -> Result:
    m = _TOP.search(stdout)
    if not m:
        raise CryptflowError(f"scirun printed no top class: {stdout.strip()[:200]!r}")
    top = int(m.group(1))
    return Result(output=np.load(out_path), top_class=top, class_name=_class_name(program, top, m.group(2)))


def _run_input(args: Sequence[str], x: np.ndarray, timeout: Optional[float], program: Optional[Program] = None) -> Result:
    with tempfile.TemporaryDirectory(prefix="cryptflow-run-") as tmp:
        xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(xin, np.asarray(x, dtype=np.float32))
        stdout = _run(list(args) + ["--input", xin, "--output", yout], timeout=timeout)
        return _result(stdout, yout, program)


def _run_batch(args: Sequence[str], xs, timeout: Optional[float], program: Program) -> list:
    """Runs the inputs ``xs`` in one scirun session (``--input DIR/ --output OUT/``) and returns
    one Result per input, in order."""
    items = [np.asarray(x, dtype=np.float32) for x in xs]
    if not items:
        raise ValueError("xs: want one or more inputs")
    with tempfile.TemporaryDirectory(prefix="cryptflow-batch-") as tmp:
        din, dout = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        os.mkdir(din)
        names = [f"{i:05d}.npy" for i in range(len(items))]
        for name, x in zip(names, items):
            np.save(os.path.join(din, name), x)
        stdout = _run(list(args) + ["--input", din + os.sep, "--output", dout + os.sep], timeout=timeout)
        lines = {}
        for line in stdout.splitlines():
            name = line.split(" ", 1)[0]
            m = _TOP.search(line)
            if m and name in names and name not in lines:
                lines[name] = m
        results = []
        for name in names:
            m = lines.get(name)
            if m is None:
                raise CryptflowError(f"scirun printed no top class for input {name}: {stdout.strip()[-300:]!r}")
            top = int(m.group(1))
            results.append(
                Result(output=np.load(os.path.join(dout, name)), top_class=top, class_name=_class_name(program, top, m.group(2)))
            )
        return results


def clear(program: Program, x: np.ndarray, timeout: Optional[float] = None) -> Result:
    """Runs the program in the clear on input ``x``: the reference every secure run equals."""
    return _run_input([_tool("scirun"), "--clear", program.path], x, timeout, program)


def infer_local(program: Program, x: np.ndarray, *, extra_args: Sequence[str] = (), timeout: Optional[float] = None) -> Result:
    """Runs both parties in one process over loopback (for demonstrations and tests)."""
    return _run_input([_tool("scirun"), "--local", program.path, *extra_args], x, timeout, program)


def infer(address: str, program: Program, x: np.ndarray, *, extra_args: Sequence[str] = (), timeout: Optional[float] = None) -> Result:
    """Runs one secure inference as the client against the server at ``address`` (HOST:PORT),
    with the program's client copy and input ``x`` (the program input's shape, or it without
    leading 1-dimensions). ``extra_args`` go to scirun (e.g. ``["--tls-pin", PIN]``)."""
    return _run_input([_tool("scirun"), "--party", "1", program.client_path, "--connect", address, *extra_args], x, timeout, program)


def infer_local_batch(program: Program, xs, *, extra_args: Sequence[str] = (), timeout: Optional[float] = None) -> list:
    """Runs the inputs ``xs`` (a list, or an array whose first axis runs over them) in one
    session of both parties in one process; returns a list of Result, one per input."""
    return _run_batch([_tool("scirun"), "--local", program.path, *extra_args], xs, timeout, program)


def infer_batch(address: str, program: Program, xs, *, extra_args: Sequence[str] = (), timeout: Optional[float] = None) -> list:
    """Runs the inputs ``xs`` (a list, or an array whose first axis runs over them) as the
    client against the server at ``address`` in ONE secure session (the set-up is paid once);
    returns a list of Result, one per input, in order, ``class_name`` filled when the program
    records class names."""
    return _run_batch([_tool("scirun"), "--party", "1", program.client_path, "--connect", address, *extra_args], xs, timeout, program)


class Server:
    """A running server (scirun --party 0 --serve) for one program; a context manager.

    ``address`` is where clients connect. The server's output goes to ``log_path``."""

    def __init__(self, program: Program, listen: str = "127.0.0.1:0", extra_args: Sequence[str] = (), start_timeout: float = 30):
        self._dir = tempfile.TemporaryDirectory(prefix="cryptflow-serve-")
        self.log_path = os.path.join(self._dir.name, "server.log")
        args = [_tool("scirun"), "--party", "0", program.path, "--listen", listen, "--serve", *extra_args]
        # The output goes to a file, not a pipe that nobody drains and that would block a busy server.
        with open(self.log_path, "w") as log:
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.address = self._wait_listening(start_timeout)

    def _wait_listening(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log_path) as f:
                text = f.read()
            m = re.search(r"listening on (\S+)", text)
            if m:
                return m.group(1)
            if self._proc.poll() is not None:
                self._dir.cleanup()
                raise CryptflowError(f"scirun server exited with status {self._proc.returncode}: {text.strip()[-500:]}")
            if time.monotonic() > deadline:
                self.close()
                raise CryptflowError(f"scirun server did not listen within {timeout} s: {text.strip()[-500:]}")
            time.sleep(0.05)

    def log(self) -> str:
        """The server's output so far."""
        with open(self.log_path) as f:
            return f.read()

    def close(self, timeout: float = 10) -> None:
        """Stops the server: SIGINT (it drains its sessions), then SIGKILL after ``timeout`` s."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._dir.cleanup()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve(program: Program, listen: str = "127.0.0.1:0", extra_args: Sequence[str] = ()) -> Server:
    """Starts a server for ``program`` (its server copy, with the weights) on ``listen``
    (HOST:PORT; port 0 picks a free one) and returns it once it listens."""
    return Server(program, listen, extra_args)
