"""Narrow kernels (neuronemu/exec/kernels.py): a program whose instructions of a semantics
function are all covered by its narrow kernel compiles that alone; one that is not compiles the
function's own kernel for all of them. Whichever runs, the result is what the instruction
defines (numpy, from the values before it)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import run_on_m_and_b

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


def _program(body: str):
    return neuronemu.assemble(f".target trn2\n.hbm x float32[{P}, {W}] input\n{DECLS}\n"
                              f"{body}\n", filename="t.s")


def _units(body: str) -> list[str | None]:
    """The unit chosen for each instruction of ``body``."""
    program = _program(body)
    names, which = kernels.choose(program.instrs, program.ops,
                                  np.zeros(len(program.instrs), bool))
    return [names[k] for k in which]


TT, TT32 = "elementwise__tensor_tensor", "elementwise__tensor_tensor_f32"
TT32A = "elementwise__tensor_tensor_f32_arith"
TTA = "elementwise__tensor_tensor_arith"
TENSOR_TENSOR_UNITS = [
    ("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add", TT32A),
    ("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=multiply", TT32A),
    ("vector.tensor_tensor m[:, 0:32], m[:, 0:32], b, op=maximum", TT32),   # the same window
    ("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=divide", TT32),
    ("vector.tensor_tensor m[:, 1:33], m[:, 0:32], b, op=add", TTA),        # a partial overlap
    ("vector.tensor_tensor m[:, 0:64:2], m[:, 0:32], b, op=add", TTA),      # not dense
    ("vector.tensor_tensor h, m[:, 0:32], b, op=subtract", TTA),            # a bf16 result
    ("vector.tensor_tensor m[:, r1 : r1 + 32], m[:, 0:32], b, op=add", TTA),  # registers
    ("vector.tensor_tensor h, m[:, 0:32], b, op=maximum", TT),
    ("vector.tensor_tensor m[:, 1:33], m[:, 0:32], b, op=minimum", TT),
    ("vector.tensor_tensor i, i, i, op=bitwise_and", TT),
]

TS, TS32 = "elementwise__tensor_scalar", "elementwise__tensor_scalar_f32"
TENSOR_SCALAR_UNITS = [
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=1.0", TS32),
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=b[:, 0:1]", TS32),
    ("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=h[:, 0:1]", TS),
    (("vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=1.0, op1=multiply, "
      "operand1=b[:, r1 : r1 + 1]"), TS),
    ("vector.tensor_scalar m[:, 0:32], h, op0=add, operand0=1.0", TS),
    ("vector.tensor_scalar i, i, op0=bitwise_and, operand0=3", TS),
]

ACT, ACT32 = "scalar__activation", "scalar__activation_f32"
ACTIVATION_UNITS = [
    ("scalar.activation m[:, 0:32], b, func=exp", ACT32),
    ("scalar.activation m[:, 1:33], m[:, 0:32], func=exp, scale=b[:, 0:1]", ACT32),
    ("scalar.activation m[:, 0:32], b, func=exp, bias=h[:, 0:1]", ACT),
    ("scalar.activation h, b, func=exp", ACT),
    ("scalar.activation h, b, func=copy, scale=2.0", ACT + "_copy"),
    ("scalar.activation m[:, 1:33], h, func=copy, bias=h[:, 0:1]", ACT + "_copy"),
    ("scalar.activation m[:, 0:32], b, func=copy", ACT32),   # fp32 windows: the fp32 kernel
    ("scalar.activation m[:, 0:32], b, func=exp, reduce_res=m[:, 40:41]", ACT),
    ("scalar.activation h, b, func=copy, reduce_res=m[:, 40:41]", ACT),
    ("scalar.activation m[:, r1 : r1 + 32], b, func=tanh", ACT),
]

E = "elementwise__"
COPY_REDUCE_MEMSET_UNITS = [
    ("vector.tensor_copy m[:, 0:32], b", E + "tensor_copy_same"),
    ("vector.tensor_copy m[:, r1 : r1 + 32], b", E + "tensor_copy_same"),   # bits: any layout
    ("vector.tensor_copy h, b", E + "tensor_copy"),
    ("vector.tensor_reduce m[:, 0:1], b, op=maximum", E + "tensor_reduce_f32"),
    ("vector.tensor_reduce m[:, 0:1], h, op=maximum", E + "tensor_reduce"),
    ("vector.tensor_reduce m[:, 0:1], m[:, 0:64:2], op=add", E + "tensor_reduce"),
    ("vector.memset m[2:10, 5:37], value=-0.0", E + "memset_f32"),
    ("vector.memset h, value=1.0", E + "memset"),
]


@pytest.mark.parametrize(("line", "unit"), TENSOR_TENSOR_UNITS + TENSOR_SCALAR_UNITS
                         + ACTIVATION_UNITS + COPY_REDUCE_MEMSET_UNITS)
def test_unit_chosen(line: str, unit: str) -> None:
    assert _units(line) == [unit]


def test_dma_copy_unit() -> None:
    assert _units("dma.copy m, x\ndma.copy b, x[:, 0:32]") == ["dma__copy_dense"] * 2
    assert _units("dma.copy m, x\ndma.copy b, x[:, 0:64:2]") == ["dma__copy_same"] * 2
    assert _units("dma.copy m, x\ndma.copy h, x[:, 0:32]") == ["dma__copy"] * 2


def test_same_dtype_copies_of_any_layout_move_the_bits(rng) -> None:
    """The dense and the any-layout copy kernels against numpy (strided windows both ways)."""
    x = rng.standard_normal((P, W)).astype(np.float32)
    for body, dense in (("dma.copy m, x\ndma.copy m[:, 0:32], x[:, 64:96]", True),
                        ("dma.copy m, x\ndma.copy m[:, 0:64:2], x[:, 1:96:3]", False)):
        assert _units(body)[1] == ("dma__copy_dense" if dense else "dma__copy_same")
        result = neuronemu.run(_program(body + "\ndma.copy out, m"), inputs={"x": x})
        expected = x.copy()
        if dense:
            expected[:, 0:32] = x[:, 64:96]
        else:
            expected[:, 0:64:2] = x[:, 1:96:3]
        np.testing.assert_array_equal(result.outputs["out"], expected)


def test_one_unit_per_function_and_program() -> None:
    """One instruction the narrow kernel does not cover gives every instruction of the function
    (across engines) the function's own kernel, not a second unit; the others keep theirs."""
    assert _units("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add\n"
                  "gpsimd.tensor_tensor h, m[:, 0:32], b, op=power\n"
                  "vector.tensor_scalar m[:, 0:32], b, op0=add, operand0=1.0\n"
                  "dma.copy m, x\n") == [TT, TT, TS32, "dma__copy_dense"]
    program = _program("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add\n"
                       "dma.copy b, m[:, 0:32]\n")
    assert set(kernels.cold_entries(program.instrs, program.ops, np.zeros(2, bool))) <= {
        TT32A, "dma__copy_dense"}
    # the narrower kernel only when it covers every instruction of the function
    assert _units("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add\n"
                  "vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=minimum\n") == [TT32] * 2


