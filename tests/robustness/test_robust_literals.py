"""The documented limits of kernel text (docs/language.md, "Limits"): literal ranges, values
checked where they are used, init= parameters, expression depth. Each limit is tested on both
sides of its edge, and each refusal for its location and message."""

from __future__ import annotations

import pytest

import neuronemu
from neuronemu.errors import AsmError

DECLS = """.hbm x float32[16, 8] input
.sbuf t float32[16, 8]
"""


def _error(text: str) -> AsmError:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(text, "k.s")
    return info.value


def _mov_value(expression: str):
    program = neuronemu.assemble(f"    ctrl.mov r0, {expression}\n")
    return program.instructions[0].args["value"]


@pytest.mark.parametrize("literal", [str(2 ** 128 - 1), "0" * 60 + "7",
                                     "0x" + "f" * 32, "0b" + "1" * 128])
def test_integer_literals_up_to_2_128_are_read(literal: str) -> None:
    assert neuronemu.assemble(f".const BIG = {literal}\n")


@pytest.mark.parametrize("literal", [str(2 ** 128), "9" * 40, "9" * 5000, "0x1" + "0" * 32,
                                     "0b1" + "0" * 128])
def test_integer_literals_beyond_2_128_are_refused(literal: str) -> None:
    error = _error(f".const BIG = {literal}\n")
    assert (error.location.line, error.location.column) == (1, 14)
    assert "is out of range: integers must lie within +-2**128" in error.message
    assert len(error.message) < 200  # a long literal is quoted shortened


def test_integer_overflow_in_arithmetic_points_at_the_operation() -> None:
    error = _error(f".const A = 1 + {2 ** 64} * {2 ** 64}\n")
    assert error.location.column == 16
    assert "integer overflow in expression" in error.message


def test_float_literal_and_arithmetic_overflow() -> None:
    assert "float literal 1e309 overflows" in _error(".const A = 1e309\n").message
    error = _error(".const A = 2 + 1e308 * 10\n")
    assert error.location.column == 16 and "floating-point overflow" in error.message
    # infinity written as such is a value, and stays one through arithmetic
    assert neuronemu.assemble(".const A = -inf * 2\n.const B = 1e308 * 1e-308\n")


def test_register_values_must_fit_int64() -> None:
    assert _mov_value(str(2 ** 63 - 1)) == ("int", 2 ** 63 - 1)
    assert _mov_value(f"-{2 ** 63}") == ("int", -(2 ** 63))
    error = _error(f"    ctrl.mov r0, {2 ** 63}\n")
    assert error.location.column == 18
    assert ("ctrl.mov argument 'value' must fit a signed 64-bit integer "
            "[-9223372036854775808, 9223372036854775807], got 9223372036854775808"
            == error.message)
    assert "must be in the range [0, 15], got" in _error(
        f"{DECLS}    dma.copy t, x, queue={2 ** 70}\n").message


def test_integers_written_as_floats_must_be_whole() -> None:
    assert _mov_value("1e3") == ("int", 1000)
    assert "expected an integer, got nan" in _error("    ctrl.mov r0, nan\n").message
    assert "expected an integer, got 2.5" in _error("    ctrl.mov r0, 2.5\n").message


@pytest.mark.parametrize("value, ok", [("3.4028235e38", True), ("-3.4028235e38", True),
                                       ("inf", True), ("-inf", True), ("nan", True),
                                       ("1e-45", True), ("3.5e38", False), ("-1e39", False)])
def test_fp32_immediates_must_not_round_to_infinity(value: str, ok: bool) -> None:
    text = f"{DECLS}    vector.memset t, value={value}\n"
    if ok:
        assert neuronemu.assemble(text)
    else:
        error = _error(text)
        assert error.location.line == 3
        assert "is an fp32 immediate" in error.message and "write inf or -inf" in error.message


