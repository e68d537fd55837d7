"""Raw access-pattern operands ``ap(NAME, [[step, count], ...], offset, dtype)``
(docs/language.md "Access patterns"). The oracle is numpy's own strided view of the same
buffer: ``as_strided`` over the flat array with the pattern's steps (in elements) times the
itemsize, starting at the offset; dtype views are numpy ``.view`` of the same bytes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu import encoding
from neuronemu.machine import layout as L


def _run(source: str, **inputs: np.ndarray) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="ap.s"), inputs=inputs)


def _pattern(flat: np.ndarray, pattern, offset: int = 0) -> np.ndarray:
    """The elements ``pattern`` names in the flat array ``flat`` (numpy strides)."""
    shape = [c for _, c in pattern]
    strides = [s * flat.itemsize for s, _ in pattern]
    return np.lib.stride_tricks.as_strided(flat[offset:], shape=shape, strides=strides).copy()


W = np.arange(512 * 256, dtype=np.float32).reshape(512, 256)


@pytest.mark.parametrize("pattern", [
    [[256, 128], [32768, 4], [1, 256]],    # row j*128 + p -> partition p, block j
    [[1024, 128], [256, 4], [1, 256]],     # row p*4 + j   -> partition p, block j
])
def test_hbm_rows_split_across_partitions_and_a_free_dim(pattern) -> None:
    """The gap of a [512, 256] tensor loaded into a [128, 4, 256] tile (a shape mismatch for
    plain slices)."""
    text = ", ".join(f"[{s}, {c}]" for s, c in pattern)
    result = _run(f"""
.hbm w float32[512, 256] input
.hbm y float32[128, 4, 256] output
.sbuf t float32[128, 4, 256]
dma.copy t, ap(w, [{text}])
dma.copy y, t
""", w=W)
    np.testing.assert_array_equal(result.outputs["y"], _pattern(W.ravel(), pattern))


X = np.arange(128 * 128, dtype=np.float32).reshape(128, 128) * 0.5 - 3000


def test_permuted_free_dims_on_chip() -> None:
    """A [P, 8, 16] tile read with its two free dims swapped (transpose2d without slices)."""
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[128, 128] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 16, 8]
dma.copy t, x
vector.tensor_copy u, ap(t, [[128, 128], [1, 16], [16, 8]])
dma.copy y, u
""", x=X)
    want = X.reshape(128, 8, 16).transpose(0, 2, 1).reshape(128, 128)
    np.testing.assert_array_equal(result.outputs["y"], want)
    np.testing.assert_array_equal(result.outputs["y"],
                                  _pattern(X.ravel(), [[128, 128], [1, 16], [16, 8]]).reshape(128, 128))


def test_offset_selects_partitions_and_a_strided_column_range() -> None:
    """The offset is a flat element index: 64 * 128 + 3 = partition 64, element 3."""
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[32, 16] output
.sbuf t float32[128, 128]
.sbuf c float32[32, 16]
dma.copy t, x
vector.tensor_copy c, ap(t, [[128, 32], [2, 16]], 64 * 128 + 3)
dma.copy y, c
""", x=X)
    np.testing.assert_array_equal(result.outputs["y"], X[64:96, 3:35:2])
    np.testing.assert_array_equal(result.outputs["y"],
                                  _pattern(X.ravel(), [[128, 32], [2, 16]], 64 * 128 + 3))


def test_free_step_zero_broadcasts_a_column() -> None:
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[128, 4, 16] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 4, 16]
dma.copy t, x
vector.tensor_copy u, ap(t, [[128, 128], [0, 4], [1, 16]], 5)
dma.copy y, u
""", x=X)
    want = np.broadcast_to(X[:, None, 5:21], (128, 4, 16))
    np.testing.assert_array_equal(result.outputs["y"], want)


