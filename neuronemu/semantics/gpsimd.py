"""GpSimd engine: index generation, affine masks, cross-partition reductions."""

from __future__ import annotations

import numpy as np

from neuronemu._generated import constants as C
from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import arg_value, load_f32, store_f32
from neuronemu.semantics.alu import reduce_rows


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
    dst = ops[arg_value(ins, 0)]
    values = _affine(dst[L.OP_PCOUNT], dst[L.OP_SIZE], arg_value(ins, 1), arg_value(ins, 2),
                     arg_value(ins, 3))
    store_f32(dst, mems, regs, fmt, values.astype(np.float32))
    return L.STATUS_OK


@jit
def affine_select(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, 0)]
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    cmp = arg_value(ins, 2)
    on_false = np.float32(imms[arg_value(ins, 3)])
    value = _affine(data.shape[0], data.shape[1], arg_value(ins, 4), arg_value(ins, 5),
                    arg_value(ins, 6))
    if cmp == C.CMP_EQUAL:
        keep = value == 0
    elif cmp == C.CMP_NOT_EQUAL:
        keep = value != 0
    elif cmp == C.CMP_GREATER:
        keep = value > 0
    elif cmp == C.CMP_GREATER_EQUAL:
        keep = value >= 0
    elif cmp == C.CMP_LESS:
        keep = value < 0
    else:
        keep = value <= 0
    store_f32(dst, mems, regs, fmt, np.where(keep, data, on_false).astype(np.float32))
    return L.STATUS_OK


@jit
def partition_reduce(ins, ops, imms, mems, regs, fmt, table):
    """dst[0, i] = op over p of data[p, i], combining partitions 0, 1, 2, ... in order."""
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    out = reduce_rows(arg_value(ins, 2), data.T.copy(), 1)
    store_f32(ops[arg_value(ins, 0)], mems, regs, fmt, out.T.copy())
    return L.STATUS_OK
