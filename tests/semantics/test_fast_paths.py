"""The fp32 fast paths of tensor_reduce (maximum / minimum into an fp32 [P, 1] column, per
partition with vectorised lanes), tensor_scalar and activation (one partition at a time, in
place) on random shapes, partition and column offsets, against numpy / plain Python oracles:
the fold is the documented one (left to right, NaN propagates, a tie keeps the earlier
element), so NaN payloads and the sign of a zero result are compared bit for bit. bfloat16
destinations take the general path and must agree with the same oracle."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import neuronemu

P, W = 16, 96


def _special_values(rng, shape) -> np.ndarray:
    """Normal values with signed zeros, infinities and NaNs (several payloads and signs)."""
    x = rng.standard_normal(shape).astype(np.float32)
    bits = x.view(np.uint32)
    pick = rng.random(shape)
    specials = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC01234,
                         0xFFC00077, 0x7F800001], dtype=np.uint32)
    choice = specials[rng.integers(0, len(specials), shape)]
    rare = rng.random() < 0.5  # half the tiles hold no special value beyond zeros
    mask = pick < (0.02 if rare else 0.0)
    zeros = pick > 0.97
    bits[mask] = choice[mask]
    bits[zeros] = np.where(rng.random(zeros.sum()) < 0.5, 0x00000000, 0x80000000)
    return x


def _fold(row: np.ndarray, maximum: bool) -> np.uint32:
    """The documented fold of one row, as storage bits."""
    acc = row[0]
    for v in row[1:]:
        if not math.isnan(acc) and (math.isnan(v) or (v > acc if maximum else v < acc)):
            acc = v
    return np.float32(acc).view(np.uint32) if not math.isnan(acc) else \
        row[np.flatnonzero(np.isnan(row))[0]].view(np.uint32)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_tensor_reduce_extreme_matches_the_fold(seed: int, op: str) -> None:
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, P + 1))
    p0 = int(rng.integers(0, P - rows + 1))
    n = int(rng.integers(1, 71))
    c0 = int(rng.integers(0, W - n + 1))
    negate = bool(rng.integers(0, 2))
    m = _special_values(rng, (P, W))
    # the column: a separate fp32 tile, one inside the data's own partitions (same rows, maybe
    # inside the window: each partition is read before its result is written), or bfloat16
    where = ["column", "inside", "bf16"][seed % 3]
    if where == "inside":
        k = int(rng.integers(0, W))
        dst, read_back = f"m[{p0}:{p0 + rows}, {k}:{k + 1}]", "m"
    elif where == "column":
        k = int(rng.integers(0, 4))
        dst, read_back = f"col[{p0}:{p0 + rows}, {k}:{k + 1}]", "col"
    else:
        k = int(rng.integers(0, 4))
        dst, read_back = f"h[{p0}:{p0 + rows}, {k}:{k + 1}]", "h"
    source = f""".hbm xm float32[{P}, {W}] input
.hbm om float32[{P}, {W}] output
.hbm ocol float32[{P}, 4] output
.hbm oh bfloat16[{P}, 4] output
.sbuf m float32[{P}, {W}]
.sbuf col float32[{P}, 4]
.sbuf h bfloat16[{P}, 4]
dma.copy m, xm
vector.memset col, value=7.0
vector.memset h, value=7.0
vector.tensor_reduce {dst}, m[{p0}:{p0 + rows}, {c0}:{c0 + n}], op={op}, negate={str(negate).lower()}
dma.copy om, m
dma.copy ocol, col
dma.copy oh, h
"""
    result = neuronemu.run(neuronemu.assemble(source, "t.s"), inputs={"xm": m})
    folded = np.array([_fold(m[p0 + p, c0:c0 + n], op == "maximum") for p in range(rows)],
                      dtype=np.uint32)
    if negate:
        folded ^= np.uint32(0x80000000)
    if read_back == "h":
        expected = folded.view(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
        got = result.outputs["oh"].view(np.uint16)[p0:p0 + rows, k]
        nan = np.isnan(folded.view(np.float32))
        np.testing.assert_array_equal(got[~nan], expected[~nan])
        assert np.isnan(result.outputs["oh"][p0:p0 + rows, k].astype(np.float32)[nan]).all()
        return
    out = result.outputs["o" + read_back].view(np.uint32)
    np.testing.assert_array_equal(out[p0:p0 + rows, k], folded)
    # nothing else changed
    before = m.view(np.uint32).copy() if read_back == "m" else np.full((P, 4), 7.0,
                                                                       np.float32).view(np.uint32)
    mask = np.ones(out.shape, dtype=bool)
    mask[p0:p0 + rows, k] = False
    np.testing.assert_array_equal(out[mask], before[mask])


_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
           "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("seed", range(10))
def test_tensor_scalar_per_partition_matches_numpy(seed: int) -> None:
    """Two stages with random ops, reverse flags, a [P, 1] column or an immediate operand, on
    random windows; numpy float32, stage by stage."""
    rng = np.random.default_rng(100 + seed)
    rows = int(rng.integers(1, P + 1))
    p0 = int(rng.integers(0, P - rows + 1))
    n = int(rng.integers(1, 41))
    c0, d0 = int(rng.integers(0, 41)), int(rng.integers(48, W - n + 1))
    op0, op1 = rng.choice(sorted(_BINARY), 2)
    rev0, rev1 = (bool(b) for b in rng.integers(0, 2, 2))
    m = (rng.uniform(0.5, 4.0, (P, W)) * rng.choice([-1, 1], (P, W))).astype(np.float32)
    s = rng.uniform(0.5, 2.0, (P, 1)).astype(np.float32)
    imm = np.float32(rng.uniform(0.5, 2.0))
    col = seed % 2 == 0
    operand0 = f"s[{p0}:{p0 + rows}, 0:1]" if col else f"{float(imm)!r}"
    source = f""".hbm xm float32[{P}, {W}] input
