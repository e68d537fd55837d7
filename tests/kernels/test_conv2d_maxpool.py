"""kernels/conv2d_maxpool: y = maxpool2x2(conv2d(x, w) + bias), valid 3x3, stride 1, NCHW / OIHW.

Oracle: float64 convolution over sliding windows of the bf16 values the kernel read, plus the
fp32 bias, then the max over each 2 x 2 window.

Error bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1; gamma_n of
Lemma 3.1, u32 = 2^-24):

- each convolution output is one fp32 sum of K = 9 C_IN products of bf16 values (exact in
  fp32), accumulated in PSUM across the 9 tap matmuls: |c_c - c| <= gamma_K sum |w||x|;
- max is 1-Lipschitz in the max norm, so a pooled value is off by at most the largest bound in
  its 2 x 2 window, e_p (the maxima themselves are exact in fp32);
- ScalarE adds the bias and rounds to fp32 once: |y_c - (p + bias)| <= e_p + u32 (|p + bias| + e_p).
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma, unit_roundoff

B, C_IN, C_OUT, H = 2, 64, 128, 34
OH = H - 2
K = 9 * C_IN
MATMULS = 2 * 2 * 9          # images x row blocks x taps, each N = 16 x 32 = 512 columns


def conv_valid(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """c[b, o, i, j] = sum_{c, dy, dx} w[o, c, dy, dx] x[b, c, i + dy, j + dx], as one matmul of
    the [B * OH * OW, C_IN * 9] window matrix by the [C_IN * 9, C_OUT] weights."""
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
    b, c, oh, ow = windows.shape[:4]
    rows = windows.transpose(0, 2, 3, 1, 4, 5).reshape(b * oh * ow, c * 9)
    out = rows @ w.reshape(w.shape[0], c * 9).T
    return out.reshape(b, oh, ow, -1).transpose(0, 3, 1, 2)


def pool2(c: np.ndarray) -> np.ndarray:
    b, o, h, w = c.shape
    return c.reshape(b, o, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_conv_oracle_against_direct_sum() -> None:
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 3, 3))
    direct = np.zeros((2, 4, 4, 3))
    for b, o, i, j in np.ndindex(direct.shape):
        direct[b, o, i, j] = (w[o] * x[b, :, i:i + 3, j:j + 3]).sum()
    assert np.allclose(conv_valid(x, w), direct, rtol=1e-13, atol=1e-13)


@pytest.mark.neuronemu_targets("trn1", "trn2", "trn3")
def test_conv2d_maxpool(neuronemu_run) -> None:
    r = neuronemu_run("kernels/conv2d_maxpool")
    x, w, bias = (r.inputs[n].astype(np.float64) for n in ("x", "w", "bias"))
    conv = conv_valid(x, w)
    assert conv.shape == (B, C_OUT, OH, OH)
    e_conv = gamma(K) * conv_valid(np.abs(x), np.abs(w))
    y = pool2(conv) + bias[None, :, None, None]
    e_p = pool2(e_conv)
    bound = e_p + unit_roundoff("float32") * (np.abs(y) + e_p)
    assert_within_bound(r.outputs["y"], y, bound, label="y")
    assert r.warnings == []

    # Design: the two images' K = 64 matmuls run on separate 64-row PE tiles at the same time,
    # so TensorE is busy well under the 36 x 512 cycles the same matmuls take one after another.
    assert r.timing.tracks["tensor"].busy_cycles < 0.75 * MATMULS * 512
