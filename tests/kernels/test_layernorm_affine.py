"""programs/kernels/layernorm_affine.s: LayerNorm with fp32 gamma and beta of a [1000, 1024] bf16
tensor (7 full row tiles and a partial one of 104 rows), bf16 out.

Error bound (u = 2^-24, fp32 unit roundoff; Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., Lemma 3.1 / 3.3 for products of (1 + delta) factors). x is bf16, gamma
and beta fp32: all exact in fp32.

- Statistics, as derived for examples/layernorm (tests/test_programs.py, layernorm_statistics):
  bn_stats / bn_aggr make the mean with |e_m| <= k u mean|x| and the population variance with
  absolute error <= k u var + (k u)^2 (var + mean^2) (Chan, Golub, LeVeque 1983: relative
  k u + (k u)^2 kappa^2, kappa^2 = 1 + mean^2 / var), k = n + 24; rstd = rsqrt(var + eps) is
  off by half of that relative to var + eps, plus 3 u (eps, the add, the function), times 1.01.
- VectorE: t = (x - m^) * gamma, two roundings: t = ((x - m) - e_m) gamma (1 + 2u).
- ScalarE: u = t * rstd^ (the activation's multiply rounds once; + 0.0 and copy are exact):
  |u - (x - m) gamma rstd| <= 1.01 |gamma| rstd (|e_m| + |x - m| (rstd_rel + 3 u)) =: E.
- DMA: u + beta in fp32 (one rounding: u (|y| + E)), then the bf16 store, at most
  2^-8 of the stored magnitude.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, unit_roundoff

KERNEL = "kernels/layernorm_affine"
U32 = unit_roundoff("float32")
U_BF16 = unit_roundoff("bfloat16")
EPS = 1e-5
ROWS, D, TAIL = 1000, 1024, 104
TARGETS = ("trn1", "trn2", "trn3")


def statistics(x: np.ndarray):
    """Row mean, population variance and rstd with the bounds of the module docstring."""
    k = x.shape[1] + 24
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    mean_bound = k * U32 * np.abs(x).mean(axis=1, keepdims=True)
    # var (k u + (k u)^2 kappa^2) with kappa^2 = 1 + mean^2 / var, written so var = 0 is fine
    var_bound = k * U32 * var + (k * U32) ** 2 * (var + mean**2)
    rstd = 1.0 / np.sqrt(var + EPS)
    rstd_rel = 1.01 * (var_bound / (var + EPS) / 2 + 3 * U32)
    return (mean, mean_bound), (var, var_bound), (rstd, rstd_rel)


def layernorm_oracle(x, g, b) -> tuple[np.ndarray, np.ndarray]:
    x, g, b = (a.astype(np.float64) for a in (x, g, b))
    (mean, mean_bound), _, (rstd, rstd_rel) = statistics(x)
    y = (x - mean) * rstd * g + b
    e = 1.01 * np.abs(g) * rstd * (mean_bound + np.abs(x - mean) * (rstd_rel + 3 * U32))
    fp32_bound = e + U32 * (np.abs(y) + e)
    return y, fp32_bound + U_BF16 * (np.abs(y) + fp32_bound)


@pytest.mark.neuronemu_targets(*TARGETS)
def test_layernorm_affine_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    x = r.inputs["x"]
    y, bound = layernorm_oracle(x, r.inputs["gamma"], r.inputs["beta"])
    out = r.outputs["y"]
    assert out.shape == (ROWS, D)
    # every row written, the partial tile's too (outputs start as NaN)
    assert not np.isnan(out.astype(np.float64)).any()
    assert_within_bound(out, y, bound)
    # the bf16 output hides statistics errors below 2^-8, so check the partial tile's fp32
    # statistics, left on chip in slot 7 mod 2 = 1, against their own tighter bounds
    (mean, mean_bound), (var, var_bound), _ = statistics(x[ROWS - TAIL:].astype(np.float64))
    mean_var = r.tiles["mean_var"][:TAIL, 1, :].astype(np.float64)
    assert_within_bound(mean_var[:, 0:1], mean, mean_bound, label="bn_aggr mean")
    assert_within_bound(mean_var[:, 1:2], var, var_bound, label="bn_aggr variance")


@pytest.mark.neuronemu_targets(*TARGETS)
def test_layernorm_affine_gamma_beta_per_column_and_hard_rows(neuronemu_run):
    """A gamma and beta that differ in every column (a broadcast that missed partitions or
    shifted columns shows), a constant row (var = 0: y = beta exactly up to rounding, eps keeps
    rstd finite), a row with a large mean (cancellation in x - mean) in the partial tile."""
    rng = np.random.default_rng(11)
    x = rng.normal(1, 3, size=(ROWS, D)).astype(ml_dtypes.bfloat16)
    x[5, :] = 2.5
    x[ROWS - 1, :] = (1000 + rng.normal(0, 1, size=D)).astype(ml_dtypes.bfloat16)
    g = np.linspace(-2, 2, D, dtype=np.float32).reshape(1, D)
    b = np.cos(np.arange(D, dtype=np.float32)).reshape(1, D).astype(np.float32)
    r = neuronemu_run(KERNEL, {"x": x, "gamma": g, "beta": b})
    y, bound = layernorm_oracle(r.inputs["x"], r.inputs["gamma"], r.inputs["beta"])
    assert_within_bound(r.outputs["y"], y, bound)
    np.testing.assert_array_equal(r.outputs["y"][5], b[0].astype(ml_dtypes.bfloat16))


def test_layernorm_affine_spreads_the_passes_over_engines(neuronemu_run):
    """VectorE, ScalarE and the DMA queues each take one pass over every tile, and two slots
    let tile t + 1 load and tile t - 1 store while tile t computes: the run takes well under the
    sum of its tracks' busy times, with ScalarE and VectorE both doing real work."""
    r = neuronemu_run(KERNEL, target="trn2")
    tracks = r.timing.tracks
    serial = sum(t.busy_ns for t in tracks.values())
    assert r.time_ns < 0.6 * serial, (r.time_ns, serial)
    assert tracks["vector"].utilisation > 0.5 and tracks["scalar"].utilisation > 0.1
    # 8 tiles in, 8 out (dma.compute), and one broadcast each for gamma and beta
    assert (tracks["dma.q0"].instructions, tracks["dma.q1"].instructions) == (8, 8)
    assert (tracks["dma.q2"].instructions, tracks["dma.q3"].instructions) == (1, 1)
