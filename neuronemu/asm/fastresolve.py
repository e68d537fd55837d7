"""A fast path for resolving instruction lines that share a template (issue 17 item 7).

Lines such as ``dma.copy at[:, 512:768], a[:, 256*7:256*7+256], queue=3`` in an unrolled kernel
differ only in their numbers. The parser cuts every such line at its numbers
(``fastparse.TemplateLine``); the first line of a template is resolved by the assembler as
always, and a *plan* is made from its tree once: the arguments without numbers are resolved
once and moved to each line, the numbers' expressions are compiled to Python, and a tile whose
slice bounds are integer expressions is computed here without building trees or Affine values.

The plan only ever answers a line it is sure of: anything it does not handle (registers in an
index, a float where an integer goes, a value near an overflow limit, any check that fails) is
``None``, and the assembler resolves that line the ordinary way, which gives the same result or
reports the error exactly as before. ``assembler.FAST = False`` turns this path off;
tests/test_asm_fastresolve.py compares both on the bundled programs and generated kernels.
"""

from __future__ import annotations

import math

from neuronemu.asm.checks import RULES, CheckContext
from neuronemu.errors import AsmError
from neuronemu.exec import layout as L
from neuronemu.numerics import dtypes
from neuronemu.program import Allocation, Immediate, Instruction, Program, Tile
from neuronemu.source import Location

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
FP32_OVERFLOW = 2 ** 128 - 2 ** 103   # as assembler.FP32_OVERFLOW
_MAX_DIGITS = 38                      # 10**38 < 2**127: one literal is always in range
_OPERATORS = {"add": "+", "sub": "-", "mul": "*"}


class _Unsure(Exception):
    """This plan does not answer (the ordinary path decides)."""


def _location(source, line: int, column: int, end_column: int | None) -> Location:
    """A ``Location`` without the frozen dataclass's per-field ``__setattr__``."""
    location = object.__new__(Location)
    location.__dict__.update(source=source, line=line, column=column, end_column=end_column)
    return location


class _Columns:
    """Where a column of the template's first line lies in another line of the template: the
    same distance after the end of the same number (or from the line start)."""

    def __init__(self, parts: list[str]):
        self.starts, self.ends = _number_spans(parts)

    def anchor(self, column: int | None) -> tuple[int, int] | None:
        """(index of the last number ending at or before ``column``, or -1; distance)."""
        if column is None:
            return None
        j = -1
        for k, end in enumerate(self.ends):
            if end <= column:
                j = k
        return j, column - (self.ends[j] if j >= 0 else 1)

    def numbers_in(self, node) -> list[int]:
        """Indices of the numbers inside the span of ``node``."""
        return [k for k, start in enumerate(self.starts)
                if node.column <= start < node.end_column]


def _number_spans(parts: list[str]) -> tuple[list[int], list[int]]:
    starts, ends, column = [], [], 1
    for i in range(1, len(parts), 2):
        column += len(parts[i - 1])
        starts.append(column)
        column += len(parts[i])
        ends.append(column)
    return starts, ends


def _moved(anchor, ends: list[int]) -> int | None:
    if anchor is None:
        return None
    j, delta = anchor
    return (ends[j] if j >= 0 else 1) + delta


