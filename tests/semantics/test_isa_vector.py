"""Vector engine instructions against numpy float64 / ml_dtypes / hand-computed oracles.

Oracle conventions: an fp32 ALU operation is the float64 result rounded once to fp32 (exact for
+ - * / since float64 has more than 2 * 24 + 2 bits); comparisons are exact; reductions are
checked bit-for-bit against the documented left-to-right fp32 order (numpy's sequential
``accumulate``) and against float64 with a derived error bound.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from isa_oracles import (
    ALU,
    U,
    bits,
    f32,
    f64,
    from_bits,
    run,
    sequential_f32,
)

from neuronemu.isa.table import load_isa
from neuronemu.testing import assert_bits_equal, assert_ulp_close

P, N = 8, 32
NAN, INF = np.nan, np.inf

TT_KERNEL = f""".hbm x {{dt}}[{P}, {N}] input
.hbm y {{dt}}[{P}, {N}] input
.hbm z {{out}}[{P}, {N}] output
.sbuf a {{dt}}[{P}, {N}]
.sbuf b {{dt}}[{P}, {N}]
.sbuf c {{out}}[{P}, {N}]
dma.copy a, x
dma.copy b, y
vector.tensor_tensor c, a, b, op={{op}}
dma.copy z, c
"""

# integer-only operators, tested on integer tiles in test_isa_bitvec.py
BITVEC = {"bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"}


def alu64(op: str, x, y) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ALU[op](f64(x), f64(y))


def test_alu_table_lists_every_alu_op() -> None:
    assert set(load_isa().enums["alu_op"].values) == set(ALU) | BITVEC


def _tt_inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((P, N)) * 8).astype(np.float32)
    y = (rng.standard_normal((P, N)) * 8).astype(np.float32)
    # row 0: special pairs. x / 0 = +-inf, 0 / 0 = NaN, inf - inf = NaN, NaN compares unequal,
    # equal and opposite values for the comparisons and abs_max / abs_min, -0.0 only on the
    # right (signed zeros on the left are the subject of test_signed_zero_operands)
    special = [(1.0, 0.0), (-2.0, 0.0), (0.0, 0.0), (3.0, -0.0), (INF, INF), (INF, -INF),
               (NAN, 1.0), (1.0, NAN), (NAN, NAN), (5.0, 5.0), (-5.0, 5.0), (5.0, -5.0),
               (2.5, 2.5), (-7.0, -7.0), (1e30, 1e30), (1e-40, 2e-40), (-1e-40, 1e-40),
               (3e38, 3e38), (-3e38, 3e38), (0.5, -INF), (INF, 0.0), (4.0, 0.5), (-8.0, 3.0),
               (2.0, -3.0), (0.0, -1.0), (-0.5, 2.0)]
    for i, (a, b) in enumerate(special):
        x[0, i], y[0, i] = a, b
    x[1, :] = y[1, :]  # a whole row of equal values
    return x, y


@pytest.mark.parametrize("op", sorted(ALU))
def test_tensor_tensor_every_alu_op(op: str) -> None:
    x, y = _tt_inputs(1)
    if op == "power":  # base > 0 except for the hand-picked row 0
        x[1:] = np.abs(x[1:]) + np.float32(0.125)
        y[1:] = np.clip(y[1:], -6, 6)
    result = run(TT_KERNEL.format(dt="float32", out="float32", op=op), x=x, y=y)
    got = result.outputs["z"]
    expected = f32(alu64(op, x, y))
    if op == "power":
        # pow is not an IEEE basic operation: float64 pow is faithful, so fp32 within 1 ulp
        assert_ulp_close(got, alu64(op, x, y), ulps=1, dtype="float32")
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    elif op in ("maximum", "minimum", "abs_max", "abs_min"):
        # numbers compare by value (which zero max(+0, -0) returns is not specified)
        np.testing.assert_array_equal(got, expected)
    else:
        assert_bits_equal(got, expected, any_nan=True)
    if op in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"):
        assert set(np.unique(bits(got)).tolist()) <= {0x0, 0x3F800000}  # exactly +0.0 / 1.0


def test_divide_by_zero_gives_signed_infinities_and_nan() -> None:
    x = np.array([[1.0, -2.0, 0.0, 3.0, -3.0, 0.0, INF, 1.0]], np.float32)
    y = np.array([[0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0, INF]], np.float32)
    src = """.hbm x float32[1, 8] input
