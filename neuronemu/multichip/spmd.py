"""Run one kernel on every rank (SPMD) and carry out its cc.* instructions.

Each rank is a ``Core`` with its own memories (HBM holds only the declared tensors; SBUF and
PSUM only the bytes the kernel allocates), registers and timelines. Each rank runs until it finishes
or stops at a cc.* instruction; the driver then carries out, of the ranks that can act, the one
whose instruction is ready first in modelled time (ties: lowest rank):

* ``cc.send`` is eager: the tile is read, timed on the network from when it is ready, and queued
  for the receiver (per sender and receiver, in order); the sender goes on.
* ``cc.recv`` takes the oldest message from its peer, or waits for one.
* ``cc.sendrecv`` does both: its send half goes first (eager), then it waits as a recv from
  ``recv_from``; it completes when both halves have.
* a collective (and ``cc.barrier``) waits until every rank stands at one; then all must agree on
  the instruction, shapes, dtypes and options, and it runs on all of them at once.

When no rank can go on and some have not finished, the run stops with a deadlock report that
names each waiting rank, its line and what it waits for. Everything happens in a fixed order, so
runs are deterministic.

In sync mode ``explicit`` each rank's times come from its replay (neuronemu/timing/explicit.py),
which keeps only the ordering semaphores give. The driver logs what each cc.* instruction did
(which message a send posted and a recv took, which collective); ``_couple_replays`` then
replays all ranks together on a fresh copy of the links: a rank's replay stops at each cc.*
event, and the event's end is worked out as above from the replayed start times of the ranks
involved (a recv ends when the matching send's data has arrived, a collective when it has run
from every rank's replayed arrival). The ranks still exchange only messages: a send's arrival
time, a collective's arrivals and completions.
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections import deque

import numpy as np

from neuronemu.errors import InputError, NeuronemuError, RuntimeFault
from neuronemu.exec.core import FINISHED, Core, RunLimits, stop_on_sigint
from neuronemu.machine import layout as L
from neuronemu.multichip import collectives as C
from neuronemu.multichip.comm import Comm, LocalComm, Partitioning, agree
from neuronemu.multichip.network import Network

MESH_AS_ARRAYS = True   # Driver._mesh_all_reduce; False: as any algorithm (the tests' reference)


@functools.cache
def collectives() -> frozenset[str]:
    """The cc.* instructions every rank takes part in at once (isa/cc.toml driver = collective)."""
    from neuronemu.isa.table import load_isa

    return frozenset(n for n, d in load_isa().instructions.items() if d.driver == "collective")


class CommError(RuntimeFault):
    """Ranks that cannot agree: a deadlock, unmatched messages or mismatched collectives."""

    exit_code = 5


class _Message:
    __slots__ = ("arrival", "bits", "dst", "dtype", "nbytes", "pc", "replayed", "shape", "src")

    def __init__(self, src, pc, bits, dtype, shape, arrival, dst=-1, nbytes=0):
        self.src, self.pc, self.bits, self.dtype = src, pc, bits, dtype
        self.shape, self.arrival = shape, arrival
        self.dst, self.nbytes = dst, nbytes
        self.replayed: float | None = None   # arrival in the explicit-sync replay


class _Collective:
    """What the explicit replay needs to re-time one collective: its steps and chunk sizes
    (or, in groups of one rank, each rank's local copy of ``nbytes``; or a barrier)."""

    __slots__ = ("barrier", "local", "nbytes", "nbytes_of", "steps")

    def __init__(self, steps, nbytes_of, barrier: bool, local: bool, nbytes: int):
        self.steps, self.nbytes_of = steps, nbytes_of
        self.barrier, self.local, self.nbytes = barrier, local, nbytes

    def times(self, ready: list[float], network: Network) -> list[float]:
        """When each rank finishes, if rank r arrives at ready[r] (as Driver._collective)."""
        if self.barrier:
            return C.time_steps(self.steps, lambda k: 0, [max(ready)] * len(ready), network)
        if self.local:
            return [r + self.nbytes / network.local_gb_s for r in ready]
        return C.time_steps(self.steps, self.nbytes_of, ready, network)


def execute(program, topology, ranks_per_chip: int, inputs: list[dict], seed: int, *,
            max_instructions: int, max_trace_events: int | None, stochastic_rounding: bool,
            rounding_seed: int | None, timeout: float | None = None, comm: Comm | None = None,
            limits: RunLimits | None = None) -> tuple[dict[int, Core], Network]:
    """Run every rank to its end; returns the cores of the ranks this partition owns (all of
    them with one partition) and the links' state (the same on every partition).
    ``max_instructions`` bounds each rank; ``timeout`` (seconds) and Ctrl-C bound the whole
    run: every rank's loop looks at the same deadline and flag (``limits``, shared by the
    partitions of a loopback run)."""
    from neuronemu.hostmem import check_host_memory

    comm = comm if comm is not None else LocalComm()
    partitioning = Partitioning(topology, ranks_per_chip, comm.partitions)
    world = partitioning.world
    mine = partitioning.ranks(comm.partition)
    if program.sync_mode == "explicit" and comm.partitions > 1:
        raise InputError(f"a .sync explicit kernel runs its ranks in one process: its replay "
                         f"couples every rank's timeline (run it without --partitions / "
                         f"mpiexec; {comm.partitions} partitions were asked for)")
    # compact on-chip memory on one rank too: tiles never leave their allocations (in_bounds),
    # so bytes past the last allocation are never read or written; filling and tracking the
    # whole 24-32 MiB SBUF cost a small kernel's run ~3 ms and its RSS 28+ MiB
    cores, error = {}, None
    try:
        check_host_memory(program, comm.ranks_on_this_host(len(mine)), compact=True)
        cores = {r: Core(program, inputs[r], seed, rank=r, world=world,
                         max_trace_events=max_trace_events,
                         stochastic_rounding=stochastic_rounding, rounding_seed=rounding_seed,
                         compact=True) for r in mine}
    except MemoryError as e:
        from neuronemu.hostmem import out_of_memory

        error = out_of_memory(e)
    except NeuronemuError as e:
        error = e
    agree(comm, error)   # one partition short of memory stops them all, alike
    network = Network(topology, program.target, ranks_per_chip)
    own_limits = limits is None
    limits = limits if limits is not None else RunLimits(max_instructions, timeout)
    with stop_on_sigint(limits) if own_limits else contextlib.nullcontext():
        driver = Driver(program, topology, ranks_per_chip, cores, network, limits, comm,
                         partitioning.owner)
        driver.run()
    if program.sync_mode == "explicit":
        from neuronemu.timing.explicit import replay_cores

        ranks = [cores[r] for r in range(world)]   # one partition: explicit runs need all
        couple = None
        if any(driver.log):   # cc.* events: the ranks' replays advance together
            links = Network(topology, program.target, ranks_per_chip)
            couple = functools.partial(_couple_replays, program, network=links,
                                       logs=driver.log)
        for core, replayed in zip(ranks, replay_cores(program, ranks, couple), strict=True):
            core.replay = replayed
    return cores, network


class _Stop:
    """Where a stopped rank stands, as every partition knows it (its owner works it out and
    the partitions exchange them): the cc.* instruction, when it is ready, whom it sends to
    or receives from, what it sends, a collective's signature; or that it finished, or the
    error it raised."""

    __slots__ = ("dtype", "error", "finished", "name", "nbytes", "pc", "peer", "ready", "shape",
                 "signature", "source")

    def __init__(self, pc: int = -1, name: str = "", ready: float = 0.0):
        self.pc, self.name, self.ready = pc, name, ready
        self.finished = False
        self.error: Exception | None = None
        self.peer = self.source = -1
        self.nbytes = 0
        self.dtype, self.shape, self.signature = "", (), ()


def _window(topology, ranks_per_chip: int, network: Network) -> float:
    """The span of ready times one round books messages from: the shortest time any message
    between two ranks takes to arrive (a DMA's fixed cost on one chip, the fewest hops
    between two chips), a property of the topology, never of the partitioning."""
    spans = []
    if ranks_per_chip > 1 or topology is None or topology.chips == 1:
        spans.append(network.local_ns)
    if topology is not None and topology.chips > 1:
        hops = 2 if topology.layout == "switched" else 1
        spans.append(hops * topology.hop_ns)
    return max(min(spans), 1.0)


class Driver:
    """Carries out the cc.* instructions of every rank: mailboxes, collectives, their timing on
    the links, deadlock reports (``run``; the debugger drives it rank by rank instead, through
    ``stopped``, ``update_stops`` and ``coordinate``)."""

    def __init__(self, program, topology, ranks_per_chip, cores: dict[int, Core],
                 network: Network, limits: RunLimits, comm: Comm, owner: list[int]):
        self.program = program
        self.topology = topology
        self.ranks_per_chip = ranks_per_chip
        self.cores = cores
        self.world = len(owner)
        self.network = network
        self.limits = limits
        self.comm = comm
        self.owner = owner
        self.me = comm.partition
        self.split = comm.partitions > 1
        self.window = _window(topology, ranks_per_chip, network)
        self.mail: dict[tuple[int, int], deque[_Message]] = {}
        self.stops: list[_Stop] = [_Stop() for _ in range(self.world)]
        self.finished = [False] * self.world
        self.order = C.ring_order(topology, ranks_per_chip)
        self.cube = C.hypercube_order(topology, ranks_per_chip)
        # per rank, what each cc.* instruction it carried out did, in program order (for the
        # explicit-sync replay): ("send", message), ("recv", message, own send half or None),
        # ("collective", _Collective shared by every rank)
        self.log: list[list[tuple]] = [[] for _ in range(self.world)]
        # only the explicit replay reads the log: in auto mode it would keep every message's
        # payload and every collective's steps alive for the whole run
        self.logging = program.sync_mode == "explicit"
        self.send_half: dict[int, _Message] = {}
        self.sent: dict[int, float] = {}  # rank at a cc.sendrecv whose send half is done -> end
        self.timer: tuple = ((), None, False)

    def name(self, r: int) -> str:
        return self.stops[r].name

    def where(self, r: int) -> str:
        ins = self.program.instruction(self.stops[r].pc)
        return f"{ins.location.source.name}:{ins.location.line} ({ins.definition.name})"

    def run(self) -> None:
        """Rounds, the same on every partition: the ranks that acted last round run to their
        next cc.* instruction (each partition its own), the partitions exchange where they
        stopped, then the round's actions are carried out in a fixed order
        (docs/multichip.md, "Order"): the sends ready in [t, t + window), t the earliest ready
        send, in order of (ready, rank), booked on the links; then every recv whose message
        has been sent, in rank order. When nothing can act, every rank at one collective runs
        it, else the run is deadlocked."""
        dirty: list[int] | None = list(range(self.world))
        while dirty is not None:
            self.update_stops([(r, self._stop(r)) for r in dirty if self.owner[r] == self.me])
            dirty = self.coordinate()

    def coordinate(self) -> list[int] | None:
        """With every rank stopped (at a cc.* instruction, or finished): carry out rounds
        until some ranks have completed their cc.* instruction, and return them (in rank
        order: they run next, to their next stop); None when every rank has finished. The
        debugger (neuronemu/debug/world.py) calls it between the ranks it runs itself."""
        while True:
            if all(self.finished):
                self._check_mail()
                return None
            dirty, booked = self._round()
            if dirty:
                return dirty
            if booked:   # a cc.sendrecv's send half alone is progress too
                continue
            if not any(self.finished) and all(s.name in collectives() for s in self.stops):
                self._collective()
                return list(range(self.world))
            raise self._deadlock([r for r in range(self.world) if not self.finished[r]])

    def update_stops(self, mine: list[tuple[int, _Stop]]) -> None:
        """Learn where every rank that ran stopped; raise the lowest such rank's error."""
        updates = mine
        if self.split:
            updates = sorted((pair for part in self.comm.allgather(mine) for pair in part),
                             key=lambda pair: pair[0])
        for r, stop in updates:
            if stop.error is not None:
                error = stop.error
                raise error if self.owner[r] == self.me else copy.copy(error)
            self.stops[r] = stop
            self.finished[r] = stop.finished

    def _stop(self, r: int) -> _Stop:
        """Run rank r (owned here) to its next cc.* instruction, or its end."""
        return self.stopped(r, self.cores[r].run(self.limits) == FINISHED)

    def stopped(self, r: int, finished: bool) -> _Stop:
        """Where rank r (owned here) stands after its run: at the cc.* instruction at its pc,
        or ``finished`` (with the fault its status holds, if any)."""
        core = self.cores[r]
        if finished:
            stop = _Stop()
            stop.finished = True
            if core.status != L.STATUS_OK:
                from neuronemu.exec.faults import fault as fault_of

                fault = fault_of(self.program, core.status, core.pc, core.regs, self.limits,
                                 core.steps)
                if self.world > 1:
                    fault.message = f"rank {r}: {fault.message}"
                stop.error = fault
            return stop
        name = self.program.instruction(core.pc).definition.name
        # a stopped rank's timeline does not change until it acts, so this stays valid
        stop = _Stop(core.pc, name, core.ready_ns())
        try:
            if name in ("cc.send", "cc.sendrecv"):
                stop.peer = self._peer(core, "peer" if name == "cc.send" else "send_to")
                tile = self.program.instruction(core.pc).args["src"]
                stop.dtype, stop.shape = tile.dtype, (tile.partitions, tile.free_size)
                stop.nbytes = tile.partitions * tile.free_size * tile_itemsize(tile)
            if name in ("cc.recv", "cc.sendrecv"):
                stop.source = self._peer(core, "peer" if name == "cc.recv" else "recv_from")
            if name in collectives():
                stop.signature = self._signature(core)
        except RuntimeFault as error:
            stop.error = error
        return stop

    def _round(self) -> tuple[list[int], bool]:
        """Carry out one round's sends and recvs; returns the ranks that completed a cc.*
        instruction and whether any send was booked."""
        stops, world = self.stops, self.world
        dirty: list[int] = []
        booked: list[int] = []
        sends = sorted((stops[r].ready, r) for r in range(world)
                       if not self.finished[r] and (stops[r].name == "cc.send" or (
                           stops[r].name == "cc.sendrecv" and r not in self.sent)))
        if sends:
            horizon = sends[0][0] + self.window
            booked = [r for ready, r in sends if ready < horizon]
            outgoing: list[list] = [[] for _ in range(self.comm.partitions)]
            crossing = []
            for r in booked:
                message = self._send(r, outgoing)
                if self.owner[message.dst] != self.owner[r]:
                    crossing.append(message)
                if stops[r].name == "cc.send":
                    dirty.append(r)
            if crossing:   # known alike everywhere: every partition books every send
                received = [iter(box) for box in self.comm.alltoall(outgoing)]
                for message in crossing:
                    if self.owner[message.dst] == self.me:
                        message.bits = next(received[self.owner[message.src]])
        for r in range(world):
            stop = stops[r]
            if self.finished[r] or not (stop.name == "cc.recv" or (
                    stop.name == "cc.sendrecv" and r in self.sent)):
                continue
            box = self.mail.get((stop.source, r))
            if box:
                self._recv(r, box.popleft(), self.sent.pop(r, 0.0))
                dirty.append(r)
        return sorted(dirty), bool(booked)

    # --- point to point -------------------------------------------------------------------

    def _peer(self, core: Core, arg: str = "peer") -> int:
        peer = core.int_arg(arg)
        if not 0 <= peer < self.world:
            ins = self.program.instruction(core.pc)
            raise RuntimeFault(f"rank {core.rank}: {ins.definition.name} {arg}={peer} is not a "
                               f"rank (ranks 0..{self.world - 1})", self._location(core, arg))
        return peer

    def _location(self, core: Core, arg: str | None = None):
        ins = self.program.instruction(core.pc)
        value = ins.args.get(arg) if arg else None
        return getattr(value, "location", None) or ins.location

    def _send(self, r: int, outgoing: list[list]) -> _Message:
        """Book rank r's send on the links and post it to the peer's mailbox (its bits go to
        the peer's partition). A cc.send completes when its data has arrived; a cc.sendrecv
        after its receive half too."""
        stop = self.stops[r]
        peer, ready = stop.peer, stop.ready
        _, arrival = self.network.transfer(r, peer, stop.nbytes, ready)
        bits = None
        if self.owner[r] == self.me:
            core = self.cores[r]
            tile = self.program.instruction(stop.pc).args["src"]
            bits = core.load("src").astype(f"<u{tile_itemsize(tile)}")
            if self.owner[peer] != self.me:
                outgoing[self.owner[peer]].append(bits)
        message = _Message(r, stop.pc, bits, stop.dtype, stop.shape, arrival, peer, stop.nbytes)
        self.mail.setdefault((r, peer), deque()).append(message)
        if stop.name == "cc.send":
            if self.logging:
                self.log[r].append(("send", message))
            if self.owner[r] == self.me:
                self.cores[r].complete(ready, arrival, stop.nbytes)
        else:
            self.sent[r] = arrival
            self.send_half[r] = message
        return message

    def _recv(self, r: int, message: _Message, sent: float = 0.0) -> None:
        """Store the message in dst; the instruction ends when the data is there (and, for a
        cc.sendrecv, when its own send has arrived too)."""
        stop = self.stops[r]
        ins = self.program.instruction(stop.pc)
        tile = ins.args["dst"]
        if (tile.dtype, (tile.partitions, tile.free_size)) != (message.dtype, message.shape):
            sender = self.program.instruction(message.pc)
            raise CommError(
                f"rank {r} receives {tile.dtype}[{tile.partitions}, {tile.free_size}] "
                f"into '{tile.symbol}', but rank {message.src} sent "
                f"{message.dtype}[{message.shape[0]}, {message.shape[1]}] at "
                f"{sender.location.source.name}:{sender.location.line}; shapes and dtypes of "
                f"a send and its recv must match", tile.location)
        ready = stop.ready
        nbytes = message.nbytes
        if stop.name == "cc.sendrecv":
            nbytes *= 2  # both directions go through this rank's queue
        half = self.send_half.pop(r, None)
        if self.logging:
            self.log[r].append(("recv", message, half))
        if self.owner[r] == self.me:
            core = self.cores[r]
            core.store("dst", message.bits)
            core.complete(ready, max(ready, message.arrival, sent), nbytes)
        message.bits = None   # received: its payload is in dst now

    # --- collectives ----------------------------------------------------------------------

    def _collective(self) -> None:
        stops = self.stops
        ins0 = self.program.instruction(stops[0].pc)
        signature0 = stops[0].signature
        for r in range(1, self.world):
            if stops[r].signature != signature0:
                ins = self.program.instruction(stops[r].pc)
                raise CommError(
                    f"ranks disagree on a collective: rank 0 is at {self.where(0)} with "
                    f"{_describe(signature0)}, rank {r} at {self.where(r)} with "
                    f"{_describe(stops[r].signature)}", ins.location,
                    notes=(f"rank 0's instruction is at {ins0.location}",))
        name = ins0.definition.name
        ready = [stop.ready for stop in stops]
        handler = {"cc.all_reduce": self._all_reduce, "cc.reduce_scatter": self._reduce_scatter,
                   "cc.all_gather": self._all_gather, "cc.all_to_all": self._all_to_all,
                   "cc.all_to_all_v": self._all_to_all_v, "cc.all_gather_v": self._all_gather_v,
                   "cc.permute": self._permute, "cc.barrier": self._barrier}[name]
        self.timer = ((), None, False)
        groups = None if name == "cc.barrier" else self._groups()
        done, nbytes = handler(ready, groups)
        local = groups is not None and groups.size == 1
        if local:
            # nothing crosses a link: the data is copied from src to dst by each core's DMA
            done = [r + nbytes / self.network.local_gb_s for r in ready]
        if self.logging:
            record = ("collective", _Collective(*self.timer, local, nbytes))
            for log in self.log:
                log.append(record)
        for r, core in self.cores.items():
            core.complete(ready[r], done[r], nbytes)

    def _steps(self, steps, data: dict[int, dict], nbytes_of, ready: list[float], combine,
               barrier: bool = False) -> list[float]:
        """Time a collective's steps from the ranks' ready times and sizes alone (every
        partition alike), and move the data of the ranks owned here step by step."""
        self.timer = (steps, nbytes_of, barrier)
        done = C.time_steps(steps, nbytes_of, ready, self.network)
        C.move_steps(steps, data, combine, self.owner, self.comm)
        return done

    def _signature(self, core: Core) -> tuple:
        ins = self.program.instruction(core.pc)
        parts = [ins.definition.name]
        for arg in ins.definition.args:
            value = ins.args.get(arg.name)
            if arg.name == "queue":
                continue
            if hasattr(value, "symbol"):
                parts.append((arg.name, value.dtype, value.partitions, value.free_size))
            elif arg.kind == "reg_or_int":
                parts.append((arg.name, core.int_arg(arg.name)))
            elif arg.kind == "enum":
                from neuronemu.isa.table import load_isa

                parts.append((arg.name, load_isa().enums[arg.enum].name_of(value)))
            else:
                parts.append((arg.name, value))
        return tuple(parts)

    def _instruction(self):
        return self.program.instruction(self.stops[0].pc)

    def _groups(self) -> C.Groups:
        """The replica groups of the collective at the stop (group_size, group_stride)."""
        ins = self._instruction()
        size = int(ins.args.get("group_size", 0))
        stride = max(1, int(ins.args.get("group_stride", 0)))   # 0 (the default) is 1
        try:
            return C.Groups(self.world, size, stride)
        except ValueError as e:
            raise RuntimeFault(f"{ins.definition.name}: {e}", ins.location,
                               notes=(("the world must be whole blocks of group_size x "
                                       "group_stride ranks (docs/multichip.md)"),)) from None

    def _algorithm(self, nbytes: int, n: int) -> str:
        """The algorithm for ``nbytes`` per rank in groups of ``n`` ranks."""
        from neuronemu.isa.table import load_isa

        ins = self._instruction()
        code = ins.args.get("algorithm", 0)
        chosen = load_isa().enums["collective_algorithm"].name_of(code)
        algorithm = C.choose(chosen, nbytes, n)
        if algorithm == "rdh" and n & (n - 1):
            what = "the world has" if n == self.world else "its groups have"
            raise RuntimeFault(f"{ins.definition.name} algorithm=rdh needs a power-of-two number "
                               f"of ranks, but {what} {n}; use ring or mesh", ins.location)
        return algorithm

    def _op(self) -> str:
        from neuronemu.isa.table import load_isa

        return load_isa().enums["alu_op"].name_of(self._instruction().args.get("op", 1))

    def _tile(self, name: str):
        return self._instruction().args[name]

    def _dim(self) -> int:
        return int(self._instruction().args.get("dim", 0))

    def _all_reduce(self, ready, groups: C.Groups):
        n = groups.size
        src = self._tile("src")
        reducer = C.Reducer(src.dtype, self._op())
        itemsize = tile_itemsize(src)
        bounds = np.linspace(0, src.partitions * src.free_size, n + 1).astype(np.int64)
        nbytes = src.partitions * src.free_size * itemsize
        algorithm = self._algorithm(nbytes, n)
        sizes = {q: int(bounds[q + 1] - bounds[q]) * itemsize for q in range(n)}
        if (MESH_AS_ARRAYS and algorithm == "mesh" and n > 1 and n == self.world
                and not self.split):
            return self._mesh_all_reduce(ready, reducer, bounds, sizes), nbytes
        data = {}
        for r, core in self.cores.items():
            flat = reducer.values(core.load("src").ravel())
            data[r] = {q: flat[bounds[q]: bounds[q + 1]] for q in range(n)}
        steps = groups.steps(lambda order, cube, _: (C.reduce_scatter_steps(algorithm, order, cube)
                                                     + C.all_gather_steps(algorithm, order, cube)),
                             self.order, self.cube)
        done = self._steps(steps, data, sizes.__getitem__, ready, reducer.combine)
        for r, core in self.cores.items():
            flat = np.concatenate([data[r][q] for q in range(n)])
            core.store("dst", reducer.bits(flat).reshape(src.partitions, src.free_size))
        return done, nbytes

    def _mesh_all_reduce(self, ready, reducer: C.Reducer, bounds: np.ndarray,
                         sizes: dict[int, int]) -> list[float]:
        """The mesh all-reduce of every rank of a one-partition run, as arrays: the same
        messages and times as its steps of Message (C.mesh_step), and the same values as
        move_steps gives them, whose receiver q adds the chunks of ranks 0, 1, ... (all but
        its own) into its own chunk q, in that order, then sends the sum to every rank.
        Here the sums run over ranks, each rank's tile read once, every chunk's sum at once:
        memory for one tile's values and the sums, not the world's chunks as objects."""
        n = self.world
        # reduce-scatter, then all-gather: one step's arrays alive at a time (21 MB each at
        # 1,152 ranks), unless the explicit replay keeps them to re-time the steps
        done, kept = ready, []
        for scatter in (True, False):
            step = C.mesh_step(n, to_owner=scatter, reduce=scatter)
            done = C.time_step(step, sizes.__getitem__, done, self.network)
            if self.logging:
                kept.append(step)
            del step
        if self.logging:
            self.timer = (kept, sizes.__getitem__, False)
        cores = self.cores
        fp32 = reducer.dtype == "float32"

        def values_of(core):
            # an fp32 tile's values are its bits: a view of a dense HBM tile, not a copy
            raw = core.dense_bytes("src") if fp32 else None
            return raw.view(np.float32) if raw is not None else reducer.values(
                core.load("src").ravel())

        acc = None
        for r in range(n):
            values = values_of(cores[r])
            if acc is None:
                acc = np.empty(values.size, dtype=values.dtype)
            # rank r's own chunk starts its sum; the other chunks take r's part
            own = slice(int(bounds[r]), int(bounds[r + 1]))
            acc[own] = values[own]
        for r in range(n):
            own = slice(int(bounds[r]), int(bounds[r + 1]))
            kept = acc[own].copy()
            acc = reducer.combine(acc, values_of(cores[r]))
            acc[own] = kept
        src = self._tile("src")
        bits = None
        for core in cores.values():
            raw = core.dense_bytes("dst") if fp32 else None
            if raw is not None:
                raw.view(np.float32)[:] = acc
                continue
            if bits is None:
                bits = reducer.bits(acc).reshape(src.partitions, src.free_size)
            core.store("dst", bits)
        return done

    def _check_split(self, big, small, dim: int, what: str, n: int) -> None:
        sizes = (big.partitions, big.free_size), (small.partitions, small.free_size)
        other = 1 - dim
        if sizes[0][dim] != n * sizes[1][dim] or sizes[0][other] != sizes[1][other]:
            ins = self._instruction()
            axis = "partitions" if dim == 0 else "free elements"
            ranks = "the world" if n == self.world else "a group's ranks"
            raise RuntimeFault(
                f"{ins.definition.name} dim={dim}: {what} needs '{big.symbol}' to be "
                f"'{small.symbol}' with {n} ({ranks}) times its {axis}: "
                f"[{n * sizes[1][0] if dim == 0 else sizes[1][0]}, "
                f"{n * sizes[1][1] if dim == 1 else sizes[1][1]}], not [{sizes[0][0]}, "
                f"{sizes[0][1]}]", big.location)

    def _reduce_scatter(self, ready, groups: C.Groups):
        n = groups.size
        src, dst = self._tile("src"), self._tile("dst")
        dim = self._dim()
        self._check_split(src, dst, dim, "reduce_scatter", n)
        reducer = C.Reducer(src.dtype, self._op())
        data = {r: {q: reducer.values(b) for q, b in enumerate(np.split(core.load("src"), n,
                                                                        axis=dim))}
                for r, core in self.cores.items()}
        itemsize = tile_itemsize(src)
        nbytes = src.partitions * src.free_size * itemsize
        block = dst.partitions * dst.free_size * itemsize
        algorithm = self._algorithm(nbytes, n)
        steps = groups.steps(lambda order, cube, _: C.reduce_scatter_steps(algorithm, order,
                                                                           cube),
                             self.order, self.cube)
        done = self._steps(steps, data, lambda q: block, ready, reducer.combine)
        for r, core in self.cores.items():
            core.store("dst", reducer.bits(data[r][groups.member[r]]))
        return done, nbytes

    def _all_gather(self, ready, groups: C.Groups):
        n = groups.size
        src, dst = self._tile("src"), self._tile("dst")
        dim = self._dim()
        self._check_split(dst, src, dim, "all_gather", n)
        data = {r: {groups.member[r]: core.load("src")} for r, core in self.cores.items()}
        itemsize = tile_itemsize(src)
        block = src.partitions * src.free_size * itemsize
        algorithm = self._algorithm(block * n, n)
        steps = groups.steps(lambda order, cube, _: C.all_gather_steps(algorithm, order, cube),
                             self.order, self.cube)
        done = self._steps(steps, data, lambda q: block, ready, None)
        for r, core in self.cores.items():
            core.store("dst", np.concatenate([data[r][q] for q in range(n)], axis=dim))
        return done, block * n

    def _all_to_all(self, ready, groups: C.Groups):
        n = groups.size
        src = self._tile("src")
        dim = self._dim()
        size = (src.partitions, src.free_size)[dim]
        if size % n:
            ranks = "ranks" if n == self.world else "ranks of a group"
            raise RuntimeFault(f"cc.all_to_all dim={dim}: '{src.symbol}' has {size} "
                               f"{'partitions' if dim == 0 else 'free elements'}, which the "
                               f"{n} {ranks} cannot split evenly", src.location)
        data = {}
        for r, core in self.cores.items():
            me = groups.member[r]
            data[r] = {(me, j): b for j, b in enumerate(np.split(core.load("src"), n, axis=dim))}
        itemsize = tile_itemsize(src)
        block = src.partitions * src.free_size * itemsize // n
        steps = groups.steps(lambda order, cube, _: C.all_to_all_steps(len(order)),
                             self.order, self.cube)
        done = self._steps(steps, data, lambda k: block, ready, None)
        for r, core in self.cores.items():
            me = groups.member[r]
            core.store("dst", np.concatenate([data[r][(i, me)] for i in range(n)], axis=dim))
        return done, block * n

    # the variable collectives: counts and places read from a uint32 metadata tile at run time

    def _metadata(self, n: int) -> tuple[dict[int, np.ndarray], bool]:
        """Every rank's metadata (rank -> [rows, n] int64, n the ranks of a group: send
        counts, send displacements, receive counts, receive displacements) and whether row 3
        places the chunks. The ranks' rows are exchanged between partitions: every partition
        times every chunk."""
        ins = self._instruction()
        meta = ins.args["meta"]
        rdispls = bool(ins.args.get("has_rdispls"))
        total = meta.partitions * meta.free_size
        rows = total // n
        if total % n or not (4 if rdispls else 3) <= rows <= 4:
            need = "4" if rdispls else "3 or 4"
            ranks = f"{n} ranks" if n == self.world else f"groups of {n} ranks"
            raise RuntimeFault(f"{ins.definition.name}: the metadata '{meta.symbol}' has {total} "
                               f"elements; with {ranks} it needs {need} rows of {n} (send "
                               f"counts, send displacements, receive counts"
                               f"{', receive displacements' if rdispls else ''})", meta.location)
        mine = {r: core.load("meta").reshape(rows, n) for r, core in self.cores.items()}
        every: dict[int, np.ndarray] = {}
        for part in self.comm.allgather(mine):
            every.update(part)
        return every, rdispls

    def _chunks(self, meta, rdispls: bool, send, src, dst,
                groups: C.Groups) -> dict[tuple[int, int], tuple]:
        """(sender s, receiver d) -> (first element in s's src, count, first element in d's
        dst) for every two ranks of a group, checked to lie inside both tiles. ``send(i, j)``:
        the column of member i's rows 0 and 1 that describes what i sends member j."""
        ins = self._instruction()
        n = groups.size
        src_size = src.partitions * src.free_size
        dst_size = dst.partitions * dst.free_size
        slot = dst_size // n
        out = {}
        for ranks in groups.groups:
            for i, s in enumerate(ranks):
                for j, d in enumerate(ranks):
                    column = send(i, j)
                    count, first = int(meta[s][0, column]), int(meta[s][1, column])
                    if first + count > src_size:
                        raise RuntimeFault(
                            f"{ins.definition.name}: rank {s} sends {count} elements from "
                            f"element {first} of '{src.symbol}' (metadata rows 0 and 1, column "
                            f"{column}), past its {src_size} elements", src.location)
                    at = int(meta[d][3, i]) if rdispls else i * slot
                    room = dst_size - at if rdispls else slot
                    if count > room:
                        where = (f"at element {at} (row 3 of rank {d}'s metadata, column {i})"
                                 if rdispls else
                                 f"in its slot of {slot} elements (dst / {n} ranks)")
                        raise RuntimeFault(
                            f"{ins.definition.name}: rank {d} receives {count} elements from "
                            f"rank {s} {where}; '{dst.symbol}' has room for {max(room, 0)} "
                            f"there", dst.location)
                    out[(s, d)] = (first, count, at)
        return out

    def _variable(self, ready, chunks, groups: C.Groups, make,
                  keyed) -> tuple[list[float], int]:
        """Move the chunks along the steps ``make`` builds for a group (``keyed(i, j)``: the
        data key of member i's chunk for member j; keys are made unique per group), write
        each receiver's dst (senders in the group's order) and, unless recv_counts_known, the
        counts it received into row 2 of its metadata."""
        ins = self._instruction()
        src = self._tile("src")
        n = groups.size
        itemsize = tile_itemsize(src)

        def key(s: int, d: int):
            return groups.group_of[s], keyed(groups.member[s], groups.member[d])

        data = {}
        for r, core in self.cores.items():
            flat = core.load("src").reshape(-1)
            data[r] = {}
            for d in groups.groups[groups.group_of[r]]:
                first, count, _ = chunks[(r, d)]
                data[r][key(r, d)] = flat[first:first + count]
        sizes = {key(s, d): count * itemsize for (s, d), (_, count, _) in chunks.items()}
        steps = groups.steps(make, self.order, self.cube, rename=lambda g, k: (g, k))
        done = self._steps(steps, data, sizes.__getitem__, ready, None)
        known = bool(ins.args.get("recv_counts_known"))
        for d, core in self.cores.items():
            ranks = groups.groups[groups.group_of[d]]
            dst = core.load("dst").reshape(-1).copy()
            for s in ranks:
                _, count, at = chunks[(s, d)]
                dst[at:at + count] = data[d][key(s, d)]
            core.store("dst", dst.reshape(self._tile("dst").partitions, -1))
            if not known:
                meta = core.load("meta")
                rows = meta.reshape(-1, n).copy()
                rows[2] = [chunks[(s, d)][1] for s in ranks]
                core.store("meta", rows.reshape(meta.shape))
        sent = max(sum(chunks[(s, d)][1] for d in groups.groups[groups.group_of[s]])
                   for s in range(self.world)) * itemsize
        return done, sent

    def _all_to_all_v(self, ready, groups: C.Groups):
        src, dst = self._tile("src"), self._tile("dst")
        meta, rdispls = self._metadata(groups.size)
        chunks = self._chunks(meta, rdispls, lambda i, j: j, src, dst, groups)
        return self._variable(ready, chunks, groups,
                              lambda order, cube, _: C.all_to_all_steps(len(order)),
                              lambda i, j: (i, j))

    def _all_gather_v(self, ready, groups: C.Groups):
        src, dst = self._tile("src"), self._tile("dst")
        meta, rdispls = self._metadata(groups.size)
        chunks = self._chunks(meta, rdispls, lambda i, j: 0, src, dst, groups)
        itemsize = tile_itemsize(src)
        # each group's runtime chooses by what its own ranks send
        totals = [sum(chunks[(s, ranks[0])][1] for s in ranks) * itemsize
                  for ranks in groups.groups]

        def make(order, cube, g):
            algorithm = C.choose("auto", totals[g], groups.size)
            return C.all_gather_steps(algorithm, order, cube)

        done, _ = self._variable(ready, chunks, groups, make, lambda i, j: i)
        return done, max(totals)

    def _permute(self, ready, groups: C.Groups):
        n = groups.size
        src = self._tile("src")
        shift = next(part[1] for part in self.stops[0].signature[1:] if part[0] == "shift")
        data = {r: {groups.member[r]: core.load("src")} for r, core in self.cores.items()}
        nbytes = src.partitions * src.free_size * tile_itemsize(src)
        steps = groups.steps(lambda order, cube, _: C.permute_steps(n, shift),
                             self.order, self.cube)
        done = self._steps(steps, data, lambda k: nbytes, ready, None)
        for r, core in self.cores.items():
            core.store("dst", data[r][(groups.member[r] - shift) % n])
        return done, nbytes

    def _barrier(self, ready, _groups: None):
        latest = max(ready)
        steps = C.barrier_steps(self.world)
        done = self._steps(steps, {r: {} for r in self.cores}, lambda k: 0,
                           [latest] * self.world, None, barrier=True)
        return done, 0

    # --- reports --------------------------------------------------------------------------

    def _deadlock(self, waiting: list[int]) -> CommError:
        lines = []
        at_collective = [w for w in waiting if self.name(w) in collectives()]
        for w in waiting:
            if self.name(w) in ("cc.recv", "cc.sendrecv"):
                peer = self.stops[w].source
                state = "has finished" if self.finished[peer] else f"waits at {self.where(peer)}"
                lines.append(f"rank {w} waits at {self.where(w)} for a message from rank "
                             f"{peer}, which {state}")
        groups: dict[int, list[int]] = {}
        for w in at_collective:
            groups.setdefault(self.stops[w].pc, []).append(w)
        for _pc, ranks in sorted(groups.items(), key=lambda kv: kv[1][0]):
            others = [r for r in range(self.world) if r not in ranks]
            lines.append(f"{_ranks(ranks)} wait at {self.where(ranks[0])} for "
                         f"{_ranks(others)} to reach it")
        for (src, dst), box in sorted(self.mail.items()):
            if box and dst in waiting:  # often the cause: the message came from someone else
                sent = self.program.instruction(box[0].pc).location
                lines.append(f"rank {dst} holds {len(box)} unreceived message(s) from rank "
                             f"{src} (sent at {sent.source.name}:{sent.line})")
        finished = [r for r in range(self.world) if self.finished[r]]
        if finished:
            lines.append(f"{_ranks(finished)} finished")
        first = self.stops[min(waiting)]
        return CommError(f"deadlock: {len(waiting)} of {self.world} ranks wait for each other "
                         f"and none can go on", self.program.instruction(first.pc).location,
                         notes=tuple(lines))

    def _check_mail(self) -> None:
        for (src, dst), box in sorted(self.mail.items()):
            if box:
                message = box[0]
                ins = self.program.instruction(message.pc)
                raise CommError(f"rank {src} sent {len(box)} message(s) to rank {dst} that "
                                f"rank {dst} never received (a send with no matching recv)",
                                ins.location)



def _couple_replays(program, replays: list, network: Network, logs: list[list]) -> None:
    """Drive every rank's explicit-sync replay (timing.explicit.Replayer, made with
    ``couple=True`` by timing.explicit.replay_cores) together: each rank's replay runs until a
    cc.* event (its start is then known), and the event's end comes from the other ranks'
    replayed times, on ``network`` (fresh links).

    Of the events stopped at, the one with the earliest start that can complete goes first
    (links are booked in time order, as in the run): a send (its data leaves at its start), a
    recv whose message has been sent in the replay, a collective every rank has reached. When
    none can, the ranks stopped at a cc.* event go on with it pending (its queue holds, the
    other tracks run on) until its end is known; a rank's replay is thereby exact while it
    waits only on its own cc.* queue, and when other tracks run ahead of a pending event, a
    semaphore they share with its queue may count their signals first (docs/multichip.md)."""
    from neuronemu.timing import explicit as X

    world = len(replays)
    records = []   # per rank: cc event -> its log record
    for rep, log in zip(replays, logs, strict=True):
        cc = np.flatnonzero(rep.kinds[rep.events[:, 0]] & X.F_CC)
        assert len(cc) == len(log), (len(cc), len(log))
        records.append(dict(zip(cc.tolist(), log, strict=True)))
    waiting: dict[int, dict[int, float]] = {r: {} for r in range(world)}  # rank -> event: start
    paused: dict[int, int] = {}            # rank -> the event its replay stopped at
    done = [False] * world
    todo = list(range(world))

    def advance(r: int) -> None:
        try:
            status = replays[r].advance()
        except RuntimeFault as error:
            if world > 1:
                error.message = f"rank {r}: {error.message}"
            raise
        if status == X.PAUSED:
            e = replays[r].paused
            paused[r] = e
            waiting[r][e] = replays[r].paused_start
        done[r] = status == X.OK

    def finish(r: int, e: int, end: float) -> None:
        del waiting[r][e]
        if paused.get(r) == e:
            replays[r].resolve(e, end)
            del paused[r]
        else:
            replays[r].finish_pending(e, end)
            stale = paused.pop(r, None)   # its track goes on: the replay chooses again
            if stale is not None:
                del waiting[r][stale]
        todo.append(r)

    def at_collective(record) -> dict[int, tuple[int, float]] | None:
        here = {}
        for q in range(world):
            for e, start in waiting[q].items():
                if records[q][e] is record:
                    here[q] = (e, start)
        return here if len(here) == world else None

    while True:
        for r in sorted(set(todo)):
            advance(r)
        todo.clear()
        if all(done):
            break
        acted = False
        for start, r, e in sorted((t, q, f) for q in range(world)
                                  for f, t in waiting[q].items()):
            record = records[r][e]
            if record[0] == "send":
                message = record[1]
                message.replayed = network.transfer(r, message.dst, message.nbytes, start)[1]
                finish(r, e, message.replayed)
            elif record[0] == "recv":
                message, half = record[1], record[2]
                if half is not None and half.replayed is None:
                    half.replayed = network.transfer(r, half.dst, half.nbytes, start)[1]
                    acted = True
                    break
                if message.replayed is None:
                    continue
                finish(r, e, max(start, message.replayed,
                                 half.replayed if half is not None else 0.0))
            else:
                here = at_collective(record)
                if here is None:
                    continue
                ends = record[1].times([here[q][1] for q in range(world)], network)
                for q in range(world):
                    finish(q, here[q][0], ends[q])
            acted = True
            break
        if acted:
            continue
        if paused:
            for r, e in sorted(paused.items()):
                replays[r].resolve(e, X.PENDING)
                todo.append(r)
            paused.clear()
            continue
        stuck = [(r, program.instructions[int(replays[r].events[e, 0])])
                 for r in range(world) for e in sorted(waiting[r])]
        raise CommError("deadlock under explicit synchronisation: the ranks' cc.* instructions "
                        "wait for each other and none can complete", stuck[0][1].location,
                        notes=tuple(f"rank {r} waits at {ins.location.source.name}:"
                                    f"{ins.location.line} ({ins.definition.name})"
                                    for r, ins in stuck))


def tile_itemsize(tile) -> int:
    from neuronemu.isa import dtypes

    return dtypes.get(tile.dtype).itemsize


def _ranks(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}..{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks))


def _describe(signature: tuple) -> str:
    name, *parts = signature
    text = []
    for part in parts:
        if len(part) == 4:
            text.append(f"{part[0]} {part[1]}[{part[2]}, {part[3]}]")
        elif part[0] in ("group_size", "group_stride") and part[1] == 0:
            continue   # the default: one group of every rank
        else:
            text.append(f"{part[0]}={part[1]}")
    return f"{name} {', '.join(text)}"
