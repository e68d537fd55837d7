"""One lowering at a time: small kernels whose results are computed by hand or exactly by numpy
(every value below is exact in fp32 / bf16, so equality is the right check)."""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki

BF16 = ml_dtypes.bfloat16
A = (np.arange(128 * 64, dtype=np.float32).reshape(128, 64) % 13) - 6   # small exact integers


def out_like(x, shape=None, dtype=None):
    return nl.ndarray(shape or x.shape, dtype or x.dtype, buffer=nl.shared_hbm)


def test_nl_matmul_transposes_x_on_tensore_when_asked_to():
    def kernel(x, y):
        out = out_like(x, (128, 64), nl.float32)
        nl.store(out, nl.matmul(nl.load(x), nl.load(y)))          # x [M=128, K=128]
        return out

    x = (np.arange(128 * 128) % 5 - 2).reshape(128, 128).astype(np.float32)
    y = (np.arange(128 * 64) % 3 - 1).reshape(128, 64).astype(np.float32)
    run = nki.run(kernel, x, y)
    np.testing.assert_array_equal(run.outputs, x @ y)    # small integers: exact in fp32
    assert run.result.instructions["tensor"] == 2         # the transpose, then the matmul


def test_nl_transpose_negative_and_reversed_scalar_operands():
    def kernel(x):
        t = nl.load(x)
        tt = nl.ndarray((64, 128), x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=tt, data=t)
        o1 = out_like(x, (64, 128))
        nl.store(o1, nl.negative(nl.copy(tt)))
        o2 = out_like(x)
        nl.store(o2, 10.0 - t)                       # tensor_scalar with reverse0
        o3 = out_like(x)
        nl.store(o3, nl.greater(t, 0.0))             # comparisons give 1.0 / 0.0
        return o1, o2, o3

    o1, o2, o3 = nki.simulate(kernel)(A)
    np.testing.assert_array_equal(o1, -A.T)
    np.testing.assert_array_equal(o2, 10.0 - A)
    np.testing.assert_array_equal(o3, (A > 0).astype(np.float32))


def test_reductions_of_trailing_axes_and_mean():
    def kernel(x):
        t = nl.load(x)                                   # [128, 4, 16]
        s = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=2)
        m = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=m, op=nl.max, data=t, axis=(1, 2), negate=True)
        o1, o2, o3 = out_like(x, (128, 4)), out_like(x, (128, 1)), out_like(x, (128, 1))
        nl.store(o1, s)
        nl.store(o2, m)
        nl.store(o3, nl.mean(t, axis=(1, 2)))
        return o1, o2, o3

    x = A.reshape(128, 4, 16)
    o1, o2, o3 = nki.simulate(kernel)(x)
    np.testing.assert_array_equal(o1, x.sum(axis=2))
    np.testing.assert_array_equal(o2[:, 0], -x.max(axis=(1, 2)))
    np.testing.assert_allclose(o3[:, 0], x.mean(axis=(1, 2)), rtol=2**-22)


def test_reducing_a_non_trailing_axis_is_refused():
    def kernel(x):
        t = nl.load(x)
        s = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=1)

    with pytest.raises(nki.NkiError, match="must be the last free axes"):
        nki.trace(kernel, A.reshape(128, 4, 16))


def test_iota_affine_select_memset_and_engine_choices():
    def kernel(x):
        idx = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.iota(dst=idx, pattern=[[1, 64]], offset=3, channel_multiplier=100)
        sel = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        ones = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=ones, value=1.0, engine=nisa.gpsimd_engine)
        # keep where p - i >= 0 (lower triangle), else -5
        nisa.affine_select(dst=sel, pattern=[[-1, 64]], offset=0, channel_multiplier=1,
                           on_true_tile=ones, on_false_value=-5.0, cmp_op=nl.greater_equal)
        cp = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=cp, src=sel, engine=nisa.scalar_engine)
        o1, o2 = out_like(x, (128, 64), nl.float32), out_like(x, (128, 64), nl.float32)
        nl.store(o1, idx)
        nl.store(o2, cp)
        return o1, o2

    run = nki.run(kernel, A)
    o1, o2 = run.outputs
    p, i = np.mgrid[0:128, 0:64]
    np.testing.assert_array_equal(o1, 3 + 100 * p + i)
    np.testing.assert_array_equal(o2, np.where(p - i >= 0, 1.0, -5.0))
    assert run.result.instructions["gpsimd"] == 3 and run.result.instructions["scalar"] == 1


