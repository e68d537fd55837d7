"""Integer/float expressions that may be affine in registers (``r1*512 + 64``).

Limits (docs/language.md, "Limits"): integer literals and every integer an expression computes
lie strictly within +-2**128, so arithmetic stays cheap and any integer converts to a float;
a float literal or result that overflows to infinity is an error (``inf`` is written as the
name ``inf``). Where a value is used it is checked again against what that use needs (an index
must be a finite integer, a register value must fit 64 bits, ...). Evaluation walks the tree
with an explicit stack, so the nesting depth of an expression is bounded by nothing but the
line it is written on.
"""

from __future__ import annotations

import difflib
import math
import re

from neuronemu.errors import AsmError
from neuronemu.source import SourceFile, location_of

REGISTER = re.compile(r"^r(\d+)$")
NUM_REGISTERS = 64
BUILTIN_CONSTANTS = {"inf": math.inf, "nan": math.nan}
INT_LIMIT = 2 ** 128          # |integer| must stay below this in any expression
INT_LIMIT_TEXT = "+-2**128 (about 3.4e38)"
_OPERATORS = {"add": 2, "sub": 2, "mul": 2, "div": 2, "mod": 2, "neg": 1}


class Affine:
    """const + sum(coeff * register); treated as immutable. (A plain class with slots: a
    frozen dataclass took a fifth of the time of resolving an operand.)"""

    __slots__ = ("const", "regs")

    def __init__(self, const: float, regs: dict | None = None):
        self.const = const
        self.regs = {} if regs is None else regs

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Affine) and self.const == other.const
                and self.regs == other.regs)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Affine(const={self.const!r}, regs={self.regs!r})"

    @property
    def is_const(self) -> bool:
        return not any(self.regs.values())

    def __add__(self, other: Affine) -> Affine:
        regs = dict(self.regs)
        for r, c in other.regs.items():
            regs[r] = regs.get(r, 0) + c
        return Affine(self.const + other.const, {r: c for r, c in regs.items() if c})

    def scale(self, k) -> Affine:
        return Affine(self.const * k, {r: c * k for r, c in self.regs.items() if c * k})

    def numbers(self) -> list[float | int]:
        """The constant and every register coefficient."""
        return [self.const, *self.regs.values()]


def register_number(name: str) -> int | None:
    m = REGISTER.match(name)
    if m is None:
        return None
    n = int(m.group(1))
    return n if n < NUM_REGISTERS else None


def abbreviate(text: str, keep: int = 24) -> str:
    """A literal as a message can quote it: long ones shortened, with their length."""
    if len(text) <= keep:
        return text
    return f"{text[:keep]}... ({len(text)} characters)"


def parse_number(text: str) -> int | float:
    """The value of a NUMBER token; ``ValueError`` (with the reason) when it is out of range.

    Integer digits are counted before converting, so a literal of thousands of digits costs
    nothing and never reaches Python's int-from-string digit limit."""
    base = {"0x": 16, "0X": 16, "0b": 2, "0B": 2}.get(text[:2])
    if base is not None or re.fullmatch(r"\d+", text):
        digits = (text[2:] if base else text).lstrip("0")
        base = base or 10
        # len(digits) digits in this base are at least base**(len - 1)
        if (len(digits) - 1) * math.log2(base) >= 128:
            raise ValueError(f"integer literal {abbreviate(text)} is out of range: integers "
                             f"must lie within {INT_LIMIT_TEXT}")
        value = int(digits or "0", base)
        if value >= INT_LIMIT:
            raise ValueError(f"integer literal {abbreviate(text)} is out of range: integers "
                             f"must lie within {INT_LIMIT_TEXT}")
        return value
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"float literal {abbreviate(text)} overflows: the largest finite float "
                         f"is {float.fromhex('0x1.fffffffffffffp+1023')!r}; write inf for "
                         f"infinity")
    return value


