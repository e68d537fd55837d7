"""Engine speed, measured as whole phases against the "Must reach" table of issue 13.

Usage: python -m tools.bench [--json] [--repeat N] [--quick] [--skip-cold] [--only NAME,...]

Measurements (NAME for --only; the figure each reports; the issue's bound):
  first_run_cold   first_run_cold_s: a whole `python -m neuronemu run vector_add.s` process with
                   an empty cache (fresh NUMBA_CACHE_DIR), with its compile_seconds and peak RSS.
                   <= 30 s. Takes ~30 s; --skip-cold leaves it out.
  second_checkout  second_checkout_extra_s: a `git clone` of HEAD runs vector_add (its first run
                   in the clone, whole process, with the cache the work tree's runs built) minus
                   a warm run of the same command in this checkout. <= 2 s. Only committed HEAD is
                   cloned; if the work tree's compiled sources differ from HEAD (uncommitted engine
                   edits), the reference run is made in a second clone instead, and it says so.
  small_tile_loop  small_tile_loop_ips: instructions / s of a whole in-process neuronemu.run()
                   (set-up, inputs, run, timing report, critical path; not assembly) of a [128, 64]
                   fp32 Vector/Scalar loop, warm, best of --repeat. >= 500 k/s. The loop-only
                   figure (Result.steps / Result.wall_seconds) is printed beside it.
  ctrl_loop        ctrl_loop_ips: the same for a loop of ctrl instructions only. >= 5 M/s.
  matmul_tiled     matmul_tiled_ratio: whole neuronemu.run() of programs/examples/matmul_tiled.s
                   (512x512x512 bf16) / numpy float32 lhsT.T @ rhs on the same inputs, BLAS on one
                   thread. <= 2.0x.
  warm_cli         warm_cli_vector_add_s: whole `python -m neuronemu run vector_add.s`, warm,
                   median of --repeat, with peak RSS and the phases of one warm process
                   (interpreter start/exit, import, assemble, run, of which loop, report) of one
                   more warm process. <= 1 s.
  explicit_replay  explicit_replay_us_per_instr: whole run() of programs/timing/explicit_sync.s
                   minus the same kernel with `.sync auto` (the difference is the race/deadlock
                   replay), per dynamic instruction. <= 10 us. Once the replay is well under the
                   runs' noise this difference is noise too, so the details line also gives the
                   replay itself (explicit_replay_direct_us_per_instr: neuronemu.timing.explicit
                   .replay on that run's events, median CPU time of its thread).
  allreduce_144    allreduce_144_s, allreduce_144_rss_mib: whole CLI `neuronemu run
                   programs/collectives/all_reduce.s --topology trn3-ultraserver-gen2 --json`
                   (144 ranks), wall and the child's peak RSS, median of 3. <= 3 s, <= 1 GiB.
  nki_trace        nki_trace_ips: instructions / s of tracing an NKI kernel and assembling what it
                   made (neuronemu.nki.trace, then KernelTrace.assemble: the whole path from the
                   kernel's Python to lowered rows, not the run), for two matmuls written here in
                   the NKI tutorial's styles (a tile per K step; a ring of K tiles per row block),
                   M 1024, K 4096, N 4096 bf16, best of --repeat; the slower of the two. >= 50 k/s
                   (issue 25). Trace and assembly rates are printed beside it.
  kernels          every bundled program against numpy doing the same math (one thread):
                   assemble ms, whole run() ms, of which loop ms (Result.wall_seconds), numpy ms,
                   ratio (run / numpy). The collectives programs run on the 16 ranks of a
                   trn2.48xlarge and have no numpy equivalent.

Not measured here: `.ci/run` from a fresh clone (issue 13: <= 3 min); it takes minutes, so time
it by hand: `git clone <repo> /tmp/c && cd /tmp/c && time .ci/run`.

Whole-process figures run the child with the caller's environment (the cache it selects, BLAS
threads as the user has them) and PYTHONPATH set to this checkout; in-process figures run after
one warm-up run of each program, so no compile is counted; any that happens anyway is reported.
Speed is asserted only here, never in tests. The machine is shared: the load average at the start
and the end is printed with the figures.
"""

from __future__ import annotations

import os

# The numpy baselines must run BLAS on one thread (issue 13: "both one thread"); OpenBLAS reads
# these once, when numpy is first imported, so they are set before anything imports numpy. The
# caller's own environment is kept for the CLI children: they measure what a user gets.
_USER_ENV = dict(os.environ)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

import neuronemu
from neuronemu.program import Program

