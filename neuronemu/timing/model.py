"""The timing model inside the interpreter loop (sync mode ``auto``).

Each engine and each DMA queue is a track that runs its instructions in order. An instruction
starts when its track is free and when the memory it touches is ready: it waits for the last
write of every region it reads (RAW) and, for regions it writes, also for the last read and write
(WAR, WAW). Regions are the segments of ``neuronemu/timing/regions.py``: byte ranges of each
partition row (and of HBM) cut wherever an operand can begin or end, so a tile depends only on
instructions that touched overlapping bytes. Functional results are unchanged:
instructions still execute in program order; only their times are modelled.

Durations come from the cost classes of ``isa/costs.toml`` (``cost_table`` packs them into an
array) and the per-track clocks of ``isa/targets.toml``.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.machine.memory import dynamic_offset
from neuronemu.timing import dma
from neuronemu.timing.costs import (
    C_EFFICIENCY,
    C_EXTRA_OUTPUT,
    C_FAST_PER_ELEMENT,
    C_FIXED,
    C_FORMULA,
    C_FP32_FACTOR,
    C_INDEXED,
    C_MIN_II,
    C_PER_ELEMENT,
    C_SBUF_EFFICIENCY,
    C_STATIONARY_LOAD,
    F_DMA,
    F_FREE,
    F_MATMUL,
    F_TRANSPOSE,
    F_TWO_INPUT,
    cost_table,
)
from neuronemu.timing.engines import (
    busy_union,
    pe_blocks,
    pe_commit,
    pe_raise,
    pe_ready,
    psum_readable,
    result_latency,
)
from neuronemu.timing.intervals import RING, book, fence, find_gap, last_end
from neuronemu.timing.regions import segments, segments_from

_ALU_FAST_OPS = (1, 2, 3)  # add, subtract, multiply (isa/enums.toml alu_op)
_FLOAT32 = 0               # dtype code of float32 (isa/dtypes.toml)
_BFLOAT16 = 2


def track_clocks(target) -> np.ndarray:
    """GHz per track (DMA tracks count in ns, so their 'clock' is 1)."""
    from neuronemu.isa.table import load_isa

    engines = load_isa().enums["engine"].values
    clocks = np.ones(L.NUM_TRACKS, dtype=np.float64)
    for name, ghz in target.clock_ghz.items():
        clocks[engines[name]] = ghz
    return clocks


# target_params entries after the DMA ones (neuronemu.timing.dma)
T_PSUM_DRAIN_NS = dma.PARAMS_WIDTH   # TensorE pipeline drain: a PSUM result's latency, in ns
T_COMPILER_SCHEDULE = dma.PARAMS_WIDTH + 1   # 1: .schedule compiler (engines' work reordered)
T_SCALAR_COPY_COST = dma.PARAMS_WIDTH + 2    # the cost class of a copy on ScalarE (activation)


def target_params(target, schedule: str = "program") -> np.ndarray:
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    matmul = cost_table(isa)[isa.costs["tensor_matmul"].code]
    drain = result_latency.py_func(matmul, target.clock_ghz["tensor"])   # set-up: no compile
    scalar_copy = isa.costs[isa.instructions["scalar.activation"].cost_class].code
    return np.concatenate([dma.params(target),
                           np.array([drain, 1.0 if schedule == "compiler" else 0.0,
                                     float(scalar_copy)])])


def interval_rings(target) -> np.ndarray:
    """The busy intervals (neuronemu.timing.intervals) of every DMA engine, then of every
    track (used under ``.schedule compiler``): [dma_engines + NUM_TRACKS, RING + 1, 2]."""
    return np.zeros((target.dma_engines + L.NUM_TRACKS, RING + 1, 2), dtype=np.float64)


@jit
def stationary_load_cycles(ins, ops, row):
    """LoadStationary cycles of a matmul: the stationary operand's columns (its free size) times
    the class's cycles per column; 0 for every other formula."""
    if row[C_STATIONARY_LOAD] == 0.0:
        return 0.0
    for k in range(ins[L.I_NARGS]):
        if (ins[L.I_ARGS + 2 * k] == L.TAG_OPERAND
                and (ins[L.I_ACCESS] >> (2 * k)) & 3 == L.ACCESS_READ):
            # args: dst, stationary, moving: the first read-only tile is the stationary one;
            # double_row loads its [K, 2, M] in the time of [K, M] (T2: K = 256 as bf16 K = 128)
            columns = float(ops[ins[L.I_ARGS + 2 * k + 1]][L.OP_SIZE])
            if ins[L.I_FLAGS] & L.MATMUL_DOUBLE_ROW:
                columns *= 0.5
            return row[C_STATIONARY_LOAD] * columns
    return 0.0


