"""exp, expm1 and erfc in float64 as loops numba vectorises, for the Scalar engine's activation
functions (neuronemu.semantics.scalar.function_rows).

Why: numba is built without SVML here, so ``np.exp`` in a loop is one scalar libm call per
element (3.5 ns; ``np.tanh`` 10 to 15 ns): an fp32 ``exp`` activation cost 8x numpy's and
``tanh`` 30x (issue 29, cause A). These are Cody-Waite range reduction, a Taylor polynomial and a
power of two built from its exponent bits, with no call and no branch per element, so each loop
runs in SIMD lanes.

They never decide a result alone. Their relative error is below ``REL_ERROR`` (a few float64
ulps; tests/numerics/test_elementary.py checks it against libm on every fp32 input of a dense
sample and all the edges); ``function_rows`` keeps a value only when it and everything within
``GUARD`` of it round to the same fp32 number, which then is also libm's value rounded, and
computes the rest (about one element in 30,000, and every input outside the ranges below) with
libm. So the fp32 results are bit for bit those of the float64 libm function rounded once
(docs/numerics.md), only faster.
"""

from __future__ import annotations

import math

import numpy as np
from numba.core import types
from numba.core.extending import intrinsic

from neuronemu.compiled.jit import jit

REL_ERROR = 2.0**-48   # bound on |fast - libm| / |libm| of the functions built on these
GUARD = 2.0**-40       # the margin function_rows keeps from an fp32 rounding boundary
EXP_LIMIT = 700.0      # |x| above this (or NaN) gives NaN: the caller falls back to libm

# fdlibm's split of ln 2: k * _LN2_HI is exact for |k| < 2**11 (its low 21 bits are zero)
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
# 1 / k! for the Taylor polynomials
_F2 = 1.0 / math.factorial(2)
_F3 = 1.0 / math.factorial(3)
_F4 = 1.0 / math.factorial(4)
_F5 = 1.0 / math.factorial(5)
_F6 = 1.0 / math.factorial(6)
_F7 = 1.0 / math.factorial(7)
_F8 = 1.0 / math.factorial(8)
_F9 = 1.0 / math.factorial(9)
_F10 = 1.0 / math.factorial(10)
_F11 = 1.0 / math.factorial(11)
_F12 = 1.0 / math.factorial(12)
_F13 = 1.0 / math.factorial(13)
_F14 = 1.0 / math.factorial(14)


