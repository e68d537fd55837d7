"""neuronemu.compiled.jit's two compile-time savings, checked on functions of their own (numba's
dispatchers record what they compiled): a helper called with constants and with variables
compiles once, and a kernel calling its semantics function through ``inlined`` does not compile
that function on its own. Also neuronemu.compiled.arrays.viewed against numpy's view."""

from __future__ import annotations

import numpy as np
from numba import cfunc, types

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import inlined, jit


@jit(cache=False)
def _scaled(x, step, offset):
    return x * step + offset


@jit(cache=False)
def _with_constants(x):
    return _scaled(x, 2, 1)


@jit(cache=False)
def _with_variables(x, step, offset):
    return _scaled(x, step, offset)


def test_constants_and_variables_share_one_compile():
    assert _with_constants(np.int64(3)) == 7
    assert _with_variables(np.int64(3), np.int64(2), np.int64(1)) == 7
    assert _with_constants(np.int64(5)) == 11
    # one specialisation (int64, int64, int64), not one for Literal[int](2), Literal[int](1)
    assert [tuple(str(t) for t in sig) for sig in _scaled.signatures] == [("int64",) * 3]


@jit(cache=False)
def _semantics(x):
    return x + 1


_semantics_inlined = inlined(_semantics)


def _kernel(x):
    return _semantics_inlined(x) * 2


def test_an_inlined_function_is_compiled_inside_its_caller_only():
    compiled = cfunc(types.int64(types.int64))(_kernel)
    assert compiled.ctypes(20) == 42
    assert _semantics.signatures == [] and _semantics_inlined.signatures == []
    # the original is still an ordinary jitted function
    assert _semantics(np.int64(1)) == 2


@jit(cache=False)
def _views(mem):
    words = viewed(mem, np.float32)
    words[1, 2] = np.float32(3.5)   # writes reach the bytes
    return (viewed(mem, np.uint16).copy(), viewed(mem, np.uint32).copy(), words.shape[1],
            words.strides[0], words.strides[1])


@jit(cache=False)
def _first_word(values):
    return viewed(values, np.uint32)[0]


def test_viewed_is_numpys_view_of_a_c_contiguous_array():
    mem = np.random.default_rng(3).integers(0, 256, (4, 64), dtype=np.uint8)
    expected = mem.copy()
    expected.view(np.float32)[1, 2] = np.float32(3.5)
    halves, words, n, row_stride, stride = _views(mem)
    np.testing.assert_array_equal(mem, expected)
    np.testing.assert_array_equal(halves, expected.view(np.uint16))
    np.testing.assert_array_equal(words, expected.view(np.uint32))
    assert (n, row_stride, stride) == (16, 64, 4)
    one = np.array([-1.25], dtype=np.float32)
    assert _first_word(one) == one.view(np.uint32)[0]
