"""NKI-style kernels (tests/nki/nki_kernels.py) traced by neuronemu.nki and run on neuronemu,
each against a float64 numpy oracle with an error bound derived from the instruction sequence
the kernel issues (u = unit roundoff of fp32, U_BF16 of bf16)."""

from __future__ import annotations

import math

import ml_dtypes
import nki_kernels as K
import numpy as np
import pytest

from neuronemu import nki
from neuronemu.testing import assert_ulp_close
from neuronemu.testing.bounds import assert_within_bound, gamma, matmul_error_bound, unit_roundoff

U = unit_roundoff("float32")
U_BF16 = unit_roundoff("bfloat16")
BF16 = ml_dtypes.bfloat16


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_tensor_add(target):
    a = rng(1).normal(size=(512, 512)).astype(np.float32)
    b = rng(2).normal(size=(512, 512)).astype(np.float32)
    K.tensor_add.options["target"] = target
    try:
        out = K.tensor_add(a, b)
    finally:
        K.tensor_add.options.pop("target")
    assert_ulp_close(out, f64(a) + f64(b), ulps=0.5)   # one fp32 add: correctly rounded
    assert K.tensor_add.last_run.result.target == target


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_matmul_tiled(target):
    lhsT = rng(3).normal(size=(512, 512)).astype(BF16)
    rhs = rng(4).normal(size=(512, 384)).astype(BF16)
    run = nki.run(K.matmul_tiled, lhsT, rhs, target=target)
    a, b = f64(lhsT).T, f64(rhs)
    # bf16 products are exact in fp32; the K = 512 sum is fp32 (4 K tiles, 128 terms each,
    # then 3 PSUM adds): Higham's gamma_K bound
    assert_within_bound(run.outputs, a @ b, matmul_error_bound(a, b))
    # the first K tile overwrites each PSUM bank, the other three accumulate
    matmuls = [line for line in run.asm.splitlines() if "tensor.matmul" in line]
    assert [("accumulate=true" in m) for m in matmuls] == [False, True, True, True] * 4


def softmax_bound(x: np.ndarray, store: str | None = None):
    """exp(x - max) / sum per row. x - max rounds once (relative error u d in exp, d = max - x),
    exp once, the fp32 row sum of n positive terms gamma(n - 1) on terms within u (max d + 1),
    then 1 / sum and the multiply (or one divide): gamma(d + 1 + (n - 1) + max d + 1 + 2)
    relative; a narrower store adds half its ulp."""
    n = x.shape[1]
    d = x.max(axis=1, keepdims=True) - x
    e = np.exp(-d)
    ref = e / e.sum(axis=1, keepdims=True)
    bound = np.vectorize(gamma)(np.ceil(d + 1 + (n - 1) + d.max(axis=1, keepdims=True) + 3)) * ref
    if store == "bfloat16":
        bound = bound + U_BF16 * (ref + bound)
    return ref, bound


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_softmax_isa_fp32(target):
    x = (rng(5).normal(size=(256, 512)) * 4).astype(np.float32)
    run = nki.run(K.softmax_isa, x, target=target)
    ref, bound = softmax_bound(f64(x))
    assert_within_bound(run.outputs, ref, bound)


def test_softmax_isa_bf16():
    x = (rng(6).normal(size=(1024, 2048)) * 4).astype(BF16)
    out = nki.simulate(K.softmax_isa)(x)
    assert out.dtype == BF16
    ref, bound = softmax_bound(f64(x), "bfloat16")
    assert_within_bound(out, ref, bound)


def test_softmax_nl():
    x = (rng(7).normal(size=(256, 512)) * 4).astype(np.float32)
    run = nki.run(K.softmax_nl, x)
    ref, bound = softmax_bound(f64(x))
    assert_within_bound(run.outputs, ref, bound)
    # the nl layer's engine policy: exp on ScalarE, max / sum / sub / divide on VectorE
    assert run.result.instructions == {"dma": 4, "vector": 8, "scalar": 2}


def rmsnorm_bound(x, g, eps=1e-6):
    """bf16 squares are exact in fp32; the row sum of n squares gamma(n - 1); * (1/D) (exact for
    a power-of-two D) + eps and rsqrt: 2 more roundings, halved through the square root, plus
    rsqrt's own; then (x * rstd) * g: 2 roundings; the bf16 store half a bf16 ulp."""
    n = x.shape[1]
    ms = (x * x).mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(ms + eps)
    ref = x * rstd * g
    rel = 1.01 * (0.5 * (gamma(n - 1) + 2 * U) + U + 2 * U)
    fp32 = np.abs(ref) * rel
    return ref, fp32 + U_BF16 * (np.abs(ref) + fp32)


