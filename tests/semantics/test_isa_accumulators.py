"""Instructions that fold into the Vector accumulator registers (reduce_cmd):
tensor_scalar_cumulative, exponential and range_select, against numpy references written from
the NKI pages' pseudocode, with each fp32 step rounded as the docs order them."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
       "maximum": np.maximum, "minimum": np.minimum}
IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def run(src: str, target: str = "trn2", **inputs):
    return neuronemu.run(neuronemu.assemble(src, "kernel.s", target=target), inputs=inputs)


def scan_reference(x, op0, imm0, op1, start):
    """The docs' pseudocode, one fp32 rounding per operation."""
    out = np.empty_like(x)
    reg = np.float32(start)
    for i, v in enumerate(x):
        value = np.float32(OPS[op0](np.float32(v), np.float32(imm0)))
        reg = np.float32(OPS[op1](value, reg))
        out[i] = reg
    return out, reg


@pytest.mark.parametrize("op1", sorted(OPS))
def test_tensor_scalar_cumulative_each_scan(op1: str) -> None:
    x = np.random.default_rng(0).uniform(0.5, 1.5, (4, 24)).astype(np.float32)
    result = run(f""".hbm x float32[4, 24] input
.sbuf xs float32[4, 24]
.sbuf out float32[4, 24]
dma.copy xs, x
vector.tensor_scalar_cumulative out, xs, op0=multiply, op1={op1}, imm0=1.25
""", x=x)
    for p in range(4):
        expected, _ = scan_reference(x[p], "multiply", 1.25, op1, IDENTITY[op1])
        np.testing.assert_array_equal(result.tiles["out"][p], expected)


def test_cumulative_scan_continues_across_instructions() -> None:
    """reduce continues from the registers; load_reduce starts from imm1; idle leaves them."""
    x = np.random.default_rng(1).normal(size=(2, 40)).astype(np.float32)
    result = run(""".hbm x float32[2, 40] input
.sbuf xs float32[2, 40]
.sbuf a float32[2, 40]
.sbuf b float32[2, 40]
dma.copy xs, x
vector.tensor_scalar_cumulative a[:, 0:20], xs[:, 0:20], op0=add, op1=add, imm0=0.0
vector.tensor_scalar_cumulative b, xs, op0=add, op1=add, imm0=0.0, reduce_cmd=idle
vector.tensor_scalar_cumulative a[:, 20:40], xs[:, 20:40], op0=add, op1=add, imm0=0.0, reduce_cmd=reduce
""", x=x)
    for p in range(2):
        whole, _ = scan_reference(x[p], "add", 0.0, "add", 0.0)
        np.testing.assert_array_equal(result.tiles["a"][p], whole)   # one scan over 40
        np.testing.assert_array_equal(result.tiles["b"][p], whole)   # idle: fresh, no effect
    loaded = run(""".hbm x float32[2, 40] input
.sbuf xs float32[2, 40]
.sbuf a float32[2, 40]
dma.copy xs, x
vector.tensor_scalar_cumulative a, xs, op0=subtract, op1=maximum, imm0=0.5, imm1=2.0, reduce_cmd=load_reduce, reverse0=true
""", x=x)
    for p in range(2):
        # reverse0: op0(imm0, x) = 0.5 - x; the max-scan starts from imm1 = 2.0
        ref = np.empty(40, np.float32)
        reg = np.float32(2.0)
        for i in range(40):
            reg = np.maximum(np.float32(np.float32(0.5) - x[p, i]), reg)
            ref[i] = reg
        np.testing.assert_array_equal(loaded.tiles["a"][p], ref)


def test_tensor_scalar_cumulative_takes_a_value_per_partition() -> None:
    """imm0 and imm1 as [P, 1] columns (NKI's "vector as immediate values"): partition p scans
    with its own imm0[p] and, with load_reduce, starts from its own imm1[p]."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0.5, 1.5, (3, 16)).astype(np.float32)
    scale = np.array([[1.5], [-2.0], [0.25]], np.float32)
    start = np.array([[1.0], [-3.0], [10.0]], np.float32)
    result = run(""".hbm x float32[3, 16] input