@intrinsic
def _as_float64(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits`` (a register move)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@jit(inline="always")
def _pow2(k):
    """2**k for an integral float k in [-1022, 1023], built from its exponent field: exactly
    the table entry it replaced, without the table's gather, so the loops using it run in more
    SIMD lanes (exp 1.38 -> 1.14 ns an element). |x| <= EXP_LIMIT needs k in [-1010, 1010]."""
    return _as_float64((np.int64(k) + 1023) << 52)


@jit(inline="always")
def _exp_reduced(r):
    """exp(r) for |r| <= ln(2) / 2: the Taylor polynomial to r**13 / 13! (the next term is below
    2**-57 of the result), by Horner's rule."""
    p = _F13
    p = p * r + _F12
    p = p * r + _F11
    p = p * r + _F10
    p = p * r + _F9
    p = p * r + _F8
    p = p * r + _F7
    p = p * r + _F6
    p = p * r + _F5
    p = p * r + _F4
    p = p * r + _F3
    p = p * r + _F2
    p = p * r + 1.0
    return p * r + 1.0


@jit(inline="always")
def exp(x):
    """e**x for |x| <= EXP_LIMIT, NaN otherwise (and for NaN)."""
    c = max(-EXP_LIMIT, x)   # clamped, so the table index stays valid
    c = min(EXP_LIMIT, c)
    k = np.floor(c * _INV_LN2 + 0.5)
    r = (c - k * _LN2_HI) - k * _LN2_LO
    y = _exp_reduced(r) * _pow2(k)
    return y if abs(x) <= EXP_LIMIT else np.nan


@jit(inline="always")
def _expm1_small(y):
    """e**y - 1 for |y| <= ln(2) / 2: the Taylor polynomial to y**14 / 14! (the next term is below
    2**-60 of the result)."""
    p = _F14
    p = p * y + _F13
    p = p * y + _F12
    p = p * y + _F11
    p = p * y + _F10
    p = p * y + _F9
    p = p * y + _F8
    p = p * y + _F7
    p = p * y + _F6
    p = p * y + _F5
    p = p * y + _F4
    p = p * y + _F3
    p = p * y + _F2
    return (p * y) * y + y


@jit(inline="always")
def tanh(x):
    """tanh(x) as -m / (2 + m), m = expm1(-2|x|), with the sign of x. expm1 as fdlibm reduces
    it: y = k ln 2 + r, expm1(y) = 2**k expm1(r) + (2**k - 1), so the one polynomial serves every
    y (no cancellation for small |x|, none worth a bit for large). |x| is clamped at 20, where
    tanh is 1 within 2**-57 (libm gives 1.0 there too). NaN for NaN."""
    a = min(20.0, abs(x))
    y = -2.0 * a
    k = np.floor(y * _INV_LN2 + 0.5)
    r = (y - k * _LN2_HI) - k * _LN2_LO
    scale = _pow2(k)
    m = scale * _expm1_small(r) + (scale - 1.0)
    t = np.copysign(-m / (2.0 + m), x)
    return x if np.isnan(x) else t


ERFC_LIMIT = 10.5   # |x| above this (or NaN) gives NaN: erfc(10.5) ~ 1e-49, far below fp32
_ERFC_STEP = 64     # table centres s0 = k / 64, so |x - s0| <= 1/128
_ERFC_TERMS = 12    # Taylor terms about s0: the next is below 2**-60 of erfc(s0)


def _erfc_table() -> np.ndarray:
    """Row k: erfc(s0) (libm's, through math) and the Taylor coefficients of erfc about s0 =
    k / 64, c_n = -(2 / sqrt(pi)) e**-s0**2 (-1)**(n-1) H_(n-1)(s0) / n! (erf's n-th
    derivative is (2 / sqrt(pi)) (-1)**(n-1) H_(n-1)(s) e**-s**2, H the Hermite polynomials).
    Term n is at most (2 s0 h)**n / n! of erfc(s0) for large s0 (h <= 1/128: 0.164**n / n!)."""
    rows = int(ERFC_LIMIT * _ERFC_STEP) + 2
    table = np.zeros((rows, _ERFC_TERMS + 1))
    for k in range(rows):
        s0 = k / _ERFC_STEP
        hermite = [1.0, 2.0 * s0]
        for n in range(1, _ERFC_TERMS):
            hermite.append(2.0 * s0 * hermite[n] - 2.0 * n * hermite[n - 1])
        scale = (2.0 / math.sqrt(math.pi)) * math.exp(-s0 * s0)
        table[k, 0] = math.erfc(s0)
        for n in range(1, _ERFC_TERMS + 1):
            table[k, n] = -scale * (-1.0) ** (n - 1) * hermite[n - 1] / math.factorial(n)
    return table


_ERFC = _erfc_table()


@jit(inline="always")
def erfc(x):
    """erfc(x) for |x| <= ERFC_LIMIT, NaN otherwise (and for NaN): the Taylor polynomial about
    the nearest table centre (Horner's rule, the coefficients gathered from its row), and
    erfc(x) = 2 - erfc(-x) for x < 0. Within 2**-50 of libm's over every fp32 gelu argument
    (tests/numerics/test_elementary.py checks REL_ERROR)."""
    a = abs(x)
    a = a if a <= ERFC_LIMIT else ERFC_LIMIT  # noqa: FURB136 (min would keep a NaN: the row index)
    k = np.floor(a * _ERFC_STEP + 0.5)
    h = a - k / _ERFC_STEP   # exact: k / 64 and a are within a factor of two
    row = np.uintp(np.int64(k))
    p = _ERFC[row, _ERFC_TERMS]
    for n in range(_ERFC_TERMS - 1, -1, -1):
        p = p * h + _ERFC[row, n]
    e = 2.0 - p if x < 0.0 else p
    return e if abs(x) <= ERFC_LIMIT else np.nan


@jit(inline="always")
def undecided(y):
    """Whether values within GUARD of the float64 ``y`` round to different fp32 numbers (or y is
    NaN): then the fp32 rounding of the libm value cannot be told from y."""
    return np.float32(y * (1.0 - GUARD)) != np.float32(y * (1.0 + GUARD))


@jit
def round_decided(y, dst, n):
    """dst[i] = y[i] rounded to fp32 for i < n, which is libm's value rounded wherever
    ``undecided`` is false (rounding is monotonic, and libm's value lies within GUARD of y);
    returns how many are undecided, which the caller computes again with libm. One loop with no
    branch, so it vectorises."""
    misses = 0
    for i in range(n):
        lo = np.float32(y[i] * (1.0 - GUARD))
        dst[i] = lo
        misses += np.int64(lo != np.float32(y[i] * (1.0 + GUARD)))
    return misses
