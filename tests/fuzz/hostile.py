"""Hostile-input replay (issue 30): each class re-creates one way the tool was attacked -- a device,
FIFO, symlink or read-only file as an output, a pipe as an input, nested ``.rept``, Ctrl-C and
SIGTERM mid-run and mid-write, damaged and read-only compiled-code caches, uploads to the grader
that are not plain UTF-8, a bf16 ``.npy``, MPI processes that disagree -- and checks that the tool
reacts as the issue expects: a clear message, a documented exit code, nothing replaced or left
half-written, no hang.

Each class is a function ``(scratch directory, random.Random) -> Verdict``; the random source
varies what a round does (where a signal lands, which byte is damaged, sizes), so repeated rounds
are different cases. Every case runs ``python -m neuronemu`` (or pytest, or mpiexec) in a child
process with a timeout: a hang is a failure, never the end of the replay. Destructive cases work
on device nodes, FIFOs and mounts made inside the scratch directory (a private mount namespace
for read-only mounts), never on the machine's own /dev.

``python -m tools.fuzz`` runs every class ``--hostile-rounds`` times after its generated cases and
reports per class; tests/fuzz/test_hostile.py runs each class once.
"""

from __future__ import annotations

import codecs
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 4, 5, 6, 130}     # README's exit-code table
HANG_SECONDS = 180.0


@dataclass(frozen=True)
class Verdict:
    ok: bool
    detail: str = ""
    skipped: str = ""             # why the class cannot run here (then ok is True)


def passed(detail: str = "") -> Verdict:
    return Verdict(True, detail)


def failed(detail: str) -> Verdict:
    return Verdict(False, detail)


def skipped(why: str) -> Verdict:
    return Verdict(True, skipped=why)


@dataclass
class Ran:
    code: int | None              # None: it hung (killed after the timeout)
    out: str
    err: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.code is None


def _env(extra: dict | None = None) -> dict:
    """The child's environment: ours, with this checkout first on the path; a None value in
    ``extra`` removes that variable."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, **(extra or {})}
    return {k: v for k, v in env.items() if v is not None}


def _as_from_a_terminal() -> None:
    """In the child: SIGINT as a terminal gives it. A process started in the background by a
    non-interactive shell (CI, a job runner) inherits SIGINT ignored, and so would every case,
    which would then test nothing about Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def launch(argv: list[str], cwd: Path, env: dict | None = None, stdin=None) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, env=_env(env), stdin=stdin or subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True,
                            preexec_fn=_as_from_a_terminal)  # noqa: PLW1509


