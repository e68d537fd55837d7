"""Jitted conversions between fp32 (what engines compute in) and every storage dtype.

Encoding is done on bit patterns with integer arithmetic, one routine for every float format
(exponent bits, mantissa bits, bias, infinity and NaN rules from ``format_table``), rounding to
nearest, ties to even. The same routine takes fp32 or float64 sources, so API inputs given as
float64 are rounded once, not twice. Decoding narrow floats is a table lookup
(``dtypes.decode_table``).
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.isa import dtypes as D

_KIND_FLOAT = D.KINDS["float"]
_KIND_INT = D.KINDS["int"]
_KIND_UINT = D.KINDS["uint"]
_NAN_QUIET = D.NAN_ENCODE["quiet"]
_NAN_TRUNCATE = D.NAN_ENCODE["truncate"]
_NAN_ALL_ONES = D.NAN_ENCODE["all_ones"]
_NAN_FLIPPED_ZERO = D.NAN_ENCODE["flipped_zero"]
_OVERFLOW_INF = D.OVERFLOW["inf"]
_OVERFLOW_NAN = D.OVERFLOW["nan"]
_F32_CODE = D.get("float32").code


@jit(inline="always")
def f32_to_bits(x):
    return np.int64(np.float32(x).view(np.uint32))


@jit(inline="always")
def bits_to_f32(bits):
    return np.uint32(bits & 0xFFFFFFFF).view(np.float32)


@jit(inline="always")
def _encode_float(sign, magnitude, src_exp, src_mant, src_bias, fmt, code, rand):
    """Bits of the value (sign, magnitude bits of a binary format with src_* parameters) rounded
    in the format of row ``code`` of ``fmt``: to nearest even when ``rand`` < 0, else
    stochastically, rounding the magnitude up with probability (discarded bits) / 2**shift using
    the low bits of ``rand`` (a non-negative random int64).

    Formats without a sign bit (``F_SIGNED`` 0) store NaN for a negative value and +0 for -0;
    formats without zero (``F_HAS_ZERO`` 0, E8M0) store NaN for +-0 and round the binade at
    exponent field 0 like the others (ml_dtypes' rule, which treats the code 0 as zero while
    rounding). The outcomes are those of ml_dtypes' checks in its order: inf/NaN, zero, sign.

    Takes the table and an index rather than a row view: passing a view to a non-inlined call
    costs a reference-count round trip (~25 ns) per element."""
    e_bits = fmt[code, D.F_EXP]
    m_bits = fmt[code, D.F_MANT]
    bias = fmt[code, D.F_BIAS]
    has_inf = fmt[code, D.F_HAS_INF]
    nan_encode = fmt[code, D.F_NAN_ENCODE]
    width = e_bits + m_bits
    exp_all = (np.int64(1) << e_bits) - 1
    if nan_encode == _NAN_ALL_ONES:
        nan_code = (np.int64(1) << width) - 1
        max_code = nan_code - 1
    elif nan_encode == _NAN_FLIPPED_ZERO:
        nan_code = np.int64(0)  # the sign is flipped below
        max_code = (np.int64(1) << width) - 1
    else:
        nan_code = (exp_all << m_bits) | (np.int64(1) << (m_bits - 1))
        max_code = (exp_all << m_bits) - 1 if has_inf else (np.int64(1) << width) - 1
    src_inf = ((np.int64(1) << src_exp) - 1) << src_mant
    if fmt[code, D.F_SIGNED] == 0:
        if sign != 0 and magnitude != 0:
            return nan_code << fmt[code, D.F_PAD]  # negative, -inf or a NaN of either sign
        sign = np.int64(0)
    if magnitude == 0 and fmt[code, D.F_HAS_ZERO] == 0:
        return ((sign << width) | nan_code) << fmt[code, D.F_PAD]
    overflowed = False
    if magnitude > src_inf:
        out = nan_code
        if nan_encode == _NAN_TRUNCATE:
            payload = (magnitude & ((np.int64(1) << src_mant) - 1)) >> (src_mant - m_bits)
            out = (exp_all << m_bits) | (payload if payload != 0 else 1)
        elif nan_encode == _NAN_FLIPPED_ZERO:
            sign = 1 - sign
    elif magnitude == src_inf:
        if has_inf:
            out = exp_all << m_bits
        else:
            overflowed = True
            out = 0
    else:
        e_field = magnitude >> src_mant
        sig = magnitude & ((np.int64(1) << src_mant) - 1)
        if e_field == 0:
            e = 1 - src_bias
        else:
            e = e_field - src_bias
            sig |= np.int64(1) << src_mant
        emin = 1 - bias
        # a source subnormal inside the target's normal range needs no special case: its
        # missing implicit bit makes the code below come out as a target subnormal
        shift = src_mant - m_bits
        if e < emin:
            shift += emin - e
        if rand >= 0:
            shift = min(shift, 62)  # sig < 2**(src_mant+1): any larger shift discards all of it alike
            q = sig >> shift
            rem = sig & ((np.int64(1) << shift) - 1)
            if rem > (rand & ((np.int64(1) << shift) - 1)):
                q += 1
        elif shift > src_mant + 1:
            q = np.int64(0)  # below half the smallest subnormal
        else:
            q = sig >> shift
            rem = sig & ((np.int64(1) << shift) - 1)
            half = np.int64(1) << (shift - 1)
            if rem > half or (rem == half and (q & 1) == 1):
                q += 1
        if e >= emin:
            out = ((e + bias) << m_bits) + q - (np.int64(1) << m_bits)
        else:
            out = q
        if out > max_code:
            overflowed = True
    if overflowed:
        policy = fmt[code, D.F_OVERFLOW]
        if policy == _OVERFLOW_INF and has_inf:
            out = exp_all << m_bits
        elif policy == _OVERFLOW_NAN or policy == _OVERFLOW_INF:
            out = nan_code
        else:
            out = max_code
    return ((sign << width) | out) << fmt[code, D.F_PAD]


@jit(inline="always")
def encode_integer(x, kind, itemsize):
    """Round to nearest even and saturate; NaN stores 0; bool stores (x != 0)."""
    if kind == _KIND_INT or kind == _KIND_UINT:
        if np.isnan(x):
            return np.int64(0)
        bits = 8 * itemsize
        if kind == _KIND_INT:
            lo = -float(np.int64(1) << (bits - 1))
            hi = float((np.int64(1) << (bits - 1)) - 1)
        else:
            lo = 0.0
            hi = float((np.int64(1) << bits) - 1)
        r = np.rint(x)
        r = max(r, lo)
        r = min(r, hi)
        return np.int64(r) & ((np.int64(1) << bits) - 1)
    return np.int64(1) if x != 0.0 else np.int64(0)


@jit
def encode(x, code, fmt):
    """Storage bits of the fp32 value ``x`` in dtype ``code`` (round to nearest even)."""
    kind = fmt[code, D.F_KIND]
    if kind == _KIND_FLOAT:
        b = f32_to_bits(x)
        if code == _F32_CODE:
            return b
        return _encode_float(b >> 31, b & 0x7FFFFFFF, 8, 23, 127, fmt, code, -1)
    return encode_integer(np.float64(np.float32(x)), kind, fmt[code, D.F_ITEMSIZE])


@jit
def encode_stochastic(x, code, fmt, rand):
    """``encode`` with stochastic rounding for float dtypes narrower than fp32 (integers and fp32
    itself are unaffected): exact values stay exact; others round up in magnitude with
    probability proportional to their distance from the lower neighbour."""
    kind = fmt[code, D.F_KIND]
    if kind == _KIND_FLOAT:
        b = f32_to_bits(x)
        if code == _F32_CODE:
            return b
        return _encode_float(b >> 31, b & 0x7FFFFFFF, 8, 23, 127, fmt, code, rand)
    return encode_integer(np.float64(np.float32(x)), kind, fmt[code, D.F_ITEMSIZE])


@jit(inline="always")
def encode_bf16(x):
    """The bfloat16 case of ``encode``, written out because it dominates kernels: carry-propagating
    round half to even on the upper 16 bits; NaN becomes the quiet NaN of its sign."""
    b = f32_to_bits(x)
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return ((b >> 16) & 0x8000) | 0x7FC0
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


@jit(inline="always")
def encode_bf16_stochastic(x, rand):
    """Stochastic bfloat16: add 16 random bits below the kept ones, then truncate."""
    b = f32_to_bits(x)
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return ((b >> 16) & 0x8000) | 0x7FC0
    if (b & 0x7FFFFFFF) == 0x7F800000:
        return (b >> 16) & 0xFFFF
    return ((b + (rand & 0xFFFF)) >> 16) & 0xFFFF


@jit
def encode64(x, code, fmt):
    """Storage bits of the float64 value ``x`` in dtype ``code``, rounded once."""
    kind = fmt[code, D.F_KIND]
    if kind == _KIND_FLOAT:
        b = np.float64(x).view(np.int64)
        sign = (b >> 63) & 1
        magnitude = b & 0x7FFFFFFFFFFFFFFF
        return _encode_float(sign, magnitude, 11, 52, 1023, fmt, code, -1)
    return encode_integer(np.float64(x), kind, fmt[code, D.F_ITEMSIZE])


@jit
def decode(bits, code, fmt, table):
    """fp32 value of storage bits ``bits`` of dtype ``code``."""
    kind = fmt[code, D.F_KIND]
    itemsize = fmt[code, D.F_ITEMSIZE]
    if kind == _KIND_FLOAT:
        if itemsize == 4:
            return bits_to_f32(bits)
        return table[code, bits]
    if kind == _KIND_INT:
        width = 8 * itemsize
        value = bits
        if (bits >> (width - 1)) & 1:
            value = bits - (np.int64(1) << width)
        return np.float32(value)
    if kind == _KIND_UINT:
        return np.float32(bits)
    return np.float32(1.0) if bits != 0 else np.float32(0.0)


@jit
def encode_array32(values, code, fmt):
    out = np.empty(values.size, dtype=np.int64)
    for i in range(values.size):
        out[i] = encode(values[i], code, fmt)
    return out


@jit
def encode_array64(values, code, fmt):
    out = np.empty(values.size, dtype=np.int64)
    for i in range(values.size):
        out[i] = encode64(values[i], code, fmt)
    return out


@jit
def decode_array(bits, code, fmt, table):
    out = np.empty(bits.size, dtype=np.float32)
    for i in range(bits.size):
        out[i] = decode(bits[i], code, fmt, table)
    return out