@jit(inline="always")  # one caller per unit: compiled inside it
def cost_cycles(ins, ops, costs, params):
    """Cycles of the instruction's track clock (ns for DMA queues)."""
    return cycles_as(ins, ops, costs[ins[L.I_COST]])


@jit
def cycles_as(ins, ops, row):
    """Cycles of the instruction timed by the cost class ``row`` (its own, or the class of
    the engine the compiler may move it to)."""
    formula = int(row[C_FORMULA])
    if formula == F_FREE:
        return 0.0
    # the largest tile operand sets N; inputs are the read-only tiles
    n = 0
    inputs_in_psum = 0
    inputs = 0
    all_bf16 = True
    enum_value = -1
    moving = -1
    for k in range(ins[L.I_NARGS]):
        tag = ins[L.I_ARGS + 2 * k]
        value = ins[L.I_ARGS + 2 * k + 1]
        if tag == L.TAG_INT and enum_value < 0:
            enum_value = value
        if tag != L.TAG_OPERAND:
            continue
        op = ops[value]
        n = max(n, op[L.OP_SIZE])
        if op[L.OP_DTYPE] != _BFLOAT16:
            all_bf16 = False
        access = (ins[L.I_ACCESS] >> (2 * k)) & 3
        if access == L.ACCESS_READ:
            inputs += 1
            if op[L.OP_SPACE] == L.SPACE_PSUM:
                inputs_in_psum += 1
            if inputs == 2:
                moving = value
    if formula == F_MATMUL:
        # args: dst, stationary, moving: the moving operand's free size streams through the array
        mv = ops[moving]
        cycles = max(row[C_MIN_II], float(mv[L.OP_SIZE]))
        if mv[L.OP_DTYPE] == _FLOAT32:
            half = ins[L.I_FLAGS] & L.MATMUL_FP32_HALF
            cycles *= row[C_FP32_FACTOR] * (0.5 if half else 1.0)
        if ins[L.I_FLAGS] & L.MATMUL_DOUBLE_ROW:
            cycles *= 0.5
        return cycles + row[C_FIXED]
    if formula == F_TRANSPOSE:
        data = ops[ins[L.I_ARGS + 3]]  # argument 1: the input
        return max(float(data[L.OP_PCOUNT]), min(row[C_MIN_II], float(data[L.OP_SIZE])))
    per_element = row[C_PER_ELEMENT]
    if formula == F_TWO_INPUT:
        mixed = inputs == 2 and inputs_in_psum == 1
        fast_bf16 = all_bf16 and (enum_value == 1 or enum_value == 2 or enum_value == 3)
        if mixed or fast_bf16:
            per_element = row[C_FAST_PER_ELEMENT]
    cycles = max(row[C_MIN_II], per_element * n) + row[C_FIXED]
    return cycles + row[C_EXTRA_OUTPUT] * ins[L.I_EXTRA_OUTPUTS]


