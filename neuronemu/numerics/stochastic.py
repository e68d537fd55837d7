"""Counter-based random bits for stochastic rounding.

Every rounding gets its bits from a hash of (seed, dynamic instruction, store within the
instruction, element), not from a stateful generator: the same seed gives the same bits whatever
order elements are processed in, and no state has to be carried between instructions. The hash is
SplitMix64's finaliser (Steele, Lea, Flood 2014), applied twice so that neighbouring counters
give independent-looking words.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@jit(inline="always")
def mix64(z):
    z = np.uint64(z)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@jit(inline="always")
def stream_key(seed, step, store):
    """Key of one store of one dynamic instruction."""
    counter = np.uint64(step) * _GOLDEN + np.uint64(store)
    return mix64(np.uint64(seed) ^ mix64(counter))


@jit(inline="always")
def random_bits(key, element):
    """63 random bits (a non-negative int64) for element ``element`` of a keyed store."""
    word = mix64(key + (np.uint64(element) + np.uint64(1)) * _GOLDEN)
    return np.int64(word >> np.uint64(1))
