"""Integer/float expressions that may be affine in registers (``r1*512 + 64``)."""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field

from neuronemu.errors import AsmError
from neuronemu.source import SourceFile, location_of

REGISTER = re.compile(r"^r(\d+)$")
NUM_REGISTERS = 64
BUILTIN_CONSTANTS = {"inf": math.inf, "nan": math.nan}


@dataclass(frozen=True)
class Affine:
    """const + sum(coeff * register)."""

    const: float | int
    regs: dict = field(default_factory=dict)

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


def register_number(name: str) -> int | None:
    m = REGISTER.match(name)
    if m is None:
        return None
    n = int(m.group(1))
    return n if n < NUM_REGISTERS else None


def parse_number(text: str) -> int | float:
    if text.startswith(("0x", "0X")):
        return int(text, 16)
    if text.startswith(("0b", "0B")):
        return int(text, 2)
    if re.fullmatch(r"\d+", text):
        return int(text)
    return float(text)


class Evaluator:
    """Evaluates expression nodes of the parse tree against the named constants."""

    def __init__(self, source: SourceFile, constants: dict[str, float | int]):
        self.source = source
        self.constants = constants

    def error(self, node, message: str, notes=()) -> AsmError:
        return AsmError(message, location_of(self.source, getattr(node, "meta", node)), notes)

    def affine(self, node) -> Affine:
        kind = getattr(node, "data", None)
        if kind == "number":
            return Affine(parse_number(str(node.children[0])))
        if kind == "name":
            name = str(node.children[0])
            reg = register_number(name)
            if reg is not None:
                return Affine(0, {reg: 1})
            if name in self.constants:
                return Affine(self.constants[name])
            if name in BUILTIN_CONSTANTS:
                return Affine(BUILTIN_CONSTANTS[name])
            close = difflib.get_close_matches(name, list(self.constants), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise self.error(node, f"unknown name '{name}' in expression{hint}")
        if kind in ("add", "sub"):
            a, b = (self.affine(c) for c in node.children)
            return a + (b if kind == "add" else b.scale(-1))
        if kind == "neg":
            return self.affine(node.children[0]).scale(-1)
        if kind == "mul":
            a, b = (self.affine(c) for c in node.children)
            if a.is_const:
                return b.scale(a.const)
            if b.is_const:
                return a.scale(b.const)
            raise self.error(node, "a register may only be multiplied by a constant")
        if kind in ("div", "mod"):
            a, b = (self.affine(c) for c in node.children)
            if not (a.is_const and b.is_const):
                raise self.error(node, f"'{'/' if kind == 'div' else '%'}' needs constant operands")
            if b.const == 0:
                raise self.error(node, "division by zero in constant expression")
            if kind == "mod":
                return Affine(a.const % b.const)
            if isinstance(a.const, int) and isinstance(b.const, int):
                return Affine(a.const // b.const)
            return Affine(a.const / b.const)
        if kind in ("indexed", "call", "string", "slice", "index"):
            raise self.error(node, "expected a number or an expression here")
        raise self.error(node, "expected an expression")

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