def _run(rng, body: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return run_on_m_and_b(rng, body, DECLS, (P, W))


def test_narrow_kernels_compute_what_the_instructions_define(rng) -> None:
    """A program all of whose instructions take the narrow kernels, against numpy."""
    body = ("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=subtract\n"
            "vector.tensor_scalar m[:, 32:64], m[:, 32:64], op0=multiply, operand0=b[:, 3:4], "
            "op1=add, operand1=0.5\n"
            "scalar.activation m[:, 64:96], m[:, 0:32], func=relu, scale=b[:, 5:6], "
            "bias=-0.25\n"
            "vector.tensor_reduce m[:, 40:41], m[:, 64:96], op=maximum\n"
            "vector.tensor_copy m[:, 50:60], b[:, 10:20]\n"
            "vector.memset m[2:10, 90:96], value=-0.0\n")
    assert set(_units(body)) == {TT32A, TS32, ACT32, E + "tensor_reduce_f32",
                                 E + "tensor_copy_same", E + "memset_f32"}
    m, b, out = _run(rng, body)
    expected = m.copy()
    expected[:, 0:32] = m[:, 32:64] - b
    expected[:, 32:64] = (m[:, 32:64] * b[:, 3:4]).astype(np.float32) + np.float32(0.5)
    pre = (expected[:, 0:32] * b[:, 5:6]).astype(np.float32) + np.float32(-0.25)
    expected[:, 64:96] = np.maximum(pre, np.float32(0.0))
    expected[:, 40] = expected[:, 64:96].max(axis=1)
    expected[:, 50:60] = b[:, 10:20]
    expected[2:10, 90:96] = -0.0
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("ops", [("add", "subtract", "multiply"),
                                 ("add", "maximum", "divide")])
def test_fp32_tensor_tensor_kernels_compute_every_overlap(ops, rng) -> None:
    """Both fp32 tensor_tensor kernels (add, subtract and multiply alone take the narrower),
    in place and between windows, against numpy."""
    body = (f"vector.tensor_tensor m[:, 0:32], m[:, 0:32], b, op={ops[0]}\n"
            f"vector.tensor_tensor m[:, 32:64], b, m[:, 32:64], op={ops[1]}\n"
            f"vector.tensor_tensor m[:, 64:96], m[:, 0:32], m[:, 32:64], op={ops[2]}\n")
    assert set(_units(body)) == {TT32A if ops[1] == "subtract" else TT32}
    m, b, out = _run(rng, body)
    numpy_op = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "maximum": np.maximum, "divide": np.divide}
    expected = m.copy()
    expected[:, 0:32] = numpy_op[ops[0]](m[:, 0:32], b)
    expected[:, 32:64] = numpy_op[ops[1]](b, m[:, 32:64])
    expected[:, 64:96] = numpy_op[ops[2]](expected[:, 0:32], expected[:, 32:64])
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


