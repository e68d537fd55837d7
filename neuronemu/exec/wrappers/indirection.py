# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/indirection.py (see __init__)."""

from neuronemu.compiled.jit import inlined
from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import indirection

# each semantics function compiled inside its kernel, not also on its own
# (neuronemu.compiled.jit.inlined)
_indirect_gather = inlined(indirection.indirect_gather)
_indirect_scatter = inlined(indirection.indirect_scatter)


def indirection__indirect_gather(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return _indirect_gather(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def indirection__indirect_scatter(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return _indirect_scatter(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
