# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/search.py (see __init__)."""

from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import search


def search__find_index8(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return search.find_index8(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def search__match_replace8(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return search.match_replace8(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def search__max8(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return search.max8(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def search__select_reduce(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return search.select_reduce(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def search__stream_shuffle(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return search.stream_shuffle(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
