"""A multi-rank run's partitions (docs/multichip.md, "Partitions"): the ranks of a topology run
in this process as one partition, as loopback threads, or as the processes mpiexec started;
each partition runs the ranks it owns (spmd.execute) and reports them, and partition 0 gathers
every rank's Result."""

from __future__ import annotations

import contextlib

import numpy as np

from neuronemu.errors import REPORTED, InputError
from neuronemu.hostmem import memory_errors
from neuronemu.results import Result, finish


def run_ranks(program, topo, ranks_per_chip: int, per_rank: list[dict], seed: int,
              partitions: int | None, comm, options: dict):
    """Every rank's Result and the links' state, from partition 0 (the only one under mpiexec
    that returns them; the others return None). ``comm``: ``launch_comm(partitions)``, which
    the caller has already checked the launch with; ``options``: spmd.execute's run options."""
    if comm is None and partitions is not None and partitions > 1:
        from neuronemu.exec.core import RunLimits, stop_on_sigint
        from neuronemu.multichip.comm import run_loopback

        limits = RunLimits(options["max_instructions"], options["timeout"])
        with stop_on_sigint(limits), memory_errors():
            parts = run_loopback(partitions, lambda c: _run_partition(
                program, topo, ranks_per_chip, per_rank, seed, c, options, limits))
        return parts[0]
    results, network = _run_partition(program, topo, ranks_per_chip, per_rank, seed, comm,
                                      options)
    return None if results is None else (results, network)


def launch_plan(program, topology: str, ranks_per_chip: int, inputs, seed: int,
                options: dict) -> dict:
    """What this process is about to run, as values and digests the processes of an MPI
    launch compare (comm.check_launch): the lowered kernel and its declarations, every input
    array's dtype, shape and bytes (one pass over them: ~1 s per GB) and the options."""
    import hashlib

    def digest(*parts) -> str:
        h = hashlib.blake2b(digest_size=16)
        for part in parts:
            h.update(part if isinstance(part, (bytes, memoryview)) else repr(part).encode())
        return "digest " + h.hexdigest()

    declarations = sorted((t.name, t.dtype, t.shape, t.role, t.init, t.offset)
                          for t in program.tensors.values())
    plan = {"kernel": digest(program.instrs.tobytes(), program.ops.tobytes(),
                             program.imms.tobytes(), declarations, program.sync_mode),
            "target": program.target.name, "topology": topology,
            "ranks per chip": ranks_per_chip, "seed": seed,
            **{name.replace("_", " "): value for name, value in options.items()}}
    for name, value in sorted((inputs or {}).items()):
        array = np.ascontiguousarray(np.asarray(value))
        plan[f"input '{name}'"] = digest(str(array.dtype), array.shape,
                                         memoryview(array.reshape(-1).view(np.uint8)))
    return plan


def launch_comm(partitions: int | None):
    """The MPI partition of this process when mpiexec started several, else None (the run is
    in this process: one partition, or ``partitions`` loopback threads)."""
    from neuronemu.multichip.comm import launched_by_mpiexec, mpi_comm

    if not launched_by_mpiexec():
        if partitions is not None and partitions < 1:
            raise InputError(f"partitions must be at least 1, not {partitions}")
        return None
    comm = mpi_comm()
    if partitions is not None and partitions != comm.partitions:
        raise InputError(f"partitions={partitions}, but mpiexec started {comm.partitions} "
                         f"processes: under mpiexec each process is one partition")
    return comm


def _run_partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits=None):
    """Run the ranks one partition owns and report them: partition 0 returns every rank's
    Result (gathered) and the links' state; the others return (None, network). An error on
    any partition (a fault, a deadlock, a finish that fails) is raised on every partition."""
    try:
        return _partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits)
    except REPORTED:   # every partition raises it alike (Ctrl-C reaches them all)
        raise
    except BaseException:
        if hasattr(comm, "abort"):
            comm.abort()
        raise


def _partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits
               ) -> tuple[list[Result] | None, object]:
    from neuronemu.multichip import spmd
    from neuronemu.multichip.comm import agree

    split = comm is not None and comm.partitions > 1
    # split: a MemoryError one partition alone meets stays one (the caller aborts an MPI
    # launch on it, a loopback run re-raises it as a ResourceError in the caller); only the
    # agreement points (set-up in spmd.execute, the reports below) turn it into an error
    # every partition raises alike
    with memory_errors() if not split else contextlib.nullcontext():
        cores, network = spmd.execute(program, topo, ranks_per_chip, per_rank, seed,
                                      comm=comm, limits=limits, **options)
        world = len(per_rank)
        if comm is None or comm.partitions == 1:
            return [finish(program, cores[r], seed, world) for r in range(world)], network
        results, error = {}, None
        for r in sorted(cores):
            try:
                results[r] = finish(program, cores[r], seed, world)
            except REPORTED as e:
                error = e
                break
            except MemoryError as e:
                from neuronemu.hostmem import out_of_memory

                error = out_of_memory(e)
                break
        del cores
        agree(comm, error)
        for result in results.values():
            result.program = None   # every partition has it: not sent along
        parts = comm.gather(results)
        if parts is None:
            return None, network
        merged = {r: result for part in parts for r, result in part.items()}
        for result in merged.values():
            result.program = program
        return [merged[r] for r in range(world)], network


def agreed_error(error):
    """Under mpiexec, an error met before the processes checked their launch (a file missing
    on one host, a kernel that does not assemble there): the processes exchange it in the
    launch check that the others are waiting in, and every one returns the first process's
    error, so process 0 reports it and none waits forever. Otherwise ``error`` itself."""
    from neuronemu.multichip.comm import (
        check_launch,
        launch_checked,
        launched_by_mpiexec,
        mpi_comm,
    )

    if not launched_by_mpiexec() or launch_checked():
        return error
    try:
        check_launch(mpi_comm(), error, None)
    except REPORTED as first:
        return first
    return error


def end_launch() -> None:
    """Under mpiexec, before the launch check, anything else (a bug, Ctrl-C) ends every
    process of the launch (with this one's traceback): the others wait in the check."""
    from neuronemu.multichip.comm import launch_checked, launched_by_mpiexec, mpi_comm

    if launched_by_mpiexec() and not launch_checked():
        try:
            comm = mpi_comm()
        except REPORTED:
            return
        comm.abort()
