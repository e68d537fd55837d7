"""Jitted tile access: read and write access-pattern tiles of SBUF, PSUM and HBM.

Memories are byte arrays (``mems`` = (sbuf, psum, hbm) as 2-D uint8 arrays; HBM is one row).
A tile row of ``ops`` (see ``layout``) maps logical element (p, i) to a memory row and byte
column. Engines compute on fp32 tiles [P, N] (N = free elements in pattern order): ``load_f32``
decodes into them and ``store_f32`` rounds back (RNE) into the operand's dtype.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa import dtypes as D
from neuronemu.machine import layout as L
from neuronemu.numerics.cast import (
    decode,
    encode,
    encode_bf16,
    encode_bf16_stochastic,
    encode_stochastic,
)
from neuronemu.numerics.stochastic import random_bits, stream_key

# Every index into a memory array below is cast to np.uintp at the index: numba wraps a signed
# index that might be negative (a compare and an add per access, and loops that no longer
# vectorise), which made tile access ~4x slower. in_bounds has checked every operand first.
_U = np.uintp

_F32 = D.get("float32").code
_BF16 = D.get("bfloat16").code
_KIND_FLOAT = D.KINDS["float"]


@jit
def dynamic_offset(op, regs):
    offset = op[L.OP_BASE]
    for k in range(op[L.OP_NREG]):
        offset += op[L.OP_COEF + 2 * k] * regs[op[L.OP_REG + 2 * k]]
    return offset


# A register term whose product could pass this many bytes is outside every memory anyway
# (HBM is < 2**48 bytes); bounding it first keeps coefficient * register from wrapping int64.
_TERM_LIMIT = 1 << 60


@jit(inline="always")  # one caller per unit: compiled inside it
def in_bounds(op, regs, mems):
    """Register-offset tiles must stay inside their symbol's bytes (checked before any write),
    and every tile must lie inside its memory array: the assembler's checks make the second
    test redundant, but it keeps a missed check from becoming an access outside the memory."""
    if op[L.OP_SPACE] == L.SPACE_IMM:
        return True
    start = op[L.OP_BASE]
    for k in range(op[L.OP_NREG]):
        coef = op[L.OP_COEF + 2 * k]
        value = regs[op[L.OP_REG + 2 * k]]
        bound = _TERM_LIMIT // max(abs(coef), 1)
        if value > bound or value < -bound:
            return False
        start += coef * value
    last_row_start = start + (op[L.OP_PCOUNT] - 1) * op[L.OP_PCOLSTEP]
    if op[L.OP_NREG] != 0 and (start < op[L.OP_LO]
                               or last_row_start + op[L.OP_EXTENT] > op[L.OP_HI]):
        return False
    mem = mems[op[L.OP_SPACE]]
    last_row = op[L.OP_PSTART] + (op[L.OP_PCOUNT] - 1) * op[L.OP_PROWSTEP]
    return (start >= 0 and op[L.OP_PSTART] >= 0 and op[L.OP_EXTENT] >= 0
            and last_row < mem.shape[0] and last_row_start + op[L.OP_EXTENT] <= mem.shape[1])


@jit(inline="always")
def _read_bits(mem, r, c, itemsize):
    r = _U(r)
    v = np.int64(mem[r, _U(c)])
    if itemsize >= 2:
        v |= np.int64(mem[r, _U(c + 1)]) << 8
    if itemsize == 4:
        v |= np.int64(mem[r, _U(c + 2)]) << 16
        v |= np.int64(mem[r, _U(c + 3)]) << 24
    return v


@jit(inline="always")
def _write_bits(mem, r, c, itemsize, v):
    r = _U(r)
    mem[r, _U(c)] = np.uint8(v & 0xFF)
    if itemsize >= 2:
        mem[r, _U(c + 1)] = np.uint8((v >> 8) & 0xFF)
    if itemsize == 4:
        mem[r, _U(c + 2)] = np.uint8((v >> 16) & 0xFF)
        mem[r, _U(c + 3)] = np.uint8((v >> 24) & 0xFF)


@jit
def element_columns(op, regs):
    """Byte column of every free element of partition 0, in pattern order (outer to inner)."""
    n = op[L.OP_SIZE]
    cols = np.empty(n, dtype=np.int64)
    start = dynamic_offset(op, regs)
    s0, s1, s2, s3 = op[L.OP_STRIDE], op[L.OP_STRIDE + 1], op[L.OP_STRIDE + 2], op[L.OP_STRIDE + 3]
    c0, c1, c2, c3 = op[L.OP_COUNT], op[L.OP_COUNT + 1], op[L.OP_COUNT + 2], op[L.OP_COUNT + 3]
    k = 0
    for i0 in range(c0):
        for i1 in range(c1):
            for i2 in range(c2):
                base = start + i0 * s0 + i1 * s1 + i2 * s2
                for i3 in range(c3):
                    cols[k] = base + i3 * s3
                    k += 1
    return cols


@jit
def load_bits(op, mems, regs):
    """Raw storage bits of a tile as int64 [P, N]."""
    mem = mems[op[L.OP_SPACE]]
    p_count = op[L.OP_PCOUNT]
    itemsize = op[L.OP_ITEMSIZE]
    cols = element_columns(op, regs)
    out = np.empty((p_count, cols.size), dtype=np.int64)
    for p in range(p_count):
        r = op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]
        shift = p * op[L.OP_PCOLSTEP]
        for i in range(cols.size):
            out[p, i] = _read_bits(mem, r, cols[i] + shift, itemsize)
    return out


@jit
def store_bits(op, mems, regs, bits):
    mem = mems[op[L.OP_SPACE]]
    itemsize = op[L.OP_ITEMSIZE]
    cols = element_columns(op, regs)
    for p in range(op[L.OP_PCOUNT]):
        r = op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]
        shift = p * op[L.OP_PCOLSTEP]
        for i in range(cols.size):
            _write_bits(mem, r, cols[i] + shift, itemsize, bits[p, i])


@jit
def aligned_dense(op, start):
    """Dense, and every partition starts on a multiple of the itemsize, so the memory can be
    read through one typed view (views per partition cost ~100 ns each in reference counts)."""
    itemsize = op[L.OP_ITEMSIZE]
    return (op[L.OP_DENSE] == 1 and start % itemsize == 0
            and op[L.OP_PCOLSTEP] % itemsize == 0)


_LINE = 64   # bytes: a cache line, and one 512-bit vector
_ALIGN_FROM = 1 << 14   # fp32 values (64 KiB): smaller tiles are not worth placing


@jit
def empty_f32(rows, cols):
    """np.empty((rows, cols), float32) starting on a 64-byte boundary. numba aligns arrays to
    32 bytes; on a CPU with 512-bit vectors a loop over a 32-byte-aligned fp32 row splits
    every other vector across two cache lines, which made each matmul ~1.8x slower whenever
    the allocator put an operand or the sum there (one run in two of matmul_tiled.s). Rows
    of a multiple of 16 values stay aligned. Only where the values lie changes. A tile under
    64 KiB is numba's own array: placing it costs ~17 ns a call, as much as its loops lose."""
    if rows * cols < _ALIGN_FROM:
        return np.empty((rows, cols), dtype=np.float32)
    flat = np.empty(rows * cols + _LINE // 4, dtype=np.float32)
    start = ((_LINE - flat.ctypes.data % _LINE) % _LINE) // 4
    return flat[start: start + rows * cols].reshape((rows, cols))


@jit
def load_f32(op, mems, regs, fmt, table):
    """A tile decoded to fp32 [P, N]."""
    code = op[L.OP_DTYPE]
    start = dynamic_offset(op, regs)
    if not aligned_dense(op, start):
        bits = load_bits(op, mems, regs)
        out = empty_f32(bits.shape[0], bits.shape[1])
        for p in range(bits.shape[0]):
            for i in range(bits.shape[1]):
                out[p, i] = decode(bits[p, i], code, fmt, table)
        return out
    # the dtype switch sits outside the element loops
    mem = mems[op[L.OP_SPACE]]
    n = op[L.OP_SIZE]
    itemsize = op[L.OP_ITEMSIZE]
    is_float = fmt[code, D.F_KIND] == _KIND_FLOAT
    out = empty_f32(op[L.OP_PCOUNT], n)
    if is_float and itemsize == 4:
        words = viewed(mem, np.float32)
        for p in range(op[L.OP_PCOUNT]):
            r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
            c = (start + p * op[L.OP_PCOLSTEP]) // 4
            for i in range(n):
                out[p, i] = words[r, _U(c + i)]
    elif code == _BF16:
        # bf16 is fp32's top half: decode_table's row is exactly bits << 16 (NaN payloads
        # too; tests/numerics/test_decode.py), and a shift vectorises where the lookup of a
        # 256 KiB table row does not (~6x, on every bf16 matmul operand)
        halves = viewed(mem, np.uint16)
        wide = viewed(out, np.uint32)
        for p in range(op[L.OP_PCOUNT]):
            r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
            c = (start + p * op[L.OP_PCOLSTEP]) // 2
            for i in range(n):
                wide[p, i] = np.uint32(halves[r, _U(c + i)]) << np.uint32(16)
    elif is_float and itemsize == 2:
        halves = viewed(mem, np.uint16)
        for p in range(op[L.OP_PCOUNT]):
            r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
            c = (start + p * op[L.OP_PCOLSTEP]) // 2
            for i in range(n):
                out[p, i] = table[code, halves[r, _U(c + i)]]
    else:
        for p in range(op[L.OP_PCOUNT]):
            r = op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]
            c = start + p * op[L.OP_PCOLSTEP]
            for i in range(n):
                out[p, i] = decode(_read_bits(mem, r, c + i * itemsize, itemsize), code, fmt,
                                   table)
    return out


