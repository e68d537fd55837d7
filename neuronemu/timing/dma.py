"""Time of one DMA transfer on the core's DMA engines (docs/dma.md, "Timing").

A transfer waits for its queue (FIFO: the previous transfer on the queue has completed); when
it also had to wait for another track (the engine that writes its source, or reads what it
overwrites), it pays the cross-engine synchronisation latency (semaphore to start, descriptors),
then moves its rows. Row i (a partition of the
on-chip side) is served by the DMA engine owning that partition (128 / 16 = 8 partitions per
engine), so a transfer over all 128 partitions uses all 16 engines and one over 8 partitions
uses one. An engine moves a row in max(bytes + buffers * overhead, min_row_bytes) /
(bandwidth * efficiency): every contiguous run of bytes is a DMA buffer with a fixed overhead,
and a row takes at least the time of min_row_bytes (2 KiB) however few bytes it moves, which
gives the documented efficiency curve (rows below 2 KiB are overhead-bound). Engines are shared by all queues: a
transfer's rows start when their engine is free, in issue order.

Bytes are counted where the bandwidth is spent: the HBM side when the transfer touches HBM (the
side inline compression shrinks), otherwise the larger of bytes read and written.

A broadcast source (partition stride 0: one row read by every destination partition,
docs/dma.md) counts one row per destination partition, so a broadcast is charged the
destination's bytes, as a copy of the whole tile would be: the access pattern expands to one
descriptor per destination row and each descriptor reads its source row again (the engines do
not fetch the row once and fan it out), so the HBM read traffic is P rows, not one.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.timing.intervals import reserve

# target_params entries (neuronemu.timing.model.target_params)
T_DMA_BYTES_PER_NS = 0
T_DMA_FIXED_NS = 1
T_DMA_HWDGE_FIXED_NS = 2
T_DMA_ENGINES = 3
T_DMA_BUFFER_OVERHEAD = 4
T_PARTITIONS = 5
T_DMA_MIN_ROW_BYTES = 6
PARAMS_WIDTH = 7

# dma statistics columns, per queue
S_TRANSFERS = 0
S_BYTES = 1       # bytes as the tiles hold them (uncompressed)
S_WIRE = 2        # bytes charged (compressed where compressed)
STATS_WIDTH = 3


def params(target) -> np.ndarray:
    row = np.zeros(PARAMS_WIDTH, dtype=np.float64)
    row[T_DMA_BYTES_PER_NS] = target.dma_bytes_per_ns
    row[T_DMA_FIXED_NS] = target.dma_fixed_ns
    row[T_DMA_HWDGE_FIXED_NS] = target.dma_hwdge_fixed_ns
    row[T_DMA_ENGINES] = target.dma_engines
    row[T_DMA_BUFFER_OVERHEAD] = target.dma_buffer_overhead_bytes
    row[T_PARTITIONS] = target.partitions
    row[T_DMA_MIN_ROW_BYTES] = target.dma_min_row_bytes
    return row


@jit(inline="always")  # one caller per unit: compiled inside it
def contiguous_bytes(op):
    """Length of the contiguous runs one row of the operand is made of."""
    itemsize = op[L.OP_ITEMSIZE]
    if op[L.OP_BLOCK] > 0:
        return op[L.OP_SIZE] * itemsize  # a compressed row is one stream of block slots
    run = itemsize
    for k in range(L.MAX_FREE_DIMS - 1, -1, -1):
        count = op[L.OP_COUNT + k]
        if count == 1:
            continue
        if op[L.OP_STRIDE + k] != run:
            break
        run *= count
    return run


@jit
def transfer(ins, ops, regs, params, efficiency, sbuf_efficiency, indexed, ready, waited,
             engine_free, engine_busy):
    """Place the transfer whose queue and operands are ready at ``ready`` (ns); returns
    (end_ns, ns it takes alone on idle engines, bytes, wire bytes).

    ``waited``: the transfer waited for another track (its data, or a reader of what it
    overwrites), so it pays the cross-engine semaphore-to-start latency before its data phase;
    a transfer that waits only for its own queue does not (docs/dma.md, "Timing")."""
    nargs = ins[L.I_NARGS]
    # rows follow the on-chip side: the written on-chip operand, else the first on-chip read
    rows_op = -1
    rows_written = False
    for k in range(nargs):
        if ins[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        value = ins[L.I_ARGS + 2 * k + 1]
        if ops[value][L.OP_SPACE] == L.SPACE_HBM:
            continue
        if (ins[L.I_ACCESS] >> (2 * k)) & L.ACCESS_WRITE and not rows_written:
            rows_op = value
            rows_written = True
        elif rows_op < 0:
            rows_op = value
    first = ops[ins[L.I_ARGS + 1]]
    rows = ops[rows_op][L.OP_PCOUNT] if rows_op >= 0 else first[L.OP_PCOUNT]
    read = 0.0
    written = 0.0
    hbm_read = 0.0
    hbm_written = 0.0
    raw_read = 0.0
    raw_written = 0.0
    hbm_raw_read = 0.0
    hbm_raw_written = 0.0
    touches_hbm = False
    src_on_chip = False
    row_buffers = 1
    total_buffers = 1
    compressed_wire = -1.0
    for k in range(nargs):
        if ins[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        op = ops[ins[L.I_ARGS + 2 * k + 1]]
        access = (ins[L.I_ACCESS] >> (2 * k)) & 3
        in_hbm = op[L.OP_SPACE] == L.SPACE_HBM
        n_rows = op[L.OP_PCOUNT]
        if indexed and in_hbm:
            n_rows = rows  # an indexed table moves one row per index entry
        row_bytes = op[L.OP_SIZE] * op[L.OP_ITEMSIZE]
        raw = float(n_rows * row_bytes)
        wire = raw
        if op[L.OP_BLOCK] > 0 and regs[L.REG_DMA_WIRE] >= 0:
            wire = float(regs[L.REG_DMA_WIRE])
            compressed_wire = wire
        if access & L.ACCESS_READ:
            read += wire
            raw_read += raw
            if in_hbm:
                hbm_read += wire
                hbm_raw_read += raw
            else:
                src_on_chip = True
        if access & L.ACCESS_WRITE:
            written += wire
            raw_written += raw
            if in_hbm:
                hbm_written += wire
                hbm_raw_written += raw
        touches_hbm = touches_hbm or in_hbm
        run = contiguous_bytes(op)
        if run == row_bytes and op[L.OP_PCOLSTEP] == row_bytes and in_hbm:
            run = n_rows * row_bytes  # rows back to back in HBM: one contiguous run
        buffers = max(1, -(-(n_rows * row_bytes) // run)) if run > row_bytes else \
            n_rows * -(-row_bytes // run)
        row_buffers = max(row_buffers, -(-buffers // rows))
        total_buffers = max(total_buffers, buffers)
    if touches_hbm:
        wire_bytes = max(hbm_read, hbm_written)
        raw_bytes = max(hbm_raw_read, hbm_raw_written)
    else:
        wire_bytes = max(read, written)
        raw_bytes = max(raw_read, raw_written)
    if compressed_wire >= 0.0:
        wire_bytes = compressed_wire  # the compressed side sets the traffic (docs/dma.md)
    fixed = 0.0
    if waited:
        if ins[L.I_FLAGS] & L.DMA_HWDGE:
            fixed = params[T_DMA_HWDGE_FIXED_NS]
        else:
            fixed = params[T_DMA_FIXED_NS]
    engines = int(params[T_DMA_ENGINES])
    engine_bw = params[T_DMA_BYTES_PER_NS] / engines
    eff = sbuf_efficiency if src_on_chip and not hbm_read > 0.0 else efficiency
    overhead = params[T_DMA_BUFFER_OVERHEAD]
    # an engine spends at least dma_min_row_bytes' worth of time on a row's descriptors
    row_ns = max(wire_bytes / rows + row_buffers * overhead, params[T_DMA_MIN_ROW_BYTES]) \
        / (engine_bw * eff)
    partitions = int(params[T_PARTITIONS])
    first_row = ops[rows_op][L.OP_PSTART] if rows_op >= 0 else 0
    data_start = ready + fixed
    end = data_start
    alone = 0.0
    for e in range(engines):
        if rows_op >= 0:
            # the rows first_row .. first_row + rows - 1 whose partition p has
            # p * engines // partitions == e: p in [ceil(e P / E), ceil((e + 1) P / E))
            lo = max(first_row, -(-(e * partitions) // engines))
            hi = min(first_row + rows, -(-((e + 1) * partitions) // engines))
            if hi <= lo:
                continue
            duration = (hi - lo) * row_ns
        else:
            # HBM -> HBM: no partitions to follow; the bytes and their buffers are split evenly
            # over all engines (a long contiguous run is cut into one piece per engine)
            duration = (wire_bytes / engines + max(1, -(-total_buffers // engines)) * overhead) \
                / (engine_bw * eff)
        start = reserve(engine_free[e], data_start, duration)
        engine_busy[e] += duration
        end = max(end, start + duration)
        alone = max(alone, duration)
    return end, fixed + alone, raw_bytes, wire_bytes
