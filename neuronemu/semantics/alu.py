"""The ALU operators of tensor_tensor / tensor_scalar and the reductions, on fp32 arrays.

The switch on the operator sits outside the element loops (numpy array expressions), because a
per-element switch is ~10x slower in numba. Comparisons yield 1.0 / 0.0.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa import codes as C
from neuronemu.isa import dtypes as D
from neuronemu.machine.abi import borrowed, keep_alive

_KIND_INT = D.KINDS["int"]


@jit(inline="always")  # one caller per unit (tensor_tensor's kernels): compiled inside it
def binary(op, a, b, by_rows):
    """a op b elementwise in fp32; a and b are 2-D float32 arrays of broadcastable shapes
    (a dim of 1 repeats); ``by_rows`` computes it (binary_rows, or arith_rows for add,
    subtract and multiply alone)."""
    if a.shape == b.shape:
        return _binary_same(op, a, b, by_rows)
    rows, n = max(a.shape[0], b.shape[0]), max(a.shape[1], b.shape[1])
    return _binary_same(op, _broadcast(a, rows, n), _broadcast(b, rows, n), by_rows)


@jit
def _broadcast(x, rows, n):
    """x repeated along its dims of size 1 to [rows, n] (a copy: values unchanged)."""
    out = np.empty((rows, n), dtype=np.float32)
    for p in range(rows):
        for i in range(n):
            out[p, i] = x[p if x.shape[0] > 1 else 0, i if x.shape[1] > 1 else 0]
    return out


@jit
def apply_column(op, reverse, x, column):
    """x = x op column (column op x when ``reverse``) in place on an fp32 tile [P, N]: column
    [P] broadcast along each partition by * 1.0 (keeps -0.0, quiets NaN) into one row, not a
    [P, N] temporary."""
    n = x.shape[1]
    owner = np.empty((1, n), dtype=np.float32)
    operand = borrowed(owner)
    for p in range(x.shape[0]):
        operand[0, :] = column[p] * np.float32(1.0)
        if reverse:
            binary_rows(op, operand, 0, 0, 0, x, p, 1, 0, x, p, 1, 0, 1, n)
        else:
            binary_rows(op, x, p, 1, 0, operand, 0, 0, 0, x, p, 1, 0, 1, n)
    keep_alive(owner)


@jit(inline="always")
def _binary_same(op, a, b, by_rows):
    """``binary`` of operands of one shape, into a new array."""
    rows, n = a.shape
    out = np.empty((rows, n), dtype=np.float32)
    by_rows(op, a, 0, 1, 0, b, 0, 1, 0, out, 0, 1, 0, rows, n)
    return out


@jit
def arith_rows(op, a, a_row, a_step, a_col, b, b_row, b_step, b_col, out, out_row, out_step,
               out_col, rows, n):
    """``binary_rows`` for add, subtract and multiply, partition by partition on 1-D row slices:
    the same scalar expression per element, in loops that vectorise. When out's row is one of
    the input rows itself (an in-place update: dst = dst op y), the loop names that row once;
    with two names for one row the compiler's overlap check fails and the loop runs scalar
    (~6x slower)."""
    for p in range(rows):
        ra, rb, ro = _rows(p, a_row, a_step, b_row, b_step, out_row, out_step)
        x = a[ra, a_col: a_col + n]
        y = b[rb, b_col: b_col + n]
        o = out[ro, out_col: out_col + n]
        if x.ctypes.data == o.ctypes.data:
            variant = 1
        elif y.ctypes.data == o.ctypes.data:
            variant = 2
        else:
            variant = 0
        if op == C.ALU_ADD:
            if variant == 1:
                for i in range(n):
                    o[i] = o[i] + y[i]
            elif variant == 2:
                for i in range(n):
                    o[i] = x[i] + o[i]
            else:
                for i in range(n):
                    o[i] = x[i] + y[i]
        elif op == C.ALU_SUBTRACT:
            if variant == 1:
                for i in range(n):
                    o[i] = o[i] - y[i]
            elif variant == 2:
                for i in range(n):
                    o[i] = x[i] - o[i]
            else:
                for i in range(n):
                    o[i] = x[i] - y[i]
        elif op == C.ALU_MULTIPLY:
            if variant == 1:
                for i in range(n):
                    o[i] = o[i] * y[i]
            elif variant == 2:
                for i in range(n):
                    o[i] = x[i] * o[i]
            else:
                for i in range(n):
                    o[i] = x[i] * y[i]


@jit
def binary_rows(op, a, a_row, a_step, a_col, b, b_row, b_step, b_col, out, out_row, out_step,
                out_col, rows, n):
    """out = a op b elementwise in fp32 over ``rows`` x ``n`` elements of three 2-D fp32 arrays:
    element (p, i) of x is x[x_row + p * x_step, x_col + i] (so tiles are read and written where
    they lie in memory). ``out`` may be ``a`` or ``b`` at the same elements: each element is
    read before it is written.

    An explicit loop per op: array expressions with 18 branches cost ~10 us on a [128, 64] tile
    when ``op`` is known only at run time, the loops ~1.5 us; each loop applies the same fp32
    scalar operation per element as the array expression did (numba evaluates both with the
    same scalar kernels)."""
    # the commonest operators only: each operator's three loops add to the compile time of
    # every kernel that uses binary_rows
    if op == C.ALU_ADD or op == C.ALU_SUBTRACT or op == C.ALU_MULTIPLY:
        arith_rows(op, a, a_row, a_step, a_col, b, b_row, b_step, b_col, out, out_row,
                   out_step, out_col, rows, n)
        return
    # the other operators: each row into a scratch row, then copied to out. Indexing the 2-D
    # arrays per element, or writing out's row where it may alias an input, made the compiler
    # give up on SIMD (0.5 ns per element on SBUF's layout, 5x add's); the scratch row cannot
    # alias, and reading whole rows first keeps out == a or b correct.
    row = np.empty(n, dtype=np.float32)
    for p in range(rows):
        ra, rb, ro = _rows(p, a_row, a_step, b_row, b_step, out_row, out_step)
        x = a[ra, a_col: a_col + n]
        y = b[rb, b_col: b_col + n]
        _other_row(op, x, y, row, n)
        o = out[ro, out_col: out_col + n]
        for i in range(n):
            o[i] = row[i]


@jit
def _other_row(op, x, y, row, n):
    """row = x op y over n elements for the operators ``arith_rows`` does not take: the same
    fp32 expression per element as ``binary_scalar``, a loop per operator."""
    if op == C.ALU_DIVIDE:
        for i in range(n):
            row[i] = x[i] / y[i]
    elif op == C.ALU_MAXIMUM:
        for i in range(n):
            row[i] = np.maximum(x[i], y[i])
    elif op == C.ALU_MINIMUM:
        for i in range(n):
            row[i] = np.minimum(x[i], y[i])
    elif op == C.ALU_EQUAL:
        for i in range(n):
            row[i] = np.float32(x[i] == y[i])
    elif op == C.ALU_NOT_EQUAL:
        for i in range(n):
            row[i] = np.float32(x[i] != y[i])
    elif op == C.ALU_GREATER:
        for i in range(n):
            row[i] = np.float32(x[i] > y[i])
    elif op == C.ALU_GREATER_EQUAL:
        for i in range(n):
            row[i] = np.float32(x[i] >= y[i])
    elif op == C.ALU_LESS:
        for i in range(n):
            row[i] = np.float32(x[i] < y[i])
    elif op == C.ALU_LESS_EQUAL:
        for i in range(n):
            row[i] = np.float32(x[i] <= y[i])
    elif op == C.ALU_ABS_MAX:
        for i in range(n):
            row[i] = np.maximum(np.abs(x[i]), np.abs(y[i]))
    elif op == C.ALU_ABS_MIN:
        for i in range(n):
            row[i] = np.minimum(np.abs(x[i]), np.abs(y[i]))
    elif op == C.ALU_LOGICAL_AND:
        for i in range(n):
            row[i] = np.float32((x[i] != 0) & (y[i] != 0))
    elif op == C.ALU_LOGICAL_OR:
        for i in range(n):
            row[i] = np.float32((x[i] != 0) | (y[i] != 0))
    elif op == C.ALU_LOGICAL_XOR:
        for i in range(n):
            row[i] = np.float32((x[i] != 0) ^ (y[i] != 0))
    elif op == C.ALU_POWER:
        for i in range(n):
            row[i] = np.float32(np.power(np.float64(x[i]), np.float64(y[i])))
    else:  # bypass: the first operand passes through (* 1.0 keeps -0.0, quiets NaN)
        for i in range(n):
            row[i] = x[i] * np.float32(1.0)


@jit(inline="always")
def _rows(p, a_row, a_step, b_row, b_step, out_row, out_step):
    """The array rows of partition p of binary_rows' operands (unsigned: no index wrapping)."""
    return (np.uintp(a_row + p * a_step), np.uintp(b_row + p * b_step),
            np.uintp(out_row + p * out_step))


