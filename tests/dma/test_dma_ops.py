"""DMA instructions beyond copy: transpose, compute, accumulate, gather, scatter.

Oracles: numpy indexing and .T on the input bits, float64 sums rounded to fp32 step by step
(the documented left-to-right fp32 order), ml_dtypes for the final narrowing."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault


def run(src: str, target: str = "trn2", **inputs):
    return neuronemu.run(neuronemu.assemble(src, "kernel.s", target=target), inputs=inputs)


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


@pytest.mark.parametrize("source_space", ["hbm", "sbuf", "hbm strided"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_transpose_is_bit_exact(source_space: str, dtype: str) -> None:
    """Dense tiles move through word views, a strided one element by element: both bit-exact."""
    rng = np.random.default_rng(1)
    wide = dtype == "float32"   # every bit pattern, NaNs included, moves unchanged
    strided = source_space == "hbm strided"
    bits = rng.integers(0, 2**32 if wide else 2**16, size=(48, 256 if strided else 128),
                        dtype=np.uint32 if wide else np.uint16)
    x = bits.view(np.float32 if wide else ml_dtypes.bfloat16)
    stage = "" if source_space != "sbuf" else f".sbuf s {dtype}[48, 128]\ndma.copy s, x\n"
    src_name = {"hbm": "x", "sbuf": "s", "hbm strided": "x[0:48, 1:256:2]"}[source_space]
    if strided:
        bits = bits[:, 1::2]
    result = run(f""".hbm x {dtype}[48, {256 if strided else 128}] input
.hbm y {dtype}[128, 48] output
.sbuf t {dtype}[128, 48]
{stage}dma.transpose t, {src_name}, queue=2
dma.copy y, t
""", x=x)
    np.testing.assert_array_equal(result.outputs["y"].view(bits.dtype), bits.T)


@pytest.mark.parametrize("target, body, message", [
    ("trn1", "dma.transpose t, x", "not available on trn1"),
    ("trn2", "dma.transpose tf, xf", "int8"),   # 2- and 4-byte dtypes only
    ("trn2", "dma.transpose t[0:64, :], x", "must be [128, 48]"),
])
def test_transpose_errors(target: str, body: str, message: str) -> None:
    src = (".hbm x bfloat16[48, 128] input\n.hbm xf int8[48, 128] input\n"
           ".sbuf t bfloat16[128, 48]\n.sbuf tf int8[128, 48]\n" + body + "\n")
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(src, "bad.s", target=target)
    assert message in info.value.render()
    assert info.value.location.line == 5


def test_compute_sums_left_to_right_in_fp32() -> None:
    rng = np.random.default_rng(2)
    a, b, c = (rng.normal(0, 1e4, (64, 96)).astype(np.float32) for _ in range(3))
    c[0, :4] = [1e-3, -1e-3, 3.0, -0.0]
    result = run(""".hbm a float32[64, 96] input
.hbm b float32[64, 96] input
.hbm c float32[64, 96] input
.hbm s float32[64, 96] output
.hbm h bfloat16[64, 96] output
.sbuf cs float32[64, 96]
.sbuf t float32[64, 96]
.sbuf th bfloat16[64, 96]
dma.copy cs, c
dma.compute t, a, b, cs, queue=1
dma.compute th, a, b, cs, queue=2
dma.copy s, t
dma.copy h, th
""", a=a, b=b, c=c)
    expected = f32(f32(a.astype(np.float64) + b) + c.astype(np.float64))
    np.testing.assert_array_equal(result.outputs["s"], expected)
    np.testing.assert_array_equal(result.outputs["h"].view(np.uint16),
                                  expected.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_accumulate_is_trn3_only_and_adds() -> None:
    src = """.hbm x float32[32, 64] input
