"""tensor.matmul's summation order, bit for bit, on random shapes, dtypes and special values.

Oracle: a float64 emulation of the documented order (docs/numerics.md), independent of the
engine: every fp32 product and every fp32 partial sum is formed in float64 and rounded to fp32
(exact for the products of fp32 operands, and double rounding is innocuous for + and x since
53 >= 2 * 24 + 2 bits), for k = 0, 1, ..., K-1 from +0.0, then added to PSUM's value when
accumulating. NaN results are compared as NaN (their payload is the host's); every other
result, -0.0 and subnormals included, bit for bit."""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.semantics.tensor import _products_summed

F32 = np.float32


def r32(x: np.ndarray) -> np.ndarray:
    """float64 -> nearest fp32, back in float64."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float64).astype(F32).astype(np.float64)


def oracle(stationary: np.ndarray, moving: np.ndarray, psum: np.ndarray | None = None,
           double_row: bool = False) -> np.ndarray:
    """[K, M] x [K, N] (or [K, 2, M] x [K, 2, N] double-row) -> fp32 [M, N] in k order."""
    s = np.asarray(stationary).astype(np.float64)
    x = np.asarray(moving).astype(np.float64)
    acc = np.zeros((s.shape[-1], x.shape[-1]))
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(s.shape[0]):
            if double_row:   # the PE's pair w0 x0 + w1 x1, then the running sum
                term = r32(r32(np.multiply.outer(s[k, 0], x[k, 0]))
                           + r32(np.multiply.outer(s[k, 1], x[k, 1])))
            else:
                term = r32(np.multiply.outer(s[k], x[k]))
            acc = r32(acc + term)
        if psum is not None:
            acc = r32(psum.astype(np.float64) + acc)
    return acc.astype(F32)


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    got, expected = np.asarray(got, F32), np.asarray(expected, F32)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), expected[~nan].view(np.uint32))


SPECIALS = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 2.0**-130, -(2.0**-140), 2.0**-149,
                     3.0e38, -3.0e38], dtype=np.float64)


def operand(rng, shape, dtype, specials: bool) -> np.ndarray:
    values = rng.standard_normal(shape) * rng.choice([1.0, 2.0**-120, 2.0**60], size=shape,
                                                    p=[0.9, 0.05, 0.05])
    if specials:
        where = rng.random(shape) < 0.02
        values[where] = rng.choice(SPECIALS, size=int(where.sum()))
    with np.errstate(over="ignore"):
        return values.astype(F32).astype(dtype)   # fp32 first: ml_dtypes' own route


# --- the compiled kernel alone, many shapes ---------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3,
                                   ml_dtypes.float8_e5m2])
@pytest.mark.parametrize("specials", [False, True])
def test_kernel_matches_the_fixed_order(dtype, specials: bool) -> None:
    rng = np.random.default_rng([zlib.crc32(np.dtype(dtype).name.encode()), int(specials)])
    shapes = [(k, rng.integers(1, 20), rng.integers(1, 70)) for k in range(1, 129)]
    shapes += [(128, 128, 512), (127, 5, 3), (2, 4, 1), (1, 1, 1), (3, 9, 511)]
    for k, m, n in shapes:
        s = operand(rng, (k, m), dtype, specials)
        x = operand(rng, (k, n), dtype, specials)
        with np.errstate(invalid="ignore", over="ignore"):
            got = _products_summed(s.astype(F32), x.astype(F32))
        assert_same(got, oracle(s, x))


def test_order_is_visible() -> None:
    """The oracle is not order-blind: summing the same products backwards differs somewhere."""
    rng = np.random.default_rng(3)
    s = operand(rng, (128, 64), ml_dtypes.bfloat16, False)
    x = operand(rng, (128, 64), ml_dtypes.bfloat16, False)
    backwards = oracle(s[::-1], x[::-1])
    got = _products_summed(s.astype(F32), x.astype(F32))
    assert (got.view(np.uint32) != backwards.view(np.uint32)).any()


def test_sum_and_large_tiles_start_on_a_cache_line() -> None:
    """memory.empty_f32 places tiles of 16K values or more on a 64-byte boundary (a row 32
    bytes past one split every other 512-bit access); smaller ones are plain arrays. Checked
    on many allocations, since numba's own 32-byte alignment lands on a line half the time."""
    from neuronemu.machine.memory import empty_f32

    rng = np.random.default_rng(1)
    s = rng.standard_normal((128, 128)).astype(F32)
    x = rng.standard_normal((128, 512)).astype(F32)
    kept = []   # keep each array alive so the next one lands elsewhere
    for rows, cols in [(128, 512), (128, 128), (256, 64), (7, 4099)] * 8:
        tile = empty_f32(rows, cols)
        assert tile.shape == (rows, cols) and tile.dtype == F32 and tile.flags.c_contiguous
        assert tile.ctypes.data % 64 == 0
        kept.append(tile)
        got = _products_summed(s, x)
        assert got.ctypes.data % 64 == 0 and got.flags.c_contiguous
        kept.append(got)
    small = empty_f32(3, 5)
    assert small.shape == (3, 5) and small.dtype == F32


