"""lark's LALR parser for isa/grammar.lark: the reference the tests hold neuronemu's parser
(neuronemu/asm/parser.py) against (lark is not on any run-time path)."""

from __future__ import annotations

import functools

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
def lark_parser():
    import lark

    grammar = (isa_dir() / "grammar.lark").read_text()
    # cache=True: lark keeps the analysed LALR tables in a temporary file keyed by the grammar
    # and options; loading them takes 5 ms instead of building them in 80 ms per process
    return lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                     maybe_placeholders=True, cache=True)


def _describe(terminal: str) -> str:
    if terminal in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[terminal]
    parser = lark_parser()
    for term in parser.terminals:
        if term.name == terminal and term.pattern.type == "str":
            return f"'{term.pattern.value}'"
    return terminal.lower()


def parse_with_lark(source: SourceFile, text: str | None = None):
    """Parse a whole file with lark (the grammar's own parser); ``text``: parse this instead of
    the file's text (one of its lines, after empty lines), reporting errors in the file."""
    import lark

    try:
        return lark_parser().parse((source.text if text is None else text) + "\n")
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
