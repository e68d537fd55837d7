"""Stochastic rounding: unbiased (statistics over 2**20 roundings), only ever to one of the two
neighbours, reproducible by seed, off by default."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import neuronemu

P, N = 128, 8192  # 2**20 elements
ORACLE = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
          "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e5m2": ml_dtypes.float8_e5m2}


def _neighbours(value: float, dtype: str) -> tuple[float, float]:
    """The two representable values around ``value`` (ml_dtypes / numpy as the oracle)."""
    oracle = ORACLE[dtype]
    nearest = float(np.float32(value).astype(oracle))
    bits = np.array([nearest], dtype=oracle).view(f"u{np.dtype(oracle).itemsize}")
    # sign-magnitude: adding 1 to the bits moves away from zero
    away = (nearest < value) == (value > 0)
    step = bits + 1 if away else bits - 1
    other = float(step.view(oracle)[0])
    return tuple(sorted((nearest, other)))


def _store_many(value: float, dtype: str, stochastic: bool, seed: int = 0) -> np.ndarray:
    source = f""".sbuf x float32[{P}, {N}]
.sbuf y {dtype}[{P}, {N}]
vector.memset x, value={value!r}
vector.tensor_copy y, x
"""
    result = neuronemu.run(neuronemu.assemble(source), stochastic_rounding=stochastic,
                           rounding_seed=seed)
    return result.tiles["y"].astype(np.float64)


@pytest.mark.parametrize("dtype, value", [("bfloat16", 1.0 + 2**-10), ("bfloat16", -3.3),
                                          ("float16", 0.1), ("float8_e4m3", 0.3),
                                          ("float8_e5m2", -1000.0)])
def test_unbiased_where_nearest_even_drifts(dtype: str, value: float) -> None:
    value = float(np.float32(value))
    lo, hi = _neighbours(value, dtype)
    p_up = (value - lo) / (hi - lo)
    stored = _store_many(value, dtype, stochastic=True)
    assert set(np.unique(stored)) <= {lo, hi}
    n = stored.size
    sigma = math.sqrt(p_up * (1 - p_up) / n)
    assert abs(np.mean(stored == hi) - p_up) < 5 * sigma
    exact_sum = value * n
    # the sum of the 2**20 stored values lands within 5 sigma of the exact sum ...
    assert abs(stored.sum() - exact_sum) < 5 * sigma * n * (hi - lo)
    # ... while round-to-nearest-even is off by n times the rounding error, far outside that
    nearest = _store_many(value, dtype, stochastic=False)
    assert abs(nearest.sum() - exact_sum) > 100 * sigma * n * (hi - lo)


def test_exact_values_stay_exact() -> None:
    stored = _store_many(1.5, "bfloat16", stochastic=True)
    assert np.all(stored == 1.5)


def test_same_seed_same_bits_other_seed_other_bits() -> None:
    a = _store_many(0.1, "bfloat16", True, seed=1)
    b = _store_many(0.1, "bfloat16", True, seed=1)
    c = _store_many(0.1, "bfloat16", True, seed=2)
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()


def test_off_by_default_and_fp32_untouched() -> None:
    source = """.sbuf x float32[4, 4]
.sbuf y float32[4, 4]
vector.memset x, value=0.1
vector.tensor_copy y, x
"""
    result = neuronemu.run(neuronemu.assemble(source), stochastic_rounding=True)
    assert np.all(result.tiles["y"] == np.float32(0.1))