VECTOR_ADD = "programs/examples/vector_add.s"
MATMUL_TILED = ROOT / "programs/examples/matmul_tiled.s"
EXPLICIT_SYNC = ROOT / "programs/timing/explicit_sync.s"
ALL_REDUCE = "programs/collectives/all_reduce.s"
TOPOLOGY_144 = "trn3-ultraserver-gen2"

SMALL_TILE_LOOP = """\
# {iterations} iterations x 6 instructions on [128, 64] tiles
.sbuf a float32[128, 64]
.sbuf b float32[128, 64]
.sbuf c float32[128, 64]
.sbuf col float32[128, 1]
gpsimd.iota a, base=0, channel_multiplier=1, step=1
vector.memset b, value=0.5
ctrl.mov r0, 0
loop:
vector.tensor_tensor c, a, b, op=add
vector.tensor_scalar c, c, op0=multiply, operand0=0.5
scalar.activation c, c, func=relu
vector.tensor_reduce col, c, op=maximum
ctrl.add r0, r0, 1
ctrl.blt r0, {iterations}, loop
"""

CTRL_LOOP = """\
# {iterations} iterations x 3 ctrl instructions: the interpreter's fetch/dispatch/schedule floor
ctrl.mov r0, 0
ctrl.mov r1, 0
loop:
ctrl.add r1, r1, 3
ctrl.add r0, r0, 1
ctrl.blt r0, {iterations}, loop
"""

# The bounds: figure -> (label, unit, "<=" or ">=", bound).
MUSTS: dict[str, tuple[str, str, str, float]] = {
    "first_run_cold_s": ("first run of vector_add, empty cache", "s", "<=", 30.0),
    "second_checkout_extra_s": ("second checkout of HEAD, cache built", "s", "<=", 2.0),
    "small_tile_loop_ips": ("[128, 64] fp32 Vector/Scalar loop", "instr/s", ">=", 500_000),
    "ctrl_loop_ips": ("ctrl-only loop", "instr/s", ">=", 5_000_000),
    "matmul_tiled_ratio": ("matmul_tiled / numpy fp32, 1 thread", "x", "<=", 2.0),
    "warm_cli_vector_add_s": ("warm `neuronemu run vector_add`", "s", "<=", 1.0),
    "explicit_replay_us_per_instr": (".sync explicit replay", "us/instr", "<=", 10.0),
    "allreduce_144_s": ("144-chip all-reduce, whole CLI", "s", "<=", 3.0),
    "allreduce_144_rss_mib": ("144-chip all-reduce, peak RSS", "MiB", "<=", 1024.0),
    "nki_trace_ips": ("NKI trace + assemble (issue 25)", "instr/s", ">=", 50_000),
}

NAMES = ("first_run_cold", "second_checkout", "small_tile_loop", "ctrl_loop", "matmul_tiled",
         "warm_cli", "explicit_replay", "allreduce_144", "nki_trace", "kernels")


def note(message: str) -> None:
    """Progress on stderr, so stdout stays one table or one JSON document."""
    print(f"bench: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- child processes

@dataclass
class Process:
    """One finished child: wall time from spawn to reap, its own peak RSS, its output."""

    wall_s: float
    rss_mib: float
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)

    @property
    def compiled(self) -> bool:
        """Whether it compiled (neuronemu announces every compile with this line on stderr)."""
        return "neuronemu: compiling" in self.stderr


def child_env(pythonpath: Path = ROOT, cache_dir: Path | None = None) -> dict[str, str]:
    """The caller's environment (not the bench's pinned BLAS threads), importing neuronemu from
    ``pythonpath``, with the numba cache under ``cache_dir`` if given."""
    env = dict(_USER_ENV)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(pythonpath), env.get("PYTHONPATH"))
                                        if p)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


