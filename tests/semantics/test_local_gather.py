"""gpsimd.local_gather (nki.isa.local_gather) against numpy references written from the NKI
documentation: the ISA page and the NUMPY_SEMANTICS block of its example test
(test_nki_isa_local_gather.py). Nothing here calls the emulator's numerics.

What the docs say, and what the reference below encodes:
- each of the 8 GpSimd cores owns 16 contiguous partitions and gathers independently;
- a core flattens its 16-partition slice of the index tile partition dimension first
  (numpy ``flatten(order="F")`` of the [16, F] slice) and uses the first ``num_valid_indices``
  of them (default: all 16 * F);
- every partition of the core gathers from its own free elements with that index list,
  ``num_elem_per_idx`` contiguous elements per index: in the docs' example the kernel is given
  ``index * num_elem_per_idx`` and numpy takes ``src[p, index, :]`` of a [P, 512, 4] tile, so an
  index is an element offset into the partition's flattened free elements;
- the output of a partition is [num_valid_indices, num_elem_per_idx] flattened (the example
  reshapes (128, 64, 4) to its (128, 4, 16, 4) output tile), in the source dtype (no cast).
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault
from neuronemu.testing import assert_bits_equal

DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32,
          "int8": np.int8, "uint16": np.uint16}


def local_gather_reference(data: np.ndarray, index: np.ndarray, num_elem_per_idx: int,
                           num_valid_indices: int | None) -> np.ndarray:
    """[P, num_valid * num_elem_per_idx] in data's dtype; free dims of both tiles flattened."""
    partitions = data.shape[0]
    flat = data.reshape(partitions, -1)
    idx = index.reshape(partitions, -1).astype(np.int64)
    count = num_valid_indices or 16 * idx.shape[1]
    out = np.empty((partitions, count * num_elem_per_idx), dtype=data.dtype)
    for core in range(partitions // 16):
        rows = slice(16 * core, 16 * core + 16)
        indices_1d = idx[rows].flatten(order="F")[:count]  # partition dimension first
        cols = (indices_1d[:, None] + np.arange(num_elem_per_idx)[None, :]).ravel()
        out[rows] = flat[rows][:, cols]
    return out


def dims(shape) -> str:
    return ", ".join(map(str, shape))


def gather_kernel(dtype: str, data_shape, index_shape, dst_shape, options: str,
                  index_dtype: str = "uint16") -> str:
    return f""".hbm x {dtype}[{dims(data_shape)}] input
.hbm i {index_dtype}[{dims(index_shape)}] input
.sbuf xs {dtype}[{dims(data_shape)}]
.sbuf idx {index_dtype}[{dims(index_shape)}]
.sbuf out {dtype}[{dims(dst_shape)}]
dma.copy xs, x
dma.copy idx, i
gpsimd.local_gather out, xs, indices=idx{options}
"""


def run(src: str, **inputs) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(src, "kernel.s", target="trn2"), inputs=inputs)


def random_data(rng, dtype: str, shape) -> np.ndarray:
    if dtype in ("float32", "bfloat16"):
        return rng.standard_normal(shape).astype(DTYPES[dtype])
    info = np.iinfo(DTYPES[dtype])
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(DTYPES[dtype])


def test_the_documentation_example() -> None:
    """The docs' example as written: src [128, 512, 4] fp32, one [16, 4] uint16 index block
    replicated to the 8 cores, num_elem_per_idx=4, the kernel gets index * 4, 64 valid
    indices, output [128, 4, 16, 4]; expected output by the docs' own numpy (np.take)."""
    rng = np.random.default_rng(7)
    src = rng.random((128, 512, 4)).astype(np.float32)
    index_per_core = rng.integers(0, 512, size=(16, 4)).astype(np.uint16)
    index = np.tile(index_per_core, (8, 1))
    index_hw = index * 4
    src_text = gather_kernel("float32", (128, 512, 4), (128, 4), (128, 4, 16, 4),
                             ", num_elem_per_idx=4, num_valid_indices=64")
    result = run(src_text, x=src, i=index_hw)
    expected = np.ndarray(shape=(128, 64, 4), dtype=np.float32)
    for core in range(8):
        rows = slice(16 * core, 16 * core + 16)
        indices_1d = index[rows].flatten(order="F")[:64]
        expected[rows] = np.take(src[rows], indices_1d, axis=1)
    expected = expected.reshape(128, 4, 16, 4)
    assert result.tiles["out"].shape == (128, 4, 16, 4)
    assert_bits_equal(result.tiles["out"], expected)
    # and the general reference agrees with the docs' numpy on this case
    assert_bits_equal(local_gather_reference(src, index_hw, 4, 64).reshape(expected.shape),
                      expected)


