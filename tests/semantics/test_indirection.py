"""vector.indirect_gather / vector.indirect_scatter (tensor indirection, trn3) against numpy
references written from NKI's description of ``t.indirect(index)``: offset k of the group of G
partitions g is index[G g + k % G, k // G] (a partition-first flattening of the group's slice of
the index tile: numpy ``flatten(order="F")``). Nothing here calls the emulator's numerics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault
from neuronemu.testing import assert_bits_equal

DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "int8": np.int8}


def group_offsets(index: np.ndarray, group: int, count: int) -> list[np.ndarray]:
    return [index[g * group:(g + 1) * group].flatten(order="F")[:count].astype(np.int64)
            for g in range(index.shape[0] // group)]


def gather_reference(data, index, group, count):
    out = np.empty((data.shape[0], count), data.dtype)
    for g, offs in enumerate(group_offsets(index, group, count)):
        out[g * group:(g + 1) * group] = data[g * group:(g + 1) * group][:, offs]
    return out


def scatter_reference(dst, src, index, group, count):
    out = dst.copy()
    for g, offs in enumerate(group_offsets(index, group, count)):
        rows = slice(g * group, (g + 1) * group)
        for k, o in enumerate(offs):      # in order: a repeated offset keeps the last
            out[rows, o] = src[rows, k]
    return out


def kernel(dtype: str, p: int, f: int, k: int, group: int, count: int) -> str:
    return f""".target trn3
.hbm x {dtype}[{p}, {f}] input
.hbm c {dtype}[{p}, {count}] input
.hbm i int32[{p}, {k}] input
.hbm gathered {dtype}[{p}, {count}] output
.hbm scattered {dtype}[{p}, {f}] output
.sbuf xs {dtype}[{p}, {f}]
.sbuf cs {dtype}[{p}, {count}]
.sbuf idx int32[{p}, {k}]
.sbuf col {dtype}[{p}, {count}]
    dma.copy xs, x
    dma.copy cs, c
    dma.copy idx, i
    vector.indirect_gather col, xs, indices=idx, group={group}, count={count}
    dma.copy gathered, col
    vector.indirect_scatter xs, cs, indices=idx, group={group}, count={count}
    dma.copy scattered, xs
"""


def inputs(rng, dtype, p, f, k, count):
    np_dtype = DTYPES[dtype]
    if np_dtype is np.int8:
        x = rng.integers(-128, 128, (p, f)).astype(np.int8)
        c = rng.integers(-128, 128, (p, count)).astype(np.int8)
    else:
        x = rng.standard_normal((p, f)).astype(np_dtype)
        c = rng.standard_normal((p, count)).astype(np_dtype)
    return x, c, rng.integers(0, f, (p, k)).astype(np.int32)   # repeats included


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("p, f, k, group, count", [
    (16, 64, 2, 16, 32),      # one vector group, every offset
    (64, 40, 3, 16, 37),      # four groups, a partial last column of offsets
    (32, 64, 2, 32, 64),      # one tensor-engine group
    (128, 96, 1, 32, 20),     # four tensor-engine groups
])
def test_matches_reference(dtype, p, f, k, group, count) -> None:
    rng = np.random.default_rng(p * 1000 + f + count)
    x, c, i = inputs(rng, dtype, p, f, k, count)
    program = neuronemu.assemble(kernel(dtype, p, f, k, group, count), "ti.s")
    out = neuronemu.run(program, inputs={"x": x, "c": c, "i": i}).outputs
    assert_bits_equal(out["gathered"], gather_reference(x, i, group, count))
    assert_bits_equal(out["scattered"], scatter_reference(x, c, i, group, count))


def test_count_zero_uses_every_offset_of_a_group() -> None:
    rng = np.random.default_rng(9)
    x, _, i = inputs(rng, "float32", 32, 64, 2, 32)
    text = (".target trn3\n.hbm x float32[32, 64] input\n.hbm i int32[32, 2] input\n"
            ".hbm y float32[32, 32] output\n.sbuf xs float32[32, 64]\n.sbuf idx int32[32, 2]\n"
            ".sbuf col float32[32, 32]\n    dma.copy xs, x\n    dma.copy idx, i\n"
            "    vector.indirect_gather col, xs, indices=idx\n    dma.copy y, col\n")
    out = neuronemu.run(neuronemu.assemble(text, "ti.s"), inputs={"x": x, "i": i}).outputs
    assert_bits_equal(out["y"], gather_reference(x, i, 16, 32))


@pytest.mark.parametrize("mnemonic, operands", [
    ("vector.indirect_gather", "col, xs"), ("vector.indirect_scatter", "xs, col")])
def test_an_offset_outside_the_tile_is_a_located_fault(mnemonic, operands) -> None:
    rng = np.random.default_rng(3)
    x, _, i = inputs(rng, "float32", 16, 64, 2, 32)
    i[5, 1] = 64
    text = (".target trn3\n.hbm x float32[16, 64] input\n.hbm i int32[16, 2] input\n"
            ".sbuf xs float32[16, 64]\n.sbuf idx int32[16, 2]\n.sbuf col float32[16, 32]\n"
            "    dma.copy xs, x\n    dma.copy idx, i\n"
            f"    {mnemonic} {operands}, indices=idx\n")
    with pytest.raises(RuntimeFault, match=r"idx\[5, 1\] = 64 is not an element of 'xs' "
                                           r"\(0..63 per partition\); nothing was written"):
        neuronemu.run(neuronemu.assemble(text, "ti.s"), inputs={"x": x, "i": i})


@pytest.mark.parametrize("line, message", [
    ("vector.indirect_gather col, xs, indices=idx, group=24", "group must be 16"),
    ("vector.indirect_gather col[0:16, :], xs[0:16, :], indices=idx[0:16, :]",
     "spans 16 partitions, not a whole number of groups of 32"),
    ("vector.indirect_gather col[16:32, :], xs[16:32, :], indices=idx[16:32, :]",
     "starts on partition 16; an index tile starts on a quadrant boundary"),
    ("vector.indirect_gather col, xs[0:16, :], indices=idx", "data spans partitions 0..15 but"),
    ("vector.indirect_gather col[:, 0:8], xs, indices=idx, count=9",
     "dst must have 9 elements per partition"),
    ("vector.indirect_gather col, xs, indices=idx, count=80", "count=80 exceeds the 64 offsets"),
    ("vector.indirect_gather col, xf, indices=idx", "dtype"),
])
def test_assembly_errors_are_located(line, message) -> None:
    text = (".target trn3\n.sbuf xs float32[32, 64]\n.sbuf xf bfloat16[32, 64]\n"
            ".sbuf idx int32[32, 2]\n.sbuf col float32[32, 32]\n    " + line + "\n")
    if "group=24" not in line and "group=" not in line:
        text = text.replace(line, line + ", group=32")
    with pytest.raises(AsmError, match=message) as e:
        neuronemu.assemble(text, "ti.s")
    assert e.value.location.line == 6


def test_only_neuronecore_v4_has_it() -> None:
    with pytest.raises(AsmError, match="trn3"):
        neuronemu.assemble(".target trn2\n.sbuf xs float32[32, 64]\n.sbuf idx int32[32, 2]\n"
                           ".sbuf col float32[32, 32]\n"
                           "    vector.indirect_gather col, xs, indices=idx\n", "ti.s")
