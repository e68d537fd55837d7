"""The MX formats: float8_e8m0fnu (the E8M0 scale dtype) and float4_e2m1fn (the values packed in
float4_e2m1fn_x4) against ml_dtypes bit for bit, exhaustively over their 256 and 16 patterns and
over sampled fp32 patterns, plus hand-computed cases from the format definitions (E8M0: code c is
2^(c - 127), 0xFF NaN; E2M1: S.EE.M with bias 1, values +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}), and the
x4 packing helpers against hand-packed words."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.isa import dtypes as D
from neuronemu.numerics import convert as C
from neuronemu.numerics.cast import decode_array, encode_array32, encode_stochastic

FMT = D.format_table()
TABLE = D.decode_table()
E8M0 = D.get("float8_e8m0fnu")
FP4 = D.get("float4_e2m1fn")
MX_FORMATS = ["float8_e8m0fnu", "float4_e2m1fn"]
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]  # OCP MX spec table, codes 0..7


def _encode(values, dtype) -> np.ndarray:
    return encode_array32(np.asarray(values, dtype=np.float32), dtype.code, FMT)


def _oracle_bits(values: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(getattr(ml_dtypes, name)).view(np.uint8).astype(np.int64)


def _fp32_patterns(count: int = 1_000_000) -> np.ndarray:
    """Random fp32 bit patterns, every exponent with mantissas around the points where these
    formats round (halves and quarters of a binade), and the specials (zeros, infinities, NaN
    payloads of both signs, fp32 subnormals around 2^-127)."""
    rng = np.random.default_rng(20261123)
    random = rng.integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
    mantissas = np.array([0, 1, 0x1FFFFF, 0x200000, 0x200001, 0x3FFFFF, 0x400000, 0x400001,
                          0x5FFFFF, 0x600000, 0x600001, 0x7FFFFF], dtype=np.uint32)
    grid = ((np.arange(256, dtype=np.uint32) << 23)[:, None] | mantissas[None, :]).ravel()
    grid = np.concatenate([grid, grid | np.uint32(0x80000000)])
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                        0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x00000001, 0x003FFFFF,
                        0x00400000, 0x00400001, 0x005FFFFF, 0x00600000, 0x00600001, 0x007FFFFF],
                       dtype=np.uint32)
    return np.concatenate([special, grid, random])


@pytest.mark.parametrize("name", MX_FORMATS)
def test_decode_every_pattern_matches_ml_dtypes(name: str) -> None:
    d = D.get(name)
    patterns = np.arange(2**d.bits, dtype=np.int64)
    got = decode_array(patterns, d.code, FMT, TABLE).view(np.uint32)
    want = patterns.astype(np.uint8).view(getattr(ml_dtypes, name)).astype(np.float32)
    bad = np.nonzero(got != want.view(np.uint32))[0]
    assert bad.size == 0, [(int(patterns[i]), hex(got[i]), float(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", MX_FORMATS)
def test_encode_fp32_matches_ml_dtypes(name: str) -> None:
    d = D.get(name)
    patterns = _fp32_patterns()
    values = patterns.view(np.float32)
    got = encode_array32(values, d.code, FMT)
    want = _oracle_bits(values, name)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(patterns[i]), int(got[i]), int(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("name", MX_FORMATS)
def test_encode_every_pattern_from_ml_dtypes_side(name: str) -> None:
    """Every pattern of the format, decoded by ml_dtypes (not by us), encodes back to itself; NaN
    (E8M0 0xFF) to 0xFF."""
    d = D.get(name)
    patterns = np.arange(2**d.bits, dtype=np.int64)
    values = patterns.astype(np.uint8).view(getattr(ml_dtypes, name)).astype(np.float32)
    np.testing.assert_array_equal(encode_array32(values, d.code, FMT), patterns)


@pytest.mark.parametrize("name", MX_FORMATS)
def test_float64_inputs_match_astype(name: str) -> None:
    d = D.get(name)
    rng = np.random.default_rng(9)
    x = np.concatenate([rng.standard_normal(50_000) * 4.0,
                        np.exp2(rng.uniform(-140, 130, 50_000)),
                        [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 2.0**-127, 1.5, 3.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(getattr(ml_dtypes, name)).view(np.uint8)
    np.testing.assert_array_equal(C.to_bits(x, name), want)
    back = D.from_bits(want, name)
    assert back.dtype == np.dtype(getattr(ml_dtypes, name)) and d.itemsize == 1


@pytest.mark.parametrize("name", MX_FORMATS)
def test_table_facts(name: str) -> None:
    d = D.get(name)
    info = ml_dtypes.finfo(getattr(ml_dtypes, name))
    assert d.max_finite == float(info.max)
    assert d.min_finite == float(info.min)
    assert d.eps == float(info.eps)
    assert d.mantissa_bits == info.nmant and d.exponent_bits == info.nexp


def test_e8m0_codes_are_powers_of_two() -> None:
    """Decoding by the definition (no ml_dtypes): code c < 255 is exactly 2^(c - 127), 0xFF is NaN
    (fp32 0x7FC00000, the quiet NaN ml_dtypes gives), code 0 the fp32 subnormal 2^-127."""
    codes = np.arange(256, dtype=np.int64)
    got = decode_array(codes, E8M0.code, FMT, TABLE)
    np.testing.assert_array_equal(got[:255].astype(np.float64), np.ldexp(1.0, codes[:255] - 127))
    assert got.view(np.uint32)[255] == 0x7FC00000
    assert got.view(np.uint32)[0] == 0x00400000
    assert E8M0.bits == 8 and not E8M0.signed and not E8M0.has_zero


@pytest.mark.parametrize("value, code", [
    (1.0, 127), (2.0, 128), (0.5, 126), (2.0**127, 254), (2.0**-126, 1), (2.0**-127, 0),
    # round to nearest with ties up (the implicit bit is the kept LSB): 1.5 * 2^e -> 2^(e + 1)
    (1.5, 128), (1.4999999, 127), (3.0, 129), (0.75, 127), (0.7499999, 126), (6.0, 130),
    (1.5 * 2.0**127, 255), (1.4999999 * 2.0**127, 254), (float(np.finfo(np.float32).max), 255),
    # fp32 subnormals round as if code 0 were zero: above 2^-127 -> 2^-126, at or below -> 2^-127
    (2.0**-149, 0), (2.0**-128, 0), (2.0**-127 + 2.0**-149, 1), (2.0**-127 * 1.4, 1),
    # no zero, no sign, no infinity: all NaN (0xFF)
    (0.0, 255), (-0.0, 255), (-1.0, 255), (-(2.0**-127), 255), (np.inf, 255), (-np.inf, 255),
    (np.nan, 255), (-np.nan, 255),
])
def test_e8m0_hand_cases(value: float, code: int) -> None:
    assert int(_encode([value], E8M0)[0]) == code
    assert int(_oracle_bits(np.array([value], np.float32), "float8_e8m0fnu")[0]) == code


def test_fp4_decodes_the_spec_table() -> None:
    """S.EE.M, bias 1: codes 0..7 are FP4_VALUES, 8..15 their negatives (-0.0 included)."""
    got = decode_array(np.arange(16, dtype=np.int64), FP4.code, FMT, TABLE)
    want = np.array(FP4_VALUES + [-v for v in FP4_VALUES], np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert FP4.bits == 4 and FP4.element_only and "float4_e2m1fn" not in D.names()


@pytest.mark.parametrize("value, code", [
    (0.25, 0), (0.2500001, 1), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6),
    (5.0001, 7), (6.0, 7), (-0.1, 8), (-0.0, 8), (-5.5, 15),
    # no inf: overflow and infinities saturate to +-6
    (7.0, 7), (1e30, 7), (np.inf, 7), (-np.inf, 15),
    # no NaN: ml_dtypes stores a NaN of sign s as the zero of the other sign
    (np.nan, 8), (-np.nan, 0),
])
def test_fp4_hand_cases(value: float, code: int) -> None:
    assert int(_encode([value], FP4)[0]) == code
    assert int(_oracle_bits(np.array([value], np.float32), "float4_e2m1fn")[0]) == code


def test_e8m0_stochastic_rounding_picks_a_neighbour_without_bias() -> None:
    """x = 1.25: the neighbours are 1 and 2 (codes 127, 128); rounding up with probability
    (x - 1) / (2 - 1) = 1/4 keeps the mean at x. 2^16 draws: within 5 sigma of 1/4."""
    n = 1 << 16
    rng = np.random.default_rng(4)
    draws = rng.integers(0, 2**62, size=n)
    codes = np.array([encode_stochastic(np.float32(1.25), E8M0.code, FMT, int(r))
                      for r in draws])
    assert set(np.unique(codes)) <= {127, 128}
    up = np.mean(codes == 128)
    assert abs(up - 0.25) < 5 * np.sqrt(0.25 * 0.75 / n)
    # exact values and the special cases are not randomised
    assert encode_stochastic(np.float32(4.0), E8M0.code, FMT, 12345) == 129
    assert encode_stochastic(np.float32(-4.0), E8M0.code, FMT, 12345) == 255
    assert encode_stochastic(np.float32(0.0), E8M0.code, FMT, 12345) == 255


def test_pack_x4_fp4_nibble_order() -> None:
    """Value i of a float4_e2m1fn_x4 element sits in bits 4i..4i+3 (nibble 0 lowest), the layout
    of the NKI MX tutorial's host packing: two fp4 per byte, low nibble first, bytes in little-
    endian order. Hand-packed: [1.0, -0.5, 6.0, 0.0] = codes [2, 9, 7, 0] -> 0x0792."""
    words = C.pack_x4(np.array([[1.0, -0.5, 6.0, 0.0, 2.0, 3.0, 0.5, 4.0]]), "float4_e2m1fn_x4")
    assert words.dtype == np.uint16
    np.testing.assert_array_equal(words, [[0x0792, 0x6154]])
    tutorial = np.array([[0x92, 0x07, 0x54, 0x61]], np.uint8).view("<u2")  # low nibble first
    np.testing.assert_array_equal(words, tutorial)
    back = D.unpack_x4(words, "float4_e2m1fn_x4")
    assert back.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    np.testing.assert_array_equal(back.astype(np.float32), [[1.0, -0.5, 6.0, 0.0, 2.0, 3.0,
                                                             0.5, 4.0]])


@pytest.mark.parametrize("name", ["float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4"])
def test_pack_x4_round_trip_against_ml_dtypes(name: str) -> None:
    element = D.get(name).packs
    rng = np.random.default_rng(11)
    x = rng.standard_normal((16, 64)) * 3
    words = C.pack_x4(x, name)
    assert words.shape == (16, 16) and words.dtype == np.dtype(f"u{D.get(name).itemsize}")
    want = x.astype(getattr(ml_dtypes, element))
    np.testing.assert_array_equal(D.unpack_x4(words, name).view(np.uint8), want.view(np.uint8))
    if D.get(element).bits == 8:  # fp8: the little-endian bytes of the word are the values
        np.testing.assert_array_equal(words.view(np.uint8).reshape(16, 64), want.view(np.uint8))
