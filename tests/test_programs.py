"""Every bundled kernel in programs/examples runs with no inputs given and matches a numpy float64
reference computed from the inputs it actually used (``Result.tensors``), within error bounds
derived from the dtypes and the order of operations documented in docs/numerics.md.

Unit roundoffs (round to nearest even with p significant bits: u = 2**-p): fp32 ``U32 = 2**-24``,
bf16 ``U_BF16 = 2**-8``. k roundings compound to at most ``gamma(k) = k u / (1 - k u)``, and a sum
of n terms in fp32, in any order, is within ``gamma(n - 1) * sum(|terms|)`` of the exact sum
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., sec. 3.1 and 4.2).
"""

from __future__ import annotations

import functools
import zlib

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.programs import bundled_programs
from neuronemu.testing import assert_within_bound

U32 = 2.0**-24
U_BF16 = 2.0**-8
TARGETS = ("trn1", "trn2", "trn3")
PROGRAMS = bundled_programs()
EXAMPLES = sorted(name for name in PROGRAMS if name.startswith("examples/"))

# The inputs each kernel declares, tensor -> (mean, std) of its normal init= (inputs without an
# init= are normal(0, 1)), as written in the .s files.
DECLARED_INPUTS = {
    "examples/vector_add": {"a": (0.0, 1.0), "b": (0.0, 1.0)},
    "examples/matmul_tile": {"lhsT": (0.0, 1.0), "rhs": (0.0, 1.0)},
    "examples/matmul_tiled": {"lhsT": (0.0, 1.0), "rhs": (0.0, 1.0)},
    "examples/softmax": {"x": (0.0, 4.0)},
    "examples/layernorm": {"x": (1.0, 3.0)},
}

# Dynamic instruction counts per engine, from each kernel's loop structure.
INSTRUCTION_COUNTS = {
    "examples/vector_add": {"dma": 3, "vector": 1},
    "examples/matmul_tile": {"dma": 3, "tensor": 1, "vector": 1},
    # 4 K tiles x 2 operand loads + 4 row-tile stores; 4 M tiles x 4 K tiles of matmuls; one PSUM
    # evacuation per M tile; ctrl: mov + 4 x (add, blt) + mov + 4 x (mov, 3 x (add, blt), add, blt)
    "examples/matmul_tiled": {"dma": 12, "tensor": 16, "vector": 4, "ctrl": 46},
    # 2 row tiles x (load, store | tensor_reduce, reciprocal, tensor_scalar | activation);
    # ctrl: mov + 2 x (add, blt)
    "examples/softmax": {"dma": 4, "vector": 6, "scalar": 2, "ctrl": 5},
    # 2 row tiles x (load, store | 2 x bn_stats, bn_aggr, tensor_scalar | activation)
    "examples/layernorm": {"dma": 4, "vector": 8, "scalar": 2, "ctrl": 5},
}

LAYERNORM_EPS = 1e-5  # .const EPS in layernorm.s


def gamma(k: float | np.ndarray) -> float | np.ndarray:
    """Higham's gamma_k for fp32: |prod_i (1 + d_i)^(+-1) - 1| <= gamma_k when |d_i| <= u."""
    return k * U32 / (1.0 - k * U32)


def fresh_run(name: str, target: str = "trn2", seed: int = 0) -> neuronemu.Result:
    """Assemble and run a bundled kernel with no inputs given: every input takes its init=."""
    program = neuronemu.assemble_file(PROGRAMS[name], target=target)
    return neuronemu.run(program, inputs=None, seed=seed)


@functools.cache
def cached_run(name: str, target: str = "trn2", seed: int = 0) -> neuronemu.Result:
    """One run per (kernel, target, seed), shared by the read-only reference checks."""
    return fresh_run(name, target, seed)


def f64(result: neuronemu.Result, name: str) -> np.ndarray:
    """An HBM tensor as the kernel left it (inputs included), widened exactly to float64."""
    return np.asarray(result.tensors[name]).astype(np.float64)


def raw_bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint8)


def within(actual: np.ndarray, reference: np.ndarray, bound: np.ndarray | float) -> bool:
    """|actual - reference| <= bound everywhere; NaN (an element nothing wrote) never passes."""
    return bool(np.all(np.abs(np.asarray(actual).astype(np.float64) - reference) <= bound))


