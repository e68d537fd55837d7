"""The lark LALR front end: source text -> parse tree, lark errors -> located ``AsmError``."""

from __future__ import annotations

import functools

from neuronemu.asm.fastparse import parse_text
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


def parse(source: SourceFile, share: bool = True, templates: bool = False):
    """Parse a whole file; raise ``AsmError`` pointing at the first syntax error.

    The fast parser (asm/fastparse.py) builds the tree of almost every file; whatever it does
    not accept goes to lark, which defines the language and words its syntax errors. ``share``:
    repeated instruction lines share their children; ``templates``: instruction lines are cut
    at their numbers (``fastparse.parse_text``)."""
    tree = parse_text(source.text, share, templates)
    if tree is not None:
        return tree
    return parse_with_lark(source)


def parse_with_lark(source: SourceFile):
    """Parse a whole file with lark (the grammar's own parser)."""
    import lark

    try:
        return _parser().parse(source.text + "\n")
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
