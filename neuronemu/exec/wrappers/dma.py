# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/dma.py (see __init__)."""

from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import dma


def dma__accumulate(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.accumulate(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__compress(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.compress(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__compute(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.compute(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__copy(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.copy(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__copy_same(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.copy_same(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__decompress(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.decompress(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__gather(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.gather(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__scatter(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.scatter(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def dma__transpose(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return dma.transpose(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