@jit
def store_f32(op, mems, regs, fmt, values):
    """Round fp32 values [P, N] into the tile's dtype and write them: to nearest even, or
    stochastically when the run enables it (regs[REG_SR_ON])."""
    if regs[L.REG_SR_ON] != 0 and op[L.OP_DTYPE] != _F32:
        _store_stochastic(op, mems, regs, fmt, values)
        return
    code = op[L.OP_DTYPE]
    start = dynamic_offset(op, regs)
    if not aligned_dense(op, start):
        bits = np.empty(values.shape, dtype=np.int64)
        for p in range(values.shape[0]):
            for i in range(values.shape[1]):
                bits[p, i] = encode(values[p, i], code, fmt)
        store_bits(op, mems, regs, bits)
        return
    mem = mems[op[L.OP_SPACE]]
    n = op[L.OP_SIZE]
    itemsize = op[L.OP_ITEMSIZE]
    if code == _F32:
        words = viewed(mem, np.float32)
        for p in range(op[L.OP_PCOUNT]):
            r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
            c = (start + p * op[L.OP_PCOLSTEP]) // 4
            for i in range(n):
                words[r, _U(c + i)] = values[p, i]
    elif code == _BF16:
        halves = viewed(mem, np.uint16)
        for p in range(op[L.OP_PCOUNT]):
            r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
            c = (start + p * op[L.OP_PCOLSTEP]) // 2
            for i in range(n):
                halves[r, _U(c + i)] = encode_bf16(values[p, i])
    else:
        for p in range(op[L.OP_PCOUNT]):
            r = op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]
            c = start + p * op[L.OP_PCOLSTEP]
            for i in range(n):
                _write_bits(mem, r, c + i * itemsize, itemsize, encode(values[p, i], code, fmt))


