"""kernels/mx_matmul (trn3 only: MX types and matmul_mx exist on NeuronCore-v4 alone):
c = mx(x) @ mx(w), x [256, 1024] and w [1024, 512] bf16 quantized on chip to MXFP8 e4m3fn.

The oracle quantizes independently in numpy / ml_dtypes, following docs/numerics.md ("MX"): the
kernel maps K index kt*512 + 128 i + p to value slot i of partition p, so a scale block (8
partitions x 4 values) holds K indices {kt*512 + 128 i + 8 g + r : i < 4, r < 8} of one column;
its scale is 2^(floor(log2 amax) - 7) (e4m3fn: Emax 8), 2^-127 for an all-zero block, and each
value v becomes e4m3fn(v / scale) (round to nearest even; v / scale is exact, a power-of-two
division of a bf16 value). Checks:

1. the quantized tiles the kernel left in SBUF equal the oracle's, bit for bit (values decoded
   from the raw x4 words byte by byte with ml_dtypes, scales as E8M0 codes);
2. c against the float64 product of the oracle's dequantized operands: every product of two
   e4m3fn values times two powers of two is exact in fp32, and each output is one fp32 sum of
   K = 1024 of them (two 512-row MX matmuls accumulating in PSUM), so
   |c - x_q @ w_q| <= gamma_K |x_q| @ |w_q| (Higham, *Accuracy and Stability of Numerical
   Algorithms*, 2nd ed., §3.1, gamma_n of Lemma 3.1, u = 2^-24);
3. c against the exact bf16 product x @ w: e4m3fn keeps 3 mantissa bits (u8 = 2^-4) and has
   subnormals spaced 2^-9, so a quantized value is off by at most
   d(v) = 2^-4 |v| + 2^-10 s (s its block's scale); hence
   |x_q @ w_q - x @ w| <= d_x @ |w| + |x_q| @ d_w, plus the bound of 2.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_bits_equal, assert_within_bound, gamma

T, K, N = 256, 1024, 512
KT = K // 512
E4M3_EMAX = 8


def k_index(kt: int, p: np.ndarray, i: np.ndarray) -> np.ndarray:
    return kt * 512 + 128 * i + p


def quantize(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MXFP8 e4m3fn of a [K, cols] operand (K is the contraction dim) in the kernel's block
    layout: (values as e4m3fn [K, cols], scale per element [K, cols] as float64)."""
    q = np.zeros(a.shape, dtype=ml_dtypes.float8_e4m3fn)
    scale = np.zeros(a.shape)
    p_in, i_in = np.meshgrid(np.arange(8), np.arange(4), indexing="ij")
    for kt in range(KT):
        for g in range(16):                                  # 16 groups of 8 partitions
            rows = k_index(kt, 8 * g + p_in, i_in).reshape(-1)   # the block's 32 K indices
            block = a[rows, :]
            amax = np.abs(block).max(axis=0)
            with np.errstate(divide="ignore"):
                exponent = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1.0))),
                                    -127 + E4M3_EMAX - 1)
            s = np.exp2(exponent - (E4M3_EMAX - 1))
            q[rows, :] = (block / s).astype(ml_dtypes.float8_e4m3fn)
            scale[rows, :] = s
    return q, scale


def kernel_quantized(r, values: str, scales: str, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's [128, KT, cols] x4 tile and its scale tile, as [K, cols] arrays of e4m3fn
    values and E8M0 scales (decoded here from the raw words: byte i of a word is value i)."""
    raw = np.ascontiguousarray(r.tiles[values]).view(np.uint8).reshape(128, KT, cols, 4)
    vals = raw.view(ml_dtypes.float8_e4m3fn)
    out_v = np.zeros((K, cols), dtype=ml_dtypes.float8_e4m3fn)
    out_s = np.zeros((K, cols), dtype=ml_dtypes.float8_e8m0fnu)
    sc = r.tiles[scales]
    for kt in range(KT):
        for i in range(4):
            for p in range(128):
                out_v[k_index(kt, p, i), :] = vals[p, kt, :, i]
                g = p // 8
                out_s[k_index(kt, p, i), :] = sc[32 * (g // 4) + g % 4, kt, :]
    return out_v, out_s


def test_quantize_oracle_hand_case() -> None:
    """One block by hand: amax 3.0 -> scale 2^(1 - 7) = 2^-6; 3.0 / 2^-6 = 192 (e4m3fn exact),
    0.01 / 2^-6 = 0.64 -> 0.625 (the nearest e4m3fn value: the spacing in [0.5, 1) is 2^-4)."""
    a = np.zeros((K, 1))
    a[k_index(0, 0, 0), 0], a[k_index(0, 7, 3), 0] = 3.0, 0.01
    q, s = quantize(a)
    assert s[k_index(0, 0, 0), 0] == s[k_index(0, 7, 3), 0] == 2.0**-6
    assert float(q[k_index(0, 0, 0), 0]) == 192.0 and float(q[k_index(0, 7, 3), 0]) == 0.625
    assert s[k_index(0, 8, 0), 0] == 2.0**-127 and float(q[k_index(0, 8, 0), 0]) == 0.0
    assert math.isclose(float(q[k_index(0, 7, 3), 0]) * s[0, 0], 0.009765625)


@pytest.mark.neuronemu_targets("trn3")
def test_mx_matmul(neuronemu_run) -> None:
    r = neuronemu_run("kernels/mx_matmul")
    x = r.inputs["x"].astype(np.float64)
    w = r.inputs["w"].astype(np.float64)
    xq, xs = quantize(x.T)                       # stationary: x^T [K, T]
    wq, wsc = quantize(w)                        # moving: w [K, N]

    kv, ks = kernel_quantized(r, "xq", "xscale", T)
    assert_bits_equal(kv, xq)
    assert_bits_equal(ks, xs.astype(ml_dtypes.float8_e8m0fnu))
    kv, ks = kernel_quantized(r, "wq", "wscale", N)
    assert_bits_equal(kv, wq)
    assert_bits_equal(ks, wsc.astype(ml_dtypes.float8_e8m0fnu))

    a = xq.astype(np.float64) * xs               # dequantized x^T [K, T]
    b = wq.astype(np.float64) * wsc              # dequantized w [K, N]
    c_q = a.T @ b
    e_acc = gamma(K) * (np.abs(a).T @ np.abs(b))
    assert_within_bound(r.outputs["c"], c_q, e_acc, label="c vs mx(x) @ mx(w)")

    d_x = 2.0**-4 * np.abs(x.T) + 2.0**-10 * xs
    d_w = 2.0**-4 * np.abs(w) + 2.0**-10 * wsc
    e_quant = d_x.T @ np.abs(w) + np.abs(a).T @ d_w
    assert_within_bound(r.outputs["c"], x @ w, e_quant + e_acc, label="c vs x @ w")
    assert r.warnings == []
