"""Source files and locations, and the compiler-style rendering of diagnostics.

Every error a user can trigger carries a ``Location`` and renders as::

    kernel.s:12:5: error: message
       12 |     vector.tensor_tensor c, a, b, op=ad
          |                                      ^~
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    """The text of one assembly file and the name it is reported under."""

    name: str
    text: str

    def line(self, lineno: int) -> str:
        lines = self.text.splitlines()
        if 1 <= lineno <= len(lines):
            return lines[lineno - 1]
        return ""


@dataclass(frozen=True)
class Location:
    """A 1-based line/column span inside a source file (end_column is exclusive)."""

    source: SourceFile
    line: int
    column: int
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.column}"

    def render(self, severity: str, message: str) -> str:
        """``file:LINE:COL: severity: message`` followed by the source line and a caret."""
        head = f"{self}: {severity}: {message}"
        text = self.source.line(self.line).expandtabs(1)
        if not text.strip():
            return head
        width = 1
        if self.end_column is not None and self.end_column > self.column:
            width = self.end_column - self.column
        width = max(1, min(width, len(text) - self.column + 1))
        gutter = f"{self.line:>5} | "
        caret = " " * (self.column - 1) + "^" + "~" * (width - 1)
        return f"{head}\n{gutter}{text}\n{' ' * (len(gutter) - 2)}| {caret}"


def location_of(source: SourceFile, meta) -> Location:
    """Location of a lark tree node or token (both carry line/column/end_line/end_column)."""
    line = getattr(meta, "line", None) or 1
    column = getattr(meta, "column", None) or 1
    end_column = getattr(meta, "end_column", None)
    if getattr(meta, "end_line", line) != line:
        end_column = None
    return Location(source, line, column, end_column)
