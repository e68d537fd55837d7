"""The NKI 0.1 dialect (neuronemu/nki/neuronxcc, what `import neuronxcc.nki` loads under the
drop-in switch): index tiles, masks on loads and stores, par_dim and the harness calls. Kernels
written here from the math, checked against numpy; errors checked for their place and words."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import neuronemu.nki.neuronxcc as nki
import neuronemu.nki.neuronxcc.language as nl
from neuronemu.nki import trace as trace_kernel
from neuronemu.nki._trace import NkiError, NkiUnsupported

ROOT = Path(__file__).resolve().parents[2]


def ragged_add(a, b):
    """c = a + b, in [128, 512] tiles of index tiles; the last row tile is cut by a mask."""
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    i_p, i_f = nl.mgrid[0:128, 0:512]
    for m in nl.affine_range((rows + 127) // 128):
        for n in nl.affine_range(cols // 512):
            keep = m * 128 + i_p < rows
            x = nl.load(a[m * 128 + i_p, n * 512 + i_f], mask=keep)
            y = nl.load(b[m * 128 + i_p, n * 512 + i_f], mask=keep)
            nl.store(c[m * 128 + i_p, n * 512 + i_f], value=nl.add(x, y), mask=keep)
    return c


def test_index_tiles_and_masks_cut_a_ragged_tiling():
    rng = np.random.default_rng(0)
    for rows in (128, 300, 1):
        a = rng.standard_normal((rows, 1024)).astype(np.float32)
        b = rng.standard_normal((rows, 1024)).astype(np.float32)
        np.testing.assert_array_equal(nki.simulate_kernel(ragged_add, a, b), a + b)


def strided_columns(a):
    """out[p, j] = a[p, 2 * j + 1]: an index tile scaled and shifted (arange(start, stop)
    and [None, :] / [:, None], mgrid's .p and .x)."""
    out = nl.ndarray((a.shape[0], a.shape[1] // 2), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(0, 128)[:, None]
    i_j = nl.arange(a.shape[1] // 2)[None, :]
    tile = nl.load(a[i_p, 2 * i_j + 1])
    grid = nl.mgrid[0:128, 0:a.shape[1] // 2]
    nl.store(out[grid.p, grid.x], value=tile)
    return out


def test_affine_index_tiles_take_strided_slices():
    a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(nki.simulate_kernel(strided_columns, a), a[:, 1::2])


def par_dim_tile(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((nl.par_dim(128), a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0:a.shape[1]]
    t[i_p, i_f] = nl.exp(nl.load(a[i_p, i_f]))   # (0.1: assigned into a tile)
    nl.store(out[i_p, i_f], value=t)
    return out


def unmasked_tail(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    for m in nl.affine_range(2):
        nl.store(out[m * 128 + i_p, i_f], value=nl.load(a[m * 128 + i_p, i_f]))
    return out


def test_an_access_outside_the_tensor_needs_a_mask_and_is_located():
    a = np.zeros((200, 64), np.float32)
    with pytest.raises(NkiError) as info:
        nki.simulate_kernel(unmasked_tail, a)
    error = info.value
    assert "index 128..255 is out of bounds for dim 0 of size 200" in error.message
    assert "with a mask= that keeps the points inside it" in error.message
    assert error.location.line == unmasked_tail.__code__.co_firstlineno + 4


def mask_too_wide(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    for m in nl.affine_range(2):
        t = nl.load(a[m * 128 + i_p, i_f], mask=(i_p < 100))
        nl.store(out[m * 128 + i_p, i_f], value=t, mask=(m * 128 + i_p < 200))
    return out


def test_a_mask_that_keeps_points_outside_the_tensor_is_located():
    with pytest.raises(NkiError, match="the mask keeps points outside it") as info:
        nki.simulate_kernel(mask_too_wide, np.zeros((200, 64), np.float32))
    assert info.value.location.line == mask_too_wide.__code__.co_firstlineno + 4


def swapped_axes(a):
    """out = a.T: the load reads HBM with the grid's axes swapped (a DMA's access pattern)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    nl.store(out[i_p, i_f], value=nl.load(a[i_f, i_p]))
    return out


def swapped_on_chip(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    t = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=nl.copy(t[i_f, i_p]))
    return out


def test_index_tiles_in_any_order_read_hbm_but_on_chip_the_first_axis_is_the_partitions():
    a = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    np.testing.assert_array_equal(nki.simulate_kernel(swapped_axes, a), a.T)
    with pytest.raises(NkiUnsupported, match="on chip, the grid's first axis indexes the "
                                             "partition dim and only it") as info:
        nki.simulate_kernel(swapped_on_chip, a)
    assert info.value.location.line == swapped_on_chip.__code__.co_firstlineno + 4


def test_par_dim_is_the_partition_size():
    a = np.linspace(-2, 2, 128 * 32, dtype=np.float32).reshape(128, 32)
    got = nki.simulate_kernel(par_dim_tile, a)
    np.testing.assert_allclose(got, np.exp(a.astype(np.float64)), rtol=1e-5)
    assert nl.par_dim(128) == 128


def test_baremetal_benchmark_and_profile_run_here_with_the_modelled_latency():
    a = np.ones((300, 512), np.float32)
    bench = nki.benchmark(warmup=5, iters=10, save_neff_name="file.neff")(ragged_add)
    np.testing.assert_array_equal(bench(a, a), a + a)
    latency = bench.benchmark_result.nc_latency
    modelled = bench.kernel.last_run.time_ns / 1e3
    assert latency.get_latency_percentile(99) == latency.get_latency_percentile(50) == modelled
    assert 0 < modelled < 1000
    for decorate in (nki.baremetal, nki.baremetal(save_neff_name="x"), nki.profile(
            working_directory="/tmp")):
        np.testing.assert_array_equal(decorate(ragged_add)(a, a), a + a)
    launched = bench[1]   # (0.1's tests read the launch's own result: bench[b](...))
    launched(a, a)
    assert launched.benchmark_result.nc_latency.get_latency_percentile(50) == modelled


def test_a_benchmark_or_profile_writes_the_modelled_timeline_where_asked(tmp_path):
    import json

    a = np.ones((300, 512), np.float32)
    nki.profile(working_directory=str(tmp_path / "prof"), save_trace_name="t.ntff")(
        ragged_add)(a, a)
    events = json.loads((tmp_path / "prof" / "t.ntff").read_text())["traceEvents"]
    assert any(e.get("args", {}).get("source", "").startswith("test_nki_01.py:")
               for e in events)


def flat_add(a_ptr, b_ptr, n_elements):
    """c = a + b over the first n_elements of [programs, 2, 128, 512] blocks (NKI 0.1's getting
    started shape): the mask bounds the flat offset, a combination of two axes, and masks the
    loads, the addition and the store alike."""
    c_ptr = nl.ndarray(a_ptr.shape, dtype=a_ptr.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:128, 0:512]
    j = nl.program_id(axis=0)
    for i in nl.affine_range(2):
        offset = j * (2 * 128 * 512) + i * (128 * 512) + 512 * ix + iy
        keep = offset < n_elements
        a = nl.load(a_ptr[j, i, ix, iy], mask=keep)
        b = nl.load(b_ptr[j, i, ix, iy], mask=keep)
        c = nl.add(a, b, mask=keep)
        nl.store(c_ptr[j, i, ix, iy], value=c, mask=keep)
    return c_ptr


def test_a_mask_over_two_axes_moves_its_boxes_and_masks_compute_calls():
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((2, 2, 128, 512)).astype(np.float32) for _ in range(2))
    n = a.size - 1000   # the last tile keeps 126 rows and 24 columns of its 127th
    got = nki.simulate(nki.jit(flat_add)[2])(a, b, n)
    np.testing.assert_array_equal(got.reshape(-1)[:n], (a + b).reshape(-1)[:n])
    text = trace_kernel(flat_add, a, b, n, grid=(2,)).asm
    assert "[126:127,0:24]" in text.replace(" ", "")   # (the partial row's own DMAs)


def masked_assignment(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t = nl.full((128, 64), 7.0, nl.float32, buffer=nl.sbuf)
    t[i_p, i_f] = nl.exp(nl.load(a[i_p, i_f]), mask=(i_f < 10) & (i_p >= 3))
    nl.store(out[i_p, i_f], value=t)
    return out


def test_a_masked_result_assigned_into_a_tile_writes_the_kept_points_only():
    a = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    got = nki.simulate_kernel(masked_assignment, a)
    want = np.full((128, 64), 7.0)
    want[3:, :10] = np.exp(a[3:, :10].astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_unmodified_01_script_runs_through_the_switch(tmp_path):
    script = tmp_path / "old.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl


        @nki.jit
        def add(a, b):
            c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            ix = nl.arange(128)[:, None]
            iy = nl.arange(512)[None, :]
            nl.store(c[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
            return c


        a = np.full((128, 512), 2.0, np.float32)
        assert np.array_equal(nki.simulate_kernel(add, a, a), a + a)
        print("matched")
        """))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "neuronemu.nki", str(script)], check=False,
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "matched"


def test_an_01_isa_call_this_front_end_cannot_make_the_tile_of_says_to_pass_dst():
    import neuronemu.nki.neuronxcc.isa as nisa

    def kernel(a):
        i_p, i_f = nl.mgrid[0:128, 0:128]
        nisa.tensor_partition_reduce(nl.load(a[i_p, i_f]))

    with pytest.raises(NkiUnsupported, match=r"nisa.tensor_partition_reduce without dst= \(NKI "
                                             r"0.1's call that returns a new tile\) is not run"
                                             ) as info:
        trace_kernel(kernel, np.zeros((128, 128), np.float32))
    assert info.value.location.line == kernel.__code__.co_firstlineno + 2


def matmul_accumulated(lhs_t, rhs):
    """res = lhs_t.T @ rhs, K tile by K tile: 0.1's acc += nl.matmul into a zeroed PSUM tile."""
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    res = nl.ndarray((m_size, n_size), dtype=nl.float32, buffer=nl.shared_hbm)
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]
    for m in nl.affine_range(m_size // 128):
        for n in nl.affine_range(n_size // 512):
            acc = nl.zeros((nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                a = nl.load(lhs_t[k * 128 + i_k, m * 128 + i_m])
                b = nl.load(rhs[k * 128 + i_k, n * 512 + i_n])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(res[m * 128 + i_k, n * 512 + i_n], value=nl.copy(acc, dtype=nl.float32))
    return res


def test_psum_accumulation_is_the_pe_arrays():
    rng = np.random.default_rng(1)
    lhs_t = rng.standard_normal((384, 256)).astype(np.float32)
    rhs = rng.standard_normal((384, 1024)).astype(np.float32)
    got = nki.simulate_kernel(matmul_accumulated, lhs_t, rhs)
    np.testing.assert_allclose(got, lhs_t.T.astype(np.float64) @ rhs, rtol=1e-4, atol=1e-4)
    text = trace_kernel(matmul_accumulated, lhs_t, rhs).asm
    # 2 x 2 output tiles of 3 K steps: every step one matmul into its accumulator, no vector
    # addition; under the compiler's schedule the nl.zeros fill is folded into each tile's
    # first matmul, which overwrites (docs/timing.md), in program order it is a memset
    assert text.count("tensor.matmul") == 12 and text.count("accumulate=true") == 8
    assert text.count("accumulate=false") == 4 and "memset" not in text
    assert "tensor_tensor" not in text
    program = trace_kernel(matmul_accumulated, lhs_t, rhs, schedule="program").asm
    assert program.count("accumulate=true") == 12 and program.count("vector.memset") == 4


def isa_calls_returning_tiles(a, b):
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    x = nl.load(a[i_p, i_f])
    y = nl.load(b[i_p, i_f])
    e = nisa.activation(op=nl.exp, data=nisa.tensor_scalar(
        nisa.tensor_tensor(x, y, op=nl.multiply), op0=nl.add, operand0=1.0), scale=0.5)
    acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nisa.tensor_copy(nisa.nc_transpose(e)), y)
    nl.store(out[i_p, i_f], value=nl.copy(acc))
    nl.store(sums[i_p, nl.arange(1)[None, :]],
             value=nisa.tensor_reduce(np.add, e, axis=1, keepdims=True))
    return out, sums


def test_01_isa_calls_return_new_tiles():
    rng = np.random.default_rng(2)
    a, b = (rng.uniform(0, 1, (128, 128)).astype(np.float32) for _ in range(2))
    out, sums = nki.simulate_kernel(isa_calls_returning_tiles, a, b)
    e = np.exp((a.astype(np.float64) * b + 1.0) * 0.5)
    np.testing.assert_allclose(out, e @ b, rtol=1e-5)
    np.testing.assert_allclose(sums[:, 0], e.sum(axis=1), rtol=1e-5)


def split_square_sums(a):
    """Row sums of squares over column chunks, accumulated by += into a PSUM column (not a
    matmul: a Vector engine addition), plus 0.5 and a column by += too."""
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    total = nl.zeros((128, 1), nl.float32, buffer=nl.psum)
    for h in nl.affine_range(a.shape[1] // 128):
        chunk = nl.load(a[i_p, h * 128 + nl.arange(128)[None, :]])
        total += nl.sum(nl.square(chunk), axis=[1], keepdims=True)
    total += 0.5
    total += nl.full((128, 1), 2.0, nl.float32, buffer=nl.sbuf)
    nl.store(out[i_p, nl.arange(1)[None, :]], value=nl.copy(total))
    return out


def test_plus_equals_of_anything_but_a_fresh_matmul_adds_in_place():
    a = np.linspace(-1, 1, 128 * 512, dtype=np.float32).reshape(128, 512)
    got = nki.simulate_kernel(split_square_sums, a)
    np.testing.assert_allclose(got[:, 0], (a.astype(np.float64) ** 2).sum(axis=1) + 2.5,
                               rtol=1e-5)

    def kernel(x):
        acc = nl.zeros((128, 64), nl.float32, buffer=nl.psum)
        acc += nl.zeros((64, 64), nl.float32)

    with pytest.raises(NkiUnsupported, match=r"'\+=' adds a tile of the same shape") as info:
        trace_kernel(kernel, np.zeros((128, 64), np.float32))
    assert info.value.location.line == kernel.__code__.co_firstlineno + 2


@nki.compiler.skip_middle_end_transformations
@nki.compiler.enable_stack_allocator(log_level=0)
def doubled_with_allocation_requests(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((nl.par_dim(128), a.shape[1]), dtype=a.dtype,
                   buffer=nki.compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
    acc = nl.zeros((128, a.shape[1]), nl.float32,
                   buffer=nki.compiler.psum.auto_alloc())
    i_p, i_f = nl.mgrid[0:128, 0:a.shape[1]]
    t[i_p, i_f] = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=nl.add(t, nl.copy(acc)))
    nl.store(out[i_p, i_f], value=nl.multiply(t, 2.0))
    return out


def test_compiler_directives_change_nothing_and_allocation_requests_name_the_memory():
    a = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(nki.simulate_kernel(doubled_with_allocation_requests, a),
                                  a * 2)


def iota_and_memset(a):
    import neuronemu.nki.neuronxcc.isa as nisa

    rows = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    cols = nl.ndarray((1, 64), dtype=nl.int32, buffer=nl.shared_hbm)
    filled = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(rows, value=nisa.iota(3 * nl.arange(128)[:, None] + 5, dtype=nl.int32))
    nl.store(cols, value=nisa.iota(nl.arange(64)[None, :] * 2, dtype=nl.int32))
    nl.store(filled, value=nisa.memset(shape=(128, 64), value=-1.5, dtype=nl.float32))
    return rows, cols, filled


def test_01_iota_of_an_index_tile_and_memset_of_a_shape():
    rows, cols, filled = nki.simulate_kernel(iota_and_memset, np.zeros((1, 1), np.float32))
    np.testing.assert_array_equal(rows[:, 0], 3 * np.arange(128) + 5)
    np.testing.assert_array_equal(cols[0], 2 * np.arange(64))
    np.testing.assert_array_equal(filled, np.full((128, 64), -1.5, np.float32))


def test_the_generated_text_names_the_01_dialect():
    a = np.zeros((128, 512), np.float32)
    assert "(NKI 0.1 dialect)" in trace_kernel(ragged_add, a, a).asm.splitlines()[0]


def causal_fill(scores):
    """out[q, k] = scores[q, k] where k <= q + 2 and k >= q - 60, else -30000 (0.1's
    affine_select with a predicate of index tiles; two comparisons joined by &)."""
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray(scores.shape, dtype=scores.dtype, buffer=nl.shared_hbm)
    i_q, i_k = nl.mgrid[0:128, 0:128]
    t = nl.load(scores[i_q, i_k])
    kept = nisa.affine_select(pred=(i_q - i_k + 2 >= 0) & (i_k - i_q > -61), on_true_tile=t,
                              on_false_value=-30000.0)
    nl.store(out[i_q, i_k], value=kept)
    return out


def test_01_affine_select_takes_a_predicate_of_index_tiles():
    scores = np.arange(128 * 128, dtype=np.float32).reshape(128, 128)
    q, k = np.mgrid[0:128, 0:128]
    want = np.where((k <= q + 2) & (k >= q - 60), scores, np.float32(-30000.0))
    np.testing.assert_array_equal(nki.simulate_kernel(causal_fill, scores), want)


def psum_blocks(q, k):
    """out = q.T @ k as 8 PSUM blocks of [128, 512] fp32 (all of PSUM's 16 KiB), read out, and
    then a transpose that needs PSUM again: it fits because each block is its own tile whose
    live range ends where it is read, and each matmul writes its block itself."""
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray((128, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
    out_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    qs, ks = nl.load(q), nl.load(k)
    s = nl.ndarray((8, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for i in nl.affine_range(8):
        s[i] = nisa.nc_matmul(qs, ks[:, nl.ds(i * 512, 512)])
    r = nl.ndarray((nl.par_dim(128), 4096), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(8):
        r[:, nl.ds(i * 512, 512)] = nl.copy(s[i])
    nl.store(out, value=r)
    nl.store(out_t, value=nl.copy(nisa.nc_transpose(r[:, 0:128])))
    return out, out_t


def test_block_dims_are_tiles_of_their_own_and_results_are_computed_into_them():
    rng = np.random.default_rng(2)
    q = rng.integers(-4, 5, (128, 128)).astype(np.float32)
    k = rng.integers(-4, 5, (128, 4096)).astype(np.float32)
    out, out_t = nki.simulate_kernel(psum_blocks, q, k)
    want = q.T.astype(np.float64) @ k.astype(np.float64)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out_t, want[:, :128].T)
    asm = trace_kernel(psum_blocks, q, k).asm
    assert asm.count("tensor.matmul") == 8
    assert asm.count("tensor_copy") == 8 + 1   # the blocks read out, the transpose's copy


def block_accumulators(a):
    """out[b] = a[b] * 3 through nl.zeros((4, par_dim(128), 64)) accumulated block by block."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for rep in nl.sequential_range(3):
        for b in nl.affine_range(4):
            acc[b] += nl.load(a[b])
    for b in nl.affine_range(4):
        nl.store(out[b], value=acc[b])
    return out


def test_block_dims_index_one_tile_at_a_time():
    a = np.arange(4 * 128 * 64, dtype=np.float32).reshape(4, 128, 64)
    np.testing.assert_array_equal(nki.simulate_kernel(block_accumulators, a), 3 * a)
    t = None

    def sliced_blocks(x):
        nonlocal t
        t = nl.zeros((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        assert t.shape == (4, 128, 64)
        return nl.copy(t[1:3])

    with pytest.raises(NkiUnsupported, match="a block dim .* is indexed by an int") as info:
        trace_kernel(sliced_blocks, a)
    assert info.value.location.line == sliced_blocks.__code__.co_firstlineno + 4


def pool_and_shuffle(x):
    """2x2 average pooling by a 5-axis grid (nl.sum over axes 2 and 4 of
    t[i0, 2*i1 + i2, 2*i3 + i4]), and a [4, 8] -> [8, 4] transpose within each partition
    (out[i_p, i_c * 4 + i_r] = t[i_p, i_r * 8 + i_c]), both access patterns of one tile."""
    p, h, w = x.shape
    pooled = nl.ndarray((p, h // 2, w // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    shuffled = nl.ndarray((p, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i0, i1, i2, i3, i4 = nl.mgrid[0:p, 0:h // 2, 0:2, 0:w // 2, 0:2]
    nl.store(pooled, value=nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4]) / 4)
    flat = nl.load(x.reshape((p, h * w))[:, 0:32])
    i_p = nl.arange(p)[:, None, None]
    i_r = nl.arange(4)[None, :, None]
    i_c = nl.arange(8)[None, None, :]
    out = nl.ndarray((p, 32), dtype=x.dtype, buffer=nl.sbuf)
    out[i_p, i_c * 4 + i_r] = nl.copy(flat[i_p, i_r * 8 + i_c])
    nl.store(shuffled, value=out)
    return pooled, shuffled


def test_index_expressions_of_several_axes_are_access_patterns():
    x = np.arange(16 * 8 * 8, dtype=np.float32).reshape(16, 8, 8)
    pooled, shuffled = nki.simulate_kernel(pool_and_shuffle, x)
    np.testing.assert_array_equal(pooled, x.reshape(16, 4, 2, 4, 2).mean(axis=(2, 4)))
    flat = x.reshape(16, 64)[:, :32]
    np.testing.assert_array_equal(shuffled, flat.reshape(16, 4, 8).transpose(0, 2, 1)
                                  .reshape(16, 32))


def masked_stats(x):
    """Mean and variance of each row of a [128, 600] tile by bn_stats over 512-wide chunks
    (the last cut by a mask, 0.1's layernorm), bn_aggr; a mask=False call is skipped."""
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    i_s = nl.arange(6)[None, :]
    t = nl.load(x)
    stats = nl.ndarray((128, 12), dtype=nl.float32)
    for j in nl.affine_range(2):
        stats[i_p, j * 6 + i_s] = nisa.bn_stats(t[i_p, j * 512 + i_f],
                                                mask=(j * 512 + i_f < 600), dtype=nl.float32)
    mean_var = nisa.bn_aggr(stats)
    untouched = nl.full((128, 2), 7.0, dtype=nl.float32)
    untouched[...] = nisa.tensor_scalar(mean_var, np.add, 1.0, mask=False)
    nl.store(out, value=nisa.tensor_tensor(mean_var, untouched, np.add))
    return out


def test_masks_on_isa_calls_cut_their_operands():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 1024)).astype(np.float32)
    x[:, 600:] = 1e6   # (outside the mask: must not count)
    got = nki.simulate_kernel(masked_stats, x)
    rows = x[:, :600].astype(np.float64)
    np.testing.assert_allclose(got[:, 0], rows.mean(axis=1) + 7.0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 1], rows.var(axis=1) + 7.0, rtol=1e-5)


def columns_and_cores(a):
    """A [P] access loads as a [P, 1] column; t[i_p, 0] of a tile is a [P, 1] column; the
    launch grid of spmd_dim(n, nl.nc(2)) has 2n instances."""
    out = nl.ndarray((a.shape[0], 2), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    col = nl.load(a[nl.ds(i * 128, 128), 3])
    i_p = nl.arange(128)[:, None]
    both = nl.ndarray((128, 2), dtype=a.dtype)
    both[i_p, 0] = nl.copy(col)
    both[i_p, 1] = nl.copy(col[i_p, 0]) * 2
    nl.store(out[nl.ds(i * 128, 128), :], value=both)
    return out


def test_columns_static_cast_and_cores_as_01_spells_them():
    a = np.arange(512 * 8).reshape(512, 8)
    a = nl.static_cast(a, nl.bfloat16)
    assert a.dtype == nl.bfloat16
    launched = nki.baremetal(columns_and_cores)[nl.spmd_dim(2, nl.nc(2))]
    got = nki.simulate_kernel(launched, a)
    want = np.stack([a[:, 3], a[:, 3] * 2], axis=1).astype(np.float32)
    np.testing.assert_array_equal(got.astype(np.float32), want)
    with nki.compiler.no_reorder():
        pass


def gather_rows(table, rows):
    """out[p, :] = table[b, idx[p], :] for the first n rows of a ragged tile: a DMA gather by a
    tile of row numbers (computed on chip: idx = 2 * p + 1), under a mask."""
    import neuronemu.nki.neuronxcc.isa as nisa

    n = rows.shape[0]
    out = nl.ndarray((n, table.shape[2]), dtype=table.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(table.shape[2])[None, :]
    idx = nisa.iota(2 * i_p + 1, dtype=nl.int32)
    got = nl.load(table[1, idx, i_f], mask=(i_p < n))
    nl.store(out[i_p, i_f], value=got, mask=(i_p < n))
    return out


def test_a_tile_of_row_numbers_gathers_rows():
    table = np.arange(2 * 300 * 16, dtype=np.float32).reshape(2, 300, 16)
    got = nki.simulate_kernel(gather_rows, table, np.zeros((100, 1), np.float32))
    np.testing.assert_array_equal(got, table[1, 2 * np.arange(100) + 1])


def tail_by_slices(a, out):
    """0.1's @nki.trace kernel writing its output argument; a slice past the end of the
    tensor under a mask (a DMA of the rows inside), and nl.loop_reduce over a loop."""
    import neuronemu.nki.neuronxcc.isa as nisa

    acc = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    i_p = nl.arange(128)[:, None]
    for t in nl.affine_range(2):
        tile = nl.zeros((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=a[t * 128:t * 128 + 128, :], mask=(t * 128 + i_p < 200))
        acc[...] = nl.loop_reduce(tile, op=np.add, loop_indices=(t,))
    nl.store(out, value=acc)


def test_trace_decorated_kernels_write_their_output_arguments():
    a = np.arange(200 * 8, dtype=np.float32).reshape(200, 8)
    out = np.zeros((128, 8), np.float32)
    nki.simulate_kernel(nki.trace(tail_by_slices), a, out)
    want = a[:128].copy()
    want[:72] += a[128:]
    np.testing.assert_array_equal(out, want)


def returns_a_tile(a):
    """0.1 returns an on-chip tile's values; iota of an index expression of 3 axes."""
    import neuronemu.nki.neuronxcc.isa as nisa

    g = nl.mgrid[0:128, 0:2, 0:3]
    codes = nisa.iota(3 * g.x + g.y, dtype=nl.int32)
    return nl.load(a), codes


def test_a_returned_tile_is_its_values_and_iota_takes_any_index_expression():
    a = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    got, codes = nki.simulate_kernel(returns_a_tile, a)
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(codes, np.broadcast_to(
        (3 * np.arange(2)[:, None] + np.arange(3)[None, :]), (128, 2, 3)))


def assigned_then_accumulated(a, b, c):
    """s = a.T @ b (an assignment: the matmul writes s itself), then s += a.T @ c (accumulates
    onto what the assignment wrote)."""
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y, z = nl.load(a), nl.load(b), nl.load(c)
    s = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    s[...] = nisa.nc_matmul(x, y)
    s[...] += nisa.nc_matmul(x, z)
    nl.store(out, value=nl.copy(s))
    return out


def test_a_matmul_assigned_into_psum_is_accumulated_onto_by_plus_equals():
    rng = np.random.default_rng(4)
    a, b, c = (rng.integers(-3, 4, (128, n)).astype(np.float32) for n in (128, 512, 512))
    got = nki.simulate_kernel(assigned_then_accumulated, a, b, c)
    np.testing.assert_array_equal(got, a.T.astype(np.float64) @ (b + c))


def transposed(a):
    import neuronemu.nki.neuronxcc.isa as nisa

    t = nisa.nc_transpose(nl.load(a))
    return nl.copy(t, dtype=a.dtype), str(t.dtype)


def test_a_pe_transpose_returns_what_the_target_writes():
    """trn1's PE array transposes as a matmul (fp32 into PSUM); trn2 keeps the data's dtype."""
    from neuronemu.nki import run

    a = (np.arange(128 * 64) % 251).reshape(128, 64).astype(nl.bfloat16)
    for target, dtype in (("trn1", "float32"), ("trn2", "bfloat16")):
        seen = []

        def kernel(x, seen=seen):
            out, name = transposed(x)
            seen.append(name)
            return out
        done = run(kernel, a, target=target)
        np.testing.assert_array_equal(np.asarray(done.outputs).astype(np.float32),
                                      a.astype(np.float32).T)
        assert seen == [dtype]


def scatter_add(table, values):
    """table[2 * p + 1, :] += values[p, :] (0.1's dma_copy(dst_rmw_op=np.add) into rows named by
    a tile of indices): the rows read back, added to and scattered."""
    import neuronemu.nki.neuronxcc.isa as nisa

    out = nl.ndarray(table.shape, dtype=table.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=table)
    i_p = nl.arange(values.shape[0])[:, None]
    i_f = nl.arange(table.shape[1])[None, :]
    idx = nisa.iota(2 * i_p + 1, dtype=nl.int32)
    nisa.dma_copy(dst=out[idx, i_f], src=nl.load(values), dst_rmw_op=np.add)
    return out


def test_a_read_modify_write_dma_adds_into_the_rows_it_names():
    table = np.arange(300 * 8, dtype=np.float32).reshape(300, 8)
    values = np.full((100, 8), 0.5, np.float32)
    want = table.copy()
    want[2 * np.arange(100) + 1] += 0.5
    np.testing.assert_array_equal(nki.simulate_kernel(scatter_add, table, values), want)


def zeros_used_three_ways(lhs_t, rhs):
    """Three zeroed PSUM tiles: one read before any matmul (its zeros must be there), one
    accumulated into half by half (the fill must come first), one whole (the fill folds into
    the first matmul)."""
    out = nl.ndarray((3, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]
    a = nl.load(lhs_t[i_k, i_m])
    b = nl.load(rhs[i_k, i_n])
    read_first = nl.zeros((nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
    nl.store(out[0, i_k, i_n], value=nl.copy(read_first, dtype=nl.float32))
    halves = nl.zeros((nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
    halves[:, 0:256] += nl.matmul(a, b[:, 0:256], transpose_x=True)
    nl.store(out[1, i_k, i_n], value=nl.copy(halves, dtype=nl.float32))
    whole = nl.zeros((nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
    whole += nl.matmul(a, b, transpose_x=True)
    whole += nl.matmul(a, b, transpose_x=True)
    nl.store(out[2, i_k, i_n], value=nl.copy(whole, dtype=nl.float32))
    return out


def test_a_psum_zero_fill_is_emitted_only_where_it_is_needed():
    rng = np.random.default_rng(3)
    lhs_t = rng.integers(-4, 5, (128, 128)).astype(np.float32)   # exact products and sums
    rhs = rng.integers(-4, 5, (128, 512)).astype(np.float32)
    product = lhs_t.T.astype(np.float64) @ rhs
    for schedule in ("compiler", "program"):
        got = nki.simulate_kernel(nki.jit(zeros_used_three_ways, schedule=schedule), lhs_t, rhs)
        np.testing.assert_array_equal(got[0], 0.0)
        np.testing.assert_array_equal(got[1][:, :256], product[:, :256])
        np.testing.assert_array_equal(got[1][:, 256:], 0.0)
        np.testing.assert_array_equal(got[2], 2 * product)
    compiler = trace_kernel(zeros_used_three_ways, lhs_t, rhs).asm
    program = trace_kernel(zeros_used_three_ways, lhs_t, rhs, schedule="program").asm
    assert program.count("vector.memset") == 3
    # the read one and the half one keep their fill; the whole one's folds into its first
    # matmul, which overwrites
    assert compiler.count("vector.memset") == 2
    assert compiler.count("accumulate=false") == 1 and compiler.count("accumulate=true") == 2
    lines = [line.split("#")[0].strip() for line in compiler.splitlines()]
    half = next(i for i, line in enumerate(lines) if "accumulate=true" in line)
    assert lines[half - 1].startswith("vector.memset")   # the fill goes first


def masked_off_groups(x, lhs_t, rhs):
    """Two row groups, the second masked off by a condition on a loop variable that fails
    (mask=False), as 0.1's RMSNorm + QKV masks a group past seqlen: its nl calls emit
    nothing. A PSUM tile's pending zero-fill read by a left-out call stays pending, so it still
    folds into the first matmul."""
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    prod = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    rows = 128
    for g in nl.affine_range(2):
        t = nl.load(x[:, g * 512:(g + 1) * 512])
        e = nl.exp(t, mask=(g * 128 < rows))
        s = nl.multiply(e, 2.0, mask=(g * 128 < rows))
        nl.store(out[:, g * 512:(g + 1) * 512], value=s, mask=(g * 128 < rows))
    acc = nl.zeros((nl.par_dim(128), 512), nl.float32, buffer=nl.psum)
    peek = nl.copy(acc, mask=False)   # left out: the fill is not needed for it
    a, b = nl.load(lhs_t), nl.load(rhs)
    acc += nl.matmul(a, b, transpose_x=True)
    nl.store(prod, value=nl.copy(acc, dtype=nl.float32))
    del peek
    return out, prod


def test_an_nl_call_with_mask_false_emits_nothing():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((128, 1024)).astype(np.float32)
    lhs_t = rng.integers(-4, 5, (128, 128)).astype(np.float32)   # exact products and sums
    rhs = rng.integers(-4, 5, (128, 512)).astype(np.float32)
    asm = trace_kernel(masked_off_groups, x, lhs_t, rhs).asm
    body = [line.split("#")[0].strip() for line in asm.splitlines() if line.startswith("    ")]
    assert sum(line.startswith("scalar.activation") and "func=exp" in line
               for line in body) == 1            # group 0's only
    assert sum(line.startswith("vector.memset") for line in body) == 0   # folded
    assert sum("accumulate=false" in line for line in body) == 1
    got, prod = nki.simulate_kernel(masked_off_groups, x, lhs_t, rhs)
    want = (np.exp(x[:, :512].astype(np.float64)) * 2).astype(np.float32)
    np.testing.assert_allclose(got[:, :512], want, rtol=2e-6)
    np.testing.assert_array_equal(prod, lhs_t.T.astype(np.float64) @ rhs)
