"""Compile a run's cold units in worker processes, as many at once as there are cores.

Why processes: numba compiles in Python, holding the GIL, so threads would take turns; each
unit (an instruction kernel, the interpreter loop) is independent of the others and lands in the
compiled-code cache, from which the run then loads it. A first run of vector_add compiles three
units of 9 to 15 s each: one after the other they took 38 s, on two cores 27 s, for the same CPU
time within 2 % (docs/engine.md, "When things compile"): each worker imports neuronemu and
compiles the helpers its unit calls, unless another worker cached them first.

A job that fails in its worker is left to the run's own compile, which reports an error as
it always did; nothing here can make a run fail that would not have failed without it.

Workers: ``NEURONEMU_COMPILE_JOBS`` (1 turns this off), else the cores this process may use; one
inside a pytest-xdist worker or an MPI rank, which already share the cores with their peers.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_PEER_MARKERS = ("PYTEST_XDIST_WORKER", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


@dataclass(frozen=True)
class Job:
    """One unit to compile in a worker: ``kind`` kernel (``arg`` its entry) or loop (``arg`` the
    interpreter loop's argument types, pickled)."""
    kind: str
    arg: str
    label: str


def workers() -> int:
    """How many worker processes compile at once (1: compile in this process, as before)."""
    value = os.environ.get("NEURONEMU_COMPILE_JOBS", "")
    if value.strip():
        try:
            return max(1, int(value))
        except ValueError:
            return 1
    if any(os.environ.get(name) for name in _PEER_MARKERS):
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def kernel_job(entry: str) -> Job:
    return Job("kernel", entry, entry.replace("__", "."))


def loop_job(arg_types: tuple) -> Job:
    return Job("loop", base64.b64encode(pickle.dumps(arg_types)).decode(), "the interpreter loop")


def run_jobs(jobs: Sequence[Job], say: Callable[[str], None], parallel: int | None = None) -> int:
    """Run ``jobs`` in ``parallel`` (default ``workers()``) worker processes, handing each worker
    the next job in the order given as it finishes one (put the longest first); ``say`` gets a
    line as each job ends (``[2/3] compiled dma.copy in 10.1 s``). Returns how many succeeded;
    the others are compiled by whoever needs them next.

    A worker serves jobs until there are none left: it imports neuronemu once (about 1 s of
    CPU) and keeps the helpers it compiled for one unit for the next, where one process per
    unit paid both again for each of warm's 81 units."""
    parallel = min(parallel or workers(), len(jobs))
    todo, done, ok = list(jobs), 0, 0
    pool = [_Worker() for _ in range(parallel)]
    idle = list(pool)
    try:
        while todo or any(w.job is not None for w in pool):
            while todo and idle:
                worker = idle.pop()
                if worker.start(todo[0]):
                    todo.pop(0)
                else:   # it died before taking the job: the others take it
                    pool.remove(worker)
                    worker.close()
            if not pool:
                break                     # every worker gone: the rest compile in the run
            worker, job, succeeded, seconds, why = _next_reply(pool)
            done += 1
            ok += succeeded
            if succeeded:
                say(f"[{done}/{len(jobs)}] compiled {job.label} in {seconds:.1f} s")
            else:
                say(f"[{done}/{len(jobs)}] could not compile {job.label} in {seconds:.1f} s "
                    f"({why}); it compiles in this process instead")
            if worker.alive():
                idle.append(worker)
            else:
                pool.remove(worker)
                worker.close()
    except BaseException:   # Ctrl-C or anything else: the workers stop now, not after their job
        for worker in pool:
            worker.close(kill=True)
        raise
    for worker in pool:
        worker.close()
    return ok


class _Worker:
    """A ``python -m neuronemu.exec.compile_jobs`` process: one job per line on its stdin, one
    reply line per job on its stdout (``ok SECONDS`` or ``failed SECONDS WHY``)."""

    def __init__(self) -> None:
        env = {**os.environ, "NEURONEMU_COMPILE_JOBS": "1"}
        # stderr to a file, not a pipe: a chatty worker can never block on it
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "neuronemu.exec.compile_jobs"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.err, env=env, text=True, bufsize=1)
        self.job: Job | None = None
        self.began = 0.0

    def start(self, job: Job) -> bool:
        self.job, self.began = job, time.perf_counter()
        try:
            self.proc.stdin.write(f"{job.kind} {job.arg}\n")
            self.proc.stdin.flush()
            return True
        except OSError:
            return False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """End the worker: it exits when its stdin closes (killed at once when ``kill``, or
        if it has not exited 30 s later)."""
        if kill:
            self.proc.kill()
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()

    def last_error(self) -> str:
        self.err.seek(0)
        lines = [x for x in self.err.read().decode(errors="replace").splitlines() if x.strip()]
        return lines[-1].strip() if lines else f"the worker ended (status {self.proc.poll()})"


def _next_reply(pool: list[_Worker]) -> tuple[_Worker, Job, bool, float, str]:
    """The first busy worker to answer: (worker, its job, succeeded, seconds, why it failed)."""
    busy = {w.proc.stdout: w for w in pool if w.job is not None}
    with selectors.DefaultSelector() as selector:
        for stream in busy:
            selector.register(stream, selectors.EVENT_READ)
        key, _ = selector.select()[0]
    worker = busy[key.fileobj]
    job, worker.job = worker.job, None
    reply = worker.proc.stdout.readline().split(" ", 2)   # "" when the worker died
    seconds = time.perf_counter() - worker.began
    if reply[0] == "ok":
        return worker, job, True, seconds, ""
    why = reply[2].strip() if reply[0] == "failed" and len(reply) > 2 else worker.last_error()
    return worker, job, False, seconds, why


def _work(kind: str, arg: str) -> None:
    """In a worker: compile one job's unit into the cache."""
    if kind == "kernel":
        from neuronemu.exec import kernels

        kernels.ensure_compiled([arg])
    elif kind == "loop":
        from neuronemu.exec.interpreter import run_loop

        run_loop.compile(pickle.loads(base64.b64decode(arg)))
    else:
        raise ValueError(f"unknown job kind {kind!r}")


def _serve() -> None:
    """A worker's life: compile each job read from stdin, answer each on stdout."""
    from neuronemu import notices

    notices.set_sink(lambda text: None)   # the parent says what is compiling
    for line in sys.stdin:
        kind, _, arg = line.strip().partition(" ")
        began = time.perf_counter()
        try:
            _work(kind, arg)
            reply = f"ok {time.perf_counter() - began:.3f}"
        except Exception as error:   # noqa: BLE001 - reported; the run compiles it itself
            why = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            reply = f"failed {time.perf_counter() - began:.3f} {why}"
        print(reply, flush=True)


if __name__ == "__main__":
    _serve()
