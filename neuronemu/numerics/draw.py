"""numpy's ``Generator.normal`` values, bit for bit, at a fraction of its cost, as float64
values or already rounded to float32 / bfloat16 storage bits.

Default inputs are normal draws from PCG64 (neuronemu.exec.core), and the golden corpus pins
every one of them, so the values must stay exactly numpy's. numpy's ``normal`` spends ~8 ns per
value, most of it in its per-element ziggurat call (a function pointer per word and a
data-dependent branch on the sign): 2 ms of a 4 ms 512x512x512 matmul run went to drawing its
two inputs.

Here both the generator and the ziggurat run compiled, in one loop. The generator is PCG64 as
numpy has it (numpy/random/src/pcg64/pcg64.h, XSL-RR 128/64: the 128-bit state is multiplied by
numpy's multiplier and incremented, then the output is the xor of its halves rotated right by
its top 6 bits), started from ``bit_generator.state`` and written back to it after, so the
generator is left exactly where numpy's call leaves it and later draws continue the same
stream. The ziggurat is numpy's ``random_standard_normal`` (numpy/random/src/distributions/
distributions.c) step for step, with its tables (numba ships them, copied from numpy's
ziggurat_constants.h), its ``next_double`` ((word >> 11) * 2**-53) and ``loc + scale * z``.
``normal_bits`` also rounds each value to float32 or bfloat16 in the loop, as numpy's and
ml_dtypes' casts round it (neuronemu.numerics.convert: float64 -> float32 to nearest even, then
to bfloat16 to nearest even), writing the storage bits where they go: no float64, float32 or
word buffer the size of the tensor (each cost its page faults). tests/numerics/test_draw.py
compares millions of values, tail and wedge cases included, and the generator's state, bit for
bit with numpy's own calls.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from neuronemu.compiled.jit import jit

try:   # numpy's ziggurat tables, as numba ships them (a private module: guarded)
    from numba.np.random._constants import (
        fi_double,
        ki_double,
        wi_double,
        ziggurat_nor_inv_r,
        ziggurat_nor_r,
    )
except ImportError:   # pragma: no cover - a numba without them: numpy's own call
    ki_double = wi_double = fi_double = None
    ziggurat_nor_r = ziggurat_nor_inv_r = 0.0

# Below this many values numpy's own call is used: a tensor of 128K values saves ~1.5 ms a
# run, a smaller one is not worth a compile (~0.4 s per output dtype, once per machine) on a
# cold first run (the README's vector_add draws two of 64K).
MIN_FAST = 1 << 17
_AVAILABLE = ki_double is not None
_KI = np.asarray(ki_double if _AVAILABLE else [0], dtype=np.uint64)
_WI = np.asarray(wi_double if _AVAILABLE else [0.0], dtype=np.float64)
_FI = np.asarray(fi_double if _AVAILABLE else [0.0], dtype=np.float64)
_NOR_R = float(ziggurat_nor_r)
_NOR_INV_R = float(ziggurat_nor_inv_r)

# numpy's PCG_DEFAULT_MULTIPLIER_128, as its high and low 64-bit halves
_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)
_MASK64 = (1 << 64) - 1
# the largest finite bfloat16 (0x7F7F), as a float32 bound: convert's fast-cast check
_BF16_MAX = np.float32(float.fromhex("0x1.fep127"))
_F32_MAX = np.float32(np.finfo(np.float32).max)


@intrinsic
def _mul_high(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64 (one mul instruction)."""
    if a != types.uint64 or b != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(product, ir.Constant(i128, 64)), ir.IntType(64))

    return types.uint64(types.uint64, types.uint64), codegen


@jit(inline="always")
def _pcg64(hi, lo, inc_hi, inc_lo):
    """One step of numpy's PCG64: (new state high, new state low, output word)."""
    low = lo * _MULT_LO
    high = _mul_high(lo, _MULT_LO) + lo * _MULT_HI + hi * _MULT_LO
    new_lo = low + inc_lo
    carry = np.uint64(1) if new_lo < low else np.uint64(0)
    new_hi = high + inc_hi + carry
    rot = new_hi >> np.uint64(58)
    x = new_hi ^ new_lo
    word = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
    return new_hi, new_lo, word


