"""Run fuzz cases (see fuzzgen.py) and classify what happened.

``execute(case)`` runs one case in this process and returns an ``Outcome``. Because a case may
crash the interpreter (a segfault must be recorded, not kill the fuzzer), callers use a
``Worker``: a child process (this file with ``--worker``) that executes cases one after another
and answers per case; when it dies of a signal or overruns the per-case timeout, the case is
recorded as such and the worker is restarted.

The property of issue 17: every case ends in success, in a documented error with a location
(``AsmError`` / ``RuntimeFault`` and its subclasses; ``InputError`` may name a file instead), or
for the CLI in a documented exit code (0-5) with no traceback. Everything else is a *failure*,
identified by a signature such as ``traceback: IndexError @ neuronemu/asm/assembler.py:_slice``.
"""

from __future__ import annotations

import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 130}   # README's exit-code table
CASE_TIMEOUT = 60.0             # seconds; a case that takes longer is a "hang" outcome
WORKER_MEMORY = 6 << 30         # address-space limit of a worker: MemoryError, not a swapped host


@dataclass(frozen=True)
class Outcome:
    kind: str                   # ok | error | exit | traceback | unlocated | signal | hang | json
                                # | abort | silent
    signature: str              # e.g. "AsmError", "exit 3", "traceback: KeyError @ file:func"
    detail: str = ""            # message or traceback text, for reports

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "error", "exit")


# ---------------------------------------------------------------------------------------------
# classification
# ---------------------------------------------------------------------------------------------

def _frame_site(tb) -> str:
    """The innermost frame in neuronemu (else the innermost at all), as ``path:function``."""
    frames = traceback.extract_tb(tb)
    package = str(REPO / "neuronemu")
    ours = [f for f in frames if f.filename.startswith(package)]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    path = Path(frame.filename)
    try:
        path = path.relative_to(REPO)
    except ValueError:
        path = Path(path.name)
    return f"{path}:{frame.name}"


def classify_exception(error: BaseException) -> Outcome:
    from neuronemu.errors import AsmError, InputError, NeuronemuError, ResourceError, RuntimeFault

    name = type(error).__name__
    if isinstance(error, NeuronemuError):
        text = error.message[:300]
        if isinstance(error, (AsmError, RuntimeFault)) and error.location is None:
            return Outcome("unlocated", f"unlocated {name}: {_message_shape(error.message)}", text)
        if isinstance(error, (AsmError, RuntimeFault, InputError, ResourceError)):
            return Outcome("error", name, text)   # ResourceError: exit 6, host memory
    detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    # the message's shape splits one site's distinct causes (e.g. a negative seed and a
    # negative std both fail in numpy's default_rng)
    return Outcome("traceback", f"traceback: {name} @ {_frame_site(error.__traceback__)}: "
                                f"{_message_shape(str(error))[:60]}", detail[-4000:])


def _message_shape(message: str) -> str:
    """A message with numbers and quoted names blanked, so one bug gives one signature."""
    import re

    text = re.sub(r"'[^']*'", "'_'", message.splitlines()[0] if message else "")
    text = re.sub(r"0x[0-9a-fA-F]+", "0xN", text)
    return re.sub(r"-?\d+(\.\d+)?", "N", text)[:80]


# ---------------------------------------------------------------------------------------------
# executing one case (in a worker)
# ---------------------------------------------------------------------------------------------