def test_a_destination_free_step_zero_keeps_the_last_write() -> None:
    """dst ap(u, [[1, 128], [0, 16]]) names u[p, 0] sixteen times: the last element of each
    source row stays (nki-library's qkv_cte names such a dst for an output it discards)."""
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[128, 1] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 1]
dma.copy t, x
scalar.activation ap(u, [[1, 128], [0, 16]]), t[:, 32:48], func=square
dma.copy y, u
""", x=X)
    np.testing.assert_array_equal(result.outputs["y"], X[:, 47:48] * X[:, 47:48])


def test_partition_step_zero_broadcasts_an_hbm_row_and_an_sbuf_row() -> None:
    g = np.arange(4 * 64, dtype=np.float32).reshape(4, 64) + 0.25
    result = _run("""
.hbm g float32[4, 64] input
.hbm y float32[128, 64] output
.hbm z float32[128, 32] output
.sbuf t float32[128, 64]
.sbuf u float32[128, 32]
dma.copy t, ap(g, [[0, 128], [1, 64]], 2 * 64)
dma.copy y, t
dma.copy u, ap(t, [[0, 128], [2, 32]], 7 * 64 + 1)
dma.copy z, u
""", g=g)
    np.testing.assert_array_equal(result.outputs["y"], np.broadcast_to(g[2], (128, 64)))
    np.testing.assert_array_equal(result.outputs["z"], np.broadcast_to(g[2, 1::2], (128, 32)))


def test_written_patterns_scatter_into_hbm_and_sbuf() -> None:
    """A destination pattern: an HBM output written transposed by blocks, an SBUF tile
    written at a stride."""
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[128, 128] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 128]
dma.copy t, x
vector.memset u, value=0
vector.tensor_copy ap(u, [[128, 128], [2, 64]], 1), t[:, 0:64]
dma.copy ap(y, [[128, 128], [1, 64]], 64), u[:, 0:64]
dma.copy ap(y, [[128, 128], [1, 64]]), u[:, 64:128]
""", x=X)
    u = np.zeros((128, 128), np.float32)
    u[:, 1::2] = X[:, 0:64]
    want = np.concatenate([u[:, 64:], u[:, :64]], axis=1)
    np.testing.assert_array_equal(result.outputs["y"], want)


def test_register_offset_moves_the_pattern() -> None:
    """r1 * 32 elements more per iteration: four column blocks of 32 read through one line."""
    result = _run("""
.hbm x float32[128, 128] input
.hbm y float32[128, 128] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 128]
    dma.copy t, x
    ctrl.mov r1, 0
loop:
    vector.tensor_copy u[:, r1*32 : r1*32 + 32], ap(t, [[128, 128], [1, 16], [16, 2]], r1*32)
    ctrl.add r1, r1, 1
    ctrl.blt r1, 4, loop
    dma.copy y, u
""", x=X)
    want = np.concatenate([X[:, 32 * k:32 * k + 32].reshape(128, 2, 16).transpose(0, 2, 1)
                           .reshape(128, 32) for k in range(4)], axis=1)
    np.testing.assert_array_equal(result.outputs["y"], want)


def test_dtype_views_read_the_same_bytes() -> None:
    """An fp32 tile read as int32 (its bit patterns) and as twice as many bf16 halves."""
    rng = np.random.default_rng(7)
    halves = rng.normal(size=(128, 128)).astype(ml_dtypes.bfloat16)
    x = halves.view(np.float32)            # [128, 64] fp32 whose bytes are the bf16 pairs
    result = _run("""
.hbm x float32[128, 64] input
.hbm bits int32[128, 64] output
.hbm pairs bfloat16[128, 128] output
.hbm odd bfloat16[128, 64] output
.sbuf t float32[128, 64]
dma.copy t, x
dma.copy bits, ap(t, [[64, 128], [1, 64]], 0, int32)
dma.copy pairs, ap(t, [[128, 128], [1, 128]], 0, bfloat16)
dma.copy odd, ap(x, [[128, 128], [2, 64]], 1, bfloat16)
""", x=x)
    np.testing.assert_array_equal(result.outputs["bits"], x.view(np.int32))
    np.testing.assert_array_equal(result.outputs["pairs"].view(np.uint16),
                                  halves.view(np.uint16))
    np.testing.assert_array_equal(result.outputs["odd"].view(np.uint16),
                                  halves.view(np.uint16)[:, 1::2])


