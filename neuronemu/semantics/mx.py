"""Microscaling (OCP MX) on trn3: quantize_mx and matmul_mx (docs/numerics.md, "MX").

Layout (ARCHITECTURE.md 3.3): an x4 element packs four values, value i in bits [w i, w (i + 1))
with w = 8 for the fp8 x4 types (byte i = value i, 32-bit elements) and w = 4 for
float4_e2m1fn_x4 (nibble i = value i, 16-bit elements). A scale block is 8 partitions x 1 x4
element = 32 values; the scale of block (quadrant q, group g, column j) lives at row 32 q + g,
column j of the scale tile (one E8M0 exponent code, in a uint8 or float8_e8m0fnu tile alike:
value 2^(code - 127), 0xFF NaN). In matmul_mx the four values of stationary/moving element (p, .)
are logical contraction indices p, p + P, p + 2P, p + 3P.
"""

from __future__ import annotations

import math

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa import dtypes as D
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_value, load_bits, load_f32, one_row, store_bits, store_f32
from neuronemu.numerics.cast import decode, encode

# x4 dtype code -> code of the dtype of its four values, and the bits of one value
PACKED_ELEMENT = np.full(D.MAX_CODES, -1, dtype=np.int64)
PACKED_WIDTH = np.zeros(D.MAX_CODES, dtype=np.int64)
for _d in D.names():
    if D.get(_d).packs:
        PACKED_ELEMENT[D.get(_d).code] = D.get(D.get(_d).packs).code
        PACKED_WIDTH[D.get(_d).code] = D.get(D.get(_d).packs).bits


@jit
def _emax(code, fmt):
    """Largest normal exponent of an fp8 format (e4m3fn 8, e5m2 15)."""
    top = (1 << fmt[code, D.F_EXP]) - 1 - fmt[code, D.F_HAS_INF]
    return top - fmt[code, D.F_BIAS]


@jit
def quantize_mx(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, 0)]
    src = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    scale = ops[arg_value(ins, 2)]
    element = PACKED_ELEMENT[dst[L.OP_DTYPE]]
    emax = _emax(element, fmt)
    partitions, columns = src.shape[0], src.shape[1] // 4
    packed = np.zeros((partitions, columns), dtype=np.int64)
    codes = np.zeros((partitions // 8, columns), dtype=np.int64)
    for block in range(partitions // 8):
        base = block * 8
        for j in range(columns):
            amax = np.float32(0.0)
            finite = True
            for p in range(base, base + 8):
                for i in range(4):
                    v = src[p, 4 * j + i]
                    if not np.isfinite(v):
                        finite = False
                    elif abs(v) > amax:
                        amax = abs(v)
            if not finite:
                code = 255  # E8M0 NaN
            elif amax == 0.0:
                code = 0    # 2^-127
            else:
                exponent = math.frexp(np.float64(amax))[1] - 1  # floor(log2(amax))
                code = min(max(exponent - (emax - 1) + 127, 0), 254)
            codes[block, j] = code
            inverse = 2.0 ** (127 - code) if code != 255 else np.nan
            for p in range(base, base + 8):
                word = np.int64(0)
                for i in range(4):
                    q = np.float32(np.float64(src[p, 4 * j + i]) * inverse)
                    word |= (encode(q, element, fmt) & 0xFF) << (8 * i)
                packed[p, j] = word
    store_bits(dst, mems, regs, packed)
    for block in range(partitions // 8):
        row = (block // 4) * 32 + block % 4
        store_bits(one_row(scale, row), mems, regs, codes[block: block + 1])
    return L.STATUS_OK


@jit
def _dequantize(op, scale_op, mems, regs, fmt, table):
    """An x4 tile [P, C] with its scales -> fp32 [4 P, C] in logical contraction order
    (row k = byte k // P of partition k % P)."""
    bits = load_bits(op, mems, regs)
    scales = load_bits(scale_op, mems, regs)
    element = PACKED_ELEMENT[op[L.OP_DTYPE]]
    width = PACKED_WIDTH[op[L.OP_DTYPE]]
    mask = (np.int64(1) << width) - 1
    partitions, columns = bits.shape
    out = np.empty((4 * partitions, columns), dtype=np.float32)
    for p in range(partitions):
        row = (p // 32) * 32 + (p % 32) // 8
        for j in range(columns):
            code = scales[row, j]
            factor = np.float32(np.nan) if code == 255 else np.float32(2.0 ** (code - 127))
            for i in range(4):
                value = decode((bits[p, j] >> (width * i)) & mask, element, fmt, table)
                out[i * partitions + p, j] = np.float32(value * factor)
    return out


@jit
def matmul_mx(ins, ops, imms, mems, regs, fmt, table):
    """dst[M, N] (+)= sum over the 4 P logical k of A[k, m] B[k, n]: dequantized fp8 / fp4 (either
    operand either kind) times its power-of-two scale (exact in fp32 unless it overflows),
    products in fp32, accumulated in fp32 in k order."""
    dst = ops[arg_value(ins, 0)]
    a = _dequantize(ops[arg_value(ins, 1)], ops[arg_value(ins, 3)], mems, regs, fmt, table)
    b = _dequantize(ops[arg_value(ins, 2)], ops[arg_value(ins, 4)], mems, regs, fmt, table)
    m, n = a.shape[1], b.shape[1]
    if arg_value(ins, 5) != 0:
        acc = load_f32(dst, mems, regs, fmt, table)
    else:
        acc = np.zeros((m, n), dtype=np.float32)
    for k in range(a.shape[0]):
        for i in range(m):
            x = a[k, i]
            for j in range(n):
                acc[i, j] = np.float32(acc[i, j] + np.float32(x * b[k, j]))
    store_f32(dst, mems, regs, fmt, acc)
    return L.STATUS_OK
