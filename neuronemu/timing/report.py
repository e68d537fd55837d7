"""Timing results as users see them: per-track statistics, TensorE FLOP/s and the critical path
(the Chrome/Perfetto trace is neuronemu.timing.trace). Plain Python over the arrays the jitted
loop filled."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from neuronemu.machine import layout as L


@dataclass(frozen=True)
class TrackStats:
    instructions: int
    busy_ns: float
    utilisation: float       # busy_ns / total time
    clock_ghz: float | None  # None for DMA queues

    @property
    def busy_cycles(self) -> int | None:
        return None if self.clock_ghz is None else round(self.busy_ns * self.clock_ghz)


@dataclass(frozen=True)
class QueueStats:
    transfers: int
    bytes: int                # as the tiles hold them
    compressed_bytes: int     # as charged: compressed tensors count their compressed size
    busy_ns: float            # from each transfer's issue to its completion
    occupancy: float          # busy_ns / total time


@dataclass(frozen=True)
class DmaStats:
    """DMA traffic of one run: totals, and per queue that carried any."""

    transfers: int
    bytes: int
    compressed_bytes: int
    time_ns: float
    engine_busy_ns: tuple[float, ...]   # per DMA engine
    queues: dict[str, QueueStats]

    @property
    def compression_ratio(self) -> float:
        """Bytes / compressed bytes (1.0 when nothing was compressed)."""
        return self.bytes / self.compressed_bytes if self.compressed_bytes else 1.0

    @property
    def achieved_gbps(self) -> float:
        """Charged bytes over the run's time, in GB/s (= bytes per ns)."""
        return self.compressed_bytes / self.time_ns if self.time_ns else 0.0

    @property
    def engine_utilisation(self) -> float:
        if not self.time_ns or not self.engine_busy_ns:
            return 0.0
        return sum(self.engine_busy_ns) / len(self.engine_busy_ns) / self.time_ns


@dataclass
class Timing:
    """Modelled time of one run (sync mode auto)."""

    time_ns: float
    tracks: dict[str, TrackStats]
    cycles: dict[str, int]              # total time in each engine's own cycles
    tensor_flops: int                   # 2*K*M*N summed over executed matmuls
    tensor_peak_flops_per_ns: float     # 128 x 128 MACs per TensorE cycle (bf16 dense)
    critical_path: dict[str, float]     # ns of the critical path spent on each track
    events_recorded: int
    events_total: int
    events: np.ndarray = field(repr=False, default=None)        # [n, 2 + args] (pc, track, ..)
    # [n, 5] (start, end, cycles, bytes, wire bytes); cycles are ns for DMA queues
    event_times: np.ndarray = field(repr=False, default=None)
    dma: DmaStats | None = None

    @property
    def tensor_flops_per_second(self) -> float:
        return self.tensor_flops / self.time_ns * 1e9 if self.time_ns else 0.0

    @property
    def tensor_peak_fraction(self) -> float:
        if not self.time_ns:
            return 0.0
        return self.tensor_flops / self.time_ns / self.tensor_peak_flops_per_ns

    @property
    def bound_by(self) -> str | None:
        """The track holding the largest share of the critical path."""
        if not self.critical_path:
            return None
        return max(self.critical_path.items(), key=lambda kv: kv[1])[0]


def track_names() -> dict[int, str]:
    from neuronemu.isa.table import load_isa

    names = {code: name for name, code in load_isa().enums["engine"].values.items()}
    for q in range(L.NUM_DMA_QUEUES):
        names[L.DMA_TRACK0 + q] = f"dma.q{q}"
    names[L.ALL_TRACKS] = "barrier"
    return names


def dma_stats(stats: np.ndarray, busy: np.ndarray, engine_busy: np.ndarray,
              time_ns: float) -> DmaStats:
    from neuronemu.timing import dma

    queues = {}
    for q in range(L.NUM_DMA_QUEUES):
        if stats[q, dma.S_TRANSFERS]:
            b = float(busy[L.DMA_TRACK0 + q])
            queues[f"q{q}"] = QueueStats(int(stats[q, dma.S_TRANSFERS]), int(stats[q, dma.S_BYTES]),
                                         int(stats[q, dma.S_WIRE]), b,
                                         b / time_ns if time_ns else 0.0)
    return DmaStats(int(stats[:, dma.S_TRANSFERS].sum()), int(stats[:, dma.S_BYTES].sum()),
                    int(stats[:, dma.S_WIRE].sum()), time_ns,
                    tuple(float(b) for b in engine_busy), queues)


def _recount_compiler_engine(program, counts, per_track, events, recorded, n_events) -> None:
    """A copy whose engine the compiler chose (``compiler_engine``) ran on VectorE or ScalarE
    each time: its executions are counted on the engine of each event (the row names only the
    last one), when every event was recorded."""
    flexible = np.flatnonzero(program.instrs[:, L.I_FLAGS] & L.COMPILER_ENGINE)
    if not len(flexible) or recorded < n_events:
        return
    for pc in flexible:
        per_track[program.instrs[pc, L.I_TRACK]] -= counts[pc]
    pcs = events[:recorded, 0]
    ran = np.isin(pcs, flexible)
    np.add.at(per_track, events[:recorded, 1][ran], 1)