# --------------------------------------------------------------------------------------------
# float64 references with their error bounds


def matmul_reference(lhs_t: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """result = lhsT^T @ rhs (lhsT is A stored transposed, [K, M]) and an absolute bound.

    bf16 x bf16 products are exact in fp32 (8 + 8 significant bits <= 24), so only the fp32
    additions round: K products summed in any grouping (here 128-term sums added into PSUM) are
    within gamma(K - 1) * sum_k |a_km b_kn| <= K u sum_k |a_km b_kn|. The output is fp32, so the
    PSUM -> SBUF -> HBM copies add no rounding."""
    k = lhs_t.shape[0]
    return lhs_t.T @ rhs, k * U32 * (np.abs(lhs_t).T @ np.abs(rhs))


def matmul_in_documented_order(lhs_t: np.ndarray, rhs: np.ndarray, k_tile: int = 128) -> np.ndarray:
    """The order docs/numerics.md specifies, in numpy float32: per matmul instruction (one 128-row
    K tile) products are summed for k = 0, 1, ... into a zero fp32 accumulator, and the finished
    sum is added to PSUM (the first K tile overwrites it)."""
    a, b = lhs_t.astype(np.float32), rhs.astype(np.float32)
    psum = None
    for k0 in range(0, a.shape[0], k_tile):
        partial = np.zeros((a.shape[1], b.shape[1]), dtype=np.float32)
        for k in range(k0, k0 + k_tile):
            partial += np.outer(a[k], b[k])  # exact fp32 products, one fp32 rounding per add
        psum = partial if psum is None else psum + partial
    return psum


def softmax_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y = exp(x - max) / sum(exp(x - max)) per row and an absolute bound per element.

    With d = max - x: x - max rounds once (error <= u d, which exp turns into a relative error
    <= u d), exp is rounded once (u), the n-term fp32 row sum of positive terms adds gamma(n - 1)
    on terms that are each within u (max_row d + 1) relative, then the reciprocal (u) and the final
    multiply (u): relative error <= gamma(d + 1 + (n - 1) + (max_row d + 1) + 2), ~580 u for
    normal(0, 4) rows of 512 (max d ~ 33)."""
    n = x.shape[1]
    d = x.max(axis=1, keepdims=True) - x
    e = np.exp(-d)
    reference = e / e.sum(axis=1, keepdims=True)
    roundings = d + 1 + (n - 1) + (d.max(axis=1, keepdims=True) + 1) + 2
    return reference, gamma(roundings) * reference


def layernorm_statistics(x: np.ndarray):
    """Row mean, population variance and 1 / sqrt(var + eps), each with an absolute bound.

    bn_stats sums 256-element halves of 512-element chunks in fp32 and bn_aggr merges the four
    (count, mean, M2) triples with Chan's formula (<= 12 more roundings of terms <= 2 mean|x|), so
    counting all n = 1024 elements as one sequential sum is safe: |mean error| <= (n + 24) u
    mean|x|. The variance is a two-pass one, relative error <= n u + (n u kappa)^2 with
    kappa^2 = 1 + mean^2 / var (Chan, Golub, LeVeque 1983), again with n -> n + 24. rsqrt of
    var + eps adds half the variance's relative error, plus the eps immediate's fp32 rounding, the
    add and the function (3 u); the 1.01 covers second-order terms (< 1e-8 relative)."""
    k = x.shape[1] + 24
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    mean_bound = k * U32 * np.abs(x).mean(axis=1, keepdims=True)
    var_rel = k * U32 + (k * U32) ** 2 * (1.0 + mean**2 / var)
    rstd = 1.0 / np.sqrt(var + LAYERNORM_EPS)
    rstd_rel = 1.01 * (var_rel / 2 + 3 * U32)
    return (mean, mean_bound), (var, var_rel * var), (rstd, rstd_rel * rstd)


def layernorm_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """y = (x - mean) * rstd per row and an absolute bound per element.

    The fp32 result (x - mean rounds, then the multiply) is off by at most rstd |mean error| +
    |y| (rstd relative error + 2 u) (times 1.01 for second-order terms); the bf16 store then adds
    half a bf16 ulp, <= 2**-8 |y_fp32|."""
    (mean, mean_bound), _, (rstd, rstd_bound) = layernorm_statistics(x)
    reference = (x - mean) * rstd
    fp32_bound = 1.01 * (rstd * mean_bound + np.abs(reference) * (rstd_bound / rstd + 2 * U32))
    return reference, fp32_bound + U_BF16 * (np.abs(reference) + fp32_bound)


# --------------------------------------------------------------------------------------------
# the kernels


def test_every_example_has_a_reference() -> None:
    assert EXAMPLES == sorted(DECLARED_INPUTS) == sorted(INSTRUCTION_COUNTS)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", EXAMPLES)
def test_default_inputs_are_the_declared_init(name: str, seed: int) -> None:
    """With no inputs given, every input holds its init= draw: PCG64 keyed by (seed,
    crc32(name)), float64 values rounded to the dtype as ``astype`` does (docs/language.md)."""
    result = cached_run(name, seed=seed)
    assert {t.name for t in result.program.inputs()} == set(DECLARED_INPUTS[name])
    for tensor, (mean, std) in DECLARED_INPUTS[name].items():
        used = result.tensors[tensor]
        rng = np.random.default_rng([seed, zlib.crc32(tensor.encode())])
        expected = rng.normal(mean, std, size=used.shape).astype(used.dtype)
        np.testing.assert_array_equal(raw_bytes(used), raw_bytes(expected), err_msg=tensor)


@pytest.mark.parametrize("target", TARGETS)
def test_vector_add_is_the_correctly_rounded_sum(target: str) -> None:
    result = cached_run("examples/vector_add", target)
    a, b = f64(result, "a"), f64(result, "b")
    assert result.outputs["c"].dtype == np.float32
    # One fp32 addition, correctly rounded: zero error against the float64 sum rounded to fp32
    # (double rounding is innocuous for +: float64 has 53 >= 2 * 24 + 2 bits, Figueroa 1995).
    assert_within_bound(result.outputs["c"], (a + b).astype(np.float32).astype(np.float64), 0.0, label="c")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["examples/matmul_tile", "examples/matmul_tiled"])
def test_matmul_matches_float64_within_the_summation_bound(name: str, target: str) -> None:
    result = cached_run(name, target)
    lhs_t, rhs = f64(result, "lhsT"), f64(result, "rhs")
    assert result.tensors["lhsT"].dtype == ml_dtypes.bfloat16
    assert result.outputs["result"].dtype == np.float32
    reference, bound = matmul_reference(lhs_t, rhs)
    assert_within_bound(result.outputs["result"], reference, bound, label="result")


@pytest.mark.parametrize("name", ["examples/matmul_tile", "examples/matmul_tiled"])
def test_matmul_is_bit_exact_in_the_documented_summation_order(name: str) -> None:
    """Stronger than the bound: the fp32 sums in the order of docs/numerics.md, computed with
    numpy float32 (IEEE round-to-nearest-even additions), give the same bits."""
    result = cached_run(name)
    expected = matmul_in_documented_order(f64(result, "lhsT"), f64(result, "rhs"))
    np.testing.assert_array_equal(raw_bytes(result.outputs["result"]), raw_bytes(expected))


@pytest.mark.parametrize("target", TARGETS)
def test_softmax_matches_float64(target: str) -> None:
    result = cached_run("examples/softmax", target)
    reference, bound = softmax_reference(f64(result, "x"))
    assert result.outputs["y"].dtype == np.float32
    assert_within_bound(result.outputs["y"], reference, bound, label="y")


@pytest.mark.parametrize("target", TARGETS)
def test_layernorm_matches_float64(target: str) -> None:
    result = cached_run("examples/layernorm", target)
    x = f64(result, "x")  # the bf16 inputs, exactly
    assert result.outputs["y"].dtype == ml_dtypes.bfloat16
    reference, bound = layernorm_reference(x)
    assert_within_bound(result.outputs["y"], reference, bound, label="y")
    # The bf16 output hides statistics errors below 2**-8 (a sample instead of a population
    # variance is off by 1/1023), so check the fp32 statistics the kernel left on chip for its
    # last row tile (rows 128..255) against their much tighter bounds too.
    (mean, mean_bound), (var, var_bound), (rstd, rstd_bound) = layernorm_statistics(x[128:])
    mean_var = result.tiles["mean_var"].astype(np.float64)
    assert_within_bound(mean_var[:, 0:1], mean, mean_bound, label="bn_aggr mean")
    assert_within_bound(mean_var[:, 1:2], var, var_bound, label="bn_aggr variance")
    assert_within_bound(result.tiles["rstd"].astype(np.float64), rstd, rstd_bound, label="rstd")


def test_bounds_reject_plausible_kernel_mistakes() -> None:
    """The bounds above are tight enough to matter: results a slightly wrong kernel would give
    (computed here in float64 from the same inputs) fall outside them."""
    tile = cached_run("examples/matmul_tile")
    a, b = f64(tile, "lhsT"), f64(tile, "rhs")
    reference, bound = matmul_reference(a, b)
    assert not within(a @ b, reference, bound), "lhsT used untransposed"
    assert not within(a[1:].T @ b[1:], reference, bound), "one contraction row left out"
    assert not within(reference.astype(ml_dtypes.bfloat16), reference, bound), "bf16 output"

    tiled = cached_run("examples/matmul_tiled")
    a, b = f64(tiled, "lhsT"), f64(tiled, "rhs")
    reference, bound = matmul_reference(a, b)
    assert not within(b.T @ a, reference, bound), "operands swapped"
    assert not within(a[:-128].T @ b[:-128], reference, bound), "last K tile left out"
    assert not within(reference + a[:128].T @ b[:128], reference, bound), "K tile added twice"

    x = f64(cached_run("examples/softmax"), "x")
    reference, bound = softmax_reference(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    short_sum = e / (e.sum(axis=1, keepdims=True) - e[:, -1:])
    assert not within(short_sum, reference, bound), "row sum missing its last term"
    swapped = e / np.roll(e.sum(axis=1, keepdims=True), 128, axis=0)
    assert not within(swapped, reference, bound), "row sums of the other row tile"

    x = f64(cached_run("examples/layernorm"), "x")
    reference, bound = layernorm_reference(x)
    first_chunk = x[:, :512]
    chunk_stats = (x - first_chunk.mean(axis=1, keepdims=True)) / np.sqrt(
        first_chunk.var(axis=1, keepdims=True) + LAYERNORM_EPS)
    assert not within(chunk_stats, reference, bound), "statistics of the first bn_stats chunk"
    _, (var, var_bound), _ = layernorm_statistics(x)
    assert not within(x.var(axis=1, ddof=1, keepdims=True), var, var_bound), "sample variance"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_dynamic_instruction_counts(name: str, target: str) -> None:
    assert cached_run(name, target).instructions == INSTRUCTION_COUNTS[name]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_runs_reproducibly_on_every_target(name: str, target: str) -> None:
    """Two runs with the same seed give the same bits in every HBM tensor, the same bits as on
    trn2 (numerics do not depend on the target) and no reads of unwritten memory; another seed
    draws other inputs and so gives other outputs."""
    first, again = fresh_run(name, target, seed=0), fresh_run(name, target, seed=0)
    assert first.target == target
    assert first.warnings == []
    assert set(first.tensors) == set(again.tensors)
    for tensor, values in first.tensors.items():
        np.testing.assert_array_equal(raw_bytes(values), raw_bytes(again.tensors[tensor]),
                                      err_msg=tensor)
    on_trn2 = cached_run(name, "trn2", seed=0)
    for output, values in first.outputs.items():
        assert not np.isnan(values.astype(np.float64)).any(), f"{output} has unwritten elements"
        np.testing.assert_array_equal(raw_bytes(values), raw_bytes(on_trn2.outputs[output]),
                                      err_msg=output)

    other = fresh_run(name, target, seed=1)
    for tensor in DECLARED_INPUTS[name]:
        # independent normal draws coincide in few elements (at most ~0.3% after bf16 rounding)
        same = np.mean(first.tensors[tensor] == other.tensors[tensor])
        assert same < 0.01, f"input {tensor}: {same:.2%} of elements unchanged by the seed"
    for output, values in first.outputs.items():
        assert not np.array_equal(raw_bytes(values), raw_bytes(other.outputs[output])), output
