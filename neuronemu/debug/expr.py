"""The debugger's expressions: ``r3 == 7 and acc[0, 0] > 1``, ``out_sb[0:2, 0:4]``, ``$step``.

Parsed with Python's own ``ast`` (the syntax users know from numpy) and evaluated by walking
the tree over an allow-list of node kinds: names, numbers, subscripts with integers and
slices, arithmetic, comparisons, ``and`` / ``or`` / ``not``. Nothing is passed to ``eval``.
``$pc``, ``$step`` and ``$time`` are the machine's position (``$`` is read as ``_``, which
keeps every column of the text where it was for the error caret)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

import numpy as np

from neuronemu.errors import NeuronemuError
from neuronemu.source import Location, SourceFile


class CommandError(NeuronemuError):
    """A debugger command that cannot be carried out (the session goes on)."""


class Text:
    """One command's text and where it came from, so errors point at its columns."""

    def __init__(self, text: str, name: str = "<command>", line: int = 1, start: int = 0):
        self.text = text
        self.name = name
        self.line = line
        self.start = start       # column (0-based) of ``text`` within the whole line
        self.whole = text

    def sub(self, start: int, end: int | None = None) -> Text:
        """The part of this text from ``start`` (stripped), keeping its columns."""
        piece = self.text[start:end]
        lead = len(piece) - len(piece.lstrip())
        out = Text(piece.strip(), self.name, self.line, self.start + start + lead)
        out.whole = self.whole
        return out

    def error(self, message: str, column: int = 0, width: int | None = None,
              notes: tuple[str, ...] = ()) -> CommandError:
        """An error pointing at ``column`` (0-based, within this text)."""
        if width is None:
            width = max(len(self.text) - column, 1)
        begin = self.start + column + 1
        # the file's text as far as this line: the caret line shows the command
        text = "\n" * (self.line - 1) + self.whole
        location = Location(SourceFile(self.name, text), self.line, begin, begin + width)
        return CommandError(message, location, notes)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def parse(text: Text) -> ast.expr:
    """The expression tree of ``text`` (a CommandError, located, if it is not one)."""
    source = text.text.replace("$", "_")
    if not source:
        raise text.error("an expression is needed here")
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as e:
        column = max((e.offset or 1) - 1, 0)
        raise text.error(f"cannot read this expression: {e.msg}", min(column, len(source) - 1),
                         1) from None
    for node in ast.walk(tree):
        allowed = (ast.Name, ast.Constant, ast.Subscript, ast.Slice, ast.Tuple, ast.BinOp,
                   ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Load, ast.operator, ast.unaryop,
                   ast.cmpop, ast.boolop)
        if not isinstance(node, allowed) or (isinstance(node, ast.Constant)
                                             and not isinstance(node.value, (int, float))):
            column = getattr(node, "col_offset", 0)
            raise text.error("only names, numbers, [index / slice], arithmetic, comparisons "
                             "and and / or / not are allowed here", column,
                             max(getattr(node, "end_col_offset", column + 1) - column, 1))
    return tree


class Evaluator:
    """Evaluates a parsed expression; ``lookup(name, text, node)`` gives a name's value."""

    def __init__(self, text: Text, lookup: Callable[[str, Text, ast.AST], object]):
        self.text = text
        self.lookup = lookup

    def __call__(self, node: ast.AST):
        t = self.text
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id, t, node)
        if isinstance(node, ast.Subscript):
            value = self(node.value)
            index = self.index(node.slice)
            if not isinstance(value, np.ndarray):
                raise t.error("only a tile or tensor can be indexed", node.col_offset,
                              node.end_col_offset - node.col_offset)
            try:
                return value[index]
            except IndexError as e:
                raise t.error(f"{e} (shape {list(value.shape)})", node.slice.col_offset,
                              node.slice.end_col_offset - node.slice.col_offset) from None
        if isinstance(node, ast.UnaryOp):
            value = self(node.operand)
            if isinstance(node.op, ast.Not):
                return not _truth(value)
            return {ast.USub: operator.neg, ast.UAdd: operator.pos,
                    ast.Invert: operator.invert}[type(node.op)](value)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](self(node.left), self(node.right))
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(_truth(self(v)) for v in node.values)
            return any(_truth(self(v)) for v in node.values)
        if isinstance(node, ast.Compare):
            left = self(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = self(right_node)
                if not _truth(_COMPARE[type(op)](left, right)):
                    return False
                left = right
            return True
        raise t.error("this is not an expression the debugger evaluates", 0)

    def index(self, node: ast.AST):
        if isinstance(node, ast.Tuple):
            return tuple(self.index(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.integer(p)
                     for p in (node.lower, node.upper, node.step)]
            return slice(*parts)
        return self.integer(node)

    def integer(self, node: ast.AST) -> int:
        value = self(node)
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value.item()
        if isinstance(value, (bool, np.bool_)) or not float(value).is_integer():
            raise self.text.error("an index must be an integer", node.col_offset,
                                  node.end_col_offset - node.col_offset)
        return int(value)


def _truth(value) -> bool:
    if isinstance(value, np.ndarray):
        return bool(value.all())
    return bool(value)


def element(text: Text, shapes: dict[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]:
    """``NAME[i, j, ...]``: one element of a tile or tensor (every index an integer in range);
    ``shapes`` maps the names that may be used to their shapes."""
    tree = parse(text)
    if not (isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Name)):
        raise text.error("write one element: NAME[i, j] (a tile or tensor name and an integer "
                         "index per dimension)")
    name = tree.value.id
    if name not in shapes:
        raise text.error(f"'{name}' is not a tile or tensor of this kernel", 0, len(name),
                         notes=(f"names: {', '.join(sorted(shapes))}",))
    parts = tree.slice.elts if isinstance(tree.slice, ast.Tuple) else [tree.slice]
    shape = shapes[name]
    index = []
    for k, part in enumerate(parts):
        if not (isinstance(part, ast.Constant) and isinstance(part.value, int)):
            raise text.error("each index must be an integer literal", part.col_offset,
                             part.end_col_offset - part.col_offset)
        if k >= len(shape) or not 0 <= part.value < shape[k]:
            bound = f"0..{shape[k] - 1}" if k < len(shape) else "none"
            raise text.error(f"index {part.value} is outside dimension {k} of '{name}' "
                             f"(shape {list(shape)}; legal: {bound})", part.col_offset,
                             part.end_col_offset - part.col_offset)
        index.append(part.value)
    if len(index) != len(shape):
        raise text.error(f"'{name}' has {len(shape)} dimensions (shape {list(shape)}); give an "
                         f"index for each", tree.slice.col_offset,
                         tree.slice.end_col_offset - tree.slice.col_offset)
    return name, tuple(index)
