"""The calling convention of instruction kernels (see neuronemu.exec.kernels for why kernels
are separate C-callable units): the signature, the view of a kernel's pointer arguments as the
arrays a semantics function takes, and the indirect call the interpreter loop makes.

A kernel takes pointers to the instruction row, the operand table, the float immediates, the
three memories (SBUF, PSUM, HBM), the registers, the dtype format table, the decode table and
``dims`` (int64 [DIMS_WIDTH]: the sizes of those arrays), and returns a status.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, types
from numba.extending import intrinsic

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L

# dims: sizes of the arrays behind the pointers
D_OPS, D_IMMS, D_SBUF, D_PSUM, D_HBM, D_FMT, D_TABLE, D_REGS = 0, 1, 2, 4, 6, 8, 10, 12
DIMS_WIDTH = 13

_P64, _PF64, _PU8 = types.CPointer(types.int64), types.CPointer(types.float64), types.CPointer(
    types.uint8)
_PF32 = types.CPointer(types.float32)
SIGNATURE = types.int64(_P64, _P64, _PF64, _PU8, _PU8, _PU8, _P64, _P64, _PF32, _P64)
_ARGS = 10


@jit(inline="always")
def views(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    """The arrays a semantics function takes, rebuilt from a kernel's pointer arguments."""
    dims = carray(dims_p, (DIMS_WIDTH,))
    ins = carray(ins_p, (L.INSTR_WIDTH,))
    ops = carray(ops_p, (dims[D_OPS], L.OP_WIDTH))
    imms = carray(imms_p, (dims[D_IMMS],))
    mems = (carray(sbuf_p, (dims[D_SBUF], dims[D_SBUF + 1])),
            carray(psum_p, (dims[D_PSUM], dims[D_PSUM + 1])),
            carray(hbm_p, (dims[D_HBM], dims[D_HBM + 1])))
    regs = carray(regs_p, (dims[D_REGS],))
    fmt = carray(fmt_p, (dims[D_FMT], dims[D_FMT + 1]))
    table = carray(table_p, (dims[D_TABLE], dims[D_TABLE + 1]))
    return ins, ops, imms, mems, regs, fmt, table


@intrinsic
def call_kernel(typingctx, address, ins, ops, imms, sbuf, psum, hbm, regs, fmt, table, dims):
    """Call the kernel at ``address`` (a SIGNATURE cfunc) with the arrays' data addresses."""
    sig = types.int64(*([types.int64] * (_ARGS + 1)))

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        pointee = [i64, i64, ir.DoubleType(), ir.IntType(8), ir.IntType(8), ir.IntType(8), i64,
                   i64, ir.FloatType(), i64]
        fnty = ir.FunctionType(i64, [t.as_pointer() for t in pointee])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.inttoptr(a, t.as_pointer())
                                 for a, t in zip(args[1:], pointee)])

    return sig, codegen


def dims_of(ops, imms, mems, regs, fmt, table) -> np.ndarray:
    dims = np.zeros(DIMS_WIDTH, dtype=np.int64)
    dims[D_OPS], dims[D_IMMS], dims[D_REGS] = ops.shape[0], imms.shape[0], regs.shape[0]
    for slot, array in ((D_SBUF, mems[0]), (D_PSUM, mems[1]), (D_HBM, mems[2]), (D_FMT, fmt),
                        (D_TABLE, table)):
        if not array.flags.c_contiguous:
            raise ValueError("kernel arrays must be C-contiguous")
        dims[slot], dims[slot + 1] = array.shape
    return dims


@intrinsic
def borrowed(typingctx, array):
    """``array`` without its owner: the same data, shape and strides, no meminfo. Views and
    rows taken of it are then not reference counted (numba's refcounts are atomic increments,
    several per instruction in the interpreter loop); the caller keeps ``array`` alive."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        cls = context.make_array(array)
        source = cls(context, builder, value=args[0])
        out = cls(context, builder)
        context.populate_array(out, data=source.data, shape=source.shape,
                               strides=source.strides, itemsize=source.itemsize, meminfo=None,
                               parent=None)
        return out._getvalue()

    return array(array), codegen


@intrinsic
def keep_alive(typingctx, array):
    """A use of ``array`` that does nothing: numba frees an array after its last use, so a
    function that works through ``borrowed(array)`` ends with ``keep_alive(array)``."""
    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(array), codegen
