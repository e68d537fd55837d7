"""Every ``nki.isa`` function of NKI 0.6 exists in neuronemu.nki and is exercised.

The 52 names are those of ``nki/api/nki/isa/__init__.py`` at aws-neuron/aws-neuron-sdk@81ce03ae
(Neuron SDK 2.32, listed in shared/research/nki-0.6-surface-2026-11.md). Each function without
a kernel elsewhere in tests/nki is run here in a small kernel written from its definition and
checked against a numpy float64 / ml_dtypes oracle; the others are named with the test file
that runs them (checked below to call them)."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from nki_kernels import hbm_copy, sbuf_copy

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.nki._trace import NkiError, NkiUnsupported

NKI_06_ISA = ["activate2", "activation", "activation_reduce", "affine_select", "bn_aggr", "bn_stats", "core_barrier", "dma_compute", "dma_copy", "dma_transpose", "dropout", "exponential", "get_nc_sub_version", "get_nc_version", "iota", "local_gather", "max8", "memset", "nc_find_index8", "nc_match_replace8", "nc_matmul", "nc_matmul_mx", "nc_n_gather", "nc_stream_shuffle", "nc_transpose", "nonzero_with_count", "quantize_mx", "rand2", "rand_get_state", "rand_set_state", "range_select", "reciprocal", "register_alloc", "register_load", "register_move", "register_store", "rng", "scalar_tensor_tensor", "select_reduce", "sendrecv", "sequence_bounds", "set_rng_seed", "tensor_copy", "tensor_copy_predicated", "tensor_partition_reduce", "tensor_reduce", "tensor_scalar", "tensor_scalar_cumulative", "tensor_scalar_reduce", "tensor_tensor", "tensor_tensor_scan", "topk"]

HERE = Path(__file__).parent
ELSEWHERE = {   # run against oracles by these files
    "activation": "nki_kernels.py", "affine_select": "test_nki_ops.py",
    "bn_aggr": "nki_kernels.py", "bn_stats": "nki_kernels.py", "dma_copy": "test_nki_frontend.py",
    "dma_transpose": "test_nki_ops.py", "iota": "test_nki_ops.py", "memset": "test_nki_ops.py",
    "nc_matmul": "nki_kernels.py", "nc_matmul_mx": "nki_kernels.py",
    "nc_transpose": "test_nki_ops.py", "quantize_mx": "nki_kernels.py",
    "reciprocal": "nki_kernels.py", "scalar_tensor_tensor": "nki_kernels.py",
    "tensor_copy": "test_nki_ops.py", "tensor_partition_reduce": "test_nki_ops.py",
    "tensor_reduce": "test_nki_ops.py", "tensor_scalar": "nki_kernels.py",
    "tensor_scalar_reduce": "test_nki_ops.py", "tensor_tensor": "nki_kernels.py",
    "tensor_tensor_scan": "nki_kernels.py",
    # the multi-core calls run on two ranks in test_nki_collectives.py
    "core_barrier": "test_nki_collectives.py", "sendrecv": "test_nki_collectives.py",
}

RNG = np.random.default_rng(25)


def test_the_surface_has_52_names():
    assert len(NKI_06_ISA) == len(set(NKI_06_ISA)) == 52


@pytest.mark.parametrize("name", NKI_06_ISA)
def test_name_is_defined(name):
    """Defined in the module, not the located-error stub of unknown names."""
    assert callable(vars(nisa).get(name)), name


def test_every_name_is_exercised():
    here = set(EXERCISES) | set(ELSEWHERE)
    assert here >= set(NKI_06_ISA), sorted(set(NKI_06_ISA) - here)
    for name, filename in ELSEWHERE.items():
        assert f"nisa.{name}(" in (HERE / filename).read_text(), (name, filename)


def _sb(shape, dtype=nl.float32):
    return nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)


_load, _out = sbuf_copy, hbm_copy


def _f32(shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def _distinct(shape):
    """fp32 values with no ties (a permutation of a grid), so orders are unambiguous."""
    n = math.prod(shape)
    return (RNG.permutation(n).astype(np.float32) * 0.25 - n / 8).reshape(shape)


# ------------------------------------------------------------------------------------------
# one kernel per function, each against its own oracle


def ex_activate2():
    x = _f32((128, 64))

    def k(x):
        d = _sb((128, 64))
        nisa.activate2(d, nl.relu, _load(x), imm0=2.0, imm1=-0.5, op0=nl.multiply, op1=nl.add)
        return _out(d)

    got = nki.simulate(k, target="trn3")(x)
    np.testing.assert_allclose(got, np.maximum(2.0 * x.astype(np.float64) - 0.5, 0), rtol=1e-6)


def ex_activation_reduce():
    x = _f32((128, 32))

    def k(x):
        d, s = _sb((128, 32)), _sb((128, 1))
        nisa.activation_reduce(dst=d, op=nl.square, data=_load(x), reduce_op=nl.add,
                               reduce_res=s)
        return _out(s)

    got = nki.simulate(k)(x)
    np.testing.assert_allclose(got[:, 0], (x.astype(np.float64) ** 2).sum(1), rtol=1e-5)


def ex_dma_compute():
    a, b, c = _f32((128, 48)), _f32((128, 48)), _f32((128, 48))

    def k(a, b, c):
        d = _sb((128, 48))
        nisa.dma_compute(dst=d, srcs=[a, b, _load(c)], reduce_op=nl.add)
        return _out(d)

    # added left to right in fp32, each sum rounded (numpy float32 arithmetic does the same)
    np.testing.assert_array_equal(nki.simulate(k)(a, b, c), (a + b) + c)


def ex_dropout():
    x = _f32((128, 64), 1.0, 2.0)   # never zero, so a kept element is told from a dropped one

    def k(x):
        d = _sb((128, 64))
        nisa.dropout(dst=d, data=_load(x), prob=0.25)
        return _out(d)

    got = nki.simulate(k)(x)
    dropped = got == 0
    assert np.array_equal(got[~dropped], x[~dropped])
    # 8192 Bernoulli(0.25) draws: the fraction is within 6 standard deviations of 0.25
    assert abs(dropped.mean() - 0.25) < 6 * math.sqrt(0.25 * 0.75 / x.size)


def ex_exponential():
    x = _f32((128, 32), -3, 3)

    def k(x):
        xs = _load(x)
        m, e, s = _sb((128, 1)), _sb((128, 32)), _sb((128, 1))
        nisa.tensor_reduce(dst=m, op=nl.max, data=xs, axis=1)
        nisa.exponential(dst=e, src=xs, max_value=m, reduce_res=s,
                         reduce_cmd=nisa.reduce_cmd.reset_reduce)
        return _out(e), _out(s)

    e, s = nki.simulate(k, target="trn3")(x)
    x64 = x.astype(np.float64)
    want = np.exp(x64 - x64.max(1, keepdims=True))
    np.testing.assert_allclose(e, want, rtol=1e-6)
    np.testing.assert_allclose(s[:, 0], want.sum(1), rtol=1e-5)


def ex_get_nc_sub_version():
    def k(x):
        d = _sb((1, 1), nl.int32)
        nisa.memset(dst=d, value=nisa.get_nc_sub_version() + 10 * nisa.get_nc_version())
        return _out(d)

    got = nki.simulate(k)(np.zeros((1, 1), np.float32))
    assert got[0, 0] == 30   # trn2 is gen3, first revision


def ex_get_nc_version():
    ex_get_nc_sub_version()


def ex_local_gather():
    data = _distinct((128, 64))
    idx = RNG.integers(0, 60, size=(128, 2)).astype(np.uint16)   # 4 elements per index fit
    E, V = 4, 20

    def k(data, idx):
        d = _sb((128, V, E))
        nisa.local_gather(d, _load(data), _load(idx), num_elem_per_idx=E, num_valid_indices=V)
        return _out(d)

    got = nki.simulate(k)(data, idx)
    want = np.zeros((128, V, E), np.float32)
    for g in range(8):
        ids = [int(idx[16 * g + j % 16, j // 16]) for j in range(V)]
        for q in range(16 * g, 16 * g + 16):
            for j, i in enumerate(ids):
                want[q, j] = data[q, i:i + E]
    np.testing.assert_array_equal(got, want)


def ex_max8():
    x = _distinct((128, 40))

    def k(x):
        d = _sb((128, 8))
        nisa.max8(dst=d, src=_load(x))
        return _out(d)

    np.testing.assert_array_equal(nki.simulate(k)(x), -np.sort(-x, axis=1)[:, :8])


def ex_nc_find_index8():
    x = _distinct((128, 40))
    vals = np.stack([x[p, RNG.permutation(40)[:8]] for p in range(128)])
    vals[:, 7] = 1e9   # absent: all ones

    def k(x, vals):
        d = _sb((128, 8), nl.uint32)
        nisa.nc_find_index8(dst=d, data=_load(x), vals=_load(vals))
        return _out(d)

    got = nki.simulate(k)(x, vals)
    want = np.array([[np.flatnonzero(x[p] == v)[0] if (x[p] == v).any() else 0xFFFFFFFF
                      for v in vals[p]] for p in range(128)], np.uint32)
    np.testing.assert_array_equal(got, want)


def ex_nc_match_replace8():
    x = _distinct((128, 40))
    vals = np.stack([x[p, RNG.permutation(40)[:8]] for p in range(128)])

    def k(x, vals):
        d, where = _sb((128, 40)), _sb((128, 8), nl.uint32)
        # imm is no value of x (not a multiple of 0.25): a later val never matches an entry
        # an earlier one replaced (with -7.0, a grid value, the test failed for some seeds)
        nisa.nc_match_replace8(dst=d, data=_load(x), vals=_load(vals), imm=-7.1, dst_idx=where)
        return _out(d), _out(where)

    d, where = nki.simulate(k)(x, vals)
    want_idx = np.array([[np.flatnonzero(x[p] == v)[0] for v in vals[p]] for p in range(128)])
    want = x.copy()
    np.put_along_axis(want, want_idx, np.float32(-7.1), axis=1)
    np.testing.assert_array_equal(where, want_idx.astype(np.uint32))
    np.testing.assert_array_equal(d, want)


def ex_nc_n_gather():
    data = _distinct((128, 32))
    idx = RNG.integers(0, 32, size=(128, 12)).astype(np.uint32)

    def k(data, idx):
        d = _sb((128, 12))
        nisa.nc_n_gather(dst=d, data=_load(data), indices=_load(idx))
        return _out(d)

    np.testing.assert_array_equal(nki.simulate(k)(data, idx),
                                  np.take_along_axis(data, idx.astype(np.int64), axis=1))


def ex_nc_stream_shuffle():
    x = _distinct((64, 16))
    mask = [int(v) for v in RNG.permutation(32)]
    mask[5] = 255   # partition 5 of each quadrant keeps dst's value

    def k(x):
        d = _sb((64, 16))
        nisa.memset(dst=d, value=-1.0)
        nisa.nc_stream_shuffle(dst=d, src=_load(x), shuffle_mask=mask)
        return _out(d)

    want = np.full_like(x, -1.0)
    for q in range(2):
        for i, m in enumerate(mask):
            if m != 255:
                want[32 * q + i] = x[32 * q + m]
    np.testing.assert_array_equal(nki.simulate(k)(x), want)


def ex_nonzero_with_count():
    x = (RNG.uniform(size=(128, 32)) < 0.3).astype(np.float32) * _f32((128, 32), 1, 2)

    def k(x):
        d = _sb((128, 33), nl.int32)
        nisa.memset(dst=d, value=0)
        nisa.nonzero_with_count(dst=d, src=_load(x), index_offset=100, padding_val=-1)
        return _out(d)

    got = nki.simulate(k)(x)
    for p in range(128):
        if p % 16:
            assert not got[p].any()
            continue
        nz = np.flatnonzero(x[p])
        want = np.full(33, -1, np.int32)
        want[:len(nz)] = nz + 100
        want[32] = len(nz)
        np.testing.assert_array_equal(got[p], want)


def ex_rand2():
    def k(x):
        d = _sb((128, 64))
        nisa.rand2(dst=d, min=-2.0, max=3.0)
        return _out(d)

    got = nki.simulate(k, target="trn3")(np.zeros((1, 1), np.float32))
    assert got.min() >= -2.0 and got.max() < 3.0
    assert abs(got.mean() - 0.5) < 6 * 5 / math.sqrt(12 * got.size)   # uniform: mean 0.5


def _draw_twice(restore):
    """Draw random bits, restore the stream with ``restore``, draw again."""
    def k(x):
        a, b = _sb((128, 16), nl.uint32), _sb((128, 16), nl.uint32)
        state = _sb((128, 6), nl.uint32)
        seed = _sb((1, 1), nl.uint32)
        nisa.memset(dst=seed, value=1234)
        nisa.set_rng_seed(seed)
        nisa.rand_get_state(dst=state)
        nisa.rng(dst=a)
        restore(state, seed)
        nisa.rng(dst=b)
        return _out(a), _out(b)

    return nki.simulate(k)(np.zeros((1, 1), np.float32))


def ex_rand_get_state():
    a, b = _draw_twice(lambda state, seed: nisa.rand_set_state(src_seeds=state))
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) > a.size // 2   # 32 random bits each: repeats are rare


def ex_rand_set_state():
    ex_rand_get_state()


def ex_set_rng_seed():
    a, b = _draw_twice(lambda state, seed: nisa.set_rng_seed(src_seeds=seed))
    np.testing.assert_array_equal(a, b)


def ex_rng():
    a, _ = _draw_twice(lambda state, seed: None)
    assert a.dtype == np.uint32 and len(np.unique(a)) > a.size // 2


def ex_range_select():
    x = _distinct((128, 64))
    lo = RNG.integers(0, 30, size=(128, 1)).astype(np.float32)
    hi = lo + RNG.integers(1, 30, size=(128, 1)).astype(np.float32)

    def k(x, lo, hi):
        d, best = _sb((128, 64)), _sb((128, 1))
        nisa.range_select(dst=d, on_true_tile=_load(x), comp_op0=nl.greater_equal,
                          comp_op1=nl.less, bound0=_load(lo), bound1=_load(hi),
                          reduce_res=best, range_start=2, on_false_value=-5.0)
        return _out(d), _out(best)

    d, best = nki.simulate(k)(x, lo, hi)
    j = np.arange(64)[None, :] + 2
    keep = (j >= lo) & (j < hi)
    want = np.where(keep, x, -5.0)
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(best[:, 0], want.max(1))


def ex_registers():
    n = np.array([[7]], np.int32)

    def k(n):
        r = nisa.register_alloc(5)
        s = nisa.register_alloc()
        nisa.register_load(s, _load(n))
        out = _sb((1, 3), nl.int32)
        nisa.register_store(out[:, 0:1], r)
        nisa.register_store(out[:, 1:2], s)
        nisa.register_move(r, s)
        nisa.register_move(s, 11)
        nisa.register_store(out[:, 2:3], r)
        return _out(out)

    np.testing.assert_array_equal(nki.simulate(k)(n), [[5, 7, 7]])
    assert "ctrl.load" in nki.trace(k, n).asm


ex_register_alloc = ex_register_load = ex_register_store = ex_register_move = ex_registers


def ex_select_reduce():
    x = _distinct((128, 48))
    pred = (RNG.uniform(size=(128, 48)) < 0.5).astype(np.uint8)
    pred[:, 0] = 1

    def k(x, pred):
        d, best = _sb((128, 48)), _sb((128, 1))
        nisa.select_reduce(dst=d, predicate=_load(pred), on_true=_load(x), on_false=-100.0,
                           reduce_res=best)
        return _out(d), _out(best)

    d, best = nki.simulate(k)(x, pred)
    want = np.where(pred != 0, x, -100.0)
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(best[:, 0], want.max(1))


def ex_sequence_bounds():
    ids = np.array([[3, 3, 0, 5, 5, 5, 1, 0, 0, 2, 2, 4, 4, 4, 4, 7]], np.int32)

    def k(ids):
        d = _sb((1, 2, 16), nl.int32)
        nisa.sequence_bounds(dst=d, segment_ids=_load(ids))
        return _out(d)

    got = nki.simulate(k)(ids)
    start, end = np.empty(16, np.int32), np.empty(16, np.int32)
    for i, v in enumerate(ids[0]):
        if v == 0:
            start[i], end[i] = 16, -1
            continue
        a = i
        while a > 0 and ids[0, a - 1] == v:
            a -= 1
        b = i
        while b < 15 and ids[0, b + 1] == v:
            b += 1
        start[i], end[i] = a, b + 1
    np.testing.assert_array_equal(got[0], np.stack([start, end]))


def ex_tensor_copy_predicated():
    x, y = _f32((128, 32)), _f32((128, 32))
    pred = (RNG.uniform(size=(128, 32)) < 0.5).astype(np.uint8)

    def k(x, y, pred):
        d = _load(y)
        nisa.tensor_copy_predicated(dst=d, src=_load(x), predicate=_load(pred))
        return _out(d)

    np.testing.assert_array_equal(nki.simulate(k)(x, y, pred), np.where(pred != 0, x, y))


def ex_tensor_scalar_cumulative():
    x = _f32((128, 32))

    def k(x):
        d = _sb((128, 32))
        nisa.tensor_scalar_cumulative(dst=d, src=_load(x), op0=nl.multiply, op1=nl.add,
                                      imm0=2.0)
        return _out(d)

    np.testing.assert_allclose(nki.simulate(k)(x), np.cumsum(2.0 * x.astype(np.float64), 1),
                               rtol=1e-5, atol=1e-5)


def ex_topk():
    n, K = 128, 16
    src = _distinct((128, 8)).astype(ml_dtypes.bfloat16)   # distinct, exact in bf16

    def k(src):
        vals, idx = _sb((128, 16), nl.bfloat16), _sb((128, 16), nl.uint32)
        nisa.memset(dst=idx, value=0)
        nisa.topk(val_dst=vals, idx_dst=idx, src=_load(src), n=n)
        return _out(vals), _out(idx)

    vals, idx = nki.simulate(k)(src)
    for g in range(8):
        snake = np.array([float(src[16 * g + i % 16, i // 16]) for i in range(n)])
        order = np.argsort(-snake, kind="stable")[:K][::-1]   # ascending
        got_idx = np.array([idx[16 * g + j % 16, j // 16] for j in range(K)])
        got_val = np.array([float(vals[16 * g + j % 16, j // 16]) for j in range(K)])
        np.testing.assert_array_equal(got_idx, order)
        np.testing.assert_array_equal(got_val, snake[order])


EXERCISES = {name[3:]: fn for name, fn in list(globals().items()) if name.startswith("ex_")}


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_exercise(name):
    EXERCISES[name]()


# ------------------------------------------------------------------------------------------
# the table-driven calls: engine choice, argument names, diagnostics


def _asm(kernel, *arrays, target="trn2"):
    return nki.trace(kernel, *arrays, target=target).asm


def test_engine_selects_the_table_entry():
    def k(x):
        xs, d = _load(x), _sb((128, 8))
        nisa.tensor_scalar(d, xs, nl.multiply, 2.0, engine=nisa.gpsimd_engine)
        nisa.tensor_scalar(d, xs, nl.multiply, 2.0, op1=nl.add, operand1=1.0,
                           engine=nisa.scalar_engine)
        nisa.tensor_scalar(d, xs, nl.multiply, 2.0)
        nisa.rng(dst=_sb((128, 8), nl.uint32), engine=nisa.gpsimd_engine)
        return _out(d)

    asm = _asm(k, np.zeros((128, 8), np.float32))
    assert "gpsimd.tensor_scalar" in asm and "scalar.tensor_scalar" in asm
    assert "vector.tensor_scalar" in asm and "gpsimd.rng" in asm


def test_unknown_engine_and_argument_are_located_errors():
    def bad_engine(x):
        nisa.max8(dst=_sb((128, 8)), src=_load(x), engine=nisa.scalar_engine)

    def bad_arg(x):
        nisa.max8(dst=_sb((128, 8)), data2=_load(x))

    def wrong_target(x):
        nisa.rand2(dst=_sb((128, 8)), min=0.0, max=1.0)

    x = np.zeros((128, 8), np.float32)
    with pytest.raises(NkiError, match="does not run on engine='scalar'") as e:
        nki.trace(bad_engine, x)
    assert e.value.location.line == bad_engine.__code__.co_firstlineno + 1
    with pytest.raises(NkiError, match="has no argument 'data2' in NKI 0.6"):
        nki.trace(bad_arg, x)
    with pytest.raises(NkiError, match="needs target trn3"):
        nki.trace(wrong_target, x)


def test_accepted_arguments_only_at_modelled_values():
    def k(x):
        xs = _load(x)
        nisa.select_reduce(dst=_sb((128, 8)), predicate=xs, on_true=xs, on_false=0.0,
                           reduce_op=nl.minimum)

    with pytest.raises(NkiUnsupported, match="reduce_op=minimum"):
        nki.trace(k, np.zeros((128, 8), np.uint8))


def test_dma_copy_06_signature():
    def k(x):
        t = _sb((128, 8))
        nisa.dma_copy(t, x, priority=1, engine=nisa.engine.sync)
        nisa.dma_copy(dst=t, src=x, dst_rmw_op=nl.add)

    with pytest.raises(NkiUnsupported, match=r"dst_rmw_op=...\) was removed in NKI 0.3") as e:
        nki.trace(k, np.zeros((128, 8), np.float32))
    assert e.value.location.line == k.__code__.co_firstlineno + 3


def test_tensor_copy_rounds_to_the_tutorials_dtype():
    x = np.array([[1 + 2 ** -10, 3.0, -1 - 2 ** -9, 0.1]] * 128, np.float32)

    def k(x):
        t, u = _load(x), _sb((128, 4))
        nisa.tensor_copy(src=t, dst=u, dtype=nl.bfloat16)   # rounded to bf16, stored as fp32
        return _out(u)

    np.testing.assert_array_equal(nki.simulate(k)(x),
                                  x.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_every_nki_name_of_the_tables_is_defined():
    """A table entry with ``nki = "nki.isa.NAME"`` (or ``nki.collectives.NAME``) makes the call
    exist; the table-driven ones document their entry."""
    import neuronemu.nki.collectives as ncc
    from neuronemu.isa.table import load_isa

    for d in load_isa().instructions.values():
        if not d.nki:
            continue
        module, name = d.nki.rsplit(".", 1)
        namespace = {"nki.isa": vars(nisa), "nki.collectives": vars(ncc)}[module]
        assert callable(namespace.get(name)), d.nki
    assert "vector.find_index8" in nisa.nc_find_index8.__doc__
