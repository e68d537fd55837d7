"""Scalar engine: activation = func(data * scale + bias) with an optional add-reduction."""

from __future__ import annotations

import math

import numpy as np

from neuronemu._generated import constants as C
from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import arg_tag, arg_value, load_f32, scalar_column, store_f32
from neuronemu.semantics import accumulate as A
from neuronemu.semantics.alu import binary

# Documented valid input ranges (ARCHITECTURE.md 4.8, the NKI activation function table):
# name -> (low, high, kind); "interval": low <= x <= high, "magnitude": low <= |x| <= high.
# Outside them the hardware's result is not specified, so a run warns (it still computes the
# float64 function).
INPUT_RANGES = {
    "log": (2.0**-64, 2.0**64, "interval"),
    "sin": (-math.pi, math.pi, "interval"),
    "arctan": (-math.pi / 2, math.pi / 2, "interval"),
    "sqrt": (2.0**-116, 2.0**118, "interval"),
    "rsqrt": (2.0**-87, 2.0**97, "interval"),
    "reciprocal": (2.0**-42, 2.0**42, "magnitude"),
}
_NAMES = {"log": C.ACT_LOG, "sin": C.ACT_SIN, "arctan": C.ACT_ARCTAN, "sqrt": C.ACT_SQRT,
          "rsqrt": C.ACT_RSQRT, "reciprocal": C.ACT_RECIPROCAL}
# rows by function code: (checked, low, high, magnitude)
_RANGE_TABLE = np.zeros((64, 4), dtype=np.float64)
for _name, (_lo, _hi, _kind) in INPUT_RANGES.items():
    _RANGE_TABLE[_NAMES[_name]] = (1.0, _lo, _hi, 1.0 if _kind == "magnitude" else 0.0)


@jit
def first_out_of_range(func, x):
    """Index (flattened) of the first input outside func's documented range, or -1. NaN
    inputs are not flagged (they propagate)."""
    row = _RANGE_TABLE[func]
    if row[0] == 0.0:
        return -1
    flat = x.ravel()
    for i in range(flat.size):
        v = np.float64(flat[i])
        if row[3] != 0.0:
            v = abs(v)
        if v < row[1] or v > row[2]:
            return i
    return -1


@jit
def apply_function(func, x, alpha):
    """func(x) for an fp32 array: evaluated in float64 and rounded once to fp32.

    The hardware uses piecewise-polynomial tables whose exact error is not public; a correctly
    rounded result is the documented, reproducible stand-in (see docs/numerics.md)."""
    v = x.astype(np.float64)
    if func == C.ACT_COPY:
        return x.copy()
    if func == C.ACT_EXP:
        y = np.exp(v)
    elif func == C.ACT_LOG:
        y = np.log(v)
    elif func == C.ACT_TANH:
        y = np.tanh(v)
    elif func == C.ACT_SIGMOID:
        y = 1.0 / (1.0 + np.exp(-v))
    elif func == C.ACT_RELU:
        y = np.maximum(v, 0.0)
    elif func == C.ACT_SILU:
        y = v / (1.0 + np.exp(-v))
    elif func == C.ACT_SQRT:
        y = np.sqrt(v)
    elif func == C.ACT_RSQRT:
        y = 1.0 / np.sqrt(v)
    elif func == C.ACT_RECIPROCAL:
        y = 1.0 / v
    elif func == C.ACT_SQUARE:
        y = v * v
    elif func == C.ACT_ABS:
        y = np.abs(v)
    elif func == C.ACT_SIGN:
        y = np.sign(v)
    elif func == C.ACT_SOFTPLUS:
        y = np.logaddexp(0.0, v)
    elif func == C.ACT_SIN:
        y = np.sin(v)
    elif func == C.ACT_ARCTAN:
        y = np.arctan(v)
    elif func == C.ACT_GELU_APPRX_TANH:
        # 0.5 v (1 + tanh(z)) written as v / (1 + exp(-2z)): the same function without the
        # cancellation of 1 + tanh(z) for negative v (which cost ~20 fp32 ulps near v = -6)
        z = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        y = v / (1.0 + np.exp(-2.0 * z))
    elif func == C.ACT_MISH:
        y = v * np.tanh(np.logaddexp(0.0, v))
    elif func == C.ACT_GELU_APPRX_SIGMOID:
        y = v / (1.0 + np.exp(-1.702 * v))
    elif func == C.ACT_GELU_APPRX_SIGMOID_DX:
        s = 1.0 / (1.0 + np.exp(-1.702 * v))
        y = s + 1.702 * v * s * (1.0 - s)
    elif func == C.ACT_SILU_DX:
        s = 1.0 / (1.0 + np.exp(-v))
        y = s * (1.0 + v * (1.0 - s))
    elif func == C.ACT_ERF_DX:
        y = 1.1283791670955126 * np.exp(-v * v)  # 2 / sqrt(pi)
    elif func == C.ACT_PRELU:
        y = np.where(v > 0.0, v, np.float64(alpha) * v)
    else:  # gelu and erf need math.erf, which numba offers for scalars only
        y = np.empty_like(v)
        flat_v = v.ravel()
        flat_y = y.ravel()
        for i in range(flat_v.size):
            if func == C.ACT_ERF:
                flat_y[i] = math.erf(flat_v[i])
            elif func == C.ACT_GELU_DX:
                t = flat_v[i]
                flat_y[i] = (0.5 * math.erfc(-t / math.sqrt(2.0))
                             + t * math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi))
            else:  # 1 + erf(t) = erfc(-t), without cancellation for negative inputs
                flat_y[i] = 0.5 * flat_v[i] * math.erfc(-flat_v[i] / math.sqrt(2.0))
    return y.astype(np.float32)