@jit
def binary_scalar(op, a, b):
    """``binary`` for two fp32 scalars (for the scans, where each step needs the last result):
    binary_rows' expression for one element, on the values themselves. (It used to build two
    1x1 arrays and call ``binary``, which allocated a third: ~400 ns per element, 300x the
    arithmetic, in every scan.)"""
    x = np.float32(a)
    y = np.float32(b)
    if op == C.ALU_ADD:
        return np.float32(x + y)
    if op == C.ALU_SUBTRACT:
        return np.float32(x - y)
    if op == C.ALU_MULTIPLY:
        return np.float32(x * y)
    if op == C.ALU_DIVIDE:
        return np.float32(x / y)
    if op == C.ALU_MAXIMUM:
        return np.float32(np.maximum(x, y))
    if op == C.ALU_MINIMUM:
        return np.float32(np.minimum(x, y))
    if op == C.ALU_EQUAL:
        return np.float32(x == y)
    if op == C.ALU_NOT_EQUAL:
        return np.float32(x != y)
    if op == C.ALU_GREATER:
        return np.float32(x > y)
    if op == C.ALU_GREATER_EQUAL:
        return np.float32(x >= y)
    if op == C.ALU_LESS:
        return np.float32(x < y)
    if op == C.ALU_LESS_EQUAL:
        return np.float32(x <= y)
    if op == C.ALU_ABS_MAX:
        return np.float32(np.maximum(np.abs(x), np.abs(y)))
    if op == C.ALU_ABS_MIN:
        return np.float32(np.minimum(np.abs(x), np.abs(y)))
    if op == C.ALU_LOGICAL_AND:
        return np.float32((x != 0) & (y != 0))
    if op == C.ALU_LOGICAL_OR:
        return np.float32((x != 0) | (y != 0))
    if op == C.ALU_LOGICAL_XOR:
        return np.float32((x != 0) ^ (y != 0))
    if op == C.ALU_POWER:
        return np.float32(np.power(np.float64(x), np.float64(y)))
    return np.float32(x * np.float32(1.0))   # bypass: the first operand (keeps -0.0, quiets NaN)


