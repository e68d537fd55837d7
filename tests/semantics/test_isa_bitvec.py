"""Bitvec ALU operators on integer tiles and the logical_* operators, against numpy's integer
and boolean operations on the same bit patterns."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def run(src: str, **inputs):
    return neuronemu.run(neuronemu.assemble(src, "kernel.s"), inputs=inputs)


def random_ints(dtype: str, shape, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, size=shape, endpoint=True,
                                                dtype=dtype)


TT = """.hbm x {dt}[8, 64] input
.hbm y {dt}[8, 64] input
.sbuf a {dt}[8, 64]
.sbuf b {dt}[8, 64]
.sbuf c {dt}[8, 64]
dma.copy a, x
dma.copy b, y
vector.tensor_tensor c, a, b, op={op}
"""


def expected_bits(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    width = 8 * x.dtype.itemsize
    ux = x.view(UNSIGNED[x.dtype.itemsize]).astype(np.uint64)
    shift = y.astype(np.int64)
    mask = np.uint64((1 << width) - 1)
    if op == "bitwise_and":
        r = ux & y.view(UNSIGNED[y.dtype.itemsize]).astype(np.uint64)
    elif op == "bitwise_or":
        r = ux | y.view(UNSIGNED[y.dtype.itemsize]).astype(np.uint64)
    elif op == "bitwise_xor":
        r = ux ^ y.view(UNSIGNED[y.dtype.itemsize]).astype(np.uint64)
    elif op == "invert":
        r = ~ux
    else:
        in_range = (shift >= 0) & (shift < width)
        s = np.where(in_range, shift, 0).astype(np.uint64)
        r = (ux << s) if op == "left_shift" else (ux >> s)
        r = np.where(in_range, r, np.uint64(0))
    return (r & mask).astype(UNSIGNED[x.dtype.itemsize])


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "invert"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_bitwise_ops(dtype: str, op: str) -> None:
    x, y = random_ints(dtype, (8, 64), 1), random_ints(dtype, (8, 64), 2)
    got = run(TT.format(dt=dtype, op=op), x=x, y=y).tiles["c"]
    np.testing.assert_array_equal(got.view(UNSIGNED[x.dtype.itemsize]), expected_bits(op, x, y))


@pytest.mark.parametrize("op", ["left_shift", "right_shift"])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32"])
def test_shifts_are_logical_and_zero_past_the_width(dtype: str, op: str) -> None:
    x = random_ints(dtype, (8, 64), 3)
    width = 8 * x.dtype.itemsize
    y = (np.arange(8 * 64) % (width + 4)).reshape(8, 64).astype(dtype)  # counts 0 .. width + 3
    got = run(TT.format(dt=dtype, op=op), x=x, y=y).tiles["c"]
    np.testing.assert_array_equal(got.view(UNSIGNED[x.dtype.itemsize]), expected_bits(op, x, y))


def test_tensor_scalar_bit_field_extract() -> None:
    """(x >> 4) & 0xFF with an immediate, then with a per-partition column."""
    x = random_ints("int32", (8, 64), 4)
    shifts = np.arange(8, dtype=np.int32).reshape(8, 1)
    result = run(""".hbm x int32[8, 64] input
.hbm s int32[8, 1] input
.sbuf a int32[8, 64]
.sbuf col int32[8, 1]
.sbuf f int32[8, 64]
.sbuf g int32[8, 64]
dma.copy a, x
dma.copy col, s
vector.tensor_scalar f, a, op0=right_shift, operand0=4, op1=bitwise_and, operand1=255
vector.tensor_scalar g, a, op0=left_shift, operand0=col
""", x=x, s=shifts)
    ux = x.view(np.uint32)
    np.testing.assert_array_equal(result.tiles["f"].view(np.uint32), (ux >> 4) & 0xFF)
    np.testing.assert_array_equal(result.tiles["g"].view(np.uint32),
                                  (ux.astype(np.uint64) << shifts.astype(np.uint64))
                                  .astype(np.uint32))


@pytest.mark.parametrize("op, fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                    ("logical_xor", np.logical_xor)])
def test_logical_ops_on_floats(op: str, fn) -> None:
    rng = np.random.default_rng(5)
    x = np.where(rng.random((8, 64)) < 0.5, 0.0, rng.normal(size=(8, 64))).astype(np.float32)
    y = np.where(rng.random((8, 64)) < 0.5, 0.0, rng.normal(size=(8, 64))).astype(np.float32)
    x[0, :3] = [-0.0, np.nan, 0.0]
    y[0, :3] = [1.0, 0.0, -0.0]
    got = run(TT.format(dt="float32", op=op), x=x, y=y).tiles["c"]
    np.testing.assert_array_equal(got, fn(x != 0, y != 0).astype(np.float32))


@pytest.mark.parametrize("body, message", [
    ("vector.tensor_tensor f, f, f, op=bitwise_xor", "need integer tiles"),
    ("vector.tensor_scalar a, a, op0=left_shift, operand0=3, op1=add, operand1=1",
     "mixes bitvec and arithmetic operators"),
    ("vector.scalar_tensor_tensor a, a, op0=bitwise_or, operand0=1.0, op1=add, operand1=a",
     "takes arithmetic operators only"),
])
def test_bitvec_misuse(body: str, message: str) -> None:
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(f".sbuf a int32[4, 8]\n.sbuf f float32[4, 8]\n{body}\n", "k.s")