def finish(process: subprocess.Popen, timeout: float = HANG_SECONDS) -> Ran:
    start = time.monotonic()
    try:
        out, err = process.communicate(timeout=timeout)
        return Ran(process.returncode, out, err, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return Ran(None, out, err, time.monotonic() - start)


def neuronemu(args: list[str], cwd: Path, timeout: float = HANG_SECONDS, env=None,
              stdin=None) -> Ran:
    return finish(launch([sys.executable, "-m", "neuronemu", *args], cwd, env, stdin), timeout)


def clean(ran: Ran, codes: set[int]) -> str:
    """'' when the run ended with one of ``codes`` and no traceback, else what went wrong."""
    if ran.hung:
        return f"hang: no exit within {ran.seconds:.0f} s"
    if ran.code == -signal.SIGINT and 130 in codes:
        return ""   # ended by re-raising SIGINT: what a shell reports as 130 (README)
    if ran.code < 0:
        return f"killed by signal {signal.Signals(-ran.code).name}\n{ran.err[-800:]}"
    if "Traceback (most recent call last)" in ran.err:
        return f"traceback (exit {ran.code})\n{ran.err[-1500:]}"
    if ran.code not in codes:
        return f"exit {ran.code}, expected {sorted(codes)}\n{ran.err[-800:]}"
    return ""


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


# ------------------------------------------------------------------------------ kernels

ADD = """\
.hbm a float32[128, {n}] input
.hbm c float32[128, {n}] output
.sbuf t float32[128, {n}]
    dma.copy t, a, queue=0
    vector.tensor_scalar t, t, op0=add, operand0=1.0
    dma.copy c, t, queue=1
"""

BIG_OUTPUT = """\
.hbm a float32[128, 64] input
.hbm c float32[{rows}, 4096] output init=zeros
.sbuf t float32[128, 64]
    dma.copy t, a, queue=0
    dma.copy c[0:128, 0:64], t, queue=1
"""

MEMSET = """\
.hbm c float32[128, 64] output
.sbuf t float32[128, 64]
    vector.memset t, value=1.5
    dma.copy c, t, queue=0
"""
MEMSET_UNIT = "elementwise__memset_f32"   # its compute kernel (an fp32 window: the narrow one)

ENDLESS = """\
.hbm c float32[128, 64] output
.sbuf t float32[128, 64]
loop:
    vector.tensor_scalar t, t, op0=add, operand0=1.0
    ctrl.jmp loop
"""


def _kernel(scratch: Path, text: str, name: str = "k.s") -> Path:
    path = scratch / name
    path.write_text(text)
    return path


def _npy_ok(path: Path, shape) -> bool:
    try:
        return np.load(path).shape == tuple(shape)
    except Exception:  # noqa: BLE001 - any unreadable file is "not written"
        return False


# ------------------------------------------------------------------------------ item 1

def output_device(scratch: Path, rng: random.Random) -> Verdict:
    """--output into a character device (a private null or full device node): the node must
    still be a device afterwards, and the run says so clearly if it refuses."""
    if not _is_root():
        return skipped("making device nodes needs root")
    name, numbers = rng.choice([("null", (1, 3)), ("full", (1, 7))])
    node = scratch / name
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(*numbers))
    except OSError as error:
        return skipped(f"mknod: {error.strerror}")
    kernel = _kernel(scratch, ADD.format(n=64))
    command = rng.choice(["run", "asm"])
    args = (["run", str(kernel), "--output", f"c={node}"] if command == "run"
            else ["asm", str(kernel), "-o", str(node)])
    ran = neuronemu(args, scratch)
    problem = clean(ran, {0, 4})
    if not stat.S_ISCHR(os.lstat(node).st_mode):
        return failed(f"{command} into /dev/{name}: the device node was replaced by a regular "
                      f"file (exit {ran.code})")
    if name == "full" and ran.code == 0:
        return failed("writing to a full device reported success (exit 0)")
    return failed(problem) if problem else passed(f"{command} -> {name}: exit {ran.code}")


def output_fifo(scratch: Path, rng: random.Random) -> Verdict:
    """--output into a FIFO with a reader: the FIFO stays a FIFO and the reader gets the file
    (or the run refuses clearly); nobody waits forever."""
    fifo = scratch / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:   # opens when the writer opens (or the unblocking below)
            got.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    kernel = _kernel(scratch, ADD.format(n=rng.choice([64, 512])))
    ran = neuronemu(["run", str(kernel), "--output", f"c={fifo}"], scratch, timeout=120)
    if reader.is_alive():   # the run never opened the FIFO: unblock our reader
        with open(fifo, "wb"):
            pass
        reader.join(10)
    problem = clean(ran, {0, 4})
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        return failed(f"the FIFO was replaced by a regular file (exit {ran.code})")
    if problem:
        return failed(problem)
    if ran.code == 0 and not (got and got[0].startswith(b"\x93NUMPY")):
        return failed("exit 0 but the FIFO's reader received no .npy")
    return passed(f"exit {ran.code}")


def output_symlink(scratch: Path, rng: random.Random) -> Verdict:
    """--output through a symlink: the link stays, its target gets the array."""
    target = scratch / "real.npy"
    np.save(target, np.zeros(3, np.float32))
    link = scratch / "link.npy"
    link.symlink_to(target.name if rng.random() < 0.5 else target)
    ran = neuronemu(["run", str(_kernel(scratch, ADD.format(n=64))), "--output", f"c={link}"],
                    scratch)
    problem = clean(ran, {0})
    if problem:
        return failed(problem)
    if not link.is_symlink():
        return failed("the symlink was replaced by a regular file instead of written through")
    if not _npy_ok(target, (128, 64)):
        return failed("the symlink's target does not hold the output")
    return passed()


def output_read_only(scratch: Path, rng: random.Random) -> Verdict:
    """--output onto a file the user made read-only: refused (exit 4) and left as it was."""
    old = scratch / "keep.npy"
    np.save(old, np.arange(5, dtype=np.float32))
    before = old.read_bytes()
    old.chmod(0o444)
    ran = neuronemu(["run", str(_kernel(scratch, ADD.format(n=64))), "--output", f"c={old}"],
                    scratch)
    problem = clean(ran, {0, 4})
    if old.read_bytes() != before or stat.S_IMODE(old.stat().st_mode) != 0o444:
        return failed(f"a read-only file was replaced (exit {ran.code})")
    if problem:
        return failed(problem)
    if ran.code == 0:
        return failed("exit 0 although the read-only output was not written")
    return passed()


