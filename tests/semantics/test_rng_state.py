"""rand_get_state / rand_set_state: saving the random stream and restoring it replays the same
draws; the state words are the documented (seed, draws) layout."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError


def _run(text: str, target: str, seed: int = 5):
    return neuronemu.run(neuronemu.assemble(f".target {target}\n{text}", "k.s"), seed=seed)


@pytest.mark.parametrize("engine, words, target", [("vector", 24, "trn3"),
                                                   ("gpsimd", 6, "trn2"),
                                                   ("gpsimd", 6, "trn3")])
def test_restoring_the_state_replays_the_draws(engine, words, target) -> None:
    rng = "vector.rng" if engine == "vector" or target == "trn3" else "gpsimd.rng"
    result = _run(f"""
.sbuf state uint32[128, {words}]
.sbuf a uint32[128, 64]
.sbuf b uint32[128, 64]
.sbuf c uint32[128, 64]
{rng} c
{engine}.rand_get_state state
{rng} a
{engine}.rand_set_state state
{rng} b
""", target)
    a, b, c = (result.tiles[k].astype(np.int64) for k in "abc")
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)  # the state was taken after one draw, not at the seed
    state = result.tiles["state"].astype(np.int64)
    # seed 5 (the run's), one draw done; the same words in every partition, zeros after word 3
    assert np.all(state[:, :4] == [5, 0, 1, 0])
    assert not state[:, 4:].any()


def test_a_state_from_set_rng_seed_matches_a_saved_one() -> None:
    """Setting the state (seed s, 0 draws) by hand equals vector.set_rng_seed s."""
    result = _run("""
.sbuf seed uint32[1, 1]
.sbuf state uint32[128, 24]
.sbuf a uint32[128, 16]
.sbuf b uint32[128, 16]
gpsimd.iota seed, base=4321, channel_multiplier=0, step=0
vector.set_rng_seed seed
vector.rng a
gpsimd.iota state, base=0, channel_multiplier=0, step=0
gpsimd.iota state[:, 0:1], base=4321, channel_multiplier=0, step=0
vector.rand_set_state state
vector.rng b
""", "trn3")
    assert np.array_equal(result.tiles["a"], result.tiles["b"])


@pytest.mark.parametrize("text, message", [
    (".target trn2\n.sbuf s uint32[128, 24]\nvector.rand_get_state s\n", "trn3"),
    (".target trn3\n.sbuf s uint32[128, 8]\nvector.rand_get_state s\n", "24"),
    (".target trn1\n.sbuf s uint32[128, 6]\ngpsimd.rand_set_state s\n", "trn2"),
    (".target trn3\n.sbuf s float32[128, 6]\ngpsimd.rand_set_state s\n", "uint32"),
])
def test_misuse_is_a_located_error(text, message) -> None:
    with pytest.raises(AsmError) as err:
        neuronemu.assemble(text, "k.s")
    assert message in err.value.message
    assert err.value.location is not None
