"""programs/kernels/avg_pool2d.s: 3 x 3 average pooling at stride 2 of x [4, 128, 64, 64] bf16,
y [4, 128, 31, 31] fp32.

Error bound (u = 2^-24; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
§4.2 and Lemma 3.3). The bf16 inputs are exact in fp32. Each window sum is a tree of fp32
additions, (x0 + x1) + x2 down each column, then (v0 + v1) + v2 across, so every term passes
through at most 4 roundings: |s^ - s| <= gamma_4 sum |x| over the window. ScalarE then
multiplies by fl32(1/9) (one rounding in the constant, one in the product):
|y^ - s/9| <= (1 + gamma_2) gamma_4 sum|x| / 9 + gamma_2 |s| / 9.
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma

KERNEL = "kernels/avg_pool2d"
TARGETS = ("trn1", "trn2", "trn3")


def windows(x: np.ndarray, k: int = 3, stride: int = 2) -> np.ndarray:
    """[..., OH, OW, k, k] view of the k x k windows at the given stride (float64)."""
    x = x.astype(np.float64)
    oh = (x.shape[-2] - k) // stride + 1
    ow = (x.shape[-1] - k) // stride + 1
    rows = np.arange(oh)[:, None] * stride + np.arange(k)[None, :]     # [OH, k]
    cols = np.arange(ow)[:, None] * stride + np.arange(k)[None, :]     # [OW, k]
    return x[..., rows[:, None, :, None], cols[None, :, None, :]]


def pool_oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = windows(x)
    s = w.sum(axis=(-2, -1))
    bound = ((1 + gamma(2)) * gamma(4) * np.abs(w).sum(axis=(-2, -1)) + gamma(2) * np.abs(s)) / 9
    return s / 9, bound


@pytest.mark.neuronemu_targets(*TARGETS)
def test_avg_pool_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    expected, bound = pool_oracle(r.inputs["x"])
    assert_within_bound(r.outputs["y"], expected, bound)


def test_avg_pool_hand_case(neuronemu_run):
    """x[b, c, h, w] = h + w (small integers, exact everywhere): the mean of a 3 x 3 window at
    (2i, 2j) is its centre value 2i + 2j + 2, times fl32(1/9) * 9 — exact for these integers
    up to the one rounding of the product, so within half an fp32 ulp of the integer."""
    h = np.arange(64, dtype=np.float32)
    x = np.broadcast_to(h[:, None] + h[None, :], (4, 128, 64, 64)).copy()
    r = neuronemu_run(KERNEL, {"x": x}, target="trn2")
    i = np.arange(31)
    centre = (2 * i[:, None] + 2 * i[None, :] + 2).astype(np.float64)
    err = np.abs(r.outputs["y"].astype(np.float64) - centre)
    assert np.all(err <= 2.0**-24 * centre * 2), err.max()


def test_avg_pool_overlaps_dma_with_pooling(neuronemu_run):
    """The kernel is bound by the Vector engine's adds and most of the DMA time hides under
    them (only the first load and the last store cannot), so the run is shorter than the
    serial sum of all tracks by most of the DMA queues' busy time. (A single x slot would hide
    almost as much: the next image's load could still start once the two column-sum adds, the
    only readers of x, are done; the second slot lets it start earlier, a 0.1% effect here.)"""
    r = neuronemu_run(KERNEL, target="trn2")
    tracks = r.timing.tracks
    serial = sum(t.busy_ns for t in tracks.values())
    dma = sum(t.busy_ns for name, t in tracks.items() if name.startswith("dma"))
    assert serial - r.time_ns > 0.6 * dma, (r.time_ns, serial, dma)
    assert tracks["vector"].utilisation > 0.8