.hbm y float32[1, 8] input
.hbm z float32[1, 8] output
.sbuf a float32[1, 8]
.sbuf b float32[1, 8]
dma.copy a, x
dma.copy b, y
vector.tensor_tensor a, a, b, op=divide
dma.copy z, a
"""
    got = run(src, x=x, y=y).outputs["z"][0]
    # hand-computed IEEE 754 quotients
    expected = np.array([INF, -INF, NAN, -INF, INF, NAN, INF, 0.0], np.float32)
    assert_bits_equal(got, expected, any_nan=True)


@pytest.mark.parametrize("op, pairs", [
    # (x, y, x op y) worked out by hand from IEEE 754 signed-zero rules
    ("add", [(-0.0, -0.0, -0.0), (-0.0, 0.0, 0.0), (-0.0, 2.0, 2.0)]),
    ("subtract", [(-0.0, 0.0, -0.0), (0.0, 0.0, 0.0), (-0.0, -0.0, 0.0)]),
    ("multiply", [(-0.0, 3.0, -0.0), (-0.0, -3.0, 0.0), (-0.0, 0.0, -0.0)]),
    ("divide", [(-0.0, 3.0, -0.0), (-0.0, -3.0, 0.0), (3.0, -0.0, -INF)]),
    ("bypass", [(-0.0, 1.0, -0.0), (-0.0, -0.0, -0.0), (0.0, -0.0, 0.0)]),
])
def test_signed_zero_operands(op: str, pairs) -> None:
    x = np.array([[p[0] for p in pairs]], np.float32)
    y = np.array([[p[1] for p in pairs]], np.float32)
    src = f""".hbm x float32[1, 3] input
.hbm y float32[1, 3] input
.hbm z float32[1, 3] output
.sbuf a float32[1, 3]
.sbuf b float32[1, 3]
dma.copy a, x
dma.copy b, y
vector.tensor_tensor a, a, b, op={op}
dma.copy z, a
"""
    got = run(src, x=x, y=y).outputs["z"][0]
    assert_bits_equal(got, np.array([p[2] for p in pairs], np.float32), any_nan=True)


def test_power_special_cases() -> None:
    # C99 / IEEE pow special cases, by hand
    cases = [(2.0, 10.0, 1024.0), (-2.0, 3.0, -8.0), (-2.0, 2.0, 4.0), (-8.0, 1 / 3, NAN),
             (0.0, -1.0, INF), (0.0, 0.0, 1.0), (NAN, 0.0, 1.0), (1.0, NAN, 1.0),
             (4.0, 0.5, 2.0), (9.0, -0.5, 1 / 3), (2.0, 200.0, INF), (2.0, -200.0, 0.0),
             (-0.0, 3.0, -0.0), (10.0, -1.0, 0.1)]
    n = len(cases)
    x = np.array([[c[0] for c in cases]], np.float32)
    y = np.array([[c[1] for c in cases]], np.float32)
    src = TT_KERNEL.replace(f"[{P}, {N}]", f"[1, {n}]").format(dt="float32", out="float32",
                                                               op="power")
    got = run(src, x=x, y=y).outputs["z"][0]
    expected = f32([c[2] for c in cases])
    expected[3] = NAN
    assert_bits_equal(got, expected, any_nan=True)


def test_tensor_tensor_bf16_operands_round_result_once_into_bf16() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((P, N)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((P, N)).astype(ml_dtypes.bfloat16)
    result = run(TT_KERNEL.format(dt="bfloat16", out="bfloat16", op="multiply"), x=x, y=y)
    # bf16 x bf16 is exact in float64 (and in fp32), so one rounding to bf16
    expected = (f64(x) * f64(y)).astype(np.float32).astype(ml_dtypes.bfloat16)
    assert_bits_equal(result.outputs["z"], expected, any_nan=True)


# ---- tensor_scalar -------------------------------------------------------------------------------

TS_DECLS = f""".hbm x float32[{P}, {N}] input
.hbm s float32[{P}, 1] input
.hbm t float32[{P}, 1] input
.hbm z {{out}}[{P}, {N}] output
.sbuf a float32[{P}, {N}]
.sbuf col float32[{P}, 1]
.sbuf col2 float32[{P}, 1]
.sbuf c {{out}}[{P}, {N}]
dma.copy a, x
dma.copy col, s
dma.copy col2, t
"""


def _ts_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.25, 4.0, (P, N)).astype(np.float32)
    s = rng.uniform(0.25, 4.0, (P, 1)).astype(np.float32)
    t = rng.uniform(-2.0, 2.0, (P, 1)).astype(np.float32)
    x[:, 0] = s[:, 0]  # equal to the column: the comparisons see ties
    x[:, 1] = -s[:, 0]
    return {"x": x, "s": s, "t": t}


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", sorted(ALU))
def test_tensor_scalar_each_op_with_column_operand(op: str, reverse: bool) -> None:
    data = _ts_inputs(3)
    if op == "power":
        data["x"] = np.abs(data["x"])
    flag = "true" if reverse else "false"
    result = run(TS_DECLS.format(out="float32")
                 + f"vector.tensor_scalar c, a, op0={op}, operand0=col, reverse0={flag}\n"
                 + "dma.copy z, c\n", **data)
    x, s = data["x"], data["s"]  # s broadcasts along the free axis
    expected64 = np.broadcast_to(alu64(op, s, x) if reverse else alu64(op, x, s), x.shape)
    got = result.outputs["z"]
    if op == "power":
        assert_ulp_close(got, expected64, ulps=1, dtype="float32")
    else:
        np.testing.assert_array_equal(got, f32(expected64))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "maximum",
                                "greater", "abs_min"])
def test_tensor_scalar_immediate_operand(op: str) -> None:
    data = _ts_inputs(4)
    result = run(TS_DECLS.format(out="float32")
                 + f"vector.tensor_scalar c, a, op0={op}, operand0=-1.75\ndma.copy z, c\n",
                 **data)
    np.testing.assert_array_equal(result.outputs["z"], f32(alu64(op, data["x"], -1.75)))


@pytest.mark.parametrize("reverse0, reverse1", [(False, False), (True, False), (False, True),
                                                (True, True)])
def test_tensor_scalar_two_stages_round_each_stage(reverse0: bool, reverse1: bool) -> None:
    data = _ts_inputs(5)
    r0, r1 = ("true" if r else "false" for r in (reverse0, reverse1))
    result = run(TS_DECLS.format(out="float32")
                 + f"vector.tensor_scalar c, a, op0=subtract, operand0=col, reverse0={r0}, "
                   f"op1=divide, operand1=col2, reverse1={r1}\ndma.copy z, c\n", **data)
    x, s, t = (f64(data[k]) for k in "xst")
    stage0 = f64(f32(s - x if reverse0 else x - s))  # fp32 after each stage
    with np.errstate(divide="ignore"):  # x == s gives a zero stage: +-inf, as fp32 divides
        expected = f32(t / stage0 if reverse1 else stage0 / t)
    assert_bits_equal(result.outputs["z"], expected, any_nan=True)


def test_tensor_scalar_into_bf16_with_immediate_second_operand() -> None:
    data = _ts_inputs(6)
    result = run(TS_DECLS.format(out="bfloat16")
                 + "vector.tensor_scalar c, a, op0=multiply, operand0=col, op1=add, "
                   "operand1=0.1\ndma.copy z, c\n", **data)
    stage0 = f32(f64(data["x"]) * f64(data["s"]))
    # the immediate is an fp32 value: 0.1 rounds to fp32 before the add
    expected = f32(f64(stage0) + f64(np.float32(0.1))).astype(ml_dtypes.bfloat16)
    assert_bits_equal(result.outputs["z"], expected, any_nan=True)


@pytest.mark.parametrize("operand", ["-0.0", "col"])
def test_tensor_scalar_negative_zero_operand(operand: str) -> None:
    x = np.array([[1.0, -2.0, 0.0, 5.0]], np.float32)
    src = f""".hbm x float32[1, 4] input
