"""Casts against independent oracles: ml_dtypes (numpy for float16) bit for bit, exhaustively over
every 8- and 16-bit pattern and over sampled fp32 patterns; integer stores against a float64
round-half-even formula; tfloat32 against a float64 construction."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.isa import dtypes as D
from neuronemu.numerics import convert as C
from neuronemu.numerics.cast import decode_array, encode_array32, encode_array64

NARROW_FLOATS = ["bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                 "float8_e3m4"]
FMT = D.format_table()
TABLE = D.decode_table()


def _oracle_type(name: str) -> np.dtype:
    return np.dtype(np.float16) if name == "float16" else np.dtype(getattr(ml_dtypes, name))


def _special_fp32_patterns() -> np.ndarray:
    """Zeros, infinities, NaN payloads (quiet and signalling, both signs), subnormals, the
    boundaries of every exponent, and values just around them."""
    base = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
            0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x7F812345, 0x00000001, 0x80000001, 0x007FFFFF,
            0x00400000, 0x7F7FFFFF, 0xFF7FFFFF]
    exponents = np.arange(256, dtype=np.uint32) << 23
    mantissas = np.array([0, 1, 2, 0x7FFF, 0x8000, 0x8001, 0x17FFF, 0x18000, 0x18001, 0xFFFFF,
                          0x100000, 0x100001, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF],
                         dtype=np.uint32)
    grid = (exponents[:, None] | mantissas[None, :]).ravel()
    grid = np.concatenate([grid, grid | 0x80000000])
    return np.concatenate([np.array(base, dtype=np.uint32), grid])


def _sampled_fp32_patterns(count: int = 1_000_000) -> np.ndarray:
    rng = np.random.default_rng(1234)
    random = rng.integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
    # ties: the bits below each target's mantissa set to exactly one half
    tie_positions = np.array([16, 13, 20, 21, 19], dtype=np.uint32)
    ties = (random[: count // 4] & ~np.uint32(0xFFFFF)) | (np.uint32(1) << (
        tie_positions[rng.integers(0, 5, size=count // 4)] - 1))
    return np.concatenate([_special_fp32_patterns(), random, ties.astype(np.uint32)])


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_encode_fp32_matches_oracle(name: str) -> None:
    d = D.get(name)
    patterns = _sampled_fp32_patterns()
    values = patterns.view(np.float32)
    got = encode_array32(values, d.code, FMT)
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(_oracle_type(name)).view(f"u{d.itemsize}").astype(np.int64)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(patterns[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_decode_every_pattern_matches_oracle(name: str) -> None:
    d = D.get(name)
    patterns = np.arange(2**d.bits, dtype=np.int64)
    got = decode_array(patterns, d.code, FMT, TABLE).view(np.uint32)
    stored = patterns.astype(f"u{d.itemsize}").view(_oracle_type(name))
    want = stored.astype(np.float32).view(np.uint32)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(patterns[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_every_pattern_round_trips(name: str) -> None:
    """Decoding then encoding any non-NaN pattern gives it back (NaNs become the canonical NaN)."""
    d = D.get(name)
    patterns = np.arange(2**d.bits, dtype=np.int64)
    decoded = decode_array(patterns, d.code, FMT, TABLE)
    again = encode_array32(decoded, d.code, FMT)
    finite_or_inf = ~np.isnan(decoded)
    np.testing.assert_array_equal(again[finite_or_inf], patterns[finite_or_inf])


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_float64_inputs_match_ml_dtypes_astype(name: str) -> None:
    """API inputs given as float64 load exactly as ``x.astype(dtype)`` would store them."""
    d = D.get(name)
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(100_000) * d.max_finite / 4,
                        rng.standard_normal(10_000) * 2.0 ** -12, [np.inf, -np.inf, np.nan, -0.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(_oracle_type(name)).view(f"u{d.itemsize}")
    np.testing.assert_array_equal(C.to_bits(x, name), want)


def test_encode_float64_single_rounding_is_exact() -> None:
    """encode64 rounds float64 once: checked against exact rational rounding on bf16 cases where
    rounding through fp32 first (as ml_dtypes does) would differ."""
    from fractions import Fraction

    x = float.fromhex("-0x1.8effff19a6ba1p+124")
    got = int(encode_array64(np.array([x]), D.get("bfloat16").code, FMT)[0])
    # the two bf16 neighbours of x and the exact midpoint between them
    lo, hi = Fraction(float.fromhex("-0x1.8e00000000000p+124")), Fraction(
        float.fromhex("-0x1.9000000000000p+124"))
    nearest = lo if abs(Fraction(x) - lo) < abs(Fraction(x) - hi) else hi
    assert got == int(np.array([float(nearest)], np.float32).astype(ml_dtypes.bfloat16)
                      .view(np.uint16)[0])
    double_rounded = int(np.float32(x).astype(ml_dtypes.bfloat16).view(np.uint16))
    assert got != double_rounded


def _integer_oracle(x: np.ndarray, name: str) -> np.ndarray:
    d = D.get(name)
    r = np.where(np.isnan(x), 0.0, np.round(x))  # numpy rounds half to even
    r = np.clip(r, d.min_finite, d.max_finite)
    return (r.astype(np.int64) & (2**d.bits - 1)).astype(np.int64)


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_float_to_integer_rounds_half_even_and_saturates(name: str) -> None:
    d = D.get(name)
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.uniform(d.min_finite * 1.5 - 10, d.max_finite * 1.5 + 10, 50_000),
        np.arange(-300, 300) + 0.5, [np.nan, np.inf, -np.inf, -0.0, 0.49999997, 2.5, -2.5]])
    x32 = x.astype(np.float32)
    got = encode_array32(x32, d.code, FMT)
    np.testing.assert_array_equal(got, _integer_oracle(x32.astype(np.float64), name))


@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "uint16"])
def test_integer_decode_every_pattern(name: str) -> None:
    d = D.get(name)
    patterns = np.arange(2**d.bits, dtype=np.int64)
    got = decode_array(patterns, d.code, FMT, TABLE)
    want = patterns.astype(f"u{d.itemsize}").view(np.dtype(name)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_bool_stores_nonzero_as_one() -> None:
    x = np.array([0.0, -0.0, 1.0, -3.5, np.nan, np.inf, 1e-45], dtype=np.float32)
    np.testing.assert_array_equal(encode_array32(x, D.get("bool_").code, FMT),
                                  [0, 0, 1, 1, 1, 1, 1])


def test_tfloat32_keeps_ten_mantissa_bits() -> None:
    """Oracle: round the fp32 significand to 11 bits in float64 with numpy's half-even rint."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(100_000) * 1000).astype(np.float32)
    mantissa, exponent = np.frexp(x.astype(np.float64))
    want = np.ldexp(np.round(mantissa * 2.0**11) / 2.0**11, exponent).astype(np.float32)
    got = encode_array32(x, D.get("tfloat32").code, FMT).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", NARROW_FLOATS)
def test_table_facts(name: str) -> None:
    """The format parameters agree with the oracle's own description of the type."""
    d = D.get(name)
    oracle = _oracle_type(name)
    info = np.finfo(oracle) if name == "float16" else ml_dtypes.finfo(oracle)
    assert d.max_finite == float(info.max)
    assert d.eps == float(info.eps)
    assert d.mantissa_bits == info.nmant