@jit
def reduce_rows(op, data, groups):
    """Reduce each run of data.shape[1] // groups consecutive elements of every row, in fp32,
    strictly left to right (a fixed order, so results never depend on the machine)."""
    rows, n = data.shape
    run = n // groups
    out = np.empty((rows, groups), dtype=np.float32)
    for g in range(groups):
        fold_rows(op, data, 0, 1, g * run, rows, run, out, g)
    return out


@jit
def fold_rows(op, words, row0, step, col, rows, run, out, out_col):
    """out[p, out_col] = words[row0 + p * step, col: col + run] folded with the reduce ``op``
    strictly left to right, for p < rows (``reduce_rows``' order: average divides the sum by
    run). Sums run eight rows at a time, eight independent chains each in its own row (sweeping
    every partition per element, as this did, strode 2 KiB at N = 512 and thrashed L1: 10x
    numpy's sum); maximum and minimum are ``row_extreme``, which gives the same bits; products
    (rare) one row at a time."""
    if op == C.REDUCE_MAXIMUM or op == C.REDUCE_MINIMUM:
        for p in range(rows):
            out[p, out_col] = row_extreme(op == C.REDUCE_MAXIMUM, words, row0 + p * step, col,
                                          run)
        return
    multiply = op == C.REDUCE_MULTIPLY
    whole = 0 if multiply else rows - rows % 8
    no_init = np.empty(0, dtype=np.float32)   # C-contiguous like sum_rows_from's: one _sum8
    for p in range(0, whole, 8):
        _sum8(words, row0 + p * step, step, col, run, out, p, out_col, no_init, False)
    for p in range(whole, rows):
        x = words[np.uintp(row0 + p * step), col: col + run]
        acc = x[0]
        if multiply:
            for i in range(1, run):
                acc = acc * x[i]
        else:
            for i in range(1, run):
                acc = acc + x[i]
        out[p, out_col] = acc
    if op == C.REDUCE_AVERAGE:
        for p in range(rows):
            out[p, out_col] = out[p, out_col] / np.float32(run)


