"""Collective algorithms as steps of messages, and their execution on the ranks' data.

An algorithm is a list of steps; a step is a list of messages (src rank, dst rank, the keys of
the chunks it carries, whether the receiver reduces them into its own or replaces them). All
messages of a step read the data as it was before the step. A rank's next step starts when
everything it sent or received in this step has arrived and been reduced, so the modelled time
of a ring all-reduce is the textbook 2 (n - 1) x (hop latency + chunk / link bandwidth), plus
(n - 1) reductions of a chunk at the DMA-compute rate, plus whatever contention the links add
(ARCHITECTURE.md 6.3; docs/multichip.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MESH_BELOW = 1 << 20     # auto: mesh below 1 MiB per rank (CCINTRA: mesh is good < 1 MB)
RDH_UP_TO = 56 << 20     # auto: recursive doubling/halving up to 56 MiB (CCINTRA: 1-56 MB)


@dataclass(frozen=True)
class Message:
    src: int
    dst: int
    keys: tuple
    reduce: bool


@dataclass(frozen=True, eq=False)
class MeshStep:
    """One mesh step as arrays: member r sends every other member q one chunk, keyed q
    (``to_owner``: the chunk q owns, reduced into its own) or r, in the order of
    ``[Message(r, q, (key,), reduce) for r in range(n) for q in range(n) if q != r]``: the
    same messages, timed alike, without the objects (a mesh step over 1,152 ranks is 1.3 M
    messages, whose objects cost more than their booking)."""

    src: np.ndarray
    dst: np.ndarray
    keys: np.ndarray
    reduce: bool

    def __len__(self) -> int:
        return int(self.src.size)


def mesh_step(n: int, to_owner: bool, reduce: bool) -> MeshStep:
    src = np.repeat(np.arange(n, dtype=np.int64), n - 1)
    dst = np.tile(np.arange(n - 1, dtype=np.int64), n)
    dst += dst >= src   # every q but r, ascending
    return MeshStep(src, dst, dst if to_owner else src, reduce)


def choose(algorithm: str, nbytes: int, world: int) -> str:
    """The algorithm the runtime would use for ``nbytes`` per rank (ARCHITECTURE.md 6.3)."""
    if algorithm != "auto":
        return algorithm
    if nbytes < MESH_BELOW:
        return "mesh"
    if nbytes <= RDH_UP_TO:
        # rdh needs a power of two; otherwise mesh (chosen: its O(1) steps beat the ring's
        # 2 (n - 1) hop latencies at these sizes)
        return "rdh" if world & (world - 1) == 0 else "mesh"
    return "ring"


def ring_order(topology, ranks_per_chip: int) -> list[int]:
    """Ranks along the topology's ring of chips, a chip's cores consecutively."""
    chips = topology.ring() if topology is not None else [0]
    return [c * ranks_per_chip + k for c in chips for k in range(ranks_per_chip)]


def hypercube_order(topology, ranks_per_chip: int) -> list[int]:
    """rank of each hypercube id. On a torus whose sides are powers of two each side is walked in
    Gray-code order, so ids that differ in one bit are neighbours in that dimension (the 16-chip
    torus viewed as a 4-D hypercube, CCINTRA); cores of a chip take the lowest bits."""
    if topology is None or topology.layout != "torus" or any(
            s & (s - 1) for s in topology.shape):
        chips = list(range(topology.chips if topology is not None else 1))
    else:
        bits = [s.bit_length() - 1 for s in topology.shape]
        chips = []
        for h in range(topology.chips):
            coords, rest = [], h
            for b in reversed(bits):
                g = rest & ((1 << b) - 1)
                rest >>= b
                # Gray code: position along the ring of the id g
                coords.append(_gray_position(g, b))
            chips.append(topology.chip_at(tuple(reversed(coords))))
    return [c * ranks_per_chip + k for c in chips for k in range(ranks_per_chip)]


def _gray_position(g: int, bits: int) -> int:
    """The position p (0 .. 2^bits - 1) whose Gray code p ^ (p >> 1) equals g."""
    p = 0
    while g:
        p ^= g
        g >>= 1
    return p % (1 << bits) if bits else 0


class Groups:
    """The replica groups of a collective: ``group_size`` s and ``group_stride`` t split the
    world into blocks of s t ranks, and each block into t groups of s ranks t apart (t = 1:
    consecutive ranks); s = 0 is one group of every rank. Within a group, ranks are members
    0 .. s - 1 in rank order: member i's block of an all-gather is block i of the result."""

    def __init__(self, world: int, size: int, stride: int):
        if size == 0:
            if stride > 1:
                raise ValueError(f"group_stride={stride} needs a group_size")
            size = world
        span = size * stride
        if world % span:
            raise ValueError(f"group_size={size} x group_stride={stride} = {span} ranks does "
                             f"not divide the world of {world} ranks")
        self.size = size
        self.groups = [[block + j + k * stride for k in range(size)]
                       for block in range(0, world, span) for j in range(stride)]
        self.member = [0] * world      # rank -> its index in its group
        self.group_of = [0] * world    # rank -> the index of its group
        for g, ranks in enumerate(self.groups):
            for i, r in enumerate(ranks):
                self.member[r], self.group_of[r] = i, g

    def steps(self, make, order: list[int], cube: list[int],
              rename=None) -> list[list[Message]]:
        """The steps of every group at once: ``make(order, cube, g)`` builds group g's steps
        on members 0 .. size - 1 (``order``, ``cube``: the world's ring and hypercube orders
        restricted to the group); their messages are renamed to ranks (and each key k to
        ``rename(g, k)`` if given: keys that must differ between groups) and step k of every
        group is one step, so the groups run side by side on the links."""
        if len(self.groups) == 1 and rename is None:
            # one group of every rank: members are ranks and the orders are the world's, so the
            # steps need no renaming (a mesh over a big world is millions of messages)
            return make(order, cube, 0)
        merged: list[list[Message]] = []
        for g, ranks in enumerate(self.groups):
            mine = set(ranks)
            local_order = [self.member[r] for r in order if r in mine]
            local_cube = [self.member[r] for r in cube if r in mine]
            for k, step in enumerate(make(local_order, local_cube, g)):
                if k == len(merged):
                    merged.append([])
                merged[k].extend(
                    Message(ranks[m.src], ranks[m.dst],
                            m.keys if rename is None else tuple(rename(g, key) for key in m.keys),
                            m.reduce)
                    for m in step)
        return merged