def test_rmsnorm_isa():
    x = (rng(8).normal(size=(1024, 2048)) * 2).astype(BF16)
    g = (1 + 0.25 * rng(9).normal(size=(1, 2048))).astype(BF16)
    run = nki.run(K.rmsnorm_isa, x, g)
    ref, bound = rmsnorm_bound(f64(x), f64(g))
    assert_within_bound(run.outputs, ref, bound)
    assert "dma.copy g" not in run.asm   # gamma is broadcast from its [1, D] row by DMA
    broadcast = [line for line in run.asm.splitlines() if ", gamma, queue=" in line]
    assert len(broadcast) == 1 and broadcast[0].split()[1].startswith("sb_L")


def layernorm_bound(x, eps=1e-5):
    """The derivation of tests/test_programs.py's layernorm_reference (bn_stats / bn_aggr with
    n -> n + 24 roundings), with rstd = (var + eps) ** -0.5 on VectorE: the add, the power
    (allowed 2 u here) and half the variance's relative error."""
    k = x.shape[1] + 24
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    mean_bound = k * U * np.abs(x).mean(axis=1, keepdims=True)
    var_rel = k * U + (k * U) ** 2 * (1.0 + mean ** 2 / var)
    rstd = 1.0 / np.sqrt(var + eps)
    rstd_rel = 1.01 * (var_rel / 2 + 4 * U)
    ref = (x - mean) * rstd
    fp32 = 1.01 * (rstd * mean_bound + np.abs(ref) * (rstd_rel + 2 * U))
    return ref, fp32 + U_BF16 * (np.abs(ref) + fp32)


def test_layernorm_bn():
    x = (1 + 3 * rng(10).normal(size=(256, 1024))).astype(BF16)
    run = nki.run(K.layernorm_bn, x)
    ref, bound = layernorm_bound(f64(x))
    assert_within_bound(run.outputs, ref, bound)


def test_cumsum_scan():
    x = rng(11).normal(size=(256, 4096)).astype(np.float32)
    run = nki.run(K.cumsum_scan, x)
    # one left-to-right fp32 recurrence per row: prefix j has j roundings
    j = np.arange(1, x.shape[1] + 1, dtype=np.float64)
    bound = (j * U / (1 - j * U)) * np.cumsum(np.abs(f64(x)), axis=1)
    assert_within_bound(run.outputs, np.cumsum(f64(x), axis=1), bound)
    # and exactly numpy's float32 order
    np.testing.assert_array_equal(run.outputs[:, 1:], np.cumsum(x, axis=1)[:, 1:])


def test_rope_halves():
    x = rng(12).normal(size=(128, 4096)).astype(BF16)
    cos = rng(13).uniform(-1, 1, size=(64, 4096)).astype(BF16)
    sin = rng(14).uniform(-1, 1, size=(64, 4096)).astype(BF16)
    run = nki.run(K.rope_halves, x, cos, sin)
    x1, x2, c, s = f64(x[:64]), f64(x[64:]), f64(cos), f64(sin)
    ref = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s])
    # bf16 x bf16 products are exact in fp32 (kept fp32), the add / subtract rounds once,
    # straight to bf16: correctly rounded
    assert_ulp_close(run.outputs, ref, ulps=0.5)


def test_transpose_blocks_is_bit_exact():
    x = rng(15).normal(size=(512, 384)).astype(np.float32)
    x[0, 0], x[5, 7] = -0.0, np.inf
    out = nki.simulate(K.transpose_blocks)(x)
    np.testing.assert_array_equal(out.view(np.uint32), x.T.view(np.uint32))


def attention_bound(q, k, v):
    """Reference and bound for O = softmax(Q K^T / sqrt(D) + causal) V (q, k [S, D]).

    s = q.k: bf16 products exact, fp32 sum of D terms (gamma_D sum |q||k|), times c (u |s|);
    exp(s - max): the subtract rounds (u |s - max|), exp (u): relative error r_ij of p_ij <=
    c gamma_D sum |q||k| + u |s| + u |s - max| + u (+1% second order). The numerator uses p in
    bf16 (U_BF16 relative) summed in fp32 over nk keys (gamma_nk), the denominator fp32 p; the
    final 1 / l and multiply add 2 u."""
    s_len, d = q.shape
    c = 1.0 / math.sqrt(d)
    s = (q @ k.T) * c
    mask = np.tril(np.ones((s_len, s_len), dtype=bool))
    s = np.where(mask, s, -np.inf)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - m)
    denom = p.sum(axis=1, keepdims=True)
    ref = (p @ v) / denom
    absdot = np.abs(q) @ np.abs(k).T
    r = 1.01 * (c * gamma(d) * absdot + U * np.abs(np.where(mask, s, 0))
                + U * np.abs(np.where(mask, s - m, 0)) + U)
    r = np.where(mask, r, 0)
    nk = np.arange(1, s_len + 1)[:, None]
    g = np.vectorize(gamma)(nk)
    term = (p * (U_BF16 + r + g)) @ np.abs(v) / denom
    rmax = r.max(axis=1, keepdims=True)
    bound = 1.1 * (term + np.abs(ref) * (rmax + g + 2 * U))
    return ref, bound