@jit
def f32_window(op, regs):
    """The first float32 column of a dense fp32 on-chip tile whose partition p is memory row
    PSTART + p * PROWSTEP (PROWSTEP >= 1), so each partition is a slice of mem.view(float32)
    (``f32_row``) an instruction can read and write in place; -1 for any other tile."""
    if (op[L.OP_DTYPE] != _F32 or op[L.OP_DENSE] != 1 or op[L.OP_PCOLSTEP] != 0
            or op[L.OP_PROWSTEP] < 1 or op[L.OP_SPACE] == L.SPACE_HBM):
        return -1
    start = dynamic_offset(op, regs)
    return start // 4 if start % 4 == 0 else -1


@jit
def bf16_window(op, regs):
    """``f32_window`` for dense on-chip bfloat16 tiles: the first uint16 column, or -1."""
    if (op[L.OP_DTYPE] != _BF16 or op[L.OP_DENSE] != 1 or op[L.OP_PCOLSTEP] != 0
            or op[L.OP_PROWSTEP] < 1 or op[L.OP_SPACE] == L.SPACE_HBM):
        return -1
    start = dynamic_offset(op, regs)
    return start // 2 if start % 2 == 0 else -1


@jit
def share_no_byte(a, b, regs):
    """Whether two dense on-chip tiles (windows of any dtype) are in different memories, or
    their byte columns or their partition rows do not meet: then one can be written row by row
    while the other is still being read."""
    if a[L.OP_SPACE] != b[L.OP_SPACE]:
        return True
    a0, b0 = dynamic_offset(a, regs), dynamic_offset(b, regs)
    if (a0 + a[L.OP_SIZE] * a[L.OP_ITEMSIZE] <= b0
            or b0 + b[L.OP_SIZE] * b[L.OP_ITEMSIZE] <= a0):
        return True
    a_last = a[L.OP_PSTART] + (a[L.OP_PCOUNT] - 1) * a[L.OP_PROWSTEP]
    b_last = b[L.OP_PSTART] + (b[L.OP_PCOUNT] - 1) * b[L.OP_PROWSTEP]
    return a_last < b[L.OP_PSTART] or b_last < a[L.OP_PSTART]


