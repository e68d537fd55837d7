"""GpSimd, Tensor, DMA and sequencer instructions against numpy oracles."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_helpers import run_kernel

import neuronemu

U32 = 2.0**-24


def _run(source: str, **inputs: np.ndarray) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="t.s"), inputs=inputs)


# ---- GpSimd -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, numpy_dtype", [("int32", np.int32), ("float32", np.float32),
                                                ("bfloat16", ml_dtypes.bfloat16)])
def test_iota(dtype: str, numpy_dtype) -> None:
    result = _run(f""".sbuf t {dtype}[16, 2, 8]
.hbm o {dtype}[16, 2, 8] output
gpsimd.iota t, base=-7, channel_multiplier=100, step=3
dma.copy o, t""")
    p = np.arange(16)[:, None]
    i = np.arange(16)[None, :]  # flattened free index over [2, 8]
    expected = (-7 + 100 * p + 3 * i).reshape(16, 2, 8).astype(numpy_dtype)
    np.testing.assert_array_equal(result.outputs["o"].view(np.uint8), expected.view(np.uint8))


def test_affine_select_builds_a_causal_mask(rng) -> None:
    scores = rng.standard_normal((32, 32)).astype(np.float32)
    result = run_kernel("""dma.copy s, x
gpsimd.affine_select m, s, offset=0, channel_multiplier=1, step=-1, cmp_op=greater_equal, on_false_value=-30000.0
dma.copy o, m""", inputs={"x": scores},
        decls=".sbuf s float32[32, 32]\n.sbuf m float32[32, 32]\n.hbm o float32[32, 32] output")
    # keep where p - i >= 0 (the lower triangle, diagonal included)
    expected = np.where(np.tril(np.ones((32, 32), bool)), scores, np.float32(-30000.0))
    np.testing.assert_array_equal(result.outputs["o"], expected)


@pytest.mark.parametrize("cmp_op, keep", [
    ("equal", lambda v: v == 0), ("not_equal", lambda v: v != 0), ("greater", lambda v: v > 0),
    ("less", lambda v: v < 0), ("less_equal", lambda v: v <= 0)])
def test_affine_select_comparisons(cmp_op: str, keep) -> None:
    result = _run(f""".sbuf s float32[8, 8]
.sbuf m float32[8, 8]
.hbm o float32[8, 8] output
gpsimd.memset s, value=1.0
gpsimd.affine_select m, s, offset=-3, channel_multiplier=2, step=-1, cmp_op={cmp_op}, on_false_value=0.0
dma.copy o, m""")
    value = -3 + 2 * np.arange(8)[:, None] - np.arange(8)[None, :]
    np.testing.assert_array_equal(result.outputs["o"], keep(value).astype(np.float32))


@pytest.mark.parametrize("op", ["add", "maximum", "minimum"])
def test_partition_reduce(op: str, rng) -> None:
    x = rng.uniform(0.5, 2, (64, 16)).astype(np.float32)
    result = run_kernel(f"dma.copy s, x\ngpsimd.partition_reduce r, s, op={op}\ndma.copy o, r",
                        inputs={"x": x}, decls=".sbuf s float32[64, 16]\n.sbuf r float32[1, 16]\n"
                                                ".hbm o float32[1, 16] output")
    x64 = x.astype(np.float64)
    expected = {"add": x64.sum(axis=0), "maximum": x64.max(axis=0), "minimum": x64.min(axis=0)}
    np.testing.assert_allclose(result.outputs["o"][0], expected[op], rtol=64 * U32)


def test_gpsimd_memset_and_copy_with_cast() -> None:
    result = _run(""".sbuf a float32[4, 8]
.sbuf h float16[4, 8]
.hbm o float16[4, 8] output
gpsimd.memset a, value=0.1
gpsimd.tensor_copy h, a
dma.copy o, h""")
    np.testing.assert_array_equal(result.outputs["o"],
                                  np.full((4, 8), np.float32(0.1)).astype(np.float16))


# ---- Tensor -------------------------------------------------------------------------------------

MATMUL_DECLS = """
.hbm w {dt}[{k}, {m}] input
.hbm v {dt}[{k}, {n}] input
.hbm o float32[{m}, {n}] output
.sbuf ws {dt}[{k}, {m}]
.sbuf vs {dt}[{k}, {n}]
.sbuf os float32[{m}, {n}]
.psum acc float32[{m}, {n}]
"""


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_matmul_single_pass(dt: str, rng) -> None:
    k, m, n = 96, 48, 200
    w = rng.standard_normal((k, m)).astype(np.float32)
    v = rng.standard_normal((k, n)).astype(np.float32)
    if dt == "bfloat16":
        w, v = w.astype(ml_dtypes.bfloat16), v.astype(ml_dtypes.bfloat16)
    result = _run(MATMUL_DECLS.format(dt=dt, k=k, m=m, n=n) + """
