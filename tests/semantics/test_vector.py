"""Vector engine instructions against numpy float64 / ml_dtypes oracles."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from isa_oracles import ALU as ALU_ORACLES
from kernel_helpers import run_kernel

P, N = 8, 64
TILES = f"""
.sbuf a float32[{P}, {N}]
.sbuf b float32[{P}, {N}]
.sbuf c float32[{P}, {N}]
.sbuf col float32[{P}, 1]
.hbm out float32[{P}, {N}] output
"""
LOAD_AB = "dma.copy a, x\ndma.copy b, y\n"


def _xy(rng) -> dict[str, np.ndarray]:
    x = (rng.standard_normal((P, N)) * 4).astype(np.float32)
    y = (rng.standard_normal((P, N)) * 4).astype(np.float32)
    y[0, :4] = [0.0, -0.0, x[0, 2], -x[0, 3]]  # division by zero, equal and opposite values
    x[0, 1] = 0.0                               # 0 / -0 = NaN
    return {"x": x, "y": y}


def _rounded(values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float32)


# the shared float64 oracles; power has its own tolerance test below
ALU = {name: fn for name, fn in ALU_ORACLES.items() if name != "power"}


@pytest.mark.parametrize("op", sorted(ALU))
def test_tensor_tensor(op: str, rng) -> None:
    data = _xy(rng)
    result = run_kernel(LOAD_AB + f"vector.tensor_tensor c, a, b, op={op}\ndma.copy out, c",
                        inputs=data, decls=TILES)
    x, y = (data[k].astype(np.float64) for k in "xy")
    with np.errstate(all="ignore"):
        expected = _rounded(ALU[op](x, y))
    np.testing.assert_array_equal(result.outputs["out"], expected)


def test_tensor_tensor_power(rng) -> None:
    x = rng.uniform(0.1, 4, (P, N)).astype(np.float32)
    y = rng.uniform(-3, 3, (P, N)).astype(np.float32)
    result = run_kernel(LOAD_AB + "vector.tensor_tensor c, a, b, op=power\ndma.copy out, c",
                        inputs={"x": x, "y": y}, decls=TILES)
    expected = np.power(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(result.outputs["out"], expected, rtol=2**-23)


def test_divide_by_zero_follows_ieee(rng) -> None:
    data = _xy(rng)
    result = run_kernel(LOAD_AB + "vector.tensor_tensor c, a, b, op=divide\ndma.copy out, c",
                        inputs=data, decls=TILES)
    row = result.outputs["out"][0]
    assert np.isinf(row[0]) and np.sign(row[0]) == np.sign(data["x"][0, 0])
    assert np.isnan(row[1])  # 0 / -0


def test_tensor_scalar_two_stages_with_column_and_reverse(rng) -> None:
    x = rng.standard_normal((P, N)).astype(np.float32)
    column = rng.standard_normal((P, 1)).astype(np.float32)
    body = """dma.copy a, x
dma.copy col, s
vector.tensor_scalar c, a, op0=subtract, operand0=col, reverse0=true, op1=multiply, operand1=0.25
dma.copy out, c
vector.tensor_scalar c, a, op0=divide, operand0=3.0, reverse0=false, op1=subtract, operand1=col, reverse1=true
dma.copy out2, c"""
    result = run_kernel(body, inputs={"x": x, "s": column},
                        decls=TILES + f".hbm out2 float32[{P}, {N}] output")
    x64, col64 = x.astype(np.float64), column.astype(np.float64)
    # each stage rounds to fp32
    np.testing.assert_array_equal(result.outputs["out"], _rounded(_rounded(col64 - x64) * 0.25))
    np.testing.assert_array_equal(result.outputs["out2"],
                                  _rounded(col64 - _rounded(x64 / 3.0).astype(np.float64)))


@pytest.mark.parametrize("op", ["add", "maximum", "minimum", "multiply", "average"])
@pytest.mark.parametrize("groups", [1, 4])
def test_tensor_reduce(op: str, groups: int, rng) -> None:
    x = rng.uniform(0.5, 1.5, (P, N)).astype(np.float32)
    decls = TILES + f".sbuf r float32[{P}, {groups}]\n.hbm red float32[{P}, {groups}] output"
    result = run_kernel(f"dma.copy a, x\nvector.tensor_reduce r, a, op={op}\ndma.copy red, r",
                        inputs={"x": x}, decls=decls)
    runs = x.astype(np.float64).reshape(P, groups, N // groups)
    expected = {"add": runs.sum(axis=2), "maximum": runs.max(axis=2),
                "minimum": runs.min(axis=2), "multiply": runs.prod(axis=2),
                "average": runs.mean(axis=2)}[op]
    got = result.outputs["red"].astype(np.float64)
    if op in ("maximum", "minimum"):
        np.testing.assert_array_equal(got, expected)
    else:
        # n sequential fp32 roundings of positive terms: relative error <= n * u
        np.testing.assert_allclose(got, expected, rtol=(N // groups + 1) * 2**-24)


def test_tensor_reduce_negate_and_nan(rng) -> None:
    x = rng.standard_normal((P, N)).astype(np.float32)
    x[3, 10] = np.nan
    result = run_kernel("dma.copy a, x\nvector.tensor_reduce col, a, op=maximum, negate=true\n"
                        "dma.copy m, col", inputs={"x": x},
                        decls=TILES + f".hbm m float32[{P}, 1] output")
    got = result.outputs["m"][:, 0]
    expected = -np.max(x, axis=1)  # numpy's max propagates NaN too
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])


def test_tensor_copy_rounds_like_ml_dtypes_and_same_dtype_copies_bits(rng) -> None:
    x = (rng.standard_normal((P, N)) * 1000).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, 1e30]
    decls = f"""