def test_arithmetic_and_copy_kernels_of_any_dtype_compute_what_numpy_does(rng) -> None:
    """tensor_tensor_arith (a bf16 result, a partial overlap) and activation_copy (a bf16
    result with a column scale, an fp32 one from bf16 with a bias), against numpy and
    ml_dtypes' round to nearest even."""
    import ml_dtypes

    body = ("vector.tensor_tensor h, m[:, 0:32], b, op=multiply\n"
            "vector.tensor_tensor m[:, 1:33], m[:, 0:32], b, op=subtract\n"
            "scalar.activation h[:, 0:16], m[:, 40:56], func=copy, scale=b[:, 2:3]\n"
            "scalar.activation m[:, 60:76], h[:, 16:32], func=copy, bias=-1.5\n")
    assert set(_units(body)) == {TTA, ACT + "_copy"}
    m, b, out = _run(rng, body)

    def bf16(x):
        return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)

    h = np.zeros((P, 32), np.float32)
    h[:, :] = bf16(m[:, 0:32] * b)
    expected = m.copy()
    expected[:, 1:33] = m[:, 0:32] - b
    h[:, 0:16] = bf16((expected[:, 40:56] * b[:, 2:3]).astype(np.float32))
    expected[:, 60:76] = (h[:, 16:32] * np.float32(1.0)).astype(np.float32) + np.float32(-1.5)
    np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))


def test_a_narrow_kernel_given_what_it_does_not_cover_is_an_internal_error(monkeypatch,
                                                                           rng) -> None:
    """If the judgement of coverage were wrong the run stops, located, not wrong."""
    from neuronemu.semantics import elementwise

    monkeypatch.setattr(elementwise, "tensor_tensor_f32_covers",
                        lambda instrs, ops: np.ones(len(instrs), dtype=bool))
    kernels._narrow.cache_clear()
    try:
        with pytest.raises(neuronemu.RuntimeFault) as info:
            _run(rng, "vector.tensor_tensor m[:, 1:33], m[:, 0:32], b, op=add")
    finally:
        kernels._narrow.cache_clear()
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


def test_a_program_run_again_reuses_its_table(monkeypatch) -> None:
    """Runs of one program skip the choice; another program (even an equal one) does not."""
    program = _program("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add")
    yields = np.zeros(len(program.instrs), bool)
    first = kernels.program_addresses(program.instrs, program.ops, yields)
    calls = []
    real = kernels.choose
    monkeypatch.setattr(kernels, "choose", lambda *a: calls.append(1) or real(*a))
    assert kernels.program_addresses(program.instrs, program.ops, yields) is first
    assert calls == []
    again = _program("vector.tensor_tensor m[:, 0:32], m[:, 32:64], b, op=add")
    np.testing.assert_array_equal(
        kernels.program_addresses(again.instrs, again.ops, yields), first)
    assert calls == [1]
