"""Integers known only at run time: registers and affine expressions of them.

A ``VirtualRegister`` (``nisa.register_alloc``, the induction variable of ``nl.fori_loop`` /
``nl.dynamic_range``) names one of the 64 sequencer registers r0..r63. Arithmetic with Python
ints gives a ``RegExpr``, ``const + sum(coefficient * register)``, which is what neuronemu's
assembly can put in a slice bound or an access-pattern offset (``x[:, r1*128 : r1*128 + 128]``,
``ap(t, [...], r2*32 + 3)``): addresses stay affine, as the hardware's are. Using one as a Python
value (``int(r)``, ``if r:``, ``range(r)``) is a located error: the value does not exist while
the kernel is traced.
"""

from __future__ import annotations

report = None
"""``_trace.fail``, set by ``_trace`` when it imports this module (importing it from here would
be a cycle): raises a located error at the kernel's line."""


def _fail(message: str, *notes: str) -> None:
    report(message, *notes, unsupported=True)


class RegExpr:
    """``const + sum(coefficient * register)``; registers are ``VirtualRegister`` objects (kept
    alive by the expression, so a register is not reused while an address still names it)."""

    __slots__ = ("__weakref__", "const", "terms")

    def __init__(self, terms: dict | None = None, const: int = 0) -> None:
        self.terms = {r: c for r, c in (terms or {}).items() if c != 0}
        self.const = int(const)

    # -- construction
    @staticmethod
    def make(terms: dict, const: int):
        """A RegExpr, or a plain int when no register term is left (``(r*4 + 8) - r*4``)."""
        terms = {r: c for r, c in terms.items() if c != 0}
        return RegExpr(terms, const) if terms else int(const)

    def _parts(self) -> tuple[dict, int]:
        return dict(self.terms), self.const

    @staticmethod
    def parts_of(value) -> tuple[dict, int]:
        if isinstance(value, RegExpr):
            return value._parts()
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            _fail(f"{value!r} cannot be combined with a register (integers only: addresses "
                  f"are affine in registers)")
        return {}, int(value)

    # -- arithmetic (affine only)
    def __add__(self, other):
        t1, c1 = self._parts()
        t2, c2 = RegExpr.parts_of(other)
        for r, c in t2.items():
            t1[r] = t1.get(r, 0) + c
        return RegExpr.make(t1, c1 + c2)

    __radd__ = __add__

    def __neg__(self):
        return RegExpr.make({r: -c for r, c in self.terms.items()}, -self.const)

    def __sub__(self, other):
        terms, const = RegExpr.parts_of(other)
        return self + RegExpr.make({r: -c for r, c in terms.items()}, -const)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, RegExpr):
            _fail("a register times a register is not an address neuronemu can form",
                  "multiply registers with nisa.register_* arithmetic outside the address, or "
                  "use a constant factor")
        _, k = RegExpr.parts_of(other)
        return RegExpr.make({r: c * k for r, c in self.terms.items()}, self.const * k)

    __rmul__ = __mul__

    def _runtime(self, what: str):
        """Fail: ``what`` needs the value, which exists only at run time (never returns)."""
        _fail(f"{what} of a register: its value exists only when the kernel runs, not while it "
              f"is traced",
              "loop on device with nl.fori_loop / nl.while_loop / nl.dynamic_range, address "
              "with slices or .ap(scalar_offset=...) that take the register")

    def __floordiv__(self, other):
        self._runtime("'//'")

    __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = __floordiv__

    def __bool__(self) -> bool:
        self._runtime("the truth value (if/while)")
        return False

    def __int__(self) -> int:
        self._runtime("int()")
        return 0

    def __index__(self) -> int:
        self._runtime("a Python index (range(), list index, shape)")
        return 0

    def __lt__(self, other):
        self._runtime("a comparison")

    __le__ = __gt__ = __ge__ = __lt__

    # -- assembly text
    def __str__(self) -> str:
        parts = []
        for reg, c in self.terms.items():
            term = reg.register_text() if c in (1, -1) else f"{reg.register_text()}*{abs(c)}"
            parts.append(("-" if c < 0 else "+", term))
        if self.const:
            parts.append(("-" if self.const < 0 else "+", str(abs(self.const))))
        sign, first = parts[0]
        text = ("-" if sign == "-" else "") + first
        return text + "".join(f" {s} {t}" for s, t in parts[1:])

    def __repr__(self) -> str:
        return f"RegExpr({self})"


class VirtualRegister(RegExpr):
    """One sequencer register (``nisa.register_alloc``); freed when no Python object (nor any
    address expression) refers to it any more."""

    __slots__ = ("_pool", "index")

    def __init__(self, index: int, pool: list[int]) -> None:
        self.index = index
        self._pool = pool
        self.const = 0

    @property
    def terms(self) -> dict:   # computed, so that the register does not refer to itself
        return {self: 1}

    def register_text(self) -> str:
        return f"r{self.index}"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def __del__(self) -> None:
        self._pool.append(self.index)

    def __repr__(self) -> str:
        return f"VirtualRegister(r{self.index})"
