"""Hypothesis strategies for kernel inputs: tile shapes that fit on chip, dtypes, and arrays that
mix ordinary values with the special ones kernels get wrong (needs ``hypothesis``).

    from hypothesis import given
    from neuronemu.testing import strategies as nst

    @given(nst.tiles("bfloat16", shape=(128, 64)))
    def test_relu(x): ...

Special values of a float dtype (``special_values``): +-0.0, +-infinity (formats that have
them), NaNs with several payloads and both signs, the smallest and largest subnormal, the
smallest normal, the largest finite, 1.0 and its neighbours; ``rounding_ties`` gives fp32
values exactly halfway between two neighbouring values of a narrower dtype (where round to
nearest even decides), for kernels whose input is fp32 and whose output is narrower.
"""

from __future__ import annotations

import functools

import numpy as np
from hypothesis import strategies as st

from neuronemu.isa import dtypes

FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn",
                "float8_e5m2", "float8_e3m4")


def float_dtypes(target: str | None = None) -> st.SearchStrategy[str]:
    """Storage float dtype names (those ``target`` has, when given)."""
    names = [n for n in FLOAT_DTYPES if target is None or n in _target(target).dtypes]
    return st.sampled_from(names)


@functools.cache
def _target(name: str):
    from neuronemu.isa.table import load_isa

    return load_isa().targets[name]


def tile_shapes(dtype: str = "float32", target: str = "trn2", *, max_partitions: int | None = None,
                max_free: int = 4096, tiles: int = 1) -> st.SearchStrategy[tuple[int, int]]:
    """(partitions, free) shapes of which ``tiles`` tiles of ``dtype`` fit together in one SBUF
    partition of ``target`` (partitions <= 128, free * itemsize * tiles <= its bytes)."""
    t = _target(target)
    partitions = min(max_partitions or t.partitions, t.partitions)
    itemsize = dtypes.get(dtype).itemsize
    free = min(max_free, t.sbuf_partition_bytes // (itemsize * tiles))
    if free < 1:
        raise ValueError(f"{tiles} tiles of {dtype} cannot fit in one partition of {target}")
    return st.tuples(st.integers(1, partitions), st.integers(1, free))


def _bits_of(values, name: str) -> list[int]:
    stored = np.asarray(values, dtype=np.float64).astype(dtypes.numpy_dtype(name))
    return [int(b) for b in stored.view(f"<u{stored.itemsize}")]


def special_bits(dtype: str) -> list[int]:
    """Bit patterns of the special values of a float dtype (see the module docstring)."""
    d = dtypes.get(dtype)
    if not d.is_float or d.packs or dtype == "tfloat32":
        raise ValueError(f"{dtype}: special values are defined for the storage float dtypes "
                         f"{', '.join(FLOAT_DTYPES)}")
    width = d.bits
    sign = 1 << (width - 1)
    exponent_ones = ((1 << d.exponent_bits) - 1) << d.mantissa_bits
    top_mantissa = (1 << d.mantissa_bits) - 1
    patterns = {0, sign,                                   # +0.0, -0.0
                1, sign | 1,                               # smallest subnormals
                top_mantissa, sign | top_mantissa,         # largest subnormals
                1 << d.mantissa_bits}                      # smallest normal
    patterns.update(_bits_of([d.max_finite, -d.max_finite, 1.0, -1.0], dtype))
    one = _bits_of([1.0], dtype)[0]
    patterns.update({one + 1, one - 1})
    if d.has_inf:
        patterns.update({exponent_ones, sign | exponent_ones})
        for payload in {1, top_mantissa, 1 << (d.mantissa_bits - 1)}:   # NaN payloads
            patterns.update({exponent_ones | payload, sign | exponent_ones | payload})
    else:   # the *fn formats: S.1111.111 is the only NaN
        patterns.update({exponent_ones | top_mantissa, sign | exponent_ones | top_mantissa})
    return sorted(patterns)


def special_values(dtype: str) -> st.SearchStrategy:
    """One special value of ``dtype`` (a 0-d array of the numpy / ml_dtypes dtype)."""
    storage = dtypes.numpy_dtype(dtype)
    uint = np.dtype(f"<u{storage.itemsize}")
    return st.sampled_from(special_bits(dtype)).map(
        lambda b: np.array(b, dtype=uint).view(storage))


def tie_values(dtype: str, low: float = -8.0, high: float = 8.0) -> list[float]:
    """Every fp32 value exactly halfway between two neighbouring finite values of ``dtype`` in
    [low, high] (fp32 holds each such midpoint exactly: every dtype here is narrower)."""
    storage = dtypes.numpy_dtype(dtype)
    d = dtypes.get(dtype)
    if d.mantissa_bits >= 23:
        raise ValueError(f"{dtype} is not narrower than fp32: no fp32 value is a tie")
    grid = np.arange(2 ** d.bits, dtype=np.int64).astype(f"<u{storage.itemsize}")
    with np.errstate(invalid="ignore"):
        values = np.unique(grid.view(storage).astype(np.float64))
    values = values[np.isfinite(values) & (values >= low) & (values <= high)]
    midpoints = ((values[:-1] + values[1:]) / 2).astype(np.float32)
    if not len(midpoints):
        raise ValueError(f"no two {dtype} values lie in [{low}, {high}]")
    return [float(m) for m in midpoints]


def rounding_ties(dtype: str, low: float = -8.0, high: float = 8.0) -> st.SearchStrategy[float]:
    """One of ``tie_values(dtype, low, high)``: where round to nearest even decides."""
    return st.sampled_from(tie_values(dtype, low, high))


@st.composite
def tiles(draw, dtype: str = "float32", shape=None, *, target: str = "trn2", scale: float = 1.0,
          max_specials: int = 16, ties_of: str | None = None) -> np.ndarray:
    """Arrays of ``dtype`` (the numpy / ml_dtypes dtype) of ``shape`` (a tuple or a strategy;
    default ``tile_shapes(dtype, target)``): normal(0, ``scale``) values rounded to the dtype
    (clipped to its finite range) from a drawn seed, with up to ``max_specials`` elements at
    drawn positions replaced by special values (``special_bits``). Specials are placed as bit
    patterns, so NaN payloads and -0.0 survive; shrinking removes them and the seed goes to 0.
    ``ties_of="bfloat16"`` (for an fp32 tile) adds the rounding ties of that narrower dtype in
    [-8 scale, 8 scale] to the specials. Drawing the bulk from a seed keeps big tiles cheap for
    hypothesis."""
    storage = dtypes.numpy_dtype(dtype)
    uint = np.dtype(f"<u{storage.itemsize}")
    d = dtypes.get(dtype)
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    elif shape is None:
        shape = draw(tile_shapes(dtype, target))
    shape = tuple(shape)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    values = np.clip(rng.normal(0.0, scale, size=shape), d.min_finite, d.max_finite)
    bits = values.astype(storage).view(uint).copy()
    size = bits.size
    if size and max_specials:
        count = draw(st.integers(0, min(size, max_specials)))
        patterns = special_bits(dtype)
        if ties_of is not None:
            ties = np.array(tie_values(ties_of, -8 * scale, 8 * scale), dtype=np.float32)
            patterns = patterns + _bits_of(ties.astype(np.float64), dtype)
        specials = st.sampled_from(patterns)
        for _ in range(count):
            bits.flat[draw(st.integers(0, size - 1))] = draw(specials)
    return bits.view(storage)
