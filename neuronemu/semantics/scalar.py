"""Scalar engine: activation = func(data * scale + bias) with an optional add-reduction."""

from __future__ import annotations

import math

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit
from neuronemu.isa import codes as C
from neuronemu.isa.args.scalar import (
    ACTIVATE2_DATA,
    ACTIVATE2_DST,
    ACTIVATE2_FUNC,
    ACTIVATE2_IMM0,
    ACTIVATE2_IMM1,
    ACTIVATE2_OP0,
    ACTIVATE2_OP1,
    ACTIVATE2_REDUCE_CMD,
    ACTIVATE2_REDUCE_OP,
    ACTIVATE2_REDUCE_RES,
    ACTIVATE2_RELU_PARAM,
    ACTIVATE2_REVERSE0,
    ACTIVATE2_REVERSE1,
    ACTIVATION_ALPHA,
    ACTIVATION_BIAS,
    ACTIVATION_DATA,
    ACTIVATION_DST,
    ACTIVATION_FUNC,
    ACTIVATION_REDUCE_ALPHA,
    ACTIVATION_REDUCE_BIAS,
    ACTIVATION_REDUCE_DATA,
    ACTIVATION_REDUCE_DST,
    ACTIVATION_REDUCE_FUNC,
    ACTIVATION_REDUCE_REDUCE_OP,
    ACTIVATION_REDUCE_REDUCE_RES,
    ACTIVATION_REDUCE_RES,
    ACTIVATION_REDUCE_SCALE,
    ACTIVATION_SCALE,
)
from neuronemu.machine import layout as L
from neuronemu.machine.abi import borrowed, keep_alive
from neuronemu.machine.memory import (
    arg_tag,
    arg_value,
    bf16_window,
    f32_column,
    f32_window,
    in_place_safe,
    load_f32,
    same_shape,
    scalar_column,
    share_no_byte,
    store_f32,
)
from neuronemu.numerics import elementary as E
from neuronemu.numerics.cast import encode_bf16
from neuronemu.semantics import accumulate as A
from neuronemu.semantics.alu import apply_column, sum_rows_from

# _activated and _activation_in_place read activation's slots for activation_reduce too
if (ACTIVATION_DST, ACTIVATION_DATA, ACTIVATION_FUNC, ACTIVATION_SCALE, ACTIVATION_BIAS,
        ACTIVATION_ALPHA) != (ACTIVATION_REDUCE_DST, ACTIVATION_REDUCE_DATA, ACTIVATION_REDUCE_FUNC,
                              ACTIVATION_REDUCE_SCALE, ACTIVATION_REDUCE_BIAS,
                              ACTIVATION_REDUCE_ALPHA):
    raise ImportError("isa/scalar.toml: [activation] and [activation_reduce] must declare dst, "
                      "data, func, scale, bias and alpha in the same positions")

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


@jit(inline="always")  # one caller per unit: compiled inside it
def apply_function(func, x, alpha):
    """func(x) for an fp32 array [P, N]: evaluated in float64 and rounded once to fp32.

    The hardware uses piecewise-polynomial tables whose exact error is not public; a correctly
    rounded result is the documented, reproducible stand-in (see docs/numerics.md)."""
    rows, n = x.shape
    out = np.empty((rows, n), dtype=np.float32)
    function_rows(func, alpha, x, 0, 1, 0, out, 0, 1, 0, rows, n, np.empty((2, n)))
    return out