.sbuf a float32[{P}, {N}]
.sbuf h bfloat16[{P}, {N}]
.sbuf h2 bfloat16[{P}, {N}]
.sbuf e float8_e4m3fn[{P}, {N}]
.hbm hb bfloat16[{P}, {N}] output
.hbm eb float8_e4m3fn[{P}, {N}] output
.hbm raw bfloat16[{P}, {N}] input
.hbm raw_out bfloat16[{P}, {N}] output
"""
    payloads = np.full((P, N), 0x7F81, dtype=np.uint16)  # signalling-NaN payloads
    body = """dma.copy a, x
vector.tensor_copy h, a
dma.copy hb, h
gpsimd.tensor_copy e, a
dma.copy eb, e
dma.copy h2, raw
vector.tensor_copy h, h2
dma.copy raw_out, h"""
    program_inputs = {"x": x, "raw": payloads.view(ml_dtypes.bfloat16)}
    import neuronemu

    result = neuronemu.run(neuronemu.assemble(f".hbm x float32[{P}, {N}] input\n{decls}\n{body}"),
                           inputs=program_inputs)
    np.testing.assert_array_equal(result.outputs["hb"].view(np.uint16),
                                  x.astype(ml_dtypes.bfloat16).view(np.uint16))
    with np.errstate(over="ignore"):
        e4 = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(result.outputs["eb"].view(np.uint8), e4)
    np.testing.assert_array_equal(result.outputs["raw_out"].view(np.uint16), payloads)


@pytest.mark.parametrize("dtype, oracle", [("float32", np.float32), ("bfloat16", ml_dtypes.bfloat16),
                                           ("float8_e5m2", ml_dtypes.float8_e5m2),
                                           ("int8", None)])
def test_memset(dtype: str, oracle) -> None:
    import neuronemu

    value = -1.0 / 3.0 if oracle is not None else -2.5
    source = f""".sbuf t {dtype}[4, 16]
.hbm o {dtype}[4, 16] output
vector.memset t, value={value!r}
dma.copy o, t"""
    result = neuronemu.run(neuronemu.assemble(source))
    got = result.outputs["o"]
    if oracle is None:
        np.testing.assert_array_equal(got, np.full((4, 16), -2, np.int8))  # half to even
    else:
        want = np.full((4, 16), np.float32(value)).astype(oracle)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_reciprocal_is_correctly_rounded(rng) -> None:
    x = rng.uniform(-100, 100, (P, N)).astype(np.float32)
    x[0, 0] = 0.0
    result = run_kernel("dma.copy a, x\nvector.reciprocal c, a\ndma.copy out, c",
                        inputs={"x": x}, decls=TILES)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(result.outputs["out"], _rounded(1.0 / x.astype(np.float64)))


def test_bn_stats_and_aggr_give_mean_and_population_variance(rng) -> None:
    x = (rng.standard_normal((P, 2 * N)) * 3 + 5).astype(np.float32)
    decls = f"""
.sbuf t float32[{P}, {2 * N}]
.sbuf stats float32[{P}, 12]
.sbuf mv float32[{P}, 2]
.hbm o float32[{P}, 2] output
"""
    body = f"""dma.copy t, x
vector.bn_stats stats[:, 0:6], t[:, 0:{N}]
vector.bn_stats stats[:, 6:12], t[:, {N}:{2 * N}]
vector.bn_aggr mv, stats
dma.copy o, mv"""
    result = run_kernel(body, inputs={"x": x}, decls=decls)
    x64 = x.astype(np.float64)
    got = result.outputs["o"].astype(np.float64)
    np.testing.assert_allclose(got[:, 0], x64.mean(axis=1), rtol=2 * N * 2**-24)
    np.testing.assert_allclose(got[:, 1], x64.var(axis=1), rtol=4 * N * 2**-24)


def test_vector_transpose_32x32(rng) -> None:
    x = rng.standard_normal((32, 32)).astype(np.float32)
    decls = ".sbuf s float32[32, 32]\n.sbuf t float32[32, 32]\n.hbm o float32[32, 32] output"
    result = run_kernel("dma.copy s, x\nvector.transpose t, s\ndma.copy o, t", inputs={"x": x},
                        decls=decls)
    np.testing.assert_array_equal(result.outputs["o"], x.T)


def test_psum_operands(rng) -> None:
    """Vector reads and writes PSUM too (one operand of tensor_tensor may be in PSUM)."""
    data = _xy(rng)
    decls = TILES + f".psum acc float32[{P}, {N}]"
    body = LOAD_AB + ("vector.tensor_copy acc, a\nvector.tensor_tensor acc, acc, b, op=add\n"
                      "vector.tensor_copy c, acc\ndma.copy out, c")
    result = run_kernel(body, inputs=data, decls=decls)
    np.testing.assert_array_equal(result.outputs["out"],
                                  _rounded(data["x"].astype(np.float64) + data["y"]))
