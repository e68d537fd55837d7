"""DMA queues: data movement between HBM and SBUF, with the DMA engines' own arithmetic.

A DMA that moves a different number of bytes over the wire than its tiles hold (compressed
tensors) leaves that number in ``regs[REG_DMA_WIRE]`` for the timing model.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa.args.dma import (
    ACCUMULATE_DST,
    ACCUMULATE_SRC,
    COMPRESS_DST,
    COMPRESS_SRC,
    COMPUTE_DST,
    COMPUTE_SRC0,
    COMPUTE_SRC1,
    COMPUTE_SRC7,
    COPY_DST,
    COPY_SRC,
    DECOMPRESS_DST,
    DECOMPRESS_SRC,
    GATHER_DST,
    GATHER_INDEX,
    GATHER_TABLE,
    SCATTER_INDEX,
    SCATTER_SRC,
    SCATTER_TABLE,
    TRANSPOSE_DST,
    TRANSPOSE_SRC,
)
from neuronemu.machine import layout as L
from neuronemu.machine.codec import decode_row, encode_row
from neuronemu.machine.memory import (
    aligned_dense,
    arg_tag,
    arg_value,
    copy_bits,
    copy_dense_bits,
    copy_tile,
    dynamic_offset,
    f32_window,
    load_bits,
    load_f32,
    one_row,
    round_to_bits,
    store_bits,
    store_f32,
    word_rows,
)
from neuronemu.numerics.cast import decode
from neuronemu.semantics.alu import to_int


@jit
def copy(ins, ops, imms, mems, regs, fmt, table):
    """dst = src; bit-exact for equal dtypes, else each element cast src -> fp32 -> dst (RNE)."""
    copy_tile(ops[arg_value(ins, COPY_DST)], ops[arg_value(ins, COPY_SRC)], mems, regs, fmt, table)
    return L.STATUS_OK


# A program whose copies all keep their dtype (most) need not compile the casts: 8 s of the
# 12 s unit; when they are all between dense tiles, nor the element-by-element copy of other
# layouts (load_bits / store_bits, 0.8 s) (neuronemu/exec/kernels.py, docs/engine.md "Narrow
# kernels")
NARROW = {"copy": ("copy_dense", "copy_same")}


def copy_dense_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per dma.copy row: ``copy_same_covers``, and both tiles dense."""
    dst = ops[instrs[:, L.I_ARGS + 2 * COPY_DST + 1], L.OP_DENSE]
    src = ops[instrs[:, L.I_ARGS + 2 * COPY_SRC + 1], L.OP_DENSE]
    return copy_same_covers(instrs, ops) & (dst == 1) & (src == 1)


@jit
def copy_dense(ins, ops, imms, mems, regs, fmt, table):
    """``copy`` of dense tiles of one dtype: their bytes."""
    dst, src = ops[arg_value(ins, COPY_DST)], ops[arg_value(ins, COPY_SRC)]
    if dst[L.OP_DENSE] != 1 or src[L.OP_DENSE] != 1 or dst[L.OP_DTYPE] != src[L.OP_DTYPE]:
        return L.STATUS_KERNEL_ERROR
    copy_dense_bits(dst, src, mems, regs)
    return L.STATUS_OK


def copy_same_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per dma.copy row of ``instrs``: its dtypes are the same (an operand's dtype is
    static)."""
    dst = ops[instrs[:, L.I_ARGS + 2 * COPY_DST + 1], L.OP_DTYPE]
    src = ops[instrs[:, L.I_ARGS + 2 * COPY_SRC + 1], L.OP_DTYPE]
    return dst == src


@jit
def copy_same(ins, ops, imms, mems, regs, fmt, table):
    """``copy`` of tiles of one dtype: its bits (``copy_tile``'s first case)."""
    copy_bits(ops[arg_value(ins, COPY_DST)], ops[arg_value(ins, COPY_SRC)], mems, regs)
    return L.STATUS_OK


@jit
def _bits_in(code, src, mems, regs, fmt, table):
    """The source tile's elements as raw bits of dtype ``code`` (cast via fp32, rounded as any
    store is: to nearest even, or stochastically when the run asks for it)."""
    if src[L.OP_DTYPE] == code:
        return load_bits(src, mems, regs)
    return round_to_bits(load_f32(src, mems, regs, fmt, table), code, fmt, regs)


@jit
def compress(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, COMPRESS_DST)]
    bits = _bits_in(dst[L.OP_DTYPE], ops[arg_value(ins, COMPRESS_SRC)], mems, regs, fmt, table)
    hbm = mems[L.SPACE_HBM]
    start = dynamic_offset(dst, regs)
    wire = 0
    for p in range(dst[L.OP_PCOUNT]):
        wire += encode_row(bits[p], hbm, 0, start + p * dst[L.OP_PCOLSTEP], dst[L.OP_ITEMSIZE],
                           dst[L.OP_SLOT])
    regs[L.REG_DMA_WIRE] = wire
    return L.STATUS_OK


