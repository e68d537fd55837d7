"""The numpy / ml_dtypes fast path of ``convert.to_bits`` (float32 and bfloat16 inputs) gives the
bits of the jitted encoder the engines use, and of ml_dtypes' astype, on values that probe every
rounding regime: normals, ties, subnormals, values near overflow (which take the encoder)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.isa import dtypes
from neuronemu.numerics import convert
from neuronemu.numerics.cast import encode_array32, encode_array64


def probes() -> np.ndarray:
    rng = np.random.default_rng(7)
    ties = (np.arange(1, 2000, dtype=np.float64) + 0.5) * 2.0**-7   # bf16 halfway points
    return np.concatenate([rng.normal(0, 1, 20000), rng.normal(0, 1e30, 2000),
                           rng.normal(0, 1e-40, 2000), ties, -ties,
                           [0.0, -0.0, 2.0**-149, 2.0**-150, 3.3e38, 3.4e38, 1.0 + 2.0**-24]])


@pytest.mark.parametrize("source", [np.float64, np.float32])
def test_float32_bits(source):
    x = probes().astype(source)
    fast = convert._numpy_cast_bits(x, "float32")
    assert fast is not None
    oracle = encode_array64(x.astype(np.float64), dtypes.get("float32").code,
                            dtypes.format_table()).astype(np.uint32)
    np.testing.assert_array_equal(fast, oracle)
    np.testing.assert_array_equal(fast, x.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("source", [np.float64, np.float32])
def test_bfloat16_bits(source):
    x = probes().astype(source)
    x = x[np.abs(x) < 3.3e38]   # what rounds to inf takes the encoder (tested below)
    fast = convert._numpy_cast_bits(x, "bfloat16")
    assert fast is not None
    oracle = encode_array32(x.astype(np.float32), dtypes.get("bfloat16").code,
                            dtypes.format_table()).astype(np.uint16)
    np.testing.assert_array_equal(fast, oracle)
    expected = x.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(fast, expected)


@pytest.mark.parametrize("values", [[np.inf], [1e39], [-np.inf, 1.0], [3.4e38]])
def test_non_finite_results_take_the_encoder(values):
    assert convert._numpy_cast_bits(np.array(values, np.float64), "bfloat16") is None
    if values != [3.4e38]:
        assert convert._numpy_cast_bits(np.array(values, np.float64), "float32") is None


@pytest.mark.parametrize("name", ["float32", "bfloat16"])
@pytest.mark.parametrize("source", [np.float64, np.float32])
def test_default_nan_is_the_encoders_quiet_nan(name, source):
    """Outputs start as NaN (np.nan of either sign): the fast path gives the encoder's bits."""
    x = np.array([np.nan, -np.nan, 1.5, np.nan], dtype=source)
    fast = convert._numpy_cast_bits(x, name)
    assert fast is not None
    if name == "float32":
        oracle = encode_array64(x.astype(np.float64), dtypes.get(name).code,
                                dtypes.format_table()).astype(np.uint32)
    else:
        oracle = encode_array32(x.astype(np.float32), dtypes.get(name).code,
                                dtypes.format_table()).astype(np.uint16)
    np.testing.assert_array_equal(fast, oracle)


def test_nan_payloads_take_the_encoder():
    payload = np.array([0x7FF0000000000001], dtype=np.uint64).view(np.float64)   # a signalling NaN
    assert convert._numpy_cast_bits(payload, "float32") is None
    assert convert._numpy_cast_bits(payload, "bfloat16") is None