.hbm s float32[1, 1] input
.sbuf a float32[1, 4]
.sbuf col float32[1, 1]
.sbuf q float32[1, 4]
.sbuf m float32[1, 4]
dma.copy a, x
dma.copy col, s
vector.tensor_scalar q, a, op0=divide, operand0={operand}
vector.tensor_scalar m, a, op0=multiply, operand0={operand}
"""
    result = run(src, x=x, s=np.array([[-0.0]], np.float32))
    # IEEE: x / -0 = -sign(x) inf, 0 / -0 = NaN; x * -0 = -0 for x > 0, +0 for x < 0
    assert_bits_equal(result.tiles["q"][0], np.array([-INF, INF, NAN, -INF], np.float32), any_nan=True)
    assert_bits_equal(result.tiles["m"][0], np.array([-0.0, 0.0, -0.0, -0.0], np.float32), any_nan=True)


# ---- tensor_reduce -----------------------------------------------------------------------------

REDUCE_SEQ = {"add": np.add, "multiply": np.multiply}
REDUCE_64 = {"add": np.sum, "multiply": np.prod, "maximum": np.max, "minimum": np.min,
             "average": np.mean}


def test_reduce_table_lists_every_reduce_op() -> None:
    assert set(load_isa().enums["reduce_op"].values) == set(REDUCE_64)


@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("groups", [1, 4])
@pytest.mark.parametrize("op", sorted(REDUCE_64))
def test_tensor_reduce(op: str, groups: int, negate: bool) -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5, (P, N)).astype(np.float32)
    x[:, 3] *= -1  # a sign change
    src = f""".hbm x float32[{P}, {N}] input