@jit
def decompress(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, DECOMPRESS_DST)]
    src = ops[arg_value(ins, DECOMPRESS_SRC)]
    hbm = mems[L.SPACE_HBM]
    start = dynamic_offset(src, regs)
    bits = np.empty((src[L.OP_PCOUNT], src[L.OP_SIZE]), dtype=np.int64)
    wire = 0
    for p in range(src[L.OP_PCOUNT]):
        wire += decode_row(hbm, 0, start + p * src[L.OP_PCOLSTEP], src[L.OP_SIZE],
                           src[L.OP_ITEMSIZE], src[L.OP_SLOT], bits[p])
    if dst[L.OP_DTYPE] == src[L.OP_DTYPE]:
        store_bits(dst, mems, regs, bits)
    else:
        code = src[L.OP_DTYPE]
        values = np.empty(bits.shape, dtype=np.float32)
        for p in range(bits.shape[0]):
            for i in range(bits.shape[1]):
                values[p, i] = decode(bits[p, i], code, fmt, table)
        store_f32(dst, mems, regs, fmt, values)
    regs[L.REG_DMA_WIRE] = wire
    return L.STATUS_OK


@jit
def transpose(ins, ops, imms, mems, regs, fmt, table):
    """dst[j, i] = src[i, j], raw bits (the dtypes are equal)."""
    src, dst = ops[arg_value(ins, TRANSPOSE_SRC)], ops[arg_value(ins, TRANSPOSE_DST)]
    s0, d0 = dynamic_offset(src, regs), dynamic_offset(dst, regs)
    dense = aligned_dense(src, s0) and aligned_dense(dst, d0)
    if dense and src[L.OP_ITEMSIZE] == 2:
        _transpose_words(dst, src, viewed(mems[dst[L.OP_SPACE]], np.uint16),
                         viewed(mems[src[L.OP_SPACE]], np.uint16), d0 // 2, s0 // 2)
    elif dense and src[L.OP_ITEMSIZE] == 4:
        _transpose_words(dst, src, viewed(mems[dst[L.OP_SPACE]], np.uint32),
                         viewed(mems[src[L.OP_SPACE]], np.uint32), d0 // 4, s0 // 4)
    else:
        bits = load_bits(src, mems, regs)
        store_bits(dst, mems, regs, np.ascontiguousarray(bits.T))
    return L.STATUS_OK


@jit
def _transpose_words(dst, src, dst_words, src_words, d0, s0):
    """``transpose`` of dense tiles through views of one element width (the bits load_bits
    and store_bits would move, without their int64 array): src is read whole first, as the
    two may overlap."""
    rows = word_rows(src, src_words, s0)
    step = dst[L.OP_PCOLSTEP] // dst[L.OP_ITEMSIZE]
    for j in range(dst[L.OP_PCOUNT]):
        r = np.uintp(dst[L.OP_PSTART] + j * dst[L.OP_PROWSTEP])
        c = d0 + j * step
        for i in range(dst[L.OP_SIZE]):
            dst_words[r, np.uintp(c + i)] = rows[i, j]


@jit
def compute(ins, ops, imms, mems, regs, fmt, table):
    """dst = src0 + src1 + ... in fp32, left to right, then one rounding to dst's dtype."""
    total = load_f32(ops[arg_value(ins, COMPUTE_SRC0)], mems, regs, fmt, table)
    for k in range(COMPUTE_SRC1, COMPUTE_SRC7 + 1):   # src1 .. src7, consecutive slots
        if arg_tag(ins, k) == L.TAG_OPERAND:
            total = total + load_f32(ops[arg_value(ins, k)], mems, regs, fmt, table)
    store_f32(ops[arg_value(ins, COMPUTE_DST)], mems, regs, fmt, total)
    return L.STATUS_OK


@jit
def accumulate(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, ACCUMULATE_DST)]
    src = load_f32(ops[arg_value(ins, ACCUMULATE_SRC)], mems, regs, fmt, table)
    column = f32_window(dst, regs)
    if column >= 0:   # an fp32 dst: the same fp32 sums, added in place row by row (the source,
        # read whole first, may share its memory)
        words = viewed(mems[dst[L.OP_SPACE]], np.float32)
        n = dst[L.OP_SIZE]
        for p in range(dst[L.OP_PCOUNT]):
            row = words[np.uintp(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP]), column: column + n]
            add = src[p]
            for i in range(n):
                row[i] = row[i] + add[i]
        return L.STATUS_OK
    store_f32(dst, mems, regs, fmt, load_f32(dst, mems, regs, fmt, table) + src)
    return L.STATUS_OK