@jit
def function_rows(func, alpha, x, x_row, x_step, x_col, out, out_row, out_step, out_col, rows,
                  n, work):
    """out = func(x) over ``rows`` x ``n`` elements of 2-D fp32 arrays, element (p, i) of x at
    x[x_row + p * x_step, x_col + i] (``binary_rows``' convention; out may be x at the same
    elements); ``work`` is float64 scratch [2, >= n]. copy moves the fp32 value unchanged; every
    other function is libm's float64 function rounded once to fp32.

    A loop per function, the switch outside it (a per-element switch costs more than the cheap
    functions do). The exp family and tanh are computed with neuronemu.numerics.elementary's
    vectorised exp, and libm only where that cannot tell the fp32 result (``_fast_rows``)."""
    for p in range(rows):
        rx, ro = np.uintp(x_row + p * x_step), np.uintp(out_row + p * out_step)
        if func == C.ACT_COPY:
            for i in range(n):
                out[ro, np.uintp(out_col + i)] = x[rx, np.uintp(x_col + i)]
        elif func == C.ACT_RELU:
            for i in range(n):
                v = np.float64(x[rx, np.uintp(x_col + i)])
                out[ro, np.uintp(out_col + i)] = np.float32(np.maximum(v, 0.0))
        else:   # the rest in a function of their own, so that this one stays small
            _function_row(func, alpha, x, rx, x_col, out, ro, out_col, n, work)


@jit
def _function_row(func, alpha, x, rx, x_col, out, ro, out_col, n, work):
    """``function_rows`` of one row, for every function but copy and relu."""
    src, dst = x[rx, x_col: x_col + n], out[ro, out_col: out_col + n]
    # fp32 arithmetic gives the float64 result rounded once for these: one operation, and 53 >=
    # 2 * 24 + 2 bits make double rounding innocuous for it (Figueroa, "When is double rounding
    # innocuous?", 1995); float64 loops would cost twice as much
    if func == C.ACT_SQRT:
        for i in range(n):
            dst[i] = np.sqrt(src[i])
    elif func == C.ACT_RECIPROCAL:
        for i in range(n):
            dst[i] = np.float32(1.0) / src[i]
    elif func == C.ACT_SQUARE:
        for i in range(n):
            dst[i] = src[i] * src[i]
    else:
        v, y = work[0, :n], work[1, :n]
        for i in range(n):   # read whole before dst (which may be src) is written
            v[i] = np.float64(src[i])
        if _is_fast(func):
            _fast_rows(func, alpha, v, y, dst, n)
        else:
            _libm_rows(func, alpha, v, y, n)
            for i in range(n):
                dst[i] = np.float32(y[i])


@jit(inline="always")
def _is_fast(func):
    return (func == C.ACT_EXP or func == C.ACT_SIGMOID or func == C.ACT_SILU
            or func == C.ACT_GELU_APPRX_TANH or func == C.ACT_GELU_APPRX_SIGMOID
            or func == C.ACT_ERF_DX or func == C.ACT_TANH or func == C.ACT_GELU)


@jit
def _fast_rows(func, alpha, v, y, dst, n):
    """dst = fp32(func(v)) for the functions ``_is_fast`` names: ``_function``'s float64
    expressions with elementary.exp / tanh / erfc in place of libm's, whose relative error (below
    elementary.REL_ERROR) is far inside elementary.GUARD. Where every value within GUARD of the
    fast one rounds to one fp32 number, libm's value rounds to it too (rounding is monotonic);
    the other elements (about one in 30,000, and NaN or |x| > 700) are computed with libm."""
    if func == C.ACT_TANH:
        for i in range(n):
            y[i] = E.tanh(v[i])
    elif func == C.ACT_GELU:   # _function's expression, elementary.erfc for libm's
        for i in range(n):
            w = v[i]
            y[i] = 0.5 * w * E.erfc(-w / math.sqrt(2.0))
    else:   # exp's argument, exp (one loop for all: each copy of it costs compile time), then
        # the rest of the expression
        if func == C.ACT_EXP:
            for i in range(n):
                y[i] = v[i]
        elif func == C.ACT_SIGMOID or func == C.ACT_SILU:
            for i in range(n):
                y[i] = -v[i]
        elif func == C.ACT_GELU_APPRX_TANH:
            for i in range(n):
                w = v[i]
                y[i] = -2.0 * (0.7978845608028654 * (w + 0.044715 * w * w * w))
        elif func == C.ACT_GELU_APPRX_SIGMOID:
            for i in range(n):
                y[i] = -1.702 * v[i]
        else:   # erf_dx
            for i in range(n):
                y[i] = -v[i] * v[i]
        for i in range(n):
            y[i] = E.exp(y[i])
        if func == C.ACT_SIGMOID:
            for i in range(n):
                y[i] = 1.0 / (1.0 + y[i])
        elif func == C.ACT_ERF_DX:
            for i in range(n):
                y[i] = 1.1283791670955126 * y[i]
        elif func != C.ACT_EXP:   # silu and the two gelu approximations: v / (1 + exp(...))
            for i in range(n):
                y[i] = v[i] / (1.0 + y[i])
    if E.round_decided(y, dst, n):
        for i in range(n):
            if E.undecided(y[i]):
                dst[i] = np.float32(_function(func, v[i], alpha))


