"""Source files and locations, and the compiler-style rendering of diagnostics.

Every error a user can trigger carries a ``Location`` and renders as::

    kernel.s:12:5: error: message
       12 |     vector.tensor_tensor c, a, b, op=ad
          |                                      ^~
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and a lone ``\\r`` both end a line: the text with every line ending as ``\\n``.

    Done once, before parsing, so that the parser, the line numbers it reports and the lines a
    diagnostic shows all count lines the same way (a CR-only file is not one long line)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class SourceFile:
    """The text of one assembly file and the name it is reported under.

    ``text`` is stored with normalised line endings; lines are split on ``\\n`` only, as the
    parser counts them (``str.splitlines`` would also split on form feeds and U+2028 inside
    comments and shift every later line number)."""

    name: str
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", normalize_newlines(self.text))

    @cached_property
    def _line_starts(self) -> list[int]:
        # offsets of the first character of every line: built once, so looking a line up is
        # O(log n) instead of splitting the whole file per diagnostic or instruction
        starts = [0]
        find = self.text.find
        at = find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = find("\n", at + 1)
        return starts

    @property
    def line_count(self) -> int:
        """Number of lines (a final line ending does not start another line)."""
        starts = self._line_starts
        return len(starts) - 1 if starts[-1] == len(self.text) else len(starts)

    def line(self, lineno: int) -> str:
        """The text of 1-based line ``lineno`` without its line ending ("" when out of range)."""
        if not 1 <= lineno <= self.line_count:
            return ""
        starts = self._line_starts
        begin = starts[lineno - 1]
        end = starts[lineno] - 1 if lineno < len(starts) else len(self.text)
        return self.text[begin:end]


@dataclass(frozen=True)
class Expansion:
    """Where a line produced by ``.rept`` or a macro was expanded (asm/macros.py).

    ``kind`` is ``"macro"`` (``name`` the macro) or ``"rept"`` (``index`` of ``count``
    repetitions, from 1); ``site`` is the invoking line or the ``.rept`` line, itself carrying
    the expansion it came from, if any (so the frames form a chain, innermost first)."""

    kind: str
    name: str
    site: Location
    index: int = 0
    count: int = 0

    def describe(self) -> str:
        if self.kind == "macro":
            return f"in expansion of macro '{self.name}' from {self.site}"
        return f"in repetition {self.index} of {self.count} of '.rept' at {self.site}"


@dataclass(frozen=True)
class Location:
    """A 1-based line/column span inside a source file (end_column is exclusive).

    ``expansion``: set when the line was produced by a macro or ``.rept``; the location is then
    the line in the macro (or ``.rept``) body, and the expansion says where it was used."""

    source: SourceFile
    line: int
    column: int
    end_column: int | None = None
    expansion: Expansion | None = None

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.column}"

    def render(self, severity: str, message: str, expansion: bool = True) -> str:
        """``file:LINE:COL: severity: message`` followed by the source line and a caret, and
        (``expansion``) one note with its own line and caret per macro / ``.rept`` expansion
        the line came from."""
        text = self._render(severity, message)
        return text + self.render_expansion() if expansion else text

    def render_expansion(self) -> str:
        """The notes saying where this line was expanded from ("" outside expansions), each
        starting with a newline."""
        text = ""
        frame = self.expansion
        while frame is not None:
            note = frame.site._render("note", frame.describe(), located=False)
            text += "\n" + note
            frame = frame.site.expansion
        return text

    def expansion_json(self) -> list[dict]:
        """The expansion chain, innermost first, for ``--json``."""
        frames = []
        frame = self.expansion
        while frame is not None:
            doc = {"kind": frame.kind, "file": frame.site.source.name,
                   "line": frame.site.line, "column": frame.site.column}
            if frame.kind == "macro":
                doc["macro"] = frame.name
            else:
                doc.update(index=frame.index, count=frame.count)
            frames.append(doc)
            frame = frame.site.expansion
        return frames

    def _render(self, severity: str, message: str, located: bool = True) -> str:
        # located=False: a note names its location in the message ("note: in expansion ...
        # from file:L:C"), as compilers print it
        head = f"{self}: {severity}: {message}" if located else f"{severity}: {message}"
        text = self.source.line(self.line).expandtabs(1)
        if not text.strip():
            return head
        width = 1
        if self.end_column is not None and self.end_column > self.column:
            width = self.end_column - self.column
        width = max(1, min(width, len(text) - self.column + 1))
        text, column, width = _window(text, self.column, width)
        gutter = f"{self.line:>5} | "
        caret = " " * (column - 1) + "^" + "~" * (width - 1)
        return f"{head}\n{gutter}{text}\n{' ' * (len(gutter) - 2)}| {caret}"


SHOWN_COLUMNS = 160  # a longer source line is shown as a window around the caret
_CONTEXT = 60        # columns shown before the caret when the line is cut


def _window(text: str, column: int, width: int) -> tuple[str, int, int]:
    """Cut a very long line (a generated kernel, a 5,000-digit literal) to SHOWN_COLUMNS
    around the caret, marking the cuts with "...": (text, caret column, caret width)."""
    if len(text) <= SHOWN_COLUMNS:
        return text, column, width
    start = max(0, min(column - 1 - _CONTEXT, len(text) - SHOWN_COLUMNS))
    end = start + SHOWN_COLUMNS
    prefix = "..." if start else ""
    suffix = "..." if end < len(text) else ""
    column = column - start + len(prefix)
    width = max(1, min(width, end - (column - len(prefix) + start - 1)))
    return prefix + text[start:end] + suffix, column, width


def location_of(source: SourceFile, meta) -> Location:
    """Location of a parse tree node or token (both carry line/column/end_line/end_column)."""
    line = getattr(meta, "line", None) or 1
    column = getattr(meta, "column", None) or 1
    end_column = getattr(meta, "end_column", None)
    if getattr(meta, "end_line", line) != line:
        end_column = None
    return Location(source, line, column, end_column)