@jit
def operand_ready(op, regs, access, breaks, write_end, read_end):
    """Earliest time the operand's bytes may be touched: after their last write (RAW, WAW) and,
    when writing, after their last read (WAR). Also says whether it reads a segment nothing
    ever wrote (write time NEVER_WRITTEN)."""
    space = op[L.OP_SPACE]
    if space > L.SPACE_HBM or op[L.OP_PCOUNT] <= 0:
        return 0.0, False   # an immediate scalar: no memory (and no table of that index)
    writes = write_end[space]
    reads = read_end[space]
    cuts = breaks[space]
    start = dynamic_offset(op, regs)
    ready = 0.0
    unwritten = False
    writing = access & L.ACCESS_WRITE
    if op[L.OP_PCOLSTEP] == 0:
        # on chip: every partition touches the same segments of consecutive rows; tables are
        # [segment, row], so the inner loop runs along a contiguous table row
        r0, step = op[L.OP_PSTART], op[L.OP_PROWSTEP]
        s0, s1 = segments(cuts, start, op[L.OP_EXTENT])
        for b in range(s0, s1):
            u = np.uintp(b)   # unsigned: no negative-index wrap per access (in_bounds checked)
            for p in range(op[L.OP_PCOUNT]):
                r = np.uintp(r0 + p * step)
                w = writes[u, r]
                ready = max(ready, w)
                if writing:
                    ready = max(ready, reads[u, r])
                elif w < 0.0:
                    unwritten = True
        return ready, unwritten
    # rows that lie back to back (or overlap) are one range: their segments are its segments
    rows, extent = _hbm_rows(op)
    hint = 0
    for p in range(rows):
        r = np.uintp(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
        s0, s1 = _row_segments(cuts, start + p * op[L.OP_PCOLSTEP], op, extent, hint)
        hint = s0
        for b in range(s0, s1):
            u = np.uintp(b)
            w = writes[u, r]
            ready = max(ready, w)
            if writing:
                ready = max(ready, reads[u, r])
            elif w < 0.0:
                unwritten = True
    return ready, unwritten


@jit
def operand_done(op, regs, access, end, written, breaks, write_end, read_end):
    """Record the operand's access: its reads ended at ``end`` (the last read of each segment
    is the latest), its writes are readable from ``written``."""
    space = op[L.OP_SPACE]
    if space > L.SPACE_HBM or op[L.OP_PCOUNT] <= 0:
        return
    writes = write_end[space]
    reads = read_end[space]
    cuts = breaks[space]
    start = dynamic_offset(op, regs)
    writing = access & L.ACCESS_WRITE
    reading = access & L.ACCESS_READ
    if op[L.OP_PCOLSTEP] == 0:
        r0, step = op[L.OP_PSTART], op[L.OP_PROWSTEP]
        s0, s1 = segments(cuts, start, op[L.OP_EXTENT])
        for b in range(s0, s1):
            u = np.uintp(b)
            for p in range(op[L.OP_PCOUNT]):
                r = np.uintp(r0 + p * step)
                if writing:
                    writes[u, r] = written
                if reading:
                    reads[u, r] = max(reads[u, r], end)
        return
    rows, extent = _hbm_rows(op)
    hint = 0
    for p in range(rows):
        r = np.uintp(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
        s0, s1 = _row_segments(cuts, start + p * op[L.OP_PCOLSTEP], op, extent, hint)
        hint = s0
        for b in range(s0, s1):
            u = np.uintp(b)
            if writing:
                writes[u, r] = written
            if reading:
                reads[u, r] = max(reads[u, r], end)


@jit(inline="always")
def _hbm_rows(op):
    """(rows, bytes per row) to look an HBM operand's segments up by: one row spanning them all
    when each row starts within or right after the previous one (pitch <= the bytes a row
    spans). The segments of that range are exactly those some row touches, and visiting a
    segment twice changes nothing (a max, or the same value written), so one lookup serves
    every row: HBM tables are cut at every row, and looking each row's segments up cost
    ~9.5 ns a row, 2.4 us of a [128, N] DMA."""
    if op[L.OP_PROWSTEP] == 0 and 0 < op[L.OP_PCOLSTEP] <= op[L.OP_EXTENT]:
        return 1, (op[L.OP_PCOUNT] - 1) * op[L.OP_PCOLSTEP] + op[L.OP_EXTENT]
    return op[L.OP_PCOUNT], op[L.OP_EXTENT]


@jit(inline="always")
def _row_segments(cuts, c, op, extent, hint):
    """The segments of the ``extent`` bytes of ``op`` starting at byte c, the previous row's
    first segment being ``hint``: walked on from it when rows ascend, else searched."""
    if op[L.OP_PCOLSTEP] > 0:
        return segments_from(cuts, c, extent, hint)
    return segments(cuts, c, extent)


@jit(inline="always")
def record_accesses(ins, ops, regs, end, written, breaks, write_end, read_end):
    """Record every memory access of the instruction: its reads ended at ``end``, its writes
    are readable from ``written`` (one pass for both). The loop's schedule and the cc.*
    instructions the multi-chip driver times (``Core.complete``) record alike."""
    for k in range(ins[L.I_NARGS]):
        if ins[L.I_ARGS + 2 * k] == L.TAG_OPERAND:
            access = (ins[L.I_ACCESS] >> (2 * k)) & 3
            operand_done(ops[ins[L.I_ARGS + 2 * k + 1]], regs, access, end, written, breaks,
                         write_end, read_end)


@jit(inline="always")
def local_collective(ins, ops, regs, pc, params, track_free, busy, breaks, write_end, read_end,
                     dma_stats):
    """Time a cc.* collective the loop carried out on a world of one rank (semantics/cc.py)
    as the driver times it (Core.ready_ns, then Core.complete): it starts when its queue is
    free and its tiles are ready, copies src's bytes at the core's DMA bandwidth (the
    network's local rate), and counts as a transfer of its queue. Returns (start, end,
    bytes)."""
    track = ins[L.I_TRACK]
    start = track_free[track]
    src = -1
    for k in range(ins[L.I_NARGS]):
        if ins[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        access = (ins[L.I_ACCESS] >> (2 * k)) & 3
        op = ops[ins[L.I_ARGS + 2 * k + 1]]
        if access == L.ACCESS_READ:
            src = k
        t, unwritten = operand_ready(op, regs, access, breaks, write_end, read_end)
        start = max(start, t)
        if unwritten:
            if regs[L.REG_UNWRITTEN_COUNT] == 0:
                regs[L.REG_UNWRITTEN_PC] = pc
                regs[L.REG_UNWRITTEN_ARG] = k
            regs[L.REG_UNWRITTEN_COUNT] += 1
    op = ops[ins[L.I_ARGS + 2 * src + 1]]
    nbytes = float(op[L.OP_PCOUNT] * op[L.OP_SIZE] * op[L.OP_ITEMSIZE])
    end = start + nbytes / params[dma.T_DMA_BYTES_PER_NS]
    # a transfer's results are there at its end: no pipeline latency
    record_accesses(ins, ops, regs, end, end, breaks, write_end, read_end)
    if track >= L.DMA_TRACK0:
        q = track - L.DMA_TRACK0
        dma_stats[q, dma.S_TRANSFERS] += 1
        dma_stats[q, dma.S_BYTES] += nbytes
        dma_stats[q, dma.S_WIRE] += nbytes
    track_free[track] = max(track_free[track], end)
    busy[track] += end - start
    return start, end, nbytes


@jit(inline="always")  # one caller per unit: compiled inside it
def schedule(ins, ops, regs, costs, params, clocks, track_free, busy, breaks, write_end,
             read_end, dma_state):
    """Place one instruction on its track; returns (start_ns, end_ns, cycles, k, bytes, wire)
    where k is the first argument that reads never-written memory, or -1, and bytes / wire are
    a DMA's bytes uncompressed and as charged (0 for other instructions).

    ``dma_state`` = (rings, engine_busy): ``rings`` the busy intervals of the DMA engines every
    queue shares, then of each track (``interval_rings``); ``breaks`` the cuts of each memory
    space (neuronemu/timing/regions.py).

    Under ``.schedule compiler`` (docs/timing.md, "The compiler's schedule") a compute
    instruction is not held behind the instructions issued before it on its engine: it takes
    the engine's first idle gap at or after its operands are ready, as a list scheduler would
    have moved it, unless its flags keep it in program order (ORDERED: a no_reorder block; a
    tiled matmul, whose PE blocks overlap others'). DMA queues stay FIFO."""
    track = ins[L.I_TRACK]
    if ins[L.I_FLAGS] & L.COMPILER_ENGINE:
        track = L.VECTOR_TRACK   # its own engine, whichever it ran on last time
    row = costs[ins[L.I_COST]]
    is_dma = int(row[C_FORMULA]) == F_DMA
    cycles = 0.0 if is_dma else cost_cycles(ins, ops, costs, params)
    if cycles == 0.0 and not is_dma:
        return track_free[track], track_free[track], 0.0, -1, 0.0, 0.0
    rings, engine_busy = dma_state
    compiler = params[T_COMPILER_SCHEDULE] > 0.0 and not is_dma
    ring = rings[int(params[dma.T_DMA_ENGINES]) + track]
    tensor = track == L.TENSOR_TRACK
    blocks = pe_blocks(ins) if tensor else 0
    moved = compiler and blocks == 0 and not ins[L.I_FLAGS] & L.ORDERED
    if moved:
        ready = 0.0
    elif tensor:
        # issue in order, each instruction once the PE blocks it occupies are free
        ready = pe_ready(blocks, track_free, L.PE_FREE0, track_free[L.TENSOR_ISSUE])
    else:
        ready = track_free[track]
    if compiler and not moved:
        ready = max(ready, last_end(ring))   # kept in order: after all the engine's work
    queue_free = ready
    unwritten_arg = -1
    for k in range(ins[L.I_NARGS]):
        if ins[L.I_ARGS + 2 * k] == L.TAG_OPERAND:
            access = (ins[L.I_ACCESS] >> (2 * k)) & 3
            op = ops[ins[L.I_ARGS + 2 * k + 1]]
            t, unwritten = operand_ready(op, regs, access, breaks, write_end, read_end)
            if not tensor and access & L.ACCESS_READ and op[L.OP_SPACE] == L.SPACE_PSUM:
                t = psum_readable(t, params[T_PSUM_DRAIN_NS])
            ready = max(ready, t)
            if unwritten and unwritten_arg < 0:
                unwritten_arg = k
    nbytes = 0.0
    wire = 0.0
    if is_dma:
        end, cycles, nbytes, wire = dma.transfer(
            ins, ops, regs, params, row[C_EFFICIENCY], row[C_SBUF_EFFICIENCY],
            row[C_INDEXED] > 0.0, ready, ready > queue_free, rings, engine_busy)
        duration = end - ready
    elif moved:
        duration = cycles / clocks[track]
        start, before, slot = find_gap(ring, ready, duration)
        if tensor and start > before:
            # the PE array idled before this matmul: its LoadStationary is exposed, so it
            # needs a longer gap
            cycles += stationary_load_cycles(ins, ops, row)
            duration = cycles / clocks[track]
            start, before, slot = find_gap(ring, ready, duration)
        if ins[L.I_FLAGS] & L.COMPILER_ENGINE:
            # a copy whose engine the compiler chooses: ScalarE when it would finish first
            alt_row = costs[int(params[T_SCALAR_COPY_COST])]
            alt_cycles = cycles_as(ins, ops, alt_row)
            alt_duration = alt_cycles / clocks[L.SCALAR_TRACK]
            alt_ring = rings[int(params[dma.T_DMA_ENGINES]) + L.SCALAR_TRACK]
            a_start, _, a_slot = find_gap(alt_ring, ready, alt_duration)
            if a_start + alt_duration < start + duration:
                track, ring, row = L.SCALAR_TRACK, alt_ring, alt_row
                start, slot, duration, cycles = a_start, a_slot, alt_duration, alt_cycles
        book(ring, start, duration, slot)
        ready = start
        end = start + duration
    else:
        if tensor and (ready > queue_free or ready == 0.0):
            # the PE blocks idled before this instruction: its LoadStationary had nothing to
            # hide behind (back to back, the array loads it during the previous matmul)
            cycles += stationary_load_cycles(ins, ops, row)
        duration = cycles / clocks[track]
        end = ready + duration
        if compiler:
            fence(ring, end)   # nothing later moves before an instruction kept in order
    # results are readable after the engine's pipeline latency; TensorE's (PSUM) is charged to
    # the reader above, so that accumulating matmuls stream back to back
    result = end if tensor else end + result_latency(row, clocks[track])
    record_accesses(ins, ops, regs, end, result, breaks, write_end, read_end)
    if moved:
        if tensor:
            pe_raise(track_free, L.PE_FREE0, end)
            track_free[L.TENSOR_ISSUE] = max(track_free[L.TENSOR_ISSUE], ready)
        busy[track] += duration   # a gap: it overlaps no other work of the engine
        track_free[track] = max(track_free[track], end)
    elif tensor:
        pe_commit(blocks, track_free, L.PE_FREE0, end)
        track_free[L.TENSOR_ISSUE] = ready
        busy_union(busy, track, ready, end, track_free[track])
        track_free[track] = max(track_free[track], end)
    else:
        track_free[track] = max(track_free[track], end)
        busy[track] += duration
    if ins[L.I_FLAGS] & L.COMPILER_ENGINE:
        ins[L.I_TRACK] = track   # (the event and the report name the engine it ran on)
    return ready, end, cycles, unwritten_arg, nbytes, wire


NEVER_WRITTEN = -1.0


def region_tables(memories, breaks) -> tuple[tuple, tuple]:
    """Last-write and last-read times (ns) per segment of every memory row (``breaks``: the cuts
    of each space, neuronemu/timing/regions.py), laid out [segment, row] (a tile's partitions are
    consecutive rows of one segment); segments start as NEVER_WRITTEN (the caller marks HBM
    tensors that hold data before the run)."""
    def table(mem, cuts, fill):
        shape = (len(cuts) - 1, mem.shape[0])
        # zeros come from calloc: pages the run never touches are never mapped
        return np.zeros(shape) if fill == 0.0 else np.full(shape, fill, dtype=np.float64)

    return (tuple(table(m, c, NEVER_WRITTEN) for m, c in zip(memories, breaks)),
            tuple(table(m, c, 0.0) for m, c in zip(memories, breaks)))


def mark_written(write_table: np.ndarray, cuts: np.ndarray, offset: int, nbytes: int) -> None:
    """Bytes [offset, offset + nbytes) of HBM (cuts at both ends) hold data when the run
    starts."""
    if nbytes:
        first, end = np.searchsorted(cuts, [offset, offset + nbytes])
        write_table[first:end, 0] = 0.0