# ------------------------------------------------------------------------------ item 2

def golden_empty(scratch: Path, rng: random.Random) -> Verdict:
    """A suite whose golden corpus holds no runs fails instead of passing "0 runs compared"."""
    tests = scratch / "tests"
    (tests / "golden").mkdir(parents=True)
    for name in ("conftest.py", "golden_digest.py"):
        shutil.copy(REPO / "tests" / name, tests / name)
    (tests / "golden" / "suite.json").write_text(json.dumps({"schema": 1, "runs": {}}))
    (tests / "test_k.py").write_text(
        "import numpy as np, neuronemu\n"
        f"K = {ADD.format(n=64)!r}\n"
        "def test_k():\n"
        "    r = neuronemu.run(neuronemu.assemble(K, 'k.s'),"
        " inputs={'a': np.ones((128, 64), np.float32)})\n"
        "    assert r.outputs['c'][0, 0] == 2\n")
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), str(tests)])}
    ran = finish(launch([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         str(tests)], scratch, env))
    if ran.hung:
        return failed("pytest hung")
    if ran.code == 0:
        return failed("a session with an empty golden corpus passed")
    return passed(f"exit {ran.code}")


# ------------------------------------------------------------------------------ items 3, 8

def _signal_mid_run(scratch: Path, rng: random.Random, sig: int, args: list[str],
                    delay: float) -> Ran:
    process = launch([sys.executable, "-m", "neuronemu", *args], scratch)
    time.sleep(delay)
    if process.poll() is None:
        os.killpg(process.pid, sig)
    return finish(process)


def sigint_run(scratch: Path, rng: random.Random) -> Verdict:
    """Ctrl-C during an endless run: exit 130 with where it was, promptly."""
    kernel = _kernel(scratch, ENDLESS)
    ran = _signal_mid_run(scratch, rng, signal.SIGINT, ["run", str(kernel), "--timeout", "0"],
                          delay=rng.uniform(6.0, 14.0))   # past start-up: mid-run
    problem = clean(ran, {130})
    if problem:
        return failed(problem)
    if "interrupted" not in ran.err:
        return failed(f"the interruption is not reported:\n{ran.err[-400:]}")
    # past the compile (a cold cache can take the whole delay), the run says where it was
    if "compiling" not in ran.err and "k.s:" not in ran.err:
        return failed(f"the interruption does not say where the run was:\n{ran.err[-400:]}")
    return passed()


def sigint_grade(scratch: Path, rng: random.Random) -> Verdict:
    """Ctrl-C while grading stops the grading: exit 130, no results.json."""
    results = scratch / "results.json"
    upload = _kernel(scratch, ENDLESS.replace("128, 64", "128, N").replace(
        ".hbm c", ".const N = 64\n.hbm a float32[128, N] input\n.hbm b float32[128, N] input\n"
        ".hbm c"))
    ran = _signal_mid_run(scratch, rng, signal.SIGINT,
                          ["grade", "1", str(upload), "--gradescope", str(results)],
                          delay=rng.uniform(3.0, 6.0))
    problem = clean(ran, {130})
    if problem:
        return failed(problem)
    if results.exists():
        return failed("results.json was written after Ctrl-C")
    return passed()


def sigterm_write(scratch: Path, rng: random.Random) -> Verdict:
    """SIGTERM while outputs are written: no hidden partial files, destinations intact."""
    out = scratch / "out"
    out.mkdir()
    kept = out / "c.npy"
    np.save(kept, np.zeros(4, np.float32))
    before = kept.read_bytes()
    rows = rng.choice([8192, 16384])           # 128 or 256 MiB to write
    kernel = _kernel(scratch, BIG_OUTPUT.format(rows=rows))
    ran = _signal_mid_run(scratch, rng, signal.SIGTERM,
                          ["run", str(kernel), "--output-dir", str(out)],
                          delay=rng.uniform(1.5, 6.0))
    if ran.hung:
        return failed("hang after SIGTERM")
    leftovers = [p.name for p in out.iterdir() if p.name != "c.npy"]
    if leftovers:
        return failed(f"partial files left after SIGTERM: {leftovers}")
    if kept.read_bytes() != before and not _npy_ok(kept, (rows, 4096)):
        return failed("the destination holds a half-written file")
    if "Traceback (most recent call last)" in ran.err:
        return failed(f"traceback on SIGTERM\n{ran.err[-800:]}")
    return passed(f"exit {ran.code}")


