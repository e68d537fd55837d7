"""Partitioned runs (docs/multichip.md, "Partitions"): the ranks split into P partitions of whole
chips (whole servers on switched topologies) that exchange only messages give the same output
bits, per-rank timing reports, link statistics and trace JSON as the run in one partition, for
every P; errors are the same located message and exit code on every partition.

The loopback backend (P partitions as threads of this process) carries the matrix; the real
``mpiexec -n 2`` / ``-n 3`` runs are compared byte for byte with the in-process CLI run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from spmd_helpers import NEIGHBOURS, assemble_for, spmd

import neuronemu
from neuronemu.api import run_spmd
from neuronemu.errors import InputError, NeuronemuError
from neuronemu.isa.topologies import load_topologies
from neuronemu.multichip import comm as comm_module
from neuronemu.multichip.comm import Partitioning
from neuronemu.timing.trace import chrome_trace_ranks

ROOT = Path(__file__).resolve().parents[2]
COLLECTIVES = ROOT / "programs" / "collectives"
PARTITIONS = (1, 2, 3, 5, 16)


def fingerprint(result) -> dict:
    """Everything a multi-rank run reports, as plain data: each rank's output and tile bits,
    instruction counts, timing report (times, tracks, critical path, trace events), the link
    statistics and the trace JSON."""
    ranks = []
    for r in result.ranks:
        t = r.timing
        ranks.append({
            "outputs": {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
                        for k, v in r.outputs.items()},
            "tiles": {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
                      for k, v in r.tiles.items()},
            "instructions": r.instructions, "steps": r.steps,
            "time_ns": t.time_ns, "tracks": repr(t.tracks), "cycles": t.cycles,
            "critical_path": t.critical_path,
            "events": hashlib.sha256(t.events.tobytes() + t.event_times.tobytes()).hexdigest(),
            "warnings": [w.render() for w in r.warnings],
        })
    return {"ranks": ranks, "network": repr(result.network),
            "trace": hashlib.sha256(json.dumps(chrome_trace_ranks(result), sort_keys=True)
                                    .encode()).hexdigest()}


@pytest.mark.parametrize("kernel", ["ring_allreduce", "pairwise_alltoall", "ring_allgather",
                                    "all_reduce", "tp_linear"])
def test_every_partition_count_gives_the_same_run(kernel: str) -> None:
    program = neuronemu.assemble_file(str(COLLECTIVES / f"{kernel}.s"))
    reference = fingerprint(run_spmd(program))
    assert len(reference["ranks"]) == 16
    for partitions in PARTITIONS[1:]:
        assert fingerprint(run_spmd(program, partitions=partitions)) == reference, partitions


# every rank passes its tile around the ring three times, on two queues, adding what it gets
RING = """\
.hbm x float32[32, 64] input
.hbm y float32[32, 64] output
.sbuf a float32[32, 64]
.sbuf b float32[32, 64]
""" + NEIGHBOURS + """\
    dma.copy a, x, queue=0
    ctrl.mov r4, 0
again:
    cc.sendrecv b, a, send_to=r2, recv_from=r3, queue=1
    cc.send a, peer=r2, queue=2
    cc.recv b, peer=r3, queue=3
    vector.tensor_tensor a, a, b, op=add
    ctrl.add r4, r4, 1
    ctrl.blt r4, 3, again
    dma.copy y, a, queue=0