def make_array(recipe):
    """Build an input value from fuzzgen.array_recipe's (shape, dtype, fill, layout)."""
    import math

    import ml_dtypes
    import numpy as np

    shape, dtype, fill, layout = recipe
    n = math.prod(shape)
    if dtype == "struct":
        dt = np.dtype([("a", "<f4"), ("b", "<i2")])
    elif dtype in ("bfloat16",) or dtype.startswith("float8"):
        dt = np.dtype(getattr(ml_dtypes, dtype))
    else:
        dt = np.dtype(dtype)
    values = {"zeros": 0.0, "ones": 1.0, "nan": np.nan, "inf": np.inf, "-inf": -np.inf,
              "huge": 1e300, "tiny": 1e-320, "300": 300.0, "-1": -1.0, "half": 0.5}
    rng = np.random.default_rng(n)
    if fill == "normal":
        base = rng.normal(size=n)
    elif fill == "max":
        base = np.full(n, np.finfo(np.float64).max)
    elif fill == "mixed":
        base = rng.choice([np.nan, np.inf, -0.0, 1e38, -7.0, 2**40], size=n)
    else:
        base = np.full(n, values[fill])
    with np.errstate(all="ignore"):
        try:
            array = base.astype(dt).reshape(shape)
        except (ValueError, TypeError, OverflowError):
            array = np.zeros(shape, dt)
    if layout == "fortran":
        return np.asfortranarray(array)
    if layout == "strided":
        return np.repeat(array, 2, axis=-1)[..., ::2] if array.ndim else array
    if layout == "readonly":
        array.flags.writeable = False
        return array
    if layout == "list":
        return array.tolist()
    if layout == "scalar":
        return array.reshape(-1)[0] if array.size else 0
    if layout == "matrix_subclass" and array.ndim == 2:
        return np.asmatrix(array)
    if layout == "memoryview":
        try:
            return memoryview(np.ascontiguousarray(array))
        except (ValueError, TypeError):     # ml_dtypes and some others export no buffer
            return array
    return {"none": None, "str": "not an array", "dict": {"x": 1}}.get(layout, array)


def _npy_file(kind: str) -> bytes:
    """Bytes of one --input file of fuzzgen.NPY_FILES."""
    import io

    import numpy as np

    def save(array) -> bytes:
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=True)
        return buf.getvalue()

    good = np.ones((4, 8), np.float32)
    data = {"good": lambda: save(good), "wrong_shape": lambda: save(np.ones((8, 4), np.float32)),
            "wrong_dtype": lambda: save(np.ones((4, 8), np.complex64)),
            "truncated": lambda: save(good)[:100], "empty": lambda: b"",
            "not_npy": lambda: b"hello world\n",
            "huge_header": lambda: save(good).replace(b"(4, 8)", b"(4000000000000, 8)"),
            "pickled": lambda: save(np.array([{"a": 1}] * 32, dtype=object).reshape(4, 8)),
            "fortran": lambda: save(np.asfortranarray(good)),
            "bf16_as_v2": lambda: save(good.view(np.dtype("V2")).reshape(4, 16)[:, :8]),
            "nan": lambda: save(np.full((4, 8), np.nan, np.float32)),
            "int_overflow": lambda: save(np.full((4, 8), 2**40, np.int64)),
            "0d": lambda: save(np.float32(1.0))}
    return data[kind]()


def _in_scratch(scratch: Path, files: dict) -> None:
    for child in scratch.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    (scratch / "dir").mkdir()
    for name, content in files.items():
        (scratch / name).write_bytes(_npy_file(content) if isinstance(content, str) else content)


def _cli(argv: list[str]) -> tuple[Outcome, str]:
    from click.testing import CliRunner

    from neuronemu.cli import main

    result = CliRunner().invoke(main, argv, catch_exceptions=True)
    error = result.exception
    if error is not None and not isinstance(error, SystemExit):
        return classify_exception(error), result.stdout
    if result.stderr.rstrip().endswith("Aborted!"):
        # click turns an EOFError or KeyboardInterrupt that escaped the command into "Aborted!"
        # and exit 1, which is neither a runtime fault nor a located error
        return Outcome("abort", "click 'Aborted!' (an EOFError escaped the command)",
                       result.stderr[-300:]), ""
    if result.exit_code not in DOCUMENTED_EXIT_CODES:
        return Outcome("undocumented", f"undocumented exit {result.exit_code}",
                       result.stderr[-300:]), ""
    if "Traceback (most recent call last)" in result.stderr:
        return Outcome("traceback", "traceback text on stderr", result.stderr[-4000:]), ""
    if "--json" in argv and result.exit_code != 2:
        import json

        try:
            json.loads(result.stdout)
        except ValueError:
            return Outcome("json", f"--json stdout is not one JSON document ({argv[0]})",
                           result.stdout[:300]), ""
    return Outcome("exit", f"exit {result.exit_code}", result.stderr[-300:]), result.stdout


