"""A finished run's report: the ``Result`` of one core (outputs and tensors decoded from its
HBM image, the final tiles, instruction counts, the timing report, located warnings) and the
``SpmdResult`` of a multi-rank run. Built from a ``Core`` that ran to its end without a fault
(exec/session.py, multichip/spmd.py), whose explicit-sync replay, if any, is in ``core.replay``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from neuronemu.errors import Diagnostic
from neuronemu.program import Program

if TYPE_CHECKING:
    from neuronemu.exec.core import Core
    from neuronemu.timing.report import Timing


@dataclass
class Result:
    """Outputs (name -> array of the declared dtype; bf16/fp8 as ml_dtypes) and run statistics."""

    program: Program
    outputs: dict[str, np.ndarray]
    instructions: dict[str, int]
    steps: int
    wall_seconds: float
    seed: int
    tensors: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    tiles: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    """Final contents of every ``.sbuf`` / ``.psum`` allocation, for unit tests of kernels."""
    timing: Timing | None = field(repr=False, default=None)
    """Modelled time: total, per engine and DMA queue, critical path, trace events."""
    warnings: list[Diagnostic] = field(default_factory=list)
    """Located warnings, e.g. the first read of never-written memory (exact to the byte)."""
    compile_seconds: float = 0.0
    """Time this run spent compiling code numba had not cached yet (not in ``wall_seconds``)."""

    @property
    def target(self) -> str:
        return self.program.target.name


@dataclass
class SpmdResult:
    """A run of one kernel on every rank of a topology (``run_spmd``)."""

    program: Program
    topology: str
    ranks_per_chip: int
    ranks: list[Result]
    """Per rank: its outputs, instructions, timing and warnings, as a single-core run reports."""
    network: object
    """Link traffic: neuronemu.multichip.network.NetworkStats."""
    wall_seconds: float
    compile_seconds: float = 0.0
    """Time spent compiling code numba had not cached yet (not in ``wall_seconds``)."""

    @property
    def world(self) -> int:
        return len(self.ranks)

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Every output tensor stacked over ranks: shape (world, *declared shape)."""
        return {name: np.stack([r.outputs[name] for r in self.ranks])
                for name in self.ranks[0].outputs}

    @property
    def time_ns(self) -> float:
        """When the last rank's last track finished."""
        return max(r.timing.time_ns for r in self.ranks)


def finish(program: Program, core: Core, seed: int, world: int) -> Result:
    """The Result of ``core``, which ran ``program`` to its end without a fault (``world``: how
    many ranks the run had; a multi-rank run's warnings name their rank)."""
    from neuronemu.isa import dtypes
    from neuronemu.isa.table import load_isa
    from neuronemu.machine import layout as L
    from neuronemu.timing import report

    regs = core.regs
    assert core.status == L.STATUS_OK, "a failed run raises its fault before it is reported"
    isa = load_isa()
    counts = core.counts
    per_engine = np.zeros(L.NUM_TRACKS, dtype=np.int64)
    np.add.at(per_engine, program.instrs[:, L.I_ENGINE], counts)
    engine_names = isa.enums["engine"]
    instructions = {engine_names.name_of(i): int(c) for i, c in enumerate(per_engine) if c}
    n_events = int(regs[L.REG_EVENTS])
    events, event_times = core.log.recorded(regs)
    busy, track_free = core.busy, core.track_free
    if core.replay is not None:   # .sync explicit: the times the replay gave
        busy, track_free = core.replay.busy, core.replay.track_free
        event_times = core.replay.event_times
    timing = report.build(program, counts, busy, track_free, core.clocks, events, event_times,
                          n_events, core.dma_stats, core.engine_busy)
    hbm = core.mems[2]
    tensors = {}
    for tensor in program.tensors.values():
        dt = dtypes.get(tensor.dtype)
        raw = hbm[0, tensor.offset: tensor.offset + tensor.nbytes]
        if tensor.compressed:
            from neuronemu.machine.codec import decode_tensor

            bits = decode_tensor(raw.copy(), tensor.shape[0], tensor.shape[1], dt.itemsize)
            tensors[tensor.name] = dtypes.from_bits(
                bits.astype(f"<u{dt.itemsize}").reshape(tensor.shape), tensor.dtype)
        else:
            # a view of the HBM image, which nothing uses after the run: no copy of any tensor
            tensors[tensor.name] = raw.view(_api_view_dtype(tensor.dtype)).reshape(tensor.shape)
    outputs = {t.name: tensors[t.name] for t in program.outputs()}
    sbuf, psum = core.mems[0], core.mems[1]
    tiles = {a.name: _allocation_values(a, sbuf if a.space == "sbuf" else psum)
             for a in program.allocations.values()}
    warnings = _unwritten_warning(program, regs) + _range_warning(program, regs)
    if world > 1:
        for w in warnings:
            w.message = f"rank {core.rank}: {w.message}"
    if world == 1 or core.rank == 0:   # the assembler's warnings, once per run
        warnings = list(program.warnings) + warnings
    return Result(program, outputs, instructions, core.steps, core.wall, seed, tensors, tiles,
                  timing, warnings, core.compile_seconds)


