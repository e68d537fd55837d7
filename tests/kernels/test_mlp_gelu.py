"""kernels/mlp_gelu: y = gelu(x @ W1) @ W2 (erf GELU), bf16 in and out, fp32 PSUM accumulation.

Oracle: float64 from the bf16 values the kernel read, with the erf GELU docs/numerics.md says
ScalarE implements (x/2 (1 + erf(x / sqrt 2))).

Error bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1; gamma_n of
Lemma 3.1 with u = 2^-24 for the fp32 accumulations, u_bf = 2^-8 for bf16 stores):

- z = x @ W1 sums D products of bf16 values (exact in fp32) in fp32, split over two PSUM
  accumulating matmuls, which is still one D-term sum: |z_c - z| <= e_z = gamma_D |x| @ |W1|.
- ScalarE evaluates gelu(z_c), rounds it to fp32 and the store rounds it to bf16:
  h_c = gelu(z_c)(1 + d) + n, |d| <= r = (1 + u32)(1 + u_bf) - 1, |n| <= eta = 2^-150 + 2^-134
  (half the smallest subnormal of fp32 and of bf16: GELU's negative tail underflows; Higham
  §2.1). GELU is Lipschitz with constant L = max gelu' = gelu'(sqrt 2) = Phi(sqrt 2) +
  sqrt 2 phi(sqrt 2) = 1.1289 (checked below), so
  |h_c - g| <= e_h = L e_z + r (|g| + L e_z) + eta, g = gelu(z).
- y_c is the fp32 F-term sum of h_c W2 rounded to bf16:
  |y_c - g @ W2| <= e_pre + u_bf (|g @ W2| + e_pre) + eta, e_pre = e_h @ |W2| +
  gamma_F (|g| + e_h) @ |W2| (the products with W2 are assumed not to underflow in fp32: their
  terms in the sum would then be lost entirely, which gamma_F does not cover).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronemu.testing import assert_timing, assert_within_bound, gamma, unit_roundoff

T, D, F = 256, 256, 1024
U32 = unit_roundoff("float32")
U_BF = unit_roundoff("bfloat16")
ETA = 2.0**-150 + 2.0**-134      # half the smallest subnormal of fp32 and of bf16
ERF = np.vectorize(math.erf, otypes=[np.float64])


def gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + ERF(z / math.sqrt(2.0)))


def gelu_lipschitz() -> float:
    """max |gelu'| = gelu'(sqrt 2): gelu'(x) = Phi(x) + x phi(x), whose derivative
    phi(x) (2 - x^2) vanishes at x = sqrt 2."""
    x = math.sqrt(2.0)
    return 0.5 * (1 + math.erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def test_gelu_lipschitz_constant() -> None:
    grid = np.linspace(-10, 10, 200_001)
    derivative = 0.5 * (1 + ERF(grid / math.sqrt(2))) + grid * np.exp(-grid**2 / 2) / math.sqrt(2 * math.pi)
    assert abs(derivative.max() - gelu_lipschitz()) < 1e-9 and gelu_lipschitz() < 1.13


def check(r) -> None:
    x, w1, w2 = (r.inputs[n].astype(np.float64) for n in ("x", "w1", "w2"))
    z = x @ w1
    g = gelu(z)
    e_z = gamma(D) * (np.abs(x) @ np.abs(w1))
    big_l = gelu_lipschitz()
    rnd = (1 + U32) * (1 + U_BF) - 1
    e_h = big_l * e_z + rnd * (np.abs(g) + big_l * e_z) + ETA

    # the hidden activations, as the kernel left them in SBUF: hT_sb[f % 128, f // 128, t]
    h_c = r.tiles["hT_sb"].astype(np.float64).transpose(1, 0, 2).reshape(F, T).T
    assert_within_bound(h_c, g, e_h, label="h = gelu(x @ W1)")

    y = g @ w2
    e_pre = e_h @ np.abs(w2) + gamma(F) * ((np.abs(g) + e_h) @ np.abs(w2))
    assert_within_bound(r.outputs["y"], y, e_pre + U_BF * (np.abs(y) + e_pre) + ETA, label="y")
    assert r.warnings == []


@pytest.mark.neuronemu_targets("trn1", "trn2", "trn3")
def test_mlp_gelu(neuronemu_run) -> None:
    r = neuronemu_run("kernels/mlp_gelu")
    check(r)

    # Design: two PSUM buffers let ScalarE's GELU evacuation overlap the next matmuls, and W2
    # streams in during layer 1, so the run is shorter than its engines' busy times end to end.
    tracks = r.timing.tracks
    serial = sum(tracks[n].busy_ns for n in ("tensor", "scalar", "vector")) + max(
        t.busy_ns for n, t in tracks.items() if n.startswith("dma."))
    assert r.time_ns < serial
    # (trn1 since the DMA row floor, docs/dma.md: 21-23%, its loads of 1 KiB bf16 rows slower)
    assert_timing(r, min_utilisation={"tensor": 0.2})


@pytest.mark.neuronemu_targets("trn2")
def test_mlp_gelu_wide_range(neuronemu_run) -> None:
    """x ~ normal(0, 8): the GELU inputs span about [-40, 40], through its negative tail (where
    gelu underflows fp32 and bf16: the eta term of the bound) and its identity-like positive
    side."""
    rng = np.random.default_rng(7)
    r = neuronemu_run("kernels/mlp_gelu", {"x": rng.normal(0, 8, size=(T, D))})
    z = r.inputs["x"].astype(np.float64) @ r.inputs["w1"].astype(np.float64)
    assert z.min() < -20 and z.max() > 20
    check(r)