@jit
def fold_partitions(op, data):
    """[1, N]: element i folds data[0, i], data[1, i], ... in partition order with the reduce
    ``op``, each step as ``reduce_rows`` takes it (average divides the sum by the partitions).
    Whole rows at a time, so each step is a loop that vectorises (transposing the tile and
    folding its rows cost 19x numpy's sum over partitions)."""
    rows, n = data.shape
    out = np.empty((1, n), dtype=np.float32)
    acc = out[0]
    for i in range(n):
        acc[i] = data[0, i]
    for p in range(1, rows):
        x = data[p]
        if op == C.REDUCE_ADD or op == C.REDUCE_AVERAGE:
            for i in range(n):
                acc[i] = acc[i] + x[i]
        elif op == C.REDUCE_MULTIPLY:
            for i in range(n):
                acc[i] = acc[i] * x[i]
        elif op == C.REDUCE_MAXIMUM:
            for i in range(n):
                a, v = acc[i], x[i]
                acc[i] = v if not np.isnan(a) and (np.isnan(v) or v > a) else a
        else:
            for i in range(n):
                a, v = acc[i], x[i]
                acc[i] = v if not np.isnan(a) and (np.isnan(v) or v < a) else a
    if op == C.REDUCE_AVERAGE:
        for i in range(n):
            acc[i] = acc[i] / np.float32(rows)
    return out


@jit
def sum_rows_from(init, values, out):
    """out[p, 0] = ((init[p] + values[p, 0]) + values[p, 1]) + ... in fp32, strictly left to
    right (the Scalar engine's add into its accumulator), eight partitions at a time."""
    rows, n = values.shape
    whole = rows - rows % 8
    for p in range(0, whole, 8):
        _sum8(values, p, 1, 0, n, out, p, 0, init, True)
    for p in range(whole, rows):
        acc = init[p]
        for i in range(n):
            acc = acc + values[p, i]
        out[p, 0] = acc


@jit
def _sum8(words, row, step, col, run, out, p, out_col, init, from_init):
    """The sums of eight rows, each left to right, as eight independent chains: from their
    first element, or (``from_init``) from init[p + k] with every element added."""
    x0, x1 = words[np.uintp(row), col: col + run], words[np.uintp(row + step), col: col + run]
    x2, x3 = (words[np.uintp(row + 2 * step), col: col + run],
              words[np.uintp(row + 3 * step), col: col + run])
    x4, x5 = (words[np.uintp(row + 4 * step), col: col + run],
              words[np.uintp(row + 5 * step), col: col + run])
    x6, x7 = (words[np.uintp(row + 6 * step), col: col + run],
              words[np.uintp(row + 7 * step), col: col + run])
    if from_init:
        a0, a1, a2, a3 = init[p], init[p + 1], init[p + 2], init[p + 3]
        a4, a5, a6, a7 = init[p + 4], init[p + 5], init[p + 6], init[p + 7]
        first = 0
    else:
        a0, a1, a2, a3, a4, a5, a6, a7 = x0[0], x1[0], x2[0], x3[0], x4[0], x5[0], x6[0], x7[0]
        first = 1
    for i in range(first, run):
        a0, a1, a2, a3 = a0 + x0[i], a1 + x1[i], a2 + x2[i], a3 + x3[i]
        a4, a5, a6, a7 = a4 + x4[i], a5 + x5[i], a6 + x6[i], a7 + x7[i]
    out[p, out_col], out[p + 1, out_col], out[p + 2, out_col], out[p + 3, out_col] = a0, a1, a2, a3
    out[p + 4, out_col], out[p + 5, out_col], out[p + 6, out_col], out[p + 7, out_col] = (
        a4, a5, a6, a7)


@jit
def _larger(v, m):
    """v if v > m else m: x86's maxss operand order, so the lanes below compile to it (builtin
    max's NaN handling would not)."""
    return v if v > m else m  # noqa: FURB136


@jit
def _smaller(v, m):
    return v if v < m else m  # noqa: FURB136