@jit
def checked_function(func, x, alpha, regs):
    """apply_function, noting the first instruction (and its first input) that gives func an
    input outside its documented range, and how many do."""
    bad = first_out_of_range(func, x)
    if bad >= 0:
        if regs[L.REG_RANGE_COUNT] == 0:
            regs[L.REG_RANGE_PC] = regs[L.REG_PC] - 1
            word = np.empty(1, dtype=np.float32)
            word[0] = x.ravel()[bad]
            regs[L.REG_RANGE_BITS] = np.int64(word.view(np.uint32)[0])
        regs[L.REG_RANGE_COUNT] += 1
    return apply_function(func, x, alpha)


@jit
def _activated(ins, ops, imms, mems, regs, fmt, table):
    """dst = func(data * scale + bias) for activation and activation_reduce (arguments dst 0,
    data 1, func 2, scale 3, bias 4, alpha 6); returns the fp32 outputs."""
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    partitions = data.shape[0]
    scale = scalar_column(ins, 3, ops, imms, mems, regs, fmt, table, partitions).reshape(-1, 1)
    bias = scalar_column(ins, 4, ops, imms, mems, regs, fmt, table, partitions).reshape(-1, 1)
    # two fp32 roundings (multiply, then add), no fused multiply-add
    pre = (data * scale).astype(np.float32)
    pre = (pre + bias).astype(np.float32)
    out = checked_function(arg_value(ins, 2), pre, imms[arg_value(ins, 6)], regs)
    store_f32(ops[arg_value(ins, 0)], mems, regs, fmt, out)
    return out


@jit
def activation(ins, ops, imms, mems, regs, fmt, table):
    out = _activated(ins, ops, imms, mems, regs, fmt, table)
    if arg_tag(ins, 5) == L.TAG_OPERAND:  # an fp32 sum in element order; registers untouched
        sums = _fold(out, C.REDUCE_ADD, A.IDLE, regs)
        store_f32(ops[arg_value(ins, 5)], mems, regs, fmt, sums)
    return L.STATUS_OK


@jit
def activation_reduce(ins, ops, imms, mems, regs, fmt, table):
    """activation, then reset the Scalar accumulator registers and fold the outputs into them
    with reduce_op; reduce_res gets the registers' final value."""
    out = _activated(ins, ops, imms, mems, regs, fmt, table)
    folded = _fold(out, arg_value(ins, 7), A.RESET_REDUCE, regs)
    store_f32(ops[arg_value(ins, 5)], mems, regs, fmt, folded)
    return L.STATUS_OK


@jit
def _fold(out, reduce_op, cmd, regs):
    """Fold each partition's outputs, in element order, into the Scalar accumulator registers as
    cmd says; returns the folded values [P, 1]."""
    identity = _reduce_identity(reduce_op)
    folded = np.empty((out.shape[0], 1), dtype=np.float32)
    for p in range(out.shape[0]):
        acc = A.start(regs, L.REG_SACC, p, cmd, identity, 0.0)
        for i in range(out.shape[1]):
            if reduce_op == C.REDUCE_MAXIMUM:
                acc = max(acc, out[p, i])
            elif reduce_op == C.REDUCE_MINIMUM:
                acc = min(acc, out[p, i])
            else:
                acc = np.float32(acc + out[p, i])
        folded[p, 0] = acc
        A.finish(regs, L.REG_SACC, p, cmd, acc, identity)
    return folded


@jit
def _reduce_identity(op):
    if op == C.REDUCE_MAXIMUM:
        return np.float32(-np.inf)
    if op == C.REDUCE_MINIMUM:
        return np.float32(np.inf)
    return np.float32(0.0)


@jit
def activate2(ins, ops, imms, mems, regs, fmt, table):
    """func((data op0 imm0) op1 imm1), each stage rounded to fp32, then an optional fold into the
    Scalar engine's accumulator registers with reduce_op (add, maximum or minimum)."""
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    partitions = data.shape[0]
    imm0 = scalar_column(ins, 3, ops, imms, mems, regs, fmt, table, partitions).reshape(-1, 1)
    imm1 = scalar_column(ins, 4, ops, imms, mems, regs, fmt, table, partitions).reshape(-1, 1)
    imm0 = imm0 * np.ones_like(data)
    imm1 = imm1 * np.ones_like(data)
    op0, op1 = arg_value(ins, 5), arg_value(ins, 6)
    x = data  # a bypass stage passes its input through, reversed or not
    if op0 != C.ALU_BYPASS:
        x = binary(op0, imm0, x) if arg_value(ins, 8) != 0 else binary(op0, x, imm0)
    if op1 != C.ALU_BYPASS:
        x = binary(op1, imm1, x) if arg_value(ins, 9) != 0 else binary(op1, x, imm1)
    out = checked_function(arg_value(ins, 2), x, imms[arg_value(ins, 7)], regs)
    store_f32(ops[arg_value(ins, 0)], mems, regs, fmt, out)
    folded = _fold(out, arg_value(ins, 11), arg_value(ins, 12), regs)
    if arg_tag(ins, 10) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, 10)], mems, regs, fmt, folded)
    return L.STATUS_OK
