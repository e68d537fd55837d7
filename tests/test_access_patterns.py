"""Tile addressing: slices, steps, integer indices, register offsets, multi-dim HBM tensors.
The oracle is numpy indexing of the same arrays."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu


def _run(source: str, **inputs: np.ndarray) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="access.s"), inputs=inputs)


X = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)


def test_free_dim_step_and_hbm_partition_step() -> None:
    result = _run("""
.hbm x float32[128, 64] input
.hbm odd float32[128, 32] output
.hbm even_rows float32[64, 64] output
.sbuf t float32[128, 64]
.sbuf u float32[128, 32]
.sbuf v float32[64, 64]
dma.copy t, x
vector.tensor_copy u, t[:, 1:64:2]
dma.copy odd, u
dma.copy v, x[0:128:2, :]
dma.copy even_rows, v
""", x=X)
    np.testing.assert_array_equal(result.outputs["odd"], X[:, 1::2])
    np.testing.assert_array_equal(result.outputs["even_rows"], X[::2])


def test_step_not_dividing_the_range_rounds_the_count_up() -> None:
    result = _run("""
.hbm x float32[128, 64] input
.hbm y float32[128, 22] output
.sbuf t float32[128, 64]
.sbuf u float32[128, 22]
dma.copy t, x
vector.tensor_copy u, t[:, 0:64:3]
dma.copy y, u
""", x=X)
    np.testing.assert_array_equal(result.outputs["y"], X[:, 0:64:3])


def test_partition_sub_range_and_column_index() -> None:
    result = _run("""
.hbm x float32[128, 64] input
.hbm y float32[32, 1] output
.sbuf t float32[128, 64]
.sbuf col float32[32, 1]
dma.copy t, x
vector.tensor_copy col, t[64:96, 5:6]
dma.copy y, col
""", x=X)
    np.testing.assert_array_equal(result.outputs["y"], X[64:96, 5:6])


def test_register_offsets_walk_a_three_dim_tensor() -> None:
    """out[b] = x[b] * 2 for b in 0..3, one loop body; x[r0] drops the leading dim."""
    x = np.random.default_rng(0).standard_normal((4, 128, 32)).astype(np.float32)
    result = _run("""
.hbm x float32[4, 128, 32] input
.hbm out float32[4, 128, 32] output
.sbuf t float32[128, 32]
ctrl.mov r0, 0
loop:
dma.copy t, x[r0]
vector.tensor_scalar t, t, op0=multiply, operand0=2.0
dma.copy out[r0], t
ctrl.add r0, r0, 1
ctrl.blt r0, 4, loop
""", x=x)
    np.testing.assert_array_equal(result.outputs["out"], x * 2)
    assert result.instructions == {"ctrl": 9, "dma": 8, "vector": 4}


def test_register_offset_past_the_tensor_faults_before_writing() -> None:
    x = np.ones((2, 128, 32), dtype=np.float32)
    program = neuronemu.assemble("""
.hbm x float32[2, 128, 32] input
.hbm out float32[2, 128, 32] output
.sbuf t float32[128, 32]
ctrl.mov r0, 0
loop:
dma.copy t, x[r0]
dma.copy out[r0], t
ctrl.add r0, r0, 1
ctrl.blt r0, 3, loop
""", filename="oob.s")
    with pytest.raises(neuronemu.RuntimeFault) as info:
        neuronemu.run(program, inputs={"x": x})
    text = info.value.render()
    assert text.startswith("oob.s:7:13: error:"), text
    assert "r0 = 2" in text and "'x'" in text


def test_strided_bf16_store_matches_ml_dtypes() -> None:
    """A non-dense destination takes the generic per-element path; it must round like the dense
    one (ml_dtypes is the oracle)."""
    import ml_dtypes

    x = (np.random.default_rng(1).standard_normal((128, 64)) * 3).astype(np.float32)
    result = _run("""
.hbm x float32[128, 64] input
.hbm y bfloat16[128, 64] output
.sbuf t float32[128, 64]
.sbuf b bfloat16[128, 64]
dma.copy t, x
vector.tensor_copy b[:, 0:64:2], t[:, 0:64:2]
vector.tensor_copy b[:, 1:64:2], t[:, 1:64:2]
dma.copy y, b
""", x=x)
    np.testing.assert_array_equal(result.outputs["y"].view(np.uint16),
                                  x.astype(ml_dtypes.bfloat16).view(np.uint16))