.hbm y float32[32, 64] output
.sbuf acc float32[32, 64]
vector.memset acc, value=0.25
dma.accumulate acc, x, queue=4
dma.accumulate acc, x, queue=4
dma.copy y, acc
"""
    x = np.random.default_rng(3).normal(size=(32, 64)).astype(np.float32)
    result = run(src, target="trn3", x=x)
    np.testing.assert_array_equal(result.outputs["y"], f32(f32(0.25 + x.astype(np.float64)) + x))
    with pytest.raises(AsmError, match="not available on trn2"):
        neuronemu.assemble(src, "k.s", target="trn2")


GATHER = """.hbm table float32[1000, 64] input
.hbm ids int32[128, 1] input
.hbm rows_out float32[128, 64] output
.hbm scattered float32[1000, 64] output init=zeros
.sbuf idx int32[128, 1]
.sbuf rows float32[128, 64]
dma.copy idx, ids
dma.gather rows, table, index=idx, queue=5
dma.copy rows_out, rows
dma.scatter scattered, rows, index=idx, queue=6
"""


def test_gather_and_scatter_match_numpy_indexing() -> None:
    rng = np.random.default_rng(4)
    table = rng.normal(size=(1000, 64)).astype(np.float32)
    ids = rng.permutation(1000)[:128].astype(np.int32).reshape(128, 1)
    result = run(GATHER, table=table, ids=ids)
    np.testing.assert_array_equal(result.outputs["rows_out"], table[ids[:, 0]])
    expected = np.zeros((1000, 64), np.float32)
    expected[ids[:, 0]] = table[ids[:, 0]]
    np.testing.assert_array_equal(result.outputs["scattered"], expected)
    # an indexed transfer moves one table row per index, not the table
    assert result.timing.dma.queues["q5"].bytes == 128 * 64 * 4


def test_gather_index_out_of_range_is_located() -> None:
    ids = np.arange(128, dtype=np.int32).reshape(128, 1)
    ids[7, 0] = 1000
    with pytest.raises(RuntimeFault) as info:
        run(GATHER, ids=ids)
    text = info.value.render()
    assert "idx[7] = 1000 is not a row of 'table' (rows 0..999)" in text
    assert info.value.location.line == 8


def test_negative_int32_index_is_out_of_range() -> None:
    ids = np.arange(128, dtype=np.int32).reshape(128, 1)
    ids[3, 0] = -2
    with pytest.raises(RuntimeFault, match=r"idx\[3\] = -2"):
        run(GATHER, ids=ids)


def test_scatter_with_overlapping_rows_is_refused() -> None:
    ids = np.arange(128, dtype=np.int32).reshape(128, 1)
    ids[90, 0] = 5
    with pytest.raises(RuntimeFault) as info:
        run(GATHER, ids=ids)
    text = info.value.render()
    assert "partitions 5 and 90 of 'idx' both name row 5 of 'scattered'" in text
    assert "overlapping destination writes" in text
    assert info.value.location.line == 10


@pytest.mark.parametrize("body, message", [
    ("dma.gather rows, table, index=rows", "index must be a column"),
    ("dma.gather rows, table, index=fidx", "int32"),
    ("dma.gather rows[0:64, :], table, index=idx", "partition mismatch"),
    ("dma.copy rows, table[0:128, :], queue=16", "range [0, 15]"),
    ("dma.copy rows, table[0:128, :], dge=hw", "does not have"),
])
def test_descriptor_errors(body: str, message: str) -> None:
    src = (".target trn1\n.hbm table float32[1000, 64] input\n.sbuf idx int32[128, 1]\n"
           ".sbuf fidx float32[128, 1]\n.sbuf rows float32[128, 64]\n" + body + "\n")
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(src, "bad.s")
    assert message in info.value.render()


def test_hbm_to_hbm_and_sbuf_to_sbuf_copies_with_cast() -> None:
    x = np.random.default_rng(5).normal(size=(16, 4, 32)).astype(np.float32)
    result = run(""".hbm x float32[16, 4, 32] input