.hbm xs float32[{P}, 1] input
.hbm om float32[{P}, {W}] output
.sbuf m float32[{P}, {W}]
.sbuf s float32[{P}, 1]
dma.copy m, xm
dma.copy s, xs
vector.tensor_scalar m[{p0}:{p0 + rows}, {d0}:{d0 + n}], m[{p0}:{p0 + rows}, {c0}:{c0 + n}], op0={op0}, operand0={operand0}, reverse0={str(rev0).lower()}, op1={op1}, operand1=1.5, reverse1={str(rev1).lower()}
dma.copy om, m
"""
    result = neuronemu.run(neuronemu.assemble(source, "t.s"), inputs={"xm": m, "xs": s})
    data = m[p0:p0 + rows, c0:c0 + n]
    first = s[p0:p0 + rows] if col else np.full((rows, 1), imm, np.float32)
    with np.errstate(all="ignore"):
        x = _BINARY[op0](first, data) if rev0 else _BINARY[op0](data, first)
        x = x.astype(np.float32)
        y = np.float32(1.5)
        x = (_BINARY[op1](y, x) if rev1 else _BINARY[op1](x, y)).astype(np.float32)
    expected = m.copy()
    expected[p0:p0 + rows, d0:d0 + n] = x
    np.testing.assert_array_equal(result.outputs["om"].view(np.uint32),
                                  expected.view(np.uint32))


def test_activation_notes_the_first_out_of_range_input_in_partition_order() -> None:
    """The in-place activation runs one partition at a time; the warning still names the
    first input outside the range in (partition, element) order, and counts the
    instruction once."""
    src = """.sbuf a float32[8, 16]
.sbuf c float32[8, 16]
vector.memset a, value=1.0
vector.memset a[5:6, 9:10], value=-2.0
vector.memset a[2:3, 12:13], value=0.0
vector.memset a[2:3, 14:15], value=-1.0
scalar.activation c, a, func=log
dma.copy oc, c
"""
    result = neuronemu.run(neuronemu.assemble(".hbm oc float32[8, 16] output\n" + src, "k.s"))
    [warning] = result.warnings
    assert warning.location.line == 8
    assert "func=log gets input 0 " in warning.message
    assert "more dynamic instructions" not in warning.message
    a = np.ones((8, 16))
    a[5, 9], a[2, 12], a[2, 14] = -2.0, 0.0, -1.0
    with np.errstate(all="ignore"):
        expected = np.log(a).astype(np.float32)
    np.testing.assert_array_equal(result.outputs["oc"], expected)


@pytest.mark.parametrize("seed", range(12))
def test_tensor_tensor_in_place_and_apart_matches_numpy(seed: int) -> None:
    """dst is the first input, the second, or apart from both (the three loops of the common
    operators), on random windows and operators; numpy float32, NaN and signed zeros
    included."""
    rng = np.random.default_rng(200 + seed)
    rows = int(rng.integers(1, P + 1))
    p0 = int(rng.integers(0, P - rows + 1))
    n = int(rng.integers(1, 33))
    op = sorted(_BINARY)[seed % len(_BINARY)]
    where = ["first", "second", "apart"][seed % 3]
    a_win = f"m[{p0}:{p0 + rows}, 0:{n}]"
    b_win = f"m[{p0}:{p0 + rows}, 32:{32 + n}]"
    dst = {"first": a_win, "second": b_win, "apart": f"m[{p0}:{p0 + rows}, 64:{64 + n}]"}[where]
    m = _special_values(rng, (P, W))
    source = f""".hbm xm float32[{P}, {W}] input
