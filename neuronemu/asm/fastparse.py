"""A hand-written fast path for the parser: one regex tokenizer and a precedence-climbing parser
that build the same tree lark builds from isa/grammar.lark (same node kinds, children, tokens
and line/column positions), about twenty times faster.

grammar.lark stays the definition of the language. This parser accepts a *subset* of it and
answers ``None`` for anything it is not sure about (a string literal, a non-ASCII character, a
number glued to a name, a very deep expression, any syntax error); ``parser.parse`` then runs
lark on the whole file, which builds the tree or reports today's located syntax error.
tests/asm/test_fastparse.py checks, with hypothesis, that whatever this parser accepts lark
accepts with an equal tree.

The grammar is line-local (one item per line: a label, a statement, or both), so the file is
parsed line by line, and the instruction of a line whose exact text was seen before reuses the
children parsed the first time: only its top node is new (with its own line). Those shared
children carry the first occurrence's line numbers, which is harmless because the assembler
resolves an instruction text once and reuses the result for every identical line
(``Assembler._instruction``).
"""

from __future__ import annotations

import re

# One token, after optional blanks: NUMBER, NAME, a punctuation mark, or a STRING (which sends
# the line to lark). The NUMBER and NAME patterns are grammar.lark's.
_TOKEN = re.compile(
    r"([ \t\f]*)(?:"
    r"(0x[0-9A-Fa-f]+|0b[01]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"   # 2 NUMBER
    r"|([A-Za-z_][A-Za-z0-9_]*)"                                            # 3 NAME
    r"|([-+*/%:,.=\[\]()])"                                                 # 4 punctuation
    r")")