.hbm y bfloat16[16, 4, 32] output
.hbm z float32[16, 128] output
.sbuf a float32[16, 128]
.sbuf b float32[16, 128]
dma.copy y, x
dma.copy a, x
dma.copy b[:, 0:128:2], a[:, 1:128:2]
dma.copy b[:, 1:128:2], a[:, 0:128:2]
dma.copy z, b
""", x=x)
    np.testing.assert_array_equal(result.outputs["y"].view(np.uint16),
                                  x.astype(ml_dtypes.bfloat16).view(np.uint16))
    flat = x.reshape(16, 128)
    swapped = flat.copy()
    swapped[:, 0::2], swapped[:, 1::2] = flat[:, 1::2], flat[:, 0::2]
    np.testing.assert_array_equal(result.outputs["z"], swapped)
    # charged: the larger HBM side (fp32 x for HBM -> HBM), the HBM side of loads and stores,
    # the larger side of SBUF -> SBUF copies (two halves): 4 x 8 KiB in all
    assert result.timing.dma.queues["q0"].compressed_bytes == 4 * 16 * 128 * 4


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "int32", "float8_e4m3"])
def test_gather_and_scatter_rows_of_each_width_match_numpy(dtype: str) -> None:
    """Rows move as raw 16-bit words for 2- and 4-byte dtypes (byte by byte for 1-byte ones),
    from a column window of the table into a column window of the tile and back."""
    np_type = {"bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "int32": np.int32,
               "float8_e4m3": ml_dtypes.float8_e4m3}[dtype]
    rng = np.random.default_rng(11)
    table = rng.standard_normal((300, 24)).astype(np.float32) * 50
    table = table.astype(np_type)
    idx = rng.permutation(300)[:96].astype(np.int32).reshape(96, 1)
    source = f""".hbm table {dtype}[300, 24] input
.hbm idx int32[96, 1] input
.hbm got {dtype}[96, 10] output
.hbm back {dtype}[300, 24] output init=zeros
.sbuf rows {dtype}[96, 16]
.sbuf ids int32[96, 1]
dma.copy ids, idx
vector.memset rows, value=0.0
dma.gather rows[:, 3:13], table[:, 5:15], index=ids, queue=5
dma.copy got, rows[:, 3:13]
dma.scatter back[:, 7:17], rows[:, 3:13], index=ids, queue=6
"""
    out = neuronemu.run(neuronemu.assemble(source, "t.s"),
                        inputs={"table": table, "idx": idx}).outputs
    want = table[idx[:, 0], 5:15]
    np.testing.assert_array_equal(out["got"].view(np.uint8), want.view(np.uint8))
    back = np.zeros((300, 24), dtype=np_type)
    back[idx[:, 0], 7:17] = want
    np.testing.assert_array_equal(out["back"].view(np.uint8), back.view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_accumulate_broadcast_and_window_match_numpy(dtype: str) -> None:
    """fp32 tiles add in place row by row, other dtypes through the general path: the same
    fp32 sum, then one rounding; a [1, N] source adds to every partition."""
    src = f""".hbm x float32[16, 40] input
.hbm b float32[1, 24] input
.hbm y {dtype}[16, 40] output
.sbuf acc {dtype}[16, 40]
dma.copy acc, x
dma.accumulate acc[2:14, 8:32], b, queue=4
dma.accumulate acc[0:16, 0:24], acc[0:16, 16:40], queue=5
dma.copy y, acc
"""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(16, 40)).astype(np.float32)
    brow = rng.normal(size=(1, 24)).astype(np.float32)
    np_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    acc = x.astype(np_type).astype(np.float32)
    acc[2:14, 8:32] = (acc[2:14, 8:32] + brow).astype(np_type).astype(np.float32)
    acc[:, 0:24] = (acc[:, 0:24] + acc[:, 16:40].copy()).astype(np_type).astype(np.float32)
    result = run(src, target="trn3", x=x, b=brow)
    np.testing.assert_array_equal(result.outputs["y"].astype(np.float32), acc)
