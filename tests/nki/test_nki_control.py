"""Run-time control flow and dynamic addressing in neuronemu.nki: nl.fori_loop, nl.while_loop,
nl.dynamic_range and registers run as device loops (the body traced once, not unrolled), and
addresses take registers (slices, nl.ds, .ap(scalar_offset=)) or index tiles
(.ap(vector_offset=)); each kernel checked against a numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.nki._trace import NkiUnsupported

RNG = np.random.default_rng(11)


def _sb(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


def _hbm_like(x):
    return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)


def _zero_fill(out):
    rows, cols = out.shape
    z = _sb((min(rows, 128), cols), out.dtype)
    nisa.memset(dst=z, value=0.0)
    for r in range(0, rows, 128):
        n = min(128, rows - r)
        nisa.dma_copy(dst=out[r:r + n, :], src=z[0:n, :])


def doubled_blocks(x, n):
    """out[:, 64i : 64i + 64] = 2 x[:, 64i : 64i + 64] for i < n (n read at run time)."""
    out = _hbm_like(x)
    _zero_fill(out)
    n_sb = _sb((1, 1), nl.int32)
    nisa.dma_copy(dst=n_sb, src=n)
    count = nisa.register_alloc(n_sb)

    def body(i):
        t = _sb((128, 64))
        nisa.dma_copy(dst=t, src=x[:, nl.ds(i * 64, 64)])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[:, i * 64:i * 64 + 64], src=t)

    nl.fori_loop(0, count, body)
    return out


@pytest.mark.parametrize("n", [0, 1, 3])
def test_fori_loop_with_a_run_time_bound(n):
    x = RNG.standard_normal((128, 256)).astype(np.float32)
    bound = np.array([[n]], np.int32)
    run = nki.run(doubled_blocks, x, bound)
    want = np.zeros_like(x)
    want[:, :64 * n] = 2 * x[:, :64 * n]
    np.testing.assert_array_equal(run.outputs, want)
    # traced once: one multiply in the program, executed n times
    assert run.asm.count("vector.tensor_scalar") == 1
    assert run.result.instructions["vector"] == 1 + n   # + the memset of the zero fill


def countdown_sum(val, count):
    """acc = val added count times, by a register-conditioned loop (count read at run time)."""
    v = _sb((1, 4))
    nisa.dma_copy(dst=v, src=val)
    acc = _sb((1, 4))
    nisa.memset(dst=acc, value=0.0)
    left = _sb((1, 1), nl.int32)
    nisa.dma_copy(dst=left, src=count)
    cond = nisa.register_alloc(left)

    def body(r):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=v, op=nl.add)
        nisa.tensor_scalar(dst=left, data=left, op0=nl.subtract, operand0=1.0)
        nisa.register_load(r, left)
        return r

    nl.while_loop(cond, body)
    out = _hbm_like(val)
    nisa.dma_copy(dst=out, src=acc)
    return out


@pytest.mark.parametrize("n", [0, 5])
def test_while_loop_tests_before_each_iteration(n):
    val = np.array([[0.5, -1.0, 2.0, 3.25]], np.float32)
    got = nki.simulate(countdown_sum)(val, np.array([[n]], np.int32))
    np.testing.assert_array_equal(got, n * val)


def row_blocks_plus_one(x):
    out = _hbm_like(x)
    for i in nl.dynamic_range(x.shape[0] // 128):
        t = _sb((128, x.shape[1]))
        nisa.dma_copy(dst=t, src=x[nl.ds(i * 128, 128), :])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=out[nl.ds(i * 128, 128), :], src=t)
    return out


def test_dynamic_range_over_hbm_row_blocks():
    x = RNG.standard_normal((512, 32)).astype(np.float32)
    run = nki.run(row_blocks_plus_one, x)
    np.testing.assert_array_equal(run.outputs, x + 1)
    assert "ctrl.blt" in run.asm and run.asm.count("vector.tensor_scalar") == 1


def window_at(x, start):
    """out = x[:, s : s + 16] with s read at run time, by .ap(scalar_offset=) of a [1, 1] tile
    and of a register."""
    s_sb = _sb((1, 1), nl.int32)
    nisa.dma_copy(dst=s_sb, src=start)
    xs = _sb(x.shape)
    nisa.dma_copy(dst=xs, src=x)
    a, b = _sb((128, 16)), _sb((128, 16))
    w = x.shape[1]
    nisa.tensor_copy(dst=a, src=xs.ap([[w, 128], [1, 16]], scalar_offset=s_sb, indirect_dim=1))
    reg = nisa.register_alloc(s_sb)
    nisa.tensor_copy(dst=b, src=xs.ap([[w, 128], [1, 16]], scalar_offset=reg, indirect_dim=1))
    out_a = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    out_b = nl.ndarray((128, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out_a, src=a)
    nisa.dma_copy(dst=out_b, src=b)
    return out_a, out_b


def test_ap_scalar_offset_from_a_tile_and_a_register():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    a, b = nki.simulate(window_at)(x, np.array([[21]], np.int32))
    np.testing.assert_array_equal(a, x[:, 21:37])
    np.testing.assert_array_equal(b, x[:, 21:37])


def column_window(x, col):
    """out[p, j, k] = x[p + 128 j, col + k]: the scalar offset moves along dim 1 of x's own
    shape (stride 1, columns), whatever the steps of the pattern (as nki-library's
    find_nonzero_indices reads a column range)."""
    c_sb = _sb((1, 1), nl.int32)
    nisa.dma_copy(dst=c_sb, src=col)
    t, c = x.shape
    w = _sb((128, t // 128, 4))
    nisa.dma_copy(dst=w, src=x.ap([[c, 128], [c * 128, t // 128], [1, 4]], offset=0,
                                  scalar_offset=c_sb, indirect_dim=1))
    out = nl.ndarray((128, t // 128, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=w)
    return out


def test_a_scalar_offset_is_scaled_by_the_stride_of_the_tensors_own_dim():
    x = RNG.standard_normal((256, 16)).astype(np.float32)
    got = nki.simulate(column_window)(x, np.array([[9]], np.int32))
    want = x.reshape(2, 128, 16).transpose(1, 0, 2)[:, :, 9:13]
    np.testing.assert_array_equal(got, want)


def block_store(x, block):
    """out (64 rows, zero) with x's 32 rows stored at row block ``block`` (read at run time)
    by .ap(scalar_offset=); a block outside out is skipped (oob_mode.skip)."""
    b_sb = _sb((1, 1), nl.int32)
    nisa.dma_copy(dst=b_sb, src=block)
    t = _sb(x.shape)
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray((64, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    _zero_fill(out)
    f = x.shape[1]
    nisa.dma_copy(dst=out.ap([[f, 32], [1, f]], scalar_offset=b_sb, indirect_dim=0),
                  src=t, oob_mode=nisa.oob_mode.skip)
    return out


@pytest.mark.parametrize("block, rows", [(32, slice(32, 64)), (0, slice(0, 32)),
                                         (64, None), (-40, None)])
def test_a_scalar_offset_copy_wholly_outside_is_skipped(block, rows):
    x = RNG.standard_normal((32, 8)).astype(np.float32)
    expected = np.zeros((64, 8), np.float32)
    if rows is not None:
        expected[rows] = x
    got = nki.simulate(block_store)(x, np.array([[block]], np.int32))
    np.testing.assert_array_equal(got, expected)


def gather_then_scatter(table, idx, dest):
    p, f = idx.shape[0], table.shape[1]
    ids = _sb((p, 1), nl.int32)
    nisa.dma_copy(dst=ids, src=idx)
    rows = _sb((p, f))
    nisa.dma_copy(dst=rows, src=table.ap([[f, p], [1, f]], vector_offset=ids, indirect_dim=0))
    out = nl.ndarray((p, f), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    scattered = nl.ndarray(dest.shape, dtype=dest.dtype, buffer=nl.shared_hbm)
    _zero_fill(scattered)
    nisa.dma_copy(dst=scattered.ap([[f, p], [1, f]], vector_offset=ids, indirect_dim=0),
                  src=rows)
    return out, scattered


def test_ap_vector_offset_gathers_and_scatters_rows():
    table = RNG.standard_normal((300, 32)).astype(np.float32)
    idx = RNG.permutation(300)[:128].astype(np.int32).reshape(128, 1)
    dest = np.zeros((300, 32), np.float32)
    run = nki.run(gather_then_scatter, table, idx, dest)
    rows, scattered = run.outputs
    np.testing.assert_array_equal(rows, table[idx[:, 0]])
    want = np.zeros_like(dest)
    want[idx[:, 0]] = table[idx[:, 0]]
    np.testing.assert_array_equal(scattered, want)
    assert "dma.gather" in run.asm and "dma.scatter" in run.asm


def gather_skipping(table, idx):
    """Rows named by idx; a partition whose index is outside the table keeps the memset
    value (oob_mode.skip, as nki-library's MoE token gathers use it for dropped tokens)."""
    p, f = idx.shape[0], table.shape[1]
    ids = _sb((p, 1), nl.int32)
    nisa.dma_copy(dst=ids, src=idx)
    rows = _sb((p, f))
    nisa.memset(dst=rows, value=-7.0)
    nisa.dma_copy(dst=rows, src=table.ap([[f, p], [1, f]], vector_offset=ids, indirect_dim=0),
                  oob_mode=nisa.oob_mode.skip)
    out = nl.ndarray((p, f), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=rows)
    return out


def test_a_vector_offset_gather_with_oob_skip_leaves_outside_partitions():
    table = RNG.standard_normal((300, 32)).astype(np.float32)
    idx = RNG.integers(-50, 350, size=(128, 1)).astype(np.int32)
    want = np.full((128, 32), -7.0, np.float32)
    inside = (idx[:, 0] >= 0) & (idx[:, 0] < 300)
    want[inside] = table[idx[inside, 0]]
    assert 0 < inside.sum() < 128
    np.testing.assert_array_equal(nki.simulate(gather_skipping)(table, idx), want)


def _located(kernel, match, *arrays, offset):
    arrays = arrays or (np.zeros((128, 64), np.float32),)
    with pytest.raises(NkiUnsupported, match=match) as e:
        nki.trace(kernel, *arrays)
    assert e.value.location.line == kernel.__code__.co_firstlineno + offset
    return e.value


def test_registers_used_as_python_values_are_located_errors():
    def branch(x):
        r = nisa.register_alloc(3)
        if r:
            pass

    def python_range(x):
        r = nisa.register_alloc(3)
        for _ in range(r):
            pass

    def product(x):
        r = nisa.register_alloc(3)
        nisa.dma_copy(dst=_sb((128, 1)), src=x[:, nl.ds(r * r, 1)])

    err = _located(branch, r"the truth value \(if/while\) of a register", offset=2)
    assert "nl.while_loop" in str(err)
    _located(python_range, "a Python index", offset=2)
    _located(product, "a register times a register", offset=2)


def test_break_out_of_a_device_loop_is_a_located_error():
    def k(x):
        for i in nl.dynamic_range(4):
            break

    _located(k, "break out of an nl.dynamic_range loop", offset=1)


def test_psum_accumulation_in_a_device_loop_must_say_accumulate():
    def k(x):
        ps = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        a = _sb((128, 128))
        b = _sb((128, 64))

        def body(i):
            nisa.nc_matmul(dst=ps, stationary=a, moving=b)

        nl.fori_loop(0, 4, body)

    _located(k, "accumulate=None in a device loop", offset=6)


def gather_half_rows_scatter_elements(table, idx, flat):
    """Partial rows: columns [h, 2h) of the rows idx names (a sharded output's half, as MoE
    kernels read tokens); single elements: flat[idx[p]] = p-th value (a 1-D scatter)."""
    p, h = idx.shape[0], table.shape[1] // 2
    ids = _sb((p, 1), nl.int32)
    nisa.dma_copy(dst=ids, src=idx)
    half = _sb((p, h))
    nisa.dma_copy(dst=half, src=table.ap([[2 * h, p], [1, h]], offset=h, vector_offset=ids,
                                         indirect_dim=0))
    out = nl.ndarray((p, h), dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=half)
    values = _sb((p, 1))
    nisa.tensor_copy(dst=values, src=half[:, 0:1])
    scattered = nl.ndarray(flat.shape, dtype=flat.dtype, buffer=nl.shared_hbm)
    zero = _sb((1, flat.shape[0]))
    nisa.memset(dst=zero, value=0.0)
    nisa.dma_copy(dst=scattered.reshape((1, flat.shape[0])), src=zero)
    nisa.dma_copy(dst=scattered.ap([[7, p], [1, 1]], offset=0, vector_offset=ids,
                                   indirect_dim=0), src=values)
    return out, scattered


def test_ap_vector_offset_moves_parts_of_rows_and_single_elements():
    """The partition pair's step is replaced by idx[p] times the tensor's own dim-0 stride
    (7 here is ignored, as in NKI); the free pairs and the offset pick within the row."""
    table = RNG.standard_normal((300, 32)).astype(np.float32)
    idx = RNG.permutation(300)[:128].astype(np.int32).reshape(128, 1)
    flat = np.zeros(300, np.float32)
    half, scattered = nki.simulate(gather_half_rows_scatter_elements)(table, idx, flat)
    np.testing.assert_array_equal(half, table[idx[:, 0], 16:])
    want = np.zeros(300, np.float32)
    want[idx[:, 0]] = table[idx[:, 0], 16]
    np.testing.assert_array_equal(scattered, want)