def test_causal_attention():
    s, d = 512, 128
    q = rng(16).normal(size=(s, d)).astype(BF16)
    k = rng(17).normal(size=(s, d)).astype(BF16)
    v = rng(18).normal(size=(s, d)).astype(BF16)
    run = nki.run(K.causal_attention, np.ascontiguousarray(q.T), np.ascontiguousarray(k.T), v)
    ref, bound = attention_bound(f64(q), f64(k), f64(v))
    assert_within_bound(run.outputs, ref, bound)


def test_mlp_relu_nl():
    xT = rng(19).normal(size=(128, 256)).astype(BF16)
    w = rng(20).normal(size=(128, 512)).astype(BF16)
    run = nki.run(K.mlp_relu_nl, xT, w)
    a, b = f64(xT).T, f64(w)
    ref = np.maximum(a @ b, 0)
    # relu is exact and monotone: |relu(y) - relu(y*)| <= |y - y*|
    assert_within_bound(run.outputs, ref, matmul_error_bound(a, b))


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_layernorm_affine_with_a_partial_tile(target):
    x = (1 + 3 * rng(21).normal(size=(1000, 1024))).astype(BF16)
    g = (1 + 0.5 * rng(22).normal(size=(1, 1024))).astype(np.float32)
    b = (0.5 * rng(23).normal(size=(1, 1024))).astype(np.float32)
    run = nki.run(K.layernorm_affine, x, g, b, target=target)
    x64, g64, b64 = f64(x), f64(g), f64(b)
    # the statistics as layernorm_bound derives them; then (x - mean) * g, * rstd, + b: one
    # rounding each (3 u on the product, u on the sum), the bf16 store half a bf16 ulp
    k = x.shape[1] + 24
    mean = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True)
    mean_bound = k * U * np.abs(x64).mean(axis=1, keepdims=True)
    var_rel = k * U + (k * U) ** 2 * (1.0 + mean ** 2 / var)
    rstd = 1.0 / np.sqrt(var + 1e-5)
    rstd_rel = 1.01 * (var_rel / 2 + 4 * U)
    core = (x64 - mean) * rstd * g64
    ref = core + b64
    fp32 = 1.01 * (rstd * mean_bound * np.abs(g64) + np.abs(core) * (rstd_rel + 3 * U)
                   + U * np.abs(ref))
    assert_within_bound(run.outputs, ref, fp32 + U_BF16 * (np.abs(ref) + fp32))
    # the last tile's 104 rows stay on partitions 0..103
    assert "x[896:1000, 0:1024]" in run.asm


def test_a_kernel_may_return_several_outputs():
    x = rng(24).normal(size=(128, 64)).astype(np.float32)
    plus, twice = nki.simulate(K.two_outputs)(x)
    assert_ulp_close(plus, f64(x) + 1, ulps=0.5)
    np.testing.assert_array_equal(twice, x * 2)


@pytest.mark.parametrize("name", ["cumsum_scan", "causal_attention", "rmsnorm_isa"])
def test_more_kernels_on_trn3_match_trn2_bit_for_bit(name):
    """Same instructions, same fp32 arithmetic: trn3 changes the timing, not the values."""
    g = rng(25)
    args = {"cumsum_scan": (g.normal(size=(128, 2048)).astype(np.float32),),
            "causal_attention": tuple(g.normal(size=shape).astype(BF16)
                                      for shape in ((128, 256), (128, 256), (256, 128))),
            "rmsnorm_isa": (g.normal(size=(256, 512)).astype(BF16),
                            g.normal(size=(1, 512)).astype(BF16))}[name]
    kernel = getattr(K, name)
    a, b = nki.run(kernel, *args, target="trn2"), nki.run(kernel, *args, target="trn3")
    np.testing.assert_array_equal(np.asarray(a.outputs).view(np.uint8),
                                  np.asarray(b.outputs).view(np.uint8))
    assert a.time_ns != b.time_ns