dma.copy ws, w
dma.copy vs, v
tensor.matmul acc, ws, vs, accumulate=false
vector.tensor_copy os, acc
dma.copy o, os""", w=w, v=v)
    w64, v64 = w.astype(np.float64), v.astype(np.float64)
    error = np.abs(result.outputs["o"] - w64.T @ v64)
    # fp32 products (exact for bf16, one rounding for fp32) summed in fp32: (K + 1) u sum|w||v|
    assert np.all(error <= (k + 1) * U32 * (np.abs(w64).T @ np.abs(v64)))


@pytest.mark.parametrize("k", [1, 3, 4, 7, 127])
def test_matmul_sums_in_k_order_bit_exact(k: int, rng) -> None:
    """The documented order, bit for bit: for k = 0 .. K-1 the fp32 partial sum plus the fp32
    product (numpy float32 steps; K = 1, 3, 4, 7 and 127 cover the blocked passes and the
    rows left over)."""
    m, n = 5, 33
    w = rng.standard_normal((k, m)).astype(np.float32)
    v = (rng.standard_normal((k, n)) * 1e3).astype(np.float32)  # spread magnitudes
    result = _run(MATMUL_DECLS.format(dt="float32", k=k, m=m, n=n) + """
dma.copy ws, w
dma.copy vs, v
tensor.matmul acc, ws, vs, accumulate=false
vector.tensor_copy os, acc
dma.copy o, os""", w=w, v=v)
    expected = np.zeros((m, n), dtype=np.float32)
    for row in range(k):
        expected = expected + np.outer(w[row], v[row]).astype(np.float32)
    np.testing.assert_array_equal(result.outputs["o"].view(np.uint32),
                                  expected.view(np.uint32))


def test_matmul_accumulates_over_k_tiles_and_overwrites(rng) -> None:
    """K = 256 as two accumulating matmuls; then accumulate=false replaces the PSUM contents."""
    k, m, n = 256, 32, 64
    w = rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    source = """
.hbm w bfloat16[256, 32] input
.hbm v bfloat16[256, 64] input
.hbm o float32[32, 64] output
.hbm o2 float32[32, 64] output
.sbuf ws bfloat16[128, 2, 32]
.sbuf vs bfloat16[128, 2, 64]
.sbuf os float32[32, 64]
.psum acc float32[32, 64]
dma.copy ws[:, 0, :], w[0:128, :]
dma.copy ws[:, 1, :], w[128:256, :]
dma.copy vs[:, 0, :], v[0:128, :]
dma.copy vs[:, 1, :], v[128:256, :]
tensor.matmul acc, ws[:, 0, :], vs[:, 0, :], accumulate=false
tensor.matmul acc, ws[:, 1, :], vs[:, 1, :], accumulate=true
vector.tensor_copy os, acc
dma.copy o, os
tensor.matmul acc, ws[:, 1, :], vs[:, 1, :], accumulate=false
vector.tensor_copy os, acc
dma.copy o2, os
"""
    first = _run(source, w=w, v=v)
    again = _run(source, w=w, v=v)
    w64, v64 = w.astype(np.float64), v.astype(np.float64)
    bound = (k + 1) * U32 * (np.abs(w64).T @ np.abs(v64))
    assert np.all(np.abs(first.outputs["o"] - w64.T @ v64) <= bound)
    second_half = w64[128:].T @ v64[128:]
    assert np.all(np.abs(first.outputs["o2"] - second_half) <= bound)
    assert first.outputs["o"].tobytes() == again.outputs["o"].tobytes()


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_tensor_transpose_is_exact(dt: str, rng) -> None:
    x = rng.standard_normal((64, 128)).astype(np.float32)
    if dt == "bfloat16":
        x = x.astype(ml_dtypes.bfloat16)
    result = _run(f""".hbm x {dt}[64, 128] input
