"""Line endings and line lookup: CR, CRLF, LF and mixed files assemble alike and report the
same line:column and source line; looking lines up is linear in file size."""

from __future__ import annotations

import time

import pytest

import neuronemu
from neuronemu.errors import AsmError
from neuronemu.source import SourceFile

LINES = [
    "# a comment",
    ".hbm x float32[4, 8] input",
    ".sbuf t float32[4, 8]",
    "",
    "    dma.copy t, x, queue=0",
    "    vector.memset t, value=1.5, bogus=3",
]


def _error(text: str) -> AsmError:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(text, "k.s")
    return info.value


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_every_line_ending_gives_the_same_program_and_diagnostic(ending: str) -> None:
    error = _error(ending.join(LINES) + ending)
    assert (error.location.line, error.location.column) == (6, 33)
    assert error.render().splitlines()[1] == "    6 |     vector.memset t, value=1.5, bogus=3"
    good = ending.join(LINES[:-1]) + ending
    assert [i.location.line for i in neuronemu.assemble(good).instructions] == [5]


def test_mixed_line_endings() -> None:
    text = "\r\n".join(LINES[:2]) + "\r" + LINES[2] + "\n\r\n" + "\r".join(LINES[4:])
    error = _error(text)
    assert (error.location.line, error.location.column) == (6, 33)
    assert "bogus" in error.render().splitlines()[1]


@pytest.mark.parametrize("separator", ["\f", "\x0b", "\x1c", "\x85", "\u2028"])
def test_other_unicode_line_breaks_in_comments_do_not_shift_lines(separator: str) -> None:
    text = "\n".join([f"# one{separator}two"] + LINES[1:])
    error = _error(text)
    assert error.location.line == 6
    assert "bogus" in error.render().splitlines()[1]


def test_syntax_error_at_end_of_a_cr_only_file() -> None:
    error = _error(".hbm x float32[4, 8] input\r    ctrl.mov r0,")
    assert (error.location.line, error.location.column) == (2, 17)
    assert "unexpected end of" in error.message


def test_line_lookup_is_linear() -> None:
    # the old lookup split the whole text per call (~10 ms here): 2,000 lookups took ~20 s
    count = 200_000
    source = SourceFile("big.s", "".join(f"    ctrl.mov r0, {i}\r\n" for i in range(count)))
    start = time.perf_counter()
    assert all(source.line(i + 1) == f"    ctrl.mov r0, {i}" for i in range(0, count, 100))
    assert time.perf_counter() - start < 2.0
    assert all(source.line(i + 1) == f"    ctrl.mov r0, {i}" for i in range(count))
    assert source.line_count == count and source.line(count + 1) == "" and source.line(0) == ""
