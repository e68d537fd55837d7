"""Tensor engine: matmul and PE transpose."""

from __future__ import annotations

import numpy as np

from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import arg_value, load_bits, load_f32, store_bits, store_f32


@jit
def matmul(ins, ops, imms, mems, regs, fmt, table):
    """dst[M, N] (+)= stationary[K, M]^T @ moving[K, N].

    Fixed summation order, independent of any BLAS: for every output element the fp32 products
    are summed in fp32 for k = 0, 1, ..., K-1 (the order partial sums flow down a systolic
    column), and the finished sum is then added to the fp32 value already in PSUM when
    accumulating. Products of bf16/fp16/fp8 operands are exact in fp32.
    """
    dst = ops[arg_value(ins, 0)]
    stationary = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    moving = load_f32(ops[arg_value(ins, 2)], mems, regs, fmt, table)
    accumulate = arg_value(ins, 3) != 0
    k_size, m_size = stationary.shape
    n_size = moving.shape[1]
    acc = np.zeros((m_size, n_size), dtype=np.float32)
    for m in range(m_size):
        for k in range(k_size):
            weight = stationary[k, m]
            for n in range(n_size):
                acc[m, n] += weight * moving[k, n]
    if accumulate:
        acc = load_f32(dst, mems, regs, fmt, table) + acc
    store_f32(dst, mems, regs, fmt, acc)
    return L.STATUS_OK


@jit
def transpose(ins, ops, imms, mems, regs, fmt, table):
    """dst[F, P] = data[P, F]: bit moves when dtypes match (v3+ is_transpose), else fp32 values."""
    dst = ops[arg_value(ins, 0)]
    src = ops[arg_value(ins, 1)]
    if dst[L.OP_DTYPE] == src[L.OP_DTYPE]:
        store_bits(dst, mems, regs, load_bits(src, mems, regs).T.copy())
    else:
        store_f32(dst, mems, regs, fmt, load_f32(src, mems, regs, fmt, table).T.copy())
    return L.STATUS_OK
