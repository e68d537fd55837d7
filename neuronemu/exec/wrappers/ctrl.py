# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.

"""Kernel wrappers of neuronemu/semantics/ctrl.py (see __init__)."""

from neuronemu.machine import layout as L
from neuronemu.machine.abi import views
from neuronemu.semantics import ctrl


def ctrl__add(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.add(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__beq(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.beq(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__bge(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.bge(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__blt(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.blt(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__bne(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.bne(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__div(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.div(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__jmp(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.jmp(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__load(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.load(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__mov(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.mov(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__mul(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.mul(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__rank(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.rank(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__rem(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.rem(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__store(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.store(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__sub(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.sub(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR


def ctrl__world(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p):
    ins, ops, imms, mems, regs, fmt, table = views(
        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
    try:
        return ctrl.world(ins, ops, imms, mems, regs, fmt, table)
    except Exception:  # a C callback cannot raise: report it as a status
        return L.STATUS_KERNEL_ERROR
