"""Integer tiles through the engines' loads and stores: random values over every range on wide
tiles, against numpy's conversions of the same values (round to nearest even, saturate, NaN as 0
into integers; one rounding of the exact integer into fp32)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu

BOUNDS = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
          "uint16": (0, 65535), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1)}


def _run(source: str, **inputs) -> dict:
    return neuronemu.run(neuronemu.assemble(source, filename="t.s"), inputs=inputs).outputs


@pytest.mark.parametrize("dtype", sorted(BOUNDS))
def test_fp32_into_integers_on_a_wide_tile(dtype: str) -> None:
    lo, hi = BOUNDS[dtype]
    rng = np.random.default_rng(len(dtype))
    x = rng.uniform(lo * 1.3 - 5, hi * 1.3 + 5, (64, 300)).astype(np.float32)
    x[0, :6] = [np.nan, np.inf, -np.inf, 0.5, 1.5, -2.5]
    source = f""".hbm x float32[64, 300] input
.hbm z {dtype}[64, 300] output
.sbuf a float32[64, 300]
.sbuf i {dtype}[64, 300]
dma.copy a, x
vector.tensor_copy i, a
dma.copy z, i
"""
    got = _run(source, x=x)["z"]
    want = np.clip(np.nan_to_num(np.rint(x.astype(np.float64)), nan=0.0, posinf=hi, neginf=lo),
                   lo, hi).astype(np.int64)
    np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_wide_integers_into_fp32_round_once(dtype: str) -> None:
    lo, hi = BOUNDS[dtype]
    x = np.random.default_rng(5).integers(lo, hi, (64, 300), endpoint=True).astype(dtype)
    source = f""".hbm x {dtype}[64, 300] input
.hbm z float32[64, 300] output
.sbuf i {dtype}[64, 300]
.sbuf a float32[64, 300]
dma.copy i, x
gpsimd.tensor_copy a, i
dma.copy z, a
"""
    np.testing.assert_array_equal(_run(source, x=x)["z"], x.astype(np.float64).astype(np.float32))


def test_iota_into_int32_is_the_fp32_affine_value_stored() -> None:
    source = """.hbm z int32[128, 512] output
.sbuf i int32[128, 512]
gpsimd.iota i, base=-1000, channel_multiplier=70001, step=3
dma.copy z, i
"""
    p, j = np.meshgrid(np.arange(128), np.arange(512), indexing="ij")
    value = (-1000 + p * 70001 + j * 3).astype(np.float32)   # the summary: cast to dst's dtype
    np.testing.assert_array_equal(_run(source)["z"], value.astype(np.float64).astype(np.int32))


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "invert",
                                "left_shift", "right_shift"])
@pytest.mark.parametrize(("a_type", "b_type"), [("int32", "int32"), ("uint32", "int32"),
                                                ("int32", "uint32")])
def test_word_bitvec_in_place_with_signed_counts(op: str, a_type: str, b_type: str) -> None:
    """The uint32 row path of bitvec tensor_tensor, written onto its first operand at a
    partition offset; shift counts are b's values (negative ones, from int32, give 0)."""
    rng = np.random.default_rng(len(op))
    lo, hi = BOUNDS[a_type]
    x = rng.integers(lo, hi, (16, 48), endpoint=True).astype(a_type)
    y = rng.integers(-8, 40, (16, 48)).astype(b_type) if "shift" in op else \
        rng.integers(*BOUNDS[b_type], (16, 48), endpoint=True).astype(b_type)
    source = f""".hbm x {a_type}[16, 48] input
.hbm y {b_type}[16, 48] input
.hbm z {a_type}[16, 48] output
.sbuf a {a_type}[16, 48]
.sbuf b {b_type}[16, 48]
dma.copy a, x
dma.copy b, y
vector.tensor_tensor a[3:13, 8:40], a[3:13, 8:40], b[3:13, 8:40], op={op}
dma.copy z, a
"""
    got = _run(source, x=x, y=y)["z"].view(np.uint32)
    ux, uy = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    count = y.astype(np.int64)   # the value, signed for int32
    in_range = (count >= 0) & (count < 32)
    shift = np.where(in_range, count, 0).astype(np.uint64)
    result = {"bitwise_and": ux & uy, "bitwise_or": ux | uy, "bitwise_xor": ux ^ uy,
              "invert": ~ux, "left_shift": np.where(in_range, ux << shift, 0),
              "right_shift": np.where(in_range, ux >> shift, 0)}[op]
    want = x.view(np.uint32).copy()
    want[3:13, 8:40] = (result & np.uint64(0xFFFFFFFF)).astype(np.uint32)[3:13, 8:40]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
def test_iota_rounds_through_fp32_and_saturates(dtype: str) -> None:
    """Affine values in int32 (wrapping), then as any store of fp32 values: past 2**24 they
    are rounded to fp32 first; negative ones saturate to 0 in uint32."""
    source = f""".hbm z {dtype}[128, 40] output
.sbuf i {dtype}[128, 40]
gpsimd.iota i[:, 4:36], base=-300, channel_multiplier=16777259, step=7
dma.copy z[:, 4:36], i[:, 4:36]
"""
    p, j = np.meshgrid(np.arange(128, dtype=np.int64), np.arange(32, dtype=np.int64),
                       indexing="ij")
    value = (-300 + p * 16777259 + j * 7).astype(np.int32)   # int32 arithmetic, wrapping
    lo, hi = BOUNDS[dtype]
    want = np.clip(value.astype(np.float32).astype(np.float64), lo, hi).astype(np.int64)
    got = _run(source)["z"][:, 4:36].astype(np.int64)
    np.testing.assert_array_equal(got, want)
