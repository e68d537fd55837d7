"""Semantics functions split into pieces (neuronemu/exec/kernels.py): each instruction gets the
piece that covers it, a piece that may not cover it at run time falls back, and whichever runs,
the result is what the instruction defines (numpy, from the values before it)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import run_kernel

import neuronemu
from neuronemu.exec import kernels
from neuronemu.machine import layout as L
from neuronemu.machine import memory, static_windows

P, W = 16, 96
DECLS = f"""
.sbuf m float32[{P}, {W}]
.sbuf b float32[{P}, 32]
.sbuf h bfloat16[{P}, 32]
.sbuf i int32[{P}, 32]
.hbm out float32[{P}, {W}] output
"""


def _pieces(body: str) -> list[tuple[str | None, str | None]]:
    """The (kernel, fallback) chosen for each instruction of ``body`` (its ctrl.mov too)."""
    program = neuronemu.assemble(f".target trn2\n.hbm x float32[{P}, {W}] input\n{DECLS}\n"
                                 f"{body}\n", filename="t.s")
    pairs, which = kernels.choose(program.instrs, program.ops,
                                  np.zeros(len(program.instrs), bool))
    return [pairs[k] for k in which]


F32 = ("elementwise__tensor_tensor_f32", None)
F32_OR_VALUES = ("elementwise__tensor_tensor_f32", "elementwise__tensor_tensor_values")
VALUES = ("elementwise__tensor_tensor_values", None)
BITS = ("elementwise__tensor_tensor_bits", None)


@pytest.mark.parametrize(("line", "expected"), [
    ("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add", F32),
    ("vector.tensor_tensor m[:, 0:32], m[:, 0:32], b, op=maximum", F32),          # same window
    ("vector.tensor_tensor m[:, 1:33], m[:, 0:32], b, op=add", VALUES),          # partial overlap
    ("vector.tensor_tensor m[:, 0:64:2], m[:, 0:32], b, op=add", VALUES),        # not dense
    ("vector.tensor_tensor h, m[:, 0:32], b, op=add", VALUES),                   # bf16 result
    ("vector.tensor_tensor m[:, r1 : r1 + 32], m[:, 0:32], b, op=add", F32_OR_VALUES),
    ("vector.tensor_tensor m[:, r1 : r1 + 32], h, b, op=add", VALUES),
    ("vector.tensor_tensor i, i, i, op=bitwise_and", BITS),
])
def test_tensor_tensor_piece(line: str, expected) -> None:
    assert _pieces(line) == [expected]


TS = "elementwise__tensor_scalar_"


@pytest.mark.parametrize(("line", "expected"), [
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=1.0", (TS + "f32", None)),
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=b[:, 0:1]", (TS + "f32", None)),
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=h[:, 0:1]", (TS + "values", None)),
    (("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=1.0, op1=multiply, "
      "operand1=b[:, r1 : r1 + 1]"), (TS + "f32", TS + "values")),
    ("vector.tensor_scalar m[:, 0:32], h, op0=add, operand0=1.0", (TS + "values", None)),
    ("vector.tensor_scalar i, i, op0=bitwise_and, operand0=3", (TS + "bits", None)),
])
def test_tensor_scalar_piece(line: str, expected) -> None:
    assert _pieces(line) == [expected]


ACT = "scalar__activation_"


@pytest.mark.parametrize(("line", "expected"), [
    ("scalar.activation m[:, 0:32], b, func=exp", (ACT + "f32", None)),
    ("scalar.activation m[:, 1:33], m[:, 0:32], func=exp, scale=b[:, 0:1]", (ACT + "f32", None)),
    ("scalar.activation m[:, 0:32], b, func=exp, bias=h[:, 0:1]", (ACT + "values", None)),
    ("scalar.activation h, b, func=exp", (ACT + "values", None)),
    ("scalar.activation m[:, 0:32], b, func=exp, reduce_res=m[:, 40:41]", (ACT + "values", None)),
    ("scalar.activation m[:, r1 : r1 + 32], b, func=tanh", (ACT + "f32", ACT + "values")),
])
def test_activation_piece(line: str, expected) -> None:
    assert _pieces(line) == [expected]


def test_only_the_pieces_taken_are_compiled() -> None:
    program = neuronemu.assemble(f".target trn2\n{DECLS}\n"
                                 "vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add\n"
                                 "dma.copy b, m[:, 0:32]\n", filename="t.s")
    pairs, which = kernels.choose(program.instrs, program.ops, np.zeros(2, bool))
    assert set(pairs) - {pairs[k] for k in which} <= {(None, None)}
    assert kernels.cold_entries(program.instrs, program.ops, np.zeros(2, bool)) in (
        [], ["elementwise__tensor_tensor_f32", "dma__copy_same"],
        ["elementwise__tensor_tensor_f32"], ["dma__copy_same"])


def test_dma_copy_piece() -> None:
    assert _pieces("dma.copy m, x\ndma.copy h, x[:, 0:32]") == [
        ("dma__copy_same", None), ("dma__copy_cast", None)]


# the destination and source columns set by registers: the fp32 piece runs, and falls back
# where the windows turn out to overlap in part
REGISTER_CASES = {"same": (0, 0), "disjoint": (64, 0), "shift_right": (1, 0),
                  "shift_left": (0, 1)}


def _run(rng, body: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = rng.standard_normal((P, W)).astype(np.float32)
    b = rng.standard_normal((P, 32)).astype(np.float32)
    result = run_kernel(f"dma.copy m, xm\ndma.copy b, xb\n{body}\ndma.copy out, m",
                        inputs={"xm": m, "xb": b}, decls=DECLS)
    return m, b, result.outputs["out"]


@pytest.mark.parametrize("case", sorted(REGISTER_CASES))
def test_tensor_tensor_with_register_columns(case: str, rng) -> None:
    d, s = REGISTER_CASES[case]
    m, b, out = _run(rng, f"ctrl.mov r1, {d}\nctrl.mov r2, {s}\n"
                          "vector.tensor_tensor m[:, r1 : r1 + 32], m[:, r2 : r2 + 32], b, "
                          "op=subtract")
    expected = m.copy()
    expected[:, d: d + 32] = m[:, s: s + 32] - b
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(REGISTER_CASES))
def test_tensor_scalar_with_register_columns(case: str, rng) -> None:
    d, s = REGISTER_CASES[case]
    m, b, out = _run(rng, f"ctrl.mov r1, {d}\nctrl.mov r2, {s}\n"
                          "vector.tensor_scalar m[:, r1 : r1 + 32], m[:, r2 : r2 + 32], "
                          "op0=multiply, operand0=b[:, r2 : r2 + 1], op1=add, operand1=0.5")
    expected = m.copy()
    stage0 = (m[:, s: s + 32] * b[:, s: s + 1]).astype(np.float32)
    expected[:, d: d + 32] = (stage0 + np.float32(0.5)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", sorted(REGISTER_CASES))
def test_activation_with_register_columns(case: str, rng) -> None:
    """Any overlap is allowed (every input is read before a result is written)."""
    d, s = REGISTER_CASES[case]
    m, b, out = _run(rng, f"ctrl.mov r1, {d}\nctrl.mov r2, {s}\n"
                          "scalar.activation m[:, r1 : r1 + 32], m[:, r2 : r2 + 32], func=relu, "
                          "scale=b[:, r2 : r2 + 1], bias=-0.25")
    expected = m.copy()
    pre = (m[:, s: s + 32] * b[:, s: s + 1]).astype(np.float32) + np.float32(-0.25)
    expected[:, d: d + 32] = np.maximum(pre, np.float32(0.0))
    np.testing.assert_array_equal(out, expected)


def test_a_piece_without_its_fallback_is_an_internal_error(monkeypatch, rng) -> None:
    """A piece that does not cover its instruction must have a fallback (the choice gives one
    wherever registers could make it so); without one the run stops, located, not wrong."""
    from neuronemu.exec import core

    real = core.program_kernels

    def without_fallbacks(program, costs, local=False):
        table = real(program, costs, local).copy()
        table[:, 1] = 0
        return table

    monkeypatch.setattr(core, "program_kernels", without_fallbacks)
    with pytest.raises(neuronemu.RuntimeFault) as info:
        _run(rng, "ctrl.mov r1, 1\n"
                  "vector.tensor_tensor m[:, r1 : r1 + 32], m[:, 0:32], b, op=add")
    assert "internal error" in info.value.message


def _random_rows(rng, k: int) -> np.ndarray:
    """Operand rows of small on-chip and HBM fp32 / bf16 tiles, some overlapping."""
    rows = np.zeros((k, L.OP_WIDTH), dtype=np.int64)
    rows[:, L.OP_SPACE] = rng.choice([L.SPACE_SBUF, L.SPACE_PSUM, L.SPACE_HBM], k, p=[.6, .3, .1])
    rows[:, L.OP_DTYPE] = rng.choice([memory._F32, memory._BF16], k, p=[.8, .2])
    rows[:, L.OP_BASE] = 4 * rng.integers(0, 6, k) + rng.choice([0, 0, 0, 2], k)
    rows[:, L.OP_PSTART] = rng.integers(0, 6, k)
    rows[:, L.OP_PCOUNT] = rng.integers(1, 6, k)
    rows[:, L.OP_PROWSTEP] = rng.choice([0, 1, 1, 2], k)
    rows[:, L.OP_PCOLSTEP] = rng.choice([0, 0, 0, 8], k)
    rows[:, L.OP_SIZE] = rng.integers(1, 4, k)
    rows[:, L.OP_DENSE] = rng.choice([0, 1, 1, 1], k)
    return rows


def test_static_windows_answer_as_the_jitted_checks(rng) -> None:
    """static_windows, for many rows at once, against memory.f32_window / in_place_safe for
    one at a time (the functions the pieces run): brute force over random tiles."""
    regs = np.zeros(8, dtype=np.int64)
    dst, src = _random_rows(rng, 4000), _random_rows(rng, 4000)
    near = rng.random(4000) < 0.5   # half the sources: the destination moved a little
    src[near] = dst[near]
    src[near, L.OP_BASE] += 4 * rng.integers(-1, 2, near.sum())
    src[near, L.OP_PSTART] += rng.integers(-1, 2, near.sum())
    src[near, L.OP_BASE] = np.maximum(src[near, L.OP_BASE], 0)
    src[near, L.OP_PSTART] = np.maximum(src[near, L.OP_PSTART], 0)
    dst_col, src_col = static_windows.f32_windows(dst), static_windows.f32_windows(src)
    safe = static_windows.in_place_safe(dst, dst_col, src, src_col)
    for k in range(len(dst)):
        assert dst_col[k] == memory.f32_window(dst[k], regs)
        if dst_col[k] >= 0 and src_col[k] >= 0:
            assert safe[k] == memory.in_place_safe(dst[k], dst_col[k], src[k], src_col[k])
    assert (dst_col >= 0).sum() > 500 and (~safe[(dst_col >= 0) & (src_col >= 0)]).sum() > 50
