"""Instruction lines read as values, so that lines of a file and a traced kernel's instructions
are resolved by one resolver (asm/direct.py) with one memo of plans.

An unrolled kernel's lines differ mostly in their numbers: ``dma.copy at[:, 512:768],
a[:, 256*7:256*7+256], queue=3``. The parser cuts every instruction line at its numbers
(``parser.TemplateLine``: its *template* is the text between them). The first line of a
template is parsed; from it a ``Reader`` is made once, which says where each of the line's
numbers goes: into an operand's value, or into a slice bound of a tile (an expression of the
numbers and integer ``.const`` names, + - * only). Any line of the template then becomes a
``Op`` (mnemonic, operands and keywords as values, a tile as a ``TextTile``; ``Op.node``, the line) from its
numbers alone, without parsing it, and ``Direct.line`` lowers it from the plan its values share
with earlier lines (their tiles' layouts, view shapes and the other values), or resolves it the
ordinary way. Nothing here generates code: a reader is a few small functions, made once per
template, that take the line's numbers.

A reader answers only what it is sure of; anything else (a register in an index, a float or a
fraction where a slice bound goes, a division, an ``ap(...)`` operand, an integer beyond
``_LIMIT``, a constant whose integer division truncated) makes it refuse the line (``None``),
and the line is resolved the ordinary way, which reports any error exactly. The instruction
objects of a line (its ``Instruction`` with tiles, immediates and their columns) are always
the ordinary path's: built from the line itself when someone asks (``Made.build``).
"""

from __future__ import annotations

from operator import add, itemgetter, mul, sub

from neuronemu.asm.direct import Op
from neuronemu.asm.expr import BUILTIN_CONSTANTS, parse_number
from neuronemu.asm.parser import number_spans

# every integer a reader computes with + - * and every .const it uses stays below this, far
# inside the ordinary evaluator's limit (expr.INT_LIMIT, 2**128): where that one could report an
# overflow, the reader refuses the line
_LIMIT = 2 ** 62
_NUMERIC = ("scalar", "number", "int", "reg_or_int")
_OPERATORS = {"add": add, "sub": sub, "mul": mul}


class TextTile:
    """A tile operand written ``name`` or ``name[...]`` with constant bounds, as ``Direct.keys``
    takes a tile: its declared name, per written dim None (an index) or (count, step) (a
    slice), and its start in each written dim."""

    __slots__ = ("key",)

    def __init__(self, name: str, shape: tuple, starts: list[int]) -> None:
        self.key = (name, shape, starts)

    def shape_key(self) -> tuple[str, tuple, list[int]]:
        return self.key


class _Refuse(Exception):
    """The reader does not take this template or this line."""


class Reader:
    """Where the numbers of one template's lines go (see the module docstring): per operand
    and keyword, a value the same on every line, or a function of the line's numbers."""

    __slots__ = ("integers", "keywords", "known", "mnemonic", "operands")

    def __init__(self, asm, node) -> None:
        definition = asm._lookup(node)   # (AsmError: the ordinary path reports it)
        self.mnemonic = definition.name
        self.known = asm.eval._numbers   # literal text -> value (shared with the evaluator)
        columns = {start: k for k, start in enumerate(number_spans(node.parts)[0])}
        self.integers: set[int] = set()   # the numbers that must be integers (k)
        context = (asm, columns, asm._tile_symbols(), self.integers)
        positional = [a for a in definition.args if not a.keyword]
        by_name = {a.name: a for a in definition.args}
        operands: list = []
        keywords: list = []
        for raw in node.children[2:]:
            if raw.data == "kwarg":
                key, value = raw.children
                arg = by_name.get(str(key))
                if arg is None:
                    raise _Refuse
                keywords.append((str(key), _reading(arg, value, context)))
            else:
                if keywords or len(operands) >= len(positional):
                    raise _Refuse
                operands.append(_reading(positional[len(operands)], raw, context))
        # (fixed?, value or function) per operand, and per keyword
        self.operands = [(not callable(f), f) for f in operands]
        self.keywords = [(k, not callable(f), f) for k, f in keywords]

    def read(self, node) -> Op | None:
        """The op of a line of this template (None: resolve it the ordinary way)."""
        known = self.known
        values = [known.get(text) for text in node.parts[1::2]]
        if None in values:   # a literal not seen before
            try:
                values = [_parsed(known, text) if value is None else value
                          for text, value in zip(node.parts[1::2], values)]
            except ValueError:
                return None
        if float in map(type, values):
            for k in self.integers:
                if type(values[k]) is not int:
                    return None   # (a float where an integer goes: the ordinary path's rules)
        try:
            operands = tuple([f if fixed else f(values) for fixed, f in self.operands])
            keywords = {k: f if fixed else f(values) for k, fixed, f in self.keywords}
        except _Refuse:
            return None
        op = Op(self.mnemonic, operands, keywords, None)
        op.node, op.line = node, node.line
        return op


def _parsed(known: dict, text: str) -> int | float:
    """The value of a number (``parse_number``: ValueError when out of range), remembered."""
    if len(text) < 19 and text.isdigit():   # (below 10**18: an int in range)
        value = int(text)
    elif "." in text and len(text) < 300 and "e" not in text and "E" not in text:
        value = float(text)   # (a decimal fraction below 10**300: finite)
    else:
        value = parse_number(text)
    known[text] = value
    return value


