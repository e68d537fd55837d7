"""numpy's ``Generator.normal`` values, bit for bit, at a third of its cost.

Default inputs are normal draws from PCG64 (neuronemu.exec.core ``initial_slabs``), and the
golden corpus pins every one of them, so the values must stay exactly numpy's. numpy's
``normal`` spends ~8 ns per value, ~1.6 ns of it in PCG64 and the rest in its per-element
ziggurat call (a function pointer per word and a data-dependent branch on the sign): 2 ms of a
4 ms 512x512x512 matmul run went to drawing its two inputs.

Here the words come from the same generator (``bit_generator.random_raw``, which returns what
``next_uint64`` returns) and the ziggurat runs compiled over them: numpy's
``random_standard_normal`` (numpy/random/src/distributions/distributions.c) step for step, with
its tables (numba ships them, copied from numpy's ziggurat_constants.h), its ``next_double``
((word >> 11) * 2**-53) and ``loc + scale * z``. The generator is advanced by exactly the words
consumed, so later draws from it continue as after ``rng.normal`` (tests/numerics/
test_draw.py compares millions of values, tail and wedge cases included, bit for bit).
"""

from __future__ import annotations

import math

import numpy as np

from neuronemu.exec.jit import jit

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

# Below this many values numpy's own call is used: a tensor of 128K values saves ~3 ms a run,
# a smaller one is not worth a compile (~0.6 s, once per machine) on a cold first run (the
# README's vector_add draws two of 64K).
MIN_FAST = 1 << 17
WORDS = 1 << 15
_AVAILABLE = ki_double is not None
_KI = np.asarray(ki_double if _AVAILABLE else [0], dtype=np.uint64)
_WI = np.asarray(wi_double if _AVAILABLE else [0.0], dtype=np.float64)
_FI = np.asarray(fi_double if _AVAILABLE else [0.0], dtype=np.float64)
_NOR_R = float(ziggurat_nor_r)
_NOR_INV_R = float(ziggurat_nor_inv_r)


@jit(inline="always")
def _next_double(word):
    return np.float64(word >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit
def _normals(words, out, done, loc, scale):
    """Fill out[done:] from words; returns (values done, index of the first word not
    consumed). A value whose words run out is left undone and its words unconsumed, so the
    caller appends more words and calls again."""
    ki, wi, fi = _KI, _WI, _FI
    n_words = words.size
    w = 0
    i = done
    while i < out.size:
        start = w
        value = 0.0
        ok = False
        while w < n_words:
            r = words[w]
            w += 1
            idx = np.intp(r & np.uint64(0xFF))
            r = r >> np.uint64(8)
            sign = r & np.uint64(1)
            rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
            x = np.float64(rabs) * wi[idx]
            if sign != 0:
                x = -x
            if rabs < ki[idx]:   # 99.3% of values end here
                value = x
                ok = True
                break
            if idx == 0:
                # the tail: pairs of doubles until one is accepted
                while w + 1 < n_words:
                    xx = -_NOR_INV_R * math.log1p(-_next_double(words[w]))
                    yy = -math.log1p(-_next_double(words[w + 1]))
                    w += 2
                    if yy + yy > xx * xx:
                        if (rabs >> np.uint64(8)) & np.uint64(1):
                            value = -(_NOR_R + xx)
                        else:
                            value = _NOR_R + xx
                        ok = True
                        break
                break  # accepted, or out of words inside the tail loop
            if w >= n_words:
                break
            u = _next_double(words[w])
            w += 1
            if (fi[idx - 1] - fi[idx]) * u + fi[idx] < math.exp(-0.5 * x * x):
                value = x
                ok = True
                break
        if not ok:
            return i, start
        out[i] = loc + scale * value
        i += 1
    return i, w


def normal(rng: np.random.Generator, loc: float, scale: float, count: int) -> np.ndarray:
    """``rng.normal(loc, scale, size=count)``, the same float64 values, leaving ``rng`` in the
    same state. PCG64 generators only (numpy's default); anything else is numpy's call."""
    if (count < MIN_FAST or not _AVAILABLE
            or type(rng.bit_generator).__name__ != "PCG64"):
        return rng.normal(loc, scale, size=count)
    out = np.empty(count, dtype=np.float64)
    loc, scale = float(loc), float(scale)
    # Every value takes at least one word, and a value that ran out of words needs more than
    # it was given, so drawing at most one word per value still to do never draws past the
    # last value. Words come in chunks of WORDS: a 256 KiB buffer the allocator reuses costs
    # no page faults, a fresh 2 MiB one per tensor costs ~500.
    done, words = 0, np.empty(0, dtype=np.uint64)
    while done < count:
        fresh = rng.bit_generator.random_raw(min(count - done, WORDS))
        words = fresh if words.size == 0 else np.concatenate([words, fresh])
        done, used = _normals(words, out, done, loc, scale)
        words = words[used:]
    return out
