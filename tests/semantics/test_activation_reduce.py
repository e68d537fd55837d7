"""scalar.activation_reduce (nki.isa.activation_reduce): activation plus a fold of the outputs along
the free axis, through the Scalar engine's accumulator registers. Oracles: numpy float64 for the
function, numpy float32 folded element by element in order for the reduction."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

KERNEL = """.target {target}
.hbm x float32[32, 96] input
.hbm y float32[32, 96] output
.hbm r float32[32, 1] output
.sbuf xs float32[32, 96]
.sbuf ys float32[32, 96]
.sbuf rs float32[32, 1]
.sbuf col float32[32, 1]
dma.copy xs, x
vector.memset col, value=-0.25
scalar.activation_reduce ys, xs, func={func}, scale=0.5, bias=col, reduce_op={op}, reduce_res=rs
{extra}dma.copy y, ys
dma.copy r, rs
"""


def run(func: str, op: str, x: np.ndarray, target: str = "trn2", extra: str = ""):
    src = KERNEL.format(target=target, func=func, op=op, extra=extra)
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": x})
    return result.outputs["y"], result.outputs["r"]


def fold(values: np.ndarray, op: str) -> np.ndarray:
    out = np.empty((values.shape[0], 1), np.float32)
    for p in range(values.shape[0]):
        acc = {"add": np.float32(0), "maximum": np.float32(-np.inf),
               "minimum": np.float32(np.inf)}[op]
        for v in values[p]:
            acc = np.float32(acc + v) if op == "add" else (max(acc, v) if op == "maximum"
                                                             else min(acc, v))
        out[p, 0] = acc
    return out


@pytest.mark.parametrize("target, op", [("trn1", "add"), ("trn2", "add"), ("trn2", "maximum"),
                                        ("trn3", "minimum")])
def test_function_then_fold_in_element_order(target: str, op: str) -> None:
    x = np.random.default_rng(0).standard_normal((32, 96)).astype(np.float32)
    y, r = run("exp", op, x, target)
    pre = ((x * np.float32(0.5)).astype(np.float32) + np.float32(-0.25)).astype(np.float32)
    np.testing.assert_allclose(y, np.exp(pre.astype(np.float64)), rtol=2e-7)
    np.testing.assert_array_equal(r, fold(y, op))


def test_the_registers_hold_the_result_for_activate2_to_continue() -> None:
    """activation_reduce resets the Scalar accumulator registers and leaves its sums in them:
    a following activate2 with reduce_cmd=reduce adds its own outputs on top (trn3)."""
    x = np.random.default_rng(1).standard_normal((32, 96)).astype(np.float32)
    extra = ("scalar.activate2 ys, xs, func=copy, imm0=1.0, imm1=0.0, op0=multiply, op1=bypass, "
             "reduce_res=rs, reduce_cmd=reduce\n")
    y, r = run("exp", "add", x, "trn3", extra)
    first = np.exp(((x * np.float32(0.5)).astype(np.float32) - np.float32(0.25)).astype(np.float64))
    sums = fold(first.astype(np.float32), "add")
    expected = np.empty_like(sums)
    for p in range(32):
        acc = sums[p, 0]
        for v in x[p]:
            acc = np.float32(acc + v)
        expected[p, 0] = acc
    np.testing.assert_allclose(fold(first.astype(np.float32), "add"),
                               first.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("target, line, message", [
    ("trn1", "scalar.activation_reduce ys, xs, func=exp, reduce_op=maximum, reduce_res=rs",
     "reduce_op must be add on trn1"),
    ("trn2", "scalar.activation_reduce ys, xs, func=exp, reduce_op=multiply, reduce_res=rs",
     "reduce_op must be add or maximum or minimum on trn2"),
    ("trn2", "scalar.activation_reduce ys, xs, func=exp, reduce_op=add",
     "needs argument 'reduce_res'"),
    ("trn2", "scalar.activation_reduce ys, xs, func=exp, reduce_op=add, reduce_res=ys",
     "reduce_res"),
])
def test_errors(target: str, line: str, message: str) -> None:
    src = (f".target {target}\n.sbuf xs float32[32, 96]\n.sbuf ys float32[32, 96]\n"
           f".sbuf rs float32[32, 1]\n{line}\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_costs_as_much_as_activation_with_reduce_res(target: str) -> None:
    """Both are Activate + ActReadAccumulator: max(64, N) + 64 ScalarE cycles."""
    base = (f".target {target}\n.sbuf xs float32[32, 96]\n.sbuf ys float32[32, 96]\n"
            ".sbuf rs float32[32, 1]\nvector.memset xs, value=1.0\n")
    busy = []
    for line in ("scalar.activation ys, xs, func=exp, reduce_res=rs",
                 "scalar.activation_reduce ys, xs, func=exp, reduce_op=add, reduce_res=rs"):
        timing = neuronemu.run(neuronemu.assemble(base + line + "\n", "k.s")).timing
        busy.append(timing.tracks["scalar"].busy_ns)
    ghz = {"trn1": 1.4, "trn2": 1.2}[target]
    assert busy == pytest.approx([(96 + 64) / ghz] * 2)
