"""The vectorised float64 exp, tanh and erfc (neuronemu.numerics.elementary) and the activation loops
built on them (neuronemu.semantics.scalar.function_rows), against the C library's float64
functions through Python's math module.

The promise is that an activation's fp32 result is libm's float64 function rounded once, bit for
bit, whichever path computed it; the fast functions only need to stay within REL_ERROR of libm,
which keeps them far inside the GUARD the activation loops test against. (The same checks over
every fp32 input, run once by hand, are quoted in docs/numerics.md.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neuronemu.isa import codes as C
from neuronemu.numerics import elementary as E
from neuronemu.semantics.scalar import function_rows


def fp32_inputs() -> np.ndarray:
    """Every 9973rd fp32 bit pattern (430,000 values over every exponent), plus the edges: zeros,
    subnormals, the clamp points of exp (700) and tanh (20), the switch of tanh's reduction
    (|2x| = ln 2 / 2), infinities and NaN."""
    sample = np.arange(0, 2**32, 9973, dtype=np.uint64).astype(np.uint32).view(np.float32)
    sample = sample[~np.isnan(sample)]   # NaN payloads: one NaN below is enough
    edges = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 0.1733, -0.1733, 0.17329, 20.0, -20.0,
                      19.99, 88.72, 88.73, -103.9, -104.0, 699.9, 700.0, 700.1, -700.1,
                      np.inf, -np.inf, np.nan], dtype=np.float32)
    rng = np.random.default_rng(29)
    typical = rng.normal(0, 3, 100_000).astype(np.float32)
    return np.concatenate([sample, edges, typical])


def _libm(name: str, v: float) -> float:
    """The float64 expression of neuronemu.semantics.scalar._function, with math's (libm's)
    exp and tanh."""
    if name == "exp":
        return math.exp(v) if v < 709.0 else math.inf
    if name == "tanh":
        return math.tanh(v)
    if name == "gelu":
        return 0.5 * v * math.erfc(-v / math.sqrt(2.0))
    e = {"sigmoid": -v, "silu": -v, "gelu_apprx_sigmoid": -1.702 * v, "erf_dx": -v * v,
         "gelu_apprx_tanh": -2.0 * (0.7978845608028654 * (v + 0.044715 * v * v * v))}[name]
    ex = math.exp(e) if e < 709.0 else math.inf
    return {"sigmoid": 1.0 / (1.0 + ex), "silu": v / (1.0 + ex),
            "gelu_apprx_sigmoid": v / (1.0 + ex), "erf_dx": 1.1283791670955126 * ex,
            "gelu_apprx_tanh": v / (1.0 + ex)}[name]


def _oracle(name: str, x: np.ndarray) -> np.ndarray:
    values = [math.nan if math.isnan(v) else _libm(name, v) for v in x.astype(np.float64).tolist()]
    with np.errstate(over="ignore"):   # beyond fp32's range rounds to inf
        return np.array(values).astype(np.float32)


FAST = ["exp", "tanh", "sigmoid", "silu", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "erf_dx",
        "gelu"]


@pytest.mark.parametrize("name", ["exp", "tanh", "erfc"])
def test_fast_functions_within_their_error_bound(name):
    x = fp32_inputs().astype(np.float64)
    if name == "erfc":   # and gelu's arguments, -v / sqrt(2), over the same inputs
        x = np.concatenate([x, -x / math.sqrt(2.0)])
    limit = E.ERFC_LIMIT if name == "erfc" else E.EXP_LIMIT
    x = x[np.isfinite(x) & (np.abs(x) <= limit)]
    fast = np.array([getattr(E, name)(v) for v in x.tolist()])
    libm = np.array([getattr(math, name)(v) for v in x.tolist()])
    nonzero = libm != 0
    rel = np.abs(fast[nonzero] - libm[nonzero]) / np.abs(libm[nonzero])
    assert rel.max() <= E.REL_ERROR, (rel.max(), x[nonzero][rel.argmax()])
    np.testing.assert_array_equal(fast[~nonzero], libm[~nonzero])


def test_exp_gives_nan_where_it_cannot_answer():
    assert [math.isnan(E.exp(v)) for v in (700.5, -700.5, 1e30, math.nan)] == [True] * 4
    assert math.isnan(E.tanh(math.nan))
    assert [math.isnan(E.erfc(v)) for v in (10.51, -10.51, math.inf, math.nan)] == [True] * 4
    assert E.erfc(0.0) == 1.0 and E.erfc(-10.5) == 2.0
    assert E.tanh(-0.0) == 0.0 and math.copysign(1.0, E.tanh(-0.0)) == -1.0


def _run(func: int, x: np.ndarray) -> np.ndarray:
    """function_rows over x laid out as [P, N] rows of a wider array (tiles sit at a column)."""
    n = 512
    rows = -(-x.size // n)
    padded = np.zeros(rows * n, dtype=np.float32)
    padded[:x.size] = x
    mem = np.zeros((rows, 3 * n), dtype=np.float32)
    mem[:, n: 2 * n] = padded.reshape(rows, n)
    function_rows(func, 0.0, mem, 0, 1, n, mem, 0, 1, 2 * n, rows, n, np.empty((2, n)))
    return mem[:, 2 * n:].reshape(-1)[:x.size]


@pytest.mark.parametrize("name", FAST)
def test_fast_activations_are_libm_rounded_once(name):
    x = fp32_inputs()
    got = _run(getattr(C, "ACT_" + name.upper()), x)
    want = _oracle(name, x)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()


def test_some_inputs_take_the_libm_path():
    """Inputs the fast value cannot decide exist in the sample (so the fallback is exercised by
    the test above), and are rare."""
    x = fp32_inputs().astype(np.float64)
    x = x[np.abs(x) <= 80]
    y = np.array([E.exp(v) for v in x.tolist()])
    undecided = (y * (1.0 - E.GUARD)).astype(np.float32) != (y * (1.0 + E.GUARD)).astype(np.float32)
    assert 0 < undecided.sum() < x.size / 5000


@pytest.mark.parametrize(("name", "reference"), [
    ("sqrt", lambda v: np.sqrt(v)), ("reciprocal", lambda v: 1.0 / v),
    ("square", lambda v: v * v), ("rsqrt", lambda v: 1.0 / np.sqrt(v)),
    ("abs", np.abs), ("sign", lambda v: np.where(v == 0, v, np.sign(v)))])   # sign(-0.0): -0.0
def test_cheap_functions_are_float64_rounded_once(name, reference):
    x = fp32_inputs()
    got = _run(getattr(C, "ACT_" + name.upper()), x)
    with np.errstate(all="ignore"):
        want = reference(x.astype(np.float64)).astype(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), x[~same][:5]
