"""gpsimd.topk (nki.isa.topk) against numpy references written from the NKI documentation.
Nothing here calls the emulator's numerics.

What the docs say (the nki.isa.topk API page, v2.33.0 and the earlier "latest" text), and what
the reference below encodes:
- each group of 16 partitions (one GpSimd core) solves its own top-k problem; a 128-partition
  tile holds 8 of them; the partition dimension must be a multiple of 16;
- within a group the source is a snake: elements 0..15 fill partitions 0..15 of free position
  0, elements 16..31 position 1, and so on (element i at [16g + i % 16, i // 16]); ``n`` counts
  the active bf16 elements of one snake and slots past n are ignored; src needs ceil(n / 16)
  free elements; 8 <= n < 65536;
- K is val_dst's free size (1 <= K < 32768, K <= n); val_dst is bf16, idx_dst uint32, both
  [par_dim, K], all in SBUF;
- results are written in the same snake layout, result j at [16g + j % 16, j // 16], so only
  the first ceil(K / 16) free positions are written; idx_dst holds indices into the group's own
  snake (0..n-1); the values are the K largest, in ascending order (the earlier page; the
  v2.33.0 page adds a sorted= option, not modelled).

Where the docs are silent, the emulator's documented choices (isa/gpsimd.toml summary), also
encoded here: NaN ranks above +inf, -0.0 equals +0.0, equal values rank by lower index first
and result K - 1 - r is the element of rank r; the rest of the last written position (j = K ..
16 ceil(K / 16) - 1), which the docs say the hardware writes too, gets all-ones bits.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError
from neuronemu.isa.table import load_isa

BF16 = ml_dtypes.bfloat16


def snake(group: np.ndarray, n: int) -> np.ndarray:
    """The first n elements of a [16, F] group's snake: element i = group[i % 16, i // 16]."""
    return group.reshape(16, -1).flatten(order="F")[:n]


def ranking(values: np.ndarray) -> np.ndarray:
    """Indices of a bf16 vector from largest to smallest: NaN first, then by value (-0.0 ==
    +0.0), equal values by lower index."""
    x = values.astype(np.float32)
    nan = np.isnan(x)
    by_value = -np.where(nan, np.float32(0), x)
    # np.lexsort: the last key is the primary one
    return np.lexsort((np.arange(x.size), by_value, (~nan).astype(np.int8)))


