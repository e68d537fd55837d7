"""Scalar engine activation against float64 formulas written here (math / numpy), independently of
neuronemu/semantics/scalar.py. neuronemu evaluates each function in float64 and rounds once, so
results are within 1 fp32 ulp of the float64 value of func(fp32(fp32(x * scale) + bias))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_helpers import run_kernel

from neuronemu.isa.table import load_isa
from neuronemu.testing import assert_ulp_close

P, N = 8, 64
DECLS = f"""
.sbuf a float32[{P}, {N}]
.sbuf c float32[{P}, {N}]
.sbuf col float32[{P}, 1]
.sbuf sums float32[{P}, 1]
.hbm out float32[{P}, {N}] output
.hbm total float32[{P}, 1] output
"""

_erf = np.vectorize(math.erf)
_erfc = np.vectorize(math.erfc)
LD = np.longdouble  # 64-bit significand on x86: 1 + tanh(z) keeps > 24 bits where it cancels


def _sigmoid(v):
    return 0.5 * (1 + np.tanh(LD(v) / 2))


FUNCTIONS = {
    "copy": (lambda v: v, (-10, 10)),
    "exp": (np.exp, (-20, 20)),
    "log": (np.log, (1e-3, 1e3)),
    "tanh": (np.tanh, (-6, 6)),
    "sigmoid": (lambda v: 0.5 * (1 + np.tanh(LD(v) / 2)), (-20, 20)),
    "relu": (lambda v: np.where(v > 0, v, 0.0), (-5, 5)),
    "gelu": (lambda v: v * 0.5 * _erfc(-v / math.sqrt(2)), (-6, 6)),
    "silu": (lambda v: v * 0.5 * (1 + np.tanh(LD(v) / 2)), (-20, 20)),
    "sqrt": (np.sqrt, (0, 1e4)),
    "rsqrt": (lambda v: np.sqrt(1 / v), (1e-3, 1e4)),
    "reciprocal": (lambda v: 1 / v, (0.01, 100)),
    "square": (np.square, (-100, 100)),
    "abs": (np.abs, (-5, 5)),
    "sign": (np.sign, (-5, 5)),
    "softplus": (lambda v: np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0), (-20, 20)),
    "gelu_apprx_tanh": (lambda v: 0.5 * LD(v) * (1 + np.tanh(np.sqrt(LD(2) / LD(np.pi))
                                                              * (LD(v) + LD(0.044715) * LD(v)**3))),
                        (-6, 6)),
    "erf": (_erf, (-4, 4)),
    "sin": (np.sin, (-10, 10)),
    "arctan": (np.arctan, (-50, 50)),
    "mish": (lambda v: v * np.tanh(np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)), (-10, 10)),
    # derivatives and approximations, written from their textbook definitions
    "gelu_dx": (lambda v: 0.5 * _erfc(-v / math.sqrt(2))
                + v * np.exp(-v * v / 2) / math.sqrt(2 * math.pi), (-6, 6)),
    "gelu_apprx_sigmoid": (lambda v: LD(v) * 0.5 * (1 + np.tanh(LD(1.702) * LD(v) / 2)), (-8, 8)),
    "gelu_apprx_sigmoid_dx": (lambda v: _sigmoid(1.702 * LD(v))
                              * (1 + 1.702 * LD(v) * (1 - _sigmoid(1.702 * LD(v)))), (-3, 3)),
    "silu_dx": (lambda v: _sigmoid(LD(v)) * (1 + LD(v) * (1 - _sigmoid(LD(v)))), (-3, 3)),
    "erf_dx": (lambda v: 2 / np.sqrt(np.pi) * np.exp(-v * v), (-4, 4)),
    "prelu": (lambda v: np.where(v > 0, v, 0.25 * v), (-5, 5)),  # alpha=0.25 in the kernel
}


def test_every_activation_function_is_tested() -> None:
    assert set(load_isa().enums["activation"].values) == set(FUNCTIONS)


@pytest.mark.parametrize("func", sorted(FUNCTIONS))
def test_activation_function(func: str, rng) -> None:
    formula, (lo, hi) = FUNCTIONS[func]
    x = rng.uniform(lo, hi, (P, N)).astype(np.float32)
    alpha = ", alpha=0.25" if func == "prelu" else ""
    result = run_kernel(f"dma.copy a, x\nscalar.activation c, a, func={func}{alpha}\n"
                        "dma.copy out, c",
                        inputs={"x": x}, decls=DECLS)
    with np.errstate(all="ignore"):
        expected = formula(x.astype(np.float64))
    assert_ulp_close(result.outputs["out"], expected, ulps=1, dtype="float32")


def test_scale_bias_column_and_reduce(rng) -> None:
    x = rng.uniform(-2, 2, (P, N)).astype(np.float32)
    bias = rng.uniform(-1, 1, (P, 1)).astype(np.float32)
    body = """dma.copy a, x