.hbm om float32[{P}, {W}] output
.sbuf m float32[{P}, {W}]
dma.copy m, xm
vector.tensor_tensor {dst}, {a_win}, {b_win}, op={op}
dma.copy om, m
"""
    result = neuronemu.run(neuronemu.assemble(source, "t.s"), inputs={"xm": m})
    with np.errstate(all="ignore"):
        value = _BINARY[op](m[p0:p0 + rows, 0:n], m[p0:p0 + rows, 32:32 + n]).astype(np.float32)
    expected = m.copy()
    column = {"first": 0, "second": 32, "apart": 64}[where]
    expected[p0:p0 + rows, column:column + n] = value
    got = result.outputs["om"]
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])


_ACTIVATIONS = {   # float64 oracles, rounded once to fp32 (docs/numerics.md)
    "relu": lambda x: np.maximum(x, 0.0),
    "copy": lambda x: x,
    "exp": np.exp,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "square": lambda x: x * x,
}


@pytest.mark.parametrize("seed", range(15))
def test_activation_into_bfloat16_matches_numpy_and_ml_dtypes(seed: int) -> None:
    """An fp32 activation into a bfloat16 tile (a block of rows at a time, then each value
    rounded to nearest even): numpy float64 rounded to fp32, then ml_dtypes' bf16 rounding, on
    random windows, with a per-partition scale and bias column, NaN, infinities and values that
    overflow bf16. The bf16 tile is apart from the data, in its rows (other bytes) or, in one
    case out of five, overlapping the data's bytes (which the general path handles: every input
    is read before any output is written)."""
    rng = np.random.default_rng(300 + seed)
    rows = int(rng.integers(1, P + 1))
    p0 = int(rng.integers(0, P - rows + 1))
    n = int(rng.integers(1, 41))
    func = sorted(_ACTIVATIONS)[seed % len(_ACTIVATIONS)]
    where = ["apart", "same_rows", "same_rows", "apart", "overlap"][seed % 5]
    m = _special_values(rng, (P, W))
    m[rng.random((P, W)) < 0.05] = np.float32(3.3e38)   # past bf16's largest finite value
    s = rng.uniform(0.5, 2.0, (P, 1)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, (P, 1)).astype(np.float32)
    data = f"m[{p0}:{p0 + rows}, 0:{n}]"
    if where == "overlap":   # the bf16 view of the data's own bytes
        dst = f"h[{p0}:{p0 + rows}, 0:{n}]"
        alias = " alias=m"
    else:
        dst = (f"h[{p0}:{p0 + rows}, 0:{n}]" if where == "apart"
               else f"mh[{p0}:{p0 + rows}, {2 * W - 64}:{2 * W - 64 + n}]")
        alias = ""
    source = f""".hbm xm float32[{P}, {W}] input
.hbm xs float32[{P}, 1] input
.hbm xb float32[{P}, 1] input
.hbm oh bfloat16[{P}, {2 * W}] output
.sbuf m float32[{P}, {W}]
.sbuf mh bfloat16[{P}, {2 * W}] alias=m
.sbuf h bfloat16[{P}, {2 * W}]{alias}
.sbuf s float32[{P}, 1]
.sbuf b float32[{P}, 1]
dma.copy m, xm
dma.copy s, xs
dma.copy b, xb
{"vector.memset h, value=0.0" if where == "apart" else ""}
scalar.activation {dst}, {data}, func={func}, scale=s[{p0}:{p0 + rows}, 0:1], bias=b[{p0}:{p0 + rows}, 0:1]
dma.copy oh, {"h" if where == "apart" else "mh"}
"""
    result = neuronemu.run(neuronemu.assemble(source, "t.s"),
                           inputs={"xm": m, "xs": s, "xb": b})
    x = m[p0:p0 + rows, :n]
    with np.errstate(all="ignore"):
        pre = ((x * s[p0:p0 + rows]).astype(np.float32) + b[p0:p0 + rows]).astype(np.float32)
        value = _ACTIVATIONS[func](pre.astype(np.float64)).astype(np.float32)
    want = value.astype(ml_dtypes.bfloat16).view(np.uint16)
    column = 2 * W - 64 if where == "same_rows" else 0
    got = result.outputs["oh"].view(np.uint16)[p0:p0 + rows, column:column + n]
    nan = np.isnan(value)
    np.testing.assert_array_equal(np.isnan(result.outputs["oh"][p0:p0 + rows,
                                                                 column:column + n]), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