.hbm z float32[{P}, {groups}] output
.sbuf a float32[{P}, {N}]
.sbuf r float32[{P}, {groups}]
dma.copy a, x
vector.tensor_reduce r, a, op={op}, negate={'true' if negate else 'false'}
dma.copy z, r
"""
    got = run(src, x=x).outputs["z"]
    sign = -1.0 if negate else 1.0
    runs = x.reshape(P, groups, N // groups)  # dst[p, j] reduces data[p, j*R:(j+1)*R]
    exact = REDUCE_64[op](f64(runs), axis=2) * sign
    if op in ("maximum", "minimum"):
        np.testing.assert_array_equal(got, f32(exact))
        return
    r = N // groups
    # r - 1 roundings of a sequential fp32 fold (+1 for the division of average):
    # |error| <= gamma_r * sum|x| for add/average, relative gamma_r for a product
    scale = np.abs(exact) if op == "multiply" else REDUCE_64[op](np.abs(f64(runs)), axis=2)
    assert np.all(np.abs(f64(got) - exact) <= 1.01 * r * U * scale)
    if op in REDUCE_SEQ:  # and bit-for-bit the documented left-to-right order
        assert_bits_equal(got, sign * sequential_f32(REDUCE_SEQ[op], runs, axis=2), any_nan=True)


def test_tensor_reduce_over_a_3d_tile_and_nan_propagation() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((P, 4, 8)).astype(np.float32)
    x[2, 1, 5] = NAN
    src = f""".hbm x float32[{P}, 4, 8] input
.hbm z float32[{P}, 4] output
.sbuf a float32[{P}, 4, 8]
.sbuf r float32[{P}, 4]
dma.copy a, x
vector.tensor_reduce r, a, op=maximum
dma.copy z, r
"""
    got = run(src, x=x).outputs["z"]
    expected = np.max(x, axis=2)  # numpy's max propagates NaN
    assert np.isnan(expected[2, 1])
    assert_bits_equal(got, expected, any_nan=True)


# ---- tensor_copy ---------------------------------------------------------------------------------

NARROW_FLOATS = ["bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                 "float8_e3m4"]


def _np_dtype(name: str):
    return np.dtype(name) if name in ("float16", "float32") else getattr(ml_dtypes, name)


def _random_f32_patterns(shape, seed: int) -> np.ndarray:
    """fp32 values of every class: random bit patterns (NaNs with payloads, infinities,
    subnormals), plus values near the narrow formats' rounding boundaries."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x.copy()
    flat = x.reshape(-1)
    quarter = flat.size // 4
    flat[:quarter] = rng.standard_normal(quarter) * 100
    # exact ties of bf16 (low 16 bits 0x8000) and of fp8 scales
    ties = (rng.integers(0, 2**16, quarter, dtype=np.uint32) << 16) | 0x8000
    flat[quarter:2 * quarter] = ties.view(np.float32)
    flat[:8] = [NAN, -NAN, INF, -INF, 0.0, -0.0, 3.4e38, 1e-45]
    return x


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
def test_tensor_copy_fp32_to_narrow_matches_ml_dtypes_bits(engine: str, dtype: str) -> None:
    x = _random_f32_patterns((16, 64), seed=9)
    src = f""".hbm x float32[16, 64] input
.hbm z {dtype}[16, 64] output
.sbuf a float32[16, 64]
.sbuf h {dtype}[16, 64]
dma.copy a, x
{engine}.tensor_copy h, a
dma.copy z, h
"""
    got = run(src, x=x).outputs["z"]
    with np.errstate(all="ignore"):
        expected = x.astype(_np_dtype(dtype))
    np.testing.assert_array_equal(bits(got), bits(expected))


@pytest.mark.parametrize("dtype", NARROW_FLOATS)
def test_tensor_copy_narrow_to_fp32_is_exact(dtype: str) -> None:
    """Every bit pattern of the narrow dtype widens like ml_dtypes / numpy astype(float32),
    NaN payloads included (docs/numerics.md)."""
    width = 16 if dtype in ("bfloat16", "float16") else 8
    patterns = np.arange(2**width, dtype=np.uint32)
    rows = 128
    patterns = patterns.reshape(rows, -1)
    n = patterns.shape[1]
    x = from_bits(patterns, _np_dtype(dtype))
    src = f""".hbm x {dtype}[{rows}, {n}] input
.hbm z float32[{rows}, {n}] output
.sbuf h {dtype}[{rows}, {n}]
.sbuf a float32[{rows}, {n}]
dma.copy h, x
vector.tensor_copy a, h
dma.copy z, a
"""
    got = run(src, x=x).outputs["z"]
    np.testing.assert_array_equal(bits(got), bits(x.astype(np.float32)))


@pytest.mark.parametrize("dtype, lo, hi", [("int8", -128, 127), ("uint8", 0, 255),
                                           ("int16", -32768, 32767), ("uint16", 0, 65535),
                                           ("int32", -2**31, 2**31 - 1),
                                           ("uint32", 0, 2**32 - 1)])