def test_ap_operands_round_trip_through_the_binary_encoding() -> None:
    source = """
.hbm w float32[512, 256] input
.hbm y float32[128, 4, 256] output
.sbuf t float32[128, 4, 256]
.sbuf c int32[128, 8]
    ctrl.mov r2, 1
    dma.copy t, ap(w, [[256, 128], [32768, 4], [1, 256]], 0)
    dma.copy y, t
    vector.tensor_copy c, ap(t, [[1024, 128], [2, 8]], r2*4 + 3, int32)
    dma.copy t[:, 0, 0:8], ap(w, [[0, 128], [1, 8]], 17)
"""
    program = neuronemu.assemble(source, filename="ap.s")
    data = encoding.encode(program)
    text = encoding.disassemble(data)
    assert "ap(w, [[256, 128], [32768, 4], [1, 256]], 0)" in text
    assert "ap(t, [[1024, 128], [2, 8]], r2*4 + 3, int32)" in text
    assert "ap(w, [[0, 128], [1, 8]], 17)" in text
    again = neuronemu.assemble(text, filename="disassembled.s")
    assert encoding.encode(again) == data
    np.testing.assert_array_equal(program.ops, again.ops)


def test_ap_lowers_to_the_same_operand_as_the_equivalent_slice() -> None:
    """Independent of the run: the operand row of ap(...) equals the row of the slice that
    names the same elements."""
    program = neuronemu.assemble("""
.hbm x float32[128, 128] input
.sbuf t float32[128, 128]
.sbuf c float32[32, 16]
    vector.tensor_copy c, t[64:96, 3:35:2]
    vector.tensor_copy c, ap(t, [[128, 32], [2, 16]], 64 * 128 + 3)
    dma.copy t[64:96, 0:16], x[10:42, 4:20]
    dma.copy t[64:96, 0:16], ap(x, [[128, 32], [1, 16]], 10 * 128 + 4)
""", filename="ap.s")
    ops = program.ops
    rows = [program.instrs[pc][4 + 2 * k + 1] for pc in range(4) for k in (0, 1)]
    assert (ops[rows[1]] == ops[rows[3]]).all()
    assert (ops[rows[5]] == ops[rows[7]]).all()


