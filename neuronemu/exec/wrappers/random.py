# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/random.py (see __init__)."""

from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import random


def random__dropout(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.dropout(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def random__rand2(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.rand2(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def random__rand_get_state(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.rand_get_state(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def random__rand_set_state(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.rand_set_state(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def random__rng(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.rng(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def random__set_rng_seed(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return random.set_rng_seed(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
