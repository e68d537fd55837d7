# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/gpsimd.py (see __init__)."""

from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import gpsimd


def gpsimd__affine_select(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.affine_select(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__iota(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.iota(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__local_gather(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.local_gather(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__n_gather(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.n_gather(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__nonzero_with_count(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.nonzero_with_count(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__partition_reduce(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.partition_reduce(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__sequence_bounds(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.sequence_bounds(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def gpsimd__topk(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return gpsimd.topk(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
