"""The parser: one regex tokenizer and a precedence-climbing parser that build the tree of
isa/grammar.lark (the node kinds, children, tokens and line/column positions lark builds from
it), about a hundred times faster than lark's LALR parser, and word its syntax errors.

grammar.lark is the definition of the language; lark is its executable reference, in the tests
only: tests/fuzz/test_parser.py checks, with hypothesis, that this parser accepts exactly
what lark accepts, with an equal tree, and reports an error where lark does (its own wording:
the token it did not expect and what may come there). Expressions are read without recursion,
so their nesting has no limit (as lark's LALR parser has none).

The grammar is line-local (one item per line: a label, a statement, or both), so the file is
parsed line by line, and the instruction of a line whose exact text was seen before reuses the
children parsed the first time: only its top node is new (with its own line). Those shared
children carry the first occurrence's line numbers, which is harmless because the assembler
resolves an instruction text once and reuses the result for every identical line
(``Assembler._instruction``).
"""

from __future__ import annotations

import re

from neuronemu.asm.collect import Collector
from neuronemu.errors import AsmError
from neuronemu.source import Location, SourceFile

# One token, after optional blanks: NUMBER, NAME, a punctuation mark or a STRING; the NUMBER,
# NAME and STRING patterns are grammar.lark's.
_TOKEN = re.compile(
    r"([ \t\f]*)(?:"
    r"(0x[0-9A-Fa-f]+|0b[01]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)"   # 2 NUMBER
    r"|([A-Za-z_][A-Za-z0-9_]*)"                                            # 3 NAME
    r"|([-+*/%:,.=\[\]()])"                                                 # 4 punctuation
    r'|("[^"\n]*")'                                                         # 5 STRING
    r")")