@jit(inline="always")
def _next_double(word):
    return np.float64(word >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit(inline="always")
def _try(hi, lo, inc_hi, inc_lo):
    """One word's try of the ziggurat: (state high, state low, idx, rabs, x); x is the value
    when rabs < ki[idx] (99.3% of words)."""
    hi, lo, r = _pcg64(hi, lo, inc_hi, inc_lo)
    idx = np.intp(r & np.uint64(0xFF))
    r = r >> np.uint64(8)
    rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
    x = np.float64(rabs) * _WI[idx]
    if r & np.uint64(1):   # the sign bit
        x = -x
    return hi, lo, idx, rabs, x


@jit
def _rejected(hi, lo, inc_hi, inc_lo, idx, rabs, x):
    """The rest of random_standard_normal after a word's try was rejected: the tail (idx 0) or
    the wedge test, then fresh tries until one is accepted. Out of line, so the loops that
    call _standard_normal keep only the common path."""
    fi = _FI
    while True:
        if idx == 0:
            # the tail: pairs of doubles until one is accepted
            while True:
                hi, lo, w0 = _pcg64(hi, lo, inc_hi, inc_lo)
                hi, lo, w1 = _pcg64(hi, lo, inc_hi, inc_lo)
                xx = -_NOR_INV_R * math.log1p(-_next_double(w0))
                yy = -math.log1p(-_next_double(w1))
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & np.uint64(1):
                        return hi, lo, -(_NOR_R + xx)
                    return hi, lo, _NOR_R + xx
        hi, lo, w = _pcg64(hi, lo, inc_hi, inc_lo)
        if (fi[idx - 1] - fi[idx]) * _next_double(w) + fi[idx] < math.exp(-0.5 * x * x):
            return hi, lo, x
        hi, lo, idx, rabs, x = _try(hi, lo, inc_hi, inc_lo)
        if rabs < _KI[idx]:
            return hi, lo, x


@jit(inline="always")
def _standard_normal(hi, lo, inc_hi, inc_lo):
    """numpy's random_standard_normal from the PCG64 state: (state high, state low, value)."""
    hi, lo, idx, rabs, x = _try(hi, lo, inc_hi, inc_lo)
    if rabs >= _KI[idx]:
        hi, lo, x = _rejected(hi, lo, inc_hi, inc_lo, idx, rabs, x)
    return hi, lo, x


@jit
def _values(state, out, loc, scale):
    """out[i] = loc + scale * z for every i; state (uint64 [state high, state low, inc high,
    inc low]) is advanced past the words used."""
    hi, lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    for i in range(out.size):
        hi, lo, z = _standard_normal(hi, lo, inc_hi, inc_lo)
        out[i] = loc + scale * z
    state[0], state[1] = hi, lo


@jit
def _float32_bits(state, out, loc, scale):
    """out (uint32) = the float32 bits of loc + scale * z, rounded to nearest even. Returns the
    index of the first value that is not finite in float32 (out.size if none), where it stops
    with state unchanged: the caller takes the general cast."""
    hi, lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    for i in range(out.size):
        hi, lo, z = _standard_normal(hi, lo, inc_hi, inc_lo)
        f = np.float32(loc + scale * z)
        if not (-_F32_MAX <= f <= _F32_MAX):   # inf, overflow or NaN
            return i
        out[i] = f.view(np.uint32)
    state[0], state[1] = hi, lo
    return out.size


@jit
def _bfloat16_bits(state, out, loc, scale):
    """out (uint16) = the bfloat16 bits of loc + scale * z rounded to float32 then to bfloat16,
    each to nearest even (numpy's astype, then ml_dtypes'). Returns as _float32_bits does, for
    a value that is NaN or past bfloat16's largest finite value in float32."""
    hi, lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    for i in range(out.size):
        hi, lo, z = _standard_normal(hi, lo, inc_hi, inc_lo)
        f = np.float32(loc + scale * z)
        if not (-_BF16_MAX <= f <= _BF16_MAX):
            return i
        u = f.view(np.uint32)
        out[i] = np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
                           >> np.uint32(16))
    state[0], state[1] = hi, lo
    return out.size


def _compiled(rng: np.random.Generator, count: int) -> bool:
    """Whether the compiled loop draws ``count`` values of ``rng``: PCG64 (numpy's default; any
    other generator is numpy's call) and enough values to be worth a compile."""
    return (count >= MIN_FAST and _AVAILABLE
            and type(rng.bit_generator).__name__ == "PCG64")


def _state(rng: np.random.Generator) -> tuple[dict, np.ndarray]:
    """rng's state dict and its 128-bit state and increment as uint64 halves."""
    full = rng.bit_generator.state
    s, inc = full["state"]["state"], full["state"]["inc"]
    return full, np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64], dtype=np.uint64)


def _advance(rng: np.random.Generator, full: dict, halves: np.ndarray) -> None:
    """Leave rng at the state the compiled loop reached (has_uint32 is untouched: normal draws
    read whole 64-bit words, as numpy's do)."""
    full["state"]["state"] = (int(halves[0]) << 64) | int(halves[1])
    rng.bit_generator.state = full


def normal(rng: np.random.Generator, loc: float, scale: float, count: int) -> np.ndarray:
    """``rng.normal(loc, scale, size=count)``, the same float64 values, leaving ``rng`` in the
    same state. PCG64 generators only (numpy's default); anything else is numpy's call."""
    if not _compiled(rng, count):
        return rng.normal(loc, scale, size=count)
    out = np.empty(count, dtype=np.float64)
    full, halves = _state(rng)
    _values(halves, out, float(loc), float(scale))
    _advance(rng, full, halves)
    return out


def normal_bits(rng: np.random.Generator, loc: float, scale: float, out: np.ndarray) -> bool:
    """Fill ``out`` (uint32: float32 bits; uint16: bfloat16 bits) with the storage bits of
    ``rng.normal(loc, scale, size=out.size)`` cast to that dtype (numpy's, then ml_dtypes'
    round to nearest even, as neuronemu.numerics.convert.to_bits casts finite values) and
    advance ``rng`` as that call does. Returns False, with ``rng`` untouched and ``out`` partly
    written, where this does not apply: a generator other than PCG64, fewer than MIN_FAST
    values, or a value that is not finite in the dtype (the general cast decides its bits)."""
    if not _compiled(rng, out.size) or out.dtype not in (np.uint16, np.uint32):
        return False
    full, halves = _state(rng)
    fill = _bfloat16_bits if out.dtype == np.uint16 else _float32_bits
    if fill(halves, out, float(loc), float(scale)) != out.size:
        return False
    _advance(rng, full, halves)
    return True
