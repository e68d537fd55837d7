"""Identical instruction lines and operand texts are resolved once and reused (issue 17 item 7):
the program must be exactly the one resolving every line afresh gives (assembler.REUSE = False),
with every location naming its own line and columns, and errors still at the first bad line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.api import assemble
from neuronemu.asm import assembler
from neuronemu.errors import AsmError
from neuronemu.programs import bundled_programs

HEADER = """\
.hbm a float32[128, 512] input
.hbm c float32[128, 512] output
.sbuf at float32[128, 512]
.sbuf ct float32[128, 512]
"""
BODY = """\
    dma.copy at[:, 0:256], a[:, 0:256], queue=0
top:    vector.tensor_scalar ct[0:64, 0:128], at[0:64, 0:128], op0=multiply, operand0=2.0
    scalar.activation ct, at, func=exp, scale=0.5
  scalar.activation ct, at, func=exp, scale=0.5
    vector.tensor_scalar ct[0:64, 0:128], at[0:64, 0:128], op0=multiply, operand0=2.0
    ctrl.mov r1, 3
    dma.copy c[:, 0:256], at[:, 0:256], queue=1   # same operand text as above, other args
"""


def _both(text: str, monkeypatch) -> tuple:
    reused = assemble(text, "k.s")
    monkeypatch.setattr(assembler, "REUSE", False)
    fresh = assemble(text, "k.s")
    monkeypatch.setattr(assembler, "REUSE", True)
    return reused, fresh


def _same_program(reused, fresh) -> None:
    assert len(reused.instructions) == len(fresh.instructions)
    for r, f in zip(reused.instructions, fresh.instructions, strict=True):
        # dataclass equality: every Tile and Immediate with its Location (line and columns)
        assert r == f
    for field in ("instrs", "ops", "imms"):
        np.testing.assert_array_equal(getattr(reused, field), getattr(fresh, field))


def test_repeated_body_equals_fresh_resolution(monkeypatch):
    text = HEADER + BODY.replace("top:", "    ") + BODY.replace("top:", "again:") + BODY * 0
    text += BODY.replace("top:", "    ") * 3
    reused, fresh = _both(text, monkeypatch)
    _same_program(reused, fresh)


@pytest.mark.parametrize("name", sorted(bundled_programs()))
def test_bundled_programs_equal_fresh_resolution(name, monkeypatch):
    path = bundled_programs()[name]
    reused, fresh = _both(path.read_text(), monkeypatch)
    _same_program(reused, fresh)


def test_moved_locations_are_hand_checked():
    line = "    dma.copy at[:, 0:256], a[:, 0:256], queue=0\n"
    program = assemble(HEADER + line + "\n# x\n" + line, "k.s")
    first, second = program.instructions
    assert (first.location.line, second.location.line) == (5, 8)
    assert (second.location.column, second.location.end_column) == (5, 48)
    dst, src = second.args["dst"], second.args["src"]
    assert (dst.location.line, dst.location.column, dst.location.end_column) == (8, 14, 26)
    assert (src.location.line, src.location.column, src.location.end_column) == (8, 28, 39)
    assert list(program.instrs[:, assembler.L.I_LINE]) == [5, 8]
    # the second row's operands are its own copies, at the next operand indices
    ops = [row[assembler.L.I_ARGS + 1] for row in program.instrs]
    assert program.ops.shape[0] == 4 and ops == [0, 2]


def test_operand_reused_in_a_new_position():
    """The same operand text at another column (and line) gets that column."""
    text = HEADER + "    dma.copy at[:, 0:256], a[:, 0:256]\n  dma.copy c[:, 0:256], at[:, 0:256]\n"
    program = assemble(text, "k.s")
    src = program.instructions[1].args["src"]
    assert (src.location.line, src.location.column, src.location.end_column) == (6, 25, 37)


def test_errors_name_the_first_bad_line_and_repeated_labels():
    bad = "    vector.tensor_scalar ct, at, op0=multiply, operand0=1e39\n"
    with pytest.raises(AsmError) as caught:
        assemble(HEADER + bad + bad, "k.s")
    assert str(caught.value).startswith("k.s:5:")
    twice = "lp: ctrl.mov r1, 3\n"
    with pytest.raises(AsmError) as caught:
        assemble(HEADER + twice + "    ctrl.mov r1, 3\n" + twice, "k.s")
    assert str(caught.value).startswith("k.s:7:1: error: label 'lp' is defined twice")