def test_tensor_copy_fp32_to_int_rounds_half_even_and_saturates(dtype: str, lo: int,
                                                                hi: int) -> None:
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 126.6, -3.7, 1e10, -1e10, INF, -INF,
              NAN, 300.0, -300.0, 65535.5, 70000.0, 2147483520.0, -0.0]
    x = np.array([values], np.float32)
    n = len(values)
    src = f""".hbm x float32[1, {n}] input
.hbm z {dtype}[1, {n}] output
.sbuf a float32[1, {n}]
.sbuf i {dtype}[1, {n}]
dma.copy a, x
vector.tensor_copy i, a
dma.copy z, i
"""
    got = run(src, x=x).outputs["z"][0]
    # docs/numerics.md: round to nearest even, saturate, NaN -> 0
    expected = np.clip(np.nan_to_num(np.rint(f64(x[0])), nan=0.0, posinf=hi, neginf=lo), lo, hi)
    np.testing.assert_array_equal(got.astype(np.int64), expected.astype(np.int64))


def test_tensor_copy_int32_to_fp32_rounds_to_nearest_even() -> None:
    values = np.array([[0, -1, 2**24 + 1, 2**24 + 3, -(2**31), 2**31 - 1, 123456789, 7]],
                      np.int32)
    src = """.hbm x int32[1, 8] input
.hbm z float32[1, 8] output
.sbuf i int32[1, 8]
.sbuf a float32[1, 8]
dma.copy i, x
vector.tensor_copy a, i
dma.copy z, a
"""
    got = run(src, x=values).outputs["z"]
    np.testing.assert_array_equal(got, f32(f64(values)))  # one rounding of the exact integer


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("dtype, patterns", [
    ("float32", [0x7F800001, 0xFFBADBAD, 0x7FC12345, 0x80000000, 0x00000001, 0x3F800000]),
    ("bfloat16", [0x7F81, 0xFFA5, 0x7FC1, 0x8000, 0x0001, 0x3F80]),
    ("float16", [0x7C01, 0xFE05, 0x7E00, 0x8000, 0x0001, 0x3C00]),
    ("float8_e4m3fn", [0x7F, 0xFF, 0x80, 0x01, 0x38, 0x7E]),
    ("float8_e5m2", [0x7D, 0xFE, 0x7F, 0x80, 0x01, 0x3C]),
])
def test_same_dtype_copies_keep_bits(engine: str, dtype: str, patterns) -> None:
    """NaN payloads (signalling ones too) and -0.0 survive copies between equal dtypes, dense
    and strided."""
    values = from_bits(np.tile(np.array(patterns, np.uint32), (4, 2)), _np_dtype(dtype))
    n = values.shape[1]
    space = "sbuf" if engine == "gpsimd" else "psum"
    src = f""".hbm x {dtype}[4, {n}] input
.sbuf a {dtype}[4, {n}]
.{space} b {dtype}[4, {n}]
.sbuf c {dtype}[4, {n}]
dma.copy a, x
{engine}.tensor_copy b, a
{engine}.tensor_copy c[:, 0:{n}:2], b[:, 1:{n}:2]
{engine}.tensor_copy c[:, 1:{n}:2], b[:, 0:{n}:2]
"""
    result = run(src, x=values)
    np.testing.assert_array_equal(bits(result.tiles["b"]), bits(values))
    swapped = values.copy()
    swapped[:, 0::2], swapped[:, 1::2] = values[:, 1::2], values[:, 0::2]
    np.testing.assert_array_equal(bits(result.tiles["c"]), bits(swapped))


# ---- memset ----------------------------------------------------------------------------------

def _tf32(value: float) -> np.ndarray:
    """fp32 rounded to tf32 by hand: round to nearest even at bit 13, low 13 bits cleared."""
    b = int(np.float32(value).view(np.uint32))
    b = (b + 0xFFF + ((b >> 13) & 1)) & ~0x1FFF
    return np.array(b, np.uint32).view(np.float32)


FLOAT_DTYPES = ["float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2",
                "float8_e3m4"]
# (dtype, value, expected element) for integer dtypes: round half to even, saturate
INT_CASES = [("int8", -2.5, -2), ("int8", 300.0, 127), ("uint8", -7.0, 0), ("uint8", 3.5, 4),
             ("int16", -40000.0, -32768), ("uint16", 65535.4, 65535), ("int32", -123456.5, -123456),
             ("int32", 1e10, 2**31 - 1), ("uint32", 4000000000.0, 4000000000),
             ("bool_", 2.0, True), ("bool_", 0.0, False)]


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("value", [-1.0 / 3.0, 1000.0, 1e-6, -0.0])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["tfloat32"])
def test_memset_float_dtypes(engine: str, dtype: str, value: float) -> None:
    src = f""".sbuf t {dtype}[4, 8]
{engine}.memset t, value={value!r}
"""
    got = run(src).tiles["t"]
    if dtype == "tfloat32":
        expected = np.full((4, 8), _tf32(value))
    else:
        with np.errstate(all="ignore"):  # the value is an fp32 immediate, then cast
            expected = np.full((4, 8), np.float32(value)).astype(_np_dtype(dtype))
    np.testing.assert_array_equal(bits(got), bits(expected))


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("dtype, value, element", INT_CASES)
def test_memset_integer_dtypes(engine: str, dtype: str, value: float, element) -> None:
    got = run(f".sbuf t {dtype}[4, 8]\n{engine}.memset t, value={value!r}\n").tiles["t"]
    assert got.dtype == np.dtype(dtype.rstrip("_") if dtype == "bool_" else dtype)
    np.testing.assert_array_equal(got, np.full((4, 8), element))


