"""Jitted tile access: read and write access-pattern tiles of SBUF, PSUM and HBM.

Memories are byte arrays (``mems`` = (sbuf, psum, hbm) as 2-D uint8 arrays; HBM is one row).
A tile row of ``ops`` (see ``layout``) maps logical element (p, i) to a memory row and byte
column. Engines compute on fp32 tiles [P, N] (N = free elements in pattern order): ``load_f32``
decodes into them and ``store_f32`` rounds back (RNE) into the operand's dtype.
"""

from __future__ import annotations

import numpy as np

from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.numerics.cast import decode, encode


@jit(inline="always")
def dynamic_offset(op, regs):
    offset = op[L.OP_BASE]
    for k in range(op[L.OP_NREG]):
        offset += op[L.OP_COEF + 2 * k] * regs[op[L.OP_REG + 2 * k]]
    return offset


@jit
def in_bounds(op, regs):
    """Register-offset tiles must stay inside their symbol's bytes (checked before any write)."""
    if op[L.OP_NREG] == 0:
        return True
    start = dynamic_offset(op, regs)
    last_row_start = start + (op[L.OP_PCOUNT] - 1) * op[L.OP_PCOLSTEP]
    return start >= op[L.OP_LO] and last_row_start + op[L.OP_EXTENT] <= op[L.OP_HI]


@jit(inline="always")
def _read_bits(mem, r, c, itemsize):
    v = np.int64(mem[r, c])
    if itemsize >= 2:
        v |= np.int64(mem[r, c + 1]) << 8
    if itemsize == 4:
        v |= np.int64(mem[r, c + 2]) << 16
        v |= np.int64(mem[r, c + 3]) << 24
    return v


@jit(inline="always")
def _write_bits(mem, r, c, itemsize, v):
    mem[r, c] = np.uint8(v & 0xFF)
    if itemsize >= 2:
        mem[r, c + 1] = np.uint8((v >> 8) & 0xFF)
    if itemsize == 4:
        mem[r, c + 2] = np.uint8((v >> 16) & 0xFF)
        mem[r, c + 3] = np.uint8((v >> 24) & 0xFF)


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
def load_f32(op, mems, regs, fmt, table):
    """A tile decoded to fp32 [P, N]."""
    bits = load_bits(op, mems, regs)
    code = op[L.OP_DTYPE]
    out = np.empty(bits.shape, dtype=np.float32)
    for p in range(bits.shape[0]):
        for i in range(bits.shape[1]):
            out[p, i] = decode(bits[p, i], code, fmt, table)
    return out


@jit
def store_f32(op, mems, regs, fmt, values):
    """Round fp32 values [P, N] into the tile's dtype (RNE) and write them."""
    code = op[L.OP_DTYPE]
    bits = np.empty(values.shape, dtype=np.int64)
    for p in range(values.shape[0]):
        for i in range(values.shape[1]):
            bits[p, i] = encode(values[p, i], code, fmt)
    store_bits(op, mems, regs, bits)


@jit
def copy_tile(dst, src, mems, regs, fmt, table):
    """dst = src: raw bits when the dtypes are equal (bit-exact), otherwise through fp32."""
    if dst[L.OP_DTYPE] == src[L.OP_DTYPE]:
        store_bits(dst, mems, regs, load_bits(src, mems, regs))
    else:
        store_f32(dst, mems, regs, fmt, load_f32(src, mems, regs, fmt, table))


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


@jit(inline="always")
def arg_value(ins, slot):
    return ins[L.I_ARGS + 2 * slot + 1]


@jit(inline="always")
def arg_tag(ins, slot):
    return ins[L.I_ARGS + 2 * slot]
