"""``viewed(array, dtype)``: ``array.view(dtype)`` for the C-contiguous arrays of compiled code.

Why not numba's own ``view``: since numba 0.59 it first calls an overload that checks the two
types are compatible, compiled once per pair of array type and dtype (eight pairs in
flash_attention_causal's kernels: 1.25 s of its first run, 0.7 s of vector_add's), and run on
every call. Every view neuronemu's kernels take is of a C-contiguous array (a memory, a fresh
``np.empty``) whose last dimension holds whole elements of the new dtype, so the new shape
and strides follow without a check: the last dimension scaled by the item sizes, the other
strides unchanged.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic


@intrinsic
def viewed(typingctx, array, dtype):
    """The bytes of C-contiguous ``array`` as elements of ``dtype`` (a numpy scalar type), the
    last dimension's length times the old item size over the new one."""
    if not (isinstance(array, types.Array) and array.layout == "C"
            and isinstance(dtype, (types.DTypeSpec, types.NumberClass))):
        return None
    out_type = array.copy(dtype=dtype.dtype, layout="C")

    def codegen(context, builder, signature, args):
        source = context.make_array(array)(context, builder, value=args[0])
        out = context.make_array(out_type)(context, builder)
        intp = context.get_value_type(types.intp)
        old = context.get_abi_sizeof(context.get_data_type(array.dtype))
        new = context.get_abi_sizeof(context.get_data_type(out_type.dtype))
        shape = cgutils.unpack_tuple(builder, source.shape, array.ndim)
        strides = cgutils.unpack_tuple(builder, source.strides, array.ndim)
        shape[-1] = builder.udiv(builder.mul(shape[-1], ir.Constant(intp, old)),
                                 ir.Constant(intp, new))
        strides[-1] = ir.Constant(intp, new)
        context.populate_array(out, data=builder.bitcast(source.data, out.data.type),
                               shape=shape, strides=strides, itemsize=ir.Constant(intp, new),
                               meminfo=source.meminfo, parent=source.parent)
        return impl_ret_borrowed(context, builder, out_type, out._getvalue())

    return out_type(array, dtype), codegen
