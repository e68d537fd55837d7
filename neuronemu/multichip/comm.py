"""How the partitions of a multi-rank run talk: the message layer under the SPMD driver.

A run's ranks are split into P partitions (whole chips; on switched topologies whole servers:
``Partitioning``). Each partition runs its own ranks and holds a replica of everything the
driver decides on (every rank's stop, the links' bookings), so the partitions only need three
collective calls, all made by every partition in the same order:

* ``allgather(obj)``: every partition's object, in partition order;
* ``alltoall(objs)``: ``objs[q]`` goes to partition q; returns what each partition sent here;
* ``gather(obj)``: partition 0 gets every partition's object (the others get None).

Backends: ``LocalComm`` (one partition: the embedded default, no dependency), ``LoopbackComm``
(P partitions as threads of one process, the determinism test without MPI: ``run_loopback``)
and ``MpiComm`` (one partition per MPI process, ``mpiexec -n P``; mpi4py imported only then).
"""

from __future__ import annotations

import copy
import os
import sys
import threading
from collections.abc import Callable
from typing import Any


class Comm:
    """One partition's end of the message layer."""

    partition: int = 0
    partitions: int = 1

    def allgather(self, obj: Any) -> list:
        raise NotImplementedError

    def alltoall(self, objs: list) -> list:
        raise NotImplementedError

    def gather(self, obj: Any) -> list | None:
        everything = self.allgather(obj)
        return everything if self.partition == 0 else None

    def ranks_on_this_host(self, mine: int) -> int:
        """How many ranks this host's memory holds when this partition holds ``mine``."""
        return mine

    @property
    def name(self) -> str:
        return type(self).__name__


class LocalComm(Comm):
    """The whole run in this process: every call is the identity."""

    def allgather(self, obj: Any) -> list:
        return [obj]

    def alltoall(self, objs: list) -> list:
        return list(objs)


def agree(comm: Comm, error: BaseException | None) -> None:
    """Raise, on every partition alike, the first partition's error of this step (None: this
    partition had none); every partition must call it at the same point."""
    if comm.partitions > 1:
        first = next((e for e in comm.allgather(error) if e is not None), None)
        # the partition that raised it raises its own object, the others a copy
        error = first if first is None or first is error else copy.copy(first)
    if error is not None:
        raise error


_launch = {"checked": False}


def launch_checked() -> bool:
    """Whether this process has made its launch check (``check_launch``)."""
    return _launch["checked"]


def check_launch(comm: Comm, error: BaseException | None, plan: dict | None) -> None:
    """The first exchange of an MPI launch, made once by every process before any other:
    each brings its set-up error (None: it had none) and its ``plan`` (label -> value or
    digest of what it is about to run: the kernel, the inputs, the options). The first
    process's error is raised on every process alike (a file missing on one host ends the
    launch with its message instead of leaving the others waiting); then every plan must equal
    process 0's, else an InputError names what differs (different --input files or --seed
    values would otherwise be mixed into one result)."""
    from neuronemu.errors import InputError

    _launch["checked"] = True
    everything = comm.allgather((error, plan))
    failed = next((e for e, _ in everything if e is not None), None)
    if failed is not None:   # the process that raised it raises its own object
        raise failed if failed is error else copy.copy(failed)
    first = everything[0][1]
    differences = []
    for p, (_, other) in enumerate(everything[1:], 1):
        for label in sorted(set(first) | set(other)):
            if first.get(label) != other.get(label):
                differences.append(f"process {p}'s {label} is {_shown(other.get(label))}, "
                                   f"process 0's {_shown(first.get(label))}")
    if differences:
        shown = "; ".join(differences[:6]) + ("; ..." if len(differences) > 6 else "")
        raise InputError(f"the processes of this mpiexec launch would not run the same thing: "
                         f"{shown}. Every process must be given the same kernel, inputs and "
                         f"options (each host reads its own copy of the files)")


def _shown(value) -> str:
    if value is None:
        return "not given"
    if isinstance(value, str) and value.startswith("digest "):
        return f"content {value[7:19]}"
    return repr(value)


class _Hub:
    """What the threads of a loopback run share: one slot per partition and a barrier."""

    def __init__(self, partitions: int):
        self.slots: list[Any] = [None] * partitions
        self.barrier = threading.Barrier(partitions)


class LoopbackComm(Comm):
    """Partition ``partition`` of ``partitions`` running as a thread beside the others (one
    process, no copies: objects are shared by reference, so receivers must not modify them)."""

    def __init__(self, hub: _Hub, partition: int):
        self.hub = hub
        self.partition = partition
        self.partitions = len(hub.slots)

    def _exchange(self, obj: Any) -> list:
        hub = self.hub
        hub.slots[self.partition] = obj
        hub.barrier.wait()          # every partition has put its object
        everything = list(hub.slots)
        hub.barrier.wait()          # every partition has read them: the slots may be reused
        return everything

    def allgather(self, obj: Any) -> list:
        return self._exchange(obj)

    def alltoall(self, objs: list) -> list:
        everything = self._exchange(objs)
        return [everything[p][self.partition] for p in range(self.partitions)]

    def gather(self, obj: Any) -> list | None:
        everything = self._exchange(obj)
        return everything if self.partition == 0 else None

    def ranks_on_this_host(self, mine: int) -> int:
        return sum(self._exchange(mine))   # every partition lives in this process