@jit
def _libm_rows(func, alpha, v, y, n):
    """y = func(v) in float64 for the functions not in ``_fast_rows``: a loop each for those
    with no libm call (they vectorise), ``_function`` per element for the rest."""
    if func == C.ACT_RSQRT:
        for i in range(n):
            y[i] = 1.0 / np.sqrt(v[i])
    elif func == C.ACT_ABS:
        for i in range(n):
            y[i] = np.abs(v[i])
    else:
        for i in range(n):
            y[i] = _function(func, v[i], alpha)


@jit(inline="always")
def _function(func, v, alpha):
    """func(v) in float64 (every function but copy)."""
    if func == C.ACT_EXP:
        return np.exp(v)
    if func == C.ACT_LOG:
        return np.log(v)
    if func == C.ACT_TANH:
        return np.tanh(v)
    if func == C.ACT_SIGMOID:
        return 1.0 / (1.0 + np.exp(-v))
    if func == C.ACT_RELU:
        return np.maximum(v, 0.0)
    if func == C.ACT_SILU:
        return v / (1.0 + np.exp(-v))
    if func == C.ACT_SQRT:
        return np.sqrt(v)
    if func == C.ACT_RSQRT:
        return 1.0 / np.sqrt(v)
    if func == C.ACT_RECIPROCAL:
        return 1.0 / v
    if func == C.ACT_SQUARE:
        return v * v
    if func == C.ACT_ABS:
        return np.abs(v)
    if func == C.ACT_SIGN:
        return np.sign(v)
    if func == C.ACT_SOFTPLUS:
        return np.logaddexp(0.0, v)
    if func == C.ACT_SIN:
        return np.sin(v)
    if func == C.ACT_ARCTAN:
        return np.arctan(v)
    if func == C.ACT_GELU_APPRX_TANH:
        # 0.5 v (1 + tanh(z)) written as v / (1 + exp(-2z)): the same function without the
        # cancellation of 1 + tanh(z) for negative v (which cost ~20 fp32 ulps near v = -6)
        z = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        return v / (1.0 + np.exp(-2.0 * z))
    if func == C.ACT_MISH:
        return v * np.tanh(np.logaddexp(0.0, v))
    if func == C.ACT_GELU_APPRX_SIGMOID:
        return v / (1.0 + np.exp(-1.702 * v))
    if func == C.ACT_GELU_APPRX_SIGMOID_DX:
        s = 1.0 / (1.0 + np.exp(-1.702 * v))
        return s + 1.702 * v * s * (1.0 - s)
    if func == C.ACT_SILU_DX:
        s = 1.0 / (1.0 + np.exp(-v))
        return s * (1.0 + v * (1.0 - s))
    if func == C.ACT_ERF_DX:
        return 1.1283791670955126 * np.exp(-v * v)  # 2 / sqrt(pi)
    if func == C.ACT_PRELU:
        return v if v > 0.0 else np.float64(alpha) * v
    if func == C.ACT_ERF:
        return math.erf(v)
    if func == C.ACT_GELU_DX:
        return (0.5 * math.erfc(-v / math.sqrt(2.0))
                + v * math.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi))
    # gelu: 1 + erf(t) = erfc(-t), without cancellation for negative inputs
    return 0.5 * v * math.erfc(-v / math.sqrt(2.0))