.hbm scale float32[3, 1] input
.hbm start float32[3, 1] input
.sbuf xs float32[3, 16]
.sbuf s float32[3, 1]
.sbuf b float32[3, 1]
.sbuf out float32[3, 16]
dma.copy xs, x
dma.copy s, scale
dma.copy b, start
vector.tensor_scalar_cumulative out, xs, op0=multiply, op1=add, imm0=s, imm1=b, reduce_cmd=load_reduce
""", x=x, scale=scale, start=start)
    for p in range(3):
        expected, _ = scan_reference(x[p], "multiply", scale[p, 0], "add", start[p, 0])
        np.testing.assert_array_equal(result.tiles["out"][p], expected)


def test_cumulative_rejects_non_scan_operator() -> None:
    with pytest.raises(AsmError, match="op1 must be a scan operator"):
        neuronemu.assemble(".sbuf x float32[4, 8]\n"
                           "vector.tensor_scalar_cumulative x, x, op0=add, op1=divide, imm0=1.0\n",
                           "k.s")


EXP = """.hbm x float32[8, 32] input
.sbuf xs float32[8, 32]
.sbuf m float32[8, 1]
.sbuf e float32[8, 32]
.sbuf s float32[8, 1]
dma.copy xs, x
vector.tensor_reduce m, xs, op=maximum
vector.exponential e[:, 0:16], xs[:, 0:16], max_value=m, reduce_res=s, reduce_cmd=reset_reduce
vector.exponential e[:, 16:32], xs[:, 16:32], max_value=m, reduce_res=s, reduce_cmd=reduce
"""


def test_exponential_with_running_sum() -> None:
    x = np.random.default_rng(2).normal(0, 3, size=(8, 32)).astype(np.float32)
    result = run(EXP, target="trn3", x=x)
    m = x.max(axis=1, keepdims=True)
    shifted = (x - m).astype(np.float32)  # one fp32 subtraction
    expected = np.exp(shifted.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(result.tiles["e"], expected)
    sums = np.zeros(8, np.float32)
    for i in range(32):
        sums = (sums + expected[:, i]).astype(np.float32)
    np.testing.assert_array_equal(result.tiles["s"][:, 0], sums)
    with pytest.raises(AsmError, match="not available on trn2"):
        neuronemu.assemble(EXP, "k.s", target="trn2")


def test_range_select_is_a_causal_mask_with_running_max() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 48)).astype(np.float32)
    result = run(""".hbm x float32[16, 48] input
.sbuf xs float32[16, 48]
.sbuf lo float32[16, 1]
.sbuf hi float32[16, 1]
.sbuf out float32[16, 48]
.sbuf best float32[16, 1]
dma.copy xs, x
gpsimd.iota lo, base=0, channel_multiplier=0, step=0
gpsimd.iota hi, base=4, channel_multiplier=2, step=0
vector.range_select out[:, 0:24], xs[:, 0:24], comp_op0=greater_equal, comp_op1=less_equal, bound0=lo, bound1=hi, reduce_res=best
vector.range_select out[:, 24:48], xs[:, 24:48], comp_op0=greater_equal, comp_op1=less_equal, bound0=lo, bound1=hi, reduce_res=best, reduce_cmd=reduce, range_start=24.0
""", x=x)
    fill = np.float32(-3.4028235e38)
    j = np.arange(48)
    hi = 4 + 2 * np.arange(16)
    keep = (j[None, :] >= 0) & (j[None, :] <= hi[:, None])  # column index + range_start
    expected = np.where(keep, x, fill).astype(np.float32)
    np.testing.assert_array_equal(result.tiles["out"], expected)
    np.testing.assert_array_equal(result.tiles["best"][:, 0], expected.max(axis=1))


def test_range_select_needs_comparisons_and_trn2() -> None:
    src = (".sbuf x float32[4, 8]\n.sbuf b float32[4, 1]\n"
           "vector.range_select x, x, comp_op0=add, comp_op1=less, bound0=b, bound1=b\n")
    with pytest.raises(AsmError, match="comp_op0 must be a comparison"):
        neuronemu.assemble(src, "k.s")
    with pytest.raises(AsmError, match="not available on trn1"):
        neuronemu.assemble(src.replace("add", "less"), "k.s", target="trn1")