def reduce_scatter_steps(algorithm: str, order: list[int], cube: list[int]) -> list[list[Message]]:
    """Block q (a rank id) ends fully reduced on rank q."""
    n = len(order)
    if n == 1:
        return []
    if algorithm == "ring":
        steps = []
        for s in range(n - 1):
            steps.append([Message(order[i], order[(i + 1) % n], (order[(i - 1 - s) % n],), True)
                          for i in range(n)])
        return steps
    if algorithm == "mesh":
        return [[Message(r, q, (q,), True) for r in range(n) for q in range(n) if q != r]]
    steps, high, mask = [], 0, n >> 1
    while mask:
        step = []
        for h in range(n):
            keys = tuple(cube[c] for c in range(n)
                         if c & high == h & high and c & mask != h & mask)
            step.append(Message(cube[h], cube[h ^ mask], keys, True))
        steps.append(step)
        high |= mask
        mask >>= 1
    return steps


def all_gather_steps(algorithm: str, order: list[int], cube: list[int]) -> list[list[Message]]:
    """Block q starts on rank q; every rank ends with every block."""
    n = len(order)
    if n == 1:
        return []
    if algorithm == "ring":
        return [[Message(order[i], order[(i + 1) % n], (order[(i - s) % n],), False)
                 for i in range(n)] for s in range(n - 1)]
    if algorithm == "mesh":
        return [[Message(r, q, (r,), False) for r in range(n) for q in range(n) if q != r]]
    steps, mask = [], 1
    while mask < n:
        step = []
        for h in range(n):
            low = ~(mask - 1)
            keys = tuple(cube[c] for c in range(n) if c & low == h & low)
            step.append(Message(cube[h], cube[h ^ mask], keys, False))
        steps.append(step)
        mask <<= 1
    return steps


