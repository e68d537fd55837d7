"""GpSimd engine: index generation, affine masks, cross-partition reductions, segment bounds,
non-zero compaction, per-partition gathers, per-core (16-partition) local gathers and top-k."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa import codes as C
from neuronemu.isa import dtypes as D
from neuronemu.isa.args.gpsimd import (
    AFFINE_SELECT_CHANNEL_MULTIPLIER,
    AFFINE_SELECT_CMP_OP,
    AFFINE_SELECT_DATA,
    AFFINE_SELECT_DST,
    AFFINE_SELECT_OFFSET,
    AFFINE_SELECT_ON_FALSE_VALUE,
    AFFINE_SELECT_STEP,
    IOTA_BASE,
    IOTA_CHANNEL_MULTIPLIER,
    IOTA_DST,
    IOTA_STEP,
    LOCAL_GATHER_DATA,
    LOCAL_GATHER_DST,
    LOCAL_GATHER_INDICES,
    LOCAL_GATHER_NUM_ELEM_PER_IDX,
    LOCAL_GATHER_NUM_VALID_INDICES,
    N_GATHER_DATA,
    N_GATHER_DST,
    N_GATHER_INDICES,
    NONZERO_WITH_COUNT_DST,
    NONZERO_WITH_COUNT_INDEX_OFFSET,
    NONZERO_WITH_COUNT_PADDING_VAL,
    NONZERO_WITH_COUNT_SRC,
    PARTITION_REDUCE_DATA,
    PARTITION_REDUCE_DST,
    PARTITION_REDUCE_OP,
    SEQUENCE_BOUNDS_DST,
    SEQUENCE_BOUNDS_SEGMENT_IDS,
    TOPK_IDX_DST,
    TOPK_N,
    TOPK_SRC,
    TOPK_VAL_DST,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import (
    arg_value,
    load_bits,
    load_f32,
    one_row,
    store_bits,
    store_f32,
    word_window,
)
from neuronemu.numerics.cast import encode_integer
from neuronemu.semantics.alu import fold_partitions, to_int


@jit
def _affine(partitions, n, base, channel_multiplier, step):
    # int32 arithmetic as on GpSimd (wraps on overflow like the hardware's 32-bit lanes)
    out = np.empty((partitions, n), dtype=np.int32)
    for p in range(partitions):
        for i in range(n):
            out[p, i] = np.int32(base + p * channel_multiplier + i * step)
    return out


@jit
def iota(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, IOTA_DST)]
    values = _affine(dst[L.OP_PCOUNT], dst[L.OP_SIZE], arg_value(ins, IOTA_BASE),
                     arg_value(ins, IOTA_CHANNEL_MULTIPLIER), arg_value(ins, IOTA_STEP))
    column = word_window(dst, regs, fmt)
    if column >= 0:   # an int32 / uint32 tile: the fp32 values stored as integers in one loop
        _store_words(dst, column, viewed(mems[dst[L.OP_SPACE]], np.uint32), values,
                     fmt[dst[L.OP_DTYPE], D.F_KIND])
        return L.STATUS_OK
    store_f32(dst, mems, regs, fmt, values.astype(np.float32))
    return L.STATUS_OK


@jit
def _store_words(dst, column, words, values, kind):
    """store_f32 of values rounded to fp32, into a 4-byte integer tile, element by element with
    numerics.cast's integer encoding but without store_f32's per-element dtype dispatch and
    byte writes (which made iota into int32 10x numpy's)."""
    for p in range(dst[L.OP_PCOUNT]):
        r = np.uintp(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP])
        for i in range(dst[L.OP_SIZE]):
            words[r, np.uintp(column + i)] = np.uint32(
                encode_integer(np.float64(np.float32(values[p, i])), kind, 4))


@jit
def affine_select(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, AFFINE_SELECT_DST)]
    data = load_f32(ops[arg_value(ins, AFFINE_SELECT_DATA)], mems, regs, fmt, table)
    cmp = arg_value(ins, AFFINE_SELECT_CMP_OP)
    on_false = np.float32(imms[arg_value(ins, AFFINE_SELECT_ON_FALSE_VALUE)])
    value = _affine(data.shape[0], data.shape[1], arg_value(ins, AFFINE_SELECT_OFFSET),
                    arg_value(ins, AFFINE_SELECT_CHANNEL_MULTIPLIER),
                    arg_value(ins, AFFINE_SELECT_STEP))
    # element by element: numpy's comparisons and np.where compiled numba's broadcasting
    # machinery into the kernel (~1 s of its first run)
    out = np.empty(data.shape, dtype=np.float32)
    for p in range(data.shape[0]):
        for i in range(data.shape[1]):
            out[p, i] = data[p, i] if _holds(cmp, value[p, i]) else on_false
    store_f32(dst, mems, regs, fmt, out)
    return L.STATUS_OK


