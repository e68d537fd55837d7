"""programs/kernels/avg_pool2d_pe.s: 3 x 3, stride-2 average pooling of x [4, 128, 64 x 64]
bf16 (NCHW, each image flattened) on the PE array after DMA transposes, y [4, 128, 31, 31] fp32;
trn2 and trn3 (DMA transposes; NeuronCore-v2 has none).

Error bound (u = 2^-24; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
§3.1 and §4.2). Each output is two accumulating matmuls against 0/1 pooling matrices: every
product is exact (a bf16 value times 1 or 0), the zero products add exactly, so the window sum
is 9 non-zero terms summed in fp32 in some order, at most 8 roundings:
|s^ - s| <= gamma_8 sum |x| over the window. ScalarE multiplies by fl32(1/9) (two roundings):
|y^ - s/9| <= ((1 + gamma_2) gamma_8 sum|x| + gamma_2 |s|) / 9.
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma

KERNEL = "kernels/avg_pool2d_pe"


def pool_oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 3 x 3 / stride-2 window means of x [..., 64, 64] and the bound above."""
    x = x.astype(np.float64)
    rows = np.arange(31)[:, None] * 2 + np.arange(3)[None, :]          # [31, 3]
    win = x[..., rows[:, None, :, None], rows[None, :, None, :]]       # [..., 31, 31, 3, 3]
    s = win.sum(axis=(-2, -1))
    bound = ((1 + gamma(2)) * gamma(8) * np.abs(win).sum(axis=(-2, -1)) + gamma(2) * np.abs(s)) / 9
    assert np.all(np.isfinite(bound)) and np.all(bound >= 0)
    return s / 9, bound


@pytest.mark.neuronemu_targets("trn2", "trn3")
def test_pe_avg_pool_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    expected, bound = pool_oracle(r.inputs["x"].reshape(4, 128, 64, 64))
    assert_within_bound(r.outputs["y"], expected, bound)


def test_pe_avg_pool_hand_case(neuronemu_run):
    """x[b, c, h, w] = h + w + c: the mean of the window at (2i, 2j) is its centre value
    2i + 2j + 2 + c, and every sum is an exact integer below 2^24, so the only rounding is the
    multiply by fl32(1/9): within 2 fp32 ulps of the integer."""
    h = np.arange(64, dtype=np.float32)
    c = np.arange(128, dtype=np.float32)
    x = (h[None, :, None] + h[None, None, :] + c[:, None, None])[None].repeat(4, axis=0)
    r = neuronemu_run(KERNEL, {"x": x.reshape(4, 128, 4096)}, target="trn2")
    i = np.arange(31)
    centre = (2 * i[:, None] + 2 * i[None, :] + 2)[None, None] + c[None, :, None, None]
    err = np.abs(r.outputs["y"].astype(np.float64) - centre)
    assert np.all(err <= 2.0**-23 * centre), err.max()


def test_pe_avg_pool_leaves_vector_free_and_is_dma_bound(neuronemu_run):
    """No Vector instruction at all; the DMA transposes bound the run (the DMA engines busy
    most of it), and TensorE's 62 small matmuls per image take a fraction of it."""
    r = neuronemu_run(KERNEL, target="trn2")
    assert r.timing.tracks.get("vector") is None or r.timing.tracks["vector"].instructions == 0
    assert r.timing.bound_by.startswith("dma")
    assert r.timing.dma.engine_utilisation > 0.8
    assert r.timing.tracks["tensor"].busy_ns < 0.5 * r.time_ns
