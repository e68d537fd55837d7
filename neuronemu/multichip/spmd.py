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
(which message a send posted and a recv took, which collective); ``_replay_explicit`` then
replays all ranks together on a fresh copy of the links: a rank's replay stops at each cc.*
event, and the event's end is worked out as above from the replayed start times of the ranks
involved (a recv ends when the matching send's data has arrived, a collective when it has run
from every rank's replayed arrival). The ranks still exchange only messages: a send's arrival
time, a collective's arrivals and completions.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from neuronemu.errors import RuntimeFault
from neuronemu.exec import layout as L
from neuronemu.exec.core import FINISHED, Core, RunLimits, stop_on_sigint
from neuronemu.multichip import collectives as C
from neuronemu.multichip.network import Network

COLLECTIVES = ("cc.all_reduce", "cc.reduce_scatter", "cc.all_gather", "cc.all_to_all",
               "cc.permute", "cc.barrier")


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
    (or a one-rank local copy of ``nbytes``, or a barrier)."""

    __slots__ = ("barrier", "local", "nbytes", "nbytes_of", "steps")

    def __init__(self, steps, nbytes_of, barrier: bool, local: bool, nbytes: int):
        self.steps, self.nbytes_of = steps, nbytes_of
        self.barrier, self.local, self.nbytes = barrier, local, nbytes

    def times(self, ready: list[float], network: Network) -> list[float]:
        """When each rank finishes, if rank r arrives at ready[r] (as _Driver._collective)."""
        if self.barrier:
            return C.time_steps(self.steps, lambda k: 0, [max(ready)] * len(ready), network)
        if self.local:
            return [ready[0] + self.nbytes / network.local_gb_s]
        return C.time_steps(self.steps, self.nbytes_of, ready, network)


def execute(program, topology, ranks_per_chip: int, inputs: list[dict], seed: int, *,
            max_instructions: int, max_trace_events: int, stochastic_rounding: bool,
            rounding_seed: int | None, timeout: float | None = None
            ) -> tuple[list[Core], Network]:
    """Run every rank to its end. ``max_instructions`` bounds each rank; ``timeout`` (seconds)
    and Ctrl-C bound the whole run: every rank's loop looks at the same deadline and flag."""
    from neuronemu.resources import check_host_memory

    world = (topology.chips if topology is not None else 1) * ranks_per_chip
    # compact on-chip memory on one rank too: tiles never leave their allocations (in_bounds),
    # so bytes past the last allocation are never read or written; filling and tracking the
    # whole 24-32 MiB SBUF cost a small kernel's run ~3 ms and its RSS 28+ MiB
    check_host_memory(program, world, compact=True)
    cores = [Core(program, inputs[r], seed, rank=r, world=world,
                  max_trace_events=max_trace_events, stochastic_rounding=stochastic_rounding,
                  rounding_seed=rounding_seed, compact=True) for r in range(world)]
    network = Network(topology, program.target, ranks_per_chip)
    limits = RunLimits(max_instructions, timeout)
    with stop_on_sigint(limits):
        driver = _Driver(program, topology, ranks_per_chip, cores, network, limits)
        driver.run()
    if program.sync_mode == "explicit" and any(driver.log):
        _replay_explicit(program, cores, Network(topology, program.target, ranks_per_chip),
                         driver.log)
    return cores, network


class _Driver:
    def __init__(self, program, topology, ranks_per_chip, cores, network, limits: RunLimits):
        self.program = program
        self.topology = topology
        self.ranks_per_chip = ranks_per_chip
        self.cores = cores
        self.world = len(cores)
        self.network = network
        self.limits = limits
        self.mail: dict[tuple[int, int], deque[_Message]] = {}
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
        self.timer: tuple = ((), None, False)

    def name(self, core: Core) -> str:
        return self.program.instructions[core.pc].definition.name

    def where(self, core: Core) -> str:
        ins = self.program.instructions[core.pc]
        return f"{ins.location.source.name}:{ins.location.line} ({ins.definition.name})"

    def run(self) -> None:
        """Carry out the cc.* instructions in order of modelled time: of the ranks that can act
        (at a send, or at a recv whose message is there) the one whose instruction is ready
        first goes, so links are booked in time order whatever the rank numbers."""
        self.ready: list[float] = [0.0] * self.world
        self.actionable: list[tuple[float, int]] = []   # heap of (ready, rank)
        self.recv_wait: dict[tuple[int, int], int] = {}  # (sender, receiver) -> receiver
        self.at_collective: set[int] = set()
        self.sent: dict[int, float] = {}  # rank at a cc.sendrecv whose send half is done -> end
        for r in range(self.world):
            self._stop(r)
        while True:
            if self.actionable:
                _, r = heapq.heappop(self.actionable)
                core = self.cores[r]
                name = self.name(core)
                if name == "cc.send":
                    self._send(core)
                elif name == "cc.sendrecv" and r not in self.sent:
                    self.sent[r] = self._send(core, "send_to", complete=False)
                    self._file(r)
                    continue
                else:
                    self._recv(core, self._mailbox(core).popleft(), self.sent.pop(r, 0.0))
                self._stop(r)
                continue
            if all(self.finished):
                break
            if len(self.at_collective) == self.world:
                self._collective()
                self.at_collective.clear()
                for r in range(self.world):
                    self._stop(r)
                continue
            raise self._deadlock(set(self.recv_wait.values()) | self.at_collective)
        self._check_mail()

    def _stop(self, r: int) -> None:
        """Run rank r to its next cc.* instruction (or its end) and file it by what it waits
        for."""
        core = self.cores[r]
        if core.run(self.limits) == FINISHED:
            self.finished[r] = True
            if core.status != L.STATUS_OK:
                from neuronemu.faults import fault as fault_of

                fault = fault_of(self.program, core.status, core.pc, core.regs, self.limits,
                                 core.steps)
                if self.world > 1:
                    fault.message = f"rank {r}: {fault.message}"
                raise fault
            return
        # a stopped rank's timeline does not change until it acts, so this stays valid
        self.ready[r] = core.ready_ns()
        self._file(r)

    def _file(self, r: int) -> None:
        """File rank r, stopped at a cc.* instruction, by what it waits for."""
        core = self.cores[r]
        name = self.name(core)
        if name == "cc.send" or (name == "cc.sendrecv" and r not in self.sent):
            heapq.heappush(self.actionable, (self.ready[r], r))
        elif name in ("cc.recv", "cc.sendrecv"):
            if self._mailbox(core):
                heapq.heappush(self.actionable, (self.ready[r], r))
            else:
                self.recv_wait[(self._source(core), r)] = r
        else:
            self.at_collective.add(r)

    # --- point to point -------------------------------------------------------------------

    def _peer(self, core: Core, arg: str = "peer") -> int:
        peer = core.int_arg(arg)
        if not 0 <= peer < self.world:
            raise RuntimeFault(f"rank {core.rank}: {self.name(core)} {arg}={peer} is not a rank "
                               f"(ranks 0..{self.world - 1})", self._location(core, arg))
        return peer

    def _source(self, core: Core) -> int:
        """The rank a cc.recv / cc.sendrecv receives from."""
        return self._peer(core, "recv_from" if self.name(core) == "cc.sendrecv" else "peer")

    def _location(self, core: Core, arg: str | None = None):
        ins = self.program.instructions[core.pc]
        value = ins.args.get(arg) if arg else None
        return getattr(value, "location", None) or ins.location

    def _mailbox(self, core: Core) -> deque | None:
        return self.mail.get((self._source(core), core.rank))

    def _send(self, core: Core, arg: str = "peer", complete: bool = True) -> float:
        """Post src to the peer's mailbox; returns when it arrives. ``complete`` steps past the
        instruction (a cc.sendrecv completes after its receive half)."""
        peer = self._peer(core, arg)
        tile = self.program.instructions[core.pc].args["src"]
        itemsize = tile_itemsize(tile)
        bits = core.load("src").astype(f"<u{itemsize}")  # held at the dtype's width
        ready = self.ready[core.rank]
        nbytes = bits.size * itemsize
        _, arrival = self.network.transfer(core.rank, peer, nbytes, ready)
        message = _Message(core.rank, core.pc, bits, tile.dtype, bits.shape, arrival, peer,
                           nbytes)
        self.mail.setdefault((core.rank, peer), deque()).append(message)
        if complete:
            if self.logging:
                self.log[core.rank].append(("send", message))
            core.complete(ready, arrival, nbytes)
        else:
            self.send_half[core.rank] = message
        receiver = self.recv_wait.pop((core.rank, peer), None)
        if receiver is not None:
            heapq.heappush(self.actionable, (self.ready[receiver], receiver))
        return arrival

    def _recv(self, core: Core, message: _Message, sent: float = 0.0) -> None:
        """Store the message in dst; the instruction ends when the data is there (and, for a
        cc.sendrecv, when its own send has arrived too)."""
        ins = self.program.instructions[core.pc]
        tile = ins.args["dst"]
        if (tile.dtype, (tile.partitions, tile.free_size)) != (message.dtype, message.shape):
            sender = self.program.instructions[message.pc]
            raise CommError(
                f"rank {core.rank} receives {tile.dtype}[{tile.partitions}, {tile.free_size}] "
                f"into '{tile.symbol}', but rank {message.src} sent "
                f"{message.dtype}[{message.shape[0]}, {message.shape[1]}] at "
                f"{sender.location.source.name}:{sender.location.line}; shapes and dtypes of "
                f"a send and its recv must match", tile.location)
        ready = self.ready[core.rank]
        core.store("dst", message.bits)
        nbytes = message.bits.size * tile_itemsize(tile)
        if self.name(core) == "cc.sendrecv":
            nbytes *= 2  # both directions go through this rank's queue
        half = self.send_half.pop(core.rank, None)
        if self.logging:
            self.log[core.rank].append(("recv", message, half))
        core.complete(ready, max(ready, message.arrival, sent), nbytes)

    # --- collectives ----------------------------------------------------------------------

    def _collective(self) -> None:
        cores = self.cores
        first = cores[0]
        ins0 = self.program.instructions[first.pc]
        signature0 = self._signature(first)
        for core in cores[1:]:
            if self._signature(core) != signature0:
                ins = self.program.instructions[core.pc]
                raise CommError(
                    f"ranks disagree on a collective: rank 0 is at {self.where(first)} with "
                    f"{_describe(signature0)}, rank {core.rank} at {self.where(core)} with "
                    f"{_describe(self._signature(core))}", ins.location,
                    notes=(f"rank 0's instruction is at {ins0.location}",))
        name = ins0.definition.name
        ready = [self.ready[core.rank] for core in cores]
        handler = {"cc.all_reduce": self._all_reduce, "cc.reduce_scatter": self._reduce_scatter,
                   "cc.all_gather": self._all_gather, "cc.all_to_all": self._all_to_all,
                   "cc.permute": self._permute, "cc.barrier": self._barrier}[name]
        self.timer = ((), None, False)
        done, nbytes = handler(ready)
        local = self.world == 1 and name != "cc.barrier"
        if local:
            # nothing crosses a link: the data is copied from src to dst by the core's DMA
            done = [ready[0] + nbytes / self.network.local_gb_s]
        if self.logging:
            record = ("collective", _Collective(*self.timer, local, nbytes))
            for log in self.log:
                log.append(record)
        for core, start, end in zip(cores, ready, done, strict=True):
            core.complete(start, end, nbytes)

    def _signature(self, core: Core) -> tuple:
        ins = self.program.instructions[core.pc]
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

    def _algorithm(self, nbytes: int) -> str:
        from neuronemu.isa.table import load_isa

        ins = self.program.instructions[self.cores[0].pc]
        code = ins.args.get("algorithm", 0)
        chosen = load_isa().enums["collective_algorithm"].name_of(code)
        algorithm = C.choose(chosen, nbytes, self.world)
        if algorithm == "rdh" and self.world & (self.world - 1):
            raise RuntimeFault(f"{ins.definition.name} algorithm=rdh needs a power-of-two number "
                               f"of ranks, but the world has {self.world}; use ring or mesh",
                               ins.location)
        return algorithm

    def _op(self) -> str:
        from neuronemu.isa.table import load_isa

        ins = self.program.instructions[self.cores[0].pc]
        return load_isa().enums["alu_op"].name_of(ins.args.get("op", 1))

    def _tile(self, name: str):
        return self.program.instructions[self.cores[0].pc].args[name]

    def _dim(self) -> int:
        return int(self.program.instructions[self.cores[0].pc].args.get("dim", 0))

    def _all_reduce(self, ready):
        n = self.world
        src = self._tile("src")
        reducer = C.Reducer(src.dtype, self._op())
        itemsize = tile_itemsize(src)
        bounds = np.linspace(0, src.partitions * src.free_size, n + 1).astype(np.int64)
        data = []
        for core in self.cores:
            flat = reducer.values(core.load("src").ravel())
            data.append({q: flat[bounds[q]: bounds[q + 1]] for q in range(n)})
        nbytes = src.partitions * src.free_size * itemsize
        algorithm = self._algorithm(nbytes)
        sizes = {q: int(bounds[q + 1] - bounds[q]) * itemsize for q in range(n)}
        steps = (C.reduce_scatter_steps(algorithm, self.order, self.cube)
                 + C.all_gather_steps(algorithm, self.order, self.cube))
        self.timer = (steps, sizes.__getitem__, False)
        done = C.run_steps(steps, data, sizes.__getitem__, ready, self.network, reducer.combine)
        for core, box in zip(self.cores, data, strict=True):
            flat = np.concatenate([box[q] for q in range(n)])
            core.store("dst", reducer.bits(flat).reshape(src.partitions, src.free_size))
        return done, nbytes

    def _blocks(self, bits: np.ndarray, dim: int) -> list[np.ndarray]:
        return np.split(bits, self.world, axis=dim)

    def _check_split(self, big, small, dim: int, what: str) -> None:
        n = self.world
        sizes = (big.partitions, big.free_size), (small.partitions, small.free_size)
        other = 1 - dim
        if sizes[0][dim] != n * sizes[1][dim] or sizes[0][other] != sizes[1][other]:
            ins = self.program.instructions[self.cores[0].pc]
            axis = "partitions" if dim == 0 else "free elements"
            raise RuntimeFault(
                f"{ins.definition.name} dim={dim}: {what} needs '{big.symbol}' to be "
                f"'{small.symbol}' with {n} (the world) times its {axis}: "
                f"[{n * sizes[1][0] if dim == 0 else sizes[1][0]}, "
                f"{n * sizes[1][1] if dim == 1 else sizes[1][1]}], not [{sizes[0][0]}, "
                f"{sizes[0][1]}]", big.location)

    def _reduce_scatter(self, ready):
        src, dst = self._tile("src"), self._tile("dst")
        dim = self._dim()
        self._check_split(src, dst, dim, "reduce_scatter")
        reducer = C.Reducer(src.dtype, self._op())
        data = [{q: reducer.values(b) for q, b in enumerate(self._blocks(core.load("src"), dim))}
                for core in self.cores]
        itemsize = tile_itemsize(src)
        nbytes = src.partitions * src.free_size * itemsize
        block = dst.partitions * dst.free_size * itemsize
        steps = C.reduce_scatter_steps(self._algorithm(nbytes), self.order, self.cube)
        self.timer = (steps, lambda q: block, False)
        done = C.run_steps(steps, data, lambda q: block, ready, self.network, reducer.combine)
        for core, box in zip(self.cores, data, strict=True):
            core.store("dst", reducer.bits(box[core.rank]))
        return done, nbytes

    def _all_gather(self, ready):
        src, dst = self._tile("src"), self._tile("dst")
        dim = self._dim()
        self._check_split(dst, src, dim, "all_gather")
        data = [{core.rank: core.load("src")} for core in self.cores]
        itemsize = tile_itemsize(src)
        block = src.partitions * src.free_size * itemsize
        steps = C.all_gather_steps(self._algorithm(block * self.world), self.order, self.cube)
        self.timer = (steps, lambda q: block, False)
        done = C.run_steps(steps, data, lambda q: block, ready, self.network, None)
        for core, box in zip(self.cores, data, strict=True):
            core.store("dst", np.concatenate([box[q] for q in range(self.world)], axis=dim))
        return done, block * self.world

    def _all_to_all(self, ready):
        src = self._tile("src")
        dim = self._dim()
        size = (src.partitions, src.free_size)[dim]
        if size % self.world:
            raise RuntimeFault(f"cc.all_to_all dim={dim}: '{src.symbol}' has {size} "
                               f"{'partitions' if dim == 0 else 'free elements'}, which the "
                               f"{self.world} ranks cannot split evenly", src.location)
        data = []
        for core in self.cores:
            blocks = self._blocks(core.load("src"), dim)
            data.append({(core.rank, j): b for j, b in enumerate(blocks)})
        itemsize = tile_itemsize(src)
        block = src.partitions * src.free_size * itemsize // self.world
        steps = C.all_to_all_steps(self.world)
        self.timer = (steps, lambda k: block, False)
        done = C.run_steps(steps, data, lambda k: block, ready, self.network, None)
        for core, box in zip(self.cores, data, strict=True):
            core.store("dst", np.concatenate([box[(i, core.rank)] for i in range(self.world)],
                                             axis=dim))
        return done, block * self.world

    def _permute(self, ready):
        src = self._tile("src")
        shift = self.cores[0].int_arg("shift")
        data = [{core.rank: core.load("src")} for core in self.cores]
        nbytes = src.partitions * src.free_size * tile_itemsize(src)
        steps = C.permute_steps(self.world, shift)
        self.timer = (steps, lambda k: nbytes, False)
        done = C.run_steps(steps, data, lambda k: nbytes, ready, self.network, None)
        for core, box in zip(self.cores, data, strict=True):
            core.store("dst", box[(core.rank - shift) % self.world])
        return done, nbytes

    def _barrier(self, ready):
        data = [{} for _ in self.cores]
        latest = max(ready)
        steps = C.barrier_steps(self.world)
        self.timer = (steps, lambda k: 0, True)
        done = C.run_steps(steps, data, lambda k: 0, [latest] * self.world, self.network, None)
        return done, 0

    # --- reports --------------------------------------------------------------------------

    def _deadlock(self, waiting: set[int]) -> CommError:
        lines = []
        at_collective = [w for w in sorted(waiting) if self.name(self.cores[w]) in COLLECTIVES]
        for w in sorted(waiting):
            core = self.cores[w]
            if self.name(core) in ("cc.recv", "cc.sendrecv"):
                peer = self._source(core)
                state = ("has finished" if self.finished[peer] else
                         f"waits at {self.where(self.cores[peer])}")
                lines.append(f"rank {w} waits at {self.where(core)} for a message from rank "
                             f"{peer}, which {state}")
        groups: dict[int, list[int]] = {}
        for w in at_collective:
            groups.setdefault(self.cores[w].pc, []).append(w)
        for pc, ranks in sorted(groups.items(), key=lambda kv: kv[1][0]):
            others = [r for r in range(self.world) if r not in ranks]
            lines.append(f"{_ranks(ranks)} wait at {self.where(self.cores[ranks[0]])} for "
                         f"{_ranks(others)} to reach it")
        for (src, dst), box in sorted(self.mail.items()):
            if box and dst in waiting:  # often the cause: the message came from someone else
                sent = self.program.instructions[box[0].pc].location
                lines.append(f"rank {dst} holds {len(box)} unreceived message(s) from rank "
                             f"{src} (sent at {sent.source.name}:{sent.line})")
        finished = [r for r in range(self.world) if self.finished[r]]
        if finished:
            lines.append(f"{_ranks(finished)} finished")
        first = self.cores[min(waiting)]
        return CommError(f"deadlock: {len(waiting)} of {self.world} ranks wait for each other "
                         f"and none can go on", self.program.instructions[first.pc].location,
                         notes=tuple(lines))

    def _check_mail(self) -> None:
        for (src, dst), box in sorted(self.mail.items()):
            if box:
                message = box[0]
                ins = self.program.instructions[message.pc]
                raise CommError(f"rank {src} sent {len(box)} message(s) to rank {dst} that "
                                f"rank {dst} never received (a send with no matching recv)",
                                ins.location)


def _replay_explicit(program, cores: list[Core], network: Network, logs: list[list]) -> None:
    """Replay every rank's events under explicit synchronisation, together: each rank's replay
    runs until a cc.* event (its start is then known), and the event's end comes from the other
    ranks' replayed times, on ``network`` (fresh links). Leaves each rank's result in
    ``core.replayed`` (api._finish reports it).

    Of the events stopped at, the one with the earliest start that can complete goes first
    (links are booked in time order, as in the run): a send (its data leaves at its start), a
    recv whose message has been sent in the replay, a collective every rank has reached. When
    none can, the ranks stopped at a cc.* event go on with it pending (its queue holds, the
    other tracks run on) until its end is known; a rank's replay is thereby exact while it
    waits only on its own cc.* queue, and when other tracks run ahead of a pending event, a
    semaphore they share with its queue may count their signals first (docs/multichip.md)."""
    from neuronemu.timing import explicit as X

    world = len(cores)
    replays = []
    records = []   # per rank: cc event -> its log record
    for core, log in zip(cores, logs, strict=True):
        n = int(core.regs[L.REG_EVENTS])
        if n > len(core.events):
            return   # not every event was recorded: api._finish reports it
        rep = X.Replayer(program, core.events[:n], core.event_times[:n], core.clocks,
                         couple=True)
        cc = np.flatnonzero(rep.kinds[rep.events[:, 0]] & X.F_CC)
        assert len(cc) == len(log), (len(cc), len(log))
        replays.append(rep)
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
    for core, rep in zip(cores, replays, strict=True):
        core.replayed = rep.result()


def tile_itemsize(tile) -> int:
    from neuronemu.numerics import dtypes

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
        else:
            text.append(f"{part[0]}={part[1]}")
    return f"{name} {', '.join(text)}"