_NUMBER = re.compile(r"0x[0-9A-Fa-f]+|0b[01]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_SUM_START = frozenset(("-", "+", "[", "("))
_OPERAND_END = frozenset((",", "]", ")", ":", ""))   # what may follow a complete operand
_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
# what may come where a syntax error is found, as its message lists it
_SUM_WORDS = ("'('", "'+'", "'-'", "'['", "name", "number")
_VALUE_WORDS = (*_SUM_WORDS, "string")
_WORDS = {"": "end of line", "NAME": "name", "NUMBER": "number", "STRING": "string"}
# A number that is surely one NUMBER token (not glued to a name, a number or a '.'): the places
# where two lines of the same template (``TemplateLine``) may differ. ASCII digits only.
_NUMBER_SPLIT = re.compile(
    r"(?=[0-9.])(?<![A-Za-z0-9_.])"   # (the lookahead first: cheaper where no number starts)
    r"(0x[0-9A-Fa-f]+|0b[01]+|(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"(?![A-Za-z0-9_.])")


class ParseError(Exception):
    """A syntax error: ``message`` at ``column`` (to ``end_column``, None: a point) of ``line``."""

    def __init__(self, message: str, line: int, column: int, end_column: int | None):
        super().__init__(message)
        self.message, self.line, self.column, self.end_column = message, line, column, end_column


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
    """The tokens of one line and a cursor: kinds ("NUMBER", "NAME", "STRING", the mark
    itself, "?" for a character no token starts with, "" at the end of the line), texts,
    start columns, end columns."""

    __slots__ = ("code", "end_column", "ends", "kinds", "line", "pos", "starts", "texts")

    def __init__(self, text: str, code: str, line: int):
        """``text``: the whole line; ``code``: the part before its comment."""
        kinds, texts, starts, ends = [], [], [], []
        pos = 0
        # findall skips what no token matches; the check below catches any such gap
        for blanks, number, name, mark, string in _TOKEN.findall(code):
            start = pos + len(blanks) + 1   # 1-based column
            token = number or name or mark or string
            kinds.append("NUMBER" if number else "NAME" if name else "STRING" if string
                         else mark)
            pos = start - 1 + len(token)
            texts.append(token)
            starts.append(start)
            ends.append(pos + 1)
        if code[pos:].strip(" \t\f"):   # a character no token starts with, somewhere
            kinds, texts, starts, ends = _scan(code)
        # the end of the line (twice: a lookahead past the end is the end), where lark's
        # end-of-line token starts: after the comment
        self.end_column = len(text) + 1
        kinds += ("", "")
        texts += ("", "")
        starts += (self.end_column,) * 2
        ends += (self.end_column,) * 2
        self.kinds, self.texts, self.starts, self.ends = kinds, texts, starts, ends
        self.code = code
        self.pos = 0
        self.line = line

    def token(self) -> Token:
        i = self.pos
        self.pos = i + 1
        return Token(self.kinds[i], self.texts[i], self.line, self.starts[i], self.ends[i])

    def expect(self, kind: str, *also: str) -> None:
        """The next token is ``kind`` (else a syntax error naming it and ``also``)."""
        if self.kinds[self.pos] != kind:
            self.fail(f"'{kind}'", *also)
        self.pos += 1

    def fail(self, *expected: str):
        """A syntax error at the next token: it, and what may come there."""
        i = self.pos
        kind = self.kinds[i]
        if kind == "?":
            raise ParseError(f"unexpected character {self.texts[i]!r}", self.line,
                             self.starts[i], self.ends[i])
        words = sorted(set(expected))
        shown = ", ".join(words[:10]) + (", ..." if len(words) > 10 else "")
        if kind == "":
            raise ParseError(f"syntax error: unexpected end of line; expected one of: {shown}",
                             self.line, self.end_column, None)
        raise ParseError(f"syntax error: unexpected {self.texts[i]!r}; expected one of: "
                         f"{shown}", self.line, self.starts[i], self.ends[i])

    def dot(self) -> None:
        """Where '.' may come and a number may not (a directive's or an instruction's dot),
        a number written ``.5`` is the '.' and the number ``5`` (as lark's lexer, which
        tries only the tokens that may come, reads it)."""
        i = self.pos
        text = self.texts[i]
        if self.kinds[i] == "NUMBER" and text[0] == ".":
            # (a name must come next, so the line is wrong at the number; the tokens after it
            # are left as they are)
            start = self.starts[i]
            number = _NUMBER.match(self.code, start).group()
            self.kinds[i:i + 1] = [".", "NUMBER"]
            self.texts[i:i + 1] = [".", number]
            self.starts[i:i + 1] = [start, start + 1]
            self.ends[i:i + 1] = [start + 1, start + 1 + len(number)]

def _scan(code: str) -> tuple[list, list, list, list]:
    """The tokens of ``code`` up to the first character no token starts with, which is the
    last token, of kind "?" (a syntax error before it is found first, as lark finds it)."""
    kinds, texts, starts, ends = [], [], [], []
    pos = 0
    while True:
        m = _TOKEN.match(code, pos)
        if m is None:
            bad = len(code) - len(code[pos:].lstrip(" \t\f"))
            kinds.append("?")
            texts.append(code[bad])
            starts.append(bad + 1)
            ends.append(bad + 2)
            return kinds, texts, starts, ends
        blanks, number, name, mark, string = m.groups()
        token = number or name or mark or string
        kinds.append("NUMBER" if number else "NAME" if name else "STRING" if string else mark)
        texts.append(token)
        starts.append(pos + len(blanks) + 1)
        ends.append(m.end() + 1)
        pos = m.end()


def _comment_start(text: str) -> int:
    """Where the comment of a line starts (-1: none): its first '#' outside a string."""
    hash_at = text.find("#")
    if hash_at < 0 or '"' not in text[:hash_at]:
        return hash_at
    inside = False
    for i, c in enumerate(text):
        if c == '"':
            inside = not inside
        elif c == "\n":
            inside = False
        elif c == "#" and not inside:
            return i
    return -1


def parse_line(text: str, line: int) -> list[Node]:
    """The items of one line that is not blank or a comment (a label, a statement, or a label
    and a statement); ``ParseError`` at its first syntax error."""
    hash_at = _comment_start(text)
    t = _Line(text, text if hash_at < 0 else text[:hash_at], line)
    kinds = t.kinds
    items = []
    if kinds[0] == "NAME" and kinds[1] == ":":
        items.append(Node("label", [t.token()], line, t.starts[0], t.ends[1]))
        t.pos = 2
    t.dot()
    if kinds[t.pos] == ".":
        items.append(_directive(t))
    elif kinds[t.pos] == "NAME":
        t.pos += 1
        t.dot()
        if kinds[t.pos] != ".":
            t.fail("'.'", *(() if items else ("':'",)))
        t.pos -= 1
        items.append(_instruction(t))
    elif not items:
        t.fail("'.'", "name")
    elif kinds[t.pos] != "":
        t.fail("'.'", "name", "end of line")
    if kinds[t.pos] != "":
        t.fail("','", "end of line")
    return items


def _instruction(t: _Line) -> Node:
    first = t.pos
    engine = t.token()
    t.pos += 1   # (the '.', checked by parse_line)
    if t.kinds[t.pos] != "NAME":
        t.fail("name")
    children = [engine, t.token()]
    if t.kinds[t.pos] != "":
        children.append(_arg(t, "end of line"))
        while t.kinds[t.pos] == ",":
            t.pos += 1
            children.append(_arg(t))
    return Node("instruction", children, t.line, t.starts[first], t.ends[t.pos - 1])


def _directive(t: _Line) -> Node:
    first = t.pos
    t.pos += 1
    if t.kinds[t.pos] != "NAME":
        t.fail("name")
    children = [t.token()]
    kinds = t.kinds
    if kinds[t.pos] != "":
        children.append(_arg(t, "end of line"))
        while kinds[t.pos] != "":
            if kinds[t.pos] == ",":
                t.pos += 1
                children.append(_arg(t))
            else:
                children.append(_arg(t, "','", "end of line"))
    return Node("directive", children, t.line, t.starts[first], t.ends[t.pos - 1])


def _arg(t: _Line, *also: str) -> Node:
    """An argument: ``NAME = value`` (kwarg) or a value (``also``: what else may come instead,
    for a syntax error's message)."""
    if t.kinds[t.pos] == "NAME" and t.kinds[t.pos + 1] == "=":
        first = t.pos
        key = t.token()
        t.pos += 1
        value = _value(t)
        return Node("kwarg", [key, value], t.line, t.starts[first], t.ends[t.pos - 1])
    return _value(t, *also)


def _value(t: _Line, *also: str) -> Node:
    """A value: a string or an expression (``also``: what else may come instead)."""
    i = t.pos
    kind = t.kinds[i]
    if kind == "STRING":
        token = t.token()
        return Node("string", [token], t.line, token.column, token.end_column)
    if kind != "NUMBER" and kind != "NAME" and kind not in _SUM_START:
        t.fail(*_VALUE_WORDS, *also)
    return _sum(t)


def _sum(t: _Line) -> Node:
    """An expression (grammar.lark's ``sum``), read without recursion: nesting has no limit."""
    first = t.pos
    kind = t.kinds[first]
    if (kind == "NUMBER" or kind == "NAME") and t.kinds[first + 1] in _OPERAND_END:
        # a lone number or name (most operands): no machinery
        t.pos = first + 1
        line, start, end = t.line, t.starts[first], t.ends[first]
        return Node("number" if kind == "NUMBER" else "name",
                    [Token(kind, t.texts[first], line, start, end)], line, start, end)
    return _Expression(t).read()


# the states of _Expression.read
_OPERAND, _AFTER, _ITEM, _ARGUMENT = range(4)


class _Expression:
    """An explicit-stack reader of one ``sum``: an operator-precedence (shunting-yard) reader
    of each expression, and a stack of the brackets it is inside (parentheses, a list, an
    index's slice items, a call's arguments). Each operand is (node, first column, end column)
    with the columns of all its tokens (its parentheses and signs too): a node containing it
    spans from its operands' first token to their last, as lark's does."""

    __slots__ = ("brackets", "operands", "operators", "signs", "t")

    def __init__(self, t: _Line):
        self.t = t
        self.operands: list = []    # (node, start, end) of the expression being read
        self.operators: list = []   # its binary operators (marks) waiting for their right side
        self.signs: list = []       # token indices of the unary signs before its next operand
        self.brackets: list = []    # [kind, open index, children, saved state, ...] outermost first

    def read(self) -> Node:
        t = self.t
        kinds, starts, ends, line = t.kinds, t.starts, t.ends, t.line
        state = _OPERAND
        while True:
            if state == _OPERAND:   # a "unary": signs, then an atom
                while kinds[t.pos] == "-" or kinds[t.pos] == "+":
                    self.signs.append(t.pos)
                    t.pos += 1
                i = t.pos
                kind = kinds[i]
                if kind == "NUMBER":
                    token = t.token()
                    self.operand(Node("number", [token], line, token.column, token.end_column),
                                 starts[i], ends[i])
                    state = _AFTER
                elif kind == "NAME":
                    token = t.token()
                    follow = kinds[i + 1]
                    if follow == "[":
                        t.pos += 1
                        self.open(["index", i, [token], None, 0, None, None])
                        state = _ITEM
                    elif follow == "(" and kinds[i + 2] == ")":
                        t.pos += 2
                        self.operand(Node("call", [token], line, starts[i], ends[i + 2]),
                                     starts[i], ends[i + 2])
                        state = _AFTER
                    elif follow == "(":
                        t.pos += 1
                        self.open(["call", i, [token]])
                        state = _ARGUMENT
                    else:
                        self.operand(Node("name", [token], line, token.column,
                                          token.end_column), starts[i], ends[i])
                        state = _AFTER
                elif kind == "[" and kinds[i + 1] == "]":
                    t.pos += 2
                    self.operand(Node("list", [], line, starts[i], ends[i + 1]), starts[i],
                                 ends[i + 1])
                    state = _AFTER
                elif kind == "[" or kind == "(":
                    t.pos += 1
                    self.open(["list" if kind == "[" else "paren", i, []])
                else:
                    t.fail(*_SUM_WORDS)
                continue
            if state == _AFTER:   # an operand was read: an operator, or the expression ends
                kind = kinds[t.pos]
                rank = _RANK.get(kind)
                if rank is not None:
                    while self.operators and _RANK[self.operators[-1]] >= rank:
                        self.reduce()
                    self.operators.append(kind)
                    t.pos += 1
                    state = _OPERAND
                    continue
                while self.operators:
                    self.reduce()
                result = self.operands.pop()
                if not self.brackets:
                    return result[0]
                state = self.inside(result)
                continue
            if state == _ARGUMENT:   # a call's argument: a value
                i = t.pos
                if kinds[i] == "STRING":
                    token = t.token()
                    state = self.inside((Node("string", [token], line, token.column,
                                              token.end_column), starts[i], ends[i]))
                elif kinds[i] in ("NUMBER", "NAME") or kinds[i] in _SUM_START:
                    state = _OPERAND
                else:
                    t.fail(*_VALUE_WORDS)
                continue
            # _ITEM: a slice item of an index begins: "[sum] ':' [sum] [':' sum]" or "sum"
            bracket = self.brackets[-1]
            bracket[4], bracket[5] = "lo", t.pos   # (its first token)
            state = self.inside(None) if kinds[t.pos] == ":" else _OPERAND

    def operand(self, node: Node, start: int, end: int) -> None:
        """An atom was read: the signs before it apply to it (the innermost first)."""
        signs = self.signs
        if signs:
            t = self.t
            for s in reversed(signs):
                start = t.starts[s]
                if t.kinds[s] == "-":
                    node = Node("neg", [node], t.line, start, end)
            signs.clear()
        self.operands.append((node, start, end))

    def reduce(self) -> None:
        right = self.operands.pop()
        left = self.operands.pop()
        node = Node(_BINARY[self.operators.pop()], [left[0], right[0]], self.t.line, left[1],
                    right[2])
        self.operands.append((node, left[1], right[2]))

    def open(self, bracket: list) -> None:
        """Into a bracket: the expression read so far waits in it."""
        bracket.insert(3, (self.operands, self.operators, self.signs))
        self.brackets.append(bracket)
        self.operands, self.operators, self.signs = [], [], []

    def close(self, node: Node, start: int, end: int) -> int:
        """Out of the innermost bracket, which made ``node``: an operand of the expression
        that waited in it."""
        bracket = self.brackets.pop()
        self.operands, self.operators, self.signs = bracket[3]
        self.operand(node, start, end)
        return _AFTER

    def inside(self, result) -> int:
        """The expression just read (``result``: node, start, end; None for a slice bound left
        out) ends inside the innermost bracket, at the next token: what comes next."""
        t = self.t
        kinds, starts, ends, line = t.kinds, t.starts, t.ends, t.line
        bracket = self.brackets[-1]
        kind, i, children = bracket[0], bracket[1], bracket[2]
        if kind == "paren":
            t.expect(")")
            node = result[0]   # (its own span; the parentheses count for the node around it)
            return self.close(node, starts[i], ends[t.pos - 1])
        if kind == "list" or kind == "call":
            children.append(result[0])
            if kinds[t.pos] == ",":
                t.pos += 1
                self.operands, self.operators, self.signs = [], [], []
                return _OPERAND if kind == "list" else _ARGUMENT
            t.expect("]" if kind == "list" else ")", "','")
            return self.close(Node(kind, children, line, starts[i], ends[t.pos - 1]),
                              starts[i], ends[t.pos - 1])
        # an index: [kind, open, children, saved, phase, first, lo, hi]
        phase, first = bracket[4], bracket[5]
        item = None
        if phase == "lo":
            lo = None if result is None else result[0]
            if result is not None and kinds[t.pos] != ":":
                item = Node("index", [lo], line, starts[first], ends[t.pos - 1])
            else:
                t.pos += 1   # (the ':')
                bracket[6] = lo
                kind = kinds[t.pos]
                if kind in _SUM_START or kind == "NUMBER" or kind == "NAME":
                    bracket[4] = "hi"
                    self.operands, self.operators, self.signs = [], [], []
                    return _OPERAND
                if kind == ":":
                    t.pos += 1
                    bracket[4], bracket[7] = "step", None
                    self.operands, self.operators, self.signs = [], [], []
                    return _OPERAND
                item = Node("slice", [lo, None, None], line, starts[first], ends[t.pos - 1])
        elif phase == "hi":
            if kinds[t.pos] == ":":
                t.pos += 1
                bracket[4], bracket[7] = "step", result[0]
                self.operands, self.operators, self.signs = [], [], []
                return _OPERAND
            item = Node("slice", [bracket[6], result[0], None], line, starts[first],
                        ends[t.pos - 1])
        else:   # step
            item = Node("slice", [bracket[6], bracket[7], result[0]], line, starts[first],
                        ends[t.pos - 1])
        children.append(item)
        if kinds[t.pos] == ",":
            t.pos += 1
            self.operands, self.operators, self.signs = [], [], []
            return _ITEM
        t.expect("]", "','")
        return self.close(Node("indexed", children, line, starts[i], ends[t.pos - 1]),
                          starts[i], ends[t.pos - 1])


_RANK = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def parse_text(text: str, share: bool = True, templates: bool = False,
               errors: list | None = None) -> Node:
    """The ``start`` tree of a whole file.

    ``share``: a repeated instruction line reuses the children parsed first (see above);
    False parses every line afresh (every position exact, as the differential test needs).
    ``templates``: an instruction line alone on its line is a ``TemplateLine``; one whose
    template was seen before is not parsed (its children are parsed if they are asked for).
    ``errors``: a line with a syntax error is left out and (its ParseError, its text) appended
    (the grammar is line-local: one line's error never hides another's); without it the first
    ``ParseError`` is raised."""
    items: list[Node] = []
    seen: dict[str, Node] = {}   # line text -> its instruction node (lines without a label)
    known: dict[tuple, tuple] = {}   # template -> itself (one key object: cheap lookups later)
    split = _NUMBER_SPLIT.split
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
        try:
            parsed = parse_line(line, number)
        except ParseError as e:
            if errors is None:
                raise
            errors.append((e, line))
            continue
        if parts is not None:
            template = _template(line, number, parsed, parts)
            if template is not None:
                known[template.key] = template.key
                parsed = [template]
        items.extend(parsed)
        if share and len(parsed) == 1 and parsed[0].data == "instruction":
            seen[line] = parsed[0]
    return Node("start", items, 1, 1, 1)


def parse(source: SourceFile, share: bool = True, collector: Collector | None = None,
          templates: bool = False) -> Node:
    """Parse a whole file; raise ``AsmError`` pointing at the first syntax error.

    ``share``: repeated instruction lines share their children; ``templates``: instruction
    lines are cut at their numbers (``parser.parse_text``). With a ``collector``, every
    syntax error (the first of each line: the grammar is line-local) is reported to it
    instead, and the tree of the other lines is returned."""
    if collector is None:
        try:
            return parse_text(source.text, share, templates)
        except ParseError as e:
            raise located(source, e) from None
    errors: list = []
    tree = parse_text(source.text, share, templates, errors)
    for error, line in errors:
        collector.add(located(source, error))
        collector.poison_line(line)
    return tree


def parse_one(source: SourceFile, text: str, line: int) -> list[Node]:
    """The items of ``text``, line ``line`` of ``source`` (``AsmError`` at a syntax error)."""
    try:
        return parse_line(text, line)
    except ParseError as e:
        raise located(source, e) from None


def located(source: SourceFile, error: ParseError) -> AsmError:
    return AsmError(error.message, Location(source, error.line, error.column, error.end_column))
