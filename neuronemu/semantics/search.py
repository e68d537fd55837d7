"""Vector engine search and select instructions: the 8 largest values, where given values
occur, replacing them, and predicated selection."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa.args.search import (
    FIND_INDEX8_DATA,
    FIND_INDEX8_DST,
    FIND_INDEX8_VALS,
    MATCH_REPLACE8_DATA,
    MATCH_REPLACE8_DST,
    MATCH_REPLACE8_DST_IDX,
    MATCH_REPLACE8_IMM,
    MATCH_REPLACE8_VALS,
    MAX8_DATA,
    MAX8_DST,
    SELECT_REDUCE_DST,
    SELECT_REDUCE_ON_FALSE,
    SELECT_REDUCE_ON_TRUE,
    SELECT_REDUCE_PREDICATE,
    SELECT_REDUCE_REDUCE_RES,
    SELECT_REDUCE_REVERSE_PRED,
    STREAM_SHUFFLE_DST,
    STREAM_SHUFFLE_MASK,
    STREAM_SHUFFLE_SRC,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import (
    aligned_dense,
    arg_tag,
    arg_value,
    dynamic_offset,
    load_bits,
    load_f32,
    scalar_column,
    store_bits,
    store_f32,
    word_rows,
)


@jit
def max8(ins, ops, imms, mems, regs, fmt, table):
    """Descending top 8 per partition; NaN ranks above +inf, +0.0 above -0.0. One pass with
    the 8 best so far in order (sorting each partition to take 8 of it cost 40x numpy's
    partition at 512 elements)."""
    data = load_f32(ops[arg_value(ins, MAX8_DATA)], mems, regs, fmt, table)
    out = np.empty((data.shape[0], 8), dtype=np.float32)
    for p in range(data.shape[0]):
        _top8(data[p], out[p])
    store_f32(ops[arg_value(ins, MAX8_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def _top8(x, top):
    """top = the 8 values of x (at least 8) that rank highest (``_above``), in descending
    order."""
    for k in range(8):   # the first 8, each inserted in order
        j = k
        while j > 0 and _above(x[k], top[j - 1]):
            top[j] = top[j - 1]
            j -= 1
        top[j] = x[k]
    for i in range(8, x.size):
        v = x[i]
        if not _above(v, top[7]):
            continue
        j = 7
        while j > 0 and _above(v, top[j - 1]):
            top[j] = top[j - 1]
            j -= 1
        top[j] = v


@jit(inline="always")
def _above(v, w):
    """Whether v ranks above w: greater, NaN above everything else, +0.0 above -0.0."""
    if np.isnan(w):
        return False
    if np.isnan(v):
        return True
    if v == w:
        return v == 0.0 and not np.signbit(v) and np.signbit(w)
    return v > w


@jit
def find_index8(ins, ops, imms, mems, regs, fmt, table):
    """First index of each of the 8 values, taken vals[0] to vals[7], each the first
    occurrence not already taken: a value given n times gets its first n occurrences in order
    (max8's ties, nki-library's topk_reduce asking for K occurrences of one token; the
    reverse of match_replace8's order). A missing value stores the largest integer of dst's
    dtype (all ones), since the fp32 value 2**32 saturates when stored as uint16/uint32."""
    data = load_f32(ops[arg_value(ins, FIND_INDEX8_DATA)], mems, regs, fmt, table)
    vals = load_f32(ops[arg_value(ins, FIND_INDEX8_VALS)], mems, regs, fmt, table)
    out = np.empty((data.shape[0], 8), dtype=np.float32)
    taken = np.empty(8, dtype=np.int64)
    for p in range(data.shape[0]):
        for k in range(8):
            found = np.float32(4294967296.0)
            taken[k] = -1
            for i in range(data.shape[1]):
                if data[p, i] == vals[p, k]:
                    again = False
                    for j in range(k):
                        if taken[j] == i:
                            again = True
                            break
                    if not again:
                        found = np.float32(i)
                        taken[k] = i
                        break
            out[p, k] = found
    store_f32(ops[arg_value(ins, FIND_INDEX8_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def select_reduce(ins, ops, imms, mems, regs, fmt, table):
    """where(predicate != 0, on_true, on_false) in fp32 (predicate == 0 with reverse_pred)."""
    predicate = load_bits(ops[arg_value(ins, SELECT_REDUCE_PREDICATE)], mems, regs)
    on_true = load_f32(ops[arg_value(ins, SELECT_REDUCE_ON_TRUE)], mems, regs, fmt, table)
    on_false = scalar_column(ins, SELECT_REDUCE_ON_FALSE, ops, imms, mems, regs, fmt, table,
                             on_true.shape[0])
    reverse = arg_value(ins, SELECT_REDUCE_REVERSE_PRED) != 0
    out = np.empty(on_true.shape, dtype=np.float32)
    best = np.empty((on_true.shape[0], 1), dtype=np.float32)
    for p in range(on_true.shape[0]):
        for i in range(on_true.shape[1]):
            if (predicate[p, i] != 0) != reverse:
                out[p, i] = on_true[p, i]
            else:
                out[p, i] = on_false[p]
        best[p, 0] = np.max(out[p])
    store_f32(ops[arg_value(ins, SELECT_REDUCE_DST)], mems, regs, fmt, out)
    if arg_tag(ins, SELECT_REDUCE_REDUCE_RES) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, SELECT_REDUCE_REDUCE_RES)], mems, regs, fmt, best)
    return L.STATUS_OK


@jit
def match_replace8(ins, ops, imms, mems, regs, fmt, table):
    """Values are taken from vals[7] down to vals[0], each replacing the first element still
    equal to it, so a value given twice replaces two occurrences."""
    data = load_f32(ops[arg_value(ins, MATCH_REPLACE8_DATA)], mems, regs, fmt, table)
    vals = load_f32(ops[arg_value(ins, MATCH_REPLACE8_VALS)], mems, regs, fmt, table)
    imm = np.float32(imms[arg_value(ins, MATCH_REPLACE8_IMM)])
    where = np.empty((data.shape[0], 8), dtype=np.float32)
    for p in range(data.shape[0]):
        for k in range(7, -1, -1):
            found = np.float32(4294967296.0)  # stores as all ones in uint16 / uint32
            for i in range(data.shape[1]):
                if data[p, i] == vals[p, k]:
                    data[p, i] = imm
                    found = np.float32(i)
                    break
            where[p, k] = found
    store_f32(ops[arg_value(ins, MATCH_REPLACE8_DST)], mems, regs, fmt, data)
    if arg_tag(ins, MATCH_REPLACE8_DST_IDX) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, MATCH_REPLACE8_DST_IDX)], mems, regs, fmt, where)
    return L.STATUS_OK


@jit
def stream_shuffle(ins, ops, imms, mems, regs, fmt, table):
    """dst partition p = src partition (p // 32) * 32 + mask[p % 32], 255 keeping dst's row;
    raw bits (the dtypes are equal). Dense on-chip tiles of 2- or 4-byte elements move whole
    rows through a word view; the rest element by element."""
    dst, src = ops[arg_value(ins, STREAM_SHUFFLE_DST)], ops[arg_value(ins, STREAM_SHUFFLE_SRC)]
    start = arg_value(ins, STREAM_SHUFFLE_MASK)
    s0, d0 = dynamic_offset(src, regs), dynamic_offset(dst, regs)
    dense = aligned_dense(src, s0) and aligned_dense(dst, d0)
    if dense and src[L.OP_ITEMSIZE] == 4:
        _shuffle_rows(dst, src, viewed(mems[dst[L.OP_SPACE]], np.uint32),
                      viewed(mems[src[L.OP_SPACE]], np.uint32), d0 // 4, s0 // 4, imms, start)
        return L.STATUS_OK
    if dense and src[L.OP_ITEMSIZE] == 2:
        _shuffle_rows(dst, src, viewed(mems[dst[L.OP_SPACE]], np.uint16),
                      viewed(mems[src[L.OP_SPACE]], np.uint16), d0 // 2, s0 // 2, imms, start)
        return L.STATUS_OK
    bits = load_bits(src, mems, regs)
    out = load_bits(dst, mems, regs)
    for p in range(out.shape[0]):   # dst may span fewer or more partitions than src
        source = np.int64(imms[start + p % 32])
        if source != 255:
            out[p] = bits[(p // 32) * 32 + source]
    store_bits(dst, mems, regs, out)
    return L.STATUS_OK


@jit
def _shuffle_rows(dst, src, dst_words, src_words, d0, s0, imms, start):
    """stream_shuffle's rows through word views: src read whole first (it may be dst)."""
    n = src[L.OP_SIZE]
    rows = word_rows(src, src_words, s0)
    for p in range(dst[L.OP_PCOUNT]):
        source = np.int64(imms[start + p % 32])
        if source != 255:
            r = np.uintp(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP])
            row = (p // 32) * 32 + source
            for i in range(n):
                dst_words[r, np.uintp(d0 + i)] = rows[row, i]