@jit
def _row_numbers(index, mems, regs, fmt, rows, skip_outside):
    """The index column as row numbers; (numbers, p, value) with entry p the first outside
    [0, rows), or p = -1. With ``skip_outside`` (oob=skip) such entries become -1 instead
    (their partitions are not transferred) and p is -1."""
    values = to_int(load_bits(index, mems, regs), index[L.OP_DTYPE], fmt)
    numbers = np.empty(values.shape[0], dtype=np.int64)
    for p in range(values.shape[0]):
        v = values[p, 0]
        if v < 0 or v >= rows:
            if not skip_outside:
                return numbers, p, v
            v = -1
        numbers[p] = v
    return numbers, -1, 0


@jit
def _fault_bad_index(regs, p, value, rows):
    regs[L.REG_FAULT_INFO] = p
    regs[L.REG_FAULT_INFO + 1] = value
    regs[L.REG_FAULT_INFO + 2] = rows
    return L.STATUS_BAD_INDEX


@jit
def gather(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, GATHER_DST)]
    src = ops[arg_value(ins, GATHER_TABLE)]
    rows, bad, value = _row_numbers(ops[arg_value(ins, GATHER_INDEX)], mems, regs, fmt,
                                    src[L.OP_PCOUNT], ins[L.I_FLAGS] & L.DMA_OOB_SKIP != 0)
    if bad >= 0:
        return _fault_bad_index(regs, bad, value, src[L.OP_PCOUNT])
    if _copy_rows(dst, src, rows, True, mems, regs):
        return L.STATUS_OK
    for p in range(dst[L.OP_PCOUNT]):
        if rows[p] >= 0:   # -1: outside the table under oob=skip, dst row left as it was
            copy_tile(one_row(dst, p), one_row(src, rows[p]), mems, regs, fmt, table)
    return L.STATUS_OK


@jit
def scatter(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, SCATTER_TABLE)]
    src = ops[arg_value(ins, SCATTER_SRC)]
    rows, bad, value = _row_numbers(ops[arg_value(ins, SCATTER_INDEX)], mems, regs, fmt,
                                    dst[L.OP_PCOUNT], ins[L.I_FLAGS] & L.DMA_OOB_SKIP != 0)
    if bad >= 0:
        return _fault_bad_index(regs, bad, value, dst[L.OP_PCOUNT])
    # one transfer must not write a row twice: the order of the two writes is undefined
    order = np.argsort(rows, kind="mergesort")
    for k in range(1, order.size):
        if rows[order[k]] >= 0 and rows[order[k]] == rows[order[k - 1]]:
            regs[L.REG_FAULT_INFO] = order[k - 1]
            regs[L.REG_FAULT_INFO + 1] = order[k]
            regs[L.REG_FAULT_INFO + 2] = rows[order[k]]
            return L.STATUS_OVERLAP
    if _copy_rows(dst, src, rows, False, mems, regs):
        return L.STATUS_OK
    for p in range(src[L.OP_PCOUNT]):
        if rows[p] >= 0:
            copy_tile(one_row(dst, rows[p]), one_row(src, p), mems, regs, fmt, table)
    return L.STATUS_OK


@jit
def _copy_rows(dst, src, rows, gathering, mems, regs):
    """The rows of an indexed transfer as raw 16-bit words, when both tiles are dense, of one
    dtype of 2 or 4 bytes, their partitions on 2-byte boundaries: dst row p = src row rows[p]
    (``gathering``), else dst row rows[p] = src row p; rows of -1 are skipped. (A copy_tile of
    two one-row operands per row cost ~0.3 us a row.) False, having done nothing, otherwise."""
    itemsize = src[L.OP_ITEMSIZE]
    s0, d0 = dynamic_offset(src, regs), dynamic_offset(dst, regs)
    if (dst[L.OP_DTYPE] != src[L.OP_DTYPE] or (itemsize != 2 and itemsize != 4)
            or src[L.OP_DENSE] != 1 or dst[L.OP_DENSE] != 1 or s0 % 2 != 0 or d0 % 2 != 0
            or src[L.OP_PCOLSTEP] % 2 != 0 or dst[L.OP_PCOLSTEP] % 2 != 0):
        return False
    halves = src[L.OP_SIZE] * itemsize // 2
    src_words = viewed(mems[src[L.OP_SPACE]], np.uint16)
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.uint16)
    row = np.empty(halves, dtype=np.uint16)   # the tiles may share memory
    for p in range(rows.size):
        if rows[p] < 0:
            continue
        ps, pd = (rows[p], p) if gathering else (p, rows[p])
        r = np.uintp(src[L.OP_PSTART] + ps * src[L.OP_PROWSTEP])
        c = (s0 + ps * src[L.OP_PCOLSTEP]) // 2
        for i in range(halves):
            row[i] = src_words[r, np.uintp(c + i)]
        r = np.uintp(dst[L.OP_PSTART] + pd * dst[L.OP_PROWSTEP])
        c = (d0 + pd * dst[L.OP_PCOLSTEP]) // 2
        for i in range(halves):
            dst_words[r, np.uintp(c + i)] = row[i]
    return True