# ---- reciprocal ------------------------------------------------------------------------------

def test_reciprocal_is_correctly_rounded() -> None:
    rng = np.random.default_rng(10)
    x = rng.uniform(-100, 100, (P, N)).astype(np.float32)
    x[0, :8] = [0.0, -0.0, INF, -INF, NAN, 1e-40, 3.0, -7.0]  # 1e-40 -> 1e40 overflows to inf
    src = f""".hbm x float32[{P}, {N}] input
.hbm z float32[{P}, {N}] output
.sbuf a float32[{P}, {N}]
dma.copy a, x
vector.reciprocal a, a
dma.copy z, a
"""
    got = run(src, x=x).outputs["z"]
    with np.errstate(all="ignore"):
        expected = f32(1.0 / f64(x))
    assert_bits_equal(got, expected, any_nan=True)
    assert_bits_equal(got[0, :6], np.array([INF, -INF, 0.0, -0.0, NAN, INF], np.float32), any_nan=True)


# ---- bn_stats / bn_aggr --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [32, 7])
def test_bn_stats_even_and_odd_elements(n: int) -> None:
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((P, n)) * 3 + 5).astype(np.float32)
    src = f""".hbm x float32[{P}, {n}] input
.sbuf a float32[{P}, {n}]
.sbuf s float32[{P}, 6]
dma.copy a, x
vector.bn_stats s, a
"""
    stats = f64(run(src, x=x).tiles["s"])
    for parity in (0, 1):
        part = f64(x[:, parity::2])
        count = part.shape[1]
        np.testing.assert_array_equal(stats[:, 3 * parity], count)
        mean = part.mean(axis=1)
        m2 = ((part - mean[:, None]) ** 2).sum(axis=1)
        # mean: a sequential fp32 sum and a division, (count + 1) u relative to mean(|x|);
        # M2: count fp32 subtractions, squares and additions, ~ (count + 3) u relative
        mean_abs = np.abs(part).mean(axis=1)
        assert np.all(np.abs(stats[:, 3 * parity + 1] - mean) <= (count + 1) * U * mean_abs)
        np.testing.assert_allclose(stats[:, 3 * parity + 2], m2, rtol=(count + 4) * U)


def test_bn_aggr_over_chunks_gives_mean_and_population_variance() -> None:
    rng = np.random.default_rng(12)
    chunks, width = 3, 64
    x = (rng.standard_normal((P, chunks * width)) * 2 - 3).astype(np.float32)
    stats = "\n".join(f"vector.bn_stats s[:, {6 * c}:{6 * c + 6}], a[:, {width * c}:{width * c + width}]"
                      for c in range(chunks))
    src = f""".hbm x float32[{P}, {chunks * width}] input
.hbm z float32[{P}, 2] output
.sbuf a float32[{P}, {chunks * width}]
.sbuf s float32[{P}, {6 * chunks}]
.sbuf mv float32[{P}, 2]
dma.copy a, x
{stats}
vector.bn_aggr mv, s
dma.copy z, mv
"""
    got = f64(run(src, x=x).outputs["z"])
    n = chunks * width
    np.testing.assert_allclose(got[:, 0], np.mean(f64(x), axis=1), rtol=2 * n * U)
    np.testing.assert_allclose(got[:, 1], np.var(f64(x), axis=1), rtol=2 * n * U)


def test_bn_aggr_of_hand_made_triples() -> None:
    """Two groups (count 2, mean 1, M2 0.5) and (count 2, mean 3, M2 0.5), and an empty group:
    mean 2, M2 = 0.5 + 0.5 + (3 - 1)^2 * 2 * 2 / 4 = 5, variance 5 / 4 (all exact in fp32)."""
    triples = np.array([[2.0, 1.0, 0.5, 0.0, 0.0, 0.0, 2.0, 3.0, 0.5]] * 2, np.float32)
    src = """.hbm x float32[2, 9] input
.sbuf s float32[2, 9]
.sbuf mv float32[2, 2]
dma.copy s, x
vector.bn_aggr mv, s
"""
    np.testing.assert_array_equal(run(src, x=triples).tiles["mv"],
                                  np.array([[2.0, 1.25]] * 2, np.float32))


