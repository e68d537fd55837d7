"""programs/kernels/cumsum.s: inclusive cumulative sum along the free dim of [256, 4096] fp32.

Summation order (the kernel's header): one sequential recurrence per row, y[-1] = 0,
y[j] = fl32(y[j - 1] + x[j]) (tensor_tensor_scan computes 1 * y[j - 1] exactly, then the add
rounds once), continued across the four 1024-column chunks through `initial=`. So:

- bit-exact: the output equals that recurrence evaluated in numpy float32, an independent
  implementation of the documented order;
- bound against float64: y[j] is a recursive sum of j + 1 terms, j roundings (0 + x[0] is
  exact), so |y^[j] - y[j]| <= gamma_j sum_{k <= j} |x[k]| (Higham, *Accuracy and Stability of
  Numerical Algorithms*, 2nd ed., §4.2, recursive summation; gamma_j = j u / (1 - j u),
  u = 2^-24).
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.testing import assert_bits_equal, assert_within_bound, unit_roundoff

KERNEL = "kernels/cumsum"
TARGETS = ("trn1", "trn2", "trn3")
U = unit_roundoff("float32")


def sequential_fp32(x: np.ndarray) -> np.ndarray:
    """y[:, j] = fl32(y[:, j - 1] + x[:, j]) from y[:, -1] = +0.0, one column at a time."""
    x = x.astype(np.float32)
    y = np.empty_like(x)
    acc = np.zeros(x.shape[0], dtype=np.float32)
    for j in range(x.shape[1]):
        acc = acc + x[:, j]                  # float32 + float32: one rounding, as the scan
        y[:, j] = acc
    return y


def cumsum_bound(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    j = np.arange(x.shape[1], dtype=np.float64)
    return np.cumsum(x, axis=1), (j * U / (1 - j * U)) * np.cumsum(np.abs(x), axis=1)


@pytest.mark.neuronemu_targets(*TARGETS)
def test_cumsum_follows_the_documented_order(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    x = r.inputs["x"]
    assert_bits_equal(r.outputs["y"], sequential_fp32(x))
    exact, bound = cumsum_bound(x)
    assert_within_bound(r.outputs["y"], exact, bound)


def test_cumsum_hand_cases(neuronemu_run):
    """Ones count exactly (every prefix up to 4096 is an integer fp32 holds); a row whose
    terms cancel shows the rounding is per step, not of the exact sum: 2^24 + 1 - 2^24 in fp32
    steps is 0, not 1; a leading -0.0 gives +0.0 (0 + -0 = +0)."""
    x = np.ones((256, 4096), dtype=np.float32)
    x[1, :3] = [2.0**24, 1.0, -(2.0**24)]
    x[2, 0] = -0.0
    x[2, 1:] = 0.0
    r = neuronemu_run(KERNEL, {"x": x}, target="trn2")
    y = r.outputs["y"]
    assert np.array_equal(y[0], np.arange(1, 4097, dtype=np.float32))
    assert y[1, 0] == 2.0**24 and y[1, 1] == 2.0**24 and y[1, 2] == 0.0 and y[1, 3] == 1.0
    assert y[1, -1] == 4093.0        # the lost 1.0, then 4093 ones
    assert np.all(y[2] == 0) and not np.signbit(y[2, 0])


def test_cumsum_overlaps_dma_and_scans(neuronemu_run):
    """Two slots per buffer: chunk c + 1 loads and chunk c - 1 stores while chunk c scans, so
    the run is shorter than loading, scanning and storing one after the other."""
    r = neuronemu_run(KERNEL, target="trn2")
    serial = sum(t.busy_ns for t in r.timing.tracks.values())
    assert r.time_ns < 0.5 * serial, (r.time_ns, serial)
