"""Every bundled kernel runs with no inputs and matches a numpy float64 reference computed from the
inputs it actually used, with error bounds derived from the dtypes (u = 2**-24, the fp32 unit
roundoff; bf16 outputs add half a bf16 ulp: 8 significant bits, so 2**-8 relative)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.programs import bundled_programs

U32 = 2.0**-24
PROGRAMS = bundled_programs()


def _run(name: str, target: str = "trn2", seed: int = 0) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble_file(PROGRAMS[name], target=target), seed=seed)


def _f64(result: neuronemu.Result, name: str) -> np.ndarray:
    return np.asarray(result.tensors[name]).astype(np.float64)


def test_every_example_is_covered() -> None:
    assert set(PROGRAMS) >= {"examples/vector_add", "examples/matmul_tile",
                             "examples/matmul_tiled", "examples/softmax", "examples/layernorm"}


def test_vector_add_is_the_correctly_rounded_sum() -> None:
    result = _run("examples/vector_add")
    a, b = _f64(result, "a"), _f64(result, "b")
    # one fp32 addition: exactly the float64 sum rounded once to fp32
    np.testing.assert_array_equal(result.outputs["c"], (a + b).astype(np.float32))


def _matmul_bound(lhs_t: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Sequential fp32 summation of K exact products (bf16 x bf16 fits in fp32): the error is at
    most K * u * sum_k |a_k b_k| (Higham, gamma_K)."""
    k = lhs_t.shape[0]
    return k * U32 * (np.abs(lhs_t).T @ np.abs(rhs))


@pytest.mark.parametrize("name", ["examples/matmul_tile", "examples/matmul_tiled"])
def test_matmul_matches_float64_within_the_summation_bound(name: str) -> None:
    result = _run(name)
    lhs_t, rhs = _f64(result, "lhsT"), _f64(result, "rhs")
    reference = lhs_t.T @ rhs
    error = np.abs(result.outputs["result"].astype(np.float64) - reference)
    bound = _matmul_bound(lhs_t, rhs)
    assert np.all(error <= bound), float(np.max(error / np.maximum(bound, 1e-300)))
    # the bound is tight enough to catch a wrong kernel: leaving out one 128-row K tile (or
    # using lhsT untransposed) breaks it by orders of magnitude
    partial = lhs_t[128:].T @ rhs[128:] if lhs_t.shape[0] > 128 else lhs_t.T @ rhs * 0.99
    assert np.any(np.abs(partial - reference) > 100 * bound)


def test_softmax_rows_match_float64() -> None:
    result = _run("examples/softmax")
    x = _f64(result, "x")
    e = np.exp(x - x.max(axis=1, keepdims=True))
    reference = e / e.sum(axis=1, keepdims=True)
    y = result.outputs["y"].astype(np.float64)
    # x - max rounds (relative error of exp <= |x - max| u <= ~40u for normal(0, 4) inputs),
    # exp / reciprocal / multiply round once each, the 512-term fp32 row sum adds <= 512u
    rtol = (512 + 64) * U32
    np.testing.assert_allclose(y, reference, rtol=rtol, atol=0)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=rtol)


def test_layernorm_matches_float64() -> None:
    result = _run("examples/layernorm")
    x = _f64(result, "x")  # the bf16 inputs, exactly
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    reference = (x - mean) / np.sqrt(var + 1e-5)
    y = result.outputs["y"].astype(np.float64)
    assert result.outputs["y"].dtype.name == "bfloat16"
    # the bf16 store rounds to within half an ulp (2**-8 relative); the fp32 statistics and
    # arithmetic before it add a few hundred u relative to the row's scale
    np.testing.assert_allclose(y, reference, rtol=2.0**-8 * 1.01, atol=1e3 * U32)
    # bf16 output rounding would hide a 1/1024 variance error (sample instead of population
    # variance), so check the fp32 statistics of the last row tile directly: bn_stats/bn_aggr
    # over 1024 values stay within ~1024 u of the float64 mean and variance
    mean_var = result.tiles["mean_var"].astype(np.float64)
    np.testing.assert_allclose(mean_var[:, 0], mean[128:, 0], rtol=0, atol=1024 * U32 * 4)
    np.testing.assert_allclose(mean_var[:, 1], var[128:, 0], rtol=1024 * U32)


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_on_every_target_bit_identically(name: str, target: str) -> None:
    """Same kernel, inputs and seed: the same bits on every target and every run (no BLAS, no
    threads, fixed summation order)."""
    first = _run(name, target)
    again = _run(name, target)
    baseline = _run(name, "trn2")
    for out in first.outputs:
        bits = np.asarray(first.outputs[out]).view(np.uint8)
        assert np.array_equal(bits, np.asarray(again.outputs[out]).view(np.uint8))
        assert np.array_equal(bits, np.asarray(baseline.outputs[out]).view(np.uint8))
        assert not np.isnan(np.asarray(first.outputs[out]).astype(np.float64)).any()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_seed_changes_random_inputs(name: str) -> None:
    a, b = _run(name, seed=0), _run(name, seed=1)
    inputs = [t.name for t in a.program.inputs()]
    assert inputs
    for tensor in inputs:
        assert not np.array_equal(np.asarray(a.tensors[tensor]).view(np.uint8),
                                  np.asarray(b.tensors[tensor]).view(np.uint8))