@jit(inline="always")
def _holds(cmp, v):
    """Whether ``v cmp 0`` holds, for affine_select's comparison ``cmp``."""
    if cmp == C.CMP_EQUAL:
        return v == 0
    if cmp == C.CMP_NOT_EQUAL:
        return v != 0
    if cmp == C.CMP_GREATER:
        return v > 0
    if cmp == C.CMP_GREATER_EQUAL:
        return v >= 0
    if cmp == C.CMP_LESS:
        return v < 0
    return v <= 0


@jit
def partition_reduce(ins, ops, imms, mems, regs, fmt, table):
    """dst[0, i] = op over p of data[p, i], combining partitions 0, 1, 2, ... in order."""
    data = load_f32(ops[arg_value(ins, PARTITION_REDUCE_DATA)], mems, regs, fmt, table)
    store_f32(ops[arg_value(ins, PARTITION_REDUCE_DST)], mems, regs, fmt,
              fold_partitions(arg_value(ins, PARTITION_REDUCE_OP), data))
    return L.STATUS_OK


@jit
def sequence_bounds(ins, ops, imms, mems, regs, fmt, table):
    """Start and one-past-end of each element's run of equal non-zero ids; padding (id 0) gets
    (N, -1). Written [start..., end...] in the free order of dst ([1, 2, N])."""
    ids = load_f32(ops[arg_value(ins, SEQUENCE_BOUNDS_SEGMENT_IDS)], mems, regs, fmt, table)[0]
    n = ids.size
    out = np.empty((1, 2 * n), dtype=np.float32)
    for i in range(n):
        if ids[i] == 0:
            out[0, i] = n
        elif i > 0 and ids[i] == ids[i - 1]:
            out[0, i] = out[0, i - 1]
        else:
            out[0, i] = i
    for i in range(n - 1, -1, -1):
        if ids[i] == 0:
            out[0, n + i] = -1
        elif i < n - 1 and ids[i] == ids[i + 1]:
            out[0, n + i] = out[0, n + i + 1]
        else:
            out[0, n + i] = i + 1
    store_f32(ops[arg_value(ins, SEQUENCE_BOUNDS_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def nonzero_with_count(ins, ops, imms, mems, regs, fmt, table):
    """Each GpSimd core handles partition 0 of its 16: the tile's partitions 0, 16, ..., 112."""
    dst = ops[arg_value(ins, NONZERO_WITH_COUNT_DST)]
    src = ops[arg_value(ins, NONZERO_WITH_COUNT_SRC)]
    offset = arg_value(ins, NONZERO_WITH_COUNT_INDEX_OFFSET)
    padding = arg_value(ins, NONZERO_WITH_COUNT_PADDING_VAL)
    values = load_f32(src, mems, regs, fmt, table)
    n = values.shape[1]
    for p in range(0, values.shape[0], 16):
        row = np.full((1, n + 1), padding, dtype=np.int64)
        count = 0
        for i in range(n):
            if values[p, i] != 0.0:  # -0.0 counts as zero, NaN as non-zero
                row[0, count] = i + offset
                count += 1
        row[0, n] = count
        store_bits(one_row(dst, p), mems, regs, row & 0xFFFFFFFF)
    return L.STATUS_OK


@jit(inline="always")
def _bad_index(regs, p, value, limit, j):
    """Record index element [p, j] = value outside 0..limit-1 (api._fault words it)."""
    regs[L.REG_FAULT_INFO] = p
    regs[L.REG_FAULT_INFO + 1] = value
    regs[L.REG_FAULT_INFO + 2] = limit
    regs[L.REG_FAULT_INFO + 3] = j
    return L.STATUS_BAD_INDEX


@jit
def n_gather(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, N_GATHER_DST)]
    data = load_bits(ops[arg_value(ins, N_GATHER_DATA)], mems, regs)
    index = ops[arg_value(ins, N_GATHER_INDICES)]
    indices = to_int(load_bits(index, mems, regs), index[L.OP_DTYPE], fmt)
    n = data.shape[1]
    out = np.empty(indices.shape, dtype=np.int64)
    for p in range(indices.shape[0]):
        for j in range(indices.shape[1]):
            v = indices[p, j]
            if v < 0 or v >= n:
                return _bad_index(regs, p, v, n, j)
            out[p, j] = data[p, v]
    store_bits(dst, mems, regs, out)
    return L.STATUS_OK


@jit
def local_gather(ins, ops, imms, mems, regs, fmt, table):
    """nki.isa.local_gather. Core g owns tile partitions 16g..16g+15 (the assembler keeps the
    tiles on whole, aligned groups). Its index list is its slice of ``indices`` read partition
    first: indices_1d[k] = indices[16g + k % 16, k // 16], of which the first ``valid`` are used
    (0: all). Every partition q of the core gathers from its own free elements with that list:
    dst[q, k * width + e] = data[q, indices_1d[k] + e]. All indices are checked before anything
    is written; a fault names the index element (partition, free position) that overruns."""
    dst = ops[arg_value(ins, LOCAL_GATHER_DST)]
    data = load_bits(ops[arg_value(ins, LOCAL_GATHER_DATA)], mems, regs)
    index = ops[arg_value(ins, LOCAL_GATHER_INDICES)]
    indices = to_int(load_bits(index, mems, regs), index[L.OP_DTYPE], fmt)
    width = arg_value(ins, LOCAL_GATHER_NUM_ELEM_PER_IDX)
    valid = arg_value(ins, LOCAL_GATHER_NUM_VALID_INDICES)
    if valid == 0:
        valid = 16 * indices.shape[1]
    n = data.shape[1]
    limit = n - width + 1  # valid start offsets are 0..limit-1
    out = np.empty((data.shape[0], valid * width), dtype=np.int64)
    for g in range(0, indices.shape[0], 16):
        for k in range(valid):
            p = g + k % 16
            j = k // 16
            v = indices[p, j]
            if v < 0 or v >= limit:
                return _bad_index(regs, p, v, limit, j)
            for q in range(g, g + 16):
                for e in range(width):
                    out[q, k * width + e] = data[q, v + e]
    store_bits(dst, mems, regs, out)
    return L.STATUS_OK


_BF16_NAN_RANK = 0x8000  # above +inf (0x7F80): every NaN ranks above every number


@jit
def _bf16_rank(bits):
    """An integer that orders bf16 bit patterns by value: -0.0 and +0.0 are equal, NaN (either
    sign, any payload) is above +inf."""
    magnitude = bits & 0x7FFF
    if magnitude > 0x7F80:
        return _BF16_NAN_RANK
    if bits & 0x8000:
        return -magnitude
    return magnitude


@jit
def topk(ins, ops, imms, mems, regs, fmt, table):
    """nki.isa.topk. Core g owns tile partitions 16g..16g+15 (the assembler keeps the tiles on
    whole, aligned groups); its elements are the first n of its snake, element i at
    src[16g + i % 16, i // 16]. Elements are ranked by value, largest first, equal values by
    lower index (an int64 key (0x8000 - value rank) << 16 | i sorts into that order, n < 65536).
    Result j = the element of rank K - 1 - j (ascending) goes to [16g + j % 16, j // 16] of
    val_dst (its raw bf16 bits) and idx_dst (i); the rest of the last written column gets all
    ones; the free elements from ceil(K / 16) on keep their contents."""
    val_op = ops[arg_value(ins, TOPK_VAL_DST)]
    idx_op = ops[arg_value(ins, TOPK_IDX_DST)]
    src = load_bits(ops[arg_value(ins, TOPK_SRC)], mems, regs)
    n = arg_value(ins, TOPK_N)
    k = val_op[L.OP_SIZE]
    written = 16 * ((k + 15) // 16)
    vals = load_bits(val_op, mems, regs)
    idxs = load_bits(idx_op, mems, regs)
    keys = np.empty(n, dtype=np.int64)
    for g in range(0, src.shape[0], 16):
        for i in range(n):
            rank = _bf16_rank(src[g + i % 16, i // 16])
            keys[i] = ((_BF16_NAN_RANK - rank) << 16) | i
        ordered = np.sort(keys)
        for j in range(written):
            p = g + j % 16
            c = j // 16
            if j < k:
                i = ordered[k - 1 - j] & 0xFFFF
                vals[p, c] = src[g + i % 16, i // 16]
                idxs[p, c] = i
            else:
                vals[p, c] = 0xFFFF
                idxs[p, c] = 0xFFFFFFFF
    store_bits(val_op, mems, regs, vals)
    store_bits(idx_op, mems, regs, idxs)
    return L.STATUS_OK
