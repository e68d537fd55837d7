"""scalar.activate2 (trn3): the tensor-scalar stages rounded to fp32 one by one, the function,
and the fold into the Scalar accumulator registers, against float64 references."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

DECLS = """.hbm x float32[8, 64] input
.hbm c float32[8, 1] input
.sbuf xs float32[8, 64]
.sbuf col float32[8, 1]
.sbuf y float32[8, 64]
.sbuf r float32[8, 1]
dma.copy xs, x
dma.copy col, c
"""


def run(body: str, target: str = "trn3", **inputs):
    return neuronemu.run(neuronemu.assemble(DECLS + body, "k.s", target=target), inputs=inputs)


def f32(v):
    return np.asarray(v, dtype=np.float64).astype(np.float32)


@pytest.mark.parametrize("op0, op1, reverse0, reverse1", [
    ("multiply", "add", False, False), ("multiply", "subtract", False, True),
    ("multiply", "bypass", False, False), ("add", "bypass", True, False),
    ("subtract", "bypass", True, False), ("bypass", "bypass", False, False),
])
def test_tensor_scalar_stages(op0, op1, reverse0, reverse1) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 64)).astype(np.float32)
    c = rng.normal(size=(8, 1)).astype(np.float32)
    flags = f"reverse0={str(reverse0).lower()}, reverse1={str(reverse1).lower()}"
    y = run(f"scalar.activate2 y, xs, func=copy, imm0=col, imm1=0.375, op0={op0}, op1={op1}, "
            f"{flags}\n", x=x, c=c).tiles["y"]
    fns = {"multiply": np.multiply, "add": np.add, "subtract": np.subtract}
    v = x.astype(np.float64)
    if op0 != "bypass":
        v = f32(fns[op0](c, v) if reverse0 else fns[op0](v, c)).astype(np.float64)
    if op1 != "bypass":
        v = f32(fns[op1](0.375, v) if reverse1 else fns[op1](v, 0.375)).astype(np.float64)
    np.testing.assert_array_equal(y, f32(v))


def test_softmax_numerator_with_running_sum_across_instructions() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(0, 3, size=(8, 64)).astype(np.float32)
    m = x.max(axis=1, keepdims=True)
    result = run("""scalar.activate2 y[:, 0:32], xs[:, 0:32], func=exp, imm0=col, imm1=0.0, op0=subtract, op1=bypass, reduce_res=r, reduce_cmd=reset_reduce
scalar.activate2 y[:, 32:64], xs[:, 32:64], func=exp, imm0=col, imm1=0.0, op0=subtract, op1=bypass, reduce_res=r, reduce_cmd=reduce
""", x=x, c=m)
    expected = np.exp(f32(x.astype(np.float64) - m).astype(np.float64))
    got = result.tiles["y"]
    assert np.max(np.abs(got - expected) / np.abs(expected)) <= 2**-24  # within 1/2 ulp
    sums = np.zeros(8, np.float32)
    for i in range(64):
        sums = (sums + got[:, i]).astype(np.float32)
    np.testing.assert_array_equal(result.tiles["r"][:, 0], sums)


@pytest.mark.parametrize("reduce_op, fn", [("maximum", np.max), ("minimum", np.min)])
def test_max_and_min_folds(reduce_op, fn) -> None:
    x = np.random.default_rng(2).normal(size=(8, 64)).astype(np.float32)
    result = run(f"scalar.activate2 y, xs, func=relu, imm0=1.0, imm1=0.0, op0=multiply, "
                 f"op1=bypass, reduce_res=r, reduce_op={reduce_op}, reduce_cmd=reset_reduce\n",
                 x=x, c=np.zeros((8, 1), np.float32))
    np.testing.assert_array_equal(result.tiles["r"][:, 0], fn(np.maximum(x, 0), axis=1))


def test_prelu_slope() -> None:
    x = np.random.default_rng(3).normal(size=(8, 64)).astype(np.float32)
    y = run("scalar.activate2 y, xs, func=prelu, imm0=1.0, imm1=0.0, op0=bypass, op1=bypass, "
            "relu_param=0.125\n", x=x, c=np.zeros((8, 1), np.float32)).tiles["y"]
    np.testing.assert_array_equal(y, f32(np.where(x > 0, x, 0.125 * x.astype(np.float64))))


@pytest.mark.parametrize("line, target, message", [
    ("scalar.activate2 y, xs, func=exp, imm0=1.0, imm1=0.0, op0=add, op1=add", "trn3",
     "(op0, op1) = (add, add) is not one of activate2's pairs"),
    (("scalar.activate2 y, xs, func=exp, imm0=1.0, imm1=0.0, op0=add, op1=bypass, "
     "reduce_op=multiply"), "trn3", "activate2 folds with add, maximum or minimum"),
    ("scalar.activate2 y, xs, func=exp, imm0=1.0, imm1=0.0, op0=add, op1=bypass", "trn2",
     "not available on trn2"),
])
def test_errors(line, target, message) -> None:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(DECLS + line + "\n", "k.s", target=target)
    assert message in info.value.render()
