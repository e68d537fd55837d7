"""The row loops of tensor_tensor's other operators (a scratch row per partition), tensor_reduce's
sums and products (eight partitions at a time), partition_reduce (whole rows per step) and
max8 (one pass with the best eight), on random tiles with signed zeros, infinities and NaNs,
at random partitions and columns, in place or not, against plain numpy / Python oracles of the
documented semantics: fp32 per element, folds strictly in order (left to right, or partition
0, 1, 2, ...)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import neuronemu

P, W = 16, 96


def _values(rng: np.random.Generator, shape) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    bits = x.view(np.uint32)
    pick = rng.random(shape)
    specials = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000],
                        dtype=np.uint32)
    chosen = specials[rng.integers(0, len(specials), shape)]
    bits[pick < 0.04] = chosen[pick < 0.04]
    return x


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, except that any NaN matches any NaN (payloads are not specified)."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    return bool(np.all((got.view(np.uint32) == want.view(np.uint32))
                       | (np.isnan(got) & np.isnan(want))))


def _run(source: str, inputs: dict) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="t.s"), inputs=inputs)


_ORACLES = {
    "divide": lambda x, y: x / y,
    "maximum": np.maximum, "minimum": np.minimum,
    "equal": lambda x, y: (x == y).astype(np.float32),
    "not_equal": lambda x, y: (x != y).astype(np.float32),
    "greater": lambda x, y: (x > y).astype(np.float32),
    "greater_equal": lambda x, y: (x >= y).astype(np.float32),
    "less": lambda x, y: (x < y).astype(np.float32),
    "less_equal": lambda x, y: (x <= y).astype(np.float32),
    "abs_max": lambda x, y: np.maximum(np.abs(x), np.abs(y)),
    "abs_min": lambda x, y: np.minimum(np.abs(x), np.abs(y)),
    "logical_and": lambda x, y: ((x != 0) & (y != 0)).astype(np.float32),
    "logical_or": lambda x, y: ((x != 0) | (y != 0)).astype(np.float32),
    "logical_xor": lambda x, y: ((x != 0) ^ (y != 0)).astype(np.float32),
    "power": lambda x, y: np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32),
}


@pytest.mark.parametrize("op", sorted(_ORACLES))
@pytest.mark.parametrize("seed", range(3))
def test_tensor_tensor_other_operators(op: str, seed: int) -> None:
    rng = np.random.default_rng(seed * 100 + len(op))
    rows, n = int(rng.integers(1, P + 1)), int(rng.integers(1, 40))
    p0 = int(rng.integers(0, P - rows + 1))
    ca, cb = int(rng.integers(0, W - n + 1)), int(rng.integers(0, W - n + 1))
    where = ["new", "onto_a", "onto_b"][seed]
    dst = {"new": f"c[{p0}:{p0 + rows}, 0:{n}]", "onto_a": f"m[{p0}:{p0 + rows}, {ca}:{ca + n}]",
           "onto_b": f"m[{p0}:{p0 + rows}, {cb}:{cb + n}]"}[where]
    m = _values(rng, (P, W))
    source = f""".hbm xm float32[{P}, {W}] input