# ------------------------------------------------------------------------------ item 7

def nested_rept(scratch: Path, rng: random.Random) -> Verdict:
    """Two nested .rept 1000000 with an empty body: a located error, quickly, for check, run
    and grade alike."""
    count = rng.choice([1000000, 999999, 500000])
    text = f".rept {count}\n.rept {count}\n.endr\n.endr\n"
    kernel = _kernel(scratch, text)
    command = rng.choice(["check", "run"])
    ran = neuronemu([command, str(kernel)], scratch, timeout=60)
    problem = clean(ran, {3})
    if problem:
        return failed(f"{command}: {problem}")
    if "k.s:" not in ran.err:
        return failed(f"{command}: the error is not located:\n{ran.err[-400:]}")
    return passed(f"{command}: {ran.seconds:.1f} s")


# ------------------------------------------------------------------------------ item 9

def endless_progress(scratch: Path, rng: random.Random) -> Verdict:
    """An endless compute loop says it is still running well before its time limit."""
    kernel = _kernel(scratch, ENDLESS)
    ran = neuronemu(["run", str(kernel), "--timeout", "12"], scratch, timeout=120)
    problem = clean(ran, {1})
    if problem:
        return failed(problem)
    if "still running" not in ran.err:
        return failed(f"no progress message before the 12 s limit:\n{ran.err[-400:]}")
    return passed()


# ------------------------------------------------------------------------------ items 10, 11

def _memset_folder() -> str:
    """The memset kernel's folder in this version's cache (relative to the cache)."""
    from neuronemu.compiled import cache

    return cache.unit_folder("neuronemu.exec.wrappers.elementwise")


def _warm_cache_copy(to: Path) -> Path | None:
    from neuronemu.compiled import cache

    source = cache.cache_dir()
    if not list(source.glob(f"{_memset_folder()}/*.{MEMSET_UNIT}-*.nbi")):
        return None
    shutil.copytree(source, to)
    return to


def damaged_cache(scratch: Path, rng: random.Random) -> Verdict:
    """A damaged compiled-code file: reported, compiled again, the run succeeds."""
    from neuronemu.compiled import cache

    copy = _warm_cache_copy(scratch / "numba" / "neuronemu" / cache.toolchain_key())
    if copy is None:
        return skipped("this version's cache is cold (run `neuronemu warm`)")
    files = sorted(copy.glob(f"{_memset_folder()}/*.{MEMSET_UNIT}-*.nb[ic]"))
    victim = rng.choice(files)
    data = bytearray(victim.read_bytes())
    how = rng.choice(["flip", "truncate", "zero"])
    if how == "flip":
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == "truncate":
        data = data[:rng.randrange(len(data))]
    else:
        data = bytearray(len(data))
    victim.write_bytes(bytes(data))
    kernel = _kernel(scratch, MEMSET)
    ran = neuronemu(["run", str(kernel)], scratch, env={"NUMBA_CACHE_DIR": str(scratch / "numba")},
                    timeout=600)
    problem = clean(ran, {0})
    if problem:
        return failed(f"{how} {victim.name}: {problem}")
    if "damaged" not in ran.err:
        return failed(f"{how} {victim.name}: no notice of the damaged file")
    return passed(f"{how} {victim.suffix}")


def _read_only_argv(folder: Path, argv: list[str]) -> list[str] | None:
    if not _is_root():
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return argv
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-m", "true"], capture_output=True, check=False).returncode:
        return None
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(folder), *argv]


