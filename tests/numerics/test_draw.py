"""neuronemu.numerics.draw.normal gives numpy's ``Generator.normal`` values bit for bit and leaves
the generator where numpy's call leaves it. Oracle: numpy's own call on a generator of the same
seed (the values every default input and the golden corpus pin)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.numerics import draw


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (0.3, 1.7), (-2.0, 0.01), (5.0, 0.0)])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_same_values_and_state_as_numpy(seed: int, loc: float, scale: float) -> None:
    count = draw.MIN_FAST + 4099   # odd, and over the threshold: the compiled path
    ours, theirs = np.random.default_rng([seed, 9]), np.random.default_rng([seed, 9])
    got = draw.normal(ours, loc, scale, count)
    expected = theirs.normal(loc, scale, size=count)
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
    assert ours.bit_generator.state == theirs.bit_generator.state
    # a later draw continues the same stream (slabs of one tensor are drawn one after another)
    np.testing.assert_array_equal(draw.normal(ours, loc, scale, count),
                                  theirs.normal(loc, scale, size=count))


def test_millions_of_values_cover_the_tail_and_the_wedges() -> None:
    """2^22 values: ~0.7% of them reject their first word (wedge test with exp, or the tail
    beyond r with log1p); every one must still match numpy."""
    rng, reference = np.random.default_rng(2026), np.random.default_rng(2026)
    count = 1 << 22
    got = draw.normal(rng, 0.0, 1.0, count)
    expected = reference.normal(0.0, 1.0, size=count)
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
    assert np.abs(expected).max() > 3.6541528853610088   # values from the tail were drawn
    # numpy consumed more words than values (the rejection paths ran), and so did we
    plain = np.random.default_rng(2026)
    plain.bit_generator.random_raw(count)
    assert reference.bit_generator.state != plain.bit_generator.state
    assert rng.bit_generator.state == reference.bit_generator.state


@pytest.mark.parametrize("dtype, width", [("bfloat16", np.uint16), ("float32", np.uint32)])
@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (0.3, 1.7), (-2.0, 1e-39), (5.0, 0.0)])
def test_storage_bits_are_numpys_values_cast(dtype: str, width, loc: float, scale: float) -> None:
    """normal_bits: the bits of numpy's values cast by numpy (float32) and ml_dtypes
    (bfloat16, through float32), the generator left where numpy's call leaves it. Oracle:
    numpy's draw and ml_dtypes' astype (a scale of 1e-39 gives float32 subnormals)."""
    import ml_dtypes

    count = draw.MIN_FAST + 4099
    ours, theirs = np.random.default_rng([7, 9]), np.random.default_rng([7, 9])
    out = np.empty(count, dtype=width)
    assert draw.normal_bits(ours, loc, scale, out)
    values = theirs.normal(loc, scale, size=count).astype(np.float32)
    if dtype == "bfloat16":
        values = values.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out, values.view(width))
    assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("dtype, width, loc", [("bfloat16", np.uint16, 3.3e38),
                                               ("float32", np.uint32, 3.4e38)])
def test_storage_bits_refuse_values_past_the_dtype(dtype: str, width, loc: float) -> None:
    """A value that overflows the dtype (its bits are the general cast's to decide) makes
    normal_bits return False with the generator untouched; so do other generators and draws
    below MIN_FAST."""
    rng = np.random.default_rng(4)
    before = rng.bit_generator.state
    assert not draw.normal_bits(rng, loc, 1e37, np.empty(draw.MIN_FAST, dtype=width))
    assert rng.bit_generator.state == before
    assert not draw.normal_bits(rng, 0.0, 1.0, np.empty(draw.MIN_FAST - 1, dtype=width))
    assert not draw.normal_bits(np.random.Generator(np.random.MT19937(3)), 0.0, 1.0,
                                np.empty(draw.MIN_FAST, dtype=width))
    assert rng.bit_generator.state == before


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("init", ["normal(0.5, 2)", "normal(3.0e38, 1.0e38)"])
def test_a_run_stores_the_general_casts_bits(dtype: str, init: str) -> None:
    """A run's default input (drawn into HBM by normal_bits, or the general way when a value
    overflows) holds the bits of numpy's whole draw cast by neuronemu.numerics.convert (whose
    own tests check it against ml_dtypes and the encoder)."""
    import zlib

    import neuronemu
    from neuronemu.numerics.convert import to_bits

    program = neuronemu.assemble(f".hbm w {dtype}[512, 512] input init={init}\n", "k.s")
    loc, scale = (float(p) for p in init[len("normal("):-1].split(", "))
    rng = np.random.default_rng([3, zlib.crc32(b"w")])
    expected = to_bits(rng.normal(loc, scale, size=(512, 512)), dtype)
    got = neuronemu.run(program, seed=3).tensors["w"]
    np.testing.assert_array_equal(got.view(expected.dtype), expected)


def test_small_draws_and_other_generators_are_numpys_call() -> None:
    rng = np.random.Generator(np.random.MT19937(3))
    np.testing.assert_array_equal(draw.normal(rng, 0.0, 1.0, draw.MIN_FAST + 1),
                                  np.random.Generator(np.random.MT19937(3)).normal(
                                      size=draw.MIN_FAST + 1))
    np.testing.assert_array_equal(draw.normal(np.random.default_rng(1), 0.0, 1.0, 10),
                                  np.random.default_rng(1).normal(size=10))


@pytest.mark.parametrize("init, whole", [
    ("normal(0.5, 2)", lambda rng, n: rng.normal(0.5, 2.0, size=n)),
    ("relu_normal(0, 1)", lambda rng, n: np.maximum(rng.normal(0.0, 1.0, size=n), 0.0)),
])
def test_default_input_pieces_mix_both_paths(monkeypatch, init: str, whole) -> None:
    """A tensor drawn in pieces of 150,000 (compiled path) and a last piece of 112,144 (numpy's
    call, under MIN_FAST) from one generator: the values of one numpy draw of the whole."""
    import zlib

    import neuronemu
    from neuronemu.exec import core

    monkeypatch.setattr(core, "SLAB_ELEMENTS", 150_000)
    program = neuronemu.assemble(f".hbm w float32[512, 512] input init={init}\n", "k.s")
    expected = whole(np.random.default_rng([3, zlib.crc32(b"w")]), 512 * 512)
    got = core.initial_values(program.tensors["w"], 3).ravel()
    np.testing.assert_array_equal(got.view(np.uint64), expected.view(np.uint64))
