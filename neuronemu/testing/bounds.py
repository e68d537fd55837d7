"""Error bounds for accumulations (dot products, matmuls, sums) and the assertion that uses them.

The bound is the classical worst case of an inner product in floating point (Higham,
*Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM 2002, §3.1; gamma_n is defined
in Lemma 3.1): computing s = sum_i x_i y_i with unit roundoff u, in any order, gives

    |fl(s) - s| <= gamma_n * sum_i |x_i| |y_i|,    gamma_n = n u / (1 - n u)   (n u < 1)

for n products, each rounded once and summed with n - 1 rounded additions. Products of bf16,
fp16 or fp8 values are exact in fp32, so for those gamma_(n-1) would do; gamma_n is kept for
both (one spare rounding). A sum of n terms is the same with exact products: gamma_(n-1).
Rounding the result to a narrower output dtype adds at most u_out |result| (half an ulp of the
output, Higham §2.1). The bound holds for every summation order, so it holds for the order the
hardware uses (docs/numerics.md) whatever it is. It is a worst case: random inputs usually stay
far below it, so it catches wrong results, not small regressions in accuracy.

u is 2^-(p) for a format with p - 1 stored mantissa bits: 2^-24 for fp32, 2^-8 for bf16, 2^-11
for fp16 (round to nearest).
"""

from __future__ import annotations

import numpy as np

from neuronemu.isa import dtypes
from neuronemu.testing.messages import index_text, table, worst_first


def unit_roundoff(dtype: str = "float32") -> float:
    """Half the distance from 1.0 to the next value of ``dtype``: 2^-(mantissa bits + 1)."""
    d = dtypes.get(dtype)
    if not d.is_float:
        raise ValueError(f"{dtype} is not a float dtype")
    return 2.0 ** -(d.mantissa_bits + 1)


def gamma(n: int, dtype: str = "float32") -> float:
    """gamma_n = n u / (1 - n u) for the unit roundoff u of ``dtype`` (Higham, Lemma 3.1)."""
    u = unit_roundoff(dtype)
    if n * u >= 1:
        raise ValueError(f"gamma_{n} is undefined in {dtype}: n u = {n * u:g} >= 1")
    return n * u / (1 - n * u)


def matmul_error_bound(a, b, accumulate: str = "float32",
                       output: str | None = None) -> np.ndarray:
    """Elementwise bound on |computed - exact| of ``a @ b`` (a [M, K], b [K, N], given as the
    values the kernel multiplies, e.g. already rounded to bf16): gamma_K sum_k |a_ik||b_kj| with
    u of ``accumulate``, plus half an ulp of ``output`` (e.g. "bfloat16") of the result when the
    result is stored narrower."""
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    k = a64.shape[-1]
    bound = gamma(k, accumulate) * (np.abs(a64) @ np.abs(b64))
    if output is not None and output != accumulate:
        bound = bound + unit_roundoff(output) * (np.abs(a64 @ b64) + bound)
    return bound


def sum_error_bound(x, axis: int = -1, accumulate: str = "float32",
                    output: str | None = None) -> np.ndarray:
    """Bound on |computed - exact| of ``x.sum(axis)``: gamma_(n-1) sum |x| (n - 1 additions),
    plus half an ulp of ``output`` when the sum is stored narrower."""
    x64 = np.asarray(x, dtype=np.float64)
    n = x64.shape[axis]
    bound = gamma(max(n - 1, 0), accumulate) * np.abs(x64).sum(axis=axis)
    if output is not None and output != accumulate:
        bound = bound + unit_roundoff(output) * (np.abs(x64.sum(axis=axis)) + bound)
    return bound


def assert_within_bound(actual, expected, bound, *, show: int = 10, label: str = "") -> None:
    """Fail unless |actual - expected| <= bound elementwise (bound: a scalar or an array that
    broadcasts, e.g. from ``matmul_error_bound``); NaN anywhere fails. The message gives the
    count and the worst elements by error / bound."""
    __tracebackhide__ = True   # pytest shows the message, not this frame
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"shapes differ: actual {a.shape}, expected {e.shape}")
    limit = np.broadcast_to(np.asarray(bound, dtype=np.float64), a.shape)
    if not (limit >= 0).all():
        # a negative bound would make error / bound negative and so "within": a derivation that
        # went wrong (e.g. d * u >= 1 in gamma_d) must fail loudly, not pass every element
        wrong = np.flatnonzero(~(limit >= 0).reshape(-1))
        raise ValueError(f"{len(wrong)} error bound(s) are negative or NaN (first: "
                         f"{float(limit.flat[wrong[0]])!r} at {index_text(wrong[0], a.shape)}); "
                         f"a bound must be >= 0")
    with np.errstate(all="ignore"):
        error = np.abs(a - e)
        ratio = np.where(error == 0, 0.0, error / limit)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    bad = ~(ratio <= 1.0)
    if not bad.any():
        return
    flat = ratio.reshape(-1)
    worst = worst_first(flat, bad.reshape(-1), show)
    n_bad = int(bad.sum())
    what = f"{label}: " if label else ""
    lines = [(f"{what}{n_bad} of {a.size} elements ({n_bad / a.size:.2%}) exceed their error "
              f"bound (worst: {float(flat[worst[0]]):.4g} x the bound)"),
             f"  worst {len(worst)} (largest error / bound first):"]
    rows = [(index_text(i, a.shape), repr(float(a.flat[i])), repr(float(e.flat[i])),
             f"{float(error.flat[i]):.4g}", f"{float(limit.flat[i]):.4g}") for i in worst]
    lines += table(rows, ("index", "actual", "expected", "|error|", "bound"))
    if n_bad > len(worst):
        lines.append(f"  ... and {n_bad - len(worst)} more")
    raise AssertionError("\n".join(lines))