.hbm om float32[{P}, {W}] output
.hbm oc float32[{P}, 40] output
.sbuf m float32[{P}, {W}]
.sbuf c float32[{P}, 40]
dma.copy m, xm
vector.memset c, value=7.0
vector.tensor_tensor {dst}, m[{p0}:{p0 + rows}, {ca}:{ca + n}], m[{p0}:{p0 + rows}, {cb}:{cb + n}], op={op}
dma.copy om, m
dma.copy oc, c
"""
    with np.errstate(all="ignore"):
        want = _ORACLES[op](m[p0:p0 + rows, ca:ca + n], m[p0:p0 + rows, cb:cb + n])
    out = _run(source, {"xm": m}).outputs
    got = out["oc"][p0:p0 + rows, :n] if where == "new" else \
        out["om"][p0:p0 + rows, (ca if where == "onto_a" else cb):][:, :n]
    assert _same(got, want)


def _fold(values, op: str) -> np.float32:
    """The documented fold, in order, each step rounded to fp32."""
    acc = np.float32(values[0])
    for v in values[1:]:
        v = np.float32(v)
        if op in ("add", "average"):
            acc = np.float32(acc + v)
        elif op == "multiply":
            acc = np.float32(acc * v)
        elif not math.isnan(acc) and (math.isnan(v) or (v > acc if op == "maximum" else v < acc)):
            acc = v
    return np.float32(acc / np.float32(len(values))) if op == "average" else acc


@pytest.mark.parametrize("op", ["add", "multiply", "average", "maximum", "minimum"])
@pytest.mark.parametrize("seed", range(3))
def test_tensor_reduce_folds_each_partition_in_order(op: str, seed: int) -> None:
    rng = np.random.default_rng(seed + 40)
    rows = [P, 11, 8][seed]   # all, a remainder past the eight-row blocks, exactly one block
    n = int(rng.integers(1, 70))
    c0 = int(rng.integers(0, W - n + 1))
    m = _values(rng, (P, W)) if op != "multiply" else \
        rng.uniform(0.9, 1.1, (P, W)).astype(np.float32)
    dst = "col[0:{r}, 1:2]" if seed != 2 else "m[0:{r}, 0:1]"   # the column inside the data
    source = f""".hbm xm float32[{P}, {W}] input
.hbm om float32[{P}, {W}] output
.hbm ocol float32[{P}, 4] output
.sbuf m float32[{P}, {W}]
.sbuf col float32[{P}, 4]
dma.copy m, xm
vector.tensor_reduce {dst.format(r=rows)}, m[0:{rows}, {c0}:{c0 + n}], op={op}
dma.copy om, m
dma.copy ocol, col
"""
    out = _run(source, {"xm": m}).outputs
    got = out["ocol"][:rows, 1] if seed != 2 else out["om"][:rows, 0]
    want = np.array([_fold(m[p, c0:c0 + n], op) for p in range(rows)], dtype=np.float32)
    assert _same(got, want)


@pytest.mark.parametrize("op", ["add", "multiply", "average", "maximum", "minimum"])
def test_partition_reduce_folds_partitions_in_order(op: str) -> None:
    rng = np.random.default_rng(len(op))
    n = 37
    m = _values(rng, (P, W)) if op != "multiply" else \
        rng.uniform(0.9, 1.1, (P, W)).astype(np.float32)
    source = f""".target trn2
.hbm xm float32[{P}, {W}] input
.hbm o float32[1, {n}] output
.sbuf m float32[{P}, {W}]
.sbuf r float32[1, {n}]
dma.copy m, xm
gpsimd.partition_reduce r, m[:, 5:{5 + n}], op={op}
dma.copy o, r
"""
    got = _run(source, {"xm": m}).outputs["o"][0]
    want = np.array([_fold(m[:, 5 + i], op) for i in range(n)], dtype=np.float32)
    assert _same(got, want)


def _rank(v: float) -> tuple:
    """max8's order: NaN above everything, then by value, +0.0 above -0.0."""
    return (1, 0.0, 0) if math.isnan(v) else (0, v, 0 if math.copysign(1.0, v) < 0 else 1)


@pytest.mark.parametrize("seed", range(6))
def test_max8_is_the_eight_highest_ranked(seed: int) -> None:
    rng = np.random.default_rng(seed + 7)
    n = int(rng.integers(8, 90))
    m = _values(rng, (P, W))
    if seed % 2:   # many ties
        m = np.round(m * 2) / 2
    source = f""".hbm xm float32[{P}, {W}] input
.hbm o float32[{P}, 8] output
.sbuf m float32[{P}, {W}]
.sbuf top float32[{P}, 8]
dma.copy m, xm
vector.max8 top, m[:, 3:{3 + n}]
dma.copy o, top
"""
    got = _run(source, {"xm": m}).outputs["o"]
    want = np.array([sorted(m[p, 3:3 + n].tolist(), key=_rank, reverse=True)[:8]
                     for p in range(P)], dtype=np.float32)
    assert _same(got, want)
