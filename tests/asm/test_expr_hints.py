"""Errors of '/' and '%' on register expressions say how to write them with constant operands
('*' and '/' group left to right, so r1*RB/2 is (r1*RB)/2: a register divided). Oracle:
hand-written messages, lines and columns; the suggested rewrite assembles and addresses what
the hand-computed constant offset does."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu import AsmError

SRC = """.const RB = 128
.hbm x float32[4, 1024] input
.hbm y float32[4, 64] output
.sbuf t float32[4, 1024]
.sbuf u float32[4, 64]
    dma.copy t, x
    ctrl.mov r1, 3
    vector.tensor_copy u, t[:, {expr} : {expr} + 64]
    dma.copy y, u
"""


def error_of(expr: str) -> str:
    with pytest.raises(AsmError) as err:
        neuronemu.assemble(SRC.format(expr=expr), "e.s")
    return str(err.value)


@pytest.mark.parametrize("expr, message", [
    ("r1*RB/2", ("'/' needs constant operands: 'r1*RB/2' groups as (r1*RB)/2, a register "
                "divided; write r1*(RB/2) (the same value, 128 being a multiple of 2) or name "
                "RB/2 with a .const")),
    ("RB*r1/2", "write r1*(RB/2) (the same value, 128 being a multiple of 2)"),
    ("r1*RB/3", ("'/' needs constant operands: the left operand depends on registers, and "
                "registers cannot be divided in an expression; divide the constants first (e.g. "
                "r1*(RB/2) for r1*RB/2), use a .const, or compute it with ctrl.div")),
    ("(r1 + 1)/2", "registers cannot be divided in an expression"),
    ("r1*RB % 2", ("'%' needs constant operands: the left operand depends on registers, which an "
                  "expression cannot take a remainder of; use a .const or compute it with "
                  "ctrl.rem")),
    ("64/r1", ("'/' needs constant operands: a register may not be a divisor (compute it with "
              "ctrl.div / ctrl.rem)")),
])
def test_register_division_errors_suggest_a_fix(expr: str, message: str) -> None:
    text = error_of(expr)
    line = SRC.format(expr=expr).splitlines()[7]
    assert text.startswith(f"e.s:8:{line.index(expr) + 1}: error: "), text
    assert message in text, text
    assert line in text and "^" + "~" * (len(expr) - 1) in text


def test_the_suggested_rewrite_assembles_and_addresses_the_same_columns() -> None:
    """r1 = 3: r1*(RB/2) = 192, the columns 192..255 of x."""
    x = np.arange(4 * 1024, dtype=np.float32).reshape(4, 1024)
    program = neuronemu.assemble(SRC.format(expr="r1*(RB/2)"), "e.s")
    np.testing.assert_array_equal(neuronemu.run(program, inputs={"x": x}).outputs["y"],
                                  x[:, 192:256])
