"""The lark LALR front end: source text -> parse tree, lark errors -> located ``AsmError``."""

from __future__ import annotations

import functools

from neuronemu.asm.collect import Collector
from neuronemu.asm.fastparse import Node, Reject, parse_line, parse_text
from neuronemu.errors import AsmError
from neuronemu.isa.resources import isa_dir
from neuronemu.source import Location, SourceFile

# Human names for grammar terminals in "expected ..." lists (derived once from the grammar's
# literal tokens; named terminals get a word).
_TERMINAL_WORDS = {
    "NAME": "name", "NUMBER": "number", "STRING": "string", "_NL": "end of line",
    "$END": "end of file",
}


@functools.lru_cache(maxsize=1)
def _parser():
    import lark

    grammar = (isa_dir() / "grammar.lark").read_text()
    # cache=True: lark keeps the analysed LALR tables in a temporary file keyed by the grammar
    # and options; loading them takes 5 ms instead of building them in 80 ms per process
    return lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                     maybe_placeholders=True, cache=True)


def _describe(terminal: str) -> str:
    if terminal in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[terminal]
    parser = _parser()
    for term in parser.terminals:
        if term.name == terminal and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return terminal.lower()


def parse(source: SourceFile, share: bool = True, collector: Collector | None = None,
          templates: bool = False):
    """Parse a whole file; raise ``AsmError`` pointing at the first syntax error.

    The fast parser (asm/fastparse.py) builds the tree of almost every file; whatever it does
    not accept goes to lark, which defines the language and words its syntax errors. ``share``:
    repeated instruction lines share their children; ``templates``: instruction lines are cut
    at their numbers (``fastparse.parse_text``).

    With a ``collector``, every syntax error is reported to it instead, and the tree of the
    other lines is returned: see ``_parse_lines``."""
    tree = parse_text(source.text, share, templates)
    if tree is not None:
        return tree
    if collector is None:
        return parse_with_lark(source)
    return _parse_lines(source, collector)


def _parse_lines(source: SourceFile, collector: Collector) -> Node:
    """The tree of a file the fast parser did not accept as a whole, line by line (the grammar
    is line-local, so one line's error never hides another's): the fast parser's items for the
    lines it accepts, lark's for the others, each lark error reported to ``collector``.

    lark parses a line alone, after as many empty lines as precede it, so its positions and
    its parser state (at the start of the file, or after an end of line) and therefore its
    messages are those of a parse of the whole file; the empty lines cost one token."""
    items: list = []
    for number, line in enumerate(source.text.split("\n"), 1):
        stripped = line.lstrip(" \t\f")
        if not stripped or stripped[0] == "#":
            continue
        try:
            items.extend(parse_line(line, number))
            continue
        except (Reject, IndexError, RecursionError):
            pass
        try:
            items.extend(parse_with_lark(source, "\n" * (number - 1) + line).children)
        except AsmError as e:
            collector.add(e)
            collector.poison_line(line)
    return Node("start", items, 1, 1, 1)


def parse_with_lark(source: SourceFile, text: str | None = None):
    """Parse a whole file with lark (the grammar's own parser); ``text``: parse this instead of
    the file's text (one of its lines, after empty lines), reporting errors in the file."""
    import lark

    try:
        return _parser().parse((source.text if text is None else text) + "\n")
    except lark.exceptions.UnexpectedCharacters as e:
        loc = Location(source, e.line, e.column, e.column + 1)
        char = source.line(e.line)[e.column - 1: e.column] or "?"
        raise AsmError(f"unexpected character {char!r}", loc) from None
    except lark.exceptions.UnexpectedToken as e:
        token = e.token
        expected = sorted({_describe(t) for t in e.expected})
        if token.type == "$END":
            last = max(source.line_count, 1)
            loc = Location(source, last, len(source.line(last)) + 1)
            got = "end of file"
        else:
            line = token.line or 1
            column = token.column or 1
            end = token.end_column if token.end_line == line else None
            loc = Location(source, line, column, end)
            got = "end of line" if token.type == "_NL" else f"{token.value!r}"
        shown = ", ".join(expected[:10]) + (", ..." if len(expected) > 10 else "")
        raise AsmError(f"syntax error: unexpected {got}; expected one of: {shown}", loc) from None
    except lark.exceptions.UnexpectedEOF as e:  # pragma: no cover - LALR reports UnexpectedToken
        raise AsmError(f"syntax error: unexpected end of file; expected {e.expected}") from None
