"""kernels/swiglu_mlp: y = (silu(x @ Wg) * (x @ Wu)) @ Wd, bf16 in and out, fp32 PSUM.

Oracle: float64 from the bf16 values the kernel read; silu(z) = z / (1 + exp(-z)).

Error bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1; gamma_n of
Lemma 3.1; u32 = 2^-24, u_bf = 2^-8):

- a = x @ Wg and b = x @ Wu are D-term fp32 sums of exact bf16 products:
  |a_c - a| <= e_a = gamma_D |x| @ |Wg|, |b_c - b| <= e_b = gamma_D |x| @ |Wu|.
- ScalarE: s_c = fl32(silu(a_c)); silu is Lipschitz with L = max silu' (about 1.0998, computed
  below), so |s_c - s| <= e_s = L e_a + u32 (|s| + L e_a) + 2^-150, s = silu(a) (the last term
  is fp32's underflow, half its smallest subnormal: silu's negative tail; Higham §2.1).
- VectorE: h_c = bf16(fl32(s_c b_c)): |s_c b_c - s b| <= e_p = e_s (|b| + e_b) + |s| e_b, and the
  two roundings add r = (1 + u32)(1 + u_bf) - 1 of the product, plus eta = 2^-150 + 2^-134 for
  underflow: e_h = e_p + r (|s b| + e_p) + eta.
- y_c is the fp32 F-term sum of h_c Wd rounded to bf16: |y_c - h @ Wd| <= e_pre +
  u_bf (|h @ Wd| + e_pre) + eta, e_pre = e_h @ |Wd| + gamma_F (|h| + e_h) @ |Wd| (products with
  Wd assumed not to underflow in fp32).
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.testing import assert_timing, assert_within_bound, gamma, unit_roundoff

T, D, F = 256, 256, 768
U32 = unit_roundoff("float32")
U_BF = unit_roundoff("bfloat16")
ETA = 2.0**-150 + 2.0**-134      # half the smallest subnormal of fp32 and of bf16


def silu(z: np.ndarray) -> np.ndarray:
    return z / (1.0 + np.exp(-z))


def silu_lipschitz() -> float:
    """max |silu'|, silu'(z) = sig(z) (1 + z (1 - sig(z))): its maximum (near z = 2.4) on a grid
    of step 1e-4, plus a margin larger than the grid's error there (|silu'''| < 1, so the
    maximum over a step is within 1e-8 of the grid's)."""
    z = np.linspace(-40, 40, 800_001)
    sig = 1 / (1 + np.exp(-z))
    derivative = sig * (1 + z * (1 - sig))
    assert abs(np.min(derivative) + 0.0998) < 1e-3     # the negative dip near z = -2.4
    return float(np.max(np.abs(derivative))) + 1e-6


@pytest.mark.neuronemu_targets("trn1", "trn2", "trn3")
def test_swiglu_mlp(neuronemu_run) -> None:
    r = neuronemu_run("kernels/swiglu_mlp")
    x, wg, wu, wd = (r.inputs[n].astype(np.float64) for n in ("x", "wg", "wu", "wd"))
    a, b = x @ wg, x @ wu
    s = silu(a)
    h = s * b
    e_a = gamma(D) * (np.abs(x) @ np.abs(wg))
    e_b = gamma(D) * (np.abs(x) @ np.abs(wu))
    big_l = silu_lipschitz()
    e_s = big_l * e_a + U32 * (np.abs(s) + big_l * e_a) + 2.0**-150
    e_p = e_s * (np.abs(b) + e_b) + np.abs(s) * e_b
    e_h = e_p + ((1 + U32) * (1 + U_BF) - 1) * (np.abs(h) + e_p) + ETA

    # the gated activations as the kernel left them in SBUF: hT_sb[f % 128, f // 128, t]
    h_c = r.tiles["hT_sb"].astype(np.float64).transpose(1, 0, 2).reshape(F, T).T
    assert_within_bound(h_c, h, e_h, label="h = silu(x @ Wg) * (x @ Wu)")

    y = h @ wd
    e_pre = e_h @ np.abs(wd) + gamma(F) * ((np.abs(h) + e_h) @ np.abs(wd))
    assert_within_bound(r.outputs["y"], y, e_pre + U_BF * (np.abs(y) + e_pre) + ETA, label="y")
    assert r.warnings == []

    # Design: gate/up PSUM pairs alternate so TensorE works ahead of ScalarE/VectorE, and Wd
    # streams in during layer 1: the run is shorter than the engines' busy times end to end.
    tracks = r.timing.tracks
    serial = sum(tracks[n].busy_ns for n in ("tensor", "scalar", "vector")) + max(
        t.busy_ns for n, t in tracks.items() if n.startswith("dma."))
    assert r.time_ns < serial
    # (trn1 since the DMA row floor, docs/dma.md: 21-23%, its loads of 1 KiB bf16 rows slower)
    assert_timing(r, min_utilisation={"tensor": 0.2})
