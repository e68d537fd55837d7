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


def test_a_value_whose_words_run_out_is_redone() -> None:
    """The compiled loop given only as many words as values stops at a value it cannot finish
    and reports how far it got; drawing more words and continuing gives numpy's values."""
    count = 50_000
    words = np.random.default_rng(5).bit_generator.random_raw(count)
    out = np.empty(count)
    done, used = draw._normals(words, out, 0, 0.0, 1.0)
    assert done < count and used <= count   # some value needed more than one word
    expected = np.random.default_rng(5).normal(size=count)
    np.testing.assert_array_equal(out[:done], expected[:done])


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
