"""vector.stream_shuffle against numpy fancy indexing per 32-partition quadrant; the int-list
argument syntax, its errors and its binary encoding."""

from __future__ import annotations

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
