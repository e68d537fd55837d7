"""Tensor indirection (NeuronCore-v4, NKI's ``t.indirect(index)``): the columns of a tile read
or written at run-time free-dimension offsets. Each group of G partitions (16 for the Vector,
Scalar and GpSimd engines, 32 for the Tensor engine) reads its offset list from its own
partitions of the index tile in snake order: o(k) = indices[G g + k % G, k // G]. Every offset
is checked before anything is written."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa.args.indirection import (
    INDIRECT_GATHER_COUNT,
    INDIRECT_GATHER_DATA,
    INDIRECT_GATHER_DST,
    INDIRECT_GATHER_GROUP,
    INDIRECT_GATHER_INDICES,
    INDIRECT_SCATTER_COUNT,
    INDIRECT_SCATTER_DST,
    INDIRECT_SCATTER_GROUP,
    INDIRECT_SCATTER_INDICES,
    INDIRECT_SCATTER_SRC,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_value, load_bits, store_bits
from neuronemu.semantics.alu import to_int


@jit
def _offsets(indices, group, count, limit, regs):
    """The [P / group, count] offsets of each group, or an empty array after recording the
    first offset outside 0 .. limit - 1 in the fault registers."""
    groups = indices.shape[0] // group
    out = np.empty((groups, count), dtype=np.int64)
    for g in range(groups):
        for k in range(count):
            p = g * group + k % group
            j = k // group
            v = indices[p, j]
            if v < 0 or v >= limit:
                regs[L.REG_FAULT_INFO] = p
                regs[L.REG_FAULT_INFO + 1] = v
                regs[L.REG_FAULT_INFO + 2] = limit
                regs[L.REG_FAULT_INFO + 3] = j
                return np.empty((0, 0), dtype=np.int64)
            out[g, k] = v
    return out


@jit
def _group_offsets(ins, ops, mems, regs, fmt, indices_arg, group_arg, count_arg, limit):
    """(G, the [P / G, count] offsets of the instruction's index tile; empty after a fault)."""
    index = ops[arg_value(ins, indices_arg)]
    indices = to_int(load_bits(index, mems, regs), index[L.OP_DTYPE], fmt)
    group = arg_value(ins, group_arg)
    count = arg_value(ins, count_arg)
    if count == 0:
        count = group * indices.shape[1]
    return group, _offsets(indices, group, count, limit, regs)


@jit
def indirect_gather(ins, ops, imms, mems, regs, fmt, table):
    """dst[q, k] = data[q, o(k)] for q's group (raw bits)."""
    dst = ops[arg_value(ins, INDIRECT_GATHER_DST)]
    data = load_bits(ops[arg_value(ins, INDIRECT_GATHER_DATA)], mems, regs)
    group, offsets = _group_offsets(ins, ops, mems, regs, fmt, INDIRECT_GATHER_INDICES,
                                    INDIRECT_GATHER_GROUP, INDIRECT_GATHER_COUNT, data.shape[1])
    if offsets.shape[0] == 0:
        return L.STATUS_BAD_INDEX
    count = offsets.shape[1]
    out = np.empty((data.shape[0], count), dtype=np.int64)
    for q in range(data.shape[0]):
        g = q // group
        for k in range(count):
            out[q, k] = data[q, offsets[g, k]]
    store_bits(dst, mems, regs, out)
    return L.STATUS_OK


@jit
def indirect_scatter(ins, ops, imms, mems, regs, fmt, table):
    """dst[q, o(k)] = src[q, k] for q's group, k in order (raw bits); the rest of dst stays."""
    dst_op = ops[arg_value(ins, INDIRECT_SCATTER_DST)]
    dst = load_bits(dst_op, mems, regs)
    src = load_bits(ops[arg_value(ins, INDIRECT_SCATTER_SRC)], mems, regs)
    group, offsets = _group_offsets(ins, ops, mems, regs, fmt, INDIRECT_SCATTER_INDICES,
                                    INDIRECT_SCATTER_GROUP, INDIRECT_SCATTER_COUNT, dst.shape[1])
    if offsets.shape[0] == 0:
        return L.STATUS_BAD_INDEX
    for q in range(dst.shape[0]):
        g = q // group
        for k in range(offsets.shape[1]):
            dst[q, offsets[g, k]] = src[q, k]
    store_bits(dst_op, mems, regs, dst)
    return L.STATUS_OK