def topk_reference(src: np.ndarray, n: int, val_init: np.ndarray, idx_init: np.ndarray):
    """Expected (val_dst, idx_dst) bits [P, K] as uint16 / uint32, starting from their contents
    before the instruction (free positions from ceil(K / 16) on keep them)."""
    partitions = src.shape[0]
    k = val_init.reshape(partitions, -1).shape[1]
    vals = val_init.reshape(partitions, -1).view(np.uint16).copy()
    idxs = idx_init.reshape(partitions, -1).astype(np.uint32).copy()
    flat = src.reshape(partitions, -1)
    for g in range(0, partitions, 16):
        elements = snake(flat[g:g + 16], n)
        top = ranking(elements)[:k]
        for j in range(16 * -(-k // 16)):
            p, c = g + j % 16, j // 16
            if j < k:
                i = top[k - 1 - j]
                vals[p, c] = elements[i:i + 1].view(np.uint16)[0]
                idxs[p, c] = i
            else:
                vals[p, c] = 0xFFFF
                idxs[p, c] = 0xFFFFFFFF
    return vals, idxs


def dims(shape) -> str:
    return ", ".join(map(str, shape))


def topk_kernel(src_shape, k_shape, n: int, target: str = "trn2") -> str:
    return f""".target {target}
.hbm x bfloat16[{dims(src_shape)}] input
.hbm v0 bfloat16[{dims(k_shape)}] input
.hbm i0 uint32[{dims(k_shape)}] input
.sbuf xs bfloat16[{dims(src_shape)}]
.sbuf vals bfloat16[{dims(k_shape)}]
.sbuf idx uint32[{dims(k_shape)}]
dma.copy xs, x
dma.copy vals, v0
dma.copy idx, i0
gpsimd.topk vals, idx, xs, n={n}
"""


def run(src: str, **inputs) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(src, "kernel.s"), inputs=inputs)


def initial_outputs(rng, k_shape):
    """Random, recognisable contents for val_dst and idx_dst before the instruction."""
    v0 = rng.integers(0, 0x7F00, size=k_shape).astype(np.uint16).view(BF16)
    i0 = rng.integers(0, 2**32, size=k_shape, dtype=np.uint64).astype(np.uint32)
    return v0, i0


def run_topk(src: np.ndarray, k_shape, n: int, rng, target: str = "trn2"):
    v0, i0 = initial_outputs(rng, k_shape)
    result = run(topk_kernel(src.shape, k_shape, n, target), x=src, v0=v0, i0=i0)
    partitions = src.shape[0]
    vals = result.tiles["vals"].reshape(partitions, -1)
    idxs = result.tiles["idx"].reshape(partitions, -1)
    assert vals.dtype == BF16 and idxs.dtype == np.uint32
    return vals, idxs, v0, i0, result


def check_against_reference(src, k_shape, n, rng, target="trn2"):
    vals, idxs, v0, i0, result = run_topk(src, k_shape, n, rng, target)
    expected_vals, expected_idxs = topk_reference(src, n, v0, i0)
    np.testing.assert_array_equal(vals.view(np.uint16), expected_vals)
    np.testing.assert_array_equal(idxs, expected_idxs)
    check_documented_properties(src, n, vals, idxs)
    return result


def check_documented_properties(src, n, vals, idxs) -> None:
    """What holds whatever the tie and NaN choices: per group, the K results read back from the
    snake layout are ascending, are the multiset of the K largest, and each index points at a
    snake element with exactly that value (bits)."""
    partitions = src.shape[0]
    flat = src.reshape(partitions, -1)
    k = vals.shape[1]
    for g in range(0, partitions, 16):
        elements = snake(flat[g:g + 16], n)
        got_v = snake(vals[g:g + 16].view(np.uint16), k).view(BF16)
        got_i = snake(idxs[g:g + 16], k)
        assert np.all(got_i < n)
        np.testing.assert_array_equal(elements[got_i].view(np.uint16), got_v.view(np.uint16))
        numbers = got_v.astype(np.float32)
        ordered = numbers[~np.isnan(numbers)]
        assert np.all(ordered[1:] >= ordered[:-1])
        assert np.all(np.isnan(numbers[ordered.size:]))  # any NaN comes last (largest)
        expected = np.sort(elements.astype(np.float32))[elements.size - k:]  # NaN sorts last
        np.testing.assert_array_equal(numbers, expected)
        assert len(set(got_i.tolist())) == k  # distinct elements


# ---- the documentation's example and the table example -------------------------------------------

def test_the_documentation_example() -> None:
    """The docs' example: n = 42 elements, src_x = ceil(42 / 16) = 3, k = 8, par_dim = 128."""
    rng = np.random.default_rng(42)
    src = rng.standard_normal((128, 3)).astype(BF16)
    check_against_reference(src, (128, 8), 42, rng)


def test_table_example_by_hand() -> None:
    """isa/gpsimd.toml's example: scores[p, c] = p + 16 c (exact in bf16), so snake element i of
    group g is 16 g + i; the top 16 of the 128 are i = 112..127, ascending, at column 0."""
    definition = load_isa().instructions["gpsimd.topk"]
    result = neuronemu.run(neuronemu.assemble(definition.example_program))
    vals = result.tiles["vals"].astype(np.float32)
    idx = result.tiles["idx"]
    for g in range(8):
        rows = slice(16 * g, 16 * g + 16)
        np.testing.assert_array_equal(idx[rows, 0], np.arange(112, 128))
        np.testing.assert_array_equal(vals[rows, 0], 16 * g + np.arange(112, 128))
    assert np.all(result.tiles["idx"][:, 1:] == 0xFFFFFFFF)  # never written (SBUF starts 0xFF)


# ---- random data against the reference ---------------------------------------------------------

CASES = [
    # partitions, src free shape, n, K shape
    (16, (4,), 64, (8,)),
    (128, (63,), 1000, (64,)),          # 8 groups; n % 16 != 0: the last column partly active
    (32, (10,), 150, (150,)),           # K = n; K % 16 != 0: the last written column's tail
    (48, (5,), 8, (1,)),                # the smallest n and K; src wider than ceil(n / 16)
    (64, (20,), 300, (17,)),
    (16, (2, 8), 256, (4, 8)),          # 3-D tiles: free elements flattened
    (32, (300,), 4800, (1000,)),
    (16, (4096,), 65535, (100,)),       # the largest n
    (16, (2048,), 32767, (20000,)),
]


@pytest.mark.parametrize("partitions, free, n, k", CASES, ids=[f"P{c[0]}-n{c[2]}-K{c[3]}"
                                                               for c in CASES])
def test_random_data_matches_reference(partitions: int, free, n: int, k) -> None:
    rng = np.random.default_rng(zlib.crc32(repr((partitions, free, n, k)).encode()))
    src = (rng.standard_normal((partitions, *free)) * 4).astype(BF16)
    check_against_reference(src, (partitions, *k), n, rng)


@pytest.mark.parametrize("target", ["trn1", "trn3"])
def test_other_targets(target: str) -> None:
    rng = np.random.default_rng(3)
    src = rng.standard_normal((64, 12)).astype(BF16)
    check_against_reference(src, (64, 40), 190, rng, target)


def test_heavy_ties() -> None:
    """Values from {-2, ..., 2}: the cut at K falls inside a run of equal values; the lower
    indices win and equal results appear in decreasing index order."""
    rng = np.random.default_rng(5)
    src = rng.integers(-2, 3, size=(64, 16)).astype(BF16)
    check_against_reference(src, (64, 37), 250, rng)
    # by hand: all equal -> the K lowest indices, result j = index K - 1 - j
    same = np.full((16, 4), 1.5, BF16)
    vals, idxs, *_ = run_topk(same, (16, 20), 64, rng)
    assert list(snake(idxs, 20)) == list(range(19, -1, -1))
    assert np.all(snake(vals.astype(np.float32), 20) == 1.5)


def test_negative_values_and_signed_zeros() -> None:
    """All-negative snakes, and ones whose top-K boundary falls among -0.0 / +0.0 (equal: the
    lower index wins whatever the sign; the bits written are the element's own)."""
    rng = np.random.default_rng(9)
    negative = -np.abs(rng.standard_normal((32, 8))).astype(BF16) - BF16(1)
    check_against_reference(negative, (32, 20), 128, rng)
    zeros = np.where(rng.random((32, 8)) < 0.5, BF16(-0.0), BF16(0.0)).astype(BF16)
    zeros[:, 0] = -1  # snake elements 0..15 are below zero
    check_against_reference(zeros, (32, 24), 128, rng)
    # by hand: zeros at elements 3 (-0.0), 5 (+0.0) and 7 (-0.0), -1 elsewhere
    group = np.full((16, 1), BF16(-1.0))
    group[3, 0] = BF16(-0.0)
    group[5, 0] = BF16(0.0)
    group[7, 0] = BF16(-0.0)
    vals, idxs, *_ = run_topk(group, (16, 2), 16, rng)
    assert list(idxs[:2, 0]) == [5, 3]  # ranks: 3 (-0.0), 5 (+0.0), 7 (-0.0); ascending output
    assert list(vals[:2, 0].view(np.uint16)) == [0x0000, 0x8000]


def test_nan_and_infinities() -> None:
    """NaN (either sign, any payload) ranks above +inf; the NaN bits are copied as they are."""
    rng = np.random.default_rng(13)
    src = rng.standard_normal((32, 10)).astype(BF16)
    bits = src.view(np.uint16)
    bits[0, 0] = 0x7FC0   # +NaN, snake element 0 of group 0
    bits[5, 3] = 0xFFC1   # -NaN with a payload, element 53 of group 0
    bits[2, 1] = 0x7F80   # +inf
    bits[9, 2] = 0xFF80   # -inf
    bits[17, 4] = 0x7F81  # signalling-style NaN in group 1
    bits[20, 0] = 0x7F80
    src[16:, 5:] = BF16(np.inf)
    check_against_reference(src, (32, 40), 160, rng)
    vals, idxs, *_ = run_topk(src, (32, 3), 160, rng)
    # group 0: ranks NaN (0), NaN (53), +inf (18); ascending output at partitions 0..2
    assert list(idxs[0:3, 0]) == [18, 53, 0]
    assert list(vals[0:3, 0].view(np.uint16)) == [0x7F80, 0xFFC1, 0x7FC0]


def test_slots_past_n_are_ignored() -> None:
    """Slots from n on (the rest of the last column and whole extra columns) never win, even
    when they hold +inf or NaN."""
    rng = np.random.default_rng(17)
    src = rng.standard_normal((32, 9)).astype(BF16)
    n = 100  # the snake ends at partition 3 of column 6
    for g in (0, 16):
        for i in range(n, 16 * 9):
            src[g + i % 16, i // 16] = BF16(np.inf) if i % 2 else BF16(np.nan)
    vals, idxs, *_ = run_topk(src, (32, 30), n, rng)
    for g in (0, 16):
        assert np.all(snake(idxs[g:g + 16], 30) < n)
        assert not np.isnan(snake(vals[g:g + 16], 30).astype(np.float32)).any()
    check_against_reference(src, (32, 30), n, rng)


def test_groups_are_independent() -> None:
    """Each 16-partition group ranks only its own snake: group 1 holds only large values, and
    group 0's results and indices come from group 0 alone (indices are per group, 0..n-1)."""
    rng = np.random.default_rng(19)
    src = np.zeros((32, 4), BF16)
    src[:16] = rng.standard_normal((16, 4)).astype(BF16)
    src[16:] = (rng.standard_normal((16, 4)) + 100).astype(BF16)
    vals, idxs, *_ = run_topk(src, (32, 16), 64, rng)
    assert np.all(vals[:16, 0].astype(np.float32) < 50)
    assert np.all(vals[16:, 0].astype(np.float32) > 50)
    assert idxs[:, 0].max() < 64
    check_against_reference(src, (32, 16), 64, rng)


def test_only_the_first_ceil_k_over_16_positions_are_written() -> None:
    """K = 40: positions 0..2 are written (position 2: results 32..39 on partitions 0..7, all
    ones on 8..15); positions 3..39 keep their previous contents."""
    rng = np.random.default_rng(23)
    src = rng.standard_normal((16, 8)).astype(BF16)
    vals, idxs, v0, i0, _ = run_topk(src, (16, 40), 128, rng)
    np.testing.assert_array_equal(vals[:, 3:].view(np.uint16), v0[:, 3:].view(np.uint16))
    np.testing.assert_array_equal(idxs[:, 3:], i0[:, 3:])
    assert np.all(vals[8:, 2].view(np.uint16) == 0xFFFF)
    assert np.all(idxs[8:, 2] == 0xFFFFFFFF)
    assert np.all(idxs[:8, 2] < 128)
    # the largest element is result 39: partition 7, position 2
    assert idxs[7, 2] == ranking(snake(src, 128))[0]


def test_sliced_tiles_on_aligned_partitions() -> None:
    """Tiles may be slices: partitions 16..47 (two whole groups) and column windows; other
    partitions of the outputs are not written."""
    rng = np.random.default_rng(29)
    data = rng.standard_normal((64, 40)).astype(BF16)
    src = """.target trn2
.hbm x bfloat16[64, 40] input
.sbuf xs bfloat16[64, 40]
.sbuf vals bfloat16[64, 50]
.sbuf idx uint32[64, 50]
dma.copy xs, x
gpsimd.topk vals[16:48, 10:30], idx[16:48, 5:25], xs[16:48, 3:33], n=470
"""
    result = run(src, x=data)
    v0 = np.full((32, 20), 0xFFFF, np.uint16).view(BF16)  # SBUF starts as 0xFF bytes
    i0 = np.full((32, 20), 0xFFFFFFFF, np.uint32)
    expected_v, expected_i = topk_reference(data[16:48, 3:33], 470, v0, i0)
    np.testing.assert_array_equal(result.tiles["vals"][16:48, 10:30].view(np.uint16), expected_v)
    np.testing.assert_array_equal(result.tiles["idx"][16:48, 5:25], expected_i)
    untouched = np.concatenate([result.tiles["idx"][:16], result.tiles["idx"][48:]])
    assert np.all(untouched == 0xFFFFFFFF)
    assert np.all(result.tiles["vals"][16:48, :10].view(np.uint16) == 0xFFFF)


def test_results_reach_hbm() -> None:
    rng = np.random.default_rng(31)
    data = rng.standard_normal((16, 8)).astype(BF16)
    src = topk_kernel((16, 8), (16, 16), 128)
    src += ".hbm ov bfloat16[16, 16] output\n.hbm oi uint32[16, 16] output\n"
    src += "dma.copy ov, vals\ndma.copy oi, idx\n"
    v0, i0 = initial_outputs(rng, (16, 16))
    result = run(src, x=data, v0=v0, i0=i0)
    expected_v, expected_i = topk_reference(data, 128, v0, i0)
    np.testing.assert_array_equal(result.outputs["ov"].view(np.uint16), expected_v)
    np.testing.assert_array_equal(result.outputs["oi"], expected_i)


# ---- cost ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("free, n, k", [(63, 1000, 64), (64, 1024, 16), (4, 64, 40)])
def test_cost_is_64_cycles_per_snake_column(free: int, n: int, k: int) -> None:
    """isa/costs.toml gpsimd_topk: 64 x max(src free, K) GpSimd cycles, i.e. the documented
    4 n (n = 16 x src free) without the + K term when K <= src free."""
    result = run(topk_kernel((128, free), (128, k), n), x=np.zeros((128, free), BF16),
                 v0=np.zeros((128, k), BF16), i0=np.zeros((128, k), np.uint32))
    clock = load_isa().targets["trn2"].clock_ghz["gpsimd"]
    track = result.timing.tracks["gpsimd"]
    assert track.instructions == 1
    assert track.busy_ns == pytest.approx(64 * max(free, k) / clock, rel=1e-12)


# ---- assembly-time checks -----------------------------------------------------------------------

ASM = """.target trn2
.sbuf x bfloat16[128, 64]
.sbuf xf float32[128, 64]
.sbuf v bfloat16[128, 64]
.sbuf vf float32[128, 64]
.sbuf i uint32[128, 64]
.sbuf i32 int32[128, 64]
.sbuf ishort uint32[128, 16]
.psum ps bfloat16[128, 64]
{line}
"""

# (instruction, the operand the error points at, the message's start)
ASM_ERRORS = [
    ("gpsimd.topk v, i, xf, n=64", "xf",
     "src has dtype float32; gpsimd.topk accepts bfloat16"),
    ("gpsimd.topk vf, i, x, n=64", "vf",
     "val_dst has dtype float32; gpsimd.topk accepts bfloat16"),
    ("gpsimd.topk v, i32, x, n=64", "i32",
     "idx_dst has dtype int32; gpsimd.topk accepts uint32"),
    ("gpsimd.topk v, ishort, x, n=64", "ishort",
     "shape mismatch: idx_dst is [128, 16] but val_dst is [128, 64]"),
    ("gpsimd.topk v, i, ps, n=64", "ps",
     "gpsimd.topk argument 'src' must be in SBUF, but 'ps' is in PSUM"),
    ("gpsimd.topk v, i, x, n=7", "7",
     "gpsimd.topk argument 'n' must be in the range [8, 65535], got 7"),
    ("gpsimd.topk v, i, x, n=65536", "65536",
     "gpsimd.topk argument 'n' must be in the range [8, 65535], got 65536"),
    ("gpsimd.topk v[0:24], i[0:24], x[0:24], n=64", "x[0:24]",
     ("src spans partitions 0..23; gpsimd.topk works on whole GpSimd cores of 16 partitions "
      "(a multiple of 16, starting on a multiple of 16)")),
    ("gpsimd.topk v[8:24], i[8:24], x[8:24], n=64", "x[8:24]",
     "src spans partitions 8..23"),
    ("gpsimd.topk v[0:16], i[16:32], x[16:32], n=64", "v[0:16]",
     ("val_dst spans partitions 0..15 but src spans 16..31; each GpSimd core writes its "
      "results to its own 16 partitions")),
    ("gpsimd.topk v[0:32], i[0:32], x[0:16], n=64", "v[0:32]",
     "val_dst spans partitions 0..31 but src spans 0..15"),
    ("gpsimd.topk v, i, x[:, 0:62], n=1000", "x[:, 0:62]",
     ("src has 62 elements per partition; n=1000 needs ceil(1000 / 16) = 63 (the columns of "
      "each core's snake)")),
    ("gpsimd.topk v, i, x, n=40", "v,",
     ("val_dst asks for the 64 largest (its elements per partition) of n=40 elements; K must "
      "be at most n")),
]


@pytest.mark.parametrize("line, operand, message", ASM_ERRORS)
def test_assembly_errors_are_located(line: str, operand: str, message: str) -> None:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(ASM.format(line=line), "kernel.s")
    error = info.value
    assert error.message.startswith(message), error.message
    column = line.rindex(operand) + 1
    assert (error.location.line, error.location.column) == (10, column), error.render()


def test_missing_n_is_an_error() -> None:
    with pytest.raises(AsmError, match="gpsimd.topk needs argument 'n'"):
        neuronemu.assemble(ASM.format(line="gpsimd.topk v, i, x"), "kernel.s")


def test_k_of_32768_is_rejected() -> None:
    """1 <= K < 32768: a [16, 32768] val_dst is refused (trn3's SBUF fits the tiles)."""
    src = """.target trn3
.sbuf x bfloat16[16, 4096]
.sbuf v bfloat16[16, 32768]
.sbuf i uint32[16, 32768]
gpsimd.topk v, i, x, n=65535
"""
    with pytest.raises(AsmError, match="val_dst has 32768 elements per partition; gpsimd.topk "
                                       "allows at most 32767"):
        neuronemu.assemble(src, "kernel.s")


def test_largest_shapes_assemble() -> None:
    src = """.target trn3
.sbuf x bfloat16[128, 4096]
.sbuf v bfloat16[128, 32767]
.sbuf i uint32[128, 32767]
gpsimd.topk v, i, x, n=65535
"""
    program = neuronemu.assemble(src, "kernel.s")
    assert program.instructions[-1].definition.name == "gpsimd.topk"
