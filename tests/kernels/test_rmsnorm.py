"""programs/kernels/rmsnorm.s: RMSNorm of a [1024, 2048] bf16 tensor with a bf16 gamma[1, 2048]
broadcast to every partition by DMA, bf16 out.

Error bound (u = 2^-24, fp32 unit roundoff; gamma_k = k u / (1 - k u), Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., Lemma 3.1 and 3.3). Inputs and gamma are bf16,
exact in fp32. For a row with s = sum_j x_j^2 and a = s / D + eps:

- x_j^2 is exact in fp32 (a bf16 significand has 8 bits, its square at most 16).
- The fp32 row sum of D non-negative terms (reduce_res, D - 1 additions) gives
  s^ = s (1 + sigma), |sigma| <= gamma_(D-1); a positive eps only lowers the relative
  perturbation of a.
- s^ * (1 / D) is exact (1 / 2048 is a power of two); + eps rounds once (delta_1). rsqrt is the
  float64 function rounded once to fp32 (delta_2, plus ~2^-53 from float64, counted as one
  more u). |(1 + t)^(-1/2) - 1| <= |t| for |t| <= 1/2, so rstd^ = rstd (1 + rho) with
  |rho| <= gamma_(D + 2).
- VectorE rounds x * rstd^ and then (.) * gamma once each: the fp32 result is within
  gamma_(D + 4) relative of y = x rstd gamma.
- The bf16 store (round to nearest even) adds at most u_bf16 = 2^-8 of the stored magnitude.
So |y^ - y| <= gamma_(D+4) |y| + 2^-8 (1 + gamma_(D+4)) |y|, elementwise.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma, unit_roundoff

KERNEL = "kernels/rmsnorm"
U_BF16 = unit_roundoff("bfloat16")
EPS = 1e-6
TARGETS = ("trn1", "trn2", "trn3")


def rmsnorm_oracle(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 RMSNorm of each row and the elementwise bound derived in the module docstring."""
    x = x.astype(np.float64)
    d = x.shape[1]
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS)
    y = x * rstd * g.astype(np.float64)
    rel = gamma(d + 4)
    return y, (rel + U_BF16 * (1 + rel)) * np.abs(y)


@pytest.mark.neuronemu_targets(*TARGETS)
def test_rmsnorm_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    y, bound = rmsnorm_oracle(r.inputs["x"], r.inputs["gamma"])
    assert_within_bound(r.outputs["y"], y, bound)


@pytest.mark.neuronemu_targets(*TARGETS)
def test_rmsnorm_eps_zero_rows_and_gamma_per_column(neuronemu_run):
    """Rows whose mean square is near eps (where eps changes the result by up to sqrt(2)), an
    all-zero row (0 * rsqrt(eps) = 0, not NaN), and a gamma whose every column differs, so a
    gamma that reached only some partitions, or reached them shifted, would show."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 2, size=(1024, 2048)).astype(ml_dtypes.bfloat16)
    x[7, :] = 1e-3                                 # mean square 1e-6 = eps: y = x / sqrt(2e-6)
    x[300, :] = 0.0
    x[1023, :] = rng.normal(0, 1e-4, size=2048)    # eps dominates: y ~ x / sqrt(eps)
    g = np.linspace(-3, 3, 2048).reshape(1, 2048).astype(ml_dtypes.bfloat16)
    r = neuronemu_run(KERNEL, {"x": x, "gamma": g})
    y, bound = rmsnorm_oracle(r.inputs["x"], r.inputs["gamma"])
    assert_within_bound(r.outputs["y"], y, bound)
    assert np.all(r.outputs["y"][300].astype(np.float64) == 0.0)
    # every partition (row mod 128) saw the same gamma: y / (x rstd) recovers it column by column
    # (within the same relative bound as y, since x rstd is computed exactly here)
    rows = np.arange(0, 1024, 37)
    xr = x[rows].astype(np.float64)
    scaled = xr / np.sqrt((xr ** 2).mean(axis=1, keepdims=True) + EPS)
    ok = xr != 0
    ratio = r.outputs["y"][rows].astype(np.float64)[ok] / scaled[ok]
    g64 = np.broadcast_to(g.astype(np.float64), xr.shape)[ok]
    rel = gamma(2048 + 4)
    assert np.all(np.abs(ratio - g64) <= (rel + U_BF16 * (1 + rel)) * np.abs(g64) * (1 + 1e-12))


def test_rmsnorm_overlaps_dma_with_compute(neuronemu_run):
    """Two slots and four data queues: tile t + 1 loads and tile t - 1 stores while tile t is
    computed, and ScalarE's squares of the next tile run under VectorE's scaling, so the run
    takes well under the sum of the busy times of its tracks (what a kernel waiting for each
    step would take); VectorE (2 cycles per element) bounds it and is busy most of the run."""
    r = neuronemu_run(KERNEL, target="trn2")
    serial = sum(t.busy_ns for t in r.timing.tracks.values())
    assert r.time_ns < 0.6 * serial, (r.time_ns, serial)
    assert r.timing.tracks["vector"].utilisation > 0.6
    # the broadcast of gamma is one transfer charged the bytes of the whole [128, D] tile
    assert r.timing.tracks["dma.q4"].instructions == 1
