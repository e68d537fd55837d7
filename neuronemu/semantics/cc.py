"""Collective communication. The multi-chip driver (neuronemu/multichip/spmd.py) moves the data
between the ranks' memories and times it: the interpreter loop stops at a cc.* instruction
(cost formula ``network``, status STATUS_YIELD) and the driver carries it out.

The exception is a collective on a world of one rank in sync mode ``auto`` (the core decides:
exec/core.py, ``_yields``): there it is a copy of src to dst, and the loop runs these functions
as it runs a DMA, then times the copy as the driver would (timing/model.py,
``local_collective``). Why: each return to the driver cost 60-170 us of Python for what is a
copy (issue 29's per-instruction table); a kernel written for many ranks is often tried on one
first. Each function returns STATUS_YIELD, writing nothing, where the driver has more to say: a
replica group larger than the world (its error), tiles of different shapes (its error), and
reductions over dtypes whose values the driver carries through float64 (every float but fp32:
it quiets a signalling NaN on the way), so that the two paths give the same bits."""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.isa.args.cc import (
    ALL_GATHER_DST,
    ALL_GATHER_GROUP_SIZE,
    ALL_GATHER_GROUP_STRIDE,
    ALL_GATHER_SRC,
    ALL_REDUCE_DST,
    ALL_REDUCE_GROUP_SIZE,
    ALL_REDUCE_GROUP_STRIDE,
    ALL_REDUCE_SRC,
    ALL_TO_ALL_DST,
    ALL_TO_ALL_GROUP_SIZE,
    ALL_TO_ALL_GROUP_STRIDE,
    ALL_TO_ALL_SRC,
    PERMUTE_DST,
    PERMUTE_GROUP_SIZE,
    PERMUTE_GROUP_STRIDE,
    PERMUTE_SRC,
    REDUCE_SCATTER_DST,
    REDUCE_SCATTER_GROUP_SIZE,
    REDUCE_SCATTER_GROUP_STRIDE,
    REDUCE_SCATTER_SRC,
)
from neuronemu.isa.dtypes import F_KIND, KINDS
from neuronemu.isa.dtypes import get as _dtype
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_tag, arg_value, copy_bits, same_shape

_F32 = _dtype("float32").code
_FLOAT = KINDS["float"]
_BOOL = KINDS["bool"]


@jit
def _handled_by_driver(ins, ops, imms, mems, regs, fmt, table):
    return L.STATUS_YIELD


send = recv = sendrecv = barrier = all_to_all_v = all_gather_v = _handled_by_driver


@jit(inline="always")
def _at_most_one(ins, slot):
    """An int argument that is 0 or 1 (group_size, group_stride: a group of this one rank)."""
    return arg_tag(ins, slot) != L.TAG_REG and arg_value(ins, slot) <= 1


@jit
def _local_copy(ins, ops, mems, regs, fmt, dst_slot, src_slot, size_slot, stride_slot,
                reduction):
    """dst = src on a world of one rank, or STATUS_YIELD (nothing written) for the driver.
    ``reduction``: only where the driver keeps the values bit for bit, fp32 (viewed as float32)
    and integers (through int64)."""
    dst, src = ops[arg_value(ins, dst_slot)], ops[arg_value(ins, src_slot)]
    kind = fmt[src[L.OP_DTYPE], F_KIND]
    exact = src[L.OP_DTYPE] == _F32 or (kind != _FLOAT and kind != _BOOL)
    if (regs[L.REG_WORLD] != 1 or not _at_most_one(ins, size_slot)
            or not _at_most_one(ins, stride_slot) or not same_shape(dst, src)
            or dst[L.OP_DTYPE] != src[L.OP_DTYPE] or (reduction and not exact)):
        return L.STATUS_YIELD
    copy_bits(dst, src, mems, regs)
    return L.STATUS_OK


@jit
def all_reduce(ins, ops, imms, mems, regs, fmt, table):
    return _local_copy(ins, ops, mems, regs, fmt, ALL_REDUCE_DST, ALL_REDUCE_SRC,
                       ALL_REDUCE_GROUP_SIZE, ALL_REDUCE_GROUP_STRIDE, True)


@jit
def reduce_scatter(ins, ops, imms, mems, regs, fmt, table):
    return _local_copy(ins, ops, mems, regs, fmt, REDUCE_SCATTER_DST, REDUCE_SCATTER_SRC,
                       REDUCE_SCATTER_GROUP_SIZE, REDUCE_SCATTER_GROUP_STRIDE, True)


@jit
def all_gather(ins, ops, imms, mems, regs, fmt, table):
    return _local_copy(ins, ops, mems, regs, fmt, ALL_GATHER_DST, ALL_GATHER_SRC,
                       ALL_GATHER_GROUP_SIZE, ALL_GATHER_GROUP_STRIDE, False)


@jit
def all_to_all(ins, ops, imms, mems, regs, fmt, table):
    return _local_copy(ins, ops, mems, regs, fmt, ALL_TO_ALL_DST, ALL_TO_ALL_SRC,
                       ALL_TO_ALL_GROUP_SIZE, ALL_TO_ALL_GROUP_STRIDE, False)


@jit
def permute(ins, ops, imms, mems, regs, fmt, table):
    """Any shift of a group of one rank is the rank itself."""
    return _local_copy(ins, ops, mems, regs, fmt, PERMUTE_DST, PERMUTE_SRC, PERMUTE_GROUP_SIZE,
                       PERMUTE_GROUP_STRIDE, False)