def _pattern_values(pattern, partitions, offset, channel_multiplier):
    """NKI's iota pseudo code: nested loops over the pattern's dims, outermost first."""
    values = np.zeros((partitions, math.prod(n for _, n in pattern)), np.int64)
    for p in range(partitions):
        for k, index in enumerate(itertools.product(*(range(n) for _, n in pattern))):
            values[p, k] = offset + p * channel_multiplier + sum(
                i * s for i, (s, _) in zip(index, pattern))
    return values


@pytest.mark.parametrize("pattern", [[[0, 1], [0, 4], [128, 32]], [[1, 4], [4, 16]],
                                     [[3, 2], [0, 4], [1, 8]], [[-2, 8], [1, 8]]])
def test_iota_and_affine_select_with_steps_that_do_not_nest(pattern):
    shape = (128, math.prod(n for _, n in pattern))

    def kernel(x):
        idx = nl.ndarray((128, 4, shape[1] // 4), nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=idx, pattern=pattern, offset=5, channel_multiplier=3)
        data = nl.ndarray(shape, nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=data, value=2.0)
        sel = nl.ndarray(shape, nl.float32, buffer=nl.sbuf)
        nisa.affine_select(dst=sel, pattern=pattern, offset=-40, channel_multiplier=1,
                           on_true_tile=data, on_false_value=-1.0, cmp_op=nl.greater_equal)
        o1 = nl.ndarray((128, shape[1]), nl.int32, buffer=nl.shared_hbm)
        o2 = nl.ndarray(shape, nl.float32, buffer=nl.shared_hbm)
        nl.store(o1, idx.reshape((128, shape[1])))
        nl.store(o2, sel)
        return o1, o2

    o1, o2 = nki.run(kernel, A).outputs
    np.testing.assert_array_equal(o1, _pattern_values(pattern, 128, 5, 3))
    np.testing.assert_array_equal(
        o2, np.where(_pattern_values(pattern, 128, -40, 1) >= 0, 2.0, -1.0))


def test_iota_patterns_of_too_many_runs_are_refused():
    def too_many(x):
        idx = nl.ndarray((128, 1024), nl.float32, buffer=nl.sbuf)
        nisa.iota(dst=idx, pattern=[[1, 512], [0, 2]], offset=0)

    with pytest.raises(nki.NkiUnsupported, match="makes 512 runs of 2 values"):
        nki.trace(too_many, A)


def test_dma_transpose_and_accumulate_on_trn3():
    def kernel(x, y):
        t = nl.ndarray((64, 128), x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=x)
        acc = nl.load(y)
        nisa.dma_compute(dst=acc, srcs=[acc, t], reduce_op=nl.add)   # dma.accumulate
        out = out_like(y)
        nl.store(out, acc)
        return out

    x = A.astype(BF16)
    y = np.ones((64, 128), BF16)
    out = nki.simulate(kernel, target="trn3")(x, y)
    np.testing.assert_array_equal(out.astype(np.float32), A.T + 1)
    assert "dma.accumulate" in nki.trace(kernel, x, y, target="trn3").asm


def test_scalar_arguments_pass_through_and_kernels_see_python_values():
    def kernel(x, scale, shift=0.5):
        out = out_like(x)
        nl.store(out, nl.load(x) * scale + shift)
        return out

    np.testing.assert_array_equal(nki.simulate(kernel)(A, 2.0, shift=1.0), A * 2 + 1)


def test_tensor_scalar_reduce_and_partition_reduce():
    def kernel(x):
        t = nl.load(x)
        y = nl.ndarray(t.shape, nl.float32, buffer=nl.sbuf)
        rowmax = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=y, data=t, op0=nl.multiply, operand0=3.0,
                                  reduce_op=nl.max, reduce_res=rowmax)
        colsum = nl.ndarray((1, 64), nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=colsum, op=nl.add, data=t)
        o1, o2, o3 = out_like(x), out_like(x, (128, 1)), out_like(x, (1, 64))
        nl.store(o1, y)
        nl.store(o2, rowmax)
        nl.store(o3, colsum)
        return o1, o2, o3

    o1, o2, o3 = nki.simulate(kernel)(A)
    np.testing.assert_array_equal(o1, A * 3)
    np.testing.assert_array_equal(o2[:, 0], (A * 3).max(axis=1))
    np.testing.assert_array_equal(o3[0], A.sum(axis=0))   # small integers: exact


def sharded_rows(x):
    """Each of the grid's programs adds 1 to its share of x's rows; with more programs than
    rows, a program's share is empty (nl.ds(k, 0)) and it issues nothing for it."""
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    n, programs, pid = x.shape[0], nl.num_programs(0), nl.program_id(0)
    per = n // programs
    rows = n - per * pid if pid == programs - 1 else per
    mine = x[nl.ds(per * pid, rows)]
    assert mine.shape == (rows, x.shape[1])
    if rows > 0:
        t = nl.ndarray(mine.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=mine)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out[nl.ds(per * pid, rows)], src=t)
    return out