def all_to_all_steps(n: int) -> list[list[Message]]:
    """Block j of rank i (key (i, j)) goes to rank j: one direct (mesh) step."""
    if n == 1:
        return []
    return [[Message(i, j, ((i, j),), False) for i in range(n) for j in range(n) if j != i]]


def permute_steps(n: int, shift: int) -> list[list[Message]]:
    if shift % n == 0:
        return []
    return [[Message(r, (r + shift) % n, (r,), False) for r in range(n)]]


def barrier_steps(n: int) -> list[list[Message]]:
    """Dissemination barrier: in round k rank r signals r + 2^k."""
    steps, d = [], 1
    while d < n:
        steps.append([Message(r, (r + d) % n, (), False) for r in range(n)])
        d <<= 1
    return steps


def move_steps(steps, data: dict[int, dict], combine, owner: list[int] | None = None,
               comm=None) -> None:
    """Move (and reduce) the chunks of ``data`` (per rank: key -> array) step by step; the
    timing is ``time_steps``'s, which does not depend on the data. ``data`` holds
    the boxes of the ranks this partition owns (``owner[rank]`` is a rank's partition; None:
    one partition owns every rank); the chunks a step sends to another partition travel in one
    ``comm.alltoall`` per step. Every receiver applies its step's messages in (src, dst) order,
    whichever partition they came from, so the sums have the same bits for any partitioning."""
    me = comm.partition if comm is not None else 0
    split = comm is not None and comm.partitions > 1
    for step in steps:
        order = sorted(range(len(step)), key=lambda i: (step[i].src, step[i].dst))
        payload: dict[int, list] = {}
        outgoing: list[list] = [[] for _ in range(comm.partitions)] if split else []
        # every partition knows the steps and the owners, so all agree whether to exchange
        crosses = split and any(owner[m.src] != owner[m.dst] for m in step)
        for i in order:
            m = step[i]
            if split and owner[m.src] != me:
                continue
            values = [data[m.src][k] for k in m.keys]   # as the data was before the step
            if split and owner[m.dst] != me:
                outgoing[owner[m.dst]].append(values)
            else:
                payload[i] = values
        if crosses:
            received = [iter(_unpack(box)) for box in comm.alltoall([_pack(values)
                                                                     for values in outgoing])]
        for i in order:
            m = step[i]
            if split and owner[m.dst] != me:
                continue
            values = payload[i] if i in payload else next(received[owner[m.src]])
            box = data[m.dst]
            for k, value in zip(m.keys, values, strict=True):
                box[k] = combine(box[k], value) if m.reduce else value


def _pack(payloads: list[list[np.ndarray]]):
    """One partition's chunks for another, as few objects as possible: chunks of one dtype and
    number of dimensions travel as one flat array plus their shapes (a mesh step sends hundreds
    of thousands of small chunks; pickled one by one they cost more than the step's sums)."""
    arrays = [a for values in payloads for a in values]
    if not arrays or len({(a.dtype, a.ndim) for a in arrays}) != 1:
        return ("lists", payloads)
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays),
                                                                         arrays[0].ndim)
    flat = np.concatenate([a.ravel() for a in arrays])
    return ("flat", flat, shapes, np.array([len(values) for values in payloads]))


def _unpack(packed) -> list[list[np.ndarray]]:
    if packed[0] == "lists":
        return packed[1]
    _, flat, shapes, per_message = packed
    sizes = shapes.prod(axis=1) if shapes.shape[1] else np.ones(len(shapes), dtype=np.int64)
    cuts = np.cumsum(sizes)[:-1]
    arrays = [a.reshape(shape) for a, shape in zip(np.split(flat, cuts), map(tuple, shapes),
                                                       strict=True)]
    out, at = [], 0
    for count in per_message.tolist():
        out.append(arrays[at:at + count])
        at += count
    return out


