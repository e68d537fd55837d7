"""Golden diagnostics (LLVM MC style): every case line in tests/asm/invalid/*.s carries
``# CHECK: COL: error: message`` and must fail with exactly that line, column and message prefix.

A file is a preamble (declarations, up to the first ``#---`` line) followed by cases. Each case is
assembled alone: the preamble plus that one line, the other case lines blanked so that line
numbers stay those of the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronemu import AsmError, assemble

CASES_DIR = Path(__file__).parent / "asm" / "invalid"
CHECK = re.compile(r"#\s*CHECK:\s*(\d+):\s*error:\s*(.*)$")


def collect():
    for path in sorted(CASES_DIR.glob("*.s")):
        lines = path.read_text().splitlines()
        marker = next(i for i, line in enumerate(lines) if line.strip() == "#---")
        for i in range(marker + 1, len(lines)):
            m = CHECK.search(lines[i])
            if m:
                yield pytest.param(path, lines, marker, i, int(m.group(1)), m.group(2).strip(),
                                   id=f"{path.stem}:{i + 1}")


@pytest.mark.parametrize("path, lines, marker, index, column, message", list(collect()))
def test_diagnostic(path, lines, marker, index, column, message):
    text_lines = lines[: marker + 1] + [""] * (len(lines) - marker - 1)
    text_lines[index] = CHECK.sub("", lines[index]).rstrip()
    with pytest.raises(AsmError) as info:
        assemble("\n".join(text_lines) + "\n", filename=path.name)
    error = info.value
    assert error.location is not None, error.render()
    assert (error.location.line, error.location.column) == (index + 1, column), error.render()
    assert error.message.startswith(message), error.render()
    rendered = error.render()
    assert rendered.startswith(f"{path.name}:{index + 1}:{column}: error: ")
    assert "^" in rendered  # the caret line under the source line
    assert "Traceback" not in rendered


def test_every_file_has_cases():
    files = sorted(CASES_DIR.glob("*.s"))
    assert files
    for path in files:
        assert CHECK.search(path.read_text()), f"{path} has no CHECK lines"