@jit
def word_window(op, regs, fmt):
    """``f32_window`` for dense on-chip tiles of a 4-byte integer dtype: the first uint32
    column, or -1."""
    if (op[L.OP_ITEMSIZE] != 4 or fmt[op[L.OP_DTYPE], D.F_KIND] == _KIND_FLOAT
            or op[L.OP_DENSE] != 1 or op[L.OP_PCOLSTEP] != 0 or op[L.OP_PROWSTEP] < 1
            or op[L.OP_SPACE] == L.SPACE_HBM):
        return -1
    start = dynamic_offset(op, regs)
    return start // 4 if start % 4 == 0 else -1


@jit(inline="always")
def f32_row(words, op, column, p):
    """Partition p of a tile with ``f32_window`` ``column``, as a 1-D view of ``words``."""
    return words[_U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]), column: column + op[L.OP_SIZE]]


@jit
def in_place_safe(dst, dst_column, src, src_column):
    """Whether an elementwise instruction may write ``dst`` element by element while it reads
    ``src`` at the same (p, i) (two ``f32_window`` tiles): the windows are the same or share
    no byte, so no element is read after it was overwritten."""
    if dst[L.OP_SPACE] != src[L.OP_SPACE]:
        return True
    if (dst_column + dst[L.OP_SIZE] <= src_column
            or src_column + src[L.OP_SIZE] <= dst_column):
        return True
    dst_last = dst[L.OP_PSTART] + (dst[L.OP_PCOUNT] - 1) * dst[L.OP_PROWSTEP]
    src_last = src[L.OP_PSTART] + (src[L.OP_PCOUNT] - 1) * src[L.OP_PROWSTEP]
    if dst_last < src[L.OP_PSTART] or src_last < dst[L.OP_PSTART]:
        return True
    return (dst_column == src_column and dst[L.OP_PSTART] == src[L.OP_PSTART]
            and dst[L.OP_PROWSTEP] == src[L.OP_PROWSTEP]
            and dst[L.OP_PCOUNT] == src[L.OP_PCOUNT] and dst[L.OP_SIZE] == src[L.OP_SIZE])


@jit
def same_shape(a, b):
    return a[L.OP_PCOUNT] == b[L.OP_PCOUNT] and a[L.OP_SIZE] == b[L.OP_SIZE]


@jit
def round_to_bits(values, code, fmt, regs):
    """fp32 values [P, N] -> storage bits of dtype ``code``: to nearest even, or stochastically
    when the run enables it (regs[REG_SR_ON]) and code is narrower than fp32. Element (p, i)
    draws its bits from (seed, instruction, store, p * N + i): reproducible and independent of
    the order elements are visited in."""
    bits = np.empty(values.shape, dtype=np.int64)
    n = values.shape[1]
    if regs[L.REG_SR_ON] == 0 or code == _F32:
        for p in range(values.shape[0]):
            for i in range(n):
                bits[p, i] = encode(values[p, i], code, fmt)
        return bits
    key = stream_key(regs[L.REG_SR_SEED], regs[L.REG_STEP], regs[L.REG_SR_STORE])
    regs[L.REG_SR_STORE] += 1
    for p in range(values.shape[0]):
        for i in range(n):
            rand = random_bits(key, p * n + i)
            if code == _BF16:
                bits[p, i] = encode_bf16_stochastic(values[p, i], rand)
            else:
                bits[p, i] = encode_stochastic(values[p, i], code, fmt, rand)
    return bits


@jit
def _store_stochastic(op, mems, regs, fmt, values):
    store_bits(op, mems, regs, round_to_bits(values, op[L.OP_DTYPE], fmt, regs))


@jit(inline="always")
def word_rows(op, words, w0):
    """A dense tile's elements as a [P, N] copy, read through ``words``, a view of its memory
    of its element width (w0: its first element there). A copy, so the caller may write over
    the tile (a destination that overlaps it) before it has used every row."""
    n = op[L.OP_SIZE]
    rows = np.empty((op[L.OP_PCOUNT], n), dtype=words.dtype)
    step = op[L.OP_PCOLSTEP] // op[L.OP_ITEMSIZE]
    for p in range(op[L.OP_PCOUNT]):
        r = _U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
        c = w0 + p * step
        for i in range(n):
            rows[p, i] = words[r, _U(c + i)]
    return rows


