"""Stage-2 NKI-style kernels (tests/nki/nki_kernels.py): causal flash attention, fp8
double-row matmul, MX matmul (trn3), conv2d + max pool, avg_pool2d; each traced by
neuronemu.nki, run on neuronemu and checked against a float64 / ml_dtypes oracle with an error
bound derived from the instruction sequence the kernel issues (u = fp32 unit roundoff)."""

from __future__ import annotations

import math

import ml_dtypes
import nki_kernels as K
import numpy as np
import pytest

from neuronemu import nki
from neuronemu.errors import NeuronemuError
from neuronemu.testing.bounds import assert_within_bound, gamma, unit_roundoff

U = unit_roundoff("float32")
U_BF16 = unit_roundoff("bfloat16")
BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def f64(a) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def flash_bound(q, k, v, kv_block):
    """Reference and bound for causal O = softmax(Q K^T c + mask) V (q, k [S, D], c = 1/sqrt(D))
    computed by an online softmax over blocks of kv_block keys.

    Per score: the fp32 dot product (gamma_D c sum |q||k|), the scaling by c (u |c s|); p_ij =
    exp(c s_ij - m) with m the running max at its block, |c s - m| <= |c s| + max_row |c s|
    (u each for the subtract and exp; u max_row |c s| for -c m off the diagonal, where the
    scale is applied to the block max). Each later block rescales o and l by alpha = exp(m_old -
    m_new) (|m_old - m_new| <= 2 max_row |c s|: u for the subtract, u for exp, u for each
    multiply-add), at most nb times. The numerator uses p in bf16 (U_BF16) summed in fp32 over
    the keys and blocks (gamma_{nk + nb}), the denominator fp32 p; 1 / l and the multiply add
    2 u. Relative errors add to first order (+1% and +10% margins for the second order)."""
    s_len, d = q.shape
    c = 1.0 / math.sqrt(d)
    s = (q @ k.T) * c
    mask = np.tril(np.ones((s_len, s_len), dtype=bool))
    s_m = np.where(mask, s, -np.inf)
    m = s_m.max(axis=1, keepdims=True)
    p = np.exp(s_m - m)
    denom = p.sum(axis=1, keepdims=True)
    ref = (p @ v) / denom
    abs_s = np.abs(np.where(mask, s, 0))
    rowmax = abs_s.max(axis=1, keepdims=True)
    nb = np.ceil(np.arange(1, s_len + 1) / kv_block)[:, None]
    nb = np.maximum(nb, np.ceil(((np.arange(s_len) // 128 + 1) * 128) / kv_block)[:, None])
    r = 1.01 * (c * gamma(d) * (np.abs(q) @ np.abs(k).T) + U * abs_s + U * (abs_s + rowmax)
                + U * rowmax + U + nb * (U * 2 * rowmax + 4 * U))
    r = np.where(mask, r, 0)
    nk = np.arange(1, s_len + 1)[:, None]
    g = np.vectorize(gamma)((nk + nb).astype(int))
    term = (p * (U_BF16 + r + g)) @ np.abs(v) / denom
    rmax = r.max(axis=1, keepdims=True)
    bound = 1.1 * (term + np.abs(ref) * (rmax + g + 2 * U))
    return ref, bound


@pytest.mark.parametrize("s_len, kv_block", [(512, 128), (1024, 512)])
def test_flash_attention_causal(s_len, kv_block):
    d = 128
    q = rng(21).normal(size=(s_len, d)).astype(BF16)
    k = rng(22).normal(size=(s_len, d)).astype(BF16)
    v = rng(23).normal(size=(s_len, d)).astype(BF16)
    run = nki.run(K.flash_attention_causal, np.ascontiguousarray(q.T),
                  np.ascontiguousarray(k.T), v, kv_block)
    ref, bound = flash_bound(f64(q), f64(k), f64(v), kv_block)
    assert_within_bound(run.outputs, ref, bound)
    # nothing above the diagonal is issued: query tile i transposes and multiplies i + 1
    # chunks of 128 keys, after ceil((i + 1) * 128 / kv_block) score matmuls
    n_qt = s_len // 128
    blocks = sum(-(-(i + 1) * 128 // kv_block) for i in range(n_qt))
    chunks = n_qt * (n_qt + 1) // 2
    assert run.asm.count("tensor.transpose") == chunks
    assert run.asm.count("tensor.matmul") == blocks + chunks
    assert run.asm.count("gpsimd.affine_select") == n_qt


def test_flash_attention_rescales_when_a_later_block_has_a_larger_max():
    """Scores growing along the keys make every block raise the running max: without the
    alpha rescaling the output would be off by factors of e^(gap)."""
    s_len, d = 512, 128
    q = np.full((s_len, d), 0.25, dtype=BF16)
    k = (np.linspace(0, 3, s_len)[:, None] * np.ones((1, d))).astype(BF16)
    v = rng(24).normal(size=(s_len, d)).astype(BF16)
    run = nki.run(K.flash_attention_causal, np.ascontiguousarray(q.T),
                  np.ascontiguousarray(k.T), v, 128)
    ref, bound = flash_bound(f64(q), f64(k), f64(v), 128)
    assert_within_bound(run.outputs, ref, bound)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_fp8_matmul_double_row(target):
    kd, m, n = 1024, 256, 512
    aT = rng(31).normal(size=(kd, m)).astype(FP8)
    b = rng(32).normal(size=(kd, n)).astype(FP8)
    sc = rng(33).uniform(0.001, 0.01, size=(1, n)).astype(np.float32)
    run = nki.run(K.fp8_matmul_double_row, aT, b, sc, target=target)
    assert "perf_mode=double_row" in run.asm
    a64, b64, s64 = f64(aT).T, f64(b), f64(sc)
    ref = (a64 @ b64) * s64
    # fp8 products are exact in fp32; K-term fp32 sum (gamma_K), one multiply by the scale (u)
    bound = 1.01 * (gamma(kd) * (np.abs(a64) @ np.abs(b64)) * s64 + U * np.abs(ref))
    assert_within_bound(run.outputs, ref, bound)


def test_fp8_double_row_is_refused_on_trn1_at_the_kernel_line():
    aT = np.zeros((256, 128), dtype=FP8)
    b = np.zeros((256, 128), dtype=FP8)
    with pytest.raises(NeuronemuError) as err:
        nki.run(K.fp8_matmul_double_row, aT, b, np.ones((1, 128), np.float32), target="trn1")
    assert "nki_kernels.py:" in str(err.value) and "double_row needs trn2 or trn3" in str(err.value)


def mx_quantize(vals: np.ndarray) -> np.ndarray:
    """OCP MXFP8 (e4m3fn) as neuronemu's quantize_mx documents it, for blocks along axis -1
    of 32 values: scale = 2^(floor(log2 amax) - 7), values / scale rounded to nearest even
    (ml_dtypes), dequantized back to float64."""
    amax = np.abs(vals).max(axis=-1, keepdims=True)
    scale = np.where(amax > 0, 2.0 ** (np.floor(np.log2(np.where(amax > 0, amax, 1))) - 7),
                     2.0 ** -127)
    q = (vals / scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return q * scale


def mx_reference(x64: np.ndarray, w64: np.ndarray):
    """Quantize as the kernel lays the operands out: K index 512 kt + 128 i + p is value i of
    partition p, a block is 8 partitions x 4 values, the same for x (per token) and w (per
    column). Returns the dequantized x [T, K], w [K, N]."""
    kd = x64.shape[1]
    kt = kd // 512

    def blocks(a):                     # a [cols, K] -> [cols, kt, 16 groups, 32 values]
        cols = a.shape[0]
        r = a.reshape(cols, kt, 4, 16, 8)              # (col, kt, i, g, r): p = 8 g + r
        return r.transpose(0, 1, 3, 2, 4).reshape(cols, kt, 16, 32)

    def unblocks(bl):
        cols = bl.shape[0]
        r = bl.reshape(cols, kt, 16, 4, 8).transpose(0, 1, 3, 2, 4)
        return r.reshape(cols, kd)

    xq = unblocks(mx_quantize(blocks(x64)))
    wq = unblocks(mx_quantize(blocks(w64.T))).T
    return xq, wq


def test_mx_matmul_trn3():
    t_dim, kd, n = 256, 1024, 512
    # magnitudes spread over 2^-16 .. 1 so that small values of a block fall into e4m3fn's
    # subnormals or to zero: which values share a block (the layout) then shows in the result
    x = (rng(41).normal(size=(t_dim, kd)) * 2.0 ** -rng(43).integers(0, 17, (t_dim, kd)))
    x = x.astype(BF16)
    w = (rng(42).normal(size=(kd, n)) * 2.0 ** -rng(44).integers(0, 17, (kd, n))).astype(BF16)
    run = nki.run(K.mx_matmul, x, w, target="trn3")
    xq, wq = mx_reference(f64(x), f64(w))
    ref = xq @ wq
    # the dequantized fp8 values and their products are exact in fp32; the K-term fp32 sum
    bound = 1.01 * gamma(kd) * (np.abs(xq) @ np.abs(wq))
    assert_within_bound(run.outputs, ref, bound)
    # the blocks are those of the kernel's layout: 32 consecutive K indices would differ
    cols = (lambda a: mx_quantize(a.reshape(a.shape[0], -1, 32)).reshape(a.shape[0], -1))
    other = cols(f64(x)) @ cols(f64(w).T).T
    assert np.abs(run.outputs - other).max() > 10 * np.abs(run.outputs - ref).max()


def test_mx_matmul_is_refused_on_trn2_at_the_kernel_line():
    x = np.zeros((128, 512), dtype=BF16)
    w = np.zeros((512, 128), dtype=BF16)
    with pytest.raises(NeuronemuError) as err:
        nki.run(K.mx_matmul, x, w, target="trn2")
    assert "nki_kernels.py:" in str(err.value) and "trn3" in str(err.value)


@pytest.mark.parametrize("b, c_in, h", [(2, 64, 34), (1, 96, 18)])
def test_conv2d_maxpool(b, c_in, h):
    """Two images on the two 64-row PE tiles (C_in = 64), and one image at a time (C_in = 96)."""
    c_out = 128
    x = rng(51).normal(size=(b, c_in, h, h)).astype(BF16)
    w = (rng(52).normal(size=(c_out, c_in, 3, 3)) * 0.0417).astype(BF16)
    bias = rng(53).normal(size=(c_out, 1)).astype(np.float32)
    run = nki.run(K.conv2d_maxpool, x, w, bias)
    assert ("tile_position=[64, 0]" in run.asm) == (2 * c_in <= 128)
    x64, w64, b64 = f64(x), f64(w), f64(bias)
    oh = h - 2
    conv = np.zeros((b, c_out, oh, oh))
    absconv = np.zeros_like(conv)
    for dy in range(3):
        for dx in range(3):
            win = x64[:, :, dy:dy + oh, dx:dx + oh]
            conv += np.einsum("oc,bcij->boij", w64[:, :, dy, dx], win)
            absconv += np.einsum("oc,bcij->boij", np.abs(w64[:, :, dy, dx]), np.abs(win))
    pre = conv + b64.reshape(1, c_out, 1, 1)
    # bf16 products exact in fp32, 9 C_in-term fp32 sums (gamma_{9 C_in}), the bias add (u)
    err = 1.01 * (gamma(9 * c_in) * absconv + U * np.abs(pre))

    def pool(a, op):
        return op(op(a[:, :, 0::2, 0::2], a[:, :, 0::2, 1::2]),
                  op(a[:, :, 1::2, 0::2], a[:, :, 1::2, 1::2]))

    # max is exact and 1-Lipschitz: the pooled error is at most the window's largest error
    assert_within_bound(run.outputs, pool(pre, np.maximum), pool(err, np.maximum))


@pytest.mark.parametrize("size, stride", [(3, 2), (2, 2)])
def test_avg_pool2d(size, stride):
    x = rng(61).normal(size=(2, 128, 32, 32)).astype(BF16)
    run = nki.run(K.avg_pool2d, x, size, stride)
    x64 = f64(x)
    oh = (32 - size) // stride + 1
    win = np.zeros((2, 128, oh, oh))
    absw = np.zeros_like(win)
    for dy in range(size):
        for dx in range(size):
            v = x64[:, :, dy:dy + stride * (oh - 1) + 1:stride,
                    dx:dx + stride * (oh - 1) + 1:stride]
            win += v
            absw += np.abs(v)
    ref = win / size ** 2
    # (size - 1) row adds then (size - 1) column adds in fp32, then * fp32(1/k^2) (2 u)
    bound = 1.01 * (gamma(2 * (size - 1)) * absw / size ** 2 + 2 * U * np.abs(ref))
    assert_within_bound(run.outputs, ref, bound)
