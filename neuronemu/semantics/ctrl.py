"""Sequencer control: integer registers and branches (next pc lives in regs[REG_PC])."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa.args.ctrl import (
    ADD_B,
    ADD_RA,
    ADD_RD,
    BEQ_A,
    BEQ_B,
    BEQ_TARGET,
    BGE_A,
    BGE_B,
    BGE_TARGET,
    BLT_A,
    BLT_B,
    BLT_TARGET,
    BNE_A,
    BNE_B,
    BNE_TARGET,
    DIV_B,
    DIV_RA,
    DIV_RD,
    JMP_TARGET,
    LOAD_RD,
    LOAD_SRC,
    MOV_RD,
    MOV_VALUE,
    MUL_B,
    MUL_RA,
    MUL_RD,
    RANK_RD,
    REM_B,
    REM_RA,
    REM_RD,
    STORE_DST,
    STORE_RA,
    SUB_B,
    SUB_RA,
    SUB_RD,
    WORLD_RD,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_tag, arg_value, load_bits, store_bits
from neuronemu.semantics.alu import to_int


@jit
def _operand(ins, slot, regs):
    if arg_tag(ins, slot) == L.TAG_REG:
        return regs[arg_value(ins, slot)]
    return arg_value(ins, slot)


@jit
def mov(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, MOV_RD)] = _operand(ins, MOV_VALUE, regs)
    return L.STATUS_OK


@jit
def add(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, ADD_RD)] = _operand(ins, ADD_RA, regs) + _operand(ins, ADD_B, regs)
    return L.STATUS_OK


@jit
def sub(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, SUB_RD)] = _operand(ins, SUB_RA, regs) - _operand(ins, SUB_B, regs)
    return L.STATUS_OK


@jit
def mul(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, MUL_RD)] = _operand(ins, MUL_RA, regs) * _operand(ins, MUL_B, regs)
    return L.STATUS_OK


@jit
def blt(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, BLT_A, regs) < _operand(ins, BLT_B, regs):
        regs[L.REG_PC] = arg_value(ins, BLT_TARGET)
    return L.STATUS_OK


@jit
def bge(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, BGE_A, regs) >= _operand(ins, BGE_B, regs):
        regs[L.REG_PC] = arg_value(ins, BGE_TARGET)
    return L.STATUS_OK


@jit
def bne(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, BNE_A, regs) != _operand(ins, BNE_B, regs):
        regs[L.REG_PC] = arg_value(ins, BNE_TARGET)
    return L.STATUS_OK


@jit
def beq(ins, ops, imms, mems, regs, fmt, table):
    if _operand(ins, BEQ_A, regs) == _operand(ins, BEQ_B, regs):
        regs[L.REG_PC] = arg_value(ins, BEQ_TARGET)
    return L.STATUS_OK


@jit
def jmp(ins, ops, imms, mems, regs, fmt, table):
    regs[L.REG_PC] = arg_value(ins, JMP_TARGET)
    return L.STATUS_OK


@jit
def div(ins, ops, imms, mems, regs, fmt, table):
    b = _operand(ins, DIV_B, regs)
    if b == 0:
        return L.STATUS_DIV_ZERO
    # numba: floor division, as Python
    regs[arg_value(ins, DIV_RD)] = _operand(ins, DIV_RA, regs) // b
    return L.STATUS_OK


@jit
def rem(ins, ops, imms, mems, regs, fmt, table):
    b = _operand(ins, REM_B, regs)
    if b == 0:
        return L.STATUS_DIV_ZERO
    regs[arg_value(ins, REM_RD)] = _operand(ins, REM_RA, regs) % b
    return L.STATUS_OK


@jit
def rank(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, RANK_RD)] = regs[L.REG_RANK]
    return L.STATUS_OK


@jit
def world(ins, ops, imms, mems, regs, fmt, table):
    regs[arg_value(ins, WORLD_RD)] = regs[L.REG_WORLD]
    return L.STATUS_OK


@jit
def load(ins, ops, imms, mems, regs, fmt, table):
    src = ops[arg_value(ins, LOAD_SRC)]
    regs[arg_value(ins, LOAD_RD)] = to_int(load_bits(src, mems, regs), src[L.OP_DTYPE], fmt)[0, 0]
    return L.STATUS_OK


@jit
def store(ins, ops, imms, mems, regs, fmt, table):
    dst = ops[arg_value(ins, STORE_DST)]
    width = 8 * dst[L.OP_ITEMSIZE]
    bits = np.empty((1, 1), dtype=np.int64)
    bits[0, 0] = regs[arg_value(ins, STORE_RA)] & ((np.int64(1) << width) - 1)
    store_bits(dst, mems, regs, bits)
    return L.STATUS_OK
