"""Tensor engine: matmul (plain, fp8 double-row, transpose mode) and PE transpose."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa.args.tensor import (
    MATMUL_ACCUMULATE,
    MATMUL_DST,
    MATMUL_IS_MOVING_ONEZERO,
    MATMUL_IS_STATIONARY_ONEZERO,
    MATMUL_MOVING,
    MATMUL_STATIONARY,
    TRANSPOSE_DATA,
    TRANSPOSE_DST,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import (
    arg_value,
    empty_f32,
    f32_row,
    f32_window,
    load_bits,
    load_f32,
    store_bits,
    store_f32,
)
from neuronemu.numerics.cast import f32_to_bits


@jit(inline="always")
def _bad_value(regs, arg, p, j, value):
    regs[L.REG_FAULT_INFO] = arg
    regs[L.REG_FAULT_INFO + 1] = p
    regs[L.REG_FAULT_INFO + 2] = j
    regs[L.REG_FAULT_INFO + 3] = f32_to_bits(value)
    return L.STATUS_MATMUL_VALUE


@jit
def _onezero(values, regs, arg):
    """STATUS_OK when every value is 0.0 or 1.0 (the hint's promise), else the fault."""
    for p in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[p, j]
            if v != 0.0 and v != 1.0:
                return _bad_value(regs, arg, p, j, v)
    return L.STATUS_OK


@jit
def matmul(ins, ops, imms, mems, regs, fmt, table):
    """dst[M, N] (+)= stationary[K, M]^T @ moving[K, N].

    Fixed summation order, independent of any BLAS: for every output element the fp32 products
    are summed in fp32 for k = 0, 1, ..., K-1 (the order partial sums flow down a systolic
    column), and the finished sum is then added to the value already in PSUM when accumulating.
    Products of bf16/fp16/fp8 operands are exact in fp32. In double-row mode the operands are
    [K, 2, M] / [K, 2, N] (two halves of the free axis) and row k contributes the fp32 pair
    w0 x0 + w1 x1, the two products a PE computes in one step.
    """
    dst = ops[arg_value(ins, MATMUL_DST)]
    flags = ins[L.I_FLAGS]
    stationary = load_f32(ops[arg_value(ins, MATMUL_STATIONARY)], mems, regs, fmt, table)
    moving = load_f32(ops[arg_value(ins, MATMUL_MOVING)], mems, regs, fmt, table)
    if arg_value(ins, MATMUL_IS_STATIONARY_ONEZERO) != 0:
        status = _onezero(stationary, regs, MATMUL_STATIONARY)
        if status != L.STATUS_OK:
            return status
    if arg_value(ins, MATMUL_IS_MOVING_ONEZERO) != 0:
        status = _onezero(moving, regs, MATMUL_MOVING)
        if status != L.STATUS_OK:
            return status
    if flags & L.MATMUL_TRANSPOSE:
        return _transpose_mode(ins, ops, mems, regs, fmt, table, moving)
    accumulate = arg_value(ins, MATMUL_ACCUMULATE) != 0
    k_size = stationary.shape[0]
    if flags & L.MATMUL_DOUBLE_ROW:
        m_size, n_size = stationary.shape[1] // 2, moving.shape[1] // 2
        acc = np.zeros((m_size, n_size), dtype=np.float32)
        for m in range(m_size):
            for k in range(k_size):
                w0 = stationary[k, m]
                w1 = stationary[k, m_size + m]
                for n in range(n_size):
                    acc[m, n] += w0 * moving[k, n] + w1 * moving[k, n_size + n]
    else:
        acc = _products_summed(stationary, moving)
    _store_sum(dst, mems, regs, fmt, table, acc, accumulate)
    return L.STATUS_OK


@jit(inline="always")  # one caller: optimised inside matmul, where its arrays' layouts are known
def _products_summed(stationary, moving):
    """acc[m, n] = sum over k = 0, 1, ..., K-1 of stationary[k, m] * moving[k, n], each product
    and each partial sum rounded to fp32, in that order.

    As rank-1 updates acc[m, :] += stationary[k, m] * moving[k, :] for k = 0, 1, ..., every
    element sees exactly those additions in that order, and the loop over n is contiguous, so
    it vectorises without changing any rounding (no FMA: numba's fastmath is off, so the
    product of two fp32 operands is rounded before it is added, as it must be for fp32 and tf32
    inputs; bf16/fp16/fp8 products are exact anyway). Four rows of m share each pass over four
    rows of moving: 16 products per four loads, each partial sum loaded and stored once per
    four k steps instead of two (16 bf16 128x128x512 matmuls 1.47 -> 1.23 ms against two
    rows per pass; ~3x the one-row loop)."""
    k_size, m_size = stationary.shape
    n_size = moving.shape[1]
    acc = empty_f32(m_size, n_size)   # on a cache line: see empty_f32
    acc[:] = 0.0
    m_four = m_size - m_size % 4
    k_four = k_size - k_size % 4
    for m in range(0, m_four, 4):
        r0, r1, r2, r3 = acc[m], acc[m + 1], acc[m + 2], acc[m + 3]
        for k in range(0, k_four, 4):
            s0, s1 = stationary[k], stationary[k + 1]
            s2, s3 = stationary[k + 2], stationary[k + 3]
            a0, a1, a2, a3 = s0[m], s0[m + 1], s0[m + 2], s0[m + 3]
            b0, b1, b2, b3 = s1[m], s1[m + 1], s1[m + 2], s1[m + 3]
            c0, c1, c2, c3 = s2[m], s2[m + 1], s2[m + 2], s2[m + 3]
            d0, d1, d2, d3 = s3[m], s3[m + 1], s3[m + 2], s3[m + 3]
            x0, x1, x2, x3 = moving[k], moving[k + 1], moving[k + 2], moving[k + 3]
            for n in range(n_size):
                u, v, w, z = x0[n], x1[n], x2[n], x3[n]
                r0[n] = (((r0[n] + a0 * u) + b0 * v) + c0 * w) + d0 * z
                r1[n] = (((r1[n] + a1 * u) + b1 * v) + c1 * w) + d1 * z
                r2[n] = (((r2[n] + a2 * u) + b2 * v) + c2 * w) + d2 * z
                r3[n] = (((r3[n] + a3 * u) + b3 * v) + c3 * w) + d3 * z
        for k in range(k_four, k_size):  # the last K % 4 rows of moving, in order
            s0 = stationary[k]
            a0, a1, a2, a3 = s0[m], s0[m + 1], s0[m + 2], s0[m + 3]
            x0 = moving[k]
            for n in range(n_size):
                u = x0[n]
                r0[n] = r0[n] + a0 * u
                r1[n] = r1[n] + a1 * u
                r2[n] = r2[n] + a2 * u
                r3[n] = r3[n] + a3 * u
    for m in range(m_four, m_size):  # the last M % 4 rows, one at a time
        row = acc[m]
        for k in range(k_size):
            weight = stationary[k, m]
            x = moving[k]
            for n in range(n_size):
                row[n] = row[n] + weight * x[n]
    return acc


@jit(inline="always")  # one caller per unit: compiled inside it
def _store_sum(dst, mems, regs, fmt, table, acc, accumulate):
    """dst = acc, or dst + acc when accumulating (one fp32 addition per element, PSUM's value
    first). A dense fp32 dst is written where it lies (no temporaries); others go through
    load_f32 / store_f32 (rounding to a bf16 PSUM dst, stochastic rounding)."""
    column = f32_window(dst, regs)
    if column < 0:
        if accumulate:
            acc = load_f32(dst, mems, regs, fmt, table) + acc
        store_f32(dst, mems, regs, fmt, acc)
        return
    words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    n_size = acc.shape[1]
    for p in range(acc.shape[0]):
        row = f32_row(words, dst, column, p)
        src = acc[p]
        if accumulate:
            for n in range(n_size):
                row[n] = row[n] + src[n]
        else:
            for n in range(n_size):
                row[n] = src[n]


@jit(inline="always")  # one caller per unit: compiled inside it
def _transpose_mode(ins, ops, mems, regs, fmt, table, moving):
    """dst[m, n] = stationary[k_n, m] where column n of moving is one-hot at row k_n (an
    all-zero column gives +0.0): bits move unchanged when dst has stationary's dtype (NaN and
    Inf included), else the fp32 value is written."""
    dst = ops[arg_value(ins, MATMUL_DST)]
    s_op = ops[arg_value(ins, MATMUL_STATIONARY)]
    k_size, n_size = moving.shape
    rows = np.full(n_size, -1, dtype=np.int64)
    for n in range(n_size):
        for k in range(k_size):
            v = moving[k, n]
            if v == 0.0:
                continue
            if v != 1.0 or rows[n] >= 0:
                return _bad_value(regs, MATMUL_MOVING, k, n, v)
            rows[n] = k
    if dst[L.OP_DTYPE] == s_op[L.OP_DTYPE]:
        store_bits(dst, mems, regs, _select_columns(load_bits(s_op, mems, regs), rows))
    else:
        store_f32(dst, mems, regs, fmt,
                  _select_columns(load_f32(s_op, mems, regs, fmt, table), rows))
    return L.STATUS_OK


@jit
def _select_columns(source, rows):
    """out[m, n] = source[rows[n], m], zero where rows[n] < 0."""
    out = np.zeros((source.shape[1], rows.size), dtype=source.dtype)
    for n in range(rows.size):
        if rows[n] >= 0:
            for m in range(source.shape[1]):
                out[m, n] = source[rows[n], m]
    return out


@jit
def transpose(ins, ops, imms, mems, regs, fmt, table):
    """dst[F, P] = data[P, F]. NeuronCore-v3+: bits move when dtypes match (is_transpose), else
    the fp32 values. NeuronCore-v2 (PE_TRANSPOSE_MATMUL): the identity matmul of
    _identity_product, written as fp32."""
    dst = ops[arg_value(ins, TRANSPOSE_DST)]
    src = ops[arg_value(ins, TRANSPOSE_DATA)]
    if ins[L.I_FLAGS] & L.PE_TRANSPOSE_MATMUL:
        store_f32(dst, mems, regs, fmt, _identity_product(load_f32(src, mems, regs, fmt, table)))
    elif dst[L.OP_DTYPE] == src[L.OP_DTYPE]:
        store_bits(dst, mems, regs, load_bits(src, mems, regs).T.copy())
    else:
        store_f32(dst, mems, regs, fmt, load_f32(src, mems, regs, fmt, table).T.copy())
    return L.STATUS_OK


@jit
def _identity_product(data):
    """out[f, p] = sum over k = 0, 1, ..., P-1 of data[k, f] * identity[k, p], each product and
    partial sum in fp32 from +0.0 in k order: tensor.matmul of stationary data and an identity
    moving, which is how NeuronCore-v2's PE array transposes (not bit-accurate for NaN/Inf).

    A column of data holding only finite values sums to its values exactly, except that -0.0
    becomes +0.0 (+0.0 + -0.0 = +0.0), so only the other columns are summed term by term: a NaN
    or Inf at [k, f] times the identity's zeros is NaN, which fills row f of out (an Inf alone
    in its column stays Inf at [f, k], where the other products are finite times 0). Of two
    NaNs met in a sum, the later product's is kept."""
    p_size, f_size = data.shape
    out = np.empty((f_size, p_size), dtype=np.float32)
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for f in range(f_size):
        finite = True
        for k in range(p_size):
            if not np.isfinite(data[k, f]):
                finite = False
                break
        for p in range(p_size):
            if finite:
                out[f, p] = zero + data[p, f]
            else:
                total = zero
                for k in range(p_size):
                    product = data[k, f] * (one if k == p else zero)
                    # of two NaNs the later product's stays, spelled out: LLVM may swap the
                    # operands of an addition, and x86 keeps the first operand's NaN
                    if np.isnan(product):
                        total = product
                    elif not np.isnan(total):
                        total = total + product
                out[f, p] = total
    return out
