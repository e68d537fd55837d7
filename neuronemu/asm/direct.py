"""Instructions given as values: how a front end (the NKI tracer) hands its instructions to the
assembler without writing them as text and parsing that text again.

A traced kernel's instructions arrive as ``Op`` records: a mnemonic, positional operands and
keywords as Python values (numbers, words such as enum values, registers ``rN`` and labels),
tiles as objects with ``view()`` -> (declared name, the operand as ``Tile.spec`` writes it).
The declarations (a few lines) are still assembly text and go through the ordinary parser.

Each op is resolved here from its values, through the assembler's own pieces (``_view`` and
``apattern.pattern_tile`` for a tile, ``_default``, ``Assembler.check``, ``lower``); an op
identical to an earlier one reuses that one's instruction, as an identical line does; and ops
that differ only in where their tiles start, which declaration of a layout they name and their
DMA queue share a plan (``_Plan``): the first one's lowered rows, in which each puts its own
numbers, so most ops of an unrolled kernel make no objects at all. An op this path does not
take (a register-offset tile, a value of an unexpected type) or one that fails a check is
parsed from its own line and resolved the ordinary way instead, so its instruction, and every
diagnostic, is the text path's: tests/nki/test_nki_direct.py holds the two equal.

The ``.s`` text stays an output (``GeneratedSource``): written when a user, a diagnostic or
the debugger asks for a line of it, or for all of it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from functools import cached_property

from neuronemu.asm.apattern import is_valid_pattern, pattern_tile
from neuronemu.asm.checks import PLACELESS, TILES_ONLY
from neuronemu.errors import AsmError
from neuronemu.isa import dtypes
from neuronemu.isa.table import ArgDef, InstrDef
from neuronemu.machine import layout as L
from neuronemu.program import Allocation, Immediate, Instruction, Program, Tile
from neuronemu.source import Location, SourceFile

FP32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103   # as assembler.FP32_OVERFLOW
INDENT = "    "   # an op's line: INDENT, its text (so its mnemonic starts at column 5), comment


class Op:
    """One instruction (or a label) as values. ``line``: its line in the generated text, or in
    the file: ``node`` is then that line's parse node (asm/lines.py), from which its
    instruction objects are made the ordinary way."""

    __slots__ = ("keywords", "label", "line", "mnemonic", "node", "operands", "ordered", "site")

    def __init__(self, mnemonic: str | None, operands: tuple, keywords: dict, site,
                 label: str | None = None) -> None:
        self.mnemonic, self.operands, self.keywords = mnemonic, operands, keywords
        self.site, self.label, self.line, self.node = site, label, 0, None
        self.ordered = False   # kept in program order under .schedule compiler (no_reorder)

    @property
    def text(self) -> str:
        """The op as one line of assembly (without indentation or comment)."""
        if self.label is not None:
            return f"{self.label}:"
        words = [_text(v) for v in self.operands]
        words += [f"{k}={_text(v)}" for k, v in self.keywords.items() if v is not None]
        return f"{self.mnemonic} {', '.join(words)}"


def _text(value) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


class GeneratedSource:
    """A ``SourceFile`` (same interface) whose text is the declarations' text followed by one
    line per op, ``render(op)``; a line is written when asked for, the whole text only when
    that is asked for. Compared by identity (its text need not exist)."""

    def __init__(self, name: str, header: str, ops: list[Op], render: Callable[[Op], str]):
        self.name = name
        self.header = SourceFile(name, header)   # (the declarations)
        self._header_lines = self.header.line_count
        self._ops = ops
        self._render = render

    @cached_property
    def text(self) -> str:
        return self.header.text + "".join([self._render(op) + "\n" for op in self._ops])

    @property
    def line_count(self) -> int:
        return self._header_lines + len(self._ops)

    def line(self, lineno: int) -> str:
        if lineno <= self._header_lines:
            return self.header.line(lineno)
        index = lineno - self._header_lines - 1
        return self._render(self._ops[index]) if index < len(self._ops) else ""

    _line_starts = SourceFile._line_starts


class _Skip(Exception):
    """This op goes the text path (which resolves it, or reports its error exactly)."""


def _refuse(where, message, notes=()):
    return _Skip(message)


def _location(source, line: int, column: int = len(INDENT) + 1) -> Location:
    location = object.__new__(Location)   # (a frozen dataclass: no per-field __setattr__)
    location.__dict__.update(source=source, line=line, column=column, end_column=None,
                             expansion=None)
    return location


class Direct:
    """Ops -> instructions for one ``Assembler`` after its declarations (pass 1)."""

    def __init__(self, asm, moved_value, lower, repeat) -> None:
        """``asm``: the Assembler after pass 1; ``moved_value``, ``lower``, ``repeat``: the
        assembler's (which imports this module, so they are handed over)."""
        self.asm = asm
        self._moved_value, self._lower, self._repeat = moved_value, lower, repeat
        self.symbols = {**asm.tensors, **asm.allocations}
        # each declaration's number (in the starts of ``keys``), and by number: the
        # declaration and its layout as a number, equal for equal (memory, dtype, shape,
        # compressed) (the only bare int of a key: cheap to hash, and keys are hashed twice
        # per op)
        self.numbers = {name: k for k, name in enumerate(self.symbols)}
        self.declared = list(self.symbols.values())
        layouts: dict[tuple, int] = {}
        self.layouts = [layouts.setdefault((s.space if isinstance(s, Allocation) else "hbm",
                                            s.dtype, s.shape, getattr(s, "compressed", False)),
                                           len(layouts)) for s in self.declared]
        self.tiles: dict[tuple, object] = {}   # (id of ArgDef, name, spec) -> Tile
        # mnemonic -> (InstrDef, positional ArgDefs, ArgDefs by name, names of the arguments
        # whose numbers are a plan's variables)
        self.entries: dict[str, tuple] = {}
        # shape key -> its plan (None: none; (op, instruction): its first op, no plan yet)
        self.plans: dict[tuple, _Plan | tuple | None] = {}

    def extend(self, ops: list[Op], instructions: list, same_as: list[int]) -> None:
        """Append the instruction of each op (an Instruction, a ``Made`` record, or a
        ``Repeat`` of an identical earlier op; None where an error was reported) and its
        ``same_as`` entry (as ``Assembler._instructions`` makes them for lines)."""
        resolved: dict[tuple, int] = {}   # (shape, starts) -> pc of its first op
        plans = self.plans
        keys = self.keys
        repeat = self._repeat
        for op in ops:
            pc = len(instructions)
            found = keys(op)
            if found is not None:
                shape, starts = found
                key = (shape, tuple(starts))
                first = resolved.setdefault(key, pc)   # (one hash of the key: it is long)
                if first != pc:   # the same instruction as an earlier op
                    same_as.append(first)
                    instructions.append(repeat(instructions, first, op.line))
                    continue
                plan = plans.get(shape)
                if type(plan) is tuple:   # the second op of its shape: a plan now
                    plan = plans[shape] = _Plan.of(self, *plan)
                if plan:
                    made = plan.made(op, starts)
                    if made is not None:   # (most other ops of an unrolled kernel)
                        same_as.append(pc)
                        instructions.append(Made(self, op, plan.definition, made))
                        continue
                instruction = self.resolve(op, shape)
                if instruction is not None:
                    same_as.append(pc)
                    instructions.append(instruction)
                    continue
                del resolved[key]   # (the text path decides: no later op repeats this one)
            same_as.append(pc)
            instructions.append(self.asm.text_op(op))

    def keys(self, op: Op) -> tuple[tuple, list] | None:
        """(the op but for its tiles' declarations and where they start, its numbers where
        they are plan variables and its DMA queue: its plan's key; those, a tile's
        declaration as its number then its start in each written dim, tile after tile, then
        the variables' numbers, then the queue if it has one), or None when the op goes the
        text path. The two together say everything about the op: equal, the ops are the same
        instruction. A tile's declaration counts in the plan's key by its layout only
        (memory, dtype, shape): tiles of a ring of buffers share plans."""
        entry = self.entries.get(op.mnemonic)
        if entry is None:
            try:
                entry = self._entry(op.mnemonic)
            except _Skip:
                return None
        positional, variables = entry[1], entry[3]
        operands = op.operands
        if len(operands) > len(positional):
            return None
        shape: list = [op.mnemonic]
        starts: list = []
        numbers: list = []
        for arg, value in zip(positional, operands):
            kind = type(value)
            if kind is str:   # (most values: a word or a number as text)
                shape.append(value)
            elif (kind is int or kind is float and value) and arg.name in variables:
                shape.append(kind)
                numbers.append(value)
            elif not self._add(value, shape, starts):
                return None
        queue = None
        if op.keywords:
            for name, value in op.keywords.items():
                # (a keyword's name goes in as a 1-tuple: no operand is one)
                kind = type(value)
                if name == "queue":   # a plan's variable too: a kernel spreads its DMAs
                    queue = value if kind is int else (
                        int(value) if kind is str and value.isdigit() else None)
                    if queue is not None:
                        shape.append((name,))
                        continue
                if kind is str:
                    shape.append((name, value))
                elif value is not None:
                    shape.append((name,))
                    if (kind is int or kind is float and value) and name in variables:
                        shape.append(kind)
                        numbers.append(value)
                    elif not self._add(value, shape, starts):
                        return None
        starts += numbers   # (after the tiles')
        if queue is not None:
            starts.append(queue)
        return tuple(shape), starts

    def _add(self, value, shape: list, starts: list) -> bool:
        """Put an operand that is not a word into a plan's key and the starts (False: not one
        this path takes)."""
        key = getattr(value, "shape_key", None)
        if key is not None:
            found = key()
            if found is None:
                return False
            name, dims, tile_starts = found
            number = self.numbers.get(name)
            if number is None:
                return False   # (not declared: the text path reports it)
            shape.append(self.layouts[number])
            shape.append(dims)
            starts.append(number)
            starts += tile_starts
            return True
        kind = type(value)
        if kind is int or kind is bool:
            shape.append((kind, value))
            return True
        if kind is float:   # (the sign of a zero counts: 0.0 == -0.0)
            shape.append((kind, value) if value else (kind, value, math.copysign(1.0, value)))
            return True
        if kind is list and all(type(v) is int for v in value):
            shape.append((list, tuple(value)))
            return True
        return False

    def line(self, op: Op, instructions: list, same_as: list[int]):
        """Append the instruction of ``op``, a line of a file (``op.node``, asm/lines.py),
        and its ``same_as`` entry: a ``Made`` record from the plan of its key, else its line
        resolved the ordinary way (None where an error was reported). Returns what it
        appended. (Ops equal to an earlier one by value but written otherwise are not
        ``Repeat``s here: a line's instruction carries its own columns.)"""
        pc = len(instructions)
        found = self.keys(op)
        if found is not None:
            shape, starts = found
            plan = self.plans.get(shape)
            if type(plan) is tuple:   # the second line of its key: a plan now
                plan = self.plans[shape] = _Plan.of(self, *plan)
            if plan:
                made = plan.made(op, starts)
                if made is not None:
                    same_as.append(pc)
                    record = Made(self, op, plan.definition, made)
                    instructions.append(record)
                    return record
        instruction = self.asm.line_instruction(op.node)
        same_as.append(pc)
        instructions.append(instruction)
        if instruction is not None and found is not None:
            self._resolved(found[0], op, instruction)
        return instruction

    def resolve(self, op: Op, shape: tuple) -> Instruction | None:
        """``op``'s checked instruction (objects), or None when the text path must decide;
        the first op of each ``shape`` also makes its plan (``_Plan``)."""
        try:
            instruction = self._instruction(op)
        except (_Skip, AsmError):
            return None
        self._resolved(shape, op, instruction)
        return instruction

    def _resolved(self, shape: tuple, op: Op, instruction: Instruction) -> None:
        """``op`` of key ``shape`` was resolved to ``instruction``: the plan's first op."""
        plans = self.plans
        first = plans.get(shape, False)
        if first is False:
            # a plan costs about what resolving a few ops does, and after the exact repeats
            # many shapes have one op: the plan is made from the first op when a second comes
            plans[shape] = (op, instruction)
        elif type(first) is tuple:
            plans[shape] = _Plan.of(self, *first)

    def _entry(self, mnemonic: str) -> tuple:
        entry = self.entries.get(mnemonic)
        if entry is None:
            d = self.asm.isa.instructions.get(mnemonic)
            if d is None or d.targets and self.asm.target.name not in d.targets:
                raise _Skip   # (the text path names what exists)
            entry = self.entries[mnemonic] = (d, [a for a in d.args if not a.keyword],
                                              {a.name: a for a in d.args}, _variables(d))
        return entry

    def _instruction(self, op: Op) -> Instruction:
        asm = self.asm
        d, positional, by_name, _ = self._entry(op.mnemonic)
        location = _location(asm.source, op.line)
        if len(op.operands) > len(positional):
            raise _Skip
        given = {a.name: v for a, v in zip(positional, op.operands)}
        for name, value in op.keywords.items():
            if value is None:
                continue
            if name not in by_name or name in given:
                raise _Skip
            given[name] = value
        values = {}
        for arg in d.args:
            if arg.name in given:
                values[arg.name] = self._value(d, arg, given[arg.name], location)
            elif arg.required:
                raise _Skip
            elif arg.default is not None:
                values[arg.name] = asm._default(arg, location)
            else:
                values[arg.name] = None
        asm.check(d, values, given, location, None, self.symbols)
        return Instruction(d, values, location, asm.source.line(op.line).strip())

    def _value(self, d: InstrDef, arg: ArgDef, value, location):
        kind = arg.kind
        view = getattr(value, "view", None)
        if view is not None:
            if kind not in ("tile", "scalar"):
                raise _Skip
            return self._tile(d, arg, view(), location)
        if isinstance(value, str):
            value = _word(value, kind)
        if kind == "scalar" or kind == "number":
            if type(value) not in (int, float):
                raise _Skip
            value = float(value)
            if math.isfinite(value) and abs(value) >= FP32_OVERFLOW:
                raise _Skip
            return Immediate(value, location) if kind == "scalar" else value
        if kind == "int":
            low, high = arg.range or (-(2 ** 63), 2 ** 63 - 1)
            if type(value) is not int or not low <= value <= high:
                raise _Skip
            return value
        if kind == "bool":
            if type(value) is not bool:
                raise _Skip
            return value
        if kind == "enum":
            code = self.asm.isa.enums[arg.enum].values.get(value)
            if code is None:
                raise _Skip
            return code
        if kind in ("reg", "reg_or_int"):
            if type(value) is tuple:   # a register, from _word
                return value
            if kind == "reg_or_int" and type(value) is int and -(2 ** 63) <= value < 2 ** 63:
                return ("int", value)
            raise _Skip
        if kind == "label":
            pc = self.asm.labels.get(value)
            if pc is None:
                raise _Skip
            return ("label", pc)
        if kind == "int_list":
            if not isinstance(value, (list, tuple)) or len(value) != arg.length or any(
                    type(v) is not int or arg.range and not arg.range[0] <= v <= arg.range[1]
                    for v in value):
                raise _Skip
            return tuple(("item", v) for v in value)
        raise _Skip

    def _tile(self, d: InstrDef, arg: ArgDef, view, location):
        if view is None:
            raise _Skip
        name, spec = view
        key = (id(arg), name, spec)
        known = self.tiles.get(key)
        if known is not None:
            return self._moved_value(known, location)
        symbol = self.symbols.get(name)
        if symbol is None or getattr(symbol, "compressed", False) or arg.compressed == "yes":
            raise _Skip
        if spec and spec[0][0] == "ap":
            _, start, terms, pattern, view = spec[0]
            if terms or not is_valid_pattern(pattern):
                raise _Skip
            where = dict.fromkeys(("buffer", "offset", "dtype", "pair", "pattern", "node"),
                                  location)
            tile = pattern_tile(self.asm, d, arg, symbol, list(pattern), start, (),
                                view or None, where, _refuse)
        else:
            if len(spec) > len(symbol.shape):
                raise _Skip
            items = [(*item, location) if item[0] == "slice" else (*item, 1, 1, location)
                     for item in spec]
            tile = self.asm._view(symbol, items, location)
            space = symbol.space if isinstance(symbol, Allocation) else "hbm"
            if space not in arg.spaces:
                raise _Skip
        self.tiles[key] = tile
        return tile