def _api_view_dtype(name: str) -> np.dtype:
    """The API dtype of ``name``, which views its storage bits unchanged (dtypes.from_bits)."""
    from neuronemu.isa import dtypes

    return np.dtype(np.float32) if name == "tfloat32" else dtypes.numpy_dtype(name)


def _unwritten_warning(program: Program, regs) -> list[Diagnostic]:
    from neuronemu.machine import layout as L
    from neuronemu.program import Tile

    count = int(regs[L.REG_UNWRITTEN_COUNT])
    if not count:
        return []
    ins = program.instruction(int(regs[L.REG_UNWRITTEN_PC]))
    arg = ins.definition.args[int(regs[L.REG_UNWRITTEN_ARG])]
    tile = ins.args[arg.name]
    location = tile.location if isinstance(tile, Tile) else ins.location
    more = f" ({count - 1} more dynamic instructions do too)" if count > 1 else ""
    return [Diagnostic(f"{ins.definition.name} reads '{tile.symbol}' ({arg.name}), which nothing "
                       f"wrote before; it holds NaN / -1 bytes{more}", location)]


def _range_warning(program: Program, regs) -> list[Diagnostic]:
    """Activation inputs outside the documented range of their function (the hardware's result
    is not specified there; neuronemu computes the float64 function anyway)."""
    from neuronemu.machine import layout as L

    count = int(regs[L.REG_RANGE_COUNT])
    if not count:
        return []
    # imported only now: it makes numba dispatchers for all of scalar.py, which a run without
    # activations (and the kernels of its own) need not pay for
    from neuronemu.semantics.scalar import INPUT_RANGES

    ins = program.instruction(int(regs[L.REG_RANGE_PC]))
    value = float(np.array([regs[L.REG_RANGE_BITS]], dtype=np.uint32).view(np.float32)[0])
    from neuronemu.isa.table import load_isa

    func = load_isa().enums["activation"].name_of(ins.args["func"])
    low, high, kind = INPUT_RANGES[func]
    where = f"|x| in [{low:.6g}, {high:.6g}]" if kind == "magnitude" else f"[{low:.6g}, {high:.6g}]"
    more = f" ({count - 1} more dynamic instructions do too)" if count > 1 else ""
    return [Diagnostic(f"{ins.definition.name} func={func} gets input {value:.9g} (data * scale + "
                       f"bias), outside its documented range {where}; the hardware's result "
                       f"there is not specified{more}", ins.location)]


def _allocation_values(allocation, memory: np.ndarray) -> np.ndarray:
    from neuronemu.isa import dtypes

    itemsize = dtypes.get(allocation.dtype).itemsize
    partitions = allocation.shape[0]
    raw = memory[:partitions, allocation.offset: allocation.offset
                 + allocation.bytes_per_partition]   # from_bits makes the one copy
    bits = raw.view(f"<u{itemsize}").reshape(allocation.shape)
    return dtypes.from_bits(bits, allocation.dtype)