class _Expr:
    """An integer expression of the template compiled to Python: literals are the line's
    numbers ``v[k]``, names are integer constants; + - * and unary minus only."""

    def __init__(self, node, columns: _Columns, constants: dict):
        self.slots: list[int] = []
        self.leaves = 0
        self.largest = 0   # the largest constant used
        index = {start: k for k, start in enumerate(columns.starts)}
        source = self._source(node, index, constants)
        # the source holds only "v[k]", integer reprs, parentheses and + - *
        self.fn = eval(f"lambda v: {source}")

    def _source(self, node, index: dict, constants: dict) -> str:
        kind = getattr(node, "data", None)
        if kind == "number":
            k = index.get(node.children[0].column)
            if k is None:
                raise _Unsure
            self.slots.append(k)
            self.leaves += 1
            return f"v[{k}]"
        if kind == "name":
            value = constants.get(str(node.children[0]))
            if type(value) is not int:   # a register, a float constant, inf, nan, unknown
                raise _Unsure
            self.leaves += 1
            self.largest = max(self.largest, abs(value))
            return f"({value!r})"
        if kind == "neg":
            return f"(-{self._source(node.children[0], index, constants)})"
        if kind in _OPERATORS:
            a, b = (self._source(c, index, constants) for c in node.children)
            return f"({a} {_OPERATORS[kind]} {b})"
        raise _Unsure

    @property
    def digits(self) -> int:
        """Literals of at most this many digits keep every intermediate value of the
        expression within +-2**127 (with n leaves of magnitude < B the value is below B**n),
        so the evaluator's overflow checks cannot fire."""
        return min(_MAX_DIGITS, int((127 // max(self.leaves, 1)) * math.log10(2)))


class Plan:
    """How to resolve any line of one template (see the module docstring)."""

    def __init__(self, asm, node):
        self.asm = asm
        self.source = asm.source
        definition = self.definition = asm._lookup(node)
        columns = _Columns(node.parts)
        self.anchor = columns.anchor
        given = _given(definition, node.children[2:])
        location = _location(asm.source, node.line, node.column, node.end_column)
        self.steps: list = []          # (name, function of (v, ends, line))
        self.variable: dict[str, str] = {}   # argument with numbers -> how it lowers
        constant_values: dict = {}
        self.int_slots: set[int] = set()
        self.digits = _MAX_DIGITS
        tiles: list[str] = []          # dtypes of every tile argument
        for arg in definition.args:
            if arg.name not in given:
                if arg.required:
                    raise _Unsure
                value = asm._default(arg, location) if arg.default is not None else None
                constant_values[arg.name] = value
                self.steps.append((arg.name, self._constant(value, location)))
                continue
            value_node = given[arg.name]
            if not columns.numbers_in(value_node):
                value = asm._resolve(definition, arg, value_node)
                constant_values[arg.name] = value
                if isinstance(value, Tile):
                    tiles.append(value.dtype)
                self.steps.append((arg.name, self._constant(value, value_node)))
                continue
            step = self._variable(arg, value_node, columns, tiles)
            self.steps.append((arg.name, step))
            self.variable[arg.name] = step.lowers
        asm._check_bitvec_allowed(definition, constant_values, given)
        if any(dtypes.get(dtype).packs for dtype in tiles):
            raise _Unsure   # packed tiles: the ordinary path checks their uses
        self.checks = [(RULES[check.rule], check.args) for check in definition.checks]
        self.declarations = (asm.allocations, asm.tensors)
        self.lowering = None   # made from the first instruction this plan resolves
        self.lowered = asm.lowered

    # ------------------------------------------------------------------ arguments
    def _constant(self, value, where):
        """An argument without numbers: the same value on every line, moved to the line and
        columns of the argument when it carries a location."""
        if not isinstance(value, (Tile, Immediate)):
            return lambda v, ends, line: value
        start = self.anchor(where.column)
        stop = self.anchor(where.end_column)
        source = self.source

        def moved(v, ends, line):
            copy = object.__new__(type(value))
            fields = copy.__dict__
            fields.update(value.__dict__)
            fields["location"] = _location(source, line, _moved(start, ends), _moved(stop, ends))
            return copy
        return moved

    def _expr(self, node, columns) -> _Expr:
        expr = _Expr(node, columns, self.asm.constants)
        self.int_slots.update(expr.slots)
        self.digits = min(self.digits, expr.digits)
        if expr.largest >= 10 ** self.digits:
            raise _Unsure
        return expr

    def _variable(self, arg, node, columns, tiles):
        kind = arg.kind
        asm = self.asm
        if kind == "tile" or (kind == "scalar" and node.data in ("indexed", "name")
                              and str(node.children[0]) in asm._tile_symbols()):
            return self._tile(arg, node, columns, tiles)
        if kind in ("scalar", "number"):
            negate = node.data == "neg"
            literal = node.children[0] if negate else node
            if literal.data != "number":
                raise _Unsure
            k = columns.numbers_in(literal)[0]
            sign = -1 if negate else 1
            if kind == "number":
                return _lowers(lambda v, ends, line: _fp32(v[k] * sign), "float")
            start, stop = self.anchor(node.column), self.anchor(node.end_column)
            source = self.source

            def immediate(v, ends, line):
                value = object.__new__(Immediate)
                value.__dict__.update(value=_fp32(v[k] * sign), location=_location(
                    source, line, _moved(start, ends), _moved(stop, ends)))
                return value
            return _lowers(immediate, "imm")
        if kind in ("int", "reg_or_int"):
            fn = self._expr(node, columns).fn
            low, high = (arg.range or (INT64_MIN, INT64_MAX)) if kind == "int" \
                else (INT64_MIN, INT64_MAX)

            def integer(v, ends, line):
                value = fn(v)
                if not low <= value <= high:
                    raise _Unsure
                return value if kind == "int" else ("int", value)
            return _lowers(integer, kind)
        raise _Unsure

    def _tile(self, arg, node, columns, tiles):
        """A tile whose slice bounds hold numbers: ``Assembler._access`` for constant integer
        bounds (no registers), checked the same way."""
        asm = self.asm
        if node.data != "indexed":
            raise _Unsure
        name = str(node.children[0])
        symbol = asm._tile_symbols().get(name)
        if symbol is None or getattr(symbol, "compressed", False) or arg.compressed == "yes":
            raise _Unsure
        on_chip = isinstance(symbol, Allocation)
        space = symbol.space if on_chip else "hbm"
        if space not in arg.spaces:
            raise _Unsure
        tiles.append(symbol.dtype)
        dims = symbol.shape
        itemsize = dtypes.get(symbol.dtype).itemsize
        slices = node.children[1:]
        if len(slices) > len(dims):
            raise _Unsure
        strides = [math.prod(dims[i + 1:]) * itemsize for i in range(len(dims))]
        if on_chip:
            strides[0] = 0
        items = []   # per written dim: (True, lo, hi, step) or (False, index) with _Expr fns
        for item in slices:
            if item.data == "slice":
                items.append((True, *(self._expr(c, columns).fn if c is not None else None
                                      for c in item.children)))
            elif item.data == "index":
                items.append((False, self._expr(item.children[0], columns).fn))
            else:
                raise _Unsure
        rest = [(strides[i], size) for i, size in enumerate(dims)][len(items):]
        written = list(zip(items, dims, strides, strict=False))
        window = ((symbol.offset, symbol.offset + symbol.bytes_per_partition) if on_chip
                  else (symbol.offset, symbol.offset + symbol.nbytes))
        fields = {"space": space, "dtype": symbol.dtype, "symbol": name, "regs": (),
                  "window": window, "compressed": False}
        offset = symbol.offset
        start_anchor, stop_anchor = self.anchor(node.column), self.anchor(node.end_column)
        source = self.source

        def tile(v, ends, line):
            base = offset
            kept = []   # (byte stride, count) of the dims kept, the partition dim first
            spec = []
            partition_start = 0
            first = True
            for item, size, stride in written:
                step = 1
                if item[0]:
                    _, lo, hi, by = item
                    start = lo(v) if lo is not None else 0
                    stop = hi(v) if hi is not None else size
                    if by is not None:
                        step = by(v)
                        if step < 1 or (on_chip and first and step != 1):
                            raise _Unsure
                    width = stop - start
                    if width <= 0:
                        raise _Unsure
                    count = -(-width // step)
                    if count == 1:
                        step = 1
                    spec.append(("slice", start, (), count, step))
                    keep = True
                else:
                    start = item[1](v)
                    count = 1
                    keep = on_chip and first
                    spec.append(("index", start, ()))
                if start < 0 or start + (count - 1) * step + 1 > size:
                    raise _Unsure
                if on_chip and first:
                    partition_start = start
                    kept.append((0, count))
                else:
                    base += start * stride
                    if keep:
                        kept.append((stride * step, count))
                first = False
            for stride, size in rest:
                if on_chip and first:
                    kept.append((0, size))
                else:
                    kept.append((stride, size))
                first = False
            if on_chip or kept:
                pitch, partitions = kept[0]
                if on_chip:
                    pitch = 0
                free = kept[1:]
            else:
                partitions, pitch, free = 1, 0, []
            free = [d for d in free if d[1] != 1] or free[-1:]
            merged: list[tuple[int, int]] = []
            for s, c in free:
                if merged and merged[-1][0] == s * c:
                    merged[-1] = (s, merged[-1][1] * c)
                else:
                    merged.append((s, c))
            if len(merged) > L.MAX_FREE_DIMS:
                raise _Unsure
            value = object.__new__(Tile)
            value.__dict__.update(fields, base=base, partition_start=partition_start,
                                  partitions=partitions, partition_pitch=pitch,
                                  free_dims=tuple(merged), spec=tuple(spec),
                                  location=_location(source, line, _moved(start_anchor, ends),
                                                     _moved(stop_anchor, ends)))
            return value
        return _lowers(tile, "tile")

    # ------------------------------------------------------------------ one line
    def resolve(self, node) -> Instruction | None:
        """The instruction of ``node`` (a line of this template), or None when unsure."""
        parts = node.parts
        v = []
        digits = self.digits
        careful = False
        for text in parts[1::2]:
            if len(text) <= digits and text.isdigit():
                v.append(int(text))
            else:
                careful = True
                v.append(self.asm.eval._numbers.get(text))
                if v[-1] is None:
                    from neuronemu.asm.expr import parse_number
                    try:
                        v[-1] = parse_number(text)
                    except ValueError:
                        return None
        if careful:
            bound = 10 ** digits
            if any(type(v[k]) is not int or v[k] >= bound for k in self.int_slots):
                return None
        ends = _number_spans(parts)[1]
        line = node.line
        values = {}
        try:
            for name, step in self.steps:
                values[name] = step(v, ends, line)
        except _Unsure:
            return None
        location = _location(self.source, line, node.column, node.end_column)
        ctx = CheckContext(self.definition, values, self.asm.target, location, None,
                           self.declarations)
        try:
            for check, args in self.checks:
                check(ctx, *args)
        except AsmError:
            return None
        instruction = object.__new__(Instruction)
        instruction.__dict__.update(definition=self.definition, args=values, location=location,
                                    text=node.text.strip())
        lowering = self.lowering
        if lowering is None:
            lowering = self.lowering = self._lowering(instruction) or False
        if lowering:
            row, ops, imms, operand_slots, float_slots, ints, tiles, floats, queue = lowering
            row = row[:]
            row[L.I_LINE] = line
            for slot, name, kind in ints:
                value = values[name]
                row[slot] = value[1] if kind == "reg_or_int" else value
            if queue:
                row[L.I_TRACK] = L.DMA_TRACK0 + int(values["queue"])
            if tiles:
                ops = ops[:]
                operand_row = self.operand_row
                for index, name in tiles:
                    ops[index] = operand_row(values[name])
            if floats:
                imms = imms[:]
                for index, name, kind in floats:
                    imms[index] = values[name].value if kind == "imm" else values[name]
            self.lowered[id(instruction)] = (row, ops, imms, operand_slots, float_slots)
        return instruction

    def _lowering(self, instruction):
        """How to lower any line of the template: ``assembler.lower`` on the first line gives
        the rows, and each line puts its own values where an argument with numbers lowers
        (None when a number changes more than that)."""
        from neuronemu.asm.assembler import lower, operand_row

        self.operand_row = operand_row
        definition = self.definition
        variable = self.variable
        engine = definition.engine
        track_args = {"dma": ("dge",), "cc": ("dge",), "sync": ("track",),
                      "tensor": ("perf_mode", "is_transpose", "is_stationary_onezero",
                                 "is_moving_onezero", "tile_position", "tile_size")}
        if any(name in variable for name in track_args.get(engine, ())):
            return None
        program = Program(self.source, self.asm.target, {}, {}, [instruction], {})
        lower(program)
        row = [int(x) for x in program.instrs[0]]
        ops = [[int(x) for x in op] for op in program.ops]
        imms = [float(x) for x in program.imms[:-1]]
        slots = range(L.I_ARGS, L.I_ARGS + 2 * len(definition.args), 2)
        operand_slots = [k + 1 for k in slots if row[k] == L.TAG_OPERAND]
        float_slots = [k + 1 for k in slots if row[k] == L.TAG_FLOAT]
        ints, tiles, floats = [], [], []
        for k, arg in enumerate(definition.args):
            kind = variable.get(arg.name)
            slot = L.I_ARGS + 2 * k + 1
            if kind == "tile":
                tiles.append((row[slot], arg.name))
            elif kind in ("imm", "float"):
                floats.append((row[slot], arg.name, kind))
            elif kind in ("int", "reg_or_int"):
                ints.append((slot, arg.name, kind))
            elif kind is not None:
                raise AssertionError(kind)
        # a DMA's track is its queue's (assembler.lower)
        queue = engine in ("dma", "cc") and "queue" in variable
        return row, ops, imms, operand_slots, float_slots, ints, tiles, floats, queue


def _lowers(step, kind: str):
    """``step`` marked with how its value lowers (``Plan._lowering``)."""
    step.lowers = kind
    return step


def _fp32(value) -> float:
    value = float(value)
    if math.isfinite(value) and abs(value) >= FP32_OVERFLOW:
        raise _Unsure
    return value


def _given(definition, raw_args) -> dict:
    """Argument name -> value node, as ``Assembler._instruction`` assigns them (_Unsure where
    it would report an error)."""
    given: dict = {}
    positional = [a for a in definition.args if not a.keyword]
    names = {a.name for a in definition.args}
    index = 0
    for raw in raw_args:
        if raw.data == "kwarg":
            key = str(raw.children[0])
            if key not in names or key in given:
                raise _Unsure
            given[key] = raw.children[1]
        else:
            if given and any(definition.arg(k).keyword for k in given):
                raise _Unsure
            if index >= len(positional):
                raise _Unsure
            given[positional[index].name] = raw
            index += 1
    return given


class Resolver:
    """The plans of one assembly: template -> Plan (None: the template is not handled)."""

    def __init__(self, asm):
        self.asm = asm
        self.plans: dict[tuple, Plan | None] = {}

    def resolve(self, node) -> Instruction | None:
        plans = self.plans
        key = node.key
        if key in plans:
            plan = plans[key]
        else:
            try:
                plan = Plan(self.asm, node)
            except (_Unsure, AsmError):
                plan = None
            plans[key] = plan
        return plan.resolve(node) if plan is not None else None
