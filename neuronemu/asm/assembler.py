"""Assemble a parse tree into a checked ``Program``: declarations, instructions, lowered arrays.

Pass 1 reads ``.target`` first (capacities depend on it), then the other directives in order and
the labels; pass 2 resolves every instruction's arguments against its table entry and runs the
table's checks. Nothing is lowered unless every line is valid.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import math
import re
from array import array
from dataclasses import replace

import numpy as np

from neuronemu.asm.apattern import access_pattern, is_access_pattern
from neuronemu.asm.checks import RULES, CheckContext, bitvec_codes, require_known_rules
from neuronemu.asm.collect import Collector
from neuronemu.asm.direct import Direct, GeneratedSource, Made, Op
from neuronemu.asm.expr import Affine, Evaluator, register_number, truncation_warning
from neuronemu.asm.lines import reader
from neuronemu.asm.outputs import unwritten_outputs
from neuronemu.asm.parser import TemplateLine
from neuronemu.asm.placement import place
from neuronemu.errors import AsmError, Diagnostic
from neuronemu.isa import dtypes
from neuronemu.isa.table import ISA, ArgDef, InstrDef, load_isa
from neuronemu.machine import compression
from neuronemu.machine import layout as L
from neuronemu.program import Allocation, HbmTensor, Immediate, Instruction, Program, Tile, pe_tile
from neuronemu.source import Location, SourceFile, location_of

DEFAULT_TARGET = "trn2"
ROLES = ("input", "output", "scratch")
INITIALISERS = {
    "zeros": 0, "ones": 0, "arange": 0, "nan": 0, "identity": 0,
    "full": 1, "normal": 2, "uniform": 2, "relu_normal": 2,
}
DIRECTIVES = ("target", "topology", "sync", "schedule", "no_reorder", "hbm", "sbuf", "psum",
              "const")
# .topology NAME [ranks_per_chip=N]: system names hold dots and dashes (trn2.48xlarge), which
# the expression grammar splits, so the name is read from the line's text
_TOPOLOGY = re.compile(r'\.topology\s+"?([A-Za-z0-9_.\-]+)"?\s*(?:,?\s*ranks_per_chip\s*=.*)?$')
SYNC_MODES = ("auto", "explicit")
SCHEDULES = ("program", "compiler")
# Largest size of one dimension. Sizes are Python ints (exact), and every tensor must fit its
# memory (HBM is at most 144 GiB); this bound keeps every lowered offset far inside int64.
MAX_DIM = 1 << 40
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1  # registers, int arguments, byte offsets
# the smallest magnitude an fp32 cast rounds to infinity (float32 max + half an ulp)
FP32_OVERFLOW = 2 ** 128 - 2 ** 103
# Memos, each a switch only so that tests can compare a program with the one resolving every
# line afresh. REUSE: an identical instruction line or operand text reuses the first one's
# resolution. PLANS: lines that differ only in their numbers are read as values
# (asm/lines.py) and lowered from the plan they share (asm/direct.py).
REUSE = True
PLANS = True
MAX_HBM_DIMS = 16  # dims of an HBM tensor (on-chip tiles: 1 + L.MAX_FREE_DIMS)


def _suggest(word: str, choices) -> str:
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1)
    if not close and len(word) >= 2:
        # an abbreviation (op0=mul, sub, div) is too short for difflib: the names it begins
        close = [c for c in choices if c.startswith(word)][:1]
    return f"; did you mean '{close[0]}'?" if close else ""


def _token_loc(source, token):
    return location_of(source, token)


class Assembler:
    def __init__(self, source: SourceFile, target: str | None, isa: ISA,
                 collector: Collector | None = None):
        require_known_rules(isa)
        self.source = source
        self.collector = collector or Collector()   # every independent error (asm/collect.py)
        self.warnings: list[Diagnostic] = []
        self.isa = isa
        self.target_override = target
        self.target = None
        self.cores = 1   # .target NAME cores=N
        self.constants: dict[str, float | int] = {}
        self.tensors: dict[str, HbmTensor] = {}
        self.allocations: dict[str, Allocation] = {}
        self.labels: dict[str, int] = {}
        self.eval = Evaluator(source, self.constants)
        self.next_offset = {"sbuf": 0, "psum": 0, "hbm": 0}
        self._tiles: dict[tuple[int, str], Tile] = {}   # (id of ArgDef, operand text) -> tile

    def error(self, node, message, notes=()):
        return AsmError(message, location_of(self.source, getattr(node, "meta", node)), notes)

    # ----------------------------------------------------------------- pass 1: declarations
    def assemble(self, tree, ops: list[Op] = ()) -> Program:
        """The program of ``tree`` and then ``ops`` (instructions and labels given as values:
        asm/direct.py)."""
        items = tree.children
        self.sync_mode = "auto"
        self.schedule = "program"
        self.no_reorder: list[tuple[int, int, object]] = []   # (first, count, its node)
        collector = self.collector
        try:
            self._choose_target(items)
        except AsmError as e:   # every capacity and dtype depends on the target: stop here
            collector.add(e)
            collector.raise_if_any()
        statements = []
        for item in items:
            if type(item) is TemplateLine:   # (most items of an unrolled kernel)
                statements.append(item)
                continue
            try:
                if item.data == "label":
                    name_tok = item.children[0]
                    name = str(name_tok)
                    if name in self.labels:
                        raise AsmError(f"label '{name}' is defined twice",
                                       _token_loc(self.source, name_tok))
                    self.labels[name] = len(statements)
                elif item.data == "directive":
                    self._directive(item)
                elif item.data == "instruction":
                    statements.append(item)
            except AsmError as e:
                collector.add(e)
                collector.poison(_declared_name(item))
        if self.schedule == "compiler" and self.sync_mode == "explicit":
            # explicit sync is the kernel's own schedule: its semaphores order the engines
            collector.add(self.error(self._schedule_node,
                                     ".schedule compiler needs .sync auto: under .sync "
                                     "explicit the kernel's semaphores are its schedule"))
        given = []   # the instructions given as values, after the text's
        for op in ops:
            if op.label is None:
                given.append(op)
            elif op.label in self.labels:
                collector.add(AsmError(f"label '{op.label}' is defined twice",
                                       Location(self.source, op.line, 5, None)))
            else:
                self.labels[op.label] = len(statements) + len(given)
        direct = Direct(self, _moved_value, lower, Repeat)
        instructions, same_as = self._instructions(statements, direct)
        if given:
            direct.extend(given, instructions, same_as)
        for first, count, node in self.no_reorder:
            if first + count > len(instructions):
                collector.add(self.error(node, f".no_reorder {first}, {count}: the kernel has "
                                               f"{len(instructions)} instructions"))
        collector.raise_if_any()
        program = Program(self.source, self.target, self.tensors, self.allocations,
                          instructions, self.labels, warnings=self.warnings,
                          sync_mode=self.sync_mode, schedule=self.schedule,
                          topology=self.topology, ranks_per_chip=self.ranks_per_chip)
        # records (Made, Repeat) make their Instructions on first use (Program.__getattr__)
        program.__dict__["_pending"] = program.__dict__.pop("instructions")
        lower(program, same_as)
        for first, count, _ in self.no_reorder:
            program.instrs[first: first + count, L.I_FLAGS] |= L.ORDERED
        program.warnings.extend(unwritten_outputs(program))
        return program

    def _choose_topology(self, items):
        """``.topology NAME [ranks_per_chip=N]``: the system a multi-rank kernel runs on when
        no topology is given (--topology, run_spmd's argument wins); returns its chips'
        target, which is the kernel's default target."""
        from neuronemu.isa.topologies import load_topologies

        self.topology, self.ranks_per_chip = None, 1
        found = [i for i in items
                 if i.data == "directive" and str(i.children[0]) == "topology"]
        if not found:
            return None
        if len(found) > 1:
            raise self.error(found[1], "a second .topology directive: a kernel names at most "
                                       "one topology")
        node = found[0]
        location = location_of(self.source, node.meta)
        end = location.end_column - 1 if location.end_column else None
        text = self.source.line(location.line)[location.column - 1:end]
        topologies = load_topologies()
        usage = "usage: .topology NAME [ranks_per_chip=N]"
        match = _TOPOLOGY.match(text.strip())
        if match is None:
            raise self.error(node, f"{usage} (NAME: {', '.join(topologies)})")
        name = match.group(1)
        if name not in topologies:
            column = location.column + text.index(name)
            where = Location(self.source, location.line, column, column + len(name))
            raise AsmError(f"unknown topology '{name}'; topologies: {', '.join(topologies)}"
                           f"{_suggest(name, topologies)}", where)
        topology = topologies[name]
        for arg in node.children[1:]:
            if getattr(arg, "data", None) == "kwarg":
                key, value = arg.children
                if str(key) != "ranks_per_chip":
                    raise AsmError(f".topology has no option '{key}'; {usage}",
                                   _token_loc(self.source, key))
                ranks = self.eval.integer(value)
                if not 1 <= ranks <= topology.cores_per_chip:
                    raise self.error(value, f"ranks_per_chip must be 1..{topology.cores_per_chip}"
                                            f" on {name} ({topology.cores_per_chip} cores per "
                                            f"chip), not {ranks}")
                self.ranks_per_chip = ranks
        self.topology = name
        self._topology_node = node
        return topology.target

    def _choose_target(self, items):
        from_topology = self._choose_topology(items)
        chosen = None
        for item in items:
            if item.data == "directive" and str(item.children[0]) == "target":
                args = item.children[1:]
                if len(args) == 2 and getattr(args[1], "data", None) == "kwarg":
                    self.cores = self._cores(args[1])
                    args = args[:1]
                if len(args) != 1 or getattr(args[0], "data", None) != "name":
                    raise self.error(item, "usage: .target trn1|trn2|trn3 [cores=N]")
                name = str(args[0].children[0])
                if name not in self.isa.targets:
                    raise self.error(args[0], f"unknown target '{name}'; targets: "
                                              f"{', '.join(self.isa.targets)}"
                                              f"{_suggest(name, self.isa.targets)}")
                chosen = name
                if from_topology is not None and from_topology != name:
                    raise self.error(self._topology_node,
                                     f"topology {self.topology} is made of {from_topology} "
                                     f"chips, but the kernel says .target {name}")
        name = self.target_override or chosen or from_topology or DEFAULT_TARGET
        if name not in self.isa.targets:
            raise AsmError(f"unknown target '{name}'; targets: {', '.join(self.isa.targets)}")
        self.target = logical_core(self.isa.targets[name], self.cores)

    def _cores(self, node) -> int:
        """``cores=N`` of ``.target``: a logical core of N cores' SBUF and PSUM (1 to 8)."""
        key, value = node.children
        if str(key) != "cores":
            raise self.error(node, f"unknown option '{key}' for .target (options: cores=N)")
        cores = self.eval.integer(value)
        if not 1 <= cores <= MAX_CORES:
            raise self.error(value, f"cores={cores}: a logical core joins 1 to {MAX_CORES} "
                                    f"cores' on-chip memories")
        return cores

    def _directive(self, node):
        name_tok, *args = node.children
        name = str(name_tok)
        if name in ("target", "topology"):
            return   # read first, by _choose_target
        if name not in DIRECTIVES:
            raise AsmError(f"unknown directive '.{name}'; directives: "
                           f"{', '.join('.' + d for d in DIRECTIVES)}{_suggest(name, DIRECTIVES)}",
                           _token_loc(self.source, name_tok))
        if name == "const":
            self._const(node, args)
        elif name == "sync":
            if len(args) != 1 or getattr(args[0], "data", None) != "name" \
                    or str(args[0].children[0]) not in SYNC_MODES:
                where = args[0] if args else node
                raise self.error(where, f"usage: .sync {'|'.join(SYNC_MODES)}")
            self.sync_mode = str(args[0].children[0])
        elif name == "schedule":
            if len(args) != 1 or getattr(args[0], "data", None) != "name" \
                    or str(args[0].children[0]) not in SCHEDULES:
                where = args[0] if args else node
                raise self.error(where, f"usage: .schedule {'|'.join(SCHEDULES)}")
            self.schedule = str(args[0].children[0])
            self._schedule_node = node
        elif name == "no_reorder":
            usage = "usage: .no_reorder FIRST, COUNT (instructions FIRST.. kept in order)"
            if len(args) != 2 or any(getattr(a, "data", None) == "kwarg" for a in args):
                raise self.error(args[0] if args else node, usage)
            first, count = (self.eval.integer(a) for a in args)
            if first < 0 or count < 1:
                raise self.error(node, f"{usage}: FIRST >= 0, COUNT >= 1")
            self.no_reorder.append((first, count, node))
        elif name == "hbm":
            self._hbm(node, args)
        else:
            self._onchip(node, name, args)

    def _const(self, node, args):
        if len(args) != 1 or args[0].data != "kwarg":
            raise self.error(node, "usage: .const NAME = expression")
        name_tok, value = args[0].children
        name = str(name_tok)
        self._check_new_symbol(name, name_tok)
        mark = len(self.eval.truncations)
        self.constants[name] = self.eval.constant(value)
        if len(self.eval.truncations) > mark:   # remembered for the uses in float arguments
            self.eval.truncated_constants[name] = self.eval.truncations[mark]
            del self.eval.truncations[mark:]

    def _float_constant(self, node, what: str) -> float | int:
        """A constant whose value goes to a float argument: a located warning when an integer
        division in it (or in a .const it uses) truncated (``1/N`` is 0; ``1.0/N`` was meant)."""
        mark = len(self.eval.truncations)
        value = self.eval.constant(node)
        if len(self.eval.truncations) > mark:
            self.warnings.append(truncation_warning(self.eval.truncations[mark], what, self.source))
            del self.eval.truncations[mark:]
        return value

    def _check_new_symbol(self, name, token):
        if name in self.constants or name in self.tensors or name in self.allocations:
            raise AsmError(f"'{name}' is already declared", _token_loc(self.source, token))
        if register_number(name) is not None or name in ("inf", "nan", "true", "false"):
            raise AsmError(f"'{name}' is reserved (registers are r0..r63)",
                           _token_loc(self.source, token))

    def _dtype_and_shape(self, node, usage):
        if getattr(node, "data", None) != "indexed":
            raise self.error(node, f"expected DTYPE[dims], e.g. float32[128, 512]; usage: {usage}")
        dtype_tok, *dims = node.children
        dtype = str(dtype_tok)
        if dtype not in dtypes.names():
            raise AsmError(f"unknown dtype '{dtype}'{_suggest(dtype, dtypes.names())}",
                           _token_loc(self.source, dtype_tok),
                           (f"dtypes: {', '.join(dtypes.names())}",))
        if dtype not in self.target.dtypes:
            raise AsmError(f"dtype {dtype} is not available on {self.target.name} "
                           f"({self.target.core})", _token_loc(self.source, dtype_tok),
                           (f"{self.target.name} dtypes: {', '.join(self.target.dtypes)}",))
        shape = []
        for d in dims:
            if d.data != "index":
                raise self.error(d, "dimensions are sizes, not slices")
            size = self.eval.integer(d.children[0])
            if size <= 0:
                raise self.error(d, f"dimension sizes must be positive, got {size}")
            if size > MAX_DIM:
                raise self.error(d, f"dimension size {size} is too large (at most {MAX_DIM}; "
                                    f"HBM holds at most {self.target.hbm_bytes} bytes)")
            shape.append(size)
        return dtype, tuple(shape)

    def _split_args(self, args):
        positional, keywords = [], {}
        for a in args:
            if a.data == "kwarg":
                keywords[str(a.children[0])] = a.children[1]
            else:
                positional.append(a)
        return positional, keywords

    def _hbm(self, node, args):
        usage = ".hbm NAME DTYPE[dims] input|output|scratch [compressed] [init=...]"
        positional, keywords = self._split_args(args)
        compressed = False
        if len(positional) == 4:
            flag = positional[3]
            if flag.data != "name" or str(flag.children[0]) != "compressed":
                raise self.error(flag, f"the only flag after the role is 'compressed'; usage: "
                                       f"{usage}")
            compressed = True
            positional = positional[:3]
        if len(positional) != 3 or positional[0].data != "name":
            raise self.error(node, f"usage: {usage}")
        name_tok = positional[0].children[0]
        name = str(name_tok)
        self._check_new_symbol(name, name_tok)
        dtype, shape = self._dtype_and_shape(positional[1], usage)
        if len(shape) > MAX_HBM_DIMS:
            raise self.error(positional[1], f"an HBM tensor has at most {MAX_HBM_DIMS} dims, "
                                            f"got {len(shape)}")
        role_node = positional[2]
        role = str(role_node.children[0]) if role_node.data == "name" else ""
        if role not in ROLES:
            raise self.error(role_node, f"role must be one of {', '.join(ROLES)}"
                                        f"{_suggest(role, ROLES)}")
        for k in keywords:
            if k != "init":
                raise self.error(keywords[k], f"unknown option '{k}' for .hbm (options: init)")
        init = self._init(keywords.get("init"), role)
        if init[0] == "identity" and (len(shape) != 2 or shape[0] != shape[1]):
            raise self.error(keywords["init"], "init=identity needs a square 2-D tensor")
        if compressed and len(shape) != 2:
            raise self.error(positional[1], "a compressed tensor is 2-D [rows, columns]: each row "
                                            "is compressed in blocks of "
                                            f"{compression.BLOCK_ELEMENTS} elements")
        offset = self.next_offset["hbm"]
        tensor = HbmTensor(name, dtype, shape, role, init, offset, location_of(self.source, node.meta),
                           compressed)
        if offset + tensor.nbytes > self.target.hbm_bytes:
            raise self.error(node, f"HBM tensor '{name}' ({tensor.nbytes} bytes) does not fit in "
                                   f"the {self.target.hbm_bytes} bytes of HBM on {self.target.name}")
        self.next_offset["hbm"] = offset + (tensor.nbytes + 63) // 64 * 64
        self.tensors[name] = tensor

    def _init(self, node, role):
        if node is None:
            return ("normal", 0.0, 1.0) if role == "input" else ("nan",)
        if node.data == "name":
            kind, params = str(node.children[0]), []
        elif node.data == "call":
            kind, params = str(node.children[0]), list(node.children[1:])
        else:
            raise self.error(node, "init must be a name or a call such as normal(0, 1)")
        if kind not in INITIALISERS:
            raise self.error(node, f"unknown initialiser '{kind}'; initialisers: "
                                   f"{', '.join(INITIALISERS)}{_suggest(kind, INITIALISERS)}")
        wanted = INITIALISERS[kind]
        if params and len(params) != wanted:
            raise self.error(node, f"{kind} takes {wanted} parameter(s), got {len(params)}")
        values = [float(self._float_constant(p, f"{kind}(...) parameter")) for p in params]
        if values:
            self._check_init_params(kind, params, values)
        else:
            values = {"normal": [0.0, 1.0], "uniform": [-1.0, 1.0], "relu_normal": [0.0, 1.0],
                      "full": None}.get(kind, [])
            if values is None:
                raise self.error(node, "full needs a value: init=full(3.0)")
        return (kind, *values)

    def _check_init_params(self, kind: str, params, values: list[float]) -> None:
        """Random initialisers need finite parameters that define a distribution: a
        non-negative std, lo <= hi with a finite width (full(v) takes any value, inf and nan
        included: it is rounded to the dtype)."""
        if kind == "full":
            return
        names = ("lo", "hi") if kind == "uniform" else ("mean", "std")
        for name, node, value in zip(names, params, values, strict=True):
            if not math.isfinite(value):
                raise self.error(node, f"{kind}({', '.join(names)}): {name} must be finite, "
                                       f"got {value}")
        if kind == "uniform":
            lo, hi = values
            if lo > hi:
                raise self.error(params[1], f"uniform(lo, hi): hi must be >= lo, got "
                                            f"uniform({lo}, {hi})")
            if not math.isfinite(hi - lo):
                raise self.error(params[1], f"uniform(lo, hi): the width hi - lo must be a "
                                            f"finite float, got uniform({lo}, {hi})")
        elif values[1] < 0:
            raise self.error(params[1], f"{kind}(mean, std): std must be >= 0, got {values[1]}")
        else:
            values[1] += 0.0   # -0.0 -> 0.0: numpy refuses a std whose sign bit is set

    def _onchip(self, node, space, args):
        usage = f".{space} NAME DTYPE[partitions, free dims...] [at=BYTE_OFFSET] [alias=BUFFER]"
        positional, keywords = self._split_args(args)
        if len(positional) != 2 or positional[0].data != "name":
            raise self.error(node, f"usage: {usage}")
        name_tok = positional[0].children[0]
        name = str(name_tok)
        self._check_new_symbol(name, name_tok)
        dtype, shape = self._dtype_and_shape(positional[1], usage)
        if len(shape) < 2:
            raise self.error(positional[1], f"on-chip tiles are at least 2-D [partitions, free...]; "
                                            f"use {dtype}[{shape[0]}, 1] for one element per "
                                            f"partition")
        if len(shape) - 1 > L.MAX_FREE_DIMS:
            raise self.error(positional[1], f"at most {L.MAX_FREE_DIMS} free dims")
        if shape[0] > self.target.partitions:
            raise self.error(positional[1], f"{shape[0]} partitions requested; {space.upper()} "
                                            f"has {self.target.partitions}")
        # placement, at= and alias= (asm/placement.py)
        self.allocations[name] = place(self, node, space, name, dtype, shape, keywords)

    # ----------------------------------------------------------------- pass 2: instructions
    def _instructions(self, statements, direct: Direct) -> tuple[list, list[int]]:
        """Resolve and check every instruction: (instructions, same_as), where same_as[pc] is
        the pc of the first instruction written on an identical line (pc itself for a first).

        After pass 1 an instruction is a pure function of the text of its line (the tables,
        target, declarations and labels are fixed; a label resolves to its pc wherever it is
        used), so each distinct line text is resolved once and an identical line is a
        ``Repeat`` of it. A line that shares its template with earlier lines (the same text
        but for its numbers) is read as values and goes through ``direct`` (asm/lines.py). The
        first occurrence of a line is the one checked, so an error is still reported at the
        first line that has it."""
        resolved: dict[str, int] = {}   # line text -> pc
        readers: dict[tuple, object] = {}   # template -> its Reader (None: not read)
        instructions: list = []
        same_as: list[int] = []
        line_of = self.source.line
        for pc, node in enumerate(statements):
            text = node.text if type(node) is TemplateLine else line_of(node.meta.line)
            first = resolved.get(text) if REUSE else None
            if first is not None:
                same_as.append(first)
                instructions.append(Repeat(instructions, first, node.meta.line))
                continue
            if PLANS and type(node) is TemplateLine:   # (most lines of unrolled code)
                read = readers.get(node.key, False)
                if read is False:
                    read = readers[node.key] = reader(self, node)
                op = read.read(node) if read is not None else None
                if op is not None:
                    if direct.line(op, instructions, same_as) is not None:
                        resolved[text] = pc
                    continue
            instruction = self.line_instruction(node)
            if instruction is not None:
                resolved[text] = pc
            same_as.append(pc)
            instructions.append(instruction)
        return instructions, same_as

    def line_instruction(self, node) -> Instruction | None:
        """The instruction of an instruction line, resolved and checked; None when it has an
        error (reported to the collector: the next lines are checked all the same)."""
        try:
            return self._instruction(node)
        except AsmError as e:
            line = node.meta.line
            if e.location is not None and e.location.line != line:
                # the parser shares the children of identical lines (asm/parser.py): the error
                # is this line's, at the same columns
                e.location = _moved(e.location, line)
            self.collector.add(e)
            return None

    def text_op(self, op: Op) -> Instruction | None:
        """``op`` resolved from its own line of the generated text, as a line of a file is
        (None: its error is reported)."""
        from neuronemu.asm.parser import parse_one

        text = self.source.line(op.line)
        try:
            return self._instruction(parse_one(self.source, text, op.line)[-1])
        except AsmError as e:
            self.collector.add(e)
            return None

    def _lookup(self, node) -> InstrDef:
        engine_tok, mnemonic_tok = node.children[0], node.children[1]
        engine, mnemonic = str(engine_tok), str(mnemonic_tok)
        name = f"{engine}.{mnemonic}"
        table = self.isa.instructions
        if name in table:
            definition = table[name]
            if definition.targets and self.target.name not in definition.targets:
                raise AsmError(f"{name} is not available on {self.target.name} (only on "
                               f"{', '.join(definition.targets)})", _token_loc(self.source,
                                                                               engine_tok))
            return definition
        engines = sorted({d.engine for d in table.values()})
        if engine not in engines:
            raise AsmError(f"unknown engine '{engine}'; engines: {', '.join(engines)}"
                           f"{_suggest(engine, engines)}", _token_loc(self.source, engine_tok))
        elsewhere = [d.name for d in table.values() if d.mnemonic == mnemonic]
        loc = location_of(self.source, node.meta)
        loc = type(loc)(loc.source, loc.line, loc.column,
                        getattr(mnemonic_tok, "end_column", None))
        if elsewhere:
            raise AsmError(f"{engine} has no instruction '{mnemonic}'; it exists as "
                           f"{', '.join(elsewhere)}", loc)
        same_engine = [d.mnemonic for d in table.values() if d.engine == engine]
        raise AsmError(f"unknown instruction '{name}'{_suggest(mnemonic, same_engine)}", loc,
                       (f"{engine} instructions: {', '.join(sorted(same_engine))}",))

    def _instruction(self, node) -> Instruction:
        definition = self._lookup(node)
        location = location_of(self.source, node.meta)
        raw_args = node.children[2:]
        given: dict[str, object] = {}
        positional_defs = [a for a in definition.args if not a.keyword]
        index = 0
        for raw in raw_args:
            if raw.data == "kwarg":
                key_tok, value = raw.children
                key = str(key_tok)
                names = [a.name for a in definition.args]
                if key not in names:
                    raise AsmError(f"{definition.name} has no argument '{key}'"
                                   f"{_suggest(key, names)}", _token_loc(self.source, key_tok),
                                   (f"syntax: {definition.syntax}",))
                if key in given:
                    raise AsmError(f"argument '{key}' given twice", _token_loc(self.source, key_tok))
                given[key] = value
            else:
                if given and any(definition.arg(k).keyword for k in given):
                    raise self.error(raw, "positional argument after a keyword argument")
                if index >= len(positional_defs):
                    raise self.error(raw, f"{definition.name} takes {len(positional_defs)} "
                                          f"positional argument(s) "
                                          f"({', '.join(a.name for a in positional_defs)}); "
                                          f"got more", (f"syntax: {definition.syntax}",))
                given[positional_defs[index].name] = raw
                index += 1
        values = {}
        for arg in definition.args:
            if arg.name in given:
                values[arg.name] = self._resolve(definition, arg, given[arg.name])
            elif arg.required:
                raise AsmError(f"{definition.name} needs argument '{arg.name}' "
                               f"({arg.doc or arg.kind})", location,
                               (f"syntax: {definition.syntax}",))
            elif arg.default is not None:
                values[arg.name] = self._default(arg, location)
            else:
                values[arg.name] = None
        arg_locations = {name: location_of(self.source, node.meta) for name, node in given.items()
                         if getattr(node, "meta", None) is not None and not node.meta.empty}
        self.check(definition, values, given, location, arg_locations, self._tile_symbols())
        line_text = self.source.line(location.line).strip()
        return Instruction(definition, values, location, line_text)

    def check(self, definition: InstrDef, values: dict, given: dict, location,
              arg_locations: dict | None, symbols: dict) -> None:
        """Every check of an instruction whose arguments are resolved (``values``; ``given``:
        those written, as the values or nodes they came from): the operators and packed tiles
        it may take, partition broadcast of its sources, then the table's rules."""
        self._check_bitvec_allowed(definition, values, given)
        self._check_packed_dtypes(definition, values)
        _broadcast_sources(definition, values, symbols)
        ctx = CheckContext(definition, values, self.target, location, arg_locations,
                           (self.allocations, self.tensors))
        for check in definition.checks:
            RULES[check.rule](ctx, *check.args)

    def _check_packed_dtypes(self, definition: InstrDef, values: dict) -> None:
        """x4-packed tiles (four fp8 or fp4 values per element) are read as such only by the MX
        instructions, copies move them only unchanged (same dtype on both sides) and memset
        fills them with zeros only."""
        tiles = [(a.name, values[a.name]) for a in definition.args
                 if isinstance(values.get(a.name), Tile)]
        packed = [(n, t) for n, t in tiles if dtypes.get(t.dtype).packs]
        if not packed or definition.packed == "use":
            return
        name, tile = packed[0]
        if definition.packed == "copy" and len({t.dtype for _, t in tiles}) == 1:
            return
        if definition.packed == "fill":   # nki.isa.memset: x4 tiles take value=0 only
            value = values.get("value")
            if value == 0.0 and not math.copysign(1.0, value) < 0:
                return
            raise AsmError(f"{definition.name} fills the packed tile '{tile.symbol}' "
                           f"({tile.dtype}) only with value=0 (all bits zero, as nki.isa.memset "
                           f"documents), not {value!r}", tile.location)
        element = dtypes.get(dtypes.get(tile.dtype).packs)
        copies, fills = (sorted(n for n, d in self.isa.instructions.items() if d.packed == how)
                         for how in ("copy", "fill"))
        raise AsmError(f"{definition.name} cannot use '{tile.symbol}' ({tile.dtype}, four "
                       f"{element.name} values per element) as '{name}': packed tiles are made "
                       f"by vector.quantize_mx (fp8 only) or loaded, read by tensor.matmul_mx, "
                       f"and moved unchanged by "
                       f"{', '.join(copies)} (same dtype on both sides), and "
                       f"zero-filled by {' / '.join(fills)} value=0",
                       tile.location)

    def _check_bitvec_allowed(self, definition: InstrDef, values: dict, given: dict) -> None:
        """Bitvec ALU operators exist only where the entry says so (rule bitvec_operands)."""
        if any(c.rule == "bitvec_operands" for c in definition.checks):
            return
        codes = bitvec_codes()
        for arg in definition.args:
            if arg.kind == "enum" and arg.enum == "alu_op" and values.get(arg.name) in codes:
                raise self.error(given[arg.name], f"{definition.name} takes arithmetic "
                                                  f"operators only; bitvec operators are "
                                                  f"for vector.tensor_tensor and "
                                                  f"vector.tensor_scalar on integer tiles")

    def _default(self, arg: ArgDef, location):
        if arg.kind == "scalar":
            return Immediate(float(arg.default), location)
        if arg.kind == "enum":
            return self.isa.enums[arg.enum].values[arg.default]
        return arg.default

    def _resolve(self, definition: InstrDef, arg: ArgDef, node):
        kind = arg.kind
        what = f"{definition.name} argument '{arg.name}'"
        if kind == "tile":
            return self._tile(definition, arg, node)
        if kind == "scalar":
            if (node.data in ("indexed", "name") and str(node.children[0]) in self._tile_symbols()
                    or is_access_pattern(node)):
                return self._tile(definition, arg, node)
            return Immediate(self._fp32(node, what), location_of(self.source, node.meta))
        if kind == "number":
            return self._fp32(node, what)
        if kind == "int":
            low, high = arg.range or (INT64_MIN, INT64_MAX)
            value = self.eval.integer(node)
            if not low <= value <= high:
                raise self.error(node, f"{what} must be in the range [{low}, {high}], got "
                                       f"{_quote(value)}")
            return value
        if kind == "bool":
            word = str(node.children[0]) if node.data in ("name", "number") else ""
            if word in ("true", "1"):
                return True
            if word in ("false", "0"):
                return False
            raise self.error(node, f"{what} must be true or false")
        if kind == "enum":
            enum = self.isa.enums[arg.enum]
            word = str(node.children[0]) if node.data == "name" else ""
            if word not in enum.values:
                raise self.error(node, f"{what} must be one of: {', '.join(enum.values)}"
                                       f"{_suggest(word, enum.values) if word else ''}")
            return enum.values[word]
        if kind in ("reg", "reg_or_int"):
            if node.data == "name" and register_number(str(node.children[0])) is not None:
                return ("reg", register_number(str(node.children[0])))
            if kind == "reg":
                raise self.error(node, f"{what} must be a register r0..r63")
            return ("int", self._int64(node, what))
        if kind == "int_list":
            if node.data != "list":
                raise self.error(node, f"{what} must be a bracketed list of {arg.length} "
                                       f"integers, e.g. [{', '.join(map(str, range(3)))}, ...]")
            items = [self._int64(c, what) for c in node.children if c is not None]
            if len(items) != arg.length:
                raise self.error(node, f"{what} needs {arg.length} integers, got {len(items)}")
            if arg.range:
                for c, value in zip((c for c in node.children if c is not None), items,
                                    strict=True):
                    if not arg.range[0] <= value <= arg.range[1]:
                        raise self.error(c, f"{what}: {value} is outside [{arg.range[0]}, "
                                            f"{arg.range[1]}]")
            return tuple(("item", v) for v in items)
        if kind == "label":
            word = str(node.children[0]) if node.data == "name" else ""
            if word not in self.labels:
                raise AsmError(f"unknown label '{word}'{_suggest(word, self.labels)}",
                               location_of(self.source, node.meta), symbol=word)
            return ("label", self.labels[word])
        raise AssertionError(kind)

    def _fp32(self, node, what: str) -> float:
        """An fp32 immediate: any float whose fp32 rounding is finite, or an explicit inf/nan
        (a finite value that would silently become infinity is a mistake)."""
        value = float(self._float_constant(node, what))
        if math.isfinite(value) and abs(value) >= FP32_OVERFLOW:
            raise self.error(node, f"{what} is an fp32 immediate: {value!r} overflows float32 "
                                   f"(finite values lie within +-3.4028235e+38); write inf or "
                                   f"-inf for infinity")
        return value

    def _int64(self, node, what: str) -> int:
        """An integer that lands in a 64-bit register or encoding field."""
        value = self.eval.integer(node)
        if not INT64_MIN <= value <= INT64_MAX:
            raise self.error(node, f"{what} must fit a signed 64-bit integer "
                                   f"[{INT64_MIN}, {INT64_MAX}], got {_quote(value)}")
        return value

    def _tile_symbols(self):
        return {**self.tensors, **self.allocations}

    def _tile(self, definition, arg, node) -> Tile:
        """The tile ``node`` names, for argument ``arg``. A tile is a pure function of the
        operand's text and the argument's table entry (after pass 1), so each distinct
        (argument, text) is resolved once and then reused at its new place."""
        if not REUSE:
            return self._new_tile(definition, arg, node)
        location = location_of(self.source, node.meta)
        text = self.source.line(location.line)[location.column - 1:location.end_column - 1] \
            if location.end_column is not None else None
        known = self._tiles.get((id(arg), text)) if text is not None else None
        if known is not None:
            return _moved_value(known, location)
        tile = self._new_tile(definition, arg, node)
        if text is not None:
            self._tiles[(id(arg), text)] = tile
        return tile

    def _new_tile(self, definition, arg, node) -> Tile:
        if is_access_pattern(node):   # ap(NAME, [[step, count], ...], offset, dtype)
            return access_pattern(self, definition, arg, node)
        if node.data not in ("name", "indexed"):
            raise self.error(node, f"{definition.name} argument '{arg.name}' must be a tile, e.g. "
                                   f"x, x[0:128, 0:512] or ap(x, [[512, 128], [1, 512]])")
        name_tok = node.children[0]
        name = str(name_tok)
        symbols = self._tile_symbols()
        if name not in symbols:
            hint = _suggest(name, symbols)
            raise AsmError(f"unknown tile '{name}'{hint}", _token_loc(self.source, name_tok),
                           (f"declared tiles: {', '.join(symbols) or 'none'}",), symbol=name)
        symbol = symbols[name]
        slices = node.children[1:] if node.data == "indexed" else []
        tile = self._access(symbol, slices, node)
        if tile.compressed and arg.compressed != "yes":
            raise self.error(node, f"'{name}' is stored compressed, so {definition.name} cannot "
                                   f"use it as '{arg.name}'; only dma.decompress reads a "
                                   f"compressed tensor and only dma.compress writes one")
        if arg.compressed == "yes" and not tile.compressed:
            verb = "reads" if "r" in arg.access else "writes"
            raise self.error(node, f"{definition.name} {verb} compressed data, but '{name}' is "
                                   f"not declared compressed (add 'compressed' after its role in "
                                   f".hbm); use dma.copy for plain tensors")
        if tile.space not in arg.spaces:
            where = " or ".join(s.upper() for s in arg.spaces)
            hint = ("; bring it on chip with dma.copy first" if tile.space == "hbm"
                    else "")
            raise self.error(node, f"{definition.name} argument '{arg.name}' must be in {where}, "
                                   f"but '{name}' is in {tile.space.upper()}{hint}")
        return tile

    def _slice_step(self, node, partition_dim: bool) -> int:
        step = self.eval.affine(node)
        if not step.is_const or not _is_integer(step.const) or step.const < 1:
            raise self.error(node, "a slice step must be a positive integer constant")
        if partition_dim and step.const != 1:
            raise self.error(node, "the partition range cannot be strided: a tile spans "
                                   "consecutive partitions")
        return int(step.const)

    def _access(self, symbol, slices, node) -> Tile:
        if getattr(symbol, "compressed", False):
            return self._compressed_access(symbol, slices, node)
        on_chip = isinstance(symbol, Allocation)
        dims = symbol.shape
        if len(slices) > len(dims):
            raise self.error(node, f"'{symbol.name}' has {len(dims)} dims, got {len(slices)} indices")
        items = []
        for i, item in enumerate(slices):
            if item is None:
                items.append(None)
                continue
            step = 1
            if item.data == "slice":
                size = dims[i]
                lo = (self.eval.offset(item.children[0], "slice bounds")
                      if item.children[0] is not None else Affine(0))
                hi = (self.eval.offset(item.children[1], "slice bounds")
                      if item.children[1] is not None else Affine(size))
                if len(item.children) > 2 and item.children[2] is not None:
                    step = self._slice_step(item.children[2], on_chip and i == 0)
                width = hi + lo.scale(-1)
                if not width.is_const:
                    raise self.error(item, "a slice's size must be constant: start and stop need "
                                           "the same register terms (e.g. r0*64 : r0*64+64)")
                if width.const != int(width.const) or width.const <= 0:
                    raise self.error(item, f"empty or fractional slice (size {width.const})")
                count, start = -(-int(width.const) // step), lo
                if count == 1:
                    step = 1  # one element: the step never applies (and may be any size)
            else:
                start, count = self.eval.offset(item.children[0]), 1
            if start.is_const and start.const != int(start.const):
                raise self.error(item, "indices must be integers")
            regs = tuple(sorted((int(r), int(c)) for r, c in start.regs.items() if c))
            items.append((item.data if item.data == "slice" else "index", int(start.const), regs,
                          int(count), step, item))
        return self._view(symbol, items, node)

    def _view(self, symbol, items, node) -> Tile:
        """The tile of (uncompressed) ``symbol`` given per written dim as ``items``: (kind
        "slice" or "index", constant start, register terms ((register, coefficient), ...),
        count, step, where to report a problem), None for a whole dim; the dims not written
        are whole. (Operand text after evaluation, or an NKI view: asm/direct.py.)"""
        on_chip = isinstance(symbol, Allocation)
        dims = symbol.shape
        itemsize = dtypes.get(symbol.dtype).itemsize
        strides = [math.prod(dims[i + 1:]) * itemsize for i in range(len(dims))]
        if on_chip:
            strides[0] = 0  # partitions are rows, not bytes
        base = symbol.offset
        regs: dict[int, int] = {}
        kept = []  # (dim, stride, count)
        spec = []
        partition_start = 0
        for i, size in enumerate(dims):
            item = items[i] if i < len(items) else None
            if item is None:
                start, terms, count, step, keep, where = 0, (), size, 1, True, node
            else:
                kind, start, terms, count, step, where = item
                keep = kind == "slice" or on_chip and i == 0
                spec.append((kind, start, terms, count, step) if kind == "slice"
                            else (kind, start, terms))
            if not terms:
                if start < 0 or start + (count - 1) * step + 1 > size:
                    stop = start + (count - 1) * step + 1
                    raise self.error(where, f"index range {start}:{stop} is out of "
                                            f"bounds for dim {i} of '{symbol.name}' (size {size})")
            else:
                self._check_register_slice(where, symbol, i, count, step, start * strides[i])
            if on_chip and i == 0:
                if terms:
                    raise self.error(where, "the partition range must be constant (registers "
                                            "may offset free dims only)")
                partition_start = start
                kept.append((i, 0, count))
                continue
            base += start * strides[i]
            for r, c in terms:
                regs[r] = regs.get(r, 0) + c * strides[i]
            if keep:
                kept.append((i, strides[i] * step, count))
        if on_chip:
            partitions = kept[0][2]
            free = [(s, c) for _, s, c in kept[1:]]
            pitch = 0
        elif kept:
            partitions, pitch = kept[0][2], kept[0][1]
            free = [(s, c) for _, s, c in kept[1:]]
        else:
            partitions, pitch, free = 1, 0, []
        free = [(s, c) for s, c in free if c != 1] or free[-1:]
        # merge dims that are contiguous in memory, so at most MAX_FREE_DIMS remain
        merged: list[tuple[int, int]] = []
        for s, c in free:
            if merged and merged[-1][0] == s * c:
                merged[-1] = (s, merged[-1][1] * c)
            else:
                merged.append((s, c))
        if len(merged) > L.MAX_FREE_DIMS:
            raise self.error(node, f"access pattern needs {len(merged)} free dims; at most "
                                   f"{L.MAX_FREE_DIMS} are supported")
        regs = {r: c for r, c in regs.items() if c}
        if len(regs) > L.MAX_REG_TERMS:
            raise self.error(node, f"at most {L.MAX_REG_TERMS} registers may offset one tile")
        self._check_register_bytes(node, regs.values())
        if on_chip:
            window = (symbol.offset, symbol.offset + symbol.bytes_per_partition)
        else:
            window = (symbol.offset, symbol.offset + symbol.nbytes)
        space = symbol.space if on_chip else "hbm"
        return Tile(space, symbol.dtype, symbol.name, base, partition_start, partitions, pitch,
                    tuple(merged), tuple(sorted(regs.items())), window,
                    location_of(self.source, getattr(node, "meta", node)), tuple(spec))

    def _check_register_slice(self, item, symbol, dim: int, count: int, step: int,
                              offset: int) -> None:
        """A register-offset slice is bounds-checked at run time, but it can never be longer
        than its dim, and its constant byte offset is a 64-bit field."""
        extent = (count - 1) * step + 1
        if extent > symbol.shape[dim]:
            raise self.error(item, f"a slice spanning {_quote(extent)} elements cannot fit dim "
                                   f"{dim} of '{symbol.name}' (size {symbol.shape[dim]})")
        if not INT64_MIN <= offset <= INT64_MAX:
            raise self.error(item, f"the constant offset of this index ({_quote(offset)} bytes) "
                                   f"does not fit a signed 64-bit offset")

    def _check_register_bytes(self, node, coefficients) -> None:
        """A register's coefficient in bytes is a 64-bit field of the lowered operand."""
        for c in coefficients:
            if not INT64_MIN <= c <= INT64_MAX:
                raise self.error(node, f"a register coefficient of {_quote(c)} bytes does not fit "
                                       f"a signed 64-bit offset")

    def _compressed_access(self, symbol, slices, node) -> Tile:
        """A tile of a compressed tensor: a row range (registers may offset it) and a constant
        column range of whole blocks, so every block it touches is moved entirely
        (docs/dma.md)."""
        rows, columns = symbol.shape
        block = compression.BLOCK_ELEMENTS
        if len(slices) > 2:
            raise self.error(node, f"'{symbol.name}' has 2 dims, got {len(slices)} indices")
        starts, counts, spec = [], [], []
        for i, size in enumerate((rows, columns)):
            item = slices[i] if i < len(slices) else None
            if item is None:
                starts.append(Affine(0))
                counts.append(size)
                continue
            if item.data != "slice" or (len(item.children) > 2 and item.children[2] is not None):
                raise self.error(item, f"tiles of compressed '{symbol.name}' take unstrided "
                                       f"slices (start:stop) in both dims")
            lo = (self.eval.offset(item.children[0], "slice bounds")
                  if item.children[0] is not None else Affine(0))
            hi = (self.eval.offset(item.children[1], "slice bounds")
                  if item.children[1] is not None else Affine(size))
            width = hi + lo.scale(-1)
            if not width.is_const or width.const != int(width.const) or width.const <= 0:
                raise self.error(item, "a slice's size must be a positive constant")
            if i == 1 and not lo.is_const:
                raise self.error(item, f"the columns of compressed '{symbol.name}' must be "
                                       f"constant (registers may offset its rows)")
            first = int(lo.const)
            if lo.const != first or first < 0 or first + int(width.const) > size:
                raise self.error(item, f"slice {first}:{first + int(width.const)} is out of "
                                       f"bounds for dim {i} of '{symbol.name}' (size {size})")
            starts.append(lo)
            counts.append(int(width.const))
            regs_spec = tuple(sorted((int(r), int(c)) for r, c in lo.regs.items() if c))
            spec.append(("slice", first, regs_spec, int(width.const), 1))
        c0, c1 = int(starts[1].const), int(starts[1].const) + counts[1]
        if c0 % block or (c1 % block and c1 != columns):
            raise self.error(slices[1] if len(slices) > 1 else node,
                             f"columns {c0}:{c1} of compressed '{symbol.name}' cut a block: a "
                             f"tile covers whole blocks of {block} elements (start a multiple "
                             f"of {block}, stop a multiple of {block} or the row end {columns})")
        itemsize = dtypes.get(symbol.dtype).itemsize
        pitch = symbol.row_pitch
        base = (symbol.offset + int(starts[0].const) * pitch
                + (c0 // block) * compression.slot_bytes(itemsize))
        regs = tuple(sorted((int(r), int(c) * pitch) for r, c in starts[0].regs.items() if c))
        if len(regs) > L.MAX_REG_TERMS:
            raise self.error(node, f"at most {L.MAX_REG_TERMS} registers may offset one tile")
        self._check_register_bytes(node, (c for _, c in regs))
        return Tile("hbm", symbol.dtype, symbol.name, base, 0, counts[0], pitch,
                    ((itemsize, counts[1]),), regs, (symbol.offset, symbol.offset + symbol.nbytes),
                    location_of(self.source, node.meta), tuple(spec), compressed=True)


def broadcast_row(tile: Tile, declared) -> Tile | None:
    """``tile`` as one partition row, if it is one: a tile of one partition (``x[3:4, ...]``,
    an SBUF ``t[5]``, a ``[1, ...]`` tensor), or an HBM tile written as a single dim (a 1-D
    tensor, or a row picked by an integer index such as ``g[3]`` / ``g[3, 0:512]``: numpy
    broadcasting prepends the partition axis to it). None for anything else."""
    if tile.partitions == 1:
        return tile
    if tile.space != "hbm" or tile.compressed or tile.free_size != 1 or declared is None:
        return None
    if tile.free_dims_as_written(declared.shape) != ():
        return None   # written with free dims: a [P, 1] column, not a row
    # the one written dim was laid across partitions: make it the free dim of a single row
    return replace(tile, partitions=1, partition_pitch=0,
                   free_dims=((tile.partition_pitch, tile.partitions),))


def _broadcast_sources(definition: InstrDef, values: dict, symbols: dict) -> None:
    """Partition broadcast (docs/dma.md): a source argument the table marks ``broadcast`` that
    is one partition row whose free size equals the destination's, where the destination spans
    more partitions, is read by every destination partition (partition stride 0). Anything
    else is left for the shape checks to judge."""
    dst = next((values[a.name] for a in definition.args
                if "w" in a.access and isinstance(values.get(a.name), Tile)), None)
    if dst is None or dst.partitions <= 1:
        return
    for arg in definition.args:
        src = values.get(arg.name)
        if (not arg.broadcast or not isinstance(src, Tile)
                or (src.partitions, src.free_size) == (dst.partitions, dst.free_size)):
            continue   # the same shape is a plain copy, never a broadcast
        row = broadcast_row(src, symbols.get(src.symbol))
        if row is not None and row.free_size == dst.free_size:
            values[arg.name] = replace(row, partitions=dst.partitions, partition_pitch=0,
                                       broadcast=True)


def _declared_name(item) -> str | None:
    """The name a label, .const, .hbm, .sbuf or .psum line declares (None for others)."""
    children = getattr(item, "children", ())
    if item.data == "label":
        return str(children[0])
    if item.data != "directive" or str(children[0]) not in ("const", "hbm", "sbuf", "psum") \
            or len(children) < 2:
        return None
    first = children[1]
    if getattr(first, "data", None) in ("kwarg", "name"):
        return str(first.children[0])
    return None


def _moved(location: Location, line: int) -> Location:
    """``location`` on another line, same columns (built without the frozen dataclass's
    per-field ``__setattr__``: one is made per operand of every repeated line)."""
    moved = object.__new__(Location)
    fields = moved.__dict__
    fields.update(location.__dict__)
    fields["line"] = line
    return moved


def _moved_value(value, where: int | Location):
    """A Tile or Immediate written identically elsewhere: on another line (``where`` a line
    number, same columns) or at another location. The constructor's checks are not repeated
    (they depend on nothing the move changes)."""
    moved = object.__new__(type(value))
    fields = moved.__dict__
    fields.update(value.__dict__)
    fields["location"] = _moved(value.location, where) if isinstance(where, int) else where
    return moved


class Repeat:
    """A line identical to the earlier line of instruction ``origin``: its Instruction (the
    origin's, moved to this line) is made on first use; ``lower`` copies the origin's rows."""

    __slots__ = ("instructions", "line", "origin")

    def __init__(self, instructions: list, origin: int, line: int) -> None:
        self.instructions, self.origin, self.line = instructions, origin, line

    @property
    def definition(self):
        return self.instructions[self.origin].definition

    def build(self) -> Instruction:
        first = self.instructions[self.origin]
        if type(first) is not Instruction:
            first = self.instructions[self.origin] = first.build()
        located = [name for name, v in first.args.items() if isinstance(v, (Tile, Immediate))]
        return _moved_instruction(first, located, self.line)


def _moved_instruction(instruction: Instruction, located: list[str], line: int) -> Instruction:
    """``instruction`` as resolved from an identical line ``line``; ``located`` names its
    arguments that carry a location (tiles and immediates)."""
    args = dict(instruction.args)
    for name in located:
        args[name] = _moved_value(args[name], line)
    # the line's own text: an op identical to an earlier one came from another kernel line
    # (asm/direct.py), and its line names that one in its comment
    return Instruction(instruction.definition, args, _moved(instruction.location, line),
                       instruction.location.source.line(line).strip())


def _is_integer(value: float) -> bool:
    return isinstance(value, int) or value.is_integer()


def _quote(value: int) -> str:
    """An integer as a message shows it (a 39-digit value is shortened)."""
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}...{text[-4:]} ({len(text)} digits)"


def _is_dense(free_dims: tuple[tuple[int, int], ...], itemsize: int) -> bool:
    """True when pattern order is memory order with no gaps (row-major, innermost stride =
    itemsize), so the jitted loaders can move a partition's elements as one slice."""
    expected = itemsize
    for stride, count in reversed(free_dims):
        if count != 1 and stride != expected:
            return False
        expected *= count
    return True


def lower(program: Program, same_as: list[int] | None = None) -> None:
    """Fill ``program.instrs/ops/imms`` from the checked instructions.

    ``same_as[pc]`` (optional) names an earlier instruction with the same arguments (from an
    identical line): its rows are copied, with this line and its own operand and immediate
    indices, instead of being lowered again. A ``Made`` record carries the rows its plan made
    (asm/direct.py): (instruction row with operand and immediate indices from 0, ops rows,
    imms, operand index slots, immediate index slots)."""
    ops: list[list[int]] = []
    imms: list[float] = []
    rows = []
    isa = load_isa()
    engine_codes = isa.enums["engine"].values
    costs = isa.costs

    def operand(tile: Tile) -> int:
        row = [0] * L.OP_WIDTH
        dt = dtypes.get(tile.dtype)
        row[L.OP_SPACE] = L.SPACE_CODES[tile.space]
        row[L.OP_DTYPE] = dt.code
        row[L.OP_BASE] = tile.base
        on_chip = tile.space != "hbm"
        row[L.OP_PSTART] = tile.partition_start
        row[L.OP_PCOUNT] = tile.partitions
        # a broadcast source reads its one row for every partition: both steps 0
        row[L.OP_PROWSTEP] = 1 if on_chip and not tile.broadcast else 0
        row[L.OP_PCOLSTEP] = 0 if on_chip or tile.broadcast else tile.partition_pitch
        dims = list(tile.free_dims) or [(dt.itemsize, 1)]
        dims = [(0, 1)] * (L.MAX_FREE_DIMS - len(dims)) + dims
        row[L.OP_NDIM] = len(tile.free_dims) or 1
        for k, (s, c) in enumerate(dims):
            row[L.OP_STRIDE + k] = s
            row[L.OP_COUNT + k] = c
        row[L.OP_NREG] = len(tile.regs)
        for k, (r, c) in enumerate(tile.regs):
            row[L.OP_REG + 2 * k] = r
            row[L.OP_COEF + 2 * k] = c
        row[L.OP_LO], row[L.OP_HI] = tile.window
        row[L.OP_EXTENT] = tile.extent
        row[L.OP_SIZE] = tile.free_size
        row[L.OP_ITEMSIZE] = dt.itemsize
        row[L.OP_DENSE] = int(_is_dense(tile.free_dims, dt.itemsize))
        if tile.compressed:
            row[L.OP_DENSE] = 0
            row[L.OP_BLOCK] = compression.BLOCK_ELEMENTS
            row[L.OP_SLOT] = compression.slot_bytes(dt.itemsize)
        ops.append(array("q", row))
        return len(ops) - 1

    copies: dict[int, tuple] = {}   # pc -> (ops from, ops to, imms from, imms to, slots)
    # the pcs other lines copy (only their rows' places are remembered)
    reused = {o for pc, o in enumerate(same_as) if o != pc} if same_as is not None else set()
    for pc, ins in enumerate(program.raw_instructions()):
        origin = same_as[pc] if same_as is not None else pc
        if origin != pc:
            ops_from, ops_to, imms_from, imms_to, operand_slots, float_slots = copies[origin]
            row = rows[origin][:]
            kind = type(ins)
            row[L.I_LINE] = ins.op.line if kind is Made else ins.line if kind is Repeat \
                else ins.location.line
            moved_ops, moved_imms = len(ops) - ops_from, len(imms) - imms_from
            for slot in operand_slots:
                row[slot] += moved_ops
            for slot in float_slots:
                row[slot] += moved_imms
            ops.extend(ops[ops_from:ops_to])
            imms.extend(imms[imms_from:imms_to])
            rows.append(row)
            continue
        if type(ins) is Made:
            row, made_ops, made_imms, operand_slots, float_slots = ins.made
            ops_from, imms_from = len(ops), len(imms)
            for slot in operand_slots:
                row[slot] += ops_from
            for slot in float_slots:
                row[slot] += imms_from
            ops.extend(made_ops)
            imms.extend(made_imms)
            rows.append(row)
            if pc in reused:
                copies[pc] = (ops_from, len(ops), imms_from, len(imms), operand_slots,
                              float_slots)
            continue
        ops_from, imms_from = len(ops), len(imms)
        d = ins.definition
        row = [0] * L.INSTR_WIDTH
        row[L.I_OPCODE] = d.opcode
        row[L.I_ENGINE] = engine_codes[d.engine]
        row[L.I_LINE] = ins.location.line
        row[L.I_NARGS] = len(d.args)
        for k, arg in enumerate(d.args):
            value = ins.args[arg.name]
            slot = L.I_ARGS + 2 * k
            if value is None:
                tag, v = L.TAG_NONE, 0
            elif isinstance(value, Tile):
                tag, v = L.TAG_OPERAND, operand(value)
            elif isinstance(value, Immediate):
                imms.append(value.value)
                tag, v = L.TAG_FLOAT, len(imms) - 1
            elif arg.kind == "number":
                imms.append(float(value))
                tag, v = L.TAG_FLOAT, len(imms) - 1
            elif arg.kind == "int_list":  # the items, consecutive in imms (exact: small ints)
                tag, v = L.TAG_FLOAT, len(imms)
                imms.extend(float(item) for _, item in value)
            elif isinstance(value, tuple):
                kind, v = value
                tag = {"reg": L.TAG_REG, "int": L.TAG_INT, "label": L.TAG_LABEL}[kind]
            else:
                tag, v = L.TAG_INT, int(value)
            row[slot], row[slot + 1] = tag, v
            if tag == L.TAG_OPERAND:
                bits = (L.ACCESS_READ if "r" in arg.access else 0) | (
                    L.ACCESS_WRITE if "w" in arg.access else 0)
                row[L.I_ACCESS] |= bits << (2 * k)
                if arg.optional and "w" in arg.access:
                    row[L.I_EXTRA_OUTPUTS] += 1
        row[L.I_COST] = costs[d.cost_class].code
        row[L.I_TRACK] = engine_codes[d.engine]
        if d.engine in ("dma", "cc"):
            queue = ins.args.get("queue")
            row[L.I_TRACK] = L.DMA_TRACK0 + (int(queue) if queue is not None else 0)
            if ins.args.get("dge") == isa.enums["dge"].values["hw"]:
                row[L.I_FLAGS] |= L.DMA_HWDGE
            if ins.args.get("oob") == isa.enums["oob_mode"].values["skip"]:
                row[L.I_FLAGS] |= L.DMA_OOB_SKIP
        if d.name == "vector.tensor_copy" and ins.args.get("compiler_engine"):
            row[L.I_FLAGS] |= L.COMPILER_ENGINE
        if d.engine == "tensor":
            row[L.I_FLAGS] |= _tensor_flags(ins.args, program.target, isa)
            # NeuronCore-v2 transposes through a plain matmul with an identity (nc_transpose)
            if d.name == "tensor.transpose" and not program.target.pe_transpose_mode:
                row[L.I_FLAGS] |= L.PE_TRANSPOSE_MATMUL
        if d.engine == "sync":
            # a barrier belongs to every track: ALL_TRACKS, expanded by the explicit replay
            track = ins.args.get("track")
            row[L.I_TRACK] = int(track) if track is not None else L.ALL_TRACKS
        row = array("q", row)
        rows.append(row)
        if pc in reused:
            slots = range(L.I_ARGS, L.I_ARGS + 2 * len(d.args), 2)
            copies[pc] = (ops_from, len(ops), imms_from, len(imms),
                          [k + 1 for k in slots if row[k] == L.TAG_OPERAND],
                          [k + 1 for k in slots if row[k] == L.TAG_FLOAT])
    # every row is an array('q') (int64, as the plans of asm/direct make them too): the
    # arrays are their bytes joined, with no Python int converted one by one
    program.instrs = np.frombuffer(bytearray(b"".join(rows)), np.int64).reshape(
        -1, L.INSTR_WIDTH)
    program.ops = np.frombuffer(bytearray(b"".join(ops)), np.int64).reshape(-1, L.OP_WIDTH)
    program.imms = np.array(imms + [0.0], dtype=np.float64)


def assemble(text: str, filename: str = "<string>", target: str | None = None) -> Program:
    """Assemble source text into a checked, lowered ``Program`` (raises ``AsmError``)."""
    from neuronemu.asm import macros
    from neuronemu.asm.parser import parse

    source = SourceFile(filename, text)
    collector = Collector()
    with no_cyclic_collection():
        # .rept / .macro: expanded as text before parsing (None: the file uses neither)
        expanded = macros.expand(source, collector)
        work = source if expanded is None else expanded.source
        try:
            tree = parse(work, share=REUSE, collector=collector, templates=PLANS)
            program = Assembler(work, target, load_isa(), collector).assemble(tree)
        except AsmError as e:
            if expanded is not None:
                expanded.relocate_errors(e)
            raise
        if expanded is not None:
            expanded.relocate_program(program)
        return program


@contextlib.contextmanager
def no_cyclic_collection():
    """The cyclic garbage collector off for the block (as it was after). Assembling (and
    tracing an NKI kernel) makes millions of small acyclic objects (tree nodes, tokens, rows,
    tiles, instructions) that stay alive until it ends; the collector would traverse all of
    them again and again (it tripled the time of a 16,000-line kernel) and free none."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


MAX_CORES = 8


def logical_core(target, cores: int):
    """``target`` as a logical core of ``cores`` cores' on-chip memories side by side (an
    SPMD launch whose programs each have a core of their own on the hardware, traced onto one
    core: core k's SBUF and PSUM bytes follow core k - 1's); its engines are one core's.
    ``target.cores`` is the count and ``core_*`` the one core's sizes (``target`` itself
    for one core)."""
    from neuronemu.isa.table import Target

    if cores == 1:
        return target
    data = dict(target.data)
    data["core_sbuf_partition_bytes"] = target.sbuf_partition_bytes
    data["core_psum_partition_bytes"] = target.psum_partition_bytes
    data["cores"] = cores
    data["sbuf_partition_bytes"] = target.sbuf_partition_bytes * cores
    data["psum_partition_bytes"] = target.psum_partition_bytes * cores
    return Target(target.name, data)


def assemble_ops(header: str, ops: list[Op], filename: str, target: str | None,
                 render) -> Program:
    """Assemble the declarations ``header`` (assembly text) and ``ops``, instructions given as
    values (asm/direct.py; their lines follow the header's: ``Op.line``), into a checked,
    lowered ``Program``. ``render(op)`` is an op's line of the generated text, written only
    when a diagnostic, a user or the debugger asks for it."""
    from neuronemu.asm.parser import parse

    source = GeneratedSource(filename, header, ops, render)
    collector = Collector()
    with no_cyclic_collection():
        tree = parse(source.header, share=REUSE, collector=collector, templates=PLANS)
        return Assembler(source, target, load_isa(), collector).assemble(tree, ops)


def _tensor_flags(args, target, isa) -> int:
    """I_FLAGS of a Tensor engine instruction: its modes as this target runs them, and the PE
    blocks it occupies."""
    flags = _pe_blocks(args) << L.PE_BLOCKS_SHIFT
    if args.get("perf_mode") == isa.enums["matmul_perf_mode"].values["double_row"]:
        flags |= L.MATMUL_DOUBLE_ROW
    # NeuronCore-v2 has no transpose mode: the flag only labels an ordinary matmul
    transpose_mode = bool(args.get("is_transpose")) and target.pe_transpose_mode
    if transpose_mode:
        flags |= L.MATMUL_TRANSPOSE
    if transpose_mode or args.get("is_stationary_onezero") or args.get("is_moving_onezero"):
        flags |= L.MATMUL_FP32_HALF
    return flags


def _pe_blocks(args) -> int:
    """Bit r * 4 + c for every 32 x 32 block (r, c) of the PE array the matmul occupies."""
    tile = pe_tile(args)
    if tile is None:
        return 0xFFFF
    start_row, start_col, rows, cols = tile
    mask = 0
    for r in range(start_row // 32, (start_row + rows) // 32):
        for c in range(start_col // 32, (start_col + cols) // 32):
            mask |= 1 << (r * 4 + c)
    return mask