def _word(text: str, kind: str):
    """An operand given as a word: a number, true/false, a register; else the word itself
    (an enum value or a label)."""
    from neuronemu.asm.expr import register_number

    if kind in ("scalar", "number"):
        if text in ("nan", "inf", "-inf") or text[:1].isdigit() or text[:1] in "-.":
            try:
                return float(text)
            except ValueError:
                raise _Skip from None
        raise _Skip
    if kind in ("int", "reg_or_int") and (text.isdigit() or text[:1] == "-"
                                          and text[1:].isdigit()):
        return int(text)
    if kind == "bool":
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise _Skip
    if kind in ("reg", "reg_or_int"):
        number = register_number(text)
        if number is None:
            raise _Skip
        return ("reg", number)
    return text


# Arguments whose number can differ between the ops of a plan (each op's own goes into its
# lowered row or immediates): numbers no check rule reads (a rule reads only the arguments it
# names, and a tiles_only rule only where they are tiles), that lowering reads only to write them (not the DMA descriptor kind, the sync track, the
# matmul's modes and PE tile), and not memset's value on packed tiles (only 0 is allowed).
_VARIABLE_KINDS = frozenset(("scalar", "number", "int", "reg_or_int"))
_LOWERING_READS = frozenset(("queue", "dge", "oob", "track", "perf_mode", "is_transpose",
                             "is_stationary_onezero", "is_moving_onezero", "tile_position",
                             "tile_size"))