@jit(inline="always")  # one caller per unit: compiled inside it
def checked_function(func, x, alpha, regs):
    """apply_function, noting the first instruction (and its first input) that gives func an
    input outside its documented range, and how many do."""
    bad = first_out_of_range(func, x)
    if bad >= 0:
        _note_out_of_range(regs, x.ravel()[bad])
    return apply_function(func, x, alpha)


@jit
def _note_out_of_range(regs, value):
    """Count an instruction that gave its function an input outside the documented range; the
    first such instruction and input are remembered."""
    if regs[L.REG_RANGE_COUNT] == 0:
        regs[L.REG_RANGE_PC] = regs[L.REG_PC] - 1
        word = np.empty(1, dtype=np.float32)
        word[0] = value
        regs[L.REG_RANGE_BITS] = np.int64(viewed(word, np.uint32)[0])
    regs[L.REG_RANGE_COUNT] += 1


@jit(inline="always")  # one caller per unit: compiled inside it
def _scaled(ins, ops, imms, mems, regs, fmt, table):
    """data * scale + bias in fp32, the input of an activation's function (activation and
    activation_reduce declare dst, data, func, scale, bias and alpha in the same slots: checked
    below the imports)."""
    data = load_f32(ops[arg_value(ins, ACTIVATION_DATA)], mems, regs, fmt, table)
    partitions = data.shape[0]
    scale = scalar_column(ins, ACTIVATION_SCALE, ops, imms, mems, regs, fmt, table,
                          partitions).reshape(-1, 1)
    bias = scalar_column(ins, ACTIVATION_BIAS, ops, imms, mems, regs, fmt, table,
                         partitions).reshape(-1, 1)
    # two fp32 roundings (multiply, then add), no fused multiply-add
    pre = (data * scale).astype(np.float32)
    return (pre + bias).astype(np.float32)


@jit(inline="always")  # one caller per unit: compiled inside it
def _activated(ins, ops, imms, mems, regs, fmt, table):
    """dst = func(data * scale + bias) for activation and activation_reduce; returns the fp32
    outputs."""
    out = checked_function(arg_value(ins, ACTIVATION_FUNC),
                           _scaled(ins, ops, imms, mems, regs, fmt, table),
                           imms[arg_value(ins, ACTIVATION_ALPHA)], regs)
    store_f32(ops[arg_value(ins, ACTIVATION_DST)], mems, regs, fmt, out)
    return out


_BLOCK = 8   # partitions per step of _activation_in_place


@jit(inline="always")
def _store_bf16_rows(halves, dst, p0, column, values, rows, n):
    """Partitions p0 .. p0 + rows - 1 of a ``bf16_window`` tile = values[:rows, :n] rounded
    to nearest even (``encode_bf16``, as store_f32)."""
    for q in range(rows):
        row = np.uintp(dst[L.OP_PSTART] + (p0 + q) * dst[L.OP_PROWSTEP])
        for i in range(n):
            halves[row, np.uintp(column + i)] = encode_bf16(values[q, i])