@jit
def row_extreme(maximum, words, r, c, n):
    """The fp32 maximum (or minimum) of words[r, c: c + n] exactly as ``reduce_rows`` folds it
    left to right: the first NaN if the row holds one, else the first element equal to the
    extreme (only a zero can equal it with other bits: -0.0 and +0.0). Found with eight
    independent lanes, which vectorise, plus a NaN pass, instead of a serial compare chain."""
    x = words[np.uintp(r), c: c + n]
    nan = False
    for i in range(n):
        nan |= x[i] != x[i]
    if nan:
        for i in range(n):
            if x[i] != x[i]:
                return x[i]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = x[0]
    i = 0
    if maximum:
        while i + 8 <= n:
            v0, v1, v2, v3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            v4, v5, v6, v7 = x[i + 4], x[i + 5], x[i + 6], x[i + 7]
            m0, m1 = _larger(v0, m0), _larger(v1, m1)
            m2, m3 = _larger(v2, m2), _larger(v3, m3)
            m4, m5 = _larger(v4, m4), _larger(v5, m5)
            m6, m7 = _larger(v6, m6), _larger(v7, m7)
            i += 8
        while i < n:
            m0 = _larger(x[i], m0)
            i += 1
        m0, m1 = _larger(m1, m0), _larger(m3, m2)
        m4, m5 = _larger(m5, m4), _larger(m7, m6)
        m0, m4 = _larger(m1, m0), _larger(m5, m4)
        m0 = _larger(m4, m0)
    else:
        while i + 8 <= n:
            v0, v1, v2, v3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            v4, v5, v6, v7 = x[i + 4], x[i + 5], x[i + 6], x[i + 7]
            m0, m1 = _smaller(v0, m0), _smaller(v1, m1)
            m2, m3 = _smaller(v2, m2), _smaller(v3, m3)
            m4, m5 = _smaller(v4, m4), _smaller(v5, m5)
            m6, m7 = _smaller(v6, m6), _smaller(v7, m7)
            i += 8
        while i < n:
            m0 = _smaller(x[i], m0)
            i += 1
        m0, m1 = _smaller(m1, m0), _smaller(m3, m2)
        m4, m5 = _smaller(m5, m4), _smaller(m7, m6)
        m0, m4 = _smaller(m1, m0), _smaller(m5, m4)
        m0 = _smaller(m4, m0)
    if m0 == 0.0:
        for i in range(n):
            if x[i] == 0.0:
                return x[i]
    return m0


@jit(inline="always")
def is_bitvec(op):
    return op >= C.ALU_BITWISE_AND


@jit
def to_int(bits, code, fmt):
    """Raw storage bits of an integer dtype -> their integer values (int64)."""
    width = 8 * fmt[code, D.F_ITEMSIZE]
    out = bits.copy()
    if fmt[code, D.F_KIND] == _KIND_INT:
        sign = np.int64(1) << (width - 1)
        for p in range(out.shape[0]):
            for i in range(out.shape[1]):
                if out[p, i] & sign:
                    out[p, i] -= np.int64(1) << width
    return out


@jit
def binary_bits(op, a, b, width):
    """Bitvec op on integer values a, b (int64 arrays of one shape) of ``width`` bits: the
    result's low ``width`` bits (shifts are logical and zero-fill; shift counts >= width give
    0). A loop per operator, the switch outside it, so each vectorises."""
    mask = (np.int64(1) << width) - 1 if width < 64 else np.int64(-1)
    out = np.empty(a.shape, dtype=np.int64)
    for p in range(a.shape[0]):
        x, y, o = a[p], b[p], out[p]
        if op == C.ALU_BITWISE_AND:
            for i in range(x.size):
                o[i] = x[i] & y[i] & mask
        elif op == C.ALU_BITWISE_OR:
            for i in range(x.size):
                o[i] = ((x[i] & mask) | y[i]) & mask
        elif op == C.ALU_BITWISE_XOR:
            for i in range(x.size):
                o[i] = ((x[i] & mask) ^ y[i]) & mask
        elif op == C.ALU_INVERT:
            for i in range(x.size):
                o[i] = ~(x[i] & mask) & mask
        elif op == C.ALU_LEFT_SHIFT:
            for i in range(x.size):
                s = y[i]
                o[i] = ((x[i] & mask) << s if 0 <= s < width else np.int64(0)) & mask
        else:  # right_shift, logical
            for i in range(x.size):
                s = y[i]
                o[i] = ((x[i] & mask) >> s if 0 <= s < width else np.int64(0)) & mask
    return out
