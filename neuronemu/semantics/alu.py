"""The ALU operators of tensor_tensor / tensor_scalar and the reductions, on fp32 arrays.

The switch on the operator sits outside the element loops (numpy array expressions), because a
per-element switch is ~10x slower in numba. Comparisons yield 1.0 / 0.0.
"""

from __future__ import annotations

import numpy as np

from neuronemu._generated import constants as C
from neuronemu.exec.jit import jit


@jit
def binary(op, a, b):
    """a op b elementwise in fp32; a and b are float32 arrays of broadcastable shapes."""
    if op == C.ALU_ADD:
        out = a + b
    elif op == C.ALU_SUBTRACT:
        out = a - b
    elif op == C.ALU_MULTIPLY:
        out = a * b
    elif op == C.ALU_DIVIDE:
        out = a / b
    elif op == C.ALU_MAXIMUM:
        out = np.maximum(a, b)
    elif op == C.ALU_MINIMUM:
        out = np.minimum(a, b)
    elif op == C.ALU_EQUAL:
        out = (a == b).astype(np.float32)
    elif op == C.ALU_NOT_EQUAL:
        out = (a != b).astype(np.float32)
    elif op == C.ALU_GREATER:
        out = (a > b).astype(np.float32)
    elif op == C.ALU_GREATER_EQUAL:
        out = (a >= b).astype(np.float32)
    elif op == C.ALU_LESS:
        out = (a < b).astype(np.float32)
    elif op == C.ALU_LESS_EQUAL:
        out = (a <= b).astype(np.float32)
    elif op == C.ALU_ABS_MAX:
        out = np.maximum(np.abs(a), np.abs(b))
    elif op == C.ALU_ABS_MIN:
        out = np.minimum(np.abs(a), np.abs(b))
    elif op == C.ALU_POWER:
        # fp32 result of the correctly rounded double-precision power
        out = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    else:  # bypass: the first operand passes through (* 1.0 broadcasts it and keeps -0.0)
        out = a * np.ones_like(b)
    return out.astype(np.float32)


@jit
def binary_scalar(op, a, b):
    """``binary`` for two fp32 scalars (for the scans, where each step needs the last result)."""
    x = np.empty(1, dtype=np.float32)
    y = np.empty(1, dtype=np.float32)
    x[0] = a
    y[0] = b
    return binary(op, x, y)[0]


@jit
def reduce_rows(op, data, groups):
    """Reduce each run of data.shape[1] // groups consecutive elements of every row, in fp32,
    strictly left to right (a fixed order, so results never depend on the machine)."""
    rows, n = data.shape
    run = n // groups
    out = np.empty((rows, groups), dtype=np.float32)
    for p in range(rows):
        for g in range(groups):
            acc = data[p, g * run]
            for i in range(g * run + 1, (g + 1) * run):
                x = data[p, i]
                if op == C.REDUCE_ADD or op == C.REDUCE_AVERAGE:
                    acc = acc + x
                elif op == C.REDUCE_MULTIPLY:
                    acc = acc * x
                elif np.isnan(acc):
                    pass  # NaN propagates through max/min as in IEEE maximum/minimum
                elif op == C.REDUCE_MAXIMUM:
                    if np.isnan(x) or x > acc:
                        acc = x
                elif np.isnan(x) or x < acc:
                    acc = x
            if op == C.REDUCE_AVERAGE:
                acc = acc / np.float32(run)
            out[p, g] = acc
    return out