def test_the_language_doc_example_runs() -> None:
    """docs/language.md "Access patterns": its example block, against numpy strides."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "language.md").read_text()
    block = next(b for b in re.findall(r"```asm\n(.*?)```", text, re.DOTALL)
                 if "ap(w, [[256, 128]" in b)
    result = _run(block, w=W)
    want = _pattern(W.ravel(), [[256, 128], [32768, 4], [1, 256]])
    want[:, 0] = W[5]
    np.testing.assert_array_equal(result.outputs["y"], want)


@pytest.mark.parametrize("r1, fails", [(1, False), (2, True)])
def test_a_register_offset_leaving_the_row_is_a_located_fault(r1: int, fails: bool) -> None:
    """r1*32 + 1 + 63 must stay inside the 128 elements of a partition: r1 = 1 reaches 96,
    r1 = 2 would reach 128 (the next partition's first element): a fault, not a carry."""
    source = f"""
.hbm x float32[128, 128] input
.hbm y float32[128, 64] output
.sbuf t float32[128, 128]
.sbuf u float32[128, 64]
    dma.copy t, x
    ctrl.mov r1, {r1}
    vector.tensor_copy u, ap(t, [[128, 128], [1, 64]], r1*32 + 1)
    dma.copy y, u
"""
    if not fails:
        result = _run(source, x=X)
        np.testing.assert_array_equal(result.outputs["y"], X[:, 33:97])
        return
    with pytest.raises(neuronemu.RuntimeFault) as info:
        _run(source, x=X)
    assert "ap.s:8:27: error:" in info.value.render()
    assert "leaves 't' at run time (r1 = 2)" in str(info.value)


def _random_patterns(seed: int, count: int, on_chip: bool):
    """Random in-bounds patterns over a [128, 256] buffer (flat 32768 elements): on chip the
    partition step is the row (256), in HBM any step; free steps 0..40, counts 1..6."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        free = [(int(rng.integers(0, 41)), int(rng.integers(1, 7)))
                for _ in range(int(rng.integers(1, 5)))]
        span = sum(s * (c - 1) for s, c in free)
        if span >= 256:
            continue
        pcount = int(rng.integers(1, 129))
        if on_chip:
            p0 = int(rng.integers(0, 129 - pcount))
            offset = p0 * 256 + int(rng.integers(0, 256 - span))
            out.append(([(256, pcount), *free], offset))
        else:
            pstep = int(rng.integers(0, 300))
            last = (pcount - 1) * pstep + span
            if last >= 32768:
                continue
            out.append(([(pstep, pcount), *free], int(rng.integers(0, 32768 - last))))
    return out


@pytest.mark.parametrize("on_chip", [True, False], ids=["sbuf", "hbm"])
def test_random_patterns_name_the_elements_numpy_strides_name(on_chip: bool) -> None:
    patterns = _random_patterns(11 if on_chip else 12, 10, on_chip)
    x = np.random.default_rng(1).normal(size=(128, 256)).astype(np.float32)
    lines = [".hbm x float32[128, 256] input", ".sbuf t float32[128, 256]", "dma.copy t, x"]
    for k, (pattern, offset) in enumerate(patterns):
        pcount, free = pattern[0][1], int(np.prod([c for _, c in pattern[1:]]))
        text = ", ".join(f"[{s}, {c}]" for s, c in pattern)
        lines[:0] = [f".hbm y{k} float32[{pcount}, {free}] output",
                     f".sbuf u{k} float32[{pcount}, {free}]"]
        if on_chip:
            lines.append(f"vector.tensor_copy u{k}, ap(t, [{text}], {offset})")
        else:
            lines.append(f"dma.copy u{k}, ap(x, [{text}], {offset}), queue={k % 16}")
        lines.append(f"dma.copy y{k}, u{k}")
    result = _run("\n".join(lines) + "\n", x=x)
    for k, (pattern, offset) in enumerate(patterns):
        want = _pattern(x.ravel(), pattern, offset).reshape(pattern[0][1], -1)
        np.testing.assert_array_equal(result.outputs[f"y{k}"], want, err_msg=str(pattern))


def test_lines_differing_only_in_numbers_each_resolve_their_own_pattern() -> None:
    """Many ap lines of one shape (the assembler may resolve such a family of lines from one
    plan): each gives the operand of the slice naming its elements."""
    offsets = [(p0, f0) for p0 in (0, 32, 96) for f0 in (0, 1, 7, 64, 95)]
    lines = [".sbuf t float32[128, 128]", ".sbuf c float32[32, 16]"]
    for p0, f0 in offsets:
        lines.append(f"    vector.tensor_copy c, ap(t, [[128, 32], [2, 16]], {p0 * 128 + f0})")
        lines.append(f"    vector.tensor_copy c, t[{p0}:{p0 + 32}, {f0}:{f0 + 31}:2]")
    program = neuronemu.assemble("\n".join(lines) + "\n", filename="ap.s")
    data = [program.ops[program.instrs[pc][4 + 2 * 1 + 1]] for pc in range(len(offsets) * 2)]
    for k, (p0, f0) in enumerate(offsets):
        assert (data[2 * k] == data[2 * k + 1]).all(), (p0, f0)
        assert data[2 * k][L.OP_PSTART] == p0 and data[2 * k][L.OP_BASE] == f0 * 4


def test_a_written_interleaved_pattern_that_names_each_element_once_is_allowed() -> None:
    """Steps (2, 3), counts (3, 2) name 0, 3, 2, 5, 4, 7: distinct, though the sorted-steps
    test alone would refuse it (the enumeration decides)."""
    result = _run("""
.hbm x float32[128, 6] input
.hbm y float32[128, 8] output
.sbuf t float32[128, 6]
.sbuf u float32[128, 8]
dma.copy t, x
vector.memset u, value=-1
vector.tensor_copy ap(u, [[8, 128], [2, 3], [3, 2]]), t
dma.copy y, u
""", x=X[:, :6].copy())
    want = np.full((128, 8), -1, np.float32)
    for i in range(3):
        for j in range(2):
            want[:, 2 * i + 3 * j] = X[:, 2 * i + j]
    np.testing.assert_array_equal(result.outputs["y"], want)
