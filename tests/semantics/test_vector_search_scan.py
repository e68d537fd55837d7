"""scalar_tensor_tensor, tensor_tensor_scan, tensor_scalar_reduce, tensor_copy_predicated, max8
and find_index8 against numpy oracles."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu

P, N = 8, 64


def _run(source: str, **inputs: np.ndarray) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="t.s"), inputs=inputs)


def _f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(np.float32)


DECLS = f"""
.hbm x float32[{P}, {N}] input
.hbm y float32[{P}, {N}] input
.hbm c float32[{P}, 1] input
.sbuf a float32[{P}, {N}]
.sbuf b float32[{P}, {N}]
.sbuf d float32[{P}, {N}]
.sbuf col float32[{P}, 1]
.sbuf red float32[{P}, 1]
dma.copy a, x
dma.copy b, y
dma.copy col, c
"""


@pytest.fixture
def inputs(rng) -> dict[str, np.ndarray]:
    return {"x": rng.uniform(-2, 2, (P, N)).astype(np.float32),
            "y": rng.uniform(-2, 2, (P, N)).astype(np.float32),
            "c": rng.uniform(0.5, 1.5, (P, 1)).astype(np.float32)}


def test_scalar_tensor_tensor(inputs) -> None:
    result = _run(DECLS + "vector.scalar_tensor_tensor d, a, op0=subtract, operand0=col, "
                          "op1=multiply, operand1=b\n", **inputs)
    x, y, c = (inputs[k].astype(np.float64) for k in "xyc")
    expected = _f32(_f32(x - c).astype(np.float64) * y)
    np.testing.assert_array_equal(result.tiles["d"], expected)


def test_scalar_tensor_tensor_reversed(inputs) -> None:
    result = _run(DECLS + "vector.scalar_tensor_tensor d, a, op0=subtract, operand0=0.5, "
                          "reverse0=true, op1=divide, operand1=b, reverse1=true\n", **inputs)
    x, y = inputs["x"].astype(np.float64), inputs["y"].astype(np.float64)
    np.testing.assert_array_equal(result.tiles["d"], _f32(y / _f32(0.5 - x).astype(np.float64)))


def test_tensor_tensor_scan_is_a_running_recurrence(inputs) -> None:
    """h[i] = a[i] * h[i-1] + b[i] (a linear recurrence), h[-1] = col; fp32 at every step."""
    result = _run(DECLS + "vector.tensor_tensor_scan d, a, b, initial=col, op0=multiply, "
                          "op1=add\n", **inputs)
    a, b = inputs["x"], inputs["y"]
    h = inputs["c"][:, 0].copy()
    expected = np.empty((P, N), dtype=np.float32)
    for i in range(N):  # the oracle: numpy fp32 arithmetic, one rounding per operation
        h = (a[:, i] * h).astype(np.float32)
        h = (h + b[:, i]).astype(np.float32)
        expected[:, i] = h
    np.testing.assert_array_equal(result.tiles["d"], expected)


def test_tensor_tensor_scan_cumulative_sum_with_immediate(inputs) -> None:
    result = _run(DECLS + "vector.tensor_tensor_scan d, b, a, initial=0.0, op0=bypass, "
                          "reverse0=true, op1=add\n", **inputs)
    # bypass passes its first operand; reversed, that is the previous value: a running sum of a
    x64 = inputs["x"].astype(np.float64)
    bound = N * 2**-24 * np.abs(x64).sum(axis=1, keepdims=True)
    assert np.all(np.abs(result.tiles["d"] - np.cumsum(x64, axis=1)) <= bound)


@pytest.mark.parametrize("op, oracle", [("add", np.sum), ("maximum", np.max)])
def test_tensor_scalar_reduce(op: str, oracle, inputs) -> None:
    result = _run(DECLS + f"vector.tensor_scalar_reduce d, a, op0=multiply, operand0=col, "
                          f"reduce_op={op}, reduce_res=red\n", **inputs)
    scaled = _f32(inputs["x"].astype(np.float64) * inputs["c"])
    np.testing.assert_array_equal(result.tiles["d"], scaled)
    np.testing.assert_allclose(result.tiles["red"][:, 0], oracle(scaled.astype(np.float64), axis=1),
                               rtol=N * 2**-24, atol=N * 2**-24 * 2)


@pytest.mark.parametrize("reverse", [False, True])
def test_tensor_copy_predicated_keeps_bits(reverse: bool, rng) -> None:
    src = rng.standard_normal((P, N)).astype(np.float32)
    src[0, 0] = np.float32(np.nan)
    keep = rng.standard_normal((P, N)).astype(np.float32)
    mask = (rng.random((P, N)) < 0.5).astype(np.uint8) * rng.integers(1, 255, (P, N), np.uint8)
    result = _run(f""".hbm s float32[{P}, {N}] input
.hbm k float32[{P}, {N}] input
.hbm m uint8[{P}, {N}] input
.sbuf st float32[{P}, {N}]
.sbuf dt float32[{P}, {N}]
.sbuf mt uint8[{P}, {N}]
dma.copy st, s
dma.copy dt, k
dma.copy mt, m
vector.tensor_copy_predicated dt, st, mt, reverse_pred={'true' if reverse else 'false'}
""", s=src, k=keep, m=mask)
    take = (mask != 0) != reverse
    expected = np.where(take, src, keep)
    np.testing.assert_array_equal(result.tiles["dt"].view(np.uint32), expected.view(np.uint32))


def test_max8_and_find_index8(rng) -> None:
    x = rng.permutation(np.arange(P * N, dtype=np.float32)).reshape(P, N)
    x[:, 5] = x[:, 7]  # a duplicate: the two equal values get positions 5 and 7
    result = _run(f""".hbm x float32[{P}, {N}] input
.sbuf s float32[{P}, {N}]
.sbuf top float32[{P}, 8]
.sbuf where uint32[{P}, 8]
.sbuf missing float32[{P}, 8]
.sbuf none uint16[{P}, 8]
dma.copy s, x
vector.max8 top, s
vector.find_index8 where, s, top
vector.memset missing, value=-1.0
vector.find_index8 none, s, missing
""", x=x)
    expected_top = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(result.tiles["top"], expected_top)
    first = np.zeros((P, 8), np.uint32)
    for p in range(P):   # slot k: the first position of its value no earlier slot took
        taken: list[int] = []
        for k, v in enumerate(expected_top[p]):
            first[p, k] = next(int(i) for i in np.flatnonzero(x[p] == v) if i not in taken)
            taken.append(int(first[p, k]))
    np.testing.assert_array_equal(result.tiles["where"], first)
    np.testing.assert_array_equal(result.tiles["none"], np.full((P, 8), 0xFFFF, np.uint16))


def test_max8_needs_eight_elements() -> None:
    with pytest.raises(neuronemu.AsmError, match="needs at least 8"):
        neuronemu.assemble(".sbuf s float32[8, 4]\n.sbuf t float32[8, 8]\nvector.max8 t, s\n")