def run_process(argv: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> Process:
    """Run ``argv`` to completion. Reaped with wait4 so the peak RSS is this child's alone
    (RUSAGE_CHILDREN would be the maximum over every child so far). Output goes to files, not
    pipes: a large --json document would otherwise block the child on a full pipe."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env or child_env(), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode} in {cwd}:\n{stderr}")
    return Process(wall, usage.ru_maxrss / 1024, stdout, stderr)  # ru_maxrss is KiB on Linux


def neuronemu_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "neuronemu", *args]


def warm_runs(argv: list[str], n: int, cwd: Path = ROOT,
              env: dict[str, str] | None = None) -> list[Process]:
    """``n`` runs that compiled nothing. A run that compiled (the cache lacked an entry, or the
    engine's sources changed under the benchmark: the tree is shared) is not a warm figure, so
    it is run again, at most ``n`` times in all; a compile after that is counted and flagged."""
    runs: list[Process] = []
    retries = n
    while len(runs) < n:
        proc = run_process(argv, cwd, env)
        if proc.compiled and retries:
            retries -= 1
            note(f"a warm run compiled; running it again: {' '.join(argv[1:])}")
            continue
        runs.append(proc)
    return runs


# ---------------------------------------------------------------------------- in-process runs

def timed_run(program: Program, topology: str | None = None) -> tuple[float, Any]:
    """(seconds of the whole run() / run_spmd() call, its result)."""
    from neuronemu.api import run_spmd

    start = time.perf_counter()
    result = neuronemu.run(program) if topology is None else run_spmd(program, topology)
    return time.perf_counter() - start, result


def best_whole_run(program: Program, repeat: int, topology: str | None = None) -> dict:
    """One warm-up run (it may compile or load the cache), then the best of ``repeat`` whole
    calls; the loop-only time is the best ``wall_seconds`` of the same calls."""
    _, warm = timed_run(program, topology)
    wholes, loops, compiled = [], [], 0.0
    for _ in range(repeat):
        whole, result = timed_run(program, topology)
        wholes.append(whole)
        loops.append(result.wall_seconds)
        compiled += result.compile_seconds
    ranks = getattr(result, "ranks", None)
    steps = sum(r.steps for r in ranks) if ranks is not None else result.steps
    return {"steps": steps, "run_s": min(wholes), "loop_s": min(loops),
            "warmup_compile_s": warm.compile_seconds, "measured_compile_s": compiled,
            "result": result}


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def numpy_equivalents(tensors: dict[str, np.ndarray]) -> dict[str, Callable[[], object]]:
    """Plain numpy float32 computing what each bundled kernel computes (matmuls through BLAS:
    the fast baseline)."""
    f32 = {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()}

    def softmax():
        x = f32["x"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm():
        x = f32["x"]
        return (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)

    def double():  # the timing/ and dma/queues kernels: y = relu(2x) or 2x over x[2048, 512]
        return np.maximum(2 * f32["x"], 0)

    def weight_stream():
        x = f32["x"].transpose(1, 0, 2).reshape(2048, 64)
        return f32["w"].T @ x

    return {
        "dma/queues": lambda: 2 * f32["x"],
        "dma/weight_stream": weight_stream,
        "dma/weight_stream_compressed": weight_stream,
        "timing/single_buffer": double,
        "timing/double_buffer": double,
        "timing/explicit_sync": double,
        "examples/vector_add": lambda: f32["a"] + f32["b"],
        "examples/matmul_tile": lambda: f32["lhsT"].T @ f32["rhs"],
        "examples/matmul_tiled": lambda: f32["lhsT"].T @ f32["rhs"],
        "examples/softmax": softmax,
        "examples/layernorm": layernorm,
    }


def measure_kernel(name: str, path: Path, repeat: int) -> dict:
    """Assemble, whole run, loop-only and numpy times (ms) of one bundled program."""
    start = time.perf_counter()
    program = neuronemu.assemble_file(path)
    assemble_ms = (time.perf_counter() - start) * 1e3
    # the collectives programs are written for the 16 ranks of a trn2.48xlarge
    topology = "trn2.48xlarge" if name.startswith("collectives/") else None
    runs = best_whole_run(program, repeat, topology)
    row = {"kernel": name, "ranks": 16 if topology else 1, "instructions": runs["steps"],
           "assemble_ms": assemble_ms, "run_ms": runs["run_s"] * 1e3,
           "loop_ms": runs["loop_s"] * 1e3, "numpy_ms": None, "ratio": None,
           "loop_ratio": None, "measured_compile_s": runs["measured_compile_s"]}
    reference = None if topology else numpy_equivalents(runs["result"].tensors).get(name)
    if reference is not None:
        reference()  # first call pays page faults and BLAS buffer set-up
        numpy_ms = best_time(reference, max(repeat, 5)) * 1e3
        row.update(numpy_ms=numpy_ms, ratio=row["run_ms"] / numpy_ms,
                   loop_ratio=row["loop_ms"] / numpy_ms)
    return row


# ---------------------------------------------------------------------------- the measurements

def measure_first_run_cold() -> dict:
    with tempfile.TemporaryDirectory(prefix="neuronemu-cold-") as cache:
        note(f"first run with an empty cache ({cache}); ~30 s")
        proc = run_process(neuronemu_cli("run", VECTOR_ADD, "--json"),
                           env=child_env(cache_dir=Path(cache)))
    doc = proc.json()
    first_line = next(iter(proc.stderr.splitlines()), "")
    return {"first_run_cold_s": proc.wall_s, "first_run_compile_s": doc["compile_seconds"],
            "first_run_loop_s": doc["wall_seconds"], "first_run_rss_mib": proc.rss_mib,
            "first_run_stderr": first_line}


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def _compiled_source_hash(checkout: Path) -> str:
    """The cache key of ``checkout``'s compiled sources, and where its neuronemu is imported
    from (to be sure PYTHONPATH wins over the installed copy)."""
    code = ("import neuronemu, sys; from neuronemu.compiled.sources import all_sources_key; "
            "print(all_sources_key(), neuronemu.__file__)")
    out = run_process([sys.executable, "-c", code], cwd=checkout,
                      env=child_env(pythonpath=checkout)).stdout.split()
    if not Path(out[1]).resolve().is_relative_to(checkout.resolve()):
        raise RuntimeError(f"{checkout}: neuronemu imported from {out[1]}, not the checkout")
    return out[0]


def measure_second_checkout() -> dict:
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    argv = neuronemu_cli("run", VECTOR_ADD, "--json")
    with tempfile.TemporaryDirectory(prefix="neuronemu-clone-") as tmp:
        clone = Path(tmp) / "clone"
        note(f"cloning HEAD to {clone}" + (" (the work tree has uncommitted changes; they are "
                                           "not in the clone)" if dirty else ""))
        start = time.perf_counter()
        _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
        clone_s = time.perf_counter() - start
        reference, where = ROOT, "this checkout"
        if _compiled_source_hash(ROOT) != _compiled_source_hash(clone):
            # the work tree's cache would not fit the clone: use a second clone of HEAD as the
            # checkout that built the cache, so the figure still means "same commit, cache built"
            reference, where = Path(tmp) / "first", "a first clone of HEAD (work tree differs)"
            _git("clone", "--quiet", "--no-hardlinks", str(ROOT), str(reference))
        note(f"warm runs in {where}, then the clone's first and second run")
        run_process(argv, cwd=reference, env=child_env(pythonpath=reference))  # builds the cache
        warm, = warm_runs(argv, 1, cwd=reference, env=child_env(pythonpath=reference))
        first = run_process(argv, cwd=clone, env=child_env(pythonpath=clone))
        second = run_process(argv, cwd=clone, env=child_env(pythonpath=clone))
    # The figure is the clone's FIRST run: a second run would be warm even with a cache keyed
    # by absolute path, so only the first shows whether the clone reuses the built cache.
    return {"second_checkout_extra_s": first.wall_s - warm.wall_s,
            "second_checkout_first_run_s": first.wall_s,
            "second_checkout_first_run_compile_s": first.json()["compile_seconds"],
            "second_checkout_second_run_extra_s": second.wall_s - warm.wall_s,
            "second_checkout_reference_s": warm.wall_s, "second_checkout_reference": where,
            "second_checkout_compiled_runs": int(warm.compiled) + int(second.compiled),
            "second_checkout_clone_s": clone_s, "work_tree_dirty": dirty}


def measure_loop(prefix: str, source: str, iterations: int, repeat: int) -> dict:
    program = neuronemu.assemble(source.format(iterations=iterations), filename=f"{prefix}.s")
    runs = best_whole_run(program, repeat)
    return {f"{prefix}_ips": runs["steps"] / runs["run_s"],
            f"{prefix}_loop_ips": runs["steps"] / runs["loop_s"],
            f"{prefix}_steps": runs["steps"], f"{prefix}_run_ms": runs["run_s"] * 1e3,
            f"{prefix}_compile_s": runs["measured_compile_s"]}


def blas_threads() -> str:
    """How many threads numpy's BLAS uses: from threadpoolctl when it is installed, else asked
    of the OpenBLAS library this process loaded (numpy's wheels bundle one)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        pass
    else:
        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        return ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in pools) or "no BLAS"
    import ctypes

    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        maps = []
    libraries = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    for library in libraries:
        try:
            lib = ctypes.CDLL(library)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                       "openblas_get_num_threads"):
            get = getattr(lib, symbol, None)
            if get is not None:
                return f"{get()} ({symbol}; threadpoolctl not installed)"
    return "1 (pinned by environment; not verified: threadpoolctl not installed)"


def measure_matmul_tiled(repeat: int) -> dict:
    row = measure_kernel("examples/matmul_tiled", MATMUL_TILED, repeat)
    return {"matmul_tiled_ratio": row["ratio"], "matmul_tiled_loop_ratio": row["loop_ratio"],
            "matmul_tiled_run_ms": row["run_ms"], "matmul_tiled_loop_ms": row["loop_ms"],
            "matmul_tiled_numpy_ms": row["numpy_ms"]}


def _store_block(result, acc, m: int, n: int) -> None:
    """PSUM block (m, n) of an NKI matmul below, through SBUF, into its place in ``result``."""
    import neuronemu.nki.isa as nisa
    import neuronemu.nki.language as nl

    out = nl.ndarray((128, 512), dtype=result.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=out, src=acc)
    nisa.dma_copy(dst=result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=out)


def nki_matmul_per_step(lhs_t, rhs):
    """result = lhs_t.T @ rhs, one [128, 128] x [128, 512] matmul per K step into a PSUM tile
    allocated per output block (the first NKI tutorial's shape of code)."""
    import neuronemu.nki.isa as nisa
    import neuronemu.nki.language as nl

    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // 128):
        for n in range(n_size // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(k_size // 128):
                a = nl.ndarray((128, 128), dtype=lhs_t.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhs_t[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            _store_block(result, acc, m, n)
    return result


def nki_matmul_ring(lhs_t, rhs):
    """The same product with each row block's K tiles of lhs_t loaded once into a list and
    reused for every column block (a ring of K live tiles per call site)."""
    import neuronemu.nki.isa as nisa
    import neuronemu.nki.language as nl

    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // 128):
        tiles = []
        for k in range(k_size // 128):
            a = nl.ndarray((128, 128), dtype=lhs_t.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=lhs_t[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
            tiles.append(a)
        for n in range(n_size // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k, a in enumerate(tiles):
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            _store_block(result, acc, m, n)
    return result


def measure_nki_trace(repeat: int, quick: bool) -> dict:
    import ml_dtypes

    from neuronemu import nki

    m_size, k_size, n_size = (512, 2048, 2048) if quick else (1024, 4096, 4096)
    lhs_t = np.zeros((k_size, m_size), ml_dtypes.bfloat16)
    rhs = np.zeros((k_size, n_size), ml_dtypes.bfloat16)
    doc: dict = {}
    rates = []
    for name, kernel in (("per_step", nki_matmul_per_step), ("ring", nki_matmul_ring)):
        best_trace = best_assemble = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            trace = nki.trace(kernel, lhs_t, rhs)
            traced = time.perf_counter()
            program = trace.assemble()
            best_trace = min(best_trace, traced - start)
            best_assemble = min(best_assemble, time.perf_counter() - traced)
        count = len(program.raw_instructions())
        rate = count / (best_trace + best_assemble)
        rates.append(rate)
        doc.update({f"nki_trace_{name}_instructions": count, f"nki_trace_{name}_ips": rate,
                    f"nki_trace_{name}_trace_ips": count / best_trace,
                    f"nki_trace_{name}_assemble_ips": count / best_assemble})
    doc["nki_trace_ips"] = min(rates)
    return doc


# Runs the real CLI in one process with the API's assemble_file and run wrapped in timers, so
# a warm process splits into interpreter start/exit, import, assemble, run and report phases.
PHASES_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import neuronemu.api as api
import neuronemu.cli as cli
t1 = time.perf_counter()
spent = {"assemble": 0.0, "run": 0.0, "loop": 0.0, "compile": 0.0}
assemble_file, run = api.assemble_file, api.run
def timed_assemble(*a, **k):
    start = time.perf_counter()
    program = assemble_file(*a, **k)
    spent["assemble"] += time.perf_counter() - start
    return program
def timed_run(*a, **k):
    start = time.perf_counter()
    result = run(*a, **k)
    spent["run"] += time.perf_counter() - start
    spent["loop"] += result.wall_seconds
    spent["compile"] += result.compile_seconds
    return result
api.assemble_file, api.run = timed_assemble, timed_run
t2 = time.perf_counter()
cli.main(["run", sys.argv[1]], standalone_mode=False)
t3 = time.perf_counter()
phases = {"import": t1 - t0, "assemble": spent["assemble"], "run": spent["run"],
          "loop": spent["loop"], "compile": spent["compile"],
          "report": t3 - t2 - spent["assemble"] - spent["run"], "in_script": t3 - t0}
with open(sys.argv[2], "w") as f:
    json.dump(phases, f)
"""


def measure_warm_cli(runs: int) -> dict:
    argv = neuronemu_cli("run", VECTOR_ADD)
    run_process(argv)  # warm-up: the cache may need this source version's entries
    procs = warm_runs(argv, runs)
    # one more warm process, timed from inside: where a warm run's time goes
    with tempfile.TemporaryDirectory(prefix="neuronemu-phases-") as tmp:
        out = Path(tmp) / "phases.json"
        proc, = warm_runs([sys.executable, "-c", PHASES_SCRIPT, VECTOR_ADD, str(out)], 1)
        phases = json.loads(out.read_text())
    phases["start_exit"] = proc.wall_s - phases.pop("in_script")
    phases["process"] = proc.wall_s
    return {"warm_cli_vector_add_s": statistics.median(p.wall_s for p in procs),
            "warm_cli_vector_add_rss_mib": statistics.median(p.rss_mib for p in procs),
            "warm_cli_runs_s": [p.wall_s for p in procs],
            "warm_cli_compiled_runs": sum(p.compiled for p in procs),
            "warm_cli_phases_ms": {k: v * 1e3 for k, v in phases.items()}}


def measure_explicit_replay(repeat: int) -> dict:
    source = EXPLICIT_SYNC.read_text()
    if ".sync explicit" not in source:
        raise RuntimeError(f"{EXPLICIT_SYNC} no longer has `.sync explicit`")
    explicit = neuronemu.assemble(source, filename=str(EXPLICIT_SYNC))
    auto = neuronemu.assemble(source.replace(".sync explicit", ".sync auto", 1),
                              filename=str(EXPLICIT_SYNC))
    timed_run(explicit)  # warm-ups: the replay's first call pays one-time set-up
    timed_run(auto)
    # interleaved, so a change in machine load hits both sides alike
    times: dict[str, list[float]] = {"explicit": [], "auto": []}
    for _ in range(repeat):
        for key, program in (("explicit", explicit), ("auto", auto)):
            whole, result = timed_run(program)
            times[key].append(whole)
    steps = result.steps
    run_s, auto_s = min(times["explicit"]), min(times["auto"])
    return {"explicit_replay_us_per_instr": (run_s - auto_s) / steps * 1e6,
            "explicit_run_ms": run_s * 1e3, "explicit_auto_run_ms": auto_s * 1e3,
            "explicit_steps": steps,
            "explicit_replay_direct_us_per_instr": _direct_replay_s(explicit) / steps * 1e6}


def _direct_replay_s(program: Program) -> float:
    """Median thread CPU seconds of the replay alone, on the events of one run of ``program``
    (thread time: other jobs on the machine do not count)."""
    from neuronemu.timing import explicit

    captured = []
    replay = explicit.replay

    def spy(*args):
        captured.append(args)
        return replay(*args)

    explicit.replay = spy
    try:
        neuronemu.run(program)
    finally:
        explicit.replay = replay
    spent = []
    for _ in range(50):
        start = time.thread_time()
        replay(*captured[0])
        spent.append(time.thread_time() - start)
    return statistics.median(spent)


def measure_allreduce_144(runs: int) -> dict:
    argv = neuronemu_cli("run", ALL_REDUCE, "--topology", TOPOLOGY_144, "--json")
    procs = warm_runs(argv, runs)
    return {"allreduce_144_s": statistics.median(p.wall_s for p in procs),
            "allreduce_144_rss_mib": statistics.median(p.rss_mib for p in procs),
            "allreduce_144_run_s": statistics.median(p.json()["wall_seconds"] for p in procs),
            "allreduce_144_runs_s": [p.wall_s for p in procs],
            "allreduce_144_compiled_runs": sum(p.compiled for p in procs)}


def measure_kernels(repeat: int) -> dict:
    from neuronemu.programs import bundled_programs

    rows = []
    for name, path in bundled_programs().items():
        note(f"kernel {name}")
        rows.append(measure_kernel(name, path, repeat))
    return {"kernels": rows}


# ---------------------------------------------------------------------------- report

def machine_info() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    import numba

    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    try:
        commit = _git("rev-parse", "--short", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", False
    return {"nproc": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)),
            "cpu_model": model, "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "blas": f"{blas.get('name', '?')} {blas.get('version', '')}",
            "neuronemu": neuronemu.__version__, "commit": commit, "work_tree_dirty": dirty,
            "blas_threads": blas_threads(), "date": time.strftime("%Y-%m-%d %H:%M"),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def _number(value: float, unit: str) -> str:
    if unit == "instr/s":
        return f"{value:,.0f}"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.2f} {unit}" if unit != "MiB" else f"{value:,.0f} MiB"


def _must_met(key: str, value: float) -> bool:
    _, _, op, bound = MUSTS[key]
    return value <= bound if op == "<=" else value >= bound


def print_report(doc: dict) -> None:
    m = doc["machine"]
    print(f"neuronemu {m['neuronemu']} at {m['commit']}{' (work tree dirty)' if m['work_tree_dirty'] else ''}, "
          f"{m['date']}; python {m['python']}, numpy {m['numpy']} ({m['blas']}), "
          f"numba {m['numba']}")
    print(f"machine: {m['cpu_model']}, nproc {m['nproc']} ({m['cpus_usable']} usable); load "
          f"average {' '.join(f'{x:.2f}' for x in m['loadavg_start'])} at start, "
          f"{' '.join(f'{x:.2f}' for x in m['loadavg_end'])} at end")
    print(f"numpy baseline BLAS threads: {m['blas_threads']}")
    print(f"\n{'metric (issue 13, Must reach)':<42}{'measured':>18}  {'must':<18}")
    for key, (label, unit, op, bound) in MUSTS.items():
        if key not in doc:
            continue
        met = "ok" if _must_met(key, doc[key]) else "MISSED"
        must = f"{op} {_number(bound, unit)}"
        print(f"{label:<42}{_number(doc[key], unit):>18}  {must:<18}{met}")

    details = []
    if "first_run_cold_s" in doc:
        details.append(f"first run: compile_seconds {doc['first_run_compile_s']:.1f} s, run "
                       f"{doc['first_run_loop_s'] * 1e3:.1f} ms, peak RSS "
                       f"{doc['first_run_rss_mib']:.0f} MiB; stderr: "
                       f"{doc['first_run_stderr'] or '(nothing)'}")
    if "second_checkout_extra_s" in doc:
        details.append(f"second checkout: clone's first run {doc['second_checkout_first_run_s']:.2f}"
                       f" s (compile_seconds {doc['second_checkout_first_run_compile_s']:.1f}), "
                       f"second run {doc['second_checkout_second_run_extra_s']:+.2f} s; warm "
                       f"reference {doc['second_checkout_reference_s']:.2f} s in "
                       f"{doc['second_checkout_reference']}; git clone "
                       f"{doc['second_checkout_clone_s']:.2f} s")
        if doc["work_tree_dirty"]:
            details.append("  (the work tree has uncommitted changes: only HEAD was cloned)")
    for prefix, label in (("small_tile_loop", "small-tile loop"), ("ctrl_loop", "ctrl loop")):
        if f"{prefix}_ips" in doc:
            details.append(f"{label}: {doc[f'{prefix}_steps']:,} instructions, whole run() "
                           f"{doc[f'{prefix}_run_ms']:.1f} ms; loop only "
                           f"{doc[f'{prefix}_loop_ips']:,.0f} instr/s")
    if "matmul_tiled_ratio" in doc:
        details.append(f"matmul_tiled: whole run() {doc['matmul_tiled_run_ms']:.2f} ms, loop "
                       f"{doc['matmul_tiled_loop_ms']:.2f} ms ({doc['matmul_tiled_loop_ratio']:.2f}x)"
                       f", numpy {doc['matmul_tiled_numpy_ms']:.2f} ms")
    if "warm_cli_vector_add_s" in doc:
        p = doc["warm_cli_phases_ms"]
        details.append(f"warm CLI: runs {', '.join(f'{s:.2f}' for s in doc['warm_cli_runs_s'])} s,"
                       f" peak RSS {doc['warm_cli_vector_add_rss_mib']:.0f} MiB; phases (ms) of "
                       f"a {p['process']:.0f} ms process: start/exit {p['start_exit']:.0f}, import "
                       f"{p['import']:.0f}, assemble {p['assemble']:.0f}, run {p['run']:.0f} "
                       f"(loop {p['loop']:.1f}, compile {p['compile']:.0f}), report "
                       f"{p['report']:.0f}")
    if "explicit_replay_us_per_instr" in doc:
        details.append(f"explicit replay: whole run() {doc['explicit_run_ms']:.1f} ms with "
                       f".sync explicit, {doc['explicit_auto_run_ms']:.1f} ms with .sync auto, "
                       f"{doc['explicit_steps']} instructions; the replay alone "
                       f"{doc['explicit_replay_direct_us_per_instr']:.2f} us/instr (thread CPU)")
    if "allreduce_144_s" in doc:
        details.append(f"144-chip all-reduce: runs "
                       f"{', '.join(f'{s:.2f}' for s in doc['allreduce_144_runs_s'])} s; the "
                       f"run's wall_seconds {doc['allreduce_144_run_s']:.2f} s")
    if "nki_trace_ips" in doc:
        details.append("NKI trace + assemble: " + "; ".join(
            f"{name} {doc[f'nki_trace_{name}_instructions']:,} instructions, "
            f"{doc[f'nki_trace_{name}_ips']:,.0f} instr/s (trace "
            f"{doc[f'nki_trace_{name}_trace_ips']:,.0f}, assemble "
            f"{doc[f'nki_trace_{name}_assemble_ips']:,.0f})" for name in ("per_step", "ring")))
    if details:
        print()
        print("\n".join(details))

    if doc.get("kernels"):
        print(f"\n{'kernel':<40}{'instrs':>8}{'asm ms':>9}{'run ms':>10}{'loop ms':>10}"
              f"{'numpy ms':>10}{'ratio':>8}{'loop':>7}")
        for row in doc["kernels"]:
            label = row["kernel"] + (f" ({row['ranks']} ranks)" if row["ranks"] > 1 else "")
            tail = (f"{'-':>10}" if row["numpy_ms"] is None else
                    f"{row['numpy_ms']:>10.2f}{row['ratio']:>7.1f}x{row['loop_ratio']:>6.1f}x")
            print(f"{label:<40}{row['instructions']:>8}{row['assemble_ms']:>9.1f}"
                  f"{row['run_ms']:>10.1f}{row['loop_ms']:>10.1f}{tail}")
        print("run ms: whole neuronemu.run() (run_spmd for ranks), best of "
              f"{doc['repeat']}; loop ms: Result.wall_seconds; ratio: run / numpy (1 thread)")
    compiled = [k for k, v in doc.items() if v and (k.endswith("_compiled_runs") or (
                k.endswith("_compile_s") and not k.startswith(("first_run", "second_checkout"))))]
    if compiled:
        print(f"\nnote: measured runs compiled ({', '.join(compiled)}): figures include it")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--repeat", type=int, help="best-of / median count (default 5; 2 quick)")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller loops")
    parser.add_argument("--skip-cold", action="store_true", help="leave out first_run_cold")
    parser.add_argument("--only", help=f"comma-separated subset of: {', '.join(NAMES)}")
    args = parser.parse_args(argv)
    selected = list(NAMES) if args.only is None else [n.strip() for n in args.only.split(",")]
    unknown = [n for n in selected if n not in NAMES]
    if unknown:
        parser.error(f"unknown --only name(s) {', '.join(unknown)} (names: {', '.join(NAMES)})")
    if args.skip_cold and "first_run_cold" in selected:
        selected.remove("first_run_cold")
    repeat = args.repeat or (2 if args.quick else 5)
    if repeat < 1:
        parser.error("--repeat must be at least 1")

    doc: dict = {"machine": machine_info(), "repeat": repeat, "quick": args.quick}
    measurements: dict[str, Callable[[], dict]] = {
        "first_run_cold": measure_first_run_cold,
        "second_checkout": measure_second_checkout,
        "small_tile_loop": lambda: measure_loop("small_tile_loop", SMALL_TILE_LOOP,
                                                2_000 if args.quick else 20_000, repeat),
        "ctrl_loop": lambda: measure_loop("ctrl_loop", CTRL_LOOP,
                                          100_000 if args.quick else 1_000_000, repeat),
        "matmul_tiled": lambda: measure_matmul_tiled(repeat),
        "warm_cli": lambda: measure_warm_cli(repeat),
        "explicit_replay": lambda: measure_explicit_replay(repeat),
        "allreduce_144": lambda: measure_allreduce_144(min(repeat, 1 if args.quick else 3)),
        "nki_trace": lambda: measure_nki_trace(repeat, args.quick),
        "kernels": lambda: measure_kernels(repeat),
    }
    for name in NAMES:
        if name in selected:
            note(name)
            start = time.perf_counter()
            doc.update(measurements[name]())
            note(f"{name} took {time.perf_counter() - start:.1f} s")
    doc["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["must"] = {key: {"op": op, "bound": bound, "met": _must_met(key, doc[key])}
                   for key, (_, _, op, bound) in MUSTS.items() if key in doc}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_report(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