def read_only_cache(scratch: Path, rng: random.Random) -> Verdict:
    """A read-only cache, warm or empty: used as it is or replaced by a temporary directory with
    a notice; never a traceback, never code compiled into the package."""
    from neuronemu.compiled import cache

    home = scratch / "home-cache"
    warm = rng.random() < 0.5
    if warm:
        if _warm_cache_copy(home / "neuronemu" / "numba" / cache.toolchain_key()) is None:
            return skipped("this version's cache is cold (run `neuronemu warm`)")
    else:
        home.mkdir()
        if _warm_cache_copy(scratch / "tmp" / f"neuronemu-{os.getuid()}" / "numba"
                            / cache.toolchain_key()) is None:
            return skipped("this version's cache is cold (run `neuronemu warm`)")
    (scratch / "tmp").mkdir(exist_ok=True)
    kernel = _kernel(scratch, MEMSET)
    argv = _read_only_argv(home, [sys.executable, "-m", "neuronemu", "run", str(kernel)])
    if argv is None:
        return skipped("root without mount namespaces: cannot make a read-only cache")
    ran = finish(launch(argv, scratch, {"XDG_CACHE_HOME": str(home), "NUMBA_CACHE_DIR": None,
                                        "TMPDIR": str(scratch / "tmp")}), 600)
    problem = clean(ran, {0})
    if problem:
        return failed(f"{'warm' if warm else 'empty'} read-only cache: {problem}")
    if "compiling" in ran.err:
        return failed(f"{'warm' if warm else 'empty'} read-only cache: compiled again")
    if not warm and "compiled code is cached in" not in ran.err:
        return failed("empty read-only cache: no notice of the temporary directory")
    return passed("warm" if warm else "empty")


# ------------------------------------------------------------------------------ item 12

def _reference() -> str:
    return (REPO / "programs" / "labs" / "01-vector-add" / "solution" / "solution.s").read_text()


def grade_upload(scratch: Path, rng: random.Random) -> Verdict:
    """An upload saved as UTF-16, with a byte-order mark, or in Latin-1: graded (exit 0,
    results.json with a score), the marked reference in full."""
    how = rng.choice(["utf-16", "utf-8-bom", "latin-1"])
    text = _reference()
    if how == "utf-16":
        data = codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    elif how == "utf-8-bom":
        data = codecs.BOM_UTF8 + text.encode()
    else:
        data = ("# Andr\u00e9\n" + text).encode("latin-1")
    upload = scratch / "upload.s"
    upload.write_bytes(data)
    results = scratch / "results.json"
    ran = neuronemu(["grade", "1", str(upload), "--seeds", "1", "--gradescope", str(results)],
                    scratch, timeout=600)
    problem = clean(ran, {0})
    if problem:
        return failed(f"{how}: {problem}")
    if not results.exists():
        return failed(f"{how}: no results.json")
    score = json.loads(results.read_text())["score"]
    if how != "latin-1" and score != 100:
        return failed(f"{how}: the reference scored {score}")
    return passed(f"{how}: score {score}")


def grade_plot_missing_dir(scratch: Path, rng: random.Random) -> Verdict:
    """--plot into a missing directory: refused before grading, exit 4 (or 2 without
    matplotlib), no traceback."""
    upload = scratch / "upload.s"
    upload.write_text(_reference())
    ran = neuronemu(["grade", "1", str(upload), "--plot", str(scratch / "no" / "such" / "p.png")],
                    scratch)
    problem = clean(ran, {2, 4})
    if problem:
        return failed(problem)
    if "grading" in ran.err:
        return failed("it graded before refusing the --plot destination")
    return passed(f"exit {ran.code}")


# ------------------------------------------------------------------------------ items 6, 13

def pipe_input(scratch: Path, rng: random.Random) -> Verdict:
    """--input from a pipe (/dev/stdin): read, not refused as empty."""
    data = scratch / "a.npy"
    np.save(data, np.full((128, 64), 2.0, np.float32))
    kernel = _kernel(scratch, ADD.format(n=64))
    line = (f'cat "{data}" | "{sys.executable}" -m neuronemu run "{kernel}" --input a=/dev/stdin '
            f'--output c="{scratch / "c.npy"}"')
    ran = finish(launch(["sh", "-c", line], scratch))
    problem = clean(ran, {0})
    if problem:
        return failed(problem)
    if not _npy_ok(scratch / "c.npy", (128, 64)) or np.load(scratch / "c.npy")[0, 0] != 3.0:
        return failed("the output is not a + 1 of the piped input")
    return passed()