@jit(inline="always")  # one caller per unit: compiled inside it
def _activation_in_place(ins, ops, imms, mems, regs, fmt, table):
    """activation without reduce_res on fp32 tiles straight from and into memory, partition by
    partition (the same fp32 and float64 operations per element as ``_activated``, without its
    tile temporaries); False, having done nothing, when the tiles do not allow it."""
    if arg_tag(ins, ACTIVATION_REDUCE_RES) == L.TAG_OPERAND:
        return False
    dst, data = ops[arg_value(ins, ACTIVATION_DST)], ops[arg_value(ins, ACTIVATION_DATA)]
    dst_col, data_col = f32_window(dst, regs), f32_window(data, regs)
    # A bfloat16 dst sharing no byte with data: the fp32 results of a block of rows, each then
    # rounded to nearest even as store_f32 does (an exp into bf16 at [128, 512] spent 40 of its
    # 160 us in the general path's temporaries). Not under stochastic rounding, whose bits
    # store_f32 draws per tile store: the general path keeps that.
    half_col = -1
    if dst_col < 0 and regs[L.REG_SR_ON] == 0 and share_no_byte(dst, data, regs):
        half_col = bf16_window(dst, regs)
    # (an fp32 dst may overlap data anyhow: every input is read into ``pre`` before dst is
    # written)
    if (dst_col < 0 and half_col < 0) or data_col < 0 or not same_shape(dst, data):
        return False
    partitions = dst[L.OP_PCOUNT]
    scale = scalar_column(ins, ACTIVATION_SCALE, ops, imms, mems, regs, fmt, table, partitions)
    bias = scalar_column(ins, ACTIVATION_BIAS, ops, imms, mems, regs, fmt, table, partitions)
    _activation_rows(ins, imms, mems, regs, dst, data, dst_col, half_col, data_col, scale, bias)
    return True