@jit
def _copy_dense(dst, src, dst_mem, src_mem, d0, s0):
    """Copy between dense tiles of one dtype, byte by byte (partition p's bytes are one run
    from s0 + p * PCOLSTEP): one unit whatever the dtype, where a view per element width was
    one compile each (0.8 s of every first run that copies a tile). Every source row is read
    before any write because the two tiles may overlap."""
    width = src[L.OP_SIZE] * src[L.OP_ITEMSIZE]
    rows = np.empty((src[L.OP_PCOUNT], width), dtype=np.uint8)
    for p in range(src[L.OP_PCOUNT]):
        r = _U(src[L.OP_PSTART] + p * src[L.OP_PROWSTEP])
        c = s0 + p * src[L.OP_PCOLSTEP]
        for i in range(width):
            rows[p, i] = src_mem[r, _U(c + i)]
    for p in range(dst[L.OP_PCOUNT]):
        r = _U(dst[L.OP_PSTART] + p * dst[L.OP_PROWSTEP])
        c = d0 + p * dst[L.OP_PCOLSTEP]
        for i in range(width):
            dst_mem[r, _U(c + i)] = rows[p, i]


@jit
def copy_tile(dst, src, mems, regs, fmt, table):
    """dst = src: raw bits when the dtypes are equal (bit-exact), otherwise through fp32."""
    if dst[L.OP_DTYPE] == src[L.OP_DTYPE]:
        copy_bits(dst, src, mems, regs)
    else:
        store_f32(dst, mems, regs, fmt, load_f32(src, mems, regs, fmt, table))


@jit(inline="always")
def copy_dense_bits(dst, src, mems, regs):
    """``copy_bits`` of two dense tiles (OP_DENSE: a static property of their patterns)."""
    _copy_dense(dst, src, mems[dst[L.OP_SPACE]], mems[src[L.OP_SPACE]],
                dynamic_offset(dst, regs), dynamic_offset(src, regs))


@jit(inline="always")
def copy_bits(dst, src, mems, regs):
    """dst = src, tiles of one dtype and shape: their storage bits, dense tiles byte by byte."""
    if src[L.OP_DENSE] == 1 and dst[L.OP_DENSE] == 1:
        copy_dense_bits(dst, src, mems, regs)
    else:
        store_bits(dst, mems, regs, load_bits(src, mems, regs))


@jit
def scalar_column(ins, slot, ops, imms, mems, regs, fmt, table, partitions):
    """An fp32 [P] column from a scalar argument: an immediate broadcast, or a [P, 1] tile."""
    tag = ins[L.I_ARGS + 2 * slot]
    value = ins[L.I_ARGS + 2 * slot + 1]
    out = np.empty(partitions, dtype=np.float32)
    if tag == L.TAG_OPERAND:
        column = load_f32(ops[value], mems, regs, fmt, table)
        for p in range(partitions):
            out[p] = column[p, 0]
    else:
        out[:] = np.float32(imms[value])
    return out


@jit
def f32_column(ins, slot, ops, imms, mems, regs, partitions):
    """``scalar_column`` without decoding: (True, the [P] fp32 values) for an immediate or an
    fp32 column window (``f32_window``), (False, anything) for another tile."""
    out = np.empty(partitions, dtype=np.float32)
    if arg_tag(ins, slot) != L.TAG_OPERAND:
        out[:] = np.float32(imms[arg_value(ins, slot)])
        return True, out
    op = ops[arg_value(ins, slot)]
    col = f32_window(op, regs)
    if col < 0 or op[L.OP_PCOUNT] < partitions:
        return False, out
    words = viewed(mems[op[L.OP_SPACE]], np.float32)
    for p in range(partitions):
        out[p] = words[_U(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]), _U(col)]
    return True, out


@jit
def one_row(op, row):
    """The operand restricted to its logical row (partition) ``row``."""
    out = op.copy()
    out[L.OP_PSTART] = op[L.OP_PSTART] + row * op[L.OP_PROWSTEP]
    out[L.OP_BASE] = op[L.OP_BASE] + row * op[L.OP_PCOLSTEP]
    out[L.OP_PCOUNT] = 1
    return out


@jit
def arg_value(ins, slot):
    return ins[L.I_ARGS + 2 * slot + 1]


@jit
def arg_tag(ins, slot):
    return ins[L.I_ARGS + 2 * slot]
