"""programs/kernels/transpose_2d.s (fp32, TensorE, every target; trn1 for finite values) and transpose_2d_dma.s (bf16,
DMA transpose, trn2 / trn3): y = x^T for x [512, 384], several 128 x 128 tiles each way.

A transpose moves values, so the oracle is exact: the output's bit patterns are the input's,
transposed. The inputs are random bit patterns (every NaN payload, both zeros, infinities,
subnormals among them), so a path that computes on the values instead of moving bits (a ScalarE
copy, x * 1 + 0, turns -0.0 into +0.0 and may quiet NaNs) or misplaces a block fails.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_bits_equal


def random_bits(shape, dtype, seed: int) -> np.ndarray:
    """Every bit pattern equally likely, plus a few chosen specials at fixed places."""
    rng = np.random.default_rng(seed)
    width = np.dtype(dtype).itemsize
    words = rng.integers(0, 2 ** (8 * width), size=shape, dtype=np.uint64)
    x = words.astype(np.uint32 if width == 4 else np.uint16).view(dtype)
    x[0, 0], x[0, 1], x[1, 0] = -0.0, np.inf, -np.inf
    return x


@pytest.mark.neuronemu_targets("trn2", "trn3")
def test_pe_transpose_is_bit_exact(neuronemu_run, neuronemu_target):
    x = random_bits((512, 384), np.float32, seed=4)
    assert np.isnan(x).sum() > 500 and (x == 0).sum() == 1
    r = neuronemu_run("kernels/transpose_2d", {"x": x})
    assert r.target == neuronemu_target and r.warnings == []
    assert_bits_equal(r.outputs["y"], x.T)


def test_pe_transpose_on_trn1_is_exact_for_finite_values(neuronemu_run):
    """NeuronCore-v2's PE transpose is a matmul with an identity, which the NKI docs
    (nki.isa.nc_transpose) say is not bit-accurate for NaN / Inf inputs; finite values (here
    every finite bit pattern but -0.0, whose sign an identity matmul's +0 terms may drop) move
    exactly."""
    x = random_bits((512, 384), np.float32, seed=6)
    x[~np.isfinite(x) | (x == 0)] = 1.5
    r = neuronemu_run("kernels/transpose_2d", {"x": x}, target="trn1")
    assert r.target == "trn1" and r.warnings == []
    assert_bits_equal(r.outputs["y"], x.T)


@pytest.mark.neuronemu_targets("trn2", "trn3")
def test_dma_transpose_is_bit_exact(neuronemu_run, neuronemu_target):
    x = random_bits((512, 384), ml_dtypes.bfloat16, seed=5)
    r = neuronemu_run("kernels/transpose_2d_dma", {"x": x})
    assert r.target == neuronemu_target and r.warnings == []
    assert_bits_equal(r.outputs["y"], x.T)


def test_transposes_default_inputs_and_time(neuronemu_run):
    """Both kernels with their declared init=; both are DMA-bound (a transpose moves every byte
    in and out once), so neither spends long on compute: TensorE's 12 transposes and VectorE's 3
    PSUM copies take under a third of the PE kernel's time, and the DMA kernel, half the bytes
    and no compute engine, is faster."""
    pe = neuronemu_run("kernels/transpose_2d", target="trn2")
    assert_bits_equal(pe.outputs["y"], pe.inputs["x"].T)
    dma = neuronemu_run("kernels/transpose_2d_dma", target="trn2")
    assert_bits_equal(dma.outputs["y"], dma.inputs["x"].T)
    compute = pe.timing.tracks["tensor"].busy_ns + pe.timing.tracks["vector"].busy_ns
    assert compute < pe.time_ns / 3
    assert pe.timing.bound_by.startswith("dma") and dma.timing.bound_by.startswith("dma")
    assert dma.time_ns < pe.time_ns
