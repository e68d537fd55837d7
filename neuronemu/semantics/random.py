"""Random numbers: rng, rand2, dropout, set_rng_seed and the stream state (rand_get_state /
rand_set_state).

The hardware generators (an LFSR before NeuronCore-v4, XORWOW on v4) and their seeding are not
documented bit for bit, so neuronemu draws from its counter-based generator
(``numerics.stochastic``): instruction k after a seed gets key (seed, k) and element (p, i) of an
[P, N] tile gets the 32-bit word of counter p * N + i. Streams are reproducible: the same seed
(``set_rng_seed``, else the run's ``seed``) gives the same values on any machine, but they are
not the hardware's values."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.machine.memory import arg_value, load_bits, scalar_column, store_bits, store_f32
from neuronemu.numerics.stochastic import random_bits, stream_key

_SALT = 0x524E47  # "RNG": keeps these streams apart from stochastic rounding's


@jit
def _words(regs, partitions, n):
    """32 random bits per element, as int64 [P, N]; advances the stream by one draw."""
    key = stream_key(regs[L.REG_RNG_SEED], regs[L.REG_RNG_DRAWS], _SALT)
    regs[L.REG_RNG_DRAWS] += 1
    out = np.empty((partitions, n), dtype=np.int64)
    for p in range(partitions):
        for i in range(n):
            out[p, i] = random_bits(key, p * n + i) & 0xFFFFFFFF
    return out


@jit(inline="always")
def _unit(word):
    """The top 24 bits of a word as an fp32 in [0, 1): exact, equally spaced."""
    return np.float32(word >> 8) * np.float32(2.0**-24)


@jit
def rng(ins, ops, imms, mems, regs, fmt, table):
    """32 random bits per element; narrower integer dtypes keep the low bits."""
    dst = ops[arg_value(ins, 0)]
    store_bits(dst, mems, regs, _words(regs, dst[L.OP_PCOUNT], dst[L.OP_SIZE]))
    return L.STATUS_OK


@jit
def set_rng_seed(ins, ops, imms, mems, regs, fmt, table):
    seed = load_bits(ops[arg_value(ins, 0)], mems, regs)[0, 0]
    regs[L.REG_RNG_SEED] = seed
    regs[L.REG_RNG_DRAWS] = 0
    return L.STATUS_OK


@jit
def rand2(ins, ops, imms, mems, regs, fmt, table):
    """min + u * (max - min) in fp32, u uniform on the 2**24 points of [0, 1)."""
    dst = ops[arg_value(ins, 0)]
    partitions, n = dst[L.OP_PCOUNT], dst[L.OP_SIZE]
    lo = scalar_column(ins, 1, ops, imms, mems, regs, fmt, table, partitions)
    hi = scalar_column(ins, 2, ops, imms, mems, regs, fmt, table, partitions)
    words = _words(regs, partitions, n)
    out = np.empty((partitions, n), dtype=np.float32)
    for p in range(partitions):
        width = np.float32(hi[p] - lo[p])
        for i in range(n):
            out[p, i] = np.float32(lo[p] + np.float32(_unit(words[p, i]) * width))
    store_f32(dst, mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def dropout(ins, ops, imms, mems, regs, fmt, table):
    """Each element becomes 0 when its uniform draw is below the partition's drop probability;
    kept elements keep their bits (dst and data share the dtype). No rescaling."""
    dst = ops[arg_value(ins, 0)]
    data = ops[arg_value(ins, 1)]
    bits = load_bits(data, mems, regs)
    prob = scalar_column(ins, 2, ops, imms, mems, regs, fmt, table, bits.shape[0])
    words = _words(regs, bits.shape[0], bits.shape[1])
    for p in range(bits.shape[0]):
        for i in range(bits.shape[1]):
            if _unit(words[p, i]) < prob[p]:
                bits[p, i] = 0
    store_bits(dst, mems, regs, bits)
    return L.STATUS_OK



@jit
def rand_get_state(ins, ops, imms, mems, regs, fmt, table):
    """Words 0-3 of every partition: seed (low, high), draws (low, high); the rest zero."""
    dst = ops[arg_value(ins, 0)]
    out = np.zeros((dst[L.OP_PCOUNT], dst[L.OP_SIZE]), dtype=np.int64)
    seed, draws = regs[L.REG_RNG_SEED], regs[L.REG_RNG_DRAWS]
    words = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, draws & 0xFFFFFFFF,
             (draws >> 32) & 0xFFFFFFFF)
    for p in range(out.shape[0]):
        for k in range(4):
            out[p, k] = words[k]
    store_bits(dst, mems, regs, out)
    return L.STATUS_OK


@jit
def rand_set_state(ins, ops, imms, mems, regs, fmt, table):
    words = load_bits(ops[arg_value(ins, 0)], mems, regs)[0]
    seed = (words[0] & 0xFFFFFFFF) | ((words[1] & 0xFFFFFFFF) << 32)
    regs[L.REG_RNG_SEED] = seed
    regs[L.REG_RNG_DRAWS] = (words[2] & 0xFFFFFFFF) | ((words[3] & 0xFFFFFFFF) << 32)
    return L.STATUS_OK