# ---- vector.transpose ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, p, f", [("float32", 32, 32), ("bfloat16", 16, 32),
                                         ("float32", 32, 5), ("int32", 32, 32)])
def test_vector_transpose_is_bit_exact(dtype: str, p: int, f: int) -> None:
    rng = np.random.default_rng(13)
    np_dtype = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32}[dtype]
    x = rng.standard_normal((p, f)).astype(np.float32).astype(np_dtype)
    if dtype == "int32":
        x = rng.integers(-2**31, 2**31 - 1, (p, f), dtype=np.int64).astype(np.int32)
    elif dtype == "float32":
        x[0, 0] = from_bits(0x7F800001, np.float32)  # a signalling NaN moves as bits
        x[1, 0] = -0.0
    src = f""".hbm x {dtype}[{p}, {f}] input
.sbuf s {dtype}[{p}, {f}]
.sbuf t {dtype}[{f}, {p}]
dma.copy s, x
vector.transpose t, s
"""
    np.testing.assert_array_equal(bits(run(src, x=x).tiles["t"]), bits(x.T))


# ---- the other Vector instructions -------------------------------------------------------------

SEARCH_DECLS = f""".hbm x float32[{P}, {N}] input
.hbm y float32[{P}, {N}] input
.hbm s float32[{P}, 1] input
.sbuf a float32[{P}, {N}]
.sbuf b float32[{P}, {N}]
.sbuf col float32[{P}, 1]
.sbuf d float32[{P}, {N}]
.sbuf red float32[{P}, 1]
dma.copy a, x
dma.copy b, y
dma.copy col, s
"""


def _xys(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-2, 2, (P, N)).astype(np.float32),
            "y": rng.uniform(-2, 2, (P, N)).astype(np.float32),
            "s": rng.uniform(0.5, 1.5, (P, 1)).astype(np.float32)}


@pytest.mark.parametrize("reverse0, reverse1", [(False, False), (True, True)])
def test_scalar_tensor_tensor(reverse0: bool, reverse1: bool) -> None:
    data = _xys(14)
    r0, r1 = ("true" if r else "false" for r in (reverse0, reverse1))
    result = run(SEARCH_DECLS + f"vector.scalar_tensor_tensor d, a, op0=subtract, operand0=col, "
                 f"op1=divide, operand1=b, reverse0={r0}, reverse1={r1}\n", **data)
    x, y, s = (f64(data[k]) for k in "xys")
    t = f64(f32(s - x if reverse0 else x - s))
    assert_bits_equal(result.tiles["d"], f32(y / t if reverse1 else t / y), any_nan=True)


def test_tensor_tensor_scan_linear_recurrence() -> None:
    data = _xys(15)
    result = run(SEARCH_DECLS + "vector.tensor_tensor_scan d, a, b, initial=col, op0=multiply, "
                                "op1=add\n", **data)
    # h[i] = x[i] * h[i-1] + y[i], h[-1] = s, each operation rounded to fp32
    h = f64(data["s"][:, 0])
    expected = np.empty((P, N), np.float32)
    for i in range(N):
        h = f64(f32(f64(f32(f64(data["x"][:, i]) * h)) + f64(data["y"][:, i])))
        expected[:, i] = h
    assert_bits_equal(result.tiles["d"], expected, any_nan=True)


def test_tensor_tensor_scan_running_max_with_immediate_initial() -> None:
    data = _xys(16)
    result = run(SEARCH_DECLS + "vector.tensor_tensor_scan d, a, b, initial=-100.0, "
                                "op0=maximum, op1=bypass\n", **data)
    # t = max(x[i], previous); bypass passes t: the running maximum of x
    np.testing.assert_array_equal(result.tiles["d"], np.maximum.accumulate(data["x"], axis=1))


@pytest.mark.parametrize("reduce_op", sorted(REDUCE_64))
def test_tensor_scalar_reduce(reduce_op: str) -> None:
    data = _xys(17)
    data["x"] = np.abs(data["x"]) + np.float32(0.5)
    result = run(SEARCH_DECLS + f"vector.tensor_scalar_reduce d, a, op0=multiply, operand0=col, "
                 f"reduce_op={reduce_op}, reduce_res=red\n", **data)
    scaled = f32(f64(data["x"]) * f64(data["s"]))
    assert_bits_equal(result.tiles["d"], scaled, any_nan=True)
    exact = REDUCE_64[reduce_op](f64(scaled), axis=1)
    got = f64(result.tiles["red"][:, 0])
    if reduce_op in ("maximum", "minimum"):
        np.testing.assert_array_equal(got, exact)
    else:  # positive terms: relative error <= N u (one more rounding for average)
        np.testing.assert_allclose(got, exact, rtol=(N + 1) * U)