# what may not follow a NUMBER (lark would lex it apart). A name may: lark lexes NUMBER NAME
# as two tokens as this tokenizer does, which are two arguments of a directive
# (".topology trn2.48xlarge") and a syntax error anywhere else (the parser here refuses it).
_GLUED = frozenset("0123456789.")
_SUM_START = frozenset(("-", "+", "[", "("))
_OPERAND_END = frozenset((",", "]", ")", ":", ""))   # what may follow a complete operand
_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
_MAX_DEPTH = 100   # deeper nesting goes to lark (this parser recurses)
# A number that is surely one NUMBER token (not glued to a name, a number or a '.'): the places
# where two lines of the same template (``TemplateLine``) may differ. ASCII digits only.
_NUMBER_SPLIT = re.compile(
    r"(?=[0-9.])(?<![A-Za-z0-9_.])"   # (the lookahead first: cheaper where no number starts)
    r"(0x[0-9A-Fa-f]+|0b[01]+|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"(?![A-Za-z0-9_.])")


class Reject(Exception):
    """The fast parser does not accept this text (lark decides)."""


class Token(str):
    """A terminal, as lark's ``Token``: the text, its kind and its 1-based span on one line."""

    def __new__(cls, kind: str, text: str, line: int, column: int, end_column: int):
        self = str.__new__(cls, text)
        self.type = kind
        self.line = self.end_line = line
        self.column = column
        self.end_column = end_column
        return self


class Node:
    """A rule match, as lark's ``Tree`` with ``propagate_positions``: ``data``, ``children`` and
    the span; ``meta`` is the node itself (line, column, end_line, end_column, empty).

    As in lark, an expression in parentheses or after a unary ``+`` keeps its own span, but the
    node containing it spans the parentheses and the ``+`` (lark's "container" positions):
    every span here is therefore taken from the first and last tokens a rule consumed."""

    __slots__ = ("children", "column", "data", "end_column", "end_line", "line")
    empty = False

    def __init__(self, data: str, children: list, line: int, column: int, end_column: int):
        self.data = data
        self.children = children
        self.line = self.end_line = line
        self.column = column
        self.end_column = end_column

    @property
    def meta(self) -> Node:
        return self

    def __repr__(self) -> str:
        return f"Node({self.data!r}, {self.children!r})"


class TemplateLine(Node):
    """An instruction line alone on its line, with its *template*: the line's code (before any
    comment) cut at its numbers, ``parts`` = [text, number, text, number, ..., text]. Two lines
    whose texts between the numbers are equal tokenize to the same kinds of tokens (every number
    is one NUMBER token, never glued to its neighbours), so they parse to the same tree but for
    the numbers and the columns after them: the assembler reads such lines as values, by a
    reader made once per template (asm/lines.py). ``children`` is parsed on first use only."""

    __slots__ = ("_children", "key", "parts", "text")

    def __init__(self, text: str, line: int, column: int, end_column: int, key: tuple,
                 parts: list[str], children: list | None = None):
        self.data = "instruction"
        self.text = text
        self.line = self.end_line = line
        self.column = column
        self.end_column = end_column
        self.key = key
        self.parts = parts
        self._children = children

    @property
    def children(self) -> list:
        if self._children is None:
            # same kinds of tokens as the template's first line, which parsed: this parses too
            self._children = parse_line(self.text, self.line)[0].children
        return self._children


def _number_columns(node, found: list[int]) -> list[int]:
    """The start columns of every NUMBER token under ``node``, in any order."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            if item.type == "NUMBER":
                found.append(item.column)
        elif item is not None:
            stack.extend(item.children)
    return found


def number_spans(parts: list[str]) -> tuple[list[int], list[int]]:
    """The 1-based start and end columns of the numbers a line was cut at (``parts``: text,
    number, text, ...)."""
    starts, ends, column = [], [], 1
    for i in range(1, len(parts), 2):
        column += len(parts[i - 1])
        starts.append(column)
        column += len(parts[i])
        ends.append(column)
    return starts, ends


def _template(line: str, number: int, parsed: list[Node], parts: list[str]) -> TemplateLine | None:
    """``parsed`` (the items of ``line``) as the first line of its template, when it is one
    instruction whose NUMBER tokens are exactly the numbers ``parts`` cut out."""
    if len(parsed) != 1 or parsed[0].data != "instruction":
        return None
    node = parsed[0]
    if sorted(_number_columns(node, [])) != number_spans(parts)[0]:
        return None
    return TemplateLine(line, number, node.column, node.end_column, tuple(parts[0::2]), parts,
                        node.children)


class _Line:
    """The tokens of one line and a cursor: kinds ("NUMBER", "NAME" or the mark itself),
    texts, start columns, end columns."""

    __slots__ = ("depth", "ends", "kinds", "line", "pos", "starts", "texts")

    def __init__(self, text: str, line: int):
        kinds, texts, starts, ends = [], [], [], []
        end = len(text)
        pos = 0
        # findall skips what no token matches; the length check below catches any such gap
        for blanks, number, name, mark in _TOKEN.findall(text):
            start = pos + len(blanks) + 1   # 1-based column
            if number:
                token = number
                kinds.append("NUMBER")
                pos = start - 1 + len(token)
                if pos < end and text[pos] in _GLUED:
                    raise Reject
            else:
                token = name or mark
                kinds.append("NAME" if name else mark)
                pos = start - 1 + len(token)
            texts.append(token)
            starts.append(start)
            ends.append(pos + 1)
        if text[pos:].strip(" \t\f"):
            raise Reject
        kinds.append("")   # end of line
        self.kinds, self.texts, self.starts, self.ends = kinds, texts, starts, ends
        self.pos = 0
        self.line = line
        self.depth = 0

    def token(self) -> Token:
        i = self.pos
        self.pos = i + 1
        return Token(self.kinds[i], self.texts[i], self.line, self.starts[i], self.ends[i])

    def expect(self, kind: str) -> None:
        if self.kinds[self.pos] != kind:
            raise Reject
        self.pos += 1


def parse_line(text: str, line: int) -> list[Node]:
    """The items of one line that is not blank or a comment (a label, a statement, or a label
    and a statement); ``Reject`` when this parser does not accept it."""
    if '"' in text:   # a string literal (a '#' inside it is not a comment)
        raise Reject
    hash_at = text.find("#")
    if hash_at >= 0:
        text = text[:hash_at]
    if not text.isascii():   # a comment may hold anything; the code only ASCII (else: lark)
        raise Reject
    t = _Line(text, line)
    kinds = t.kinds
    items = []
    if kinds[0] == "NAME" and kinds[1] == ":":
        items.append(Node("label", [t.token()], line, t.starts[0], t.ends[1]))
        t.pos = 2
    if kinds[t.pos] == ".":
        items.append(_directive(t))
    elif kinds[t.pos] == "NAME":
        items.append(_instruction(t))
    elif not items:
        raise Reject
    if kinds[t.pos] != "":
        raise Reject
    return items


def _instruction(t: _Line) -> Node:
    first = t.pos
    engine = t.token()
    t.expect(".")
    if t.kinds[t.pos] != "NAME":
        raise Reject
    children = [engine, t.token()]
    if t.kinds[t.pos] != "":
        children.append(_arg(t))
        while t.kinds[t.pos] == ",":
            t.pos += 1
            children.append(_arg(t))
    return Node("instruction", children, t.line, t.starts[first], t.ends[t.pos - 1])


def _directive(t: _Line) -> Node:
    first = t.pos
    t.pos += 1
    if t.kinds[t.pos] != "NAME":
        raise Reject
    children = [t.token()]
    kinds = t.kinds
    if kinds[t.pos] != "":
        children.append(_arg(t))
        while kinds[t.pos] != "":
            if kinds[t.pos] == ",":
                t.pos += 1
            children.append(_arg(t))
    return Node("directive", children, t.line, t.starts[first], t.ends[t.pos - 1])


def _arg(t: _Line) -> Node:
    """An argument: ``NAME = value`` (kwarg) or a value."""
    if t.kinds[t.pos] == "NAME" and t.kinds[t.pos + 1] == "=":
        first = t.pos
        key = t.token()
        t.pos += 1
        value = _sum(t)
        return Node("kwarg", [key, value], t.line, t.starts[first], t.ends[t.pos - 1])
    return _sum(t)


def _sum(t: _Line) -> Node:
    first = t.pos
    kind = t.kinds[first]
    if (kind == "NUMBER" or kind == "NAME") and t.kinds[first + 1] in _OPERAND_END:
        # a lone number or name (most operands): no descent through product/unary/atom
        t.pos = first + 1
        line, start, end = t.line, t.starts[first], t.ends[first]
        return Node("number" if kind == "NUMBER" else "name",
                    [Token(kind, t.texts[first], line, start, end)], line, start, end)
    return _chain(t, _product, ("+", "-"))


def _product(t: _Line) -> Node:
    return _chain(t, _unary, ("*", "/", "%"))


def _chain(t: _Line, operand, operators: tuple[str, ...]) -> Node:
    """``operand (op operand)*``, left-associative, for one precedence level."""
    first = t.pos
    left = operand(t)
    kinds = t.kinds
    while kinds[t.pos] in operators:
        op = _BINARY[kinds[t.pos]]
        t.pos += 1
        right = operand(t)
        left = Node(op, [left, right], t.line, t.starts[first], t.ends[t.pos - 1])
    return left


def _unary(t: _Line) -> Node:
    kind = t.kinds[t.pos]
    if kind == "-" or kind == "+":
        t.depth += 1
        if t.depth > _MAX_DEPTH:
            raise Reject
        first = t.pos
        t.pos += 1
        operand = _unary(t)
        t.depth -= 1
        if kind == "+":
            return operand   # ?unary: "+" unary is inlined: the operand's own span
        return Node("neg", [operand], t.line, t.starts[first], t.ends[t.pos - 1])
    return _atom(t)


def _atom(t: _Line) -> Node:
    i = t.pos
    kind = t.kinds[i]
    line = t.line
    if kind == "NUMBER":
        token = t.token()
        return Node("number", [token], line, token.column, token.end_column)
    if kind == "NAME":
        token = t.token()
        follow = t.kinds[i + 1]
        if follow == "[":
            t.pos += 1
            children = _separated(t, _slice_item, "]", [token], optional=False)
            return Node("indexed", children, line, token.column, t.ends[t.pos - 1])
        if follow == "(":
            t.pos += 1
            children = _separated(t, _sum, ")", [token])
            return Node("call", children, line, token.column, t.ends[t.pos - 1])
        return Node("name", [token], line, token.column, token.end_column)
    t.depth += 1
    if t.depth > _MAX_DEPTH:
        raise Reject
    if kind == "[":
        t.pos += 1
        children = _separated(t, _sum, "]", [])
        t.depth -= 1
        return Node("list", children, line, t.starts[i], t.ends[t.pos - 1])
    if kind == "(":
        t.pos += 1
        inner = _sum(t)
        t.expect(")")
        t.depth -= 1
        return inner   # ?atom: "(" sum ")" is inlined: the inner expression's own span
    raise Reject


def _separated(t: _Line, item, closer: str, children: list, optional: bool = True) -> list:
    """``children`` + ``item ("," item)*`` (none when ``optional`` and ``closer`` follows),
    then ``closer``."""
    if not optional or t.kinds[t.pos] != closer:
        children.append(item(t))
        while t.kinds[t.pos] == ",":
            t.pos += 1
            children.append(item(t))
    t.expect(closer)
    return children


def _slice_item(t: _Line) -> Node:
    """``sum`` (index) or ``[sum] ":" [sum] [":" sum]`` (slice, always three children)."""
    kinds = t.kinds
    first = t.pos
    lo = None
    if kinds[first] != ":":
        lo = _sum(t)
        if kinds[t.pos] != ":":
            return Node("index", [lo], t.line, t.starts[first], t.ends[t.pos - 1])
    t.pos += 1
    hi = step = None
    if kinds[t.pos] in _SUM_START or kinds[t.pos] in ("NUMBER", "NAME"):
        hi = _sum(t)
    if kinds[t.pos] == ":":
        t.pos += 1
        step = _sum(t)
    return Node("slice", [lo, hi, step], t.line, t.starts[first], t.ends[t.pos - 1])


def parse_text(text: str, share: bool = True, templates: bool = False) -> Node | None:
    """The ``start`` tree of a whole file, or ``None`` when some line is not accepted.

    ``share``: a repeated instruction line reuses the children parsed first (see above);
    False parses every line afresh (every position exact, as the differential test needs).
    ``templates``: an instruction line alone on its line is a ``TemplateLine``; one whose
    template was seen before is not parsed (its children are parsed if they are asked for)."""
    items: list[Node] = []
    seen: dict[str, Node] = {}   # line text -> its instruction node (lines without a label)
    known: dict[tuple, tuple] = {}   # template -> itself (one key object: cheap lookups later)
    split = _NUMBER_SPLIT.split
    try:
        for number, line in enumerate(text.split("\n"), 1):
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] == "#":
                continue
            first = seen.get(line)
            if first is not None:
                items.append(Node("instruction", first.children, number, first.column,
                                  first.end_column))
                continue
            parts = None
            if templates and '"' not in line:
                hash_at = line.find("#")
                code = line if hash_at < 0 else line[:hash_at]
                parts = split(code)
                key = known.get(tuple(parts[0::2]))
                if key is not None:   # spans from its first token to the end of its last
                    items.append(TemplateLine(line, number, len(line) - len(stripped) + 1,
                                              len(code.rstrip(" \t\f")) + 1, key, parts))
                    continue
            parsed = parse_line(line, number)
            if parts is not None:
                template = _template(line, number, parsed, parts)
                if template is not None:
                    known[template.key] = template.key
                    parsed = [template]
            items.extend(parsed)
            if share and len(parsed) == 1 and parsed[0].data == "instruction":
                seen[line] = parsed[0]
    except (Reject, IndexError, RecursionError):
        return None
    return Node("start", items, 1, 1, 1)
