"""Tensor indirection (``t.indirect(index)``, NeuronCore-v4) as operands of tensor_copy,
tensor_tensor, tensor_copy_predicated and nc_matmul, against numpy oracles that read the
offsets the way NKI documents them: offset k of the group of G partitions holding partition q
is index[G g + k % G, k // G] (G = 16 for the Vector / Scalar / GpSimd engines, 32 for the
Tensor engine)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.errors import RuntimeFault
from neuronemu.nki._trace import NkiError, NkiUnsupported

P, F = 32, 64


def offsets(index: np.ndarray, group: int, count: int) -> np.ndarray:
    """[P, count]: the free offset partition q uses for column k (the documented snake)."""
    out = np.empty((index.shape[0], count), np.int64)
    for q in range(index.shape[0]):
        g = q // group
        for k in range(count):
            out[q, k] = index[group * g + k % group, k // group]
    return out


def snake_index(rng, group: int, k: int) -> np.ndarray:
    """An int32 [P, k] index whose groups each hold distinct offsets in snake order."""
    index = np.zeros((P, k), np.int32)
    for g in range(P // group):
        chosen = rng.permutation(F)[:group * k]
        for i, v in enumerate(chosen):
            index[group * g + i % group, i // group] = v
    return index


def _load(x, dtype=None):
    t = nl.ndarray(x.shape, dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def _store(t):
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def vector_kernel(x, idx, cols, c):
    xs, ix, cs, cc = _load(x), _load(idx), _load(cols), _load(c)
    gathered = nl.ndarray((P, 24), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=gathered, src=xs.indirect(ix, num_elem=24))
    added = nl.ndarray((P, 24), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=added, data1=xs.indirect(ix, num_elem=24), data2=cc, op=nl.add)
    scattered = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=scattered, src=xs)
    nisa.tensor_copy(dst=scattered.indirect(ix, num_elem=24), src=cs)
    return _store(gathered), _store(added), _store(scattered)


def test_gather_and_scatter_on_the_vector_engine():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((P, F)).astype(np.float32)
    idx = snake_index(rng, 16, 2)
    cols = rng.standard_normal((P, 24)).astype(np.float32)
    c = rng.standard_normal((P, 24)).astype(np.float32)
    tr = nki.trace(vector_kernel, x, idx, cols, c, target="trn3")
    assert "vector.indirect_gather" in tr.asm and "group=16" in tr.asm
    gathered, added, scattered = nki.simulate(vector_kernel, target="trn3")(x, idx, cols, c)
    o = offsets(idx, 16, 24)
    want = np.take_along_axis(x, o, axis=1)
    np.testing.assert_array_equal(gathered, want)
    np.testing.assert_array_equal(added, want + c)
    expect = x.copy()
    for q in range(P):
        expect[q, o[q]] = cols[q]
    np.testing.assert_array_equal(scattered, expect)
    assert not np.array_equal(o[0], o[16])   # the two groups really read different offsets


def matmul_kernel(w, m, idx, m2):
    ws = _load(w)
    ms = _load(m)
    ix = _load(idx)
    m2s = _load(m2)
    gathered = nl.ndarray((P, 48), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=gathered, stationary=ws, moving=ms.indirect(ix, num_elem=48))
    acc = nl.ndarray((P, F), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=ws, moving=ms)                       # writes all
    nisa.nc_matmul(dst=acc.indirect(ix, num_elem=48), stationary=ws, moving=m2s)   # adds
    g = nl.ndarray((P, 48), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=g, src=gathered)
    a = nl.ndarray((P, F), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=a, src=acc)
    return _store(g), _store(a)


def test_matmul_reads_and_accumulates_through_groups_of_32():
    """moving gathered with G = 32 (one group over the 32 contraction partitions); dst
    scattered: the indirect columns of acc gain a second product, the others keep the
    first. Small integers in bf16: every sum is exact."""
    rng = np.random.default_rng(2)
    bf16 = ml_dtypes.bfloat16
    w = rng.integers(-3, 4, (P, P)).astype(bf16)
    m = rng.integers(-3, 4, (P, F)).astype(bf16)
    m2 = rng.integers(-3, 4, (P, 48)).astype(bf16)
    idx = snake_index(rng, 32, 2)
    tr = nki.trace(matmul_kernel, w, m, idx, m2, target="trn3")
    assert "group=32" in tr.asm
    gathered, acc = nki.simulate(matmul_kernel, target="trn3")(w, m, idx, m2)
    w64, m64, m264 = (a.astype(np.float64) for a in (w, m, m2))
    o = offsets(idx, 32, 48)[0]
    np.testing.assert_array_equal(gathered, w64.T @ m64[:, o])
    want = w64.T @ m64
    want[:, o] += w64.T @ m264
    np.testing.assert_array_equal(acc, want)


def test_predicated_copy_into_indirect_columns_keeps_the_rest():
    def kernel(x, idx, src, pred):
        xs, ix, ss, ps = _load(x), _load(idx), _load(src), _load(pred)
        nisa.tensor_copy_predicated(dst=xs.indirect(ix, num_elem=16), src=ss, predicate=ps)
        return _store(xs)

    rng = np.random.default_rng(3)
    x = rng.standard_normal((P, F)).astype(np.float32)
    idx = snake_index(rng, 16, 1)
    src = rng.standard_normal((P, 16)).astype(np.float32)
    pred = rng.integers(0, 2, (P, 16)).astype(np.uint8)
    out = nki.simulate(kernel, target="trn3")(x, idx, src, pred)
    o = offsets(idx, 16, 16)
    want = x.copy()
    for q in range(P):
        want[q, o[q]] = np.where(pred[q] != 0, src[q], x[q, o[q]])
    np.testing.assert_array_equal(out, want)


def test_an_offset_outside_the_tile_is_a_run_time_fault():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((P, F)).astype(np.float32)
    idx = snake_index(rng, 16, 2)
    idx[17, 1] = F          # group 1, offset 17 of its list: past the 64 columns
    cols = np.zeros((P, 24), np.float32)
    with pytest.raises(RuntimeFault, match=r"\[17, 1\] = 64 is not an element of .* \(0..63"):
        nki.simulate(vector_kernel, target="trn3")(x, idx, cols, cols)


def test_misuse_is_a_located_error():
    x = np.zeros((P, F), np.float32)
    idx = np.zeros((P, 2), np.int32)

    def before_v4(x, idx):
        xs, ix = _load(x), _load(idx)
        xs.indirect(ix)

    with pytest.raises(NkiError, match=r"needs NeuronCore-v4 \(trn3\)") as e:
        nki.trace(before_v4, x, idx, target="trn2")
    assert e.value.location.line == before_v4.__code__.co_firstlineno + 2

    def float_index(x, idx):
        xs = _load(x)
        xs.indirect(_load(x))

    with pytest.raises(NkiError, match="index must be an integer SBUF tile"):
        nki.trace(float_index, x, idx, target="trn3")

    def other_operand(x, idx):
        xs, ix = _load(x), _load(idx)
        out = nl.ndarray((P, 32), nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=xs[:, 0:32], data2=xs.indirect(ix), op=nl.add)

    with pytest.raises(NkiUnsupported, match="applies to dst, data1 of tensor_tensor"):
        nki.trace(other_operand, x, idx, target="trn3")

    def other_call(x, idx):
        xs, ix = _load(x), _load(idx)
        out = nl.ndarray((P, 32), nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=out, op=nl.exp, data=xs.indirect(ix))

    with pytest.raises(NkiUnsupported, match="operand of nisa.tensor_copy"):
        nki.trace(other_call, x, idx, target="trn3")

    def sliced(x, idx):
        xs, ix = _load(x), _load(idx)
        xs.indirect(ix)[:, 0:4]

    with pytest.raises(NkiError, match="cannot be sliced"):
        nki.trace(sliced, x, idx, target="trn3")

    def too_many(x, idx):   # P = 32 > G = 16: index.size offsets exceed a group's 16 x 2
        xs, ix = _load(x), _load(idx)
        out = nl.ndarray((P, 64), nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=out, src=xs.indirect(ix))

    with pytest.raises(neuronemu.AsmError, match="count=64 exceeds the 32 offsets of a group"):
        nki.trace(too_many, x, idx, target="trn3").assemble()
