"""programs/kernels/rope.s: rotary position embedding of one head, x^T [128, 4096] bf16.

y[d, s] = x[d, s] cos[d mod 64, s] + rot[d, s] sin[d mod 64, s], rot = rotate_half(x):
-x[d + 64] for d < 64, x[d - 64] for d >= 64.

Error bound: both products are of two bf16 values (8 significant bits each), so they are exact
in fp32 (16 <= 24 bits), and TensorE's identity and half-swap matmuls reproduce x and
rotate_half(x) exactly (one +-1 x value product per sum, the rest +0). The only roundings are
the fp32 add (at most u |y|, u = 2^-24) and the bf16 store (at most u_bf |fl32(y)|, u_bf = 2^-8;
Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.1): |y^ - y| <= (u +
u_bf (1 + u)) |y| — correct rounding up to the rare double rounding through fp32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_ulp_close, assert_within_bound, unit_roundoff

KERNEL = "kernels/rope"
TARGETS = ("trn1", "trn2", "trn3")
U = unit_roundoff("float32")
U_BF = unit_roundoff("bfloat16")


def rope_tables(seq: int, dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [dim / 2, seq] of angle s * base^(-2 j / dim), rounded to bf16."""
    inv_freq = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = inv_freq[:, None] * np.arange(seq, dtype=np.float64)[None, :]
    return np.cos(angles).astype(ml_dtypes.bfloat16), np.sin(angles).astype(ml_dtypes.bfloat16)


def rope_oracle(x, cos, sin) -> np.ndarray:
    x, cos, sin = (a.astype(np.float64) for a in (x, cos, sin))
    h = x.shape[0] // 2
    rot = np.concatenate([-x[h:], x[:h]])
    return x * np.concatenate([cos, cos]) + rot * np.concatenate([sin, sin])


@pytest.mark.neuronemu_targets(*TARGETS)
def test_rope_matches_float64(neuronemu_run, neuronemu_target):
    cos, sin = rope_tables(4096, 128)
    r = neuronemu_run(KERNEL, {"cos": cos, "sin": sin})
    assert r.target == neuronemu_target and r.warnings == []
    y = rope_oracle(r.inputs["x"], cos, sin)
    assert_within_bound(r.outputs["y"], y, (U + U_BF * (1 + U)) * np.abs(y))
    # the same, in bf16 ulps: at most half an ulp plus the fp32 rounding before it
    assert_ulp_close(r.outputs["y"], y, ulps=0.5 + 2.0**-15)
    # position 0 is the identity rotation (cos 1, sin 0): y = x bit for bit
    assert np.array_equal(r.outputs["y"][:, 0].view(np.uint16), r.inputs["x"][:, 0].view(np.uint16))


def test_rope_default_tables_and_overlap(neuronemu_run):
    """With its declared init= (uniform tables) the kernel still computes the formula; the
    loads and stores of neighbouring tiles overlap the compute, so the run takes well under the
    sum of the tracks' busy times."""
    r = neuronemu_run(KERNEL, target="trn2")
    y = rope_oracle(r.inputs["x"], r.inputs["cos"], r.inputs["sin"])
    assert_within_bound(r.outputs["y"], y, (U + U_BF * (1 + U)) * np.abs(y))
    serial = sum(t.busy_ns for t in r.timing.tracks.values())
    assert r.time_ns < 0.3 * serial, (r.time_ns, serial)   # one slot per buffer: 0.33
    # every Vector instruction reads one operand from PSUM: one element per cycle, not two
    vector = r.timing.tracks["vector"]
    assert vector.busy_ns <= 1.05 * 24 * 512 / 0.96, vector.busy_ns
