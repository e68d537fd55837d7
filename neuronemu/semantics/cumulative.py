"""Vector engine instructions that fold into the accumulator registers (``reduce_cmd``):
running scans, exp with a running sum, and index-range selection with a running max."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa import codes as C
from neuronemu.isa.args.cumulative import (
    EXPONENTIAL_DST,
    EXPONENTIAL_MAX_VALUE,
    EXPONENTIAL_REDUCE_CMD,
    EXPONENTIAL_REDUCE_INIT,
    EXPONENTIAL_REDUCE_RES,
    EXPONENTIAL_SRC,
    RANGE_SELECT_BOUND0,
    RANGE_SELECT_BOUND1,
    RANGE_SELECT_COMP_OP0,
    RANGE_SELECT_COMP_OP1,
    RANGE_SELECT_DST,
    RANGE_SELECT_ON_FALSE_VALUE,
    RANGE_SELECT_ON_TRUE,
    RANGE_SELECT_RANGE_START,
    RANGE_SELECT_REDUCE_CMD,
    RANGE_SELECT_REDUCE_RES,
    TENSOR_SCALAR_CUMULATIVE_DST,
    TENSOR_SCALAR_CUMULATIVE_IMM0,
    TENSOR_SCALAR_CUMULATIVE_IMM1,
    TENSOR_SCALAR_CUMULATIVE_OP0,
    TENSOR_SCALAR_CUMULATIVE_OP1,
    TENSOR_SCALAR_CUMULATIVE_REDUCE_CMD,
    TENSOR_SCALAR_CUMULATIVE_REVERSE0,
    TENSOR_SCALAR_CUMULATIVE_SRC,
)
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_tag, arg_value, load_f32, scalar_column, store_f32
from neuronemu.numerics import elementary as E
from neuronemu.semantics import accumulate as A
from neuronemu.semantics.alu import binary_scalar


@jit
def _identity(op):
    if op == C.ALU_MULTIPLY:
        return np.float32(1.0)
    if op == C.ALU_MAXIMUM:
        return np.float32(-np.inf)
    if op == C.ALU_MINIMUM:
        return np.float32(np.inf)
    return np.float32(0.0)  # add, subtract


@jit
def tensor_scalar_cumulative(ins, ops, imms, mems, regs, fmt, table):
    """reg = op1(op0(x_i, imm0), reg) (op0(imm0, x_i) with reverse0); dst_i = reg."""
    data = load_f32(ops[arg_value(ins, TENSOR_SCALAR_CUMULATIVE_SRC)], mems, regs, fmt, table)
    op0 = arg_value(ins, TENSOR_SCALAR_CUMULATIVE_OP0)
    op1 = arg_value(ins, TENSOR_SCALAR_CUMULATIVE_OP1)
    imm0 = scalar_column(ins, TENSOR_SCALAR_CUMULATIVE_IMM0, ops, imms, mems, regs, fmt, table,
                         data.shape[0])
    imm1 = scalar_column(ins, TENSOR_SCALAR_CUMULATIVE_IMM1, ops, imms, mems, regs, fmt, table,
                         data.shape[0])
    cmd = arg_value(ins, TENSOR_SCALAR_CUMULATIVE_REDUCE_CMD)
    reverse = arg_value(ins, TENSOR_SCALAR_CUMULATIVE_REVERSE0) != 0
    identity = _identity(op1)
    out = np.empty(data.shape, dtype=np.float32)
    for p in range(data.shape[0]):
        reg = A.start(regs, L.REG_VACC, p, cmd, identity, imm1[p])
        for i in range(data.shape[1]):
            if reverse:
                value = binary_scalar(op0, imm0[p], data[p, i])
            else:
                value = binary_scalar(op0, data[p, i], imm0[p])
            reg = binary_scalar(op1, value, reg)
            out[p, i] = reg
        A.finish(regs, L.REG_VACC, p, cmd, reg, identity)
    store_f32(ops[arg_value(ins, TENSOR_SCALAR_CUMULATIVE_DST)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def exponential(ins, ops, imms, mems, regs, fmt, table):
    """dst = exp(src - max_value): the fp32 difference, exp in float64 rounded once to fp32; the
    running sum adds the fp32 results left to right."""
    data = load_f32(ops[arg_value(ins, EXPONENTIAL_SRC)], mems, regs, fmt, table)
    shift = scalar_column(ins, EXPONENTIAL_MAX_VALUE, ops, imms, mems, regs, fmt, table,
                          data.shape[0])
    cmd = arg_value(ins, EXPONENTIAL_REDUCE_CMD)
    init = np.float32(imms[arg_value(ins, EXPONENTIAL_REDUCE_INIT)])
    rows, n = data.shape
    out = np.empty((rows, n), dtype=np.float32)
    sums = np.empty((rows, 1), dtype=np.float32)
    x, y = np.empty(n), np.empty(n)
    for p in range(rows):
        row, s, o = data[p], shift[p], out[p]
        for i in range(n):
            x[i] = np.float64(np.float32(row[i] - s))
        for i in range(n):   # the vectorised exp; libm where it cannot tell (see elementary)
            y[i] = E.exp(x[i])
        if E.round_decided(y, o, n):
            for i in range(n):
                if E.undecided(y[i]):
                    o[i] = np.float32(np.exp(x[i]))
        total = A.start(regs, L.REG_VACC, p, cmd, 0.0, init)
        for i in range(n):
            total = np.float32(total + o[i])
        sums[p, 0] = total
        A.finish(regs, L.REG_VACC, p, cmd, total, 0.0)
    store_f32(ops[arg_value(ins, EXPONENTIAL_DST)], mems, regs, fmt, out)
    if arg_tag(ins, EXPONENTIAL_REDUCE_RES) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, EXPONENTIAL_REDUCE_RES)], mems, regs, fmt, sums)
    return L.STATUS_OK


@jit
def range_select(ins, ops, imms, mems, regs, fmt, table):
    """Keep element j where cmp0(j + range_start, bound0) and cmp1(j + range_start, bound1)
    (fp32 compares), else on_false_value; the running max folds the results."""
    data = load_f32(ops[arg_value(ins, RANGE_SELECT_ON_TRUE)], mems, regs, fmt, table)
    cmp0, cmp1 = arg_value(ins, RANGE_SELECT_COMP_OP0), arg_value(ins, RANGE_SELECT_COMP_OP1)
    bound0 = scalar_column(ins, RANGE_SELECT_BOUND0, ops, imms, mems, regs, fmt, table,
                           data.shape[0])
    bound1 = scalar_column(ins, RANGE_SELECT_BOUND1, ops, imms, mems, regs, fmt, table,
                           data.shape[0])
    cmd = arg_value(ins, RANGE_SELECT_REDUCE_CMD)
    range_start = np.float32(imms[arg_value(ins, RANGE_SELECT_RANGE_START)])
    fill = np.float32(imms[arg_value(ins, RANGE_SELECT_ON_FALSE_VALUE)])
    out = np.empty(data.shape, dtype=np.float32)
    best = np.empty((data.shape[0], 1), dtype=np.float32)
    for p in range(data.shape[0]):
        reg = A.start(regs, L.REG_VACC, p, cmd, -np.inf, 0.0)
        for j in range(data.shape[1]):
            index = np.float32(np.float32(j) + range_start)
            keep = (binary_scalar(cmp0, index, bound0[p]) != 0.0
                    and binary_scalar(cmp1, index, bound1[p]) != 0.0)
            out[p, j] = data[p, j] if keep else fill
            reg = max(reg, out[p, j])
        best[p, 0] = reg
        A.finish(regs, L.REG_VACC, p, cmd, reg, -np.inf)
    store_f32(ops[arg_value(ins, RANGE_SELECT_DST)], mems, regs, fmt, out)
    if arg_tag(ins, RANGE_SELECT_REDUCE_RES) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, RANGE_SELECT_REDUCE_RES)], mems, regs, fmt, best)
    return L.STATUS_OK