def asm_topology_target(scratch: Path, rng: random.Random) -> Verdict:
    """asm --target trn3 of a kernel whose .topology is a trn2 system: refused (exit 3)."""
    kernel = _kernel(scratch, ".topology trn2.48xlarge\n" + ADD.format(n=64))
    ran = neuronemu(["asm", str(kernel), "--target", "trn3", "-o", str(scratch / "k.neo")],
                    scratch)
    problem = clean(ran, {3})
    return failed(problem) if problem else passed()


def mpi_mismatch(scratch: Path, rng: random.Random) -> Verdict:
    """MPI processes given different --seed values or missing files: a clear error on every
    process, no hang."""
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        return skipped("mpiexec is not installed")
    program = "collectives/all_reduce"
    head = [sys.executable, "-m", "neuronemu", "run", program, "--topology", "trn2.48xlarge"]
    if rng.random() < 0.5:
        argv = [mpiexec, "-n", "1", *head, "--seed", "1", ":", "-n", "1", *head, "--seed", "2"]
        what = "different seeds"
    else:
        # a missing --output-dir is made (as mkdir -p would); one under a regular file cannot be
        (scratch / "a-file").write_text("")
        argv = [mpiexec, "-n", "1", *head, "--output-dir", str(scratch), ":", "-n", "1", *head,
                "--output-dir", str(scratch / "a-file" / "dir")]
        what = "an output directory one process cannot make"
    ran = finish(launch(argv, scratch), timeout=120)
    if ran.hung:
        return failed(f"{what}: hang")
    if ran.code == 0:
        return failed(f"{what}: exit 0, the mismatch went unnoticed")
    if "Traceback (most recent call last)" in ran.err:
        return failed(f"{what}: traceback\n{ran.err[-800:]}")
    return passed(f"{what}: exit {ran.code}")


# ------------------------------------------------------------------------------ items 14-18

def fuzz_time_budget(scratch: Path, rng: random.Random) -> Verdict:
    """python -m tools.fuzz --time-budget ends with its summary."""
    ran = finish(launch([sys.executable, "-m", "tools.fuzz", "--time-budget", "2",
                         "--cases", "1000000", "--modes", "api", "--progress", "0",
                         "--hostile-rounds", "0", "--no-minimize", "--out", str(scratch)],
                        REPO), 300)
    if ran.hung or ran.code not in (0, 1):
        return failed(f"exit {ran.code}\n{ran.err[-800:]}")
    if not (scratch / "summary.json").exists():
        return failed("no summary written")
    return passed()


def warning_then_fault(scratch: Path, rng: random.Random) -> Verdict:
    """An assembler warning (integer division) is kept when the run then faults."""
    text = (".hbm c float32[128, 64] output\n.sbuf t float32[128, 64]\n"
            "    vector.tensor_scalar t, t, op0=add, operand0=1/3\n"
            "    ctrl.mov r1, 200\n    dma.copy c[r1*128 : r1*128 + 128, :], t, queue=0\n")
    as_json = rng.random() < 0.5
    ran = neuronemu(["run", str(_kernel(scratch, text))] + (["--json"] if as_json else []),
                    scratch)
    problem = clean(ran, {1, 3})
    if problem:
        return failed(problem)
    if "1/3" not in ran.err and "truncat" not in ran.err:
        return failed(f"the division warning vanished:\n{ran.err[-400:]}")
    if as_json and not json.loads(ran.out).get("warnings"):
        return failed("--json lost the warning")
    return passed()


def bf16_npy(scratch: Path, rng: random.Random) -> Verdict:
    """A bf16 array saved with np.save (|V2): refused saying why and what to save instead."""
    import ml_dtypes

    path = scratch / "a.npy"
    np.save(path, np.ones((128, 64), ml_dtypes.bfloat16))
    kernel = _kernel(scratch, ADD.format(n=64).replace("float32[128, 64] input",
                                                       "bfloat16[128, 64] input"))
    ran = neuronemu(["run", str(kernel), "--input", f"a={path}"], scratch)
    problem = clean(ran, {4})
    if problem:
        return failed(problem)
    if "float32" not in ran.err:
        return failed(f"the refusal does not say to save float32:\n{ran.err[-400:]}")
    return passed()


