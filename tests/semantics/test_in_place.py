"""fp32 tile instructions that read and write memory in place (no tile temporaries): every way a
destination can overlap its sources gives what the instruction defines, computed by numpy from
the values before the instruction (the in-place path must not read an element it already
overwrote, and must hand partial overlaps to the general path)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import run_kernel, run_on_m_and_b

import neuronemu

P, W = 16, 96
DECLS = f"""
.sbuf m float32[{P}, {W}]
.sbuf b float32[{P}, 32]
.hbm out float32[{P}, {W}] output
"""

# (destination, source): identical windows, disjoint columns, shifted by one element (a
# partial overlap), partitions shifted by one either way, and other partitions
CASES = {
    "same": ("m[:, 0:32]", "m[:, 0:32]"),
    "disjoint": ("m[:, 64:96]", "m[:, 0:32]"),
    "shift_right": ("m[:, 1:33]", "m[:, 0:32]"),
    "shift_left": ("m[:, 0:32]", "m[:, 1:33]"),
    "partition_shift_down": ("m[1:16, 0:32]", "m[0:15, 0:32]"),
    "partition_shift_up": ("m[0:15, 0:32]", "m[1:16, 0:32]"),
    "other_partitions": ("m[8:16, 0:32]", "m[0:8, 0:32]"),
}


def _slices(text: str) -> tuple:
    inside = text[text.index("[") + 1: -1]
    parts = []
    for part in inside.split(","):
        numbers = [int(x) if x else None for x in part.strip().split(":")]
        parts.append(slice(*numbers))
    return tuple(parts)


def _run(rng, body: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return run_on_m_and_b(rng, body, DECLS, (P, W))


def _other_operand(dst: str) -> str:
    """b restricted to the destination's partitions."""
    rows = dst[dst.index("[") + 1: dst.index(",")]
    return f"b[{rows}, :]"


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensor_tensor_overlaps(case: str, rng) -> None:
    dst, src = CASES[case]
    other = _other_operand(dst)
    m, b, out = _run(rng, f"vector.tensor_tensor {dst}, {src}, {other}, op=subtract")
    expected = m.copy()
    expected[_slices(dst)] = m[_slices(src)] - b[_slices(other)]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensor_tensor_source_is_second_operand(case: str, rng) -> None:
    dst, src = CASES[case]
    other = _other_operand(dst)
    m, b, out = _run(rng, f"vector.tensor_tensor {dst}, {other}, {src}, op=divide")
    expected = m.copy()
    expected[_slices(dst)] = b[_slices(other)] / m[_slices(src)]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensor_scalar_overlaps(case: str, rng) -> None:
    dst, src = CASES[case]
    m, _, out = _run(rng, f"vector.tensor_scalar {dst}, {src}, op0=subtract, operand0=0.75, "
                          f"reverse0=true, op1=multiply, operand1=3.0")
    expected = m.copy()
    stage0 = (np.float32(0.75) - m[_slices(src)]).astype(np.float32)
    expected[_slices(dst)] = (stage0 * np.float32(3.0)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_activation_overlaps(case: str, rng) -> None:
    dst, src = CASES[case]
    m, _, out = _run(rng, f"scalar.activation {dst}, {src}, func=relu, scale=2.0, bias=-0.5")
    expected = m.copy()
    pre = (m[_slices(src)] * np.float32(2.0)).astype(np.float32) + np.float32(-0.5)
    expected[_slices(dst)] = np.maximum(pre.astype(np.float64), 0.0).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_memset_fills_only_its_window(rng) -> None:
    m, _, out = _run(rng, "vector.memset m[2:10, 5:37], value=-0.0")
    expected = m.copy()
    expected[2:10, 5:37] = -0.0
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


def test_copy_function_keeps_nan_payloads_in_place(rng) -> None:
    """func=copy moves func's fp32 input unchanged, in place too: a quiet NaN keeps its payload
    and a subnormal stays; -0.0 * 1.0 + 0.0 (the default bias is added) is +0.0."""
    bits = np.array([0x7FC01234, 0x80000000, 0x00000001, 0x3F800000], dtype=np.uint32)
    m = np.tile(bits.view(np.float32), (P, W // 4))
    result = run_kernel("dma.copy m, xm\nscalar.activation m[:, 0:48], m[:, 0:48], func=copy\n"
                        "dma.copy out, m", inputs={"xm": m, "xb": np.zeros((P, 32), np.float32)},
                        decls=DECLS)
    expected = m.view(np.uint32).copy()
    expected[:, 0:48][expected[:, 0:48] == 0x80000000] = 0
    np.testing.assert_array_equal(result.outputs["out"].view(np.uint32), expected)


@pytest.mark.parametrize("dtype", ["bfloat16", "int32", "uint8"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("instruction", ["dma.copy", "vector.tensor_copy"])
def test_same_dtype_copies_overlap_at_any_offset(instruction: str, case: str, dtype: str,
                                                 rng) -> None:
    """A copy between windows of one tile of the same dtype moves the bits of the source as
    they were before it: every overlap above, for 4-, 2- and 1-byte elements (a window starting
    at an odd element is not aligned to its element width in bytes)."""
    import ml_dtypes

    dst, src = CASES[case]
    bits = rng.integers(0, 1 << 16, (P, W)).astype(np.uint16)
    values = {"int32": rng.integers(-2**31, 2**31, (P, W)).astype(np.int32),
              "bfloat16": bits.view(ml_dtypes.bfloat16),
              "uint8": rng.integers(0, 256, (P, W)).astype(np.uint8)}[dtype]
    if dtype == "bfloat16":   # no NaN: numpy would compare their payloads as unequal floats
        values = np.where(np.isnan(values.astype(np.float32)), 0, values).astype(values.dtype)
    text = (f".hbm x {dtype}[{P}, {W}] input\n.hbm out {dtype}[{P}, {W}] output\n"
            f".sbuf m {dtype}[{P}, {W}]\ndma.copy m, x\n{instruction} {dst}, {src}\n"
            "dma.copy out, m\n")
    result = neuronemu.run(neuronemu.assemble(text, filename="t.s"), inputs={"x": values})
    expected = values.copy()
    expected[_slices(dst)] = values[_slices(src)]
    np.testing.assert_array_equal(result.outputs["out"].view(np.uint8),
                                  expected.view(np.uint8))