CASES = [
    # dtype, data shape, index shape, num_elem_per_idx, num_valid_indices (None: default)
    ("float32", (128, 96), (128, 3), 1, None),
    ("float32", (16, 40), (16, 5), 2, 37),          # not a multiple of 16
    ("bfloat16", (32, 2, 64), (32, 4), 8, None),
    ("bfloat16", (128, 200), (128, 2), 32, 20),
    ("int32", (48, 33), (48, 1), 16, 9),
    ("int8", (64, 70), (64, 6), 4, 96),
    ("uint16", (16, 8), (16, 2, 3), 1, 50),       # a 3-D index tile: free elements flattened
    ("float32", (16, 32), (16, 256), 1, None),   # 4096 indices per core, the most allowed
    ("float32", (16, 32), (16, 300), 2, 4096),   # more indices than allowed, 4096 used
]


@pytest.mark.parametrize("dtype, data_shape, index_shape, width, valid", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-n{c[3]}-v{c[4]}" for c in CASES])
def test_matches_reference(dtype: str, data_shape, index_shape, width: int, valid) -> None:
    rng = np.random.default_rng(zlib.crc32(repr((dtype, data_shape, width)).encode()))
    data = random_data(rng, dtype, data_shape)
    if dtype in ("float32", "bfloat16"):
        flat = data.reshape(data.shape[0], -1)
        flat[0, 0] = -0.0  # sign of zero and NaN payloads move as raw bits
        flat[1, -1] = np.float32("nan")
    n = int(np.prod(data_shape[1:]))
    # each core gets its own indices; the last valid start (n - width) occurs in every core
    index = rng.integers(0, n - width + 1, size=index_shape).astype(np.uint16)
    index.reshape(index.shape[0], -1)[::16, 0] = n - width
    count = valid or 16 * int(np.prod(index_shape[1:]))
    options = f", num_elem_per_idx={width}" if width != 1 else ""
    options += f", num_valid_indices={valid}" if valid is not None else ""
    src = gather_kernel(dtype, data_shape, index_shape, (data_shape[0], count, width), options)
    result = run(src, x=data, i=index)
    expected = local_gather_reference(data, index, width, valid)
    assert_bits_equal(result.tiles["out"].reshape(expected.shape), expected)


def test_defaults_use_every_index_one_element_each() -> None:
    rng = np.random.default_rng(11)
    data = rng.standard_normal((32, 24)).astype(np.float32)
    index = rng.integers(0, 24, size=(32, 2)).astype(np.uint16)
    src = gather_kernel("float32", (32, 24), (32, 2), (32, 32), "")
    result = run(src, x=data, i=index)
    assert_bits_equal(result.tiles["out"], local_gather_reference(data, index, 1, None))
    # spot check by hand: partition 17 (core 1), k = 20 -> index[16 + 4, 1]
    assert result.tiles["out"][17, 20] == data[17, index[20, 1]]


def test_cores_gather_independently_and_from_their_own_partitions() -> None:
    """Core 0 gets all-zero indices, core 1 all-(n-1): each partition reads its own row."""
    data = np.arange(32 * 10, dtype=np.float32).reshape(32, 10)
    index = np.zeros((32, 1), np.uint16)
    index[16:] = 9
    result = run(gather_kernel("float32", (32, 10), (32, 1), (32, 16), ""), x=data, i=index)
    expected = np.concatenate([np.repeat(data[:16, :1], 16, axis=1),
                               np.repeat(data[16:, 9:], 16, axis=1)])
    assert_bits_equal(result.tiles["out"], expected)


def test_sliced_tiles_on_aligned_partitions() -> None:
    """Tiles may be slices: partitions 16..47 (two whole cores) and a column window; indices are
    offsets into the data tile's own elements, and other partitions of dst are not written."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((64, 48)).astype(np.float32)
    index = rng.integers(0, 29, size=(64, 3)).astype(np.uint16)
    src = """.hbm x float32[64, 48] input
.hbm i uint16[64, 3] input
.sbuf xs float32[64, 48]
.sbuf idx uint16[64, 3]
.sbuf out float32[64, 40, 4]
dma.copy xs, x
dma.copy idx, i
gpsimd.local_gather out[16:48], xs[16:48, 8:40], indices=idx[16:48, :], num_elem_per_idx=4, num_valid_indices=40
"""
    result = run(src, x=data, i=index)
    expected = local_gather_reference(data[16:48, 8:40], index[16:48], 4, 40)
    out = result.tiles["out"]
    assert_bits_equal(out[16:48].reshape(32, 160), expected)
    untouched = np.concatenate([out[:16], out[48:]]).view(np.uint32)
    assert np.all(untouched == 0xFFFFFFFF)  # SBUF starts as 0xFF bytes


def test_result_reaches_hbm_unchanged() -> None:
    data = (np.arange(16 * 8, dtype=np.float32).reshape(16, 8) - 50).astype(ml_dtypes.bfloat16)
    index = np.full((16, 1), 6, np.uint16)
    src = gather_kernel("bfloat16", (16, 8), (16, 1), (16, 16, 2), ", num_elem_per_idx=2")
    src += ".hbm o bfloat16[16, 16, 2] output\ndma.copy o, out\n"
    result = run(src, x=data, i=index)
    expected = np.repeat(data[:, None, 6:8], 16, axis=1)
    assert_bits_equal(result.outputs["o"], expected)


# ---- data-dependent faults ----------------------------------------------------------------------

@pytest.mark.parametrize("width, bad, message", [
    (1, 24, "idx[21, 1] = 24 is not an element of 'xs' (0..23 per partition)"),
    (4, 21, "idx[21, 1] = 21 is not an element of 'xs' (0..20 per partition)"),  # overruns
])
def test_out_of_range_index_is_a_located_fault(width: int, bad: int, message: str) -> None:
    index = np.zeros((32, 2), np.uint16)
    index[21, 1] = bad  # core 1, k = 16 + 5
    src = gather_kernel("float32", (32, 24), (32, 2), (32, 32 * width),
                        f", num_elem_per_idx={width}")
    with pytest.raises(RuntimeFault) as info:
        run(src, i=index)
    assert f"gpsimd.local_gather: {message}; nothing was written" in info.value.render()
    assert info.value.location.line == 8


def test_index_beyond_num_valid_indices_is_ignored() -> None:
    data = np.arange(16 * 24, dtype=np.float32).reshape(16, 24)
    index = np.ones((16, 2), np.uint16)
    index[5, 1] = 9999  # k = 21: past the 20 valid indices
    src = gather_kernel("float32", (16, 24), (16, 2), (16, 20), ", num_valid_indices=20")
    result = run(src, x=data, i=index)
    assert_bits_equal(result.tiles["out"], np.repeat(data[:, 1:2], 20, axis=1))


def test_fault_writes_nothing() -> None:
    """The faulting index is in core 1; core 0's valid gather must not be written either."""
    from neuronemu.exec.core import Core
    from neuronemu.machine import layout as L

    src = """.sbuf xs float32[32, 40]
.sbuf idx uint16[32, 2]
.sbuf out float32[32, 32]
gpsimd.iota xs, base=0, channel_multiplier=100, step=1
gpsimd.iota idx, base=0, channel_multiplier=1, step=10
gpsimd.memset out, value=7.0
gpsimd.local_gather out, xs, indices=idx
"""
    program = neuronemu.assemble(src, "kernel.s")
    # idx[p, j] = p + 10 j: core 1 reaches idx[30, 1] = 40 (data has 40 elements per partition)
    with pytest.raises(RuntimeFault, match=r"idx\[30, 1\] = 40 is not an element of 'xs' "
                                           r"\(0\.\.39 per partition\); nothing was written"):
        neuronemu.run(program)
    core = Core(program, {}, 0, max_trace_events=1)
    core.run(1000)
    assert core.status == L.STATUS_BAD_INDEX
    out = program.allocations["out"]
    raw = core.mems[0][:32, out.offset: out.offset + out.bytes_per_partition]
    assert np.all(raw.copy().view(np.float32) == 7.0)


# ---- assembly-time checks -----------------------------------------------------------------------

ASM = """.target trn2
.sbuf x float32[128, 64]
.sbuf y bfloat16[128, 64]
.sbuf i16 uint16[128, 4]
.sbuf i32 uint32[128, 4]
.sbuf big uint16[16, 257]
.sbuf o float32[128, 64]
{line}
"""


# (instruction, the operand the error points at, the message's start)
ASM_ERRORS = [
    ("gpsimd.local_gather o[0:24], x[0:24], indices=i16[0:24]", "x[0:24]",
     ("data spans partitions 0..23; gpsimd.local_gather works on whole GpSimd cores of 16 "
      "partitions")),
    ("gpsimd.local_gather o[8:24], x[8:24], indices=i16[8:24]", "x[8:24]",
     "data spans partitions 8..23"),
    ("gpsimd.local_gather o[0:16], x[0:16], indices=i16[16:32]", "i16[16:32]",
     ("indices spans partitions 16..31 but data spans 0..15; each GpSimd core reads and "
      "writes only its own 16 partitions")),
    ("gpsimd.local_gather o[0:32], x[0:16], indices=i16[0:16]", "o[0:32]",
     "dst spans partitions 0..31 but data spans 0..15"),
    ("gpsimd.local_gather o, x, indices=i16, num_elem_per_idx=3", "3",
     "num_elem_per_idx must be 1, 2, 4, 8, 16 or 32, not 3"),
    ("gpsimd.local_gather o, x, indices=i16, num_elem_per_idx=64", "64",
     "gpsimd.local_gather argument 'num_elem_per_idx' must be in the range [1, 32], got 64"),
    ("gpsimd.local_gather o, x, indices=i16, num_valid_indices=65", "65",
     ("num_valid_indices=65 exceeds the 64 indices of each core (16 partitions x 4 "
      "elements of indices)")),
    ("gpsimd.local_gather o[0:16, 0:1], x[0:16], indices=big", "big",
     ("indices gives each core 16 x 257 = 4112 indices; gpsimd.local_gather uses at most "
      "4096 per core")),
    (("gpsimd.local_gather o[0:16, 0:32], x[0:16, 0:16], indices=i16[0:16], "
      "num_elem_per_idx=32, num_valid_indices=1"), "x[0:16, 0:16]",
     "data has 16 elements per partition, fewer than num_elem_per_idx=32"),
    ("gpsimd.local_gather o, x, indices=i16, num_valid_indices=40", "o,",
     ("dst must have 40 x 1 = 40 elements per partition (num_valid_indices x "
      "num_elem_per_idx), not 64")),
    ("gpsimd.local_gather o, x, indices=i32", "i32",
     "indices has dtype uint32; gpsimd.local_gather accepts uint16"),
    ("gpsimd.local_gather o, y, indices=i16", "o,",
     "dst has dtype float32 but data has bfloat16; they must match"),
]


@pytest.mark.parametrize("line, operand, message", ASM_ERRORS)
def test_assembly_errors_are_located(line: str, operand: str, message: str) -> None:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(ASM.format(line=line), "kernel.s")
    error = info.value
    assert error.message.startswith(message), error.message
    column = line.rindex(operand) + 1
    assert (error.location.line, error.location.column) == (8, column), error.render()


def test_whole_tiles_assemble() -> None:
    line = "gpsimd.local_gather o, x, indices=i16"
    program = neuronemu.assemble(ASM.format(line=line), "kernel.s")
    assert program.instructions[-1].definition.name == "gpsimd.local_gather"