class Evaluator:
    """Evaluates expression nodes of the parse tree against the named constants."""

    def __init__(self, source: SourceFile, constants: dict[str, float | int]):
        self.source = source
        self.constants = constants
        self._numbers: dict[str, int | float] = {}   # literal text -> value (valid ones only)
        # integer divisions that truncated (a non-zero remainder), in evaluation order, for the
        # float contexts that warn about them (Assembler._float_constant); and the constants
        # whose value came from one
        self.truncations: list[Truncation] = []
        self.truncated_constants: dict[str, Truncation] = {}

    def error(self, node, message: str, notes=()) -> AsmError:
        return AsmError(message, location_of(self.source, getattr(node, "meta", node)), notes)

    def affine(self, node) -> Affine:
        """The value of an expression: a post-order walk with an explicit stack (no recursion,
        so a chain of thousands of operators cannot exhaust Python's stack)."""
        kind = getattr(node, "data", None)
        if kind == "number" or kind == "name":   # most operands: no walk needed
            return self._leaf(node, kind)
        stack: list[tuple[object, bool]] = [(node, False)]
        values: list[Affine] = []
        while stack:
            current, operands_done = stack.pop()
            kind = getattr(current, "data", None)
            if kind not in _OPERATORS:
                values.append(self._leaf(current, kind))
            elif operands_done:
                arity = _OPERATORS[kind]
                operands = values[-arity:]
                del values[-arity:]
                values.append(self._apply(current, kind, operands))
            else:
                stack.append((current, True))
                stack.extend((child, False) for child in reversed(current.children))
        return values[0]

    def _leaf(self, node, kind) -> Affine:
        if kind == "number":
            text = str(node.children[0])
            value = self._numbers.get(text)
            if value is None:
                try:
                    value = self._numbers[text] = parse_number(text)
                except ValueError as e:
                    raise self.error(node, str(e)) from None
            return Affine(value)
        if kind == "name":
            name = str(node.children[0])
            reg = register_number(name)
            if reg is not None:
                return Affine(0, {reg: 1})
            if name in self.constants:
                if name in self.truncated_constants:
                    self.truncations.append(self.truncated_constants[name].used_as(name, node))
                return Affine(self.constants[name])
            if name in BUILTIN_CONSTANTS:
                return Affine(BUILTIN_CONSTANTS[name])
            close = difflib.get_close_matches(name, list(self.constants), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise AsmError(f"unknown name '{name}' in expression{hint}",
                           location_of(self.source, node.meta), symbol=name)
        if kind in ("indexed", "call", "string", "slice", "index"):
            raise self.error(node, "expected a number or an expression here")
        raise self.error(node, "expected an expression")

    def _apply(self, node, kind: str, operands: list[Affine]) -> Affine:
        if kind == "neg":
            result = operands[0].scale(-1)
        elif kind in ("add", "sub"):
            a, b = operands
            result = a + (b if kind == "add" else b.scale(-1))
        elif kind == "mul":
            a, b = operands
            if a.is_const:
                result = b.scale(a.const)
            elif b.is_const:
                result = a.scale(b.const)
            else:
                raise self.error(node, "a register may only be multiplied by a constant")
        else:
            result = self._divide(node, kind, *operands)
        return self._in_range(node, result, operands)

    def _divide(self, node, kind: str, a: Affine, b: Affine) -> Affine:
        if not (a.is_const and b.is_const):
            symbol = "/" if kind == "div" else "%"
            raise self.error(node, f"'{symbol}' needs constant operands"
                                   + self._regroup_hint(node, symbol, a, b))
        if b.const == 0:
            raise self.error(node, "division by zero in constant expression")
        if kind == "mod":
            return Affine(a.const % b.const)
        if isinstance(a.const, int) and isinstance(b.const, int):
            if a.const % b.const:
                self.truncations.append(Truncation(self.source, node, a.const, b.const))
            return Affine(a.const // b.const)
        return Affine(a.const / b.const)

    def _text(self, node) -> str | None:
        """The source text of a one-line node (None when it spans lines)."""
        meta = getattr(node, "meta", node)
        line, end_line = getattr(meta, "line", None), getattr(meta, "end_line", None)
        if line is None or line != end_line:
            return None
        return self.source.line(line)[meta.column - 1:meta.end_column - 1].strip()

    def _regroup_hint(self, node, symbol: str, a: Affine, b: Affine) -> str:
        """How to say it with constant operands: ``*`` and ``/`` group left to right, so
        ``r1*RB/2`` is ``(r1*RB)/2``, a register divided; ``r1*(RB/2)`` divides constants
        only (the same value when RB is a multiple of 2)."""
        if not b.is_const:
            return ": a register may not be a divisor (compute it with ctrl.div / ctrl.rem)"
        left, right = node.children
        if symbol == "/" and getattr(left, "data", None) == "mul":
            factors = [self.affine(child) for child in left.children]
            texts = [self._text(child) for child in left.children] + [self._text(right)]
            if not any(f.is_const for f in factors) or None in texts:
                return ""
            k = 1 if factors[1].is_const else 0   # the constant factor
            reg_text, const_text, div_text = texts[1 - k], texts[k], texts[2]
            c, d = factors[k].const, b.const
            if isinstance(c, int) and isinstance(d, int) and d and c % d == 0:
                return (f": '{self._text(node)}' groups as ({self._text(left)}){symbol}"
                        f"{div_text}, a register divided; write {reg_text}*({const_text}"
                        f"{symbol}{div_text}) (the same value, {c} being a multiple of {d}) or "
                        f"name {const_text}{symbol}{div_text} with a .const")
        if symbol == "%":
            return (": the left operand depends on registers, which an expression cannot take "
                    "a remainder of; use a .const or compute it with ctrl.rem")
        return (": the left operand depends on registers, and registers cannot be divided in "
                "an expression; divide the constants first (e.g. r1*(RB/2) for r1*RB/2), use a "
                ".const, or compute it with ctrl.div")

    def _in_range(self, node, result: Affine, operands: list[Affine]) -> Affine:
        """An integer result within the limit, and no float overflow from finite operands."""
        for value in result.numbers():
            if isinstance(value, int):
                if not -INT_LIMIT < value < INT_LIMIT:
                    raise self.error(node, f"integer overflow in expression: integers must lie "
                                           f"within {INT_LIMIT_TEXT}")
            elif math.isinf(value) and not any(math.isinf(x) for op in operands
                                               for x in op.numbers()):
                raise self.error(node, "floating-point overflow in expression: the result is "
                                       "beyond the largest finite float (write inf for "
                                       "infinity)")
        return result

    def constant(self, node) -> float | int:
        value = self.affine(node)
        if not value.is_const:
            raise self.error(node, "expected a constant; registers are not allowed here")
        return value.const

    def integer(self, node) -> int:
        value = self.constant(node)
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(node, f"expected an integer, got {value}")
            value = int(value)
        return value

    def offset(self, node, what: str = "indices") -> Affine:
        """An index or slice bound: an integer constant plus integer multiples of registers
        (nan, inf and fractions are refused here, where they would become addresses)."""
        value = self.affine(node)
        if not value.regs and type(value.const) is int:   # the common case: an int literal
            return value
        for number in value.numbers():
            if isinstance(number, float) and not number.is_integer():
                raise self.error(node, f"{what} must be integers, got {number}")
        return Affine(int(value.const), {r: int(c) for r, c in value.regs.items()})


class Truncation:
    """An integer division ``a / b`` that truncated (``node`` in ``source``); ``constant``: the
    ``.const`` holding its result, used at ``use`` (a name node) when it was reached that way."""

    def __init__(self, source: SourceFile, node, a: int, b: int, constant: str | None = None,
                 use=None):
        self.source, self.node, self.a, self.b = source, node, a, b
        self.constant, self.use = constant, use

    def used_as(self, constant: str, use) -> Truncation:
        return Truncation(self.source, self.node, self.a, self.b, constant, use)


def _operand_text(source: SourceFile, node) -> str:
    meta = getattr(node, "meta", node)
    line, column, end = getattr(meta, "line", None), getattr(meta, "column", None), \
        getattr(meta, "end_column", None)
    if line is None or column is None or end is None or getattr(meta, "end_line", line) != line:
        return ""
    return source.line(line)[column - 1:end - 1]


def truncation_warning(t: Truncation, what: str, source: SourceFile):
    """The located warning for a truncating integer division whose result goes to ``what`` (a
    float argument): at the division, or at the use of the .const that holds its result."""
    from neuronemu.errors import Diagnostic

    left, right = _operand_text(t.source, t.node.children[0]), \
        _operand_text(t.source, t.node.children[1])
    if not left or not right:   # (a node without a one-line span: cannot happen today)
        fix = "a float operand (1.0/N)"
    else:
        if not re.fullmatch(r"[\w.]+", right):
            right = f"({right})"
        if re.fullmatch(r"-?\d+", left):
            fix = f"{left}.0/{right}"
        elif re.fullmatch(r"[\w.]+", left):
            fix = f"1.0*{left}/{right}"
        else:
            fix = f"1.0*({left})/{right}"
    quotient = t.a // t.b
    exact = t.a / t.b
    division = location_of(t.source, t.node.meta)
    if t.constant is None:
        return Diagnostic(f"integer division {t.a}/{t.b} is {quotient}, not {exact!r} (both "
                          f"operands are integers: the quotient is rounded down), and {what} "
                          f"is a float: write {fix}", division)
    warning = Diagnostic(f"'{t.constant}' is {quotient}, not {exact!r}: its .const divides "
                         f"the integers {t.a}/{t.b} (the quotient is rounded down), and {what} "
                         f"is a float: write {fix} in the .const", location_of(source, t.use.meta))
    set_related(warning, division)
    return warning


def set_related(warning, location) -> None:
    """Point the note of a warning about a .const at the division (kept as a Location, so
    macro expansion can move it to the line it came from)."""
    warning.related = location
    warning.notes = (f"the division is at {location}",)
