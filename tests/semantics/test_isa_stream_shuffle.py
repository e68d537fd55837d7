"""vector.stream_shuffle against numpy fancy indexing per 32-partition quadrant; the int-list
argument syntax, its errors and its binary encoding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu import encoding
from neuronemu.errors import AsmError

SRC = """.hbm x float32[{p}, 8] input
.sbuf xs float32[{p}, 8]
.sbuf ys float32[{p}, 8]
dma.copy xs, x
vector.memset ys, value=-1.0
vector.stream_shuffle {dst}, xs, mask=[{mask}]
"""


def shuffle_reference(x, before, mask):
    out = before.copy()
    for p in range(x.shape[0]):
        if mask[p % 32] != 255:
            out[p] = x[(p // 32) * 32 + mask[p % 32]]
    return out


@pytest.mark.parametrize("in_place", [False, True])
def test_shuffle_each_quadrant(in_place: bool) -> None:
    rng = np.random.default_rng(0)
    mask = list(rng.permutation(32))
    mask[5] = 255
    x = rng.normal(size=(128, 8)).astype(np.float32)
    x[0, 0] = -0.0
    src = SRC.format(p=128, dst="xs" if in_place else "ys", mask=", ".join(map(str, mask)))
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": x})
    before = x if in_place else np.full_like(x, -1.0)
    got = result.tiles["xs" if in_place else "ys"]
    np.testing.assert_array_equal(got.view(np.uint32),
                                  shuffle_reference(x, before, mask).view(np.uint32))
    program = neuronemu.assemble(src, "k.s")
    data = encoding.encode(program)
    again = neuronemu.assemble(encoding.disassemble(data), "k.s")
    assert encoding.encode(again) == data


@pytest.mark.parametrize(("dtype", "cols"), [
    ("bfloat16", "0:8"),   # dense 2-byte rows: moved through a word view
    ("int8", "0:8"),       # 1-byte elements: element by element
    ("float32", "1:8:2"),  # a strided tile: element by element
])
def test_every_element_width_and_layout_moves_bits(dtype: str, cols: str) -> None:
    """Every bit pattern (NaN payloads included) reaches its partition unchanged, whichever way
    the tile is copied, in place too."""
    rng = np.random.default_rng(3)
    mask = list(rng.permutation(32))
    mask[7] = 255
    width = {"bfloat16": 2, "int8": 1, "float32": 4}[dtype]
    bits = rng.integers(0, 256, size=(64, 8 * width), dtype=np.uint8)
    if dtype == "float32":
        bits.view(np.uint32)[0, :2] = 0x7F800001   # a signalling NaN stays one
    src = f""".sbuf xs {dtype}[64, 8]
.hbm x {dtype}[64, 8] input
dma.copy xs, x
vector.stream_shuffle xs[0:64, {cols}], xs[0:64, {cols}], mask=[{", ".join(map(str, mask))}]
"""
    view = {"bfloat16": np.uint16, "int8": np.int8, "float32": np.uint32}[dtype]
    x = bits.view(view)
    values = bits.view({"bfloat16": ml_dtypes.bfloat16, "int8": np.int8,
                        "float32": np.float32}[dtype])
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": values})
    got = np.ascontiguousarray(result.tiles["xs"]).view(view)
    want = x.copy()
    a, b, *step = (int(v) for v in cols.split(":"))
    sl = slice(a, b, step[0] if step else 1)
    want[:, sl] = shuffle_reference(x[:, sl], x[:, sl], mask)
    np.testing.assert_array_equal(got, want)


BROADCAST = """.hbm x float32[{p}, 8] input
.sbuf xs float32[{p}, 8]
.sbuf ys float32[{q}, 8]
dma.copy xs, x
vector.memset ys, value=-1.0
vector.stream_shuffle ys, xs[{rows}, :], mask=[{mask}]
"""


@pytest.mark.parametrize("p, q, rows, mask", [
    (1, 32, "0:1", [0] * 32),                             # one row to a quadrant (nki-library)
    (64, 20, "0:64", [(5 * i + 3) % 32 for i in range(32)]),  # fewer dst rows than src
    (64, 64, "0:64", [31 - i for i in range(32)]),
])
def test_src_and_dst_may_span_different_partitions(p, q, rows, mask) -> None:
    """NKI 0.6: the same elements per partition, not the same partitions; dst partition i of
    quadrant k is src partition mask[i] of quadrant k."""
    x = np.random.default_rng(1).normal(size=(p, 8)).astype(np.float32)
    src = BROADCAST.format(p=p, q=q, rows=rows, mask=", ".join(map(str, mask)))
    got = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": x}).tiles["ys"]
    want = np.array([x[(i // 32) * 32 + mask[i % 32]] for i in range(q)])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("p, mask, message", [
    (128, "0, 1", "needs 32 integers, got 2"),
    (128, ", ".join(["0"] * 31 + ["300"]), "300 is outside [0, 255]"),
    (16, ", ".join(["20"] + ["0"] * 31), "mask[0] = 20: entries name a source partition below 16"),
    (48, ", ".join(["0"] * 32), "a shuffle works on whole 32-partition quadrants"),
])
def test_mask_errors(p: int, mask: str, message: str) -> None:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(SRC.format(p=p, dst="ys", mask=mask), "k.s")
    assert message in info.value.render()


def test_dst_past_srcs_quadrants_is_an_error() -> None:
    src = BROADCAST.format(p=32, q=64, rows="0:32", mask=", ".join(["0"] * 32))
    with pytest.raises(AsmError, match="src spans 32 partitions but dst 64"):
        neuronemu.assemble(src, "k.s")


def test_list_where_a_number_is_expected_is_an_error() -> None:
    with pytest.raises(AsmError):
        neuronemu.assemble(".sbuf a float32[4, 8]\nvector.memset a, value=[1, 2]\n", "k.s")