dma.copy col, b
scalar.activation c, a, func=exp, scale=1.5, bias=col, reduce_res=sums
dma.copy out, c
dma.copy total, sums"""
    result = run_kernel(body, inputs={"x": x, "b": bias}, decls=DECLS)
    # multiply and add each round to fp32 (no fused multiply-add), then exp
    pre = (x.astype(np.float64) * 1.5).astype(np.float32).astype(np.float64)
    pre = (pre + bias.astype(np.float64)).astype(np.float32).astype(np.float64)
    expected = np.exp(pre)
    assert_ulp_close(result.outputs["out"], expected, ulps=1, dtype="float32")
    # the reduction adds the fp32 results left to right: error <= N u sum
    np.testing.assert_allclose(result.outputs["total"][:, 0], expected.sum(axis=1),
                               rtol=(N + 1) * 2**-24)


def test_immediate_bias_into_bf16(rng) -> None:
    import ml_dtypes

    import neuronemu

    x = rng.uniform(-3, 3, (P, N)).astype(np.float32)
    source = f""".hbm x float32[{P}, {N}] input
.hbm y bfloat16[{P}, {N}] output
.sbuf a float32[{P}, {N}]
.sbuf h bfloat16[{P}, {N}]
dma.copy a, x
scalar.activation h, a, func=tanh, bias=0.5
dma.copy y, h"""
    result = neuronemu.run(neuronemu.assemble(source), inputs={"x": x})
    pre = (x.astype(np.float64) + 0.5).astype(np.float32)
    expected = np.tanh(pre.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)
    # tanh is within 1 fp32 ulp; after bf16 rounding at most a tie can differ: compare values
    np.testing.assert_allclose(result.outputs["y"].astype(np.float64),
                               expected.astype(np.float64), rtol=2**-8, atol=0)


@pytest.mark.parametrize("func, value, shown", [
    ("log", 0.0, "[5.42101e-20, 1.84467e+19]"),
    ("sin", 4.0, "[-3.14159, 3.14159]"),
    ("reciprocal", 1e-20, "|x| in [2.27374e-13, 4.39805e+12]"),
])
def test_inputs_outside_the_documented_range_warn(func: str, value: float, shown: str) -> None:
    import neuronemu

    src = f""".sbuf a float32[4, 8]
.sbuf c float32[4, 8]
vector.memset a, value=1.0
vector.memset a[:, 3:4], value={value}
scalar.activation c, a, func={func}
scalar.activation c, a, func={func}
"""
    result = neuronemu.run(neuronemu.assemble(src, "k.s"))
    [warning] = result.warnings
    assert warning.location.line == 5
    assert f"func={func} gets input {np.float32(value):.9g}" in warning.message
    assert shown in warning.message
    assert "(1 more dynamic instructions do too)" in warning.message


def test_inputs_in_range_do_not_warn() -> None:
    import neuronemu

    src = """.sbuf a float32[4, 8]
.sbuf c float32[4, 8]
vector.memset a, value=2.0
scalar.activation c, a, func=log
scalar.activation c, a, func=rsqrt
"""
    assert neuronemu.run(neuronemu.assemble(src, "k.s")).warnings == []