def build(program, counts, busy, track_free, clocks, events, event_times, n_events,
          dma_counts=None, engine_busy=None) -> Timing:
    names = track_names()
    recorded = min(n_events, events.shape[0])
    events, event_times = events[:recorded], event_times[:recorded]
    time_ns = float(track_free.max())  # when the last track finished
    per_track = np.zeros(L.NUM_TRACKS, dtype=np.int64)
    for pc, n in enumerate(counts):
        if n and program.instrs[pc, L.I_COST] != _free_code():
            per_track[program.instrs[pc, L.I_TRACK]] += n
    _recount_compiler_engine(program, counts, per_track, events, recorded, n_events)
    tracks = {}
    for t in range(L.NUM_TRACKS):
        if per_track[t]:
            is_dma = t >= L.DMA_TRACK0
            tracks[names[t]] = TrackStats(
                int(per_track[t]), float(busy[t]),
                float(busy[t] / time_ns) if time_ns else 0.0,
                None if is_dma else float(clocks[t]))
    engine_clocks = dict(program.target.clock_ghz)
    cycles = {name: round(time_ns * ghz) for name, ghz in engine_clocks.items()}
    flops = tensor_flops(program, counts)
    peak = 2 * 128 * 128 * engine_clocks["tensor"]
    dma = (dma_stats(dma_counts, busy, engine_busy, time_ns)
           if dma_counts is not None and dma_counts[:, 0].any() else None)
    return Timing(time_ns, tracks, cycles, flops, peak,
                  critical_path(events, event_times, names), recorded, int(n_events),
                  events, event_times, dma)


def tensor_flops(program, counts) -> int:
    """2 K M N summed over the matmuls run (a transpose moves data: not counted, as the
    profiler counts it). Read from the lowered rows (operand partitions and free sizes, the
    integer arguments), so the Instruction objects a large traced kernel leaves unbuilt
    (Program.instructions) are not made for it: that cost ~37 us per instruction."""
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    matmul = isa.costs["tensor_matmul"].code
    instrs, ops = program.instrs, program.ops
    ran = np.nonzero((np.asarray(counts) > 0) & (instrs[:, L.I_COST] == matmul))[0]
    by_opcode = _definitions_by_opcode()
    flops = 0
    for pc in ran:
        row = instrs[pc]
        d = by_opcode[int(row[L.I_OPCODE])]
        slots = {a.name: (int(row[L.I_ARGS + 2 * k]), int(row[L.I_ARGS + 2 * k + 1]))
                 for k, a in enumerate(d.args)}
        if _int_arg(slots, "is_transpose"):
            continue
        stationary, moving = ops[slots["stationary"][1]], ops[slots["moving"][1]]
        m_size, n_size = int(stationary[L.OP_SIZE]), int(moving[L.OP_SIZE])
        # an x4 (MX) operand packs 4 contraction indices per partition; double_row 2 per
        # [K, 2, F] operand row
        depth = int(stationary[L.OP_PCOUNT]) * (4 if d.name == "tensor.matmul_mx" else 1)
        if _int_arg(slots, "perf_mode") == 1:
            depth, m_size, n_size = 2 * depth, m_size // 2, n_size // 2
        flops += int(counts[pc]) * 2 * depth * m_size * n_size
    return flops


def _int_arg(slots: dict, name: str) -> int:
    """An integer (bool, enum) argument's value from its (tag, value) slot; 0 when absent."""
    tag, value = slots.get(name, (L.TAG_NONE, 0))
    return value if tag == L.TAG_INT else 0


def _definitions_by_opcode() -> dict:
    from neuronemu.isa.table import load_isa

    return {d.opcode: d for d in load_isa().instructions.values()}


def _free_code() -> int:
    from neuronemu.isa.table import load_isa

    return load_isa().costs["ctrl"].code


def critical_path(events: np.ndarray, times: np.ndarray, names: dict[int, str]) -> dict[str, float]:
    """Walk back from the last instruction to finish: each step goes to the event whose end set
    this one's start, preferring the same track (the engine was busy) over another one (waiting
    for data). Returns ns per track along that chain."""
    from neuronemu.timing.critical import walk

    if len(events) == 0:
        return {}
    # a long run's events are mapped from a file that holds each column as a block: these
    # are then its pages, not copies (timing/eventlog.py)
    ends = np.ascontiguousarray(times[:, 1])
    shares, order, n_order = walk(np.ascontiguousarray(events[:, 1]),
                                  np.ascontiguousarray(times[:, 0]), ends,
                                  np.argsort(ends, kind="stable"))
    visited = {names[int(t)]: float(shares[t]) for t in order[:n_order]}
    return dict(sorted(visited.items(), key=lambda kv: -kv[1]))
