"""ULP distances of neuronemu.testing against an independent oracle: every bit pattern of a
format decoded by ml_dtypes, the finite values sorted, a value's rank in that order is its
index (so -0.0 and +0.0 share one). The implementation walks bit patterns instead; for fp32
the oracle counts np.nextafter steps. Plus hand-computed edge cases and the messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_bits_equal, assert_ulp_close, ulp_distance

SMALL_FORMATS = ["bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                 "float8_e3m4", "float8_e8m0fnu", "float4_e2m1fn"]


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(np.float16) if name == "float16" else np.dtype(getattr(ml_dtypes, name))


def _every_value(name: str):
    """(values of every bit pattern as the dtype, their float64 values, oracle ranks)."""
    dtype = _numpy_dtype(name)
    width = 4 if name == "float4_e2m1fn" else 8 * dtype.itemsize
    patterns = np.arange(2 ** width, dtype=np.uint64).astype(f"<u{dtype.itemsize}")
    values = patterns.view(dtype)
    with np.errstate(invalid="ignore"):
        as64 = values.astype(np.float64)
    finite = np.isfinite(as64)
    order = np.unique(as64[finite])           # sorted; -0.0 == +0.0 counts once
    zero = np.searchsorted(order, 0.0) if 0.0 in order else 0
    ranks = np.full(as64.shape, np.nan)
    ranks[finite] = np.searchsorted(order, as64[finite]) - zero
    return values[finite], as64[finite], ranks[finite]


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_distance_between_values_is_the_rank_difference(name):
    values, _, ranks = _every_value(name)
    rng = np.random.default_rng(15)
    i = rng.integers(0, len(values), 20000)
    j = rng.integers(0, len(values), 20000)
    got = ulp_distance(values[i], values[j], name)
    np.testing.assert_array_equal(got, np.abs(ranks[i] - ranks[j]))


@pytest.mark.parametrize("name", SMALL_FORMATS)
def test_float64_expected_between_two_values_is_fractional(name):
    values, as64, ranks = _every_value(name)
    _, by_rank = np.unique(ranks, return_index=True)   # one pattern per rank, in rank order
    low, high = by_rank[:-1], by_rank[1:]
    quarter = as64[low] + (as64[high] - as64[low]) / 4    # a quarter of the way up
    got = ulp_distance(values[low], quarter, name)
    np.testing.assert_allclose(got, 0.25, rtol=0, atol=1e-12)
    got = ulp_distance(values[high], quarter, name)
    np.testing.assert_allclose(got, 0.75, rtol=0, atol=1e-12)


def test_float32_distance_counts_nextafter_steps():
    rng = np.random.default_rng(16)
    start = rng.normal(0, 1e3, 500).astype(np.float32)
    start = np.concatenate([start, np.float32([0.0, -0.0, 1.0, 2.0 ** -126, 2.0 ** -149])])
    for steps in (1, 2, 7):
        up = start.copy()
        for _ in range(steps):
            up = np.nextafter(up, np.float32(np.inf))
        np.testing.assert_array_equal(ulp_distance(up, start), steps)
        down = start.copy()
        for _ in range(steps):
            down = np.nextafter(down, np.float32(-np.inf))
        np.testing.assert_array_equal(ulp_distance(down, start), steps)


BF16 = ml_dtypes.bfloat16
E4M3FN = ml_dtypes.float8_e4m3fn


@pytest.mark.parametrize("dtype, actual, expected, distance", [
    # bf16: 8 significant bits; across the binade at 1.0 both neighbours are one step away
    (BF16, 1.0, 1.0, 0), (BF16, 1.0078125, 1.0, 1), (BF16, 0.99609375, 1.0, 1),
    (BF16, -0.0, 0.0, 0), (BF16, 2.0 ** -133, -(2.0 ** -133), 2),    # through the subnormals
    (BF16, 1.0, 1.0 + 2.0 ** -8, 0.5),                 # a float64 tie sits halfway
    (BF16, np.inf, 1e39, 0),                           # beyond bf16: rounds to inf
    (BF16, np.inf, np.inf, 0), (BF16, -np.inf, np.inf, np.inf),
    (BF16, 3.3895313892515355e38, np.inf, np.inf),     # largest finite is not inf
    (BF16, np.nan, np.nan, 0), (BF16, np.nan, 1.0, np.inf), (BF16, 1.0, np.nan, np.inf),
    # float8_e4m3fn: no infinity, 448 largest, S.1111.111 the only NaN, overflow gives NaN
    (E4M3FN, 448.0, 416.0, 1), (E4M3FN, 0.0, -(2.0 ** -9), 1), (E4M3FN, np.nan, 1e9, 0),
    (E4M3FN, 448.0, 1e9, np.inf),
    # float8_e5m2 keeps infinities
    (ml_dtypes.float8_e5m2, 57344.0, 49152.0, 1), (ml_dtypes.float8_e5m2, np.inf, 1e6, 0),
    # E8M0 (MX scales): 0 and negatives store NaN; powers of two are neighbours
    (ml_dtypes.float8_e8m0fnu, 2.0, 0.5, 2), (ml_dtypes.float8_e8m0fnu, np.nan, 0.0, 0),
    # fp4 E2M1 saturates: 6 is what 100 stores
    (ml_dtypes.float4_e2m1fn, 6.0, 100.0, 0), (ml_dtypes.float4_e2m1fn, 4.0, 6.0, 1),
])
def test_hand_computed_distances(dtype, actual, expected, distance):
    got = ulp_distance(np.array([actual], dtype=dtype), np.array([expected]))
    assert got[0] == distance


def test_mx_words_compare_their_elements():
    # 0x38 is 1.0 in float8_e4m3fn; 0x39 is 1.125, one step up
    words = np.array([[0x38383838, 0x39383838]], dtype=np.uint32)
    got = ulp_distance(words, np.ones((1, 8)), "float8_e4m3fn_x4")
    np.testing.assert_array_equal(got, [[0, 0, 0, 0, 0, 0, 0, 1]])
    same = ulp_distance(words, words, "float8_e4m3fn_x4")
    assert not same.any()


def test_integer_distance_is_the_difference():
    np.testing.assert_array_equal(ulp_distance(np.int32([5, -3]), np.array([2, -3])), [3, 0])


def test_message_shows_count_worst_index_values_bits_and_distance():
    actual = np.ones((4, 8), dtype=BF16)
    actual[2, 5] = 1.0625                        # 8 steps above 1.0
    actual[3, 1] = np.nan
    actual[0, 0] = 1.0078125                     # 1 step: within ulps=2
    with pytest.raises(AssertionError) as failure:
        assert_ulp_close(actual, np.ones((4, 8)), ulps=2)
    message = str(failure.value)
    assert message.startswith("2 of 32 elements (6.25%) are more than 2 ulp of bfloat16")
    lines = message.splitlines()
    assert "NaN/inf mismatches: 1" in lines[1]
    assert lines[4].split() == ["[3,", "1]", "nan", "(0x7fc0)", "1.0", "NaN,", "expected", "a",
                                "number"]
    assert lines[5].split() == ["[2,", "5]", "1.0625", "(0x3f88)", "1.0", "8"]
    assert "rules:" in lines[-1]


def test_passes_within_the_budget_and_signed_zeros_on_request():
    assert_ulp_close(np.float32([1.0, -0.0]), np.array([1.0 + 2.0 ** -24, 0.0]), ulps=0.5)
    with pytest.raises(AssertionError, match="sign of zero"):
        assert_ulp_close(np.float32([1.0, -0.0]), np.array([1.0, 0.0]), signed_zeros=True)


def test_shape_mismatch_is_reported():
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(2,\), expected \(3,\)"):
        assert_ulp_close(np.zeros(2, np.float32), np.zeros(3))


def test_bits_equal_tells_zero_signs_and_nan_payloads_apart():
    assert_bits_equal(np.array([1.5, np.nan], BF16), np.array([1.5, np.nan], BF16))
    with pytest.raises(AssertionError, match=r"1 of 2 elements .* differ in their bfloat16 bits"):
        assert_bits_equal(np.array([1.5, -0.0], BF16), np.array([1.5, 0.0], BF16))
    quiet = np.array([0x7FC0], np.uint16).view(BF16)
    payload = np.array([0x7FC1], np.uint16).view(BF16)
    with pytest.raises(AssertionError, match=r"\[0\]\s+nan \(0x7fc0\)\s+nan \(0x7fc1\)"):
        assert_bits_equal(quiet, payload)


def test_bits_equal_rounds_a_float64_oracle_to_nearest_even():
    # 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: even is 1.0
    assert_bits_equal(np.array([1.0], BF16), np.array([1.0 + 2.0 ** -8]))


def test_bits_equal_any_nan_matches_payloads_but_not_numbers():
    nans = np.array([0x7FC0, 0xFFC1], np.uint16).view(BF16)
    other = np.array([0x7FC1, 0x7FC0], np.uint16).view(BF16)
    assert_bits_equal(nans, other, any_nan=True)
    with pytest.raises(AssertionError, match="1 of 2 elements"):
        assert_bits_equal(nans, np.array([np.nan, 1.0], BF16), any_nan=True)


def test_an_integer_output_never_matches_nan():
    with pytest.raises(AssertionError, match="NaN"):
        assert_ulp_close(np.int32([1, 2]), np.array([1.0, np.nan]), ulps=0)


def test_tfloat32_counts_steps_of_its_10_bit_mantissa():
    # tf32 values live in float32 arrays with the low 13 bits zero
    got = ulp_distance(np.float32([1.0, 1.0, 2.0 ** -126, -1.0]),
                       np.array([1.0 + 2.0 ** -10, 1.0 + 2.0 ** -11, 0.0, 1.0]), "tfloat32")
    np.testing.assert_array_equal(got, [1, 0.5, 2 ** 10, 2 * (127 * 2 ** 10)])
