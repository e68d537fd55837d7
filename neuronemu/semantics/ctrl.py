"""Sequencer control: integer registers and branches (next pc lives in regs[REG_PC])."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_tag, arg_value, load_bits, store_bits
from neuronemu.semantics.alu import to_int


@jit(inline="always")
def _operand(ins, slot, regs):
    if arg_tag(ins, slot) == L.TAG_REG:
        return regs[arg_value(ins, slot)]
    return arg_value(ins, slot)


@jit
def mov(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs)
    return L.STATUS_OK


@jit
def add(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs) + _operand(ins, 2, regs)
    return L.STATUS_OK


@jit
def sub(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs) - _operand(ins, 2, regs)
    return L.STATUS_OK


@jit
def mul(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs) * _operand(ins, 2, regs)
    return L.STATUS_OK


@jit
def blt(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, 0, regs) < _operand(ins, 1, regs):
        regs[L.REG_PC] = arg_value(ins, 2)
    return L.STATUS_OK


@jit
def bge(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, 0, regs) >= _operand(ins, 1, regs):
        regs[L.REG_PC] = arg_value(ins, 2)
    return L.STATUS_OK


@jit
def bne(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, 0, regs) != _operand(ins, 1, regs):
        regs[L.REG_PC] = arg_value(ins, 2)
    return L.STATUS_OK


@jit
def beq(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, 0, regs) == _operand(ins, 1, regs):
        regs[L.REG_PC] = arg_value(ins, 2)
    return L.STATUS_OK


@jit
def jmp(ins, ops, imms, mems, regs, fmt, table):
    regs[L.REG_PC] = arg_value(ins, 0)
    return L.STATUS_OK


@jit
def div(ins, ops, imms, mems, regs, fmt, table):
    b = _operand(ins, 2, regs)
    if b == 0:
        return L.STATUS_DIV_ZERO
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs) // b  # numba: floor division, as Python
    return L.STATUS_OK


@jit
def rem(ins, ops, imms, mems, regs, fmt, table):
    b = _operand(ins, 2, regs)
    if b == 0:
        return L.STATUS_DIV_ZERO
    regs[arg_value(ins, 0)] = _operand(ins, 1, regs) % b
    return L.STATUS_OK


@jit
def rank(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = regs[L.REG_RANK]
    return L.STATUS_OK


@jit
def world(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, 0)] = regs[L.REG_WORLD]
    return L.STATUS_OK


@jit
def load(ins, ops, imms, mems, regs, fmt, table):
    src = ops[arg_value(ins, 1)]
    regs[arg_value(ins, 0)] = to_int(load_bits(src, mems, regs), src[L.OP_DTYPE], fmt)[0, 0]
    return L.STATUS_OK


@jit
def store(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, 0)]
    width = 8 * dst[L.OP_ITEMSIZE]
    bits = np.empty((1, 1), dtype=np.int64)
    bits[0, 0] = regs[arg_value(ins, 1)] & ((np.int64(1) << width) - 1)
    store_bits(dst, mems, regs, bits)
    return L.STATUS_OK