# --- whole instructions: PSUM write and accumulate, double-row, a bf16 PSUM dst ---------------

def hbm(name: str, array: np.ndarray, role: str = "input") -> str:
    return f".hbm {name} {array.dtype.name}[{', '.join(map(str, array.shape))}] {role}\n"


def run_matmuls(s1, x1, s2, x2, target: str = "trn2", dst: str = "float32") -> np.ndarray:
    """acc = s1^T x1 (accumulate=false), then acc += s2^T x2 (accumulate=true); acc read back."""
    k1, m = s1.shape[0], s1.shape[-1]
    n, k2 = x1.shape[-1], s2.shape[0]
    src = (f".target {target}\n" + hbm("s1", s1) + hbm("x1", x1) + hbm("s2", s2) + hbm("x2", x2)
           + f".hbm out {dst}[{m}, {n}] output\n"
           f".sbuf s1_sb {s1.dtype.name}[{k1}, {m}]\n.sbuf x1_sb {x1.dtype.name}[{k1}, {n}]\n"
           f".sbuf s2_sb {s2.dtype.name}[{k2}, {m}]\n.sbuf x2_sb {x2.dtype.name}[{k2}, {n}]\n"
           f".psum acc {dst}[{m}, {n}]\n.sbuf o {dst}[{m}, {n}]\n"
           "dma.copy s1_sb, s1\ndma.copy x1_sb, x1\ndma.copy s2_sb, s2\ndma.copy x2_sb, x2\n"
           "tensor.matmul acc, s1_sb, x1_sb, accumulate=false\n"
           "tensor.matmul acc, s2_sb, x2_sb, accumulate=true\n"
           "vector.tensor_copy o, acc\ndma.copy out, o\n")
    program = neuronemu.assemble(src, "kernel.s")
    return neuronemu.run(program, inputs={"s1": s1, "x1": x1, "s2": s2, "x2": x2}).outputs["out"]


@pytest.mark.parametrize("dtype", [F32, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3])
@pytest.mark.parametrize("case", range(4))
def test_instruction_writes_and_accumulates_in_order(dtype, case: int) -> None:
    rng = np.random.default_rng(100 + case)
    m, n = int(rng.integers(1, 129)), int(rng.integers(1, 512)) | 1   # odd N
    k1, k2 = int(rng.integers(1, 129)), int(rng.integers(1, 129))
    specials = case >= 2
    s1, x1 = operand(rng, (k1, m), dtype, specials), operand(rng, (k1, n), dtype, specials)
    s2, x2 = operand(rng, (k2, m), dtype, specials), operand(rng, (k2, n), dtype, specials)
    expected = oracle(s2, x2, psum=oracle(s1, x1))
    assert_same(run_matmuls(s1, x1, s2, x2), expected)


def test_bf16_psum_dst_rounds_the_fp32_sum_once() -> None:
    """trn3's bf16 PSUM dst takes the general path: (PSUM value + fp32 sum) rounded to bf16."""
    rng = np.random.default_rng(7)
    bf16 = ml_dtypes.bfloat16
    s1, x1 = operand(rng, (40, 33), bf16, False), operand(rng, (40, 65), bf16, False)
    s2, x2 = operand(rng, (17, 33), bf16, False), operand(rng, (17, 65), bf16, False)
    first = oracle(s1, x1).astype(bf16)
    expected = (first.astype(F32) + oracle(s2, x2)).astype(bf16)
    got = run_matmuls(s1, x1, s2, x2, target="trn3", dst="bfloat16")
    np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("case", range(3))
def test_double_row_matches_the_fixed_order(case: int) -> None:
    rng = np.random.default_rng(200 + case)
    k, m, n = int(rng.integers(1, 129)), int(rng.integers(1, 129)), int(rng.integers(1, 257))
    fp8 = [ml_dtypes.float8_e4m3, ml_dtypes.float8_e5m2]
    w = operand(rng, (k, 2, m), fp8[case % 2], case == 2)
    x = operand(rng, (k, 2, n), fp8[(case + 1) % 2], case == 2)
    src = (hbm("w", w) + hbm("x", x)
           + f".sbuf ws {w.dtype.name}[{k}, 2, {m}]\n.sbuf xs {x.dtype.name}[{k}, 2, {n}]\n"
           f".psum acc float32[{m}, {n}]\n.sbuf o float32[{m}, {n}]\n"
           f".hbm out float32[{m}, {n}] output\n"
           "dma.copy ws, w\ndma.copy xs, x\n"
           "tensor.matmul acc, ws, xs, perf_mode=double_row\n"
           "vector.tensor_copy o, acc\ndma.copy out, o\n")
    out = neuronemu.run(neuronemu.assemble(".target trn2\n" + src, "kernel.s"),
                        inputs={"w": w, "x": x}).outputs["out"]
    assert_same(out, oracle(w, x, double_row=True))
