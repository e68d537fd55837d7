"""Python API: assemble a kernel, run it with numpy inputs, read outputs and statistics.

    import neuronemu
    program = neuronemu.assemble_file("programs/examples/vector_add.s", target="trn2")
    result = neuronemu.run(program, inputs={"a": a, "b": b}, seed=0)
    result.outputs["c"], result.instructions
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neuronemu.errors import Diagnostic, InputError, RuntimeFault
from neuronemu.program import HbmTensor, Program

if TYPE_CHECKING:
    from neuronemu.timing.report import Timing

DEFAULT_MAX_INSTRUCTIONS = 50_000_000
DEFAULT_MAX_TRACE_EVENTS = 1 << 20


def assemble(text: str, filename: str = "<string>", target: str | None = None) -> Program:
    """Assemble source text (raises ``AsmError`` with a located message)."""
    from neuronemu.asm.assembler import assemble as _assemble

    return _assemble(text, filename, target)


def assemble_file(path: str | Path, target: str | None = None) -> Program:
    """Assemble a ``.s`` file, or load a binary ``.neo`` file (recognised by its magic)."""
    from neuronemu import encoding

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read kernel {path}: {e.strerror}") from None
    if encoding.is_encoded(data):
        # a binary is checked like source: disassemble, then assemble the canonical text
        return assemble(encoding.disassemble(data, str(path)), f"{path} (disassembled)", target)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise InputError(f"kernel {path} is neither UTF-8 assembly nor a .neo binary") from None
    return assemble(text, str(path), target)


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
    """Located warnings, e.g. the first read of never-written memory (64-byte granularity)."""

    @property
    def target(self) -> str:
        return self.program.target.name


def initial_values(tensor: HbmTensor, seed: int) -> np.ndarray:
    """The default contents of a tensor: float64 values by its ``init``, before the dtype cast.

    Random initialisers draw from PCG64 keyed by (seed, crc32(name)), so every tensor gets its
    own reproducible stream whatever the declaration order."""
    kind, *params = tensor.init
    shape = tensor.shape
    rng = np.random.default_rng([seed, zlib.crc32(tensor.name.encode())])
    if kind == "zeros":
        return np.zeros(shape)
    if kind == "ones":
        return np.ones(shape)
    if kind == "full":
        return np.full(shape, params[0])
    if kind == "arange":
        return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    if kind == "identity":
        return np.eye(shape[0])
    if kind == "normal":
        return rng.normal(params[0], params[1], size=shape)
    if kind == "uniform":
        return rng.uniform(params[0], params[1], size=shape)
    if kind == "relu_normal":  # ReLU-sparse activations or weights: about half are exact zeros
        return np.maximum(rng.normal(params[0], params[1], size=shape), 0.0)
    return np.full(shape, np.nan)


def _tensor_bits(tensor: HbmTensor, values: np.ndarray) -> np.ndarray:
    from neuronemu.numerics import dtypes

    dt = dtypes.get(tensor.dtype)
    if dt.kind != "float" and values.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            if np.isnan(values).any():
                return np.full(values.shape, (1 << (8 * dt.itemsize)) - 1, dtype=np.uint64)
    return np.ascontiguousarray(dtypes.to_bits(values, tensor.dtype))


def _check_input(tensor: HbmTensor, value) -> np.ndarray:
    from neuronemu.numerics import dtypes

    array = np.asarray(value)
    if tuple(array.shape) != tensor.shape:
        raise InputError(f"input '{tensor.name}' has shape {tuple(array.shape)}, but the kernel "
                         f"declares {tensor.dtype}{list(tensor.shape)}", tensor.location)
    dt = dtypes.get(tensor.dtype)
    if array.dtype == dtypes.numpy_dtype(tensor.dtype):
        return array
    if array.dtype.kind in "fiub" or array.dtype.name in ("bfloat16",) or "float8" in array.dtype.name:
        if dt.kind != "float" and array.dtype.kind == "f":
            as64 = array.astype(np.float64)
            if not np.all(np.isfinite(as64)) or not np.all(as64 == np.round(as64)):
                raise InputError(f"input '{tensor.name}' holds non-integer values but the kernel "
                                 f"declares {tensor.dtype}", tensor.location)
        return array
    raise InputError(f"input '{tensor.name}' has dtype {array.dtype}, which cannot be converted to "
                     f"{tensor.dtype}", tensor.location)


def run(program: Program, inputs: dict[str, np.ndarray] | None = None, seed: int = 0,
        max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_trace_events: int = DEFAULT_MAX_TRACE_EVENTS, stochastic_rounding: bool = False,
        rounding_seed: int | None = None) -> Result:
    """Run an assembled program. ``inputs`` override the declared initialisers by tensor name;
    arrays are cast to the declared dtype with round-to-nearest-even. The first
    ``max_trace_events`` timed instructions are kept for the trace and the critical path.
    ``stochastic_rounding`` makes every fp32 -> bf16/fp16/fp8/tf32 store round stochastically,
    with bits from (``rounding_seed``, default ``seed``; instruction; element)."""
    from neuronemu.exec import layout as L
    from neuronemu.exec.interpreter import (
        EVENT_TIMES_WIDTH,
        EVENT_WIDTH,
        make_memories,
        run_loop,
    )
    from neuronemu.isa.table import load_isa
    from neuronemu.numerics import dtypes
    from neuronemu.timing import model, report
    from neuronemu.timing.dma import ENGINE_INTERVALS, STATS_WIDTH

    inputs = dict(inputs or {})
    for name in inputs:
        if name not in program.tensors:
            known = ", ".join(t.name for t in program.inputs()) or "none"
            raise InputError(f"kernel has no tensor '{name}' (inputs: {known})")
    sbuf, psum, hbm = make_memories(program)
    for tensor in program.tensors.values():
        if tensor.name in inputs:
            values = _check_input(tensor, inputs[tensor.name])
        else:
            values = initial_values(tensor, seed)
        bits = _tensor_bits(tensor, values)
        itemsize = dtypes.get(tensor.dtype).itemsize
        if tensor.compressed:
            from neuronemu.exec.codec import encode_tensor

            raw = encode_tensor(bits.astype(np.int64), itemsize)
        else:
            raw = bits.astype(f"<u{itemsize}").view(np.uint8).ravel()
        hbm[0, tensor.offset: tensor.offset + tensor.nbytes] = raw
    regs = np.zeros(L.REG_COUNT, dtype=np.int64)
    regs[L.REG_SR_ON] = int(bool(stochastic_rounding))
    regs[L.REG_SR_SEED] = seed if rounding_seed is None else rounding_seed
    regs[L.REG_RNG_SEED] = seed  # until the kernel's set_rng_seed
    counts = np.zeros(len(program.instrs), dtype=np.int64)
    isa = load_isa()
    clocks = model.track_clocks(program.target)
    busy = np.zeros(L.NUM_TRACKS, dtype=np.float64)
    write_end, read_end = model.region_tables((sbuf, psum, hbm))
    for tensor in program.tensors.values():
        if tensor.name in inputs or tensor.init[0] != "nan":
            model.mark_written(write_end[L.SPACE_HBM], tensor.offset, tensor.nbytes)
    track_free = np.zeros(L.NUM_TRACKS, dtype=np.float64)
    engines = program.target.dma_engines
    engine_free = np.zeros((engines, ENGINE_INTERVALS + 1, 2), dtype=np.float64)
    engine_busy = np.zeros(engines, dtype=np.float64)
    dma_stats = np.zeros((L.NUM_DMA_QUEUES, STATS_WIDTH), dtype=np.float64)
    timing_state = (model.cost_table(isa), model.target_params(program.target), clocks,
                    track_free, busy, write_end, read_end, engine_free, engine_busy, dma_stats)
    events = np.zeros((max(max_trace_events, 1), EVENT_WIDTH), dtype=np.int64)
    event_times = np.zeros((max(max_trace_events, 1), EVENT_TIMES_WIDTH), dtype=np.float64)
    start = time.perf_counter()
    status, pc, steps = run_loop(program.instrs, program.ops, program.imms, (sbuf, psum, hbm), regs,
                                 dtypes.format_table(), dtypes.decode_table(),
                                 np.int64(max_instructions), counts, timing_state, events,
                                 event_times)
    wall = time.perf_counter() - start
    if status != L.STATUS_OK:
        raise _fault(program, status, pc, regs, max_instructions)
    per_engine = np.zeros(L.NUM_TRACKS, dtype=np.int64)
    np.add.at(per_engine, program.instrs[:, L.I_ENGINE], counts)
    engine_names = isa.enums["engine"]
    instructions = {engine_names.name_of(i): int(c) for i, c in enumerate(per_engine) if c}
    n_events = int(regs[L.REG_EVENTS])
    events, event_times = events[:max_trace_events], event_times[:max_trace_events]
    if program.sync_mode == "explicit":
        from neuronemu.timing import explicit

        if n_events > len(events):
            raise RuntimeFault(f"sync mode explicit replays every instruction, but the run "
                               f"executed {n_events} and max_trace_events is {len(events)}")
        replayed = explicit.replay(program, events[:n_events], event_times[:n_events], clocks)
        busy, track_free = replayed.busy, replayed.track_free
        event_times = replayed.event_times
    timing = report.build(program, counts, busy, track_free, clocks, events, event_times,
                          n_events, dma_stats, engine_busy)
    tensors = {}
    for tensor in program.tensors.values():
        dt = dtypes.get(tensor.dtype)
        raw = hbm[0, tensor.offset: tensor.offset + tensor.nbytes].copy()
        if tensor.compressed:
            from neuronemu.exec.codec import decode_tensor

            bits = decode_tensor(raw, tensor.shape[0], tensor.shape[1], dt.itemsize)
            bits = bits.astype(f"<u{dt.itemsize}").reshape(tensor.shape)
        else:
            bits = raw.view(f"<u{dt.itemsize}").reshape(tensor.shape)
        tensors[tensor.name] = dtypes.from_bits(bits, tensor.dtype)
    outputs = {t.name: tensors[t.name] for t in program.outputs()}
    tiles = {a.name: _allocation_values(a, sbuf if a.space == "sbuf" else psum)
             for a in program.allocations.values()}
    warnings = _unwritten_warning(program, regs) + _range_warning(program, regs)
    return Result(program, outputs, instructions, int(steps), wall, seed, tensors, tiles, timing,
                  warnings)


def _unwritten_warning(program: Program, regs) -> list[Diagnostic]:
    from neuronemu.exec import layout as L
    from neuronemu.program import Tile

    count = int(regs[L.REG_UNWRITTEN_COUNT])
    if not count:
        return []
    ins = program.instructions[int(regs[L.REG_UNWRITTEN_PC])]
    arg = ins.definition.args[int(regs[L.REG_UNWRITTEN_ARG])]
    tile = ins.args[arg.name]
    location = tile.location if isinstance(tile, Tile) else ins.location
    more = f" ({count - 1} more dynamic instructions do too)" if count > 1 else ""
    return [Diagnostic(f"{ins.definition.name} reads '{tile.symbol}' ({arg.name}), which nothing "
                       f"wrote before; it holds NaN / -1 bytes{more}", location)]


def _range_warning(program: Program, regs) -> list[Diagnostic]:
    """Activation inputs outside the documented range of their function (the hardware's result
    is not specified there; neuronemu computes the float64 function anyway)."""
    from neuronemu.exec import layout as L
    from neuronemu.semantics.scalar import INPUT_RANGES

    count = int(regs[L.REG_RANGE_COUNT])
    if not count:
        return []
    ins = program.instructions[int(regs[L.REG_RANGE_PC])]
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
    from neuronemu.numerics import dtypes

    itemsize = dtypes.get(allocation.dtype).itemsize
    partitions = allocation.shape[0]
    raw = memory[:partitions, allocation.offset: allocation.offset
                 + allocation.bytes_per_partition].copy()
    bits = raw.view(f"<u{itemsize}").reshape(allocation.shape)
    return dtypes.from_bits(bits, allocation.dtype)


def _fault(program: Program, status: int, pc: int, regs, limit: int) -> RuntimeFault:
    from neuronemu.exec import layout as L
    from neuronemu.program import Tile

    ins = program.instructions[pc] if pc < len(program.instructions) else None
    location = ins.location if ins else None
    if status == L.STATUS_LIMIT:
        return RuntimeFault(f"instruction limit of {limit} reached (an endless loop?); raise it "
                            f"with --max-instructions", location)
    if status == L.STATUS_OUT_OF_BOUNDS and ins is not None:
        arg = ins.definition.args[int(regs[L.REG_FAULT_ARG])]
        tile = ins.args[arg.name]
        if isinstance(tile, Tile):
            values = ", ".join(f"r{r} = {int(regs[r])}" for r, _ in tile.regs)
            return RuntimeFault(f"{ins.definition.name} argument '{arg.name}' leaves "
                                f"'{tile.symbol}' at run time ({values}); the instruction was not "
                                f"executed", tile.location)
    if status == L.STATUS_BAD_INDEX and ins is not None and "indices" in ins.args:
        p, value, limit, j = (int(v) for v in regs[L.REG_FAULT_INFO: L.REG_FAULT_INFO + 4])
        index, data = ins.args["indices"], ins.args["data"]
        return RuntimeFault(f"{ins.definition.name}: {index.symbol}[{p}, {j}] = {value} is not an "
                            f"element of '{data.symbol}' (0..{limit - 1} per partition); nothing "
                            f"was written", index.location)
    if status in (L.STATUS_BAD_INDEX, L.STATUS_OVERLAP) and ins is not None:
        a, b, c = (int(v) for v in regs[L.REG_FAULT_INFO: L.REG_FAULT_INFO + 3])
        table = next(t for t in ins.args.values() if isinstance(t, Tile) and t.space == "hbm")
        index = ins.args["index"]
        if status == L.STATUS_BAD_INDEX:
            return RuntimeFault(f"{ins.definition.name}: {index.symbol}[{a}] = {b} is not a row of "
                                f"'{table.symbol}' (rows 0..{c - 1}); nothing was written",
                                index.location)
        return RuntimeFault(f"{ins.definition.name}: partitions {a} and {b} of '{index.symbol}' both "
                            f"name row {c} of '{table.symbol}', so one transfer would write it "
                            f"twice (overlapping destination writes); nothing was written",
                            index.location)
    return RuntimeFault(f"execution fault (status {status})", location)
