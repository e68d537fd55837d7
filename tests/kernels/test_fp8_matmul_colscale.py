"""kernels/fp8_matmul_colscale: c = (a @ b) * scale[col] with float8_e4m3 a [512, 2048] and
b [2048, 512] in TensorE's double-row mode, fp32 scales broadcast to every partition by DMA.

Targets: trn2 and trn3. trn1 (NeuronCore-v2) has no double-row mode: the kernel is refused at
assembly there, which the last test checks.

Oracle: the fp8 bit patterns decoded by ml_dtypes to float64; (a @ b) * scale in float64.

Error bound: products of two fp8 values are exact in fp32 and each output is one fp32 sum of
K = 2048 of them (per partition of the double-row operands, the pair w0 x0 + w1 x1, then the
running sum, then PSUM accumulation over 8 K tiles: an fp32 summation in some order), so
|acc_c - a @ b| <= e = gamma_K |a| @ |b| (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1, gamma_n of Lemma 3.1, u = 2^-24). VectorE multiplies by the fp32
scale s > 0 and rounds once: |c_c - c| <= s e + u s (|a @ b| + e).
"""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.testing import assert_within_bound, gamma, unit_roundoff

M, K, N = 512, 2048, 512
MATMULS = (M // 128) * (K // 256)


@pytest.mark.neuronemu_targets("trn2", "trn3")
def test_fp8_matmul_colscale(neuronemu_run) -> None:
    r = neuronemu_run("kernels/fp8_matmul_colscale")
    # aT / b are declared [K/2, 2, cols]: row 2i + j of the [K, cols] matrix at [i, j, :]
    a = r.inputs["aT"].astype(np.float64).reshape(K, M).T
    b = r.inputs["b"].astype(np.float64).reshape(K, N)
    s = r.inputs["scale"].astype(np.float64)            # [1, N]
    assert (s > 0).all()
    ab = a @ b
    e = gamma(K) * (np.abs(a) @ np.abs(b))
    u = unit_roundoff("float32")
    assert_within_bound(r.outputs["c"], ab * s, s * e + u * s * (np.abs(ab) + e), label="c")
    assert r.warnings == []

    # Design: double-row mode contracts 256 rows in the time of 128 (docs/timing.md: the
    # [K, 2, N] moving operand at half cost), so the 32 matmuls take about 32 x 512 cycles where
    # the same K in single-row K = 128 matmuls would take 64 x 512.
    busy = r.timing.tracks["tensor"].busy_cycles
    assert busy < 0.6 * (2 * MATMULS) * 512, busy
    assert r.timing.tensor_peak_fraction > 0.5


def test_fp8_matmul_colscale_needs_double_row_target() -> None:
    with pytest.raises(neuronemu.AsmError, match="double_row needs trn2 or trn3"):
        neuronemu.testing.run_kernel("kernels/fp8_matmul_colscale", target="trn1")