@pytest.mark.parametrize("tile, message", [
    ("t[:, nan]", "indices must be integers, got nan"),
    ("t[:, -inf:2]", "slice bounds must be integers, got -inf"),
    ("t[:, 0.5:2]", "slice bounds must be integers, got 0.5"),
    ("t[:, r0*0.5]", "indices must be integers, got 0.5"),
    ("t[:, r0*inf]", "indices must be integers, got nan"),  # the constant 0 * inf
    ("t[:, 0:8:nan]", "a slice step must be a positive integer constant"),
    ("t[:, 0:8:inf]", "a slice step must be a positive integer constant"),
    ("t[:, 0:8:0]", "a slice step must be a positive integer constant"),
    ("t[:, r0 : r0 + 9]", "a slice spanning 9 elements cannot fit dim 1 of 't' (size 8)"),
    (f"t[:, r0 + {2 ** 100}]", "does not fit a signed 64-bit offset"),
    (f"t[:, r0 * {2 ** 62}]", "does not fit a signed 64-bit offset"),
])
def test_indices_are_finite_integers_that_fit(tile: str, message: str) -> None:
    error = _error(f"{DECLS}    vector.memset {tile}, value=1\n")
    assert error.location.line == 3 and error.location.column >= 19
    assert message in error.message


def test_a_one_element_slice_ignores_its_step() -> None:
    program = neuronemu.assemble(f"{DECLS}    vector.memset t[:, 2:3:{2 ** 100}], value=1\n")
    assert program.instructions[0].args["dst"].free_size == 1


@pytest.mark.parametrize("init", ["normal(0, 0)", "normal(-3, 2)", "uniform(2, 2)",
                                  "uniform(-1e300, 1e300)", "relu_normal(0, 1)", "full(inf)",
                                  "full(nan)", "full(-1e300)"])
def test_valid_initialisers(init: str) -> None:
    assert neuronemu.assemble(f".hbm a float32[4] input init={init}\n")


@pytest.mark.parametrize("init, column, message", [
    ("normal(0, -1)", 40, "normal(mean, std): std must be >= 0, got -1.0"),
    ("normal(nan, 1)", 37, "normal(mean, std): mean must be finite, got nan"),
    ("normal(0, inf)", 40, "normal(mean, std): std must be finite, got inf"),
    ("relu_normal(0, -0.5)", 45, "relu_normal(mean, std): std must be >= 0, got -0.5"),
    ("uniform(5, -5)", 41, "uniform(lo, hi): hi must be >= lo, got uniform(5.0, -5.0)"),
    ("uniform(-inf, 0)", 38, "uniform(lo, hi): lo must be finite, got -inf"),
    ("uniform(-1e308, 1e308)", 46, "the width hi - lo must be a finite float"),
])
def test_invalid_initialisers(init: str, column: int, message: str) -> None:
    error = _error(f".hbm a float32[4] input init={init}\n")
    assert (error.location.line, error.location.column) == (1, column)
    assert message in error.message


def test_hbm_rank_limit() -> None:
    assert neuronemu.assemble(f".hbm a float32[{', '.join(['1'] * 16)}] input\n")
    error = _error(f".hbm a float32[{', '.join(['1'] * 17)}] input\n")
    assert error.location.column == 8 and "at most 16 dims, got 17" in error.message


@pytest.mark.parametrize("depth", [500, 5000, 50000])
def test_deep_expressions_have_no_depth_limit(depth: int) -> None:
    assert _mov_value("+".join(["1"] * depth)) == ("int", depth)
    assert _mov_value("-" * depth + "7") == ("int", 7 * (-1) ** depth)
    assert _mov_value("(" * depth + "3" + ")" * depth) == ("int", 3)


def test_errors_deep_inside_an_expression_are_located() -> None:
    error = _error("    ctrl.mov r0, " + "1+" * 3000 + "nope\n")
    assert (error.location.line, error.location.column) == (1, 18 + 2 * 3000)
    assert "unknown name 'nope'" in error.message
