"""select_reduce, match_replace8, sequence_bounds, nonzero_with_count and n_gather against numpy
references written from the NKI documentation (the numpy equivalents the ISA pages give)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault


def run(src: str, target: str = "trn2", **inputs):
    return neuronemu.run(neuronemu.assemble(src, "kernel.s", target=target), inputs=inputs)


SELECT = """.hbm x float32[8, 40] input
.hbm m uint8[8, 40] input
.hbm f float32[8, 1] input
.sbuf xs float32[8, 40]
.sbuf ms uint8[8, 40]
.sbuf fs float32[8, 1]
.sbuf out float32[8, 40]
.sbuf best float32[8, 1]
dma.copy xs, x
dma.copy ms, m
dma.copy fs, f
vector.select_reduce out, ms, xs, on_false={false}, reduce_res=best, reverse_pred={reverse}
"""


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("on_false", ["-7.5", "fs"])
def test_select_reduce(reverse: bool, on_false: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 40)).astype(np.float32)
    m = rng.integers(0, 3, size=(8, 40)).astype(np.uint8)  # 2 is true as well as 1
    f = rng.normal(size=(8, 1)).astype(np.float32)
    result = run(SELECT.format(false=on_false, reverse=str(reverse).lower()), x=x, m=m, f=f)
    predicate = (m != 0) != reverse
    other = np.float32(-7.5) if on_false == "-7.5" else f
    expected = np.where(predicate, x, other).astype(np.float32)
    np.testing.assert_array_equal(result.tiles["out"], expected)
    np.testing.assert_array_equal(result.tiles["best"], expected.max(axis=1, keepdims=True))


def test_select_reduce_rejects_float_predicate() -> None:
    src = SELECT.format(false="0.0", reverse="false").replace(
        "vector.select_reduce out, ms,", "vector.select_reduce out, xs,")
    with pytest.raises(AsmError, match="predicate has dtype float32"):
        neuronemu.assemble(src, "k.s")


def match_replace_reference(data, vals, imm):
    data = data.copy()
    where = np.full(vals.shape, 0xFFFFFFFF, dtype=np.uint64)
    for p in range(data.shape[0]):
        for k in range(7, -1, -1):
            hits = np.flatnonzero(data[p] == vals[p, k])
            if hits.size:
                data[p, hits[0]] = imm
                where[p, k] = hits[0]
    return data, where.astype(np.uint32)


def test_match_replace8_with_duplicates_and_misses() -> None:
    rng = np.random.default_rng(1)
    data = rng.integers(0, 20, size=(4, 64)).astype(np.float32)
    vals = np.empty((4, 8), np.float32)
    for p in range(4):
        vals[p] = rng.choice(data[p], 8)
    vals[0, 3] = vals[0, 5] = data[0, np.argmax(np.bincount(data[0].astype(int)))]  # duplicate
    vals[1, 0] = 99.0  # does not occur
    result = run(""".hbm d float32[4, 64] input
.hbm v float32[4, 8] input
.sbuf ds float32[4, 64]
.sbuf vs float32[4, 8]
.sbuf out float32[4, 64]
.sbuf idx uint32[4, 8]
dma.copy ds, d
dma.copy vs, v
vector.match_replace8 out, ds, vs, imm=-1.0, dst_idx=idx
""", d=data, v=vals)
    expected, where = match_replace_reference(data, vals, np.float32(-1.0))
    np.testing.assert_array_equal(result.tiles["out"], expected)
    np.testing.assert_array_equal(result.tiles["idx"], where)
    assert result.tiles["idx"][1, 0] == 0xFFFFFFFF


def sequence_bounds_reference(sequence):
    # the numpy equivalent from the nki.isa.sequence_bounds page
    n = len(sequence)
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    lo[0] = 0 if sequence[0] != 0 else n
    for i in range(1, n):
        lo[i] = n if sequence[i] == 0 else lo[i - 1] if sequence[i] == sequence[i - 1] else i
    hi[-1] = n if sequence[-1] != 0 else -1
    for i in range(n - 2, -1, -1):
        hi[i] = -1 if sequence[i] == 0 else hi[i + 1] if sequence[i] == sequence[i + 1] else i + 1
    return np.vstack((lo, hi))


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_sequence_bounds(dtype: str) -> None:
    ids = np.array([[1, 1, 1, 2, 2, 0, 0, 3, 3, 3, 3, 1, 0, 4, 4, 4]], dtype=dtype)
    result = run(f""".hbm s {dtype}[1, 16] input
.sbuf ids {dtype}[1, 16]
.sbuf b {dtype}[1, 2, 16]
dma.copy ids, s
gpsimd.sequence_bounds b, ids
""", s=ids)
    np.testing.assert_array_equal(result.tiles["b"][0], sequence_bounds_reference(ids[0]))


def test_sequence_bounds_shape_error() -> None:
    with pytest.raises(AsmError, match="dst must have 2 x 16 = 32 elements per partition"):
        neuronemu.assemble(".sbuf ids int32[1, 16]\n.sbuf b int32[1, 16]\n"
                           "gpsimd.sequence_bounds b, ids\n", "k.s")


def test_nonzero_with_count_only_on_core_partitions() -> None:
    rng = np.random.default_rng(2)
    x = np.where(rng.random((128, 24)) < 0.3, rng.normal(size=(128, 24)), 0.0).astype(np.float32)
    x[0, 5] = -0.0
    x[16, 2] = np.nan
    result = run(""".hbm x float32[128, 24] input
.sbuf xs float32[128, 24]
.sbuf out int32[128, 25]
dma.copy xs, x
gpsimd.memset out, value=7
gpsimd.nonzero_with_count out, xs, index_offset=100, padding_val=-5
""", x=x)
    out = result.tiles["out"]
    for p in range(128):
        if p % 16:
            assert np.all(out[p] == 7)  # not a core's partition: untouched
            continue
        nz = np.flatnonzero(x[p] != 0)  # -0.0 is zero, NaN is not
        expected = np.full(25, -5)
        expected[:nz.size] = nz + 100
        expected[24] = nz.size
        np.testing.assert_array_equal(out[p], expected)


def test_nonzero_with_count_needs_trn2() -> None:
    with pytest.raises(AsmError, match="not available on trn1"):
        neuronemu.assemble(".sbuf x float32[128, 8]\n.sbuf o int32[128, 9]\n"
                           "gpsimd.nonzero_with_count o, x\n", "k.s", target="trn1")


N_GATHER = """.hbm x float32[16, 64] input
.hbm i {itype}[16, 20] input
.sbuf xs float32[16, 64]
.sbuf idx {itype}[16, 20]
.sbuf out float32[16, 20]
dma.copy xs, x
dma.copy idx, i
gpsimd.n_gather out, xs, indices=idx
"""


def test_n_gather_matches_take_along_axis() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 64)).astype(np.float32)
    x[3, 7] = -0.0
    i = rng.integers(0, 64, size=(16, 20)).astype(np.uint32)
    i[3, 0] = 7
    result = run(N_GATHER.format(itype="uint32"), x=x, i=i)
    expected = np.take_along_axis(x, i.astype(np.int64), axis=1)
    np.testing.assert_array_equal(result.tiles["out"].view(np.uint32), expected.view(np.uint32))


def test_n_gather_out_of_range_index() -> None:
    i = np.zeros((16, 20), np.int32)
    i[5, 9] = 64
    with pytest.raises(RuntimeFault) as info:
        run(N_GATHER.format(itype="int32"), i=i)
    assert "idx[5, 9] = 64 is not an element of 'xs' (0..63 per partition)" in info.value.render()
    assert info.value.location.line == 8