def _roundtrip(program) -> None:
    """A kernel that assembles must encode, disassemble and assemble to the same bytes."""
    import neuronemu
    from neuronemu import encoding
    from neuronemu.errors import NeuronemuError

    data = encoding.encode(program)
    try:
        again = neuronemu.assemble(encoding.disassemble(data, "x.neo"), "x.neo (disassembled)",
                                   program.target.name)
    except NeuronemuError as e:
        raise AssertionError(f"round trip: the disassembly does not assemble: {e.message}") from e
    if encoding.encode(again) != data:
        raise AssertionError("round trip: re-assembled bytes differ")


def _silently_empty(source: bytes, program) -> bool:
    """A text with statements on some line (by any line ending: CR, LF, CRLF, ...) that
    assembles to nothing was misread, e.g. as one long comment."""
    if program.instructions or program.tensors or program.allocations or program.labels:
        return False
    text = source.decode("utf-8", "replace")
    return any(line.split("#", 1)[0].strip() for line in text.splitlines())


def _execute_asm(case: dict, scratch: Path) -> Outcome:
    import neuronemu

    path = scratch / "kernel.s"
    path.write_bytes(case["source"])
    program = neuronemu.assemble_file(path)
    if _silently_empty(case["source"], program):
        return Outcome("silent", "silent: statements in the text but an empty program",
                       "the text has statements on some line (any line ending) but nothing "
                       "was assembled")
    _roundtrip(program)
    if case.get("run"):
        neuronemu.run(program, max_instructions=case.get("max_instructions", 1000))
    return Outcome("ok", "ok")


def _execute_neo(case: dict, scratch: Path) -> Outcome:
    (scratch / "k.neo").write_bytes(case["data"])
    outcome, _ = _cli(["disasm", "k.neo"])
    if outcome.signature == "exit 0" and case.get("run"):
        outcome, _ = _cli(["run", "k.neo", "--max-instructions",
                           str(case.get("max_instructions", 1000))])
    return outcome


def _execute_api(case: dict) -> Outcome:
    import neuronemu

    program = neuronemu.assemble(case["source"], "api.s")
    inputs = case["inputs"]
    if isinstance(inputs, dict):
        inputs = {k: (make_array(v) if isinstance(v, tuple) else v) for k, v in inputs.items()}
    kwargs = dict(case.get("kwargs", {}))
    kwargs.setdefault("max_instructions", 1000)
    neuronemu.run(program, inputs=inputs, **kwargs)
    return Outcome("ok", "ok")


def _execute_cli(case: dict, scratch: Path) -> Outcome:
    files = dict(case["files"])
    if "k.s" in files:
        import neuronemu
        from neuronemu import encoding

        files["k.neo"] = encoding.encode(neuronemu.assemble(files["k.s"].decode(), "k.s"))
    _in_scratch(scratch, files)
    return _cli(case["argv"])[0]


def _selftest(case: dict) -> Outcome:
    """Misbehave on purpose, so that the tests can check the classification."""
    action = case["action"]
    if action == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "sleep":
        import time

        time.sleep(case.get("seconds", 3600))
    if action == "raise":
        raise KeyError("selftest")
    if action == "unlocated":
        from neuronemu.errors import AsmError

        raise AsmError("no location")
    if action == "print":
        os.write(1, b"noise on stdout that must not reach the protocol\n")
        print("more noise")
    return Outcome("ok", "ok")