@jit(inline="always")  # one caller per unit: compiled inside it
def _activation_rows(ins, imms, mems, regs, dst, data, dst_col, half_col, data_col, scale,
                     bias):
    """``_activation_in_place``'s work, the tiles' windows and the scale and bias columns
    found: into the fp32 window at ``dst_col``, or (-1) the bfloat16 one at ``half_col``."""
    partitions, n = dst[L.OP_PCOUNT], dst[L.OP_SIZE]
    func, alpha = arg_value(ins, ACTIVATION_FUNC), imms[arg_value(ins, ACTIVATION_ALPHA)]
    dst_words = viewed(mems[dst[L.OP_SPACE]], np.float32)
    data_words = viewed(mems[data[L.OP_SPACE]], np.float32)
    if half_col >= 0 or in_place_safe(dst, dst_col, data, data_col):
        # dst row p is data row p or shares no byte with data: eight partitions at a time,
        # through [8, n] rows that stay in L1 (a call per partition cost 1 us of a [128, 64]
        # relu); the first out-of-range input in (p, i) order is noted
        owner = np.empty((_BLOCK, n), dtype=np.float32)
        pre = borrowed(owner)  # not reference counted in the calls per block
        work_owner = np.empty((2, n))
        work = borrowed(work_owner)
        noted = False
        for p0 in range(0, partitions, _BLOCK):
            rows = min(_BLOCK, partitions - p0)
            for q in range(rows):
                p = p0 + q
                row = np.uintp(data[L.OP_PSTART] + p * data[L.OP_PROWSTEP])
                for i in range(n):
                    product = data_words[row, np.uintp(data_col + i)] * scale[p]
                    pre[q, i] = product + bias[p]
            if not noted:
                bad = first_out_of_range(func, pre[:rows])
                if bad >= 0:
                    _note_out_of_range(regs, pre[bad // n, bad % n])
                    noted = True
            if half_col < 0:
                function_rows(func, alpha, pre, 0, 1, 0, dst_words,
                              dst[L.OP_PSTART] + p0 * dst[L.OP_PROWSTEP], dst[L.OP_PROWSTEP],
                              dst_col, rows, n, work)
            else:
                function_rows(func, alpha, pre, 0, 1, 0, pre, 0, 1, 0, rows, n, work)
                _store_bf16_rows(viewed(mems[dst[L.OP_SPACE]], np.uint16), dst, p0, half_col,
                                 pre, rows, n)
        keep_alive(owner)
        keep_alive(work_owner)
        return
    pre = np.empty((partitions, n), dtype=np.float32)
    for p in range(partitions):
        row = np.uintp(data[L.OP_PSTART] + p * data[L.OP_PROWSTEP])
        # two fp32 roundings (multiply, then add), no fused multiply-add
        for i in range(n):
            product = data_words[row, np.uintp(data_col + i)] * scale[p]
            pre[p, i] = product + bias[p]
    bad = first_out_of_range(func, pre)
    if bad >= 0:
        _note_out_of_range(regs, pre.ravel()[bad])
    function_rows(func, alpha, pre, 0, 1, 0, dst_words, dst[L.OP_PSTART], dst[L.OP_PROWSTEP],
                  dst_col, partitions, n, np.empty((2, n)))


@jit
def activation(ins, ops, imms, mems, regs, fmt, table):
    if _activation_in_place(ins, ops, imms, mems, regs, fmt, table):
        return L.STATUS_OK
    out = _activated(ins, ops, imms, mems, regs, fmt, table)
    # an fp32 sum in element order; registers untouched
    if arg_tag(ins, ACTIVATION_REDUCE_RES) == L.TAG_OPERAND:
        sums = _fold(out, C.REDUCE_ADD, A.IDLE, regs)
        store_f32(ops[arg_value(ins, ACTIVATION_REDUCE_RES)], mems, regs, fmt, sums)
    return L.STATUS_OK


# activation of fp32 windows only: a program whose activations all are compiles none of the
# decoding and rounding; one whose activations all are copies (of any dtypes), none of the
# other functions (neuronemu/exec/kernels.py, docs/engine.md "Narrow kernels")
NARROW = {"activation": ("activation_f32", "activation_copy")}


def activation_copy_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: func is copy, no reduce_res."""
    from neuronemu.machine import static_windows as W

    func = instrs[:, L.I_ARGS + 2 * ACTIVATION_FUNC + 1]
    return (func == C.ACT_COPY) & ~W.is_operand(instrs, ACTIVATION_REDUCE_RES)


@jit
def activation_copy(ins, ops, imms, mems, regs, fmt, table):
    """``activation`` with func=copy and no reduce_res: data * scale + bias stored, what the
    general path computes for copy (its function returns its fp32 input unchanged), without any
    other function's code; any other instruction is an emulator bug here."""
    if (arg_value(ins, ACTIVATION_FUNC) != C.ACT_COPY
            or arg_tag(ins, ACTIVATION_REDUCE_RES) == L.TAG_OPERAND):
        return L.STATUS_KERNEL_ERROR
    store_f32(ops[arg_value(ins, ACTIVATION_DST)], mems, regs, fmt,
              _scaled(ins, ops, imms, mems, regs, fmt, table))
    return L.STATUS_OK


def activation_f32_covers(instrs: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """bool per row: no reduce_res, dst and data sure to be fp32 windows of one shape (any
    overlap: every input is read before a result is written), scale and bias immediates or
    fp32 column windows."""
    from neuronemu.machine import static_windows as W

    tiles = W.f32_tiles([W.operand_rows(instrs, ops, slot)
                         for slot in (ACTIVATION_DST, ACTIVATION_DATA)], in_place=False)
    return (tiles & W.f32_scalars(instrs, ops, (ACTIVATION_SCALE, ACTIVATION_BIAS))
            & ~W.is_operand(instrs, ACTIVATION_REDUCE_RES))


@jit
def activation_f32(ins, ops, imms, mems, regs, fmt, table):
    """``activation`` of fp32 windows, immediate or fp32 column scale and bias, no reduce_res,
    where they lie (``_activation_rows``); any other instruction is an emulator bug here."""
    if arg_tag(ins, ACTIVATION_REDUCE_RES) == L.TAG_OPERAND:
        return L.STATUS_KERNEL_ERROR
    dst, data = ops[arg_value(ins, ACTIVATION_DST)], ops[arg_value(ins, ACTIVATION_DATA)]
    dst_col, data_col = f32_window(dst, regs), f32_window(data, regs)
    if dst_col < 0 or data_col < 0 or not same_shape(dst, data):
        return L.STATUS_KERNEL_ERROR
    partitions = dst[L.OP_PCOUNT]
    ok_scale, scale = f32_column(ins, ACTIVATION_SCALE, ops, imms, mems, regs, partitions)
    ok_bias, bias = f32_column(ins, ACTIVATION_BIAS, ops, imms, mems, regs, partitions)
    if not (ok_scale and ok_bias):
        return L.STATUS_KERNEL_ERROR
    _activation_rows(ins, imms, mems, regs, dst, data, dst_col, -1, data_col, scale, bias)
    return L.STATUS_OK


@jit
def activation_reduce(ins, ops, imms, mems, regs, fmt, table):
    """activation, then reset the Scalar accumulator registers and fold the outputs into them
    with reduce_op; reduce_res gets the registers' final value."""
    out = _activated(ins, ops, imms, mems, regs, fmt, table)
    folded = _fold(out, arg_value(ins, ACTIVATION_REDUCE_REDUCE_OP), A.RESET_REDUCE, regs)
    store_f32(ops[arg_value(ins, ACTIVATION_REDUCE_REDUCE_RES)], mems, regs, fmt, folded)
    return L.STATUS_OK


@jit
def _fold(out, reduce_op, cmd, regs):
    """Fold each partition's outputs, in element order, into the Scalar accumulator registers as
    cmd says; returns the folded values [P, 1]."""
    identity = _reduce_identity(reduce_op)
    rows, n = out.shape
    folded = np.empty((rows, 1), dtype=np.float32)
    start = np.empty(rows, dtype=np.float32)
    for p in range(rows):
        start[p] = A.start(regs, L.REG_SACC, p, cmd, identity, 0.0)
    if reduce_op == C.REDUCE_MAXIMUM or reduce_op == C.REDUCE_MINIMUM:
        maximum = reduce_op == C.REDUCE_MAXIMUM
        for p in range(rows):
            acc = start[p]
            if maximum:
                for i in range(n):
                    acc = max(acc, out[p, i])
            else:
                for i in range(n):
                    acc = min(acc, out[p, i])
            folded[p, 0] = acc
    else:   # the serial chain of each partition, eight partitions at a time
        sum_rows_from(start, out, folded)
    for p in range(rows):
        A.finish(regs, L.REG_SACC, p, cmd, folded[p, 0], identity)
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
    data = load_f32(ops[arg_value(ins, ACTIVATE2_DATA)], mems, regs, fmt, table)
    partitions = data.shape[0]
    imm0 = scalar_column(ins, ACTIVATE2_IMM0, ops, imms, mems, regs, fmt, table, partitions)
    imm1 = scalar_column(ins, ACTIVATE2_IMM1, ops, imms, mems, regs, fmt, table, partitions)
    op0, op1 = arg_value(ins, ACTIVATE2_OP0), arg_value(ins, ACTIVATE2_OP1)
    # the stages in place on the loaded tile; a bypass stage passes its input through
    if op0 != C.ALU_BYPASS:
        apply_column(op0, arg_value(ins, ACTIVATE2_REVERSE0) != 0, data, imm0)
    if op1 != C.ALU_BYPASS:
        apply_column(op1, arg_value(ins, ACTIVATE2_REVERSE1) != 0, data, imm1)
    out = checked_function(arg_value(ins, ACTIVATE2_FUNC), data,
                           imms[arg_value(ins, ACTIVATE2_RELU_PARAM)], regs)
    store_f32(ops[arg_value(ins, ACTIVATE2_DST)], mems, regs, fmt, out)
    folded = _fold(out, arg_value(ins, ACTIVATE2_REDUCE_OP), arg_value(ins, ACTIVATE2_REDUCE_CMD),
                   regs)
    if arg_tag(ins, ACTIVATE2_REDUCE_RES) == L.TAG_OPERAND:
        store_f32(ops[arg_value(ins, ACTIVATE2_REDUCE_RES)], mems, regs, fmt, folded)
    return L.STATUS_OK