.hbm o float32[128, 64] output
.sbuf s {dt}[64, 128]
.sbuf t float32[128, 64]
.psum tp float32[128, 64]
dma.copy s, x
tensor.transpose tp, s
vector.tensor_copy t, tp
dma.copy o, t""", x=x)
    np.testing.assert_array_equal(result.outputs["o"], x.astype(np.float32).T)


# ---- DMA and sequencer ---------------------------------------------------------------------------

def test_dma_casts_both_ways(rng) -> None:
    x = (rng.standard_normal((16, 32)) * 100).astype(np.float32)
    result = _run(""".hbm x float32[16, 32] input
.hbm back float32[16, 32] output
.hbm as_fp8 float8_e5m2[16, 32] output
.sbuf h bfloat16[16, 32]
.sbuf e float8_e5m2[16, 32]
dma.copy h, x
dma.copy back, h
dma.copy e, x
dma.copy as_fp8, e""", x=x)
    np.testing.assert_array_equal(result.outputs["back"],
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(result.outputs["as_fp8"].view(np.uint8),
                                  x.astype(ml_dtypes.float8_e5m2).view(np.uint8))


def test_registers_and_every_branch() -> None:
    """Counts executed instructions of loops written with each branch; r-values are checked by
    the tile they select (row r of an arange tensor)."""
    source = """.hbm x float32[64, 4] input init=arange
.hbm o float32[8, 4] output
.sbuf t float32[1, 4]
    ctrl.mov r0, 10
down:
    ctrl.sub r0, r0, 3          # 10 -> 7 -> 4 -> 1 -> -2: four times
    ctrl.bge r0, 0, down
    ctrl.mov r1, 0
up:
    ctrl.add r1, r1, 1          # five times
    ctrl.bne r1, 5, up
    ctrl.mul r2, r1, 7          # 35
    ctrl.beq r2, 35, skip
    ctrl.mov r2, 0              # skipped
skip:
    ctrl.jmp over
    ctrl.mov r2, 1              # skipped
over:
    dma.copy t, x[r2:r2+1, :]
    dma.copy o[0:1, :], t
    ctrl.mov r3, r1             # register to register
    ctrl.blt r3, 4, never
    dma.copy t, x[r3:r3+1, :]
    dma.copy o[1:2, :], t
never:
"""
    result = _run(source)
    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    np.testing.assert_array_equal(result.outputs["o"][0], x[35])
    np.testing.assert_array_equal(result.outputs["o"][1], x[5])
    # 1 mov + 4x(sub, bge) + 1 mov + 5x(add, bne) + mul + beq + jmp + mov + blt = 25
    assert result.instructions["ctrl"] == 25
    assert result.instructions["dma"] == 4


def test_float8_e4m3fn_matmul_on_trn3_only(rng) -> None:
    """TensorE reads OCP e4m3fn from v4 (trn3); fp8 products are exact in fp32."""
    w = rng.standard_normal((128, 16)).astype(ml_dtypes.float8_e4m3fn)
    v = rng.standard_normal((128, 32)).astype(ml_dtypes.float8_e4m3fn)
    source = """.target {target}
.hbm w float8_e4m3fn[128, 16] input
.hbm v float8_e4m3fn[128, 32] input
.hbm o float32[16, 32] output
.sbuf ws float8_e4m3fn[128, 16]
.sbuf vs float8_e4m3fn[128, 32]
.sbuf os float32[16, 32]
.psum acc float32[16, 32]
dma.copy ws, w
dma.copy vs, v
tensor.matmul acc, ws, vs, accumulate=false
vector.tensor_copy os, acc
dma.copy o, os
"""
    result = neuronemu.run(neuronemu.assemble(source.format(target="trn3")), inputs={"w": w, "v": v})
    w64, v64 = w.astype(np.float64), v.astype(np.float64)
    assert np.all(np.abs(result.outputs["o"] - w64.T @ v64)
                  <= 129 * U32 * (np.abs(w64).T @ np.abs(v64)))
    with pytest.raises(neuronemu.AsmError, match="float8_e4m3fn.*on trn2"):
        neuronemu.assemble(source.format(target="trn2"))
