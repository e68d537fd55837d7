"""rng, rand2, dropout and set_rng_seed: statistics of the stream (per-bit frequencies, byte
chi-square, drop rates within a few sigma), exact bit preservation of kept elements, and
reproducibility. The values are neuronemu's documented generator, not the device's, so the
oracles are distributional."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError


def run(src: str, target: str = "trn2", seed: int = 0, **inputs):
    program = neuronemu.assemble(src, "kernel.s", target=target)
    return neuronemu.run(program, inputs=inputs, seed=seed)


RNG = """.sbuf bits uint32[128, 512]
.sbuf low uint8[128, 512]
.sbuf again uint32[128, 512]
vector.rng bits
vector.rng again
"""


def test_rng_bits_are_uniform() -> None:
    words = run(RNG).tiles["bits"].astype(np.uint64).ravel()
    n = words.size  # 65536
    sigma = np.sqrt(0.25 / n)
    for bit in range(32):
        frequency = np.mean((words >> np.uint64(bit)) & np.uint64(1))
        assert abs(frequency - 0.5) < 5 * sigma, bit
    # chi-square of the low byte over 256 cells: 255 degrees of freedom, mean 255, sd ~22.6
    counts = np.bincount((words & np.uint64(0xFF)).astype(np.int64), minlength=256)
    chi2 = np.sum((counts - n / 256) ** 2 / (n / 256))
    assert 255 - 6 * 22.6 < chi2 < 255 + 6 * 22.6


def test_rng_is_reproducible_and_advances() -> None:
    a, b = run(RNG), run(RNG)
    np.testing.assert_array_equal(a.tiles["bits"], b.tiles["bits"])
    # the second draw differs from the first; another run seed gives another stream
    assert np.mean(a.tiles["bits"] == a.tiles["again"]) < 0.01
    other = run(RNG, seed=1)
    assert np.mean(a.tiles["bits"] == other.tiles["bits"]) < 0.01


def test_narrow_rng_keeps_the_low_bits() -> None:
    wide = run(".sbuf w uint32[16, 64]\nvector.rng w\n").tiles["w"]
    narrow = run(".sbuf n uint8[16, 64]\nvector.rng n\n").tiles["n"]
    np.testing.assert_array_equal(narrow, (wide & 0xFF).astype(np.uint8))


def test_set_rng_seed_restarts_the_stream() -> None:
    src = """.hbm s uint32[1, 1] input
.sbuf seed uint32[1, 1]
.sbuf first uint32[8, 32]
.sbuf second uint32[8, 32]
dma.copy seed, s
vector.set_rng_seed seed
vector.rng first
vector.set_rng_seed seed
vector.rng second
"""
    a = run(src, s=np.array([[7]], np.uint32))
    np.testing.assert_array_equal(a.tiles["first"], a.tiles["second"])
    b = run(src, seed=99, s=np.array([[7]], np.uint32))  # the run seed no longer matters
    np.testing.assert_array_equal(a.tiles["first"], b.tiles["first"])
    c = run(src, s=np.array([[8]], np.uint32))
    assert np.mean(a.tiles["first"] == c.tiles["first"]) < 0.05


def test_gpsimd_rng_target_gate_and_int_dtype() -> None:
    with pytest.raises(AsmError, match="not available on trn1"):
        neuronemu.assemble(".sbuf b uint32[4, 4]\ngpsimd.rng b\n", "k.s", target="trn1")
    with pytest.raises(AsmError, match="dst has dtype float32"):
        neuronemu.assemble(".sbuf b float32[4, 4]\nvector.rng b\n", "k.s")


DROPOUT = """.hbm x {dt}[128, 512] input
.hbm pr float32[128, 1] input
.sbuf xs {dt}[128, 512]
.sbuf prob float32[128, 1]
.sbuf out {dt}[128, 512]
dma.copy xs, x
dma.copy prob, pr
vector.dropout out, xs, prob={prob}
"""


@pytest.mark.parametrize("prob", [0.0, 0.3, 0.75, 1.0])
def test_dropout_rate_and_kept_bits(prob: float) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 512)).astype(np.float32)
    x[x == 0] = 1.0
    x[0, :4] = [np.nan, -0.0, np.inf, 1e-45]
    out = run(DROPOUT.format(dt="float32", prob=prob), x=x,
              pr=np.zeros((128, 1), np.float32)).tiles["out"]
    dropped = out.view(np.uint32) == 0
    kept = ~dropped
    np.testing.assert_array_equal(out.view(np.uint32)[kept], x.view(np.uint32)[kept])
    n = x.size
    rate = np.mean(dropped[x.view(np.uint32) != 0x80000000])  # -0.0 kept or dropped is +0 bits
    assert abs(rate - prob) <= 5 * np.sqrt(prob * (1 - prob) / n) + 1e-12


def test_dropout_per_partition_probability_and_ints() -> None:
    x = np.arange(1, 128 * 512 + 1, dtype=np.int32).reshape(128, 512)
    probs = np.linspace(0.0, 1.0, 128, dtype=np.float32).reshape(128, 1)
    out = run(DROPOUT.format(dt="int32", prob="prob"), x=x, pr=probs).tiles["out"]
    kept = out != 0
    np.testing.assert_array_equal(out[kept], x[kept])
    rates = 1.0 - kept.mean(axis=1)
    sigma = np.sqrt(probs[:, 0] * (1 - probs[:, 0]) / 512)
    assert np.all(np.abs(rates - probs[:, 0]) <= 5 * sigma + 1e-12)
    assert rates[0] == 0.0 and rates[-1] == 1.0


def test_rand2_range_and_mean() -> None:
    out = run(".sbuf r float32[128, 512]\nvector.rand2 r, min=-2.0, max=6.0\n",
              target="trn3").tiles["r"]
    assert out.min() >= -2.0 and out.max() < 6.0
    # uniform on [-2, 6): mean 2, sd 8 / sqrt(12)
    assert abs(out.mean() - 2.0) < 5 * (8 / np.sqrt(12)) / np.sqrt(out.size)
    with pytest.raises(AsmError, match="not available on trn2"):
        neuronemu.assemble(".sbuf r float32[4, 4]\nvector.rand2 r, min=0.0, max=1.0\n", "k.s",
                           target="trn2")