"""


def test_two_ranks_per_chip_and_a_switched_topology() -> None:
    """32 ranks on the trn2.48xlarge's 16 chips (a chip's two cores in one partition), and 64
    ranks on the 4 servers of a trn3-ultraserver-gen1 (a server's 16 chips in one partition)."""
    for program in (neuronemu.assemble_file(str(COLLECTIVES / "tp_linear.s")),
                    assemble_for(RING, "trn2.48xlarge")):
        reference = fingerprint(run_spmd(program, "trn2.48xlarge", ranks_per_chip=2))
        for partitions in (3, 16):
            assert fingerprint(run_spmd(program, "trn2.48xlarge", ranks_per_chip=2,
                                        partitions=partitions)) == reference
    program = neuronemu.assemble_file(str(COLLECTIVES / "all_reduce.s"), target="trn3")
    reference = fingerprint(run_spmd(program, "trn3-ultraserver-gen1"))
    for partitions in (2, 3, 4):
        assert fingerprint(run_spmd(program, "trn3-ultraserver-gen1",
                                    partitions=partitions)) == reference


def test_partitions_hold_whole_chips_or_servers() -> None:
    """Chips are dealt out in order, units // P or one more each; a count that would split a
    chip (or a switched topology's server) is refused with the largest legal count."""
    topologies = load_topologies()
    split = Partitioning(topologies["trn2.48xlarge"], 8, 3)
    assert split.owner == [0] * 40 + [1] * 40 + [2] * 48
    assert split.ranks(1) == list(range(40, 80))
    with pytest.raises(InputError) as info:
        Partitioning(topologies["trn2.48xlarge"], 2, 17)
    assert info.value.message == (
        "17 partitions cannot split trn2.48xlarge: a partition holds whole chips (its 16 chips "
        "give at most 16 partitions), so that every message inside a chip stays in one "
        "process")
    with pytest.raises(InputError, match="whole servers .its 4 servers give at most 4"):
        Partitioning(topologies["trn3-ultraserver-gen1"], 1, 5)
    program = neuronemu.assemble_file(str(COLLECTIVES / "all_reduce.s"))
    with pytest.raises(InputError, match="17 partitions cannot split trn2.48xlarge"):
        run_spmd(program, partitions=17)


def test_explicit_sync_runs_in_one_partition() -> None:
    text = """\
.sync explicit
.hbm x float32[2, 8] input
.hbm y float32[2, 8] output
    cc.all_reduce y, x, op=add
"""
    program = assemble_for(text, "trn2.48xlarge")
    assert run_spmd(program, "trn2.48xlarge", partitions=1).world == 16
    with pytest.raises(InputError, match="a .sync explicit kernel runs its ranks in one "
                                         "process"):
        run_spmd(program, "trn2.48xlarge", partitions=2)


ERRORS = {
    "deadlock": """\
.hbm x float32[2, 8] input
.hbm y float32[2, 8] output
    ctrl.rank r0
    ctrl.bge r0, 2, done
    ctrl.sub r1, 1, r0
    cc.recv y, peer=r1
    cc.send x, peer=r1
done:
""",
    "collective deadlock": """\
.hbm x float32[2, 8] input
    ctrl.rank r0
    ctrl.beq r0, 13, done
    cc.barrier
done:
""",
    "unmatched send": """\
.hbm x float32[2, 8] input
    ctrl.rank r0
    ctrl.bne r0, 3, done
    cc.send x, peer=12
done:
""",
    "fault on one rank": """\
    ctrl.rank r0
    ctrl.sub r4, r0, 9
    ctrl.div r5, 100, r4
""",
    "peer outside the world": """\
.hbm x float32[2, 8] input
    ctrl.rank r0
    ctrl.sub r9, r0, 1
    cc.send x, peer=r9
""",
    "mismatched collective": """\
.hbm x int32[2, 4] input
.hbm y int32[2, 4] output
    ctrl.rank r0
    cc.permute y, x, shift=r0
""",
    "shapes of a send and its recv": """\
.hbm x float32[2, 8] input
.hbm y float32[4, 8] output
""" + NEIGHBOURS + """\
    cc.send x, peer=r2
    cc.recv y, peer=r3
""",
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_the_same_for_every_partition_count(case: str) -> None:
    raised = []
    for partitions in (1, 2, 5, 16):
        with pytest.raises(NeuronemuError) as info:
            spmd(ERRORS[case], "trn2.48xlarge", partitions=partitions)
        raised.append((type(info.value), info.value.render(), info.value.exit_code))
    assert all(r == raised[0] for r in raised), raised
    assert raised[0][2] in (1, 5)


# ------------------------------------------------------------------------------ real MPI

def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def _has_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return _mpiexec() is not None


needs_mpi = pytest.mark.skipif(not _has_mpi(), reason="needs the MPI extra: pip install "
                                                      "'neuronemu[mpi]' (mpi4py + mpich)")


def _cli(args: list[str], cwd: Path, processes: int | None = None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")}
    command = [sys.executable, "-m", "neuronemu", "run", *args]
    if processes is not None:
        command = [_mpiexec(), "-n", str(processes), *command]
    return subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _document(proc) -> dict:
    """The --json document without the two wall-clock figures."""
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    doc.pop("wall_seconds"), doc.pop("compile_seconds")
    return doc


@needs_mpi
@pytest.mark.parametrize("processes", [2, 3])
def test_mpiexec_run_is_byte_identical_to_the_in_process_run(processes: int,
                                                               tmp_path: Path) -> None:
    """The 16-rank send/recv ring all-reduce on `mpiexec -n P`: the same --json document
    (times, per-rank reports, links, output statistics), output .npy files and trace file."""
    results = []
    for label, procs in (("local", None), ("mpi", processes)):
        out = tmp_path / label
        out.mkdir()
        proc = _cli([str(COLLECTIVES / "ring_allreduce.s"), "--json", "--output-dir",
                     str(out / "outputs"), "--trace", str(out / "trace.json")], tmp_path, procs)
        doc = _document(proc)
        outputs = {p.name: p.read_bytes() for p in sorted((out / "outputs").iterdir())}
        trace = (out / "trace.json").read_text().replace(str(out), "<out>")
        doc["trace"] = doc["trace"].replace(str(out), "<out>")
        for entry in doc["outputs"].values():
            entry["path"] = entry["path"].replace(str(out), "<out>")
        results.append((doc, trace, outputs, proc.stderr))
    assert results[0][0]["world"] == 16
    assert results[1] == results[0]


@needs_mpi
def test_mpiexec_two_ranks_per_chip(tmp_path: Path) -> None:
    local = _cli([str(COLLECTIVES / "tp_linear.s"), "--ranks-per-chip", "2", "--json"],
                 tmp_path)
    mpi = _cli([str(COLLECTIVES / "tp_linear.s"), "--ranks-per-chip", "2", "--json"],
               tmp_path, 2)
    docs = [_document(p) for p in (local, mpi)]
    assert docs[0]["world"] == 32
    assert docs[1] == docs[0]


@needs_mpi
def test_mpiexec_error_is_reported_once_with_its_exit_code(tmp_path: Path) -> None:
    kernel = tmp_path / "k.s"
    kernel.write_text(".target trn2\n" + ERRORS["deadlock"])
    local = _cli([str(kernel), "--topology", "trn2.48xlarge"], tmp_path)
    mpi = _cli([str(kernel), "--topology", "trn2.48xlarge"], tmp_path, 2)
    assert local.returncode == 5
    assert mpi.returncode == 5
    assert mpi.stderr.count("error: deadlock") == 1
    assert mpi.stderr == local.stderr


def _mpmd(first: list[str], second: list[str], cwd: Path, command: str = "run"):
    """`mpiexec -n 1 neuronemu run FIRST : -n 1 neuronemu run SECOND`: two processes given
    different command lines (as two hosts with different files would be)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")}
    base = [sys.executable, "-m", "neuronemu", command]
    return subprocess.run([_mpiexec(), "-n", "1", *base, *first, ":", "-n", "1", *base,
                           *second], check=False, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


@needs_mpi
@pytest.mark.parametrize("option", ["--output", "--input"])
def test_a_file_check_failing_on_one_process_ends_the_launch(option: str,
                                                              tmp_path: Path) -> None:
    """A missing output directory or input file on one host: that process exited without a
    word and process 0 waited forever (issue 30). The processes exchange their set-up errors
    before running: all end with the failing process's message, reported once, exit 4."""
    kernel = str(COLLECTIVES / "ring_allreduce.s")
    good = tmp_path / "x.npy"
    np.save(good, np.ones((128, 4096), np.float32))
    if option == "--output":
        mine, theirs = f"y={tmp_path / 'y.npy'}", f"y={tmp_path / 'absent' / 'y.npy'}"
        message = f"error: --output y: cannot write {tmp_path / 'absent' / 'y.npy'}: no such "
    else:
        mine, theirs = f"x={good}", f"x={tmp_path / 'absent.npy'}"
        message = f"error: --input x: no such file {tmp_path / 'absent.npy'}"
    proc = _mpmd([kernel, option, mine, "--json"], [kernel, option, theirs, "--json"],
                 tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.count(message) == 1, proc.stderr
    assert json.loads(proc.stdout)["error"]["exit_code"] == 4
    assert not (tmp_path / "y.npy").exists()


@needs_mpi
def test_processes_given_different_seeds_or_inputs_are_refused(tmp_path: Path) -> None:
    """Different --seed values or --input files on the processes were mixed into one result
    (issue 30): every process's kernel, inputs and options are compared before running."""
    kernel = str(COLLECTIVES / "ring_allreduce.s")
    proc = _mpmd([kernel, "--seed", "1"], [kernel, "--seed", "2"], tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.count("error: the processes of this mpiexec launch would not run the "
                             "same thing: process 1's seed is 2, process 0's 1.") == 1
    ones, zeros = tmp_path / "ones.npy", tmp_path / "zeros.npy"
    np.save(ones, np.ones((128, 4096), np.float32))
    np.save(zeros, np.zeros((128, 4096), np.float32))
    proc = _mpmd([kernel, "--input", f"x={ones}"], [kernel, "--input", f"x={zeros}"],
                 tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "process 1's input 'x' is content " in proc.stderr
    edited = tmp_path / "k.s"
    edited.write_text(Path(kernel).read_text().replace("init=normal(0, 1)", "init=ones"))
    proc = _mpmd([kernel], [str(edited)], tmp_path)
    assert proc.returncode == 4 and "process 1's kernel is content " in proc.stderr


@needs_mpi
def test_grade_under_mpiexec_is_refused_by_every_process(tmp_path: Path) -> None:
    """`mpiexec -n 2 neuronemu grade` hung (each process graded alone; the multi-chip lab's
    runs waited for each other): every process refuses, process 0 says why."""
    from neuronemu.grade.labs import lab_dir

    starter = str(lab_dir("07-ring-allreduce") / "starter.s")
    proc = _mpmd(["7", starter], ["7", starter], tmp_path, command="grade")
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.count("error: neuronemu grade runs in one process: run it without "
                             "mpiexec") == 1


def test_mpi_launch_is_detected_from_the_launcher_environment(monkeypatch) -> None:
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE",
                 "PMI_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert not comm_module.launched_by_mpiexec()
    assert comm_module.partition_number() == 0
    monkeypatch.setenv("PMI_SIZE", "1")     # mpiexec -n 1: one partition, in this process
    assert not comm_module.launched_by_mpiexec()
    monkeypatch.setenv("PMI_SIZE", "3")
    monkeypatch.setenv("PMI_RANK", "2")
    assert comm_module.launched_by_mpiexec()
    assert comm_module.partition_number() == 2


API_UNDER_MPI = """\
import hashlib, json, sys
import neuronemu
from neuronemu.api import run_spmd
from neuronemu.multichip.comm import partition_number
result = run_spmd(neuronemu.assemble_file(sys.argv[1]))
if result is None:
    print(json.dumps({"partition": partition_number(), "result": None}))
else:
    digest = hashlib.sha256(b"".join(v.tobytes() for v in result.outputs.values())).hexdigest()
    print(json.dumps({"partition": partition_number(), "world": result.world,
                      "time_ns": result.time_ns, "outputs": digest}))
"""


@needs_mpi
def test_python_api_under_mpiexec(tmp_path: Path) -> None:
    """run_spmd under mpiexec -n 2: partition 0 returns the whole result (the in-process
    run's outputs and time), partition 1 returns None."""
    script = tmp_path / "api.py"
    script.write_text(API_UNDER_MPI)
    kernel = str(COLLECTIVES / "pairwise_alltoall.s")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_"))}
    proc = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(script), kernel],
                          check=False, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = sorted((json.loads(line) for line in proc.stdout.splitlines()),
                   key=lambda d: d["partition"])
    assert lines[1] == {"partition": 1, "result": None}
    local = run_spmd(neuronemu.assemble_file(kernel))
    digest = hashlib.sha256(b"".join(v.tobytes() for v in local.outputs.values())).hexdigest()
    assert lines[0] == {"partition": 0, "world": 16, "time_ns": local.time_ns,
                        "outputs": digest}


SKEWED_SWAP = """\
.hbm x int32[128, 512] input
.hbm y int32[128, 512] output
.sbuf xs int32[128, 512]
.sbuf ys int32[128, 512]
    ctrl.rank r0
    ctrl.rem r4, r0, 2
    ctrl.sub r5, 1, r4
    ctrl.add r5, r5, r0
    ctrl.sub r5, r5, r4            # partner: rank xor 1
    dma.copy xs, x
    ctrl.bne r4, 1, go
    dma.copy xs, x                 # odd ranks reach the swap later than one round's window
    dma.copy xs, x
    dma.copy xs, x
go:
    cc.sendrecv ys, xs, send_to=r5, recv_from=r5
    dma.copy y, ys
"""


@pytest.mark.parametrize("partitions", [1, 2, 16])
def test_a_round_of_sendrecv_send_halves_alone_is_progress(partitions: int) -> None:
    """Even ranks book their send halves a round before the odd ranks reach the swap; no recv
    completes in that round, which is not a deadlock. Every rank ends with its partner's x."""
    x = np.arange(16 * 128 * 512, dtype=np.int32).reshape(16, 128, 512)
    result = spmd(SKEWED_SWAP, "trn2.48xlarge", {"x": x}, partitions=partitions)
    assert np.array_equal(result.outputs["y"], x[np.arange(16) ^ 1])


def test_loopback_checks_host_memory_for_every_rank_of_the_process() -> None:
    """The partitions of a loopback run share one process: each checks the host's memory for
    all their ranks, so the check (and its message) is the one of the run in one partition."""
    seen = []

    def body(comm):
        seen.append(comm.ranks_on_this_host(comm.partition + 1))

    comm_module.run_loopback(3, body)
    assert seen == [6, 6, 6]
    assert comm_module.LocalComm().ranks_on_this_host(5) == 5
