"""programs/kernels/softmax_rows.s: row softmax of a [1024, 2048] bf16 tensor, bf16 out.

Error bound (u = 2^-24, fp32 unit roundoff; gamma_k = k u / (1 - k u), Higham, *Accuracy and
Stability of Numerical Algorithms*, 2nd ed., Lemma 3.1 and 3.3). The inputs are bf16, exact in
fp32, and the row max m is exact. For element j of a row with d_j = m - x_j >= 0:

- ScalarE forms t = x * 1.0 + (-m): the multiply is exact, the add rounds once, so
  t^ = -d_j (1 + e), |e| <= u, and exp(t^) = exp(-d_j) exp(-d_j e): relative error
  <= exp(d_j u) - 1 <= gamma_(d_j) (for d_j u < 1). exp is rounded once to fp32 (u), so
  e^_j = exp(-d_j) (1 + theta_j), |theta_j| <= gamma_(d_j + 1).
- The row sum (reduce_res, fp32, 2047 additions in any order) of positive terms is within
  gamma_(n - 1) of the exact sum of the e^_j, so s^ = s (1 + sigma), |sigma| <= gamma_(D + n),
  D = max_j d_j of the row.
- 1 / s^ rounds once (VectorE's reciprocal is correctly rounded) and e^_j * (1 / s^) once more.
So the fp32 value is e_j (1 + theta_j) / (s (1 + sigma)) (1 + r1) (1 + r2), |r| <= u: within
(1 + gamma_(d_j + 1)) (1 + gamma_(D + n) / (1 - gamma_(D + n))) (1 + u)^2 - 1 relative of y_j
(about gamma_(d_j + D + n + 3)), and the bf16 store adds
half a bf16 ulp: at most u_bf16 = 2^-8 of the stored magnitude. Underflow (exp of d > 87 is
subnormal or 0 in fp32) adds tiny absolute terms: see softmax_oracle.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma, unit_roundoff

KERNEL = "kernels/softmax_rows"
U_BF16 = unit_roundoff("bfloat16")
TARGETS = ("trn1", "trn2", "trn3")


def softmax_oracle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 softmax of each row and the absolute bound derived in the module docstring.

    A -inf logit (a masked position) has weight exactly 0 (exp(-inf) = +0 in fp32 too) and adds
    nothing to the sum. A logit so far below the max that exp underflows (d >= 104:
    exp(-d (1 +- u)) < 2^-150, which rounds to +0 in fp32) is computed as 0, an absolute error
    below 2^-150; it is left out of D, whose gamma_(D + n) needs D u < 1. Any other e^_j may be
    subnormal in fp32 (d > 87.3), which adds an absolute 2^-150 (half the least fp32
    subnormal); the row sum is >= 1 (the max contributes exp(0) = 1 exactly), so these stay
    absolute errors of y. The bf16 store of a value below bf16's normal range adds 2^-134."""
    x = x.astype(np.float64)
    finite = np.isfinite(x)
    n = finite.sum(axis=1, keepdims=True)
    d = np.where(finite, x.max(axis=1, keepdims=True) - x, np.inf)
    e = np.exp(-d)                                        # 0 where masked
    y = e / e.sum(axis=1, keepdims=True)
    gone = d >= 104                                       # masked or underflowing: computed 0
    d_kept = np.where(gone, 0.0, d)
    big_d = d_kept.max(axis=1, keepdims=True)
    u = 2.0**-24
    g_e = (d_kept + 1) * u / (1 - (d_kept + 1) * u)       # gamma_(d_j + 1): e^_j
    g_s = (big_d + n) * u / (1 - (big_d + n) * u)         # gamma_(D + n): s^ = s (1 + sigma)
    rel = (1 + g_e) * (1 + g_s / (1 - g_s)) * (1 + u) ** 2 - 1   # 1 / (1 + sigma): g_s / (1 - g_s)
    absolute = np.where(gone, y, 0.0) + (n + 1) * 2.0**-150
    fp32_bound = rel * y + absolute
    bound = fp32_bound + U_BF16 * (y + fp32_bound) + 2.0**-134
    # the derivation's premises hold (assert_within_bound would pass any error against a
    # negative bound)
    assert np.all(np.isfinite(bound)) and np.all(bound >= 0)
    return y, bound


@pytest.mark.neuronemu_targets(*TARGETS)
def test_softmax_rows_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    y, bound = softmax_oracle(r.inputs["x"])
    assert_within_bound(r.outputs["y"], y, bound)
    # each output row sums to 1 within the n half-ulp roundings of the bf16 store
    sums = r.outputs["y"].astype(np.float64).sum(axis=1)
    assert np.all(np.abs(sums - 1) <= (U_BF16 + gamma(2100)) * 1.0 + 1e-12)


@pytest.mark.neuronemu_targets(*TARGETS)
def test_softmax_rows_is_stable_for_large_logits(neuronemu_run):
    """Logits around 200 overflow exp in fp32 (exp(88.8) is already inf): only the max
    subtraction keeps the result finite. A kernel without it writes NaN (inf / inf). Also a
    constant row, a one-hot row and a row with masked (-inf) logits."""
    rng = np.random.default_rng(15)
    x = (200.0 + rng.normal(0, 4, size=(1024, 2048))).astype(ml_dtypes.bfloat16)
    x[5, :] = 0.0                                  # a constant row: exactly 1/2048 everywhere
    x[6, 17] = np.float32(3e38)                    # one huge logit: a one-hot row
    x[7, 1::2] = -np.inf                           # masked logits: weight exactly 0
    r = neuronemu_run(KERNEL, {"x": x})
    y, bound = softmax_oracle(r.inputs["x"])
    assert_within_bound(r.outputs["y"], y, bound)
    assert np.all(r.outputs["y"][5].astype(np.float64) == 1 / 2048)
    assert r.outputs["y"][6, 17] == 1 and np.count_nonzero(r.outputs["y"][6].astype(float)) == 1
    assert np.all(r.outputs["y"][7, 1::2].astype(np.float64) == 0)


def test_softmax_rows_overlaps_dma_with_compute(neuronemu_run):
    """Two slots per buffer and four queues: loads of tile t + 1 and stores of tile t - 1 run
    while tile t computes, so the run takes well under the sum of all tracks' busy times (the
    time a kernel that waited for each step would take), and the compute engine that bounds it
    is busy most of the run."""
    r = neuronemu_run(KERNEL, target="trn2")
    serial = sum(t.busy_ns for t in r.timing.tracks.values())
    assert r.time_ns < 0.6 * serial, (r.time_ns, serial)
    assert r.timing.tracks["vector"].utilisation > 0.5