def execute(case: dict, scratch: Path) -> Outcome:
    """Run one case in this process (``scratch``: an empty directory it may use)."""
    cwd = os.getcwd()
    os.chdir(scratch)
    try:
        mode = case["mode"]
        if mode == "asm":
            return _execute_asm(case, scratch)
        if mode == "neo":
            return _execute_neo(case, scratch)
        if mode == "api":
            return _execute_api(case)
        if mode == "cli":
            return _execute_cli(case, scratch)
        if mode == "selftest":
            return _selftest(case)
        raise ValueError(f"unknown mode {mode!r}")
    except Exception as e:  # noqa: BLE001 - classifying every exception is the point
        return classify_exception(e)
    finally:
        os.chdir(cwd)


# ---------------------------------------------------------------------------------------------
# worker processes
# ---------------------------------------------------------------------------------------------

def _send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _read_exact(stream, n: int) -> bytes | None:
    chunks, need = [], n
    while need:
        chunk = stream.read(need)
        if not chunk:
            return None
        chunks.append(chunk)
        need -= len(chunk)
    return b"".join(chunks)


def _worker_main(scratch: Path) -> None:
    """Answer ``(index, case)`` frames on stdin with ``(index, Outcome)`` frames until stdin
    closes; ``scratch`` is an empty directory owned by the parent (which removes it even when
    this process dies of a signal)."""
    import resource
    import warnings

    warnings.simplefilter("ignore")
    try:
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    except (ValueError, OSError):
        pass
    # the protocol gets its own copy of stdout; fd 1 itself goes to /dev/null so that nothing
    # the code under test prints can corrupt a frame
    reply = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    requests = sys.stdin.buffer
    import neuronemu  # noqa: F401 - import once, before the first case's clock starts

    while True:
        header = _read_exact(requests, 8)
        if header is None:
            return
        index, case = pickle.loads(_read_exact(requests, struct.unpack("<Q", header)[0]))
        _in_scratch(scratch, {})
        outcome = execute(case, scratch)
        # a plain tuple: the parent need not import this module under the same name
        _send(reply, (index, (outcome.kind, outcome.signature, outcome.detail)))


class Worker:
    """One child process executing cases; restarted after a crash or a timeout."""

    def __init__(self, timeout: float = CASE_TIMEOUT, stderr=subprocess.DEVNULL):
        self.timeout = timeout
        self.stderr = stderr
        self.process: subprocess.Popen | None = None
        self.scratch: str | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.scratch = tempfile.mkdtemp(prefix="neuronemu-fuzz-")
        return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker",
                                 self.scratch], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.stderr, env=env)

    def _forget(self) -> None:
        """The process has ended: drop it and the files its cases left."""
        self.process = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def run(self, case: dict, timeout: float | None = None) -> Outcome:
        """Execute ``case`` in the worker; a dead worker or a timeout is the case's outcome."""
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        try:
            _send(process.stdin, (0, case))
        except (BrokenPipeError, OSError):
            return self._died("worker died before the case was sent")
        limit = self.timeout if timeout is None else timeout
        ready, _, _ = select.select([process.stdout], [], [], limit)
        if not ready:
            self.kill()
            return Outcome("hang", f"hang (> {limit:.0f} s)", "")
        header = _read_exact(process.stdout, 8)
        body = header and _read_exact(process.stdout, struct.unpack("<Q", header)[0])
        if not body:
            return self._died("")
        return Outcome(*pickle.loads(body)[1])

    def _died(self, detail: str) -> Outcome:
        code = self.process.wait()
        self._forget()
        self.restarts += 1
        if code < 0:
            name = signal.Signals(-code).name
            return Outcome("signal", f"signal {name}", detail)
        return Outcome("signal", f"worker exited with code {code}", detail)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()     # our own child, by its handle
            self.process.wait()
            self._forget()
            self.restarts += 1

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self._forget()


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _worker_main(Path(sys.argv[2]))
