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
from array import array
from itertools import accumulate

from neuronemu.asm.checks import RULES, CheckContext
from neuronemu.asm.expr import parse_number
from neuronemu.asm.fastparse import number_spans
from neuronemu.errors import AsmError
from neuronemu.isa import dtypes
from neuronemu.machine import layout as L
from neuronemu.program import Allocation, Immediate, Instruction, Program, Tile
from neuronemu.source import Location

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
FP32_OVERFLOW = 2 ** 128 - 2 ** 103   # as assembler.FP32_OVERFLOW (an int: exact compares)
_MAX_DIGITS = 38                      # 10**38 < 2**127: one literal is always in range
_OPERATORS = {"add": "+", "sub": "-", "mul": "*"}
_PCOUNT, _SIZE = L.OP_PCOUNT, L.OP_SIZE


_CODE: dict[tuple[str, str], object] = {}


def _compiled(source: str, mode: str = "exec"):
    """``source`` compiled once per process: templates that differ only in a tile's name
    (``sb_L12_0`` / ``sb_L12_1``: a kernel's ring of tiles) generate the same code, its
    constants being names in the plan's own namespace, and compiling was most of a plan's
    cost."""
    key = (source, mode)
    code = _CODE.get(key)
    if code is None:
        if len(_CODE) > 4096:
            _CODE.clear()
        code = _CODE[key] = compile(source, "<template plan>", mode)
    return code


class _Unsure(Exception):
    """This plan does not answer (the ordinary path decides)."""


def _location(source, line: int, column: int, end_column: int | None) -> Location:
    """A ``Location`` without the frozen dataclass's per-field ``__setattr__``."""
    location = object.__new__(Location)
    location.__dict__.update(source=source, line=line, column=column, end_column=end_column,
                             expansion=None)
    return location


class _Columns:
    """Where a column of the template's first line lies in another line of the template: the
    same distance after the end of the same number (or from the line start). A line's
    positions are ``cum = accumulate(map(len, parts), initial=0)``: number j ends (0-based,
    exclusive) at ``cum[2 * j + 2]``."""

    def __init__(self, parts: list[str]):
        self.starts, self.ends = number_spans(parts)
        self.cum = list(accumulate(map(len, parts), initial=0))

    def anchor(self, column: int | None) -> tuple[int, int] | None:
        """(index into ``cum`` of the end of the last number ending at or before ``column``,
        or 0 for the line start; distance): the column is ``cum[index] + distance``."""
        if column is None:
            return None
        i = 0
        for k, end in enumerate(self.ends):
            if end <= column:
                i = 2 * k + 2
        return i, column - self.cum[i]

    def numbers_in(self, node) -> list[int]:
        """Indices of the numbers inside the span of ``node``."""
        return [k for k, start in enumerate(self.starts)
                if node.column <= start < node.end_column]


def _column_source(anchor) -> str:
    """Python source of a column (``_Columns.anchor``) in a line whose positions are ``cum``."""
    if anchor is None:
        return "None"
    i, delta = anchor
    return f"cum[{i}] + {delta}" if i else str(delta)


class _Expr:
    """An integer expression of the template compiled to Python: literals are the line's
    numbers ``v[k]``, names are integer constants; + - * and unary minus only."""

    def __init__(self, node, columns: _Columns, constants: dict):
        self.slots: list[int] = []
        self.leaves = 0
        self.largest = 0   # the largest constant used
        index = {start: k for k, start in enumerate(columns.starts)}
        # the source holds only "v[k]", integer reprs, parentheses and + - *
        self.source = self._source(node, index, constants)
        self.fn = eval(_compiled(f"lambda v: {self.source}", "eval"))

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


# Rules whose outcome depends on nothing but the partitions, free size, space and dtype of the
# tiles they name and on the other arguments' values (enums, target): a line of a template
# whose tiles have the partitions and free sizes of a line that passed them passes them too.
# (Every other rule runs on every line.)
SHAPE_RULES = frozenset((
    "same_shape", "same_partitions", "same_free", "max_partitions", "partitions_eq",
    "max_free", "free_eq", "min_free", "free_multiple", "divides", "column", "not_both_psum",
    "dtype", "same_dtype", "same_dtype_or_fp32", "matmul_operands", "hw_dge", "index_column",
    "bitvec_operands"))