def run_loopback(partitions: int, body: Callable[[Comm], Any]) -> list:
    """Run ``body(comm)`` on ``partitions`` threads, one per partition; returns their results
    in partition order. When any partition raises, the others are released (their pending
    exchange raises) and partition 0's error, or the first one raised, is re-raised here:
    every partition raises the same error for a fault of the run, by design."""
    hub = _Hub(partitions)
    results: list[Any] = [None] * partitions
    errors: list[BaseException | None] = [None] * partitions

    def work(p: int) -> None:
        try:
            results[p] = body(LoopbackComm(hub, p))
        except threading.BrokenBarrierError:
            pass                    # another partition failed first
        except BaseException as error:  # noqa: BLE001 - re-raised below, in the caller
            errors[p] = error
            hub.barrier.abort()

    threads = [threading.Thread(target=work, args=(p,), name=f"partition-{p}", daemon=True)
               for p in range(1, partitions)]
    for thread in threads:
        thread.start()
    work(0)
    for thread in threads:
        thread.join()
    raised = [e for e in errors if e is not None]
    if raised:
        raise raised[0]
    return results


class MpiComm(Comm):
    """One partition per MPI process of ``MPI.COMM_WORLD``. Objects travel pickled: per-round
    metadata and payloads with mpi4py's own collectives (pickled in-band: one extra copy; a
    collective step's chunks are packed into one array first), the final results with numpy
    arrays as out-of-band pickle-5 buffers (mpi4py.util.pkl5: no copy into the pickle stream,
    no 2 GiB limit per message; its point-to-point collectives cost more per small call,
    measured)."""

    def __init__(self):
        from mpi4py import MPI
        from mpi4py.util import pkl5

        self.comm = MPI.COMM_WORLD
        self.big = pkl5.Intracomm(MPI.COMM_WORLD)
        self.partition = self.comm.Get_rank()
        self.partitions = self.comm.Get_size()

    def allgather(self, obj: Any) -> list:
        return self.comm.allgather(obj)

    def alltoall(self, objs: list) -> list:
        return self.comm.alltoall(objs)

    def gather(self, obj: Any) -> list | None:
        return self.big.gather(obj, root=0)

    def ranks_on_this_host(self, mine: int) -> int:
        import socket

        host = socket.gethostname()
        return sum(n for name, n in self.comm.allgather((host, mine)) if name == host)

    def abort(self) -> None:
        """End every process of the launch: after an exception this partition alone raised
        (a bug, not a fault of the run, which every partition raises alike), the others would
        wait for it forever."""
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        self.comm.Abort(1)


_MPI_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")


def launched_by_mpiexec() -> bool:
    """Whether this process is one of several started by mpiexec / mpirun / srun (read from the
    launcher's environment, so mpi4py is imported only when it is)."""
    for name in _MPI_SIZE_VARIABLES:
        try:
            if int(os.environ.get(name, "1")) > 1:
                return True
        except ValueError:
            continue
    return False


def partition_number() -> int:
    """This process's MPI rank under mpiexec (read from the launcher's environment), else 0."""
    if not launched_by_mpiexec():
        return 0
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            continue
    return 0


def mpi_comm() -> MpiComm:
    """This process's partition of an mpiexec launch; a clear error without the MPI extra."""
    from neuronemu.errors import InputError

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise InputError("this run was started by mpiexec with several processes, but mpi4py "
                         "is not installed: pip install 'neuronemu[mpi]'") from None
    return MpiComm()


class Partitioning:
    """Which partition owns each rank: the topology's units (chips; on switched topologies
    servers, so a chip's messages to its own server's switch stay in one partition) are dealt
    out in order, ``units // P`` or one more to each partition."""

    def __init__(self, topology, ranks_per_chip: int, partitions: int):
        from neuronemu.errors import InputError

        chips = topology.chips if topology is not None else 1
        switched = topology is not None and topology.layout == "switched"
        chips_per_unit = topology.chips_per_server if switched else 1
        units = chips // chips_per_unit
        what = "servers" if switched else "chips"
        if not 1 <= partitions <= units:
            name = topology.name if topology is not None else "one chip"
            raise InputError(
                f"{partitions} partitions cannot split {name}: a partition holds whole {what} "
                f"(its {units} {what} give at most {units} partitions), so that every "
                f"message inside a {what[:-1]} stays in one process")
        self.partitions = partitions
        ranks_per_unit = chips_per_unit * ranks_per_chip
        self.owner: list[int] = []
        for p in range(partitions):
            lo, hi = p * units // partitions, (p + 1) * units // partitions
            self.owner.extend([p] * ((hi - lo) * ranks_per_unit))
        self.world = len(self.owner)

    def ranks(self, partition: int) -> list[int]:
        return [r for r, p in enumerate(self.owner) if p == partition]