def _variables(d: InstrDef) -> frozenset[str]:
    named = {a for c in d.checks if c.rule not in TILES_ONLY for a in c.args}
    return frozenset(a.name for a in d.args
                     if a.kind in _VARIABLE_KINDS and a.name not in named
                     and a.name not in _LOWERING_READS
                     and not (a.name == "value" and d.packed == "fill"))


_OP_BASE, _OP_LO, _OP_HI, _OP_PSTART, _I_LINE = L.OP_BASE, L.OP_LO, L.OP_HI, L.OP_PSTART, L.I_LINE


class _Plan:
    """How every op with one shape key lowers (``Direct.keys``: the same instruction but for
    where its tiles start and its variable numbers): the rows the first such op lowered to, in
    which each later op puts its tiles' own base byte and first partition and its own numbers.
    Made only for an entry whose every check depends on nothing but shapes, dtypes and the
    values of arguments that are no variables (``checks.PLACELESS``: the first op passed them, so
    every op of the key does), and whose tiles were not turned into partition broadcasts."""

    __slots__ = ("declared", "definition", "imms", "numbers", "ops", "queue", "row", "slots",
                 "tiles")

    @classmethod
    def of(cls, direct: Direct, op: Op, instruction: Instruction) -> _Plan | None:
        d = instruction.definition
        if any(c.rule not in PLACELESS for c in d.checks):
            return None
        values = instruction.args
        plan = cls()
        plan.definition = d
        program = Program(direct.asm.source, direct.asm.target, {}, {}, [instruction], {})
        direct._lower(program)
        plan.row = array("q", program.instrs[0].tolist())
        plan.ops = [array("q", r.tolist()) for r in program.ops]
        plan.imms = [float(x) for x in program.imms[:-1]]
        slots = range(L.I_ARGS, L.I_ARGS + 2 * len(d.args), 2)
        plan.slots = ([k + 1 for k in slots if plan.row[k] == L.TAG_OPERAND],
                      [k + 1 for k in slots if plan.row[k] == L.TAG_FLOAT])
        # the tiles in the order ``keys`` lists their starts (operands, then keywords)
        order = [a.name for a in d.args if not a.keyword][:len(op.operands)]
        order += [k for k, v in op.keywords.items() if v is not None]
        # the variables in the order ``keys`` lists their numbers: (slot of the row, or index
        # of the immediate; int bounds, None for an immediate)
        variables = direct._entry(op.mnemonic)[3]
        given = dict(zip(order, (*op.operands, *(v for v in op.keywords.values()
                                                 if v is not None))))
        plan.numbers = []
        for name in order:
            value = given[name]
            kind = type(value)
            if name == "queue" or not ((kind is int or kind is float and value)
                                       and name in variables):
                continue
            k = next(k for k, a in enumerate(d.args) if a.name == name)
            slot = L.I_ARGS + 2 * k
            if plan.row[slot] == L.TAG_FLOAT:
                plan.numbers.append((plan.row[slot + 1], None))
            elif plan.row[slot] == L.TAG_INT:
                arg = d.args[k]
                low, high = (arg.range if arg.kind == "int" and arg.range
                             else (-(2 ** 63), 2 ** 63 - 1))
                plan.numbers.append((slot + 1, (low, high)))
            else:
                return None
        # the queue: its argument's slot in the row and its range (None: no queue given)
        plan.queue = None
        if op.keywords.get("queue") is not None:
            k = next(k for k, a in enumerate(d.args) if a.name == "queue")
            plan.queue = (L.I_ARGS + 2 * k + 1, d.args[k].range or (0, 15),
                          d.engine in ("dma", "cc"))
        plan.tiles = []
        for name in order:
            tile = values.get(name)
            if not isinstance(tile, Tile):
                continue
            if tile.broadcast or tile.regs or tile.spec and tile.spec[0][0] == "ap":
                return None
            k = next(k for k, a in enumerate(d.args) if a.name == name)
            symbol = direct.symbols[tile.symbol]
            dims = symbol.shape
            itemsize = dtypes.get(symbol.dtype).itemsize
            strides = [math.prod(dims[i + 1:]) * itemsize for i in range(len(dims))]
            on_chip = isinstance(symbol, Allocation)
            if on_chip:
                strides[0] = 0   # (the first partition, OP_PSTART, is the start of dim 0)
            # per written dim: (stride, size, last element of the view past its start)
            written = tuple((strides[i], dims[i], (item[3] - 1) * item[4]
                             if item[0] == "slice" else 0) for i, item in enumerate(tile.spec))
            # psum_banks: the bank the tile's bytes must stay in (None: no such rule)
            bank = direct.asm.target.psum_bank_bytes
            banked = any(c.rule == "psum_banks" and c.args[0] == name for c in d.checks) and (
                direct.asm.target.matmul_moving_fmax * 4 <= bank)
            window = tile.window[1] - tile.window[0]   # (the declaration's bytes: its layout's)
            plan.tiles.append((plan.row[L.I_ARGS + 2 * k + 1], symbol.offset, written, on_chip,
                               (bank, tile.extent - 1) if banked else None, window))
        plan.declared = direct.declared
        return plan

    def made(self, op: Op, starts: list[int]) -> tuple | None:
        """``op``'s lowered rows (the record ``assembler.lower`` takes), or None when a tile
        leaves its tensor (the ordinary path reports it)."""
        ops = self.ops   # (copied before the first tile placed elsewhere than the first op's)
        declared = self.declared
        at = 0
        for index, first, written, on_chip, banked, window in self.tiles:
            offset = declared[starts[at]].offset
            at += 1
            if not written and offset == first:   # the whole tensor the first op named
                continue
            base = offset
            for stride, size, span in written:
                start = starts[at]
                at += 1
                if start < 0 or start + span >= size:
                    return None
                base += start * stride
            if banked is not None and base // banked[0] != (base + banked[1]) // banked[0]:
                return None   # (psum_banks: the ordinary path reports it)
            row = ops[index][:]
            row[_OP_BASE] = base
            row[_OP_LO] = offset
            row[_OP_HI] = offset + window
            if on_chip and written:
                row[_OP_PSTART] = starts[at - len(written)]
            if ops is self.ops:
                ops = ops[:]
            ops[index] = row
        row = self.row[:]
        row[_I_LINE] = op.line
        imms = self.imms
        for where, bounds in self.numbers:
            value = starts[at]
            at += 1
            if bounds is None:   # an fp32 immediate (as Assembler._fp32 takes it)
                value = float(value)
                if math.isfinite(value) and abs(value) >= FP32_OVERFLOW:
                    return None
                if imms is self.imms:
                    imms = imms[:]
                imms[where] = value
            elif type(value) is not int or not bounds[0] <= value <= bounds[1]:
                return None
            else:
                row[where] = value
        if self.queue is not None:
            slot, (low, high), track = self.queue
            queue = starts[-1]
            if not low <= queue <= high:
                return None
            row[slot] = queue
            if track:   # a DMA's track is its queue's (assembler.lower)
                row[L.I_TRACK] = L.DMA_TRACK0 + queue
        return row, ops, imms, *self.slots


class Made:
    """An op its plan lowered without objects: ``made``, the rows; ``build()``, its
    Instruction, made when someone asks."""

    __slots__ = ("definition", "direct", "made", "op")

    def __init__(self, direct: Direct, op: Op, definition: InstrDef, made: tuple) -> None:
        self.direct, self.op, self.definition, self.made = direct, op, definition, made

    def build(self) -> Instruction:
        op = self.op
        if op.node is not None:   # a line of a file: its own, with its columns
            return self.direct.asm._instruction(op.node)
        return self.direct._instruction(op)   # (its plan's first op passed every check)