def reader(asm, node) -> Reader | None:
    """The reader of the template of ``node`` (its first line, parsed), or None when lines of
    this template are resolved the ordinary way."""
    try:
        return Reader(asm, node)
    except Exception:   # noqa: BLE001 - unsure or unforeseen: the ordinary path decides
        return None


def _reading(arg, node, context):
    """How argument ``arg``, written ``node`` on the template's first line, takes its value on
    a line: the value itself (the same on every line), or a function of the line's numbers."""
    asm, columns, symbols, _ = context
    kind = node.data
    if arg.kind == "tile" or arg.kind == "scalar" and kind in ("indexed", "name") and str(
            node.children[0]) in symbols:
        return _tile(node, context)
    if kind == "name":
        word = str(node.children[0])
        if arg.kind in _NUMERIC and word in asm.constants:
            if word in asm.eval.truncated_constants:
                raise _Refuse   # its uses warn, each at its own place
            value = asm.constants[word]
            if type(value) is int and not -_LIMIT < value < _LIMIT:
                raise _Refuse
            return value
        if arg.kind in ("scalar", "number") and word in BUILTIN_CONSTANTS:
            return BUILTIN_CONSTANTS[word]
        return word   # an enum value, a register, a label, true or false: as written
    if arg.kind in ("scalar", "number"):
        if kind == "neg" and node.children[0].data == "number":
            k = _number(node.children[0], columns)
            return lambda v: -v[k]
        if kind == "number":
            return itemgetter(_number(node, columns))
        raise _Refuse
    if kind == "list":
        items = [_integer(c, context) for c in node.children if c is not None]
        if not any(map(callable, items)):
            return items
        return lambda v: [f(v) if callable(f) else f for f in items]
    return _integer(node, context)


def _number(node, columns) -> int:
    k = columns.get(node.children[0].column)
    if k is None:
        raise _Refuse
    return k


def _integer(node, context):
    """An integer expression (+ - * and unary minus over numbers and integer constants): a
    function of the line's numbers, or its value when it holds no number."""
    asm, columns, _, integers = context
    kind = node.data
    if kind == "number":
        k = _number(node, columns)
        integers.add(k)
        return itemgetter(k)
    if kind == "name":
        value = asm.constants.get(str(node.children[0]))
        if type(value) is not int or not -_LIMIT < value < _LIMIT:
            raise _Refuse   # a register, a float, unknown: the ordinary path
        return value
    if kind == "neg":
        f = _integer(node.children[0], context)
        return (lambda v: -f(v)) if callable(f) else -f
    if kind not in _OPERATORS:
        raise _Refuse
    a, b = (_integer(c, context) for c in node.children)
    if not callable(a) and not callable(b):
        return _checked(_OPERATORS[kind](a, b))
    return _binary(_OPERATORS[kind], a, b)


def _binary(op, a, b):
    """``op`` of two integer expressions, one of them at least a function of the numbers."""
    def binary(v):
        value = op(a(v) if callable(a) else a, b(v) if callable(b) else b)
        if not -_LIMIT < value < _LIMIT:
            raise _Refuse
        return value

    return binary


def _checked(value: int) -> int:
    if not -_LIMIT < value < _LIMIT:
        raise _Refuse
    return value


def _tile(node, context):
    """A tile operand: a TextTile (no numbers) or a function making one."""
    _, _, symbols, _ = context
    kind = node.data
    if kind == "name":
        name = str(node.children[0])
        if name not in symbols:
            raise _Refuse
        return TextTile(name, (), [])
    if kind != "indexed":
        raise _Refuse   # ap(...) and anything else
    name = str(node.children[0])
    symbol = symbols.get(name)
    slices = node.children[1:]
    if symbol is None or getattr(symbol, "compressed", False) or len(slices) > len(
            symbol.shape):
        raise _Refuse
    dims = []   # per written dim: a function of the numbers -> (start, None or (count, step))
    for size, item in zip(symbol.shape, slices):
        if item is None:
            raise _Refuse
        if item.data == "slice":
            dims.append(_slice(*(None if c is None else _integer(c, context)
                                 for c in item.children), size))
        else:
            dims.append(_index(_integer(item.children[0], context)))

    def tile(v):
        shape, starts = [], []
        for dim in dims:
            start, view = dim(v)
            starts.append(start)
            shape.append(view)
        return TextTile(name, tuple(shape), starts)

    return tile if any(getattr(d, "varies", True) for d in dims) else tile([])


def _index(start):
    """An index's (start, None) from its value (a function or a value)."""
    def dim(v):
        return (start(v) if callable(start) else start), None

    dim.varies = callable(start)
    return dim


def _slice(lo, hi, step, size):
    """A slice's (start, (count, step)) from its bounds (functions, values or None)."""
    lo = 0 if lo is None else lo
    hi = size if hi is None else hi
    step = 1 if step is None else step
    if callable(lo) and callable(hi) and not callable(step) and step == 1:
        def dim(v):   # (the common case: lo:hi)
            start = lo(v)
            count = hi(v) - start
            if count <= 0:
                raise _Refuse
            return start, (count, 1)
    else:
        def dim(v):
            start = lo(v) if callable(lo) else lo
            width = (hi(v) if callable(hi) else hi) - start
            by = step(v) if callable(step) else step
            if width <= 0 or by < 1:
                raise _Refuse
            count = -(-width // by)
            return start, (count, by if count > 1 else 1)

    dim.varies = callable(lo) or callable(hi) or callable(step)
    return dim