def time_steps(steps, nbytes_of, ready: list[float], network) -> list[float]:
    """When each rank finishes the steps if rank r starts at ready[r] (the run and the
    explicit-sync replay time collectives with it).

    A message the receiver reduces into its own chunk is added after it has arrived, by the
    receiver's DMA engines at ``network.reduce_ns`` (the runtime's collectives reduce with DMA
    compute descriptors: ARCHITECTURE.md 6.3), the reductions of one receiver one after the
    other in arrival order; so a built-in collective pays for its additions as a hand-written
    ring of cc.send / cc.recv and an add does."""
    ready = list(ready)
    for step in steps:
        ready = time_step(step, nbytes_of, ready, network)
    return ready


def time_step(step, nbytes_of, ready: list[float], network) -> list[float]:
    """Book one step's messages (in order of their sender's ready time, then sender, then
    receiver) and the receivers' reductions; returns when each rank is done with the step."""
    from neuronemu.timing.links import reduce_in_turn

    n = len(step)
    if n == 0:
        return list(ready)
    if isinstance(step, MeshStep):
        src, dst = step.src, step.dst
        nbytes = np.array([nbytes_of(k) for k in range(int(step.keys.max()) + 1)],
                          dtype=np.int64)[step.keys]
        reduce = np.full(n, step.reduce)
    else:
        src = np.fromiter((m.src for m in step), np.int64, n)
        dst = np.fromiter((m.dst for m in step), np.int64, n)
        nbytes = np.fromiter((sum(nbytes_of(k) for k in m.keys) for m in step), np.int64, n)
        reduce = np.fromiter((m.reduce for m in step), bool, n)
    ready_of = np.asarray(ready, dtype=np.float64)
    if not (isinstance(step, MeshStep) and (np.diff(ready_of) >= 0.0).all()):
        # (a mesh step is in (src, dst) order: with ready times growing by rank, sorted)
        order = np.lexsort((dst, src, ready_of[src]))
        src, dst, nbytes, reduce = src[order], dst[order], nbytes[order], reduce[order]
    arrival = network.transfer_many(src, dst, nbytes, ready_of[src])
    done = ready_of.copy()
    np.maximum.at(done, dst, arrival)
    np.maximum.at(done, src, arrival)
    adds = np.flatnonzero(reduce & (nbytes > 0))
    if adds.size:
        by = np.lexsort((nbytes[adds], src[adds], dst[adds], arrival[adds]))
        adds = adds[by]
        reduce_in_turn(arrival[adds], dst[adds], nbytes[adds] / network.reduce_gb_s, done)
    return done.tolist()


class Reducer:
    """Elementwise op on the values of one dtype, rounding each partial result to the dtype as
    the hardware's stores do: fp32 in IEEE single precision; other floats in float64, then
    rounded to nearest even (exact for max/min); integers in int64, saturated."""

    def __init__(self, dtype: str, op: str):
        from neuronemu.isa import dtypes

        self.dtype = dtype
        self.kind = dtypes.get(dtype).kind
        self.op = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum}[op]
        self.rounds = op == "add"

    def values(self, bits: np.ndarray) -> np.ndarray:
        from neuronemu.isa import dtypes

        if self.dtype == "float32":
            return bits.astype(np.uint32).view(np.float32)
        array = dtypes.from_bits(bits, self.dtype)
        return array.astype(np.float64 if self.kind == "float" else np.int64)

    def bits(self, values: np.ndarray) -> np.ndarray:
        from neuronemu.numerics import convert

        if self.dtype == "float32":
            return values.view(np.uint32).astype(np.int64)
        return convert.to_bits(values, self.dtype).astype(np.int64)

    def combine(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN are results, not errors
            out = self.op(a, b)
        if self.rounds and self.dtype != "float32":
            return self.values(self.bits(out))
        return out