class Plan:
    """How to resolve any line of one template: a Python function generated for it (see the
    module docstring). Variables of the generated code: ``v`` the line's numbers, ``cum`` the
    positions in the line (``_Columns``), ``x<k>`` the value of argument k, ``r<k>`` the ops
    row of a tile with numbers."""

    def __init__(self, asm, node, lower, is_dense):
        self.asm = asm
        self.source = asm.source
        self._lower = lower          # assembler.lower and assembler._is_dense (the assembler
        self._is_dense = is_dense    # imports this module, so they are handed over)
        definition = self.definition = asm._lookup(node)
        columns = self.columns = _Columns(node.parts)
        given = _given(definition, node.children[2:])
        location = _location(asm.source, node.line, node.column, node.end_column)
        self.env: dict = {"Unsure": _Unsure, "new": object.__new__, "Tile": Tile,
                          "Immediate": Immediate, "Location": Location,
                          "Instruction": Instruction, "source": self.source,
                          "accumulate": accumulate, "numbers": self._numbers,
                          "isfinite": math.isfinite,
                          "value": self._value,
                          "definition": definition, "check": self._check,
                          "passed": set(), "lowered": asm.lowered}
        self.passed = self.env["passed"]   # check keys (shapes and numbers) that passed
        self.code: list[str] = []      # the body that computes x<k> (inside a try)
        self.fast_code: list[str] = []   # the same without objects: numbers and ops rows only
        self.variable: dict[str, str] = {}   # argument with numbers -> how it lowers
        self.var: dict[str, str] = {}        # argument -> its variable in the generated code
        self.rows: list[str] = []            # r<k> of the tiles with numbers, in order
        self.shapes: dict[str, str] = {}     # tile argument -> its (partitions, free size)
        constant_values: dict = {}
        self.int_slots: set[int] = set()
        self.float_slots: set[int] = set()   # numbers of fp32 immediates (int or float)
        self.digits = _MAX_DIGITS
        tiles: list[str] = []          # dtypes of every tile argument
        for k, arg in enumerate(definition.args):
            var = self.var[arg.name] = f"x{k}"
            if arg.name not in given:
                if arg.required:
                    raise _Unsure
                value = asm._default(arg, location) if arg.default is not None else None
                constant_values[arg.name] = value
                self._constant(var, value, location)
                continue
            value_node = given[arg.name]
            if not columns.numbers_in(value_node):
                value = asm._resolve(definition, arg, value_node)
                constant_values[arg.name] = value
                if isinstance(value, Tile):
                    tiles.append(value.dtype)
                    self.shapes[arg.name] = f"{value.partitions}, {value.free_size}"
                self._constant(var, value, value_node)
                continue
            self.variable[arg.name] = self._variable(var, arg, value_node, tiles)
            if self.variable[arg.name] == "tile":
                row = self.rows[-1]
                self.shapes[arg.name] = f"{row}[{L.OP_PCOUNT}], {row}[{L.OP_SIZE}]"
        # partition broadcast (assembler._broadcast_sources) makes another tile of a source
        # whose shape differs from the destination's: such a line goes the ordinary way
        dst = next((a.name for a in definition.args
                    if "w" in a.access and a.name in self.shapes), None)
        self.broadcasts = [(self.shapes[a.name], self.shapes[dst]) for a in definition.args
                           if getattr(a, "broadcast", False) and a.name in self.shapes
                           and dst is not None]
        asm._check_bitvec_allowed(definition, constant_values, given)
        if any(dtypes.get(dtype).packs for dtype in tiles):
            raise _Unsure   # packed tiles: the ordinary path checks their uses
        self.shape_checks = [(RULES[c.rule], c.args) for c in definition.checks
                             if c.rule in SHAPE_RULES]
        self.other_checks = [(RULES[c.rule], c.args) for c in definition.checks
                             if c.rule not in SHAPE_RULES]
        self.declarations = (asm.allocations, asm.tensors)
        self.lowering = None   # made from the first instruction this plan resolves
        self.fast = None       # (see _generate)
        self.run = self._generate()

    # ------------------------------------------------------------------ arguments
    def _name(self, value) -> str:
        """A name for ``value`` in the generated code's globals."""
        name = f"c{len(self.env)}"
        self.env[name] = value
        return name

    def _location_code(self, var: str, node) -> list[str]:
        """Code that makes ``var``, the Location of ``node``'s span in this line."""
        start = _column_source(self.columns.anchor(node.column))
        stop = _column_source(self.columns.anchor(node.end_column))
        return [f"{var} = new(Location)", f"d = {var}.__dict__", "d['source'] = source",
                "d['line'] = line", f"d['column'] = {start}", f"d['end_column'] = {stop}",
                "d['expansion'] = None"]

    def _constant(self, var: str, value, where) -> None:
        """An argument without numbers: the same value on every line, moved to the line and
        columns of the argument when it carries a location."""
        if not isinstance(value, (Tile, Immediate)):
            self.code.append(f"{var} = {self._name(value)}")
            return
        fields = {k: x for k, x in value.__dict__.items() if k != "location"}
        self.code += self._location_code("loc", where)
        self.code += [f"{var} = new({self._name(type(value))})", f"d = {var}.__dict__",
                      f"d.update({self._name(fields)})", "d['location'] = loc"]

    def _term(self, node) -> int | str:
        """An integer expression: its value when it holds no numbers, else its source."""
        expr = _Expr(node, self.columns, self.asm.constants)
        if expr.slots:
            return self._expr(node)
        if expr.largest >= 10 ** expr.digits:
            raise _Unsure
        return expr.fn([])

    def _expr(self, node) -> str:
        expr = _Expr(node, self.columns, self.asm.constants)
        self.int_slots.update(expr.slots)
        self.digits = min(self.digits, expr.digits)
        if expr.largest >= 10 ** self.digits:
            raise _Unsure
        return expr.source

    def _variable(self, var: str, arg, node, tiles) -> str:
        """Code for an argument with numbers; how it lowers."""
        kind = arg.kind
        asm = self.asm
        code = self.code
        if kind == "tile" or (kind == "scalar" and node.data in ("indexed", "name")
                              and str(node.children[0]) in asm._tile_symbols()):
            self._tile(var, arg, node, tiles)
            return "tile"
        if kind in ("scalar", "number"):
            negate = node.data == "neg"
            literal = node.children[0] if negate else node
            if literal.data != "number":
                raise _Unsure
            k = self.columns.numbers_in(literal)[0]
            self.float_slots.add(k)
            # _fp32 inline: a finite value that overflows fp32 is not this plan's to answer
            value = f"{var}f"
            lines = [f"{value} = float(v[{k}] * -1)" if negate else f"{value} = float(v[{k}])",
                     (f"if not -{FP32_OVERFLOW} < {value} < {FP32_OVERFLOW} "
                      f"and isfinite({value}): raise Unsure")]
            code += lines
            if kind == "number":
                code.append(f"{var} = {value}")
                self.fast_code += [*lines, f"{var} = {value}"]
                return "float"
            self.fast_code += [*lines, f"{var} = {value}"]   # the Immediate's value only
            code += self._location_code("loc", node)
            code += [f"{var} = new(Immediate)", f"d = {var}.__dict__", f"d['value'] = {value}",
                     "d['location'] = loc"]
            return "imm"
        if kind in ("int", "reg_or_int"):
            expr = self._expr(node)
            low, high = (arg.range or (INT64_MIN, INT64_MAX)) if kind == "int" \
                else (INT64_MIN, INT64_MAX)
            lines = [f"{var} = {expr}", f"if not {low} <= {var} <= {high}: raise Unsure"]
            if kind == "reg_or_int":
                lines.append(f"{var} = ('int', {var})")
            code += lines
            self.fast_code += lines
            return kind
        raise _Unsure

    def _tile(self, var: str, arg, node, tiles) -> None:
        """A tile whose slice bounds hold numbers: ``Assembler._access`` for constant integer
        bounds (no registers), checked the same way, and its ``ops`` row
        (the ``operand`` of ``assembler.lower``)."""
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
        dt = dtypes.get(symbol.dtype)
        itemsize = dt.itemsize
        slices = node.children[1:]
        if len(slices) > len(dims):
            raise _Unsure
        strides = [math.prod(dims[i + 1:]) * itemsize for i in range(len(dims))]
        if on_chip:
            strides[0] = 0
        code = []
        add = code.append
        # start, count and step of a dim: an int (no numbers: folded now) or a variable name
        base, kept, spec = [], [], []
        offset = symbol.offset
        partition_start = "0"
        for i, size in enumerate(dims):
            stride = strides[i]
            partition = on_chip and i == 0
            if i >= len(slices):   # not written: the whole dim
                kept.append(f"(0, {size})" if partition else f"({stride}, {size})")
                continue
            item = slices[i]
            if item.data == "slice":
                lo, hi, by = (self._term(c) if c is not None else None for c in item.children)
                lo = 0 if lo is None else lo
                hi = size if hi is None else hi
                if all(t is None or isinstance(t, int) for t in (lo, hi, by)):
                    # checked once: every line of the template has this slice
                    start, width, step = lo, hi - lo, 1 if by is None else by
                    if width <= 0 or step < 1 or (partition and step != 1):
                        raise _Unsure
                    count = -(-width // step)
                    if count == 1:
                        step = 1
                    if start < 0 or start + (count - 1) * step + 1 > size:
                        raise _Unsure
                else:
                    add(f"a{i} = {lo}")
                    add(f"w{i} = {hi} - a{i}")
                    add(f"if w{i} <= 0: raise Unsure")
                    start = f"a{i}"
                    if by is None:
                        add(f"if a{i} < 0 or a{i} + w{i} > {size}: raise Unsure")
                        step, count = 1, f"w{i}"
                    else:
                        add(f"p{i} = {by}")
                        add(f"if p{i} {'!= 1' if partition else '< 1'}: raise Unsure")
                        add(f"c{i} = -(-w{i} // p{i})")
                        add(f"if c{i} == 1: p{i} = 1")
                        add(f"if a{i} < 0 or a{i} + (c{i} - 1) * p{i} + 1 > {size}: "
                            f"raise Unsure")
                        step, count = f"p{i}", f"c{i}"
                spec.append(f"('slice', {start}, (), {count}, {step})")
                keep = True
            elif item.data == "index":
                start = self._term(item.children[0])
                if isinstance(start, int):
                    if start < 0 or start >= size:
                        raise _Unsure
                else:
                    add(f"a{i} = {start}")
                    add(f"if a{i} < 0 or a{i} >= {size}: raise Unsure")
                    start = f"a{i}"
                spec.append(f"('index', {start}, ())")
                count, step, keep = 1, 1, partition
            else:
                raise _Unsure
            if partition:
                partition_start = str(start)
                kept.append(f"(0, {count})")
                continue
            if isinstance(start, int):
                offset += start * stride
            elif stride:
                base.append(f"{start} * {stride}")
            if keep:
                if isinstance(step, int):
                    kept.append(f"({stride * step}, {count})")
                else:
                    kept.append(f"({stride} * {step}, {count})")
        base.insert(0, str(offset))
        window = ((symbol.offset, symbol.offset + symbol.bytes_per_partition) if on_chip
                  else (symbol.offset, symbol.offset + symbol.nbytes))
        fields = {"space": space, "dtype": symbol.dtype, "symbol": name, "regs": (),
                  "window": window, "compressed": False, "broadcast": False}
        template = [0] * L.OP_WIDTH
        template[L.OP_SPACE] = L.SPACE_CODES[space]
        template[L.OP_DTYPE] = dt.code
        template[L.OP_PROWSTEP] = 1 if on_chip else 0
        for k in range(L.MAX_FREE_DIMS):
            template[L.OP_COUNT + k] = 1   # the outer dims a pattern does not use: (0, 1)
        template[L.OP_LO], template[L.OP_HI] = window
        template[L.OP_ITEMSIZE] = itemsize
        finish = self._name(self._finisher(on_chip, itemsize, template))
        row = f"r{var[1:]}"
        self.rows.append(row)
        code += [f"f = {finish}({''.join(k + ', ' for k in kept)})",
                 f"{row} = f[3][:]",
                 f"{row}[{L.OP_BASE}] = b = {' + '.join(base)}",
                 f"{row}[{L.OP_PSTART}] = {partition_start}"]
        self.fast_code += code
        code = code[:]
        code += self._location_code("loc", node)
        code += [f"{var} = new(Tile)", f"d = {var}.__dict__", f"d.update({self._name(fields)})",
                 "d['base'] = b", f"d['partition_start'] = {partition_start}",
                 "d['partitions'], d['partition_pitch'], d['free_dims'] = f[0], f[1], f[2]",
                 f"d['spec'] = ({''.join(s + ', ' for s in spec)})", "d['location'] = loc"]
        self.code += code

    def _finisher(self, on_chip: bool, itemsize: int, template: list[int]):
        """(partitions, pitch, free dims, ops row but base and partition start) of a tile from
        its kept dims, as ``Assembler._access`` and the ``operand`` of ``assembler.lower`` make them
        (remembered: the kept dims of a template's tile repeat)."""
        is_dense = self._is_dense
        hbm = not on_chip
        made: dict[tuple, tuple] = {}

        def finish(*kept):
            known = made.get(kept)
            if known is not None:
                return known
            if kept:
                pitch, partitions = kept[0]
                if on_chip:
                    pitch = 0
                free = kept[1:]
            else:
                partitions, pitch, free = 1, 0, ()
            free = [d for d in free if d[1] != 1] or list(free[-1:])
            merged: list[tuple[int, int]] = []
            for s, c in free:
                if merged and merged[-1][0] == s * c:
                    merged[-1] = (s, merged[-1][1] * c)
                else:
                    merged.append((s, c))
            n = len(merged)
            if n > L.MAX_FREE_DIMS:
                raise _Unsure
            row = template[:]
            row[L.OP_PCOUNT] = partitions
            if hbm:
                row[L.OP_PCOLSTEP] = pitch
            extent, size = itemsize, 1
            if n:
                row[L.OP_NDIM] = n
                k = L.MAX_FREE_DIMS - n
                for s, c in merged:
                    row[L.OP_STRIDE + k] = s
                    row[L.OP_COUNT + k] = c
                    extent += s * (c - 1)
                    size *= c
                    k += 1
            else:
                row[L.OP_NDIM] = 1
                row[L.OP_STRIDE + L.MAX_FREE_DIMS - 1] = itemsize
            row[L.OP_EXTENT] = extent
            row[L.OP_SIZE] = size
            row[L.OP_DENSE] = int(is_dense(merged, itemsize))
            made[kept] = result = (partitions, pitch, tuple(merged), array("q", row))
            return result
        return finish

    # ------------------------------------------------------------------ one line
    def _generate(self):
        """The function that resolves a line of this template: an Instruction or None. Once
        the lowering is known (and no check must run on every line), also ``self.fast``: the
        same computation without any object, answering the lowered rows (the record
        ``assembler.lower`` takes) or None, where ``run`` would check or give up."""
        digits = self.digits
        keyed = [self.var[name] for name, kind in self.variable.items()
                 if kind not in ("tile", "imm")]
        key = [f"{r}[{L.OP_PCOUNT}], {r}[{L.OP_SIZE}]" for r in self.rows] + keyed
        always = bool(self.other_checks)
        count = len(self.columns.starts)
        if self.float_slots:   # fp32 immediates may be floats: their values as parse_number's
            convert = "[" + ", ".join(f"{'value' if k in self.float_slots else 'int'}"
                                      f"(texts[{k}])" for k in range(count)) + "]"
        else:
            convert = "list(map(int, texts))"

        def head(name: str, code: list[str]) -> list[str]:
            return [
                f"def {name}(node):",
                "    parts = node.parts",
                "    texts = parts[1::2]",
                "    try:   # decimal integers of at most `digits` digits (the common case)",
                f"        v = {convert}",
                f"        if texts and max(map(len, texts)) > {digits}: raise ValueError",
                "    except ValueError:",
                "        v = numbers(texts)",
                "        if v is None: return None",
                # (the positions: for Locations only)
                *(["    cum = list(accumulate(map(len, parts), initial=0))"]
                  if any("cum[" in c for c in code) else []),
                "    line = node.line",
                "    try:",
                "        pass",
                *("        " + c for c in code),
                "    except Unsure:",
                "        return None",
                *(f"    if ({a}) != ({b}): return None" for a, b in self.broadcasts),
            ]

        lines = head("run", self.code) + [
            "    values = {" + ", ".join(f"{name!r}: {var}" for name, var in self.var.items())
            + "}",
            "    location = new(Location)",
            "    d = location.__dict__",
            "    d['source'] = source",
            "    d['line'] = line",
            "    d['column'] = node.column",
            "    d['end_column'] = node.end_column",
            "    d['expansion'] = None",
            f"    key = ({''.join(k + ', ' for k in key)})",
            f"    if {'True or ' if always else ''}key not in passed:",
            "        if not check(values, location, key): return None",
            "    instruction = new(Instruction)",
            "    d = instruction.__dict__",
            "    d['definition'] = definition",
            "    d['args'] = values",
            "    d['location'] = location",
            "    d['text'] = node.text.strip()",
        ]
        fast = bool(self.lowering) and not always
        if self.lowering:
            lowering = self._lowering_code(fast=False)
            lines += lowering[:-1] + [f"    lowered[id(instruction)] = {lowering[-1]}"]
        lines.append("    return instruction")
        if fast:
            # the checks passed for this key on an earlier line (else: None, and ``run``
            # checks; no check at all always passes); every other step is ``run``'s, so both
            # answer the same lines
            lowering = self._lowering_code(fast=True)
            lines += head("fast", self.fast_code)
            if self.shape_checks:
                lines.append(f"    if ({''.join(k + ', ' for k in key)}) not in passed: "
                             "return None")
            lines += [*lowering[:-1], f"    return {lowering[-1]}"]
        namespace = dict(self.env)
        exec(_compiled("\n".join(lines) + "\n"), namespace)   # noqa: S102 - from the template
        self.fast = namespace["fast"] if fast else None
        return namespace["run"]

    def _lowering_code(self, fast: bool) -> list[str]:
        """Lines making a line's instruction row (``row``), then the expression of its record
        (``assembler.lower``'s ``lowered``); ``fast``: immediates are plain values."""
        row, ops, imms, operand_slots, float_slots, ints, tiles, floats, queue = self.lowering
        # int64 arrays: assembler.lower joins the rows' bytes
        lines = [f"    row = {self._name(array('q', row))}[:]", f"    row[{L.I_LINE}] = line"]
        for slot, name, kind in ints:
            value = self.var[name] + ("[1]" if kind == "reg_or_int" else "")
            lines.append(f"    row[{slot}] = {value}")
        if queue:
            lines.append(f"    row[{L.I_TRACK}] = {L.DMA_TRACK0} + int({self.var['queue']})")
        ops = [self._name(array("q", op)) for op in ops]
        for index, made in zip(tiles, self.rows, strict=True):
            ops[index] = made
        imms = [self._name(x) for x in imms]
        for index, name, kind in floats:
            imms[index] = self.var[name] + (".value" if kind == "imm" and not fast else "")
        lines.append(f"(row, [{', '.join(ops)}], [{', '.join(imms)}], "
                     f"{self._name(operand_slots)}, {self._name(float_slots)})")
        return lines

    def _check(self, values: dict, location, key: tuple) -> bool:
        """Run the checks of a line (the shape checks only for a key not seen to pass)."""
        ctx = CheckContext(self.definition, values, self.asm.target, location, None,
                           self.declarations)
        try:
            if key not in self.passed:
                for check, args in self.shape_checks:
                    check(ctx, *args)
                self.passed.add(key)
            for check, args in self.other_checks:
                check(ctx, *args)
        except AsmError:
            return False
        return True

    def _value(self, text: str) -> int | float:
        """The value of a number (``expr.parse_number``: ValueError when out of range)."""
        if "." in text and len(text) < 300 and "e" not in text and "E" not in text:
            # a decimal fraction without exponent (hex and binary have no '.'): the float
            # parse_number gives, finite (below 10**300)
            return float(text)

        known = self.asm.eval._numbers   # literal text -> value (valid ones only)
        value = known.get(text)
        if value is None:
            value = known[text] = parse_number(text)
        return value

    def _numbers(self, texts: list[str]) -> list | None:
        """The values of the numbers (None when one is out of range or where an index needs
        an integer small enough for ``_Expr.digits``)."""
        values = []
        digits = self.digits
        known = self.asm.eval._numbers   # literal text -> value (valid ones only)
        for text in texts:
            if len(text) <= digits and text.isdigit():
                values.append(int(text))
                continue
            value = known.get(text)
            if value is None:
                try:
                    value = known[text] = parse_number(text)
                except ValueError:
                    return None
            values.append(value)
        bound = 10 ** self.digits
        if any(type(values[k]) is not int or values[k] >= bound for k in self.int_slots):
            return None
        return values

    def resolve(self, node) -> Instruction | None:
        """The instruction of ``node`` (a line of this template), or None when unsure."""
        if self.lowering is None:   # the first line: make the lowering from its instruction
            instruction = self.run(node)
            if instruction is None:
                return None
            self.lowering = self._lowering(instruction) or False
            if self.lowering:
                self.run = self._generate()
        return self.run(node)

    def _lowering(self, instruction):
        """How to lower any line of the template: ``assembler.lower`` on the first line gives
        the rows, and each line puts its own values where an argument with numbers lowers
        (None when a number changes more than that)."""
        lower = self._lower
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
                tiles.append(row[slot])
            elif kind in ("imm", "float"):
                floats.append((row[slot], arg.name, kind))
            elif kind in ("int", "reg_or_int"):
                ints.append((slot, arg.name, kind))
            elif kind is not None:
                raise AssertionError(kind)
        # a DMA's track is its queue's (assembler.lower)
        queue = engine in ("dma", "cc") and "queue" in variable
        return row, ops, imms, operand_slots, float_slots, ints, tiles, floats, queue


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
    """The plans of one assembly: template -> Plan (None: the template is not handled; False:
    seen once)."""

    def __init__(self, asm, lower, is_dense):
        """``asm``: the Assembler after pass 1; ``lower``, ``is_dense``: assembler.lower and
        assembler._is_dense."""
        self.asm = asm
        self.lowering = (lower, is_dense)
        self.plans: dict[tuple, Plan | None] = {}

    def resolve(self, node) -> Instruction | Pending | None:
        """The instruction of a template line, a ``Pending`` record of it, or None (the
        ordinary path decides). The caller has already asked an existing plan's ``fast``."""
        plan = self.plans.get(node.key)
        if plan:   # the common case first: a plan whose fast path said None for this line
            return plan.resolve(node)
        plan = self.plans.get(node.key, self)
        if plan is self:
            # the first line of a template goes the ordinary way: a plan costs about as much
            # as resolving a few lines, and most templates of a hand-written kernel are used once
            self.plans[node.key] = False
            return None
        if plan is False:
            warnings = self.asm.warnings
            mark = len(warnings)
            try:
                plan = Plan(self.asm, node, *self.lowering)
            except Exception:   # noqa: BLE001 - unsure or unforeseen: the ordinary path decides
                plan = None
            if len(warnings) > mark:
                # an argument warns (an integer division in a float constant): every line must
                # warn at its own place, so the ordinary path resolves them all
                del warnings[mark:]
                plan = None
            self.plans[node.key] = plan
        if plan is None:
            return None
        fast = plan.fast
        if fast is not None:
            made = fast(node)
            if made is not None:
                return Pending(plan, node, made)
        return plan.resolve(node)


class Pending:
    """A line its plan resolved without objects: ``made``, its lowered rows (the record
    ``assembler.lower`` takes), and ``build()``, its Instruction, made when asked for
    (``Program.instructions``): the plan's ``run`` on the same line, which answers the same."""

    __slots__ = ("made", "node", "plan")

    def __init__(self, plan: Plan, node, made: tuple):
        self.plan = plan
        self.node = node
        self.made = made

    @property
    def definition(self):
        """The table entry of the instruction (``Program.static_counts`` needs no more)."""
        return self.plan.definition

    def build(self) -> Instruction:
        instruction = self.plan.run(self.node)
        if instruction is None:   # cannot happen: ``fast`` answered the same numbers
            raise AssertionError(f"line {self.node.line}: the plan no longer resolves it")
        self.plan.asm.lowered.pop(id(instruction), None)   # lowered already (``made``)
        return instruction