def pytest_kernel_error(scratch: Path, rng: random.Random) -> Verdict:
    """A kernel error inside a pytest test: the located message comes first, without pages of
    this package's own traceback."""
    (scratch / "bad.s").write_text(".sbuf t float32[4, 4]\n    vector.memset t, value=\n")
    (scratch / "test_bad.py").write_text(
        "def test_bad(neuronemu_run):\n    neuronemu_run('bad.s')\n")
    ran = finish(launch([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "-p", "neuronemu.pytest_plugin", str(scratch / "test_bad.py")],
                        scratch), 300)
    if ran.hung or ran.code != 1:
        return failed(f"exit {ran.code}\n{ran.out[-800:]}")
    located = ran.out.find("bad.s:2:")
    internal = sum(1 for line in ran.out.splitlines() if "neuronemu/" in line
                   and ".py:" in line)
    if located < 0:
        return failed("the located message is missing")
    if internal > 10:
        return failed(f"{internal} lines of neuronemu's own frames before/around the message")
    return passed()


def isa_lookup(scratch: Path, rng: random.Random) -> Verdict:
    """`isa silu` shows the activation functions; op0=mul suggests multiply."""
    ran = neuronemu(["isa", rng.choice(["silu", "gelu", "activation"])], scratch)
    problem = clean(ran, {0})
    if problem or "relu" not in ran.out:
        return failed(problem or "the activation functions are not listed")
    text = ".sbuf t float32[4, 4]\n    vector.tensor_scalar t, t, op0=mul, operand0=2.0\n"
    ran = neuronemu(["check", str(_kernel(scratch, text))], scratch)
    if clean(ran, {3}) or "did you mean 'multiply'" not in ran.err:
        return failed(f"op0=mul: {ran.err[-300:]}")
    return passed()


def unwritten_output(scratch: Path, rng: random.Random) -> Verdict:
    """An output no instruction writes: a located warning naming the tensor."""
    text = ".hbm a float32[128, 64] input\n.hbm c float32[128, 64] output\n" \
           ".sbuf t float32[128, 64]\n    dma.copy t, a, queue=0\n"
    ran = neuronemu(["run", str(_kernel(scratch, text))], scratch)
    problem = clean(ran, {0})
    if problem:
        return failed(problem)
    if "warning" not in ran.err or "'c'" not in ran.err:
        return failed(f"no warning names the unwritten output 'c':\n{ran.err[-400:]}")
    return passed()


# ------------------------------------------------------------------------------ registry

# class name -> (issue 30 item, function)
CLASSES: dict[str, tuple[str, Callable[[Path, random.Random], Verdict]]] = {
    "output-device": ("1", output_device),
    "output-fifo": ("1", output_fifo),
    "output-symlink": ("1", output_symlink),
    "output-read-only": ("1", output_read_only),
    "golden-empty": ("2", golden_empty),
    "sigterm-write": ("3", sigterm_write),
    "unwritten-output": ("5", unwritten_output),
    "mpi-mismatch": ("6", mpi_mismatch),
    "nested-rept": ("7", nested_rept),
    "sigint-run": ("8", sigint_run),
    "sigint-grade": ("8", sigint_grade),
    "endless-progress": ("9", endless_progress),
    "damaged-cache": ("10", damaged_cache),
    "read-only-cache": ("11", read_only_cache),
    "grade-upload": ("12", grade_upload),
    "grade-plot-missing-dir": ("12", grade_plot_missing_dir),
    "pipe-input": ("13", pipe_input),
    "asm-topology-target": ("13", asm_topology_target),
    "fuzz-time-budget": ("14", fuzz_time_budget),
    "warning-then-fault": ("15", warning_then_fault),
    "bf16-npy": ("16", bf16_npy),
    "pytest-kernel-error": ("17", pytest_kernel_error),
    "isa-lookup": ("18", isa_lookup),
}


def replay(name: str, seed: int, scratch_root: Path | None = None) -> Verdict:
    """Run one case of class ``name`` in a fresh scratch directory."""
    import tempfile

    _, function = CLASSES[name]
    with tempfile.TemporaryDirectory(dir=scratch_root, prefix=f"hostile-{name}-") as scratch:
        try:
            return function(Path(scratch), random.Random(f"{name}:{seed}"))
        except Exception as error:  # noqa: BLE001 - a broken case is a failure to report
            import traceback

            return failed("the case itself raised:\n" + "".join(
                traceback.format_exception(type(error), error, error.__traceback__))[-1500:])
        finally:
            for path in Path(scratch).rglob("*"):   # read-only files and dirs made by a case
                if not path.is_symlink():
                    try:
                        path.chmod(0o700)
                    except OSError:
                        pass