def test_an_empty_view_is_legal_until_an_instruction_uses_it():
    x = A[0:1]
    got = nki.run(sharded_rows, x, grid=(2,)).outputs
    np.testing.assert_array_equal(got, x + 1)

    def uses_it(x):
        t = nl.ndarray((1, 64), x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:0], src=x[0:0])

    with pytest.raises(nki.NkiError, match=r"an empty view \(shape \[0, 64\]\) cannot be an "
                                           "instruction's operand") as e:
        nki.trace(uses_it, x)
    assert e.value.location.line == uses_it.__code__.co_firstlineno + 2


def fold_through_hbm(x):
    """[8, 16] -> [4, 32] by writing to a scratch HBM tensor and reading it back reshaped
    (the tensor is then used in two shapes)."""
    t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    scratch = nl.ndarray(x.shape, x.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=scratch, src=t)
    folded = scratch.reshape((x.shape[0] // 2, x.shape[1] * 2))
    u = nl.ndarray((folded.shape[0], 16), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=folded[:, 8:24])
    out = nl.ndarray(u.shape, x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out


def test_an_hbm_tensor_used_in_two_shapes():
    x = A[0:8, 0:16]
    got = nki.simulate(fold_through_hbm)(x)
    np.testing.assert_array_equal(got, x.reshape(4, 32)[:, 8:24])


def test_shared_constant_from_a_npy_file(tmp_path):
    table = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5
    np.save(tmp_path / "table.npy", table)

    def kernel(x):
        c = nl.shared_constant(str(tmp_path / "table.npy"))
        t = nl.ndarray(c.shape, c.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=c)
        out = nl.ndarray(c.shape, c.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_array_equal(nki.simulate(kernel)(A), table)

    def missing(x):
        nl.shared_constant(str(tmp_path / "nothing.npy"))

    with pytest.raises(nki.NkiError, match="shared_constant\\(\\): no file"):
        nki.trace(missing, A)


def row_round_trip(x):
    """x [1, N] into partition 0 of a tile and back out of it, both sides indexed [0, :]."""
    n = x.shape[1]
    t = nl.ndarray((128, n), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(src=x[0, :], dst=t[0, :])
    nisa.tensor_scalar(dst=t[0:1, :], data=t[0:1, :], op0=nl.multiply, operand0=3.0)
    out = nl.ndarray((1, n), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(src=t[0, :], dst=out[0, :])
    return out


def test_a_tile_row_and_an_hbm_row_indexed_alike_copy_as_one_row():
    x = A[0:1]
    np.testing.assert_array_equal(nki.simulate(row_round_trip)(x), 3 * x)


def picked_row(x, i):
    """hbm[i, :] (shape [N]) into a [1, N] tile and back into row i of a copy of x, as
    nki-library's attention_tkg loads its position ids."""
    n = x.shape[1]
    t = nl.ndarray((1, n), x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(t, x[i, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
    out = nl.ndarray((1, n), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(out[0, :], t)
    return out


def test_an_hbm_row_copies_into_a_one_partition_tile():
    np.testing.assert_array_equal(nki.simulate(picked_row)(A[0:8], 5), A[5:6] + 1)


def column_to_row(x):
    """A [N, 1, 1, 1] int32 column of HBM turned into a [1, 1, 1, N] SBUF row by one 4-D DMA
    transpose (NKI's permutation (3, 1, 2, 0) with size-1 middle dims)."""
    n = x.shape[0]
    row = nl.ndarray((1, n), nl.int32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=row.ap([[n, 1], [1, 1], [1, 1], [1, n]], offset=0),
                       src=x.ap([[x.shape[1], n], [1, 1], [1, 1], [1, 1]], offset=1))
    out = nl.ndarray((1, n), nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=row)
    return out


def test_dma_transpose_of_4_byte_values_and_size_1_middle_dims():
    x = np.arange(96 * 3, dtype=np.int32).reshape(96, 3) * 7 - 500
    got = nki.simulate(column_to_row, target="trn2")(x)
    np.testing.assert_array_equal(got, x[:, 1].reshape(1, 96))


def gathered_sum(table, idx):
    """dst = table[idx[:, 0]] + table[idx[:, 1]] with the gathers as dma_compute sources."""
    p, f = idx.shape[0], table.shape[1]
    ids = nl.ndarray((p, 2), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=idx)
    acc = nl.ndarray((p, f), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=acc, src=table.ap([[f, p], [1, f]], offset=0,
                                        vector_offset=ids[:, 0:1], indirect_dim=0))
    nisa.dma_compute(dst=acc, srcs=[table.ap([[f, p], [1, f]], offset=0,
                                             vector_offset=ids[:, 1:2], indirect_dim=0), acc],
                     reduce_op=nl.add)
    out = nl.ndarray((p, f), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out


def test_a_vector_offset_source_of_dma_compute_is_gathered_then_summed():
    rng = np.random.default_rng(3)
    table = rng.standard_normal((50, 16)).astype(np.float32)
    idx = rng.integers(0, 50, size=(32, 2)).astype(np.int32)
    got = nki.simulate(gathered_sum)(table, idx)
    want = table[idx[:, 0]].astype(np.float64) + table[idx[:, 1]]
    np.testing.assert_array_equal(got, want.astype(np.float32))


def blocks_transposed(x):
    """NKI's 4-D DMA transpose: dst[d, b, c, a] = src[a, b, c, d] (permutation (3, 1, 2, 0))."""
    a, b, c, d = x.shape
    t = nl.ndarray((d, b, c, a), x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    out = nl.ndarray((d, b, c, a), x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_dma_transpose_of_a_4d_tile_swaps_its_first_and_last_dims():
    x = (np.arange(32 * 2 * 3 * 16, dtype=np.float32).reshape(32, 2, 3, 16) - 700).astype(BF16)
    got = nki.simulate(blocks_transposed, target="trn2")(x)
    np.testing.assert_array_equal(got, np.transpose(x, (3, 1, 2, 0)))
    assert nki.trace(blocks_transposed, x, target="trn2").asm.count("dma.transpose") == 6


def gathered_rows_transposed(table, idx):
    """The indirect DMA transpose: rows idx[p] of table, transposed (dst[d, p] = table[idx[p], d])."""
    p, d = idx.shape[0], table.shape[1]
    ids = nl.ndarray((p, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ids, src=idx)
    t = nl.ndarray((d, p), table.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=table.ap([[d, p], [1, d]], offset=0, vector_offset=ids,
                                           indirect_dim=0))
    out = nl.ndarray((d, p), table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_dma_transpose_of_a_vector_offset_source_transposes_the_gathered_rows():
    rng = np.random.default_rng(9)
    table = rng.standard_normal((40, 24)).astype(BF16)
    idx = rng.integers(0, 40, size=(16, 1)).astype(np.int32)
    got = nki.simulate(gathered_rows_transposed, target="trn2")(table, idx)
    np.testing.assert_array_equal(got, table[idx[:, 0]].T)
