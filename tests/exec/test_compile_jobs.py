"""Cold units compile in worker processes (neuronemu/exec/compile_jobs.py): what they compile
lands in the cache and loads in the run without compiling again; a job that fails is reported
and left to the run; the number of workers follows the environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from neuronemu.exec import compile_jobs

# two of the cheapest units (well under a second each)
CHEAP = ["ctrl__jmp", "cc__barrier"]


def test_units_compiled_by_workers_load_in_a_later_process_without_compiling(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    log = tmp_path / "compiled.log"
    monkeypatch.setenv("NEURONEMU_COMPILE_LOG", str(log))
    said: list[str] = []
    ok = compile_jobs.run_jobs([compile_jobs.kernel_job(e) for e in CHEAP], said.append, 2)
    assert ok == 2
    assert sorted(line.split()[2] for line in said) == ["cc.barrier", "ctrl.jmp"]
    assert all(line.startswith(("[1/2] compiled", "[2/2] compiled")) for line in said), said
    workers = {line.split("\t")[2] for line in log.read_text().splitlines()}
    assert str(os.getpid()) not in workers and len(workers) in (1, 2)   # compiled over there
    log.unlink()
    code = ("from neuronemu.exec import kernels; "
            f"print([kernels.is_ready(e) for e in {CHEAP!r}]); "
            f"kernels.ensure_compiled({CHEAP!r})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[True, True]"
    assert not log.exists()                   # loaded from the cache, nothing compiled


def test_a_cold_run_compiles_its_loop_and_kernels_in_workers_and_loads_them(tmp_path):
    """The loop's argument types pickled to a worker compile the same signature the run calls:
    the run's own process compiles neither the loop nor a kernel (only what runs after the
    loop, such as the critical-path walk)."""
    log = tmp_path / "compiled.log"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "NEURONEMU_COMPILE_JOBS": "2", "NEURONEMU_COMPILE_LOG": str(log)}
    env.pop("PYTEST_XDIST_WORKER", None)
    code = ("import os, neuronemu; print(os.getpid()); "
            "r = neuronemu.run(neuronemu.assemble('ctrl.mov r0, 1\\ncc.barrier\\n')); "
            "print(r.compile_seconds > 0)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    pid, compiled = out.stdout.split()
    assert compiled == "True"
    assert "in 2 processes at once" in out.stderr and "compiled the interpreter loop" in out.stderr
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    workers = [unit for unit, _, who in lines if who != pid]
    here = [unit for unit, _, who in lines if who == pid]
    assert any(unit.endswith("interpreter.run_loop") for unit in workers), lines
    assert "kernel ctrl__mov" in workers, lines
    assert not [u for u in here if u.endswith("run_loop") or u.startswith("kernel ")], here


def test_a_job_that_fails_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    said: list[str] = []
    jobs = [compile_jobs.kernel_job("nosuchmodule__nothing"), compile_jobs.kernel_job("ctrl__jmp")]
    assert compile_jobs.run_jobs(jobs, said.append, 1) == 1
    assert said[0].startswith("[1/2] could not compile nosuchmodule.nothing in ")
    assert "ModuleNotFoundError" in said[0]
    assert said[1].startswith("[2/2] compiled ctrl.jmp in ")


@pytest.mark.parametrize(("env", "expected"), [
    ({"NEURONEMU_COMPILE_JOBS": "3"}, 3),
    ({"NEURONEMU_COMPILE_JOBS": "1"}, 1),
    ({"NEURONEMU_COMPILE_JOBS": "0"}, 1),
    ({"NEURONEMU_COMPILE_JOBS": "many"}, 1),
    ({"PYTEST_XDIST_WORKER": "gw0"}, 1),      # the cores are the xdist workers' already
    ({"OMPI_COMM_WORLD_RANK": "0"}, 1),       # an MPI rank: likewise
])
def test_the_number_of_workers_follows_the_environment(monkeypatch, env, expected):
    for name in ("NEURONEMU_COMPILE_JOBS", *compile_jobs._PEER_MARKERS):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert compile_jobs.workers() == expected


def test_by_default_every_core_this_process_may_use(monkeypatch):
    for name in ("NEURONEMU_COMPILE_JOBS", *compile_jobs._PEER_MARKERS):
        monkeypatch.delenv(name, raising=False)
    assert compile_jobs.workers() == len(os.sched_getaffinity(0))


def test_an_interrupt_stops_the_workers_at_once(tmp_path, monkeypatch):
    """Ctrl-C while workers compile (here: while waiting for the first reply) ends them at
    once instead of after their unit; nothing is left running."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    started: list = []
    real = compile_jobs._Worker

    class Recorded(real):
        def __init__(self):
            super().__init__()
            started.append(self)

    def interrupted(pool):
        raise KeyboardInterrupt

    monkeypatch.setattr(compile_jobs, "_Worker", Recorded)
    monkeypatch.setattr(compile_jobs, "_next_reply", interrupted)
    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        compile_jobs.run_jobs([compile_jobs.kernel_job("elementwise__tensor_scalar")] * 2,
                              lambda line: None, 2)
    assert time.perf_counter() - began < 10   # the unit alone takes ~25 s to compile
    assert len(started) == 2 and all(w.proc.poll() is not None for w in started)