@pytest.mark.parametrize("pred_dtype", ["uint8", "uint16", "uint32"])
@pytest.mark.parametrize("reverse", [False, True])
def test_tensor_copy_predicated(pred_dtype: str, reverse: bool) -> None:
    rng = np.random.default_rng(18)
    src_vals = rng.standard_normal((P, N)).astype(np.float32)
    src_vals[0, 0] = from_bits(0x7FA00001, np.float32)
    keep = rng.standard_normal((P, N)).astype(np.float32)
    mask = (rng.random((P, N)) < 0.5) * rng.integers(1, 200, (P, N))
    mask = mask.astype(pred_dtype)
    mask[0, 0] = 0 if reverse else 7
    source = f""".hbm s float32[{P}, {N}] input
.hbm k float32[{P}, {N}] input
.hbm m {pred_dtype}[{P}, {N}] input
.sbuf st float32[{P}, {N}]
.sbuf dt float32[{P}, {N}]
.sbuf mt {pred_dtype}[{P}, {N}]
dma.copy st, s
dma.copy dt, k
dma.copy mt, m
vector.tensor_copy_predicated dt, st, mt, reverse_pred={'true' if reverse else 'false'}
"""
    got = run(source, s=src_vals, k=keep, m=mask).tiles["dt"]
    take = (mask != 0) != reverse
    np.testing.assert_array_equal(bits(got), bits(np.where(take, src_vals, keep)))


def _occurrences(x, vals):
    """find_index8's oracle: slot k gets the first position equal to vals[p, k] that no
    earlier slot took (a value given n times: its first n positions, in order)."""
    out = np.full(vals.shape, 0xFFFFFFFF, np.int64)
    for p in range(x.shape[0]):
        taken = set()
        for k, v in enumerate(vals[p]):
            free = [i for i in np.flatnonzero(x[p] == v) if i not in taken]
            if free:
                out[p, k] = free[0]
                taken.add(free[0])
    return out


def test_max8_and_find_index8() -> None:
    rng = np.random.default_rng(19)
    x = rng.permutation(np.arange(P * N, dtype=np.float32)).reshape(P, N) - 100
    x[:, 4] = x[:, 9]            # a duplicate: the two equal top values get both positions
    x[1, 2] = INF
    source = f""".hbm x float32[{P}, {N}] input
.sbuf s float32[{P}, {N}]
.sbuf top float32[{P}, 8]
.sbuf where uint32[{P}, 8]
.sbuf missing float32[{P}, 8]
.sbuf none uint16[{P}, 8]
dma.copy s, x
vector.max8 top, s
vector.find_index8 where, s, top
vector.memset missing, value=0.25
vector.find_index8 none, s, missing
"""
    result = run(source, x=x)
    top = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(result.tiles["top"], top)
    np.testing.assert_array_equal(result.tiles["where"], _occurrences(x, top).astype(np.uint32))
    np.testing.assert_array_equal(result.tiles["none"], np.full((P, 8), 0xFFFF, np.uint16))


def test_max8_ranks_nan_above_infinity() -> None:
    x = np.array([[1.0, NAN, INF, -INF, 5.0, 2.0, 3.0, 4.0, 0.0, -1.0]], np.float32)
    source = """.hbm x float32[1, 10] input
.sbuf s float32[1, 10]
.sbuf top float32[1, 8]
dma.copy s, x
vector.max8 top, s
"""
    got = run(source, x=x).tiles["top"][0]
    assert_bits_equal(got[1:], np.array([INF, 5, 4, 3, 2, 1, 0], np.float32), any_nan=True)
    assert np.isnan(got[0])


def test_find_index8_gives_a_repeated_value_its_successive_positions() -> None:
    """Eight copies of one value find its first eight positions (nki-library's topk_reduce
    gathers the K rows of one token so); a value with fewer occurrences than copies gets all
    ones in the slots left over."""
    x = np.zeros((2, 16), np.float32)
    x[0, [1, 3, 4, 8, 9, 11, 14, 15]] = 5.0
    x[1, [2, 6]] = 5.0
    vals = np.full((2, 8), 5.0, np.float32)
    vals[1, 3] = 0.0   # zeros are at every other position of row 1
    source = """.hbm x float32[2, 16] input
.hbm v float32[2, 8] input
.sbuf s float32[2, 16]
.sbuf t float32[2, 8]
.sbuf where uint32[2, 8]
dma.copy s, x
dma.copy t, v
vector.find_index8 where, s, t
"""
    got = run(source, x=x, v=vals).tiles["where"]
    np.testing.assert_array_equal(got[0], [1, 3, 4, 8, 9, 11, 14, 15])
    none = 0xFFFFFFFF
    np.testing.assert_array_equal(got[1], [2, 6, none, 0, none, none, none, none])
    np.testing.assert_array_equal(got, _occurrences(x, vals))
