"""Every ``nki.language`` name of NKI 0.6 exists in neuronemu.nki.language (issue 25), and the
convenience wrappers built from several instructions give the values their definitions say.

The names are the functions, classes and constants of ``nki/api/nki/language/__init__.py`` at
aws-neuron/aws-neuron-sdk@81ce03ae (Neuron SDK 2.32; 103 functions, listed by name only). The
kernels below are written here from each function's definition and checked against numpy
float64 (or exact integers where the result is exact)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from nki_kernels import hbm_copy, sbuf_copy

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki

_FUNCTION_NAMES = """
abs abs_max abs_min add affine_range all arctan bitwise_and bitwise_or bitwise_xor broadcast_to
ceil copy cos device_print divide dropout ds dynamic_range empty_like equal erf erf_dx exp
expand_dims floor fmod fori_loop full gather_flattened gelu gelu_apprx_sigmoid
gelu_apprx_sigmoid_dx gelu_apprx_tanh gelu_dx greater greater_equal invert is_hbm is_on_chip
is_psum is_sbuf left_shift less less_equal load load_transpose2d log logical_and logical_not
logical_or logical_xor matmul max maximum mean min minimum mish mod multiply ndarray negative
no_reorder not_equal num_programs ones power prod program_id program_ndim rand random_seed
reciprocal relu right_shift rms_norm rsqrt sequential_range shared_constant
shared_identity_matrix sigmoid sign silu silu_dx sin softmax softplus sqrt square static_range
store subtract sum tan tanh transpose trunc var where while_loop zeros zeros_like
"""
NKI_06_LANGUAGE_FUNCTIONS = _FUNCTION_NAMES.split()
NKI_06_LANGUAGE_OTHER = ["MemoryRegion", "NKIObject", "NkiTensor", "DType", "average", "prelu",
                         "bypass", "tfloat32"]

RNG = np.random.default_rng(2506)


def test_the_function_list_has_103_names():
    assert len(NKI_06_LANGUAGE_FUNCTIONS) == len(set(NKI_06_LANGUAGE_FUNCTIONS)) == 103


@pytest.mark.parametrize("name", NKI_06_LANGUAGE_FUNCTIONS + NKI_06_LANGUAGE_OTHER)
def test_name_is_defined(name):
    """Defined in the module itself, not answered by the located-error stub of unknown names."""
    assert name in vars(nl), name


def test_the_isa_classes_of_0_6_exist():
    assert issubclass(nisa.NkiValidationError, Exception)
    assert issubclass(nisa.NkiInstruction, nl.NKIObject)


def test_tfloat32_tiles_round_to_10_mantissa_bits():
    x = np.full((128, 2), [1.0000001, 3.14159265], np.float32)

    def k(x):
        t = _load(x)
        narrow = nl.ndarray(x.shape, dtype=nl.tfloat32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=narrow, src=t)
        back = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=back, src=narrow)
        return _out(back)

    # nearest even at 2^-10 relative steps: 1.0000001 -> 1.0, pi -> 3.140625 (hand-computed)
    np.testing.assert_array_equal(nki.simulate(k)(x)[0], np.float32([1.0, 3.140625]))


_load, _out = sbuf_copy, hbm_copy


def _unary(fn, x, **kwargs):
    return nki.simulate(lambda x: _out(fn(_load(x), **kwargs)))(x)


# ------------------------------------------------------------------------------------------
# rounding to integers: exact, signs of zero included, at the edges of float32


def _rounding_cases() -> np.ndarray:
    edges = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1e-30,
             -1e-30, 2.0 ** 22 + 0.5, -(2.0 ** 22 + 0.5), 2.0 ** 23 - 0.5, -(2.0 ** 23 - 0.5),
             2.0 ** 23, 2.0 ** 24 + 2, 3.0e9, -3.0e9, 3.0e38, -3.0e38, np.inf, -np.inf, np.nan]
    values = np.concatenate([np.array(edges, np.float32),
                             RNG.uniform(-1000, 1000, 128 * 16 - len(edges)).astype(np.float32)])
    return values.reshape(128, 16)


@pytest.mark.parametrize("name,oracle", [("floor", np.floor), ("ceil", np.ceil),
                                         ("trunc", np.trunc)])
def test_rounding_to_integers_is_exact(name, oracle):
    x = _rounding_cases()
    got = _unary(getattr(nl, name), x)
    want = oracle(x)
    # bit for bit: -0.0 where numpy gives -0.0, NaN where it gives NaN
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_rounding_a_bfloat16_tile_keeps_its_dtype():
    x = RNG.uniform(-50, 50, (128, 8)).astype(ml_dtypes.bfloat16)
    got = _unary(nl.floor, x)
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float64), np.floor(x.astype(np.float64)))


@pytest.mark.parametrize("name,oracle", [("fmod", np.fmod), ("mod", np.mod)])
def test_remainders_follow_numpy_signs(name, oracle):
    # integer-valued operands: every step is exact in float32, so the remainders are exact
    x = RNG.integers(-1000, 1000, (128, 32)).astype(np.float32)
    y = RNG.choice(np.array([-7, -3, 2, 5, 9], np.float32), (128, 32))
    got = nki.simulate(lambda x, y: _out(getattr(nl, name)(_load(x), _load(y))))(x, y)
    np.testing.assert_array_equal(got, oracle(x.astype(np.float64), y.astype(np.float64)))
    by_number = nki.simulate(lambda x: _out(getattr(nl, name)(_load(x), 3.0)))(x)
    np.testing.assert_array_equal(by_number, oracle(x.astype(np.float64), 3.0))


def test_remainders_of_fractions_are_within_float32_rounding():
    x = RNG.uniform(-10, 10, (128, 32)).astype(np.float32)
    got = nki.simulate(lambda x: _out(nl.fmod(_load(x), 0.75)))(x)
    want = np.fmod(x.astype(np.float64), np.float64(np.float32(0.75)))
    # away from the multiples of y (where the rounded quotient may pick the other side)
    clear = np.abs(want) > 1e-4
    np.testing.assert_allclose(got[clear], want[clear], atol=4e-6)


# ------------------------------------------------------------------------------------------
# elementwise


def test_logical_not_of_zeros_and_ones():
    x = RNG.integers(0, 2, (128, 16)).astype(np.float32)
    np.testing.assert_array_equal(_unary(nl.logical_not, x), 1.0 - x)


def test_cos_and_tan():
    x = RNG.uniform(-3.0, 3.0, (128, 32)).astype(np.float32)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(_unary(nl.cos, x), np.cos(x64), atol=1e-6)
    clear = np.abs(np.cos(x64)) > 0.05     # tan grows fast near its poles
    np.testing.assert_allclose(_unary(nl.tan, x)[clear], np.tan(x64)[clear], rtol=2e-5,
                               atol=1e-6)


def test_gelu_apprx_sigmoid_dx_is_the_derivative_of_x_sigmoid_1702x():
    x = RNG.uniform(-4.0, 4.0, (128, 32)).astype(np.float32)
    x64 = x.astype(np.float64)
    s = 1.0 / (1.0 + np.exp(-1.702 * x64))
    np.testing.assert_allclose(_unary(nl.gelu_apprx_sigmoid_dx, x),
                               s + 1.702 * x64 * s * (1.0 - s), atol=1e-5)


def test_where_takes_x_where_the_condition_holds():
    cond = RNG.integers(0, 2, (128, 24)).astype(np.float32)
    x = RNG.standard_normal((128, 24)).astype(np.float32)
    y = RNG.standard_normal((128, 24)).astype(np.float32)
    x[0, 0], cond[0, 0] = np.nan, 1.0            # a chosen NaN stays NaN
    got = nki.simulate(lambda c, x, y: _out(nl.where(_load(c), _load(x), _load(y))))(
        cond, x, y)
    np.testing.assert_array_equal(got, np.where(cond != 0, x, y))
    by_number = nki.simulate(lambda c, y: _out(nl.where(_load(c), 10.0, _load(y))))(cond, y)
    np.testing.assert_array_equal(by_number, np.where(cond != 0, np.float32(10.0), y))


# ------------------------------------------------------------------------------------------
# reductions and normalisations over the last free axes


def test_var_and_all():
    x = RNG.standard_normal((128, 3, 40)).astype(np.float32)
    x64 = x.astype(np.float64)
    got = _unary(nl.var, x, axis=2)
    assert got.shape == (128, 3, 1)
    np.testing.assert_allclose(got[..., 0], x64.var(axis=2), rtol=1e-5)
    np.testing.assert_allclose(_unary(nl.var, x, axis=[1, 2])[:, :, 0].ravel(),
                               x64.reshape(128, -1).var(axis=1), rtol=1e-5)
    flags = (RNG.uniform(0, 1, (128, 12)) > 0.1).astype(np.float32)
    flags[5] = 1.0                               # some rows all true
    got = _unary(nl.all, flags, axis=1)
    np.testing.assert_array_equal(got.reshape(128), flags.all(axis=1).astype(np.float32))


def test_softmax_over_the_free_axes():
    x = (RNG.standard_normal((128, 2, 64)) * 4).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=2, keepdims=True))
    np.testing.assert_allclose(_unary(nl.softmax, x, axis=2), e / e.sum(axis=2, keepdims=True),
                               rtol=2e-5, atol=1e-7)


def test_rms_norm():
    x = RNG.standard_normal((128, 96)).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, (128, 96)).astype(np.float32)
    got = nki.simulate(lambda x, w: _out(nl.rms_norm(_load(x), _load(w), axis=1, n=96)))(x, w)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).sum(axis=1, keepdims=True) / 96 + 1e-6) * w
    np.testing.assert_allclose(got, want, rtol=2e-5)


def test_a_reduction_over_the_partition_axis_is_a_located_error():
    x = np.ones((128, 8), np.float32)
    with pytest.raises(nki.NkiError, match="last free axes"):
        _unary(nl.softmax, x, axis=0)


# ------------------------------------------------------------------------------------------
# random numbers


def test_rand_is_uniform_on_the_24_bit_grid_and_reseedable():
    def k():
        seed = nl.ndarray((1, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.iota(seed, [[0, 1]], offset=77)
        nl.random_seed(seed)
        a = nl.rand((128, 64), dtype=nl.float32)
        nl.random_seed(seed)
        b = nl.rand((128, 64), dtype=nl.float32)
        return _out(a), _out(b)

    a, b = nki.simulate(k)()
    np.testing.assert_array_equal(a, b)                  # the same seed, the same values
    assert a.min() >= 0.0 and a.max() < 1.0
    assert np.array_equal(a * 2.0 ** 24, np.floor(a * 2.0 ** 24))
    # 8192 uniform draws: the mean is within 6 standard deviations of 1/2
    assert abs(a.mean() - 0.5) < 6 * math.sqrt(1 / 12 / a.size)


def test_dropout_zeroes_a_fraction_and_keeps_the_rest():
    x = RNG.uniform(1.0, 2.0, (128, 64)).astype(np.float32)
    got = _unary(nl.dropout, x, rate=0.5)
    dropped = got == 0
    assert np.array_equal(got[~dropped], x[~dropped])
    assert abs(dropped.mean() - 0.5) < 6 * math.sqrt(0.25 / x.size)


# ------------------------------------------------------------------------------------------
# data movement and the rest


def test_load_transpose2d_and_gather_flattened():
    for dtype in (np.float32, ml_dtypes.bfloat16):    # TensorE's way; the DMA's
        x = RNG.standard_normal((64, 128)).astype(dtype)
        got = nki.simulate(lambda x: _out(nl.load_transpose2d(x)))(x)
        np.testing.assert_array_equal(got, x.T)
    data = RNG.standard_normal((128, 4, 16)).astype(np.float32)
    index = RNG.integers(0, 64, (128, 20)).astype(np.uint32)
    got = nki.simulate(lambda d, i: _out(nl.gather_flattened(_load(d), _load(i))))(data, index)
    np.testing.assert_array_equal(got, np.take_along_axis(data.reshape(128, 64),
                                                          index.astype(np.int64), axis=1))


def test_no_reorder_is_a_context_that_changes_nothing():
    x = RNG.standard_normal((128, 8)).astype(np.float32)

    def k(x):
        with nl.no_reorder():
            t = nl.add(_load(x), 1.0)
        return _out(t)

    np.testing.assert_array_equal(nki.simulate(k)(x), x + np.float32(1.0))


def test_device_print_shows_the_values_at_that_point(capsys):
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)

    def k(x):
        t = _load(x)
        nl.device_print("before:", t)
        nisa.memset(t, 0.0)
        return _out(t)

    got = nki.simulate(k)(x)
    printed = capsys.readouterr().out
    assert printed.startswith("before: ") and "511." in printed     # the loaded values
    np.testing.assert_array_equal(got, np.zeros_like(x))
