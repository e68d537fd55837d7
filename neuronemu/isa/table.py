"""Load and validate the instruction tables (``isa/<engine>.toml``), enums and targets.

The loader is also a linter (the riscv-opcodes lesson): unknown keys, duplicate opcodes, checks
naming undeclared arguments, unknown enums or rules are reported as
``isa/vector.toml: [tensor_tensor].args[2]: message`` instead of surfacing later as odd behaviour.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from neuronemu.isa.resources import isa_dir, read_toml

# The instruction tables, in the order their entries are loaded (docs and the fuzz strategies
# follow it); every other file of isa/ is one of DATA_FILES, so a new table cannot be missed.
ENGINE_FILES = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync", "ctrl", "cc")
DATA_FILES = {
    "enums.toml": "named codes: engines, ALU operators, activation functions, ...",
    "dtypes.toml": "the dtypes: storage format, rounding, NaN and overflow behaviour",
    "costs.toml": "cost classes: how long an instruction occupies its engine",
    "targets.toml": "per target (trn1, trn2, trn3): memories, clocks, dtypes, DMA rates",
    "topologies.toml": "multi-chip systems: chips, links, layouts",
    "grammar.lark": "the shape of an assembly line (adding an instruction does not touch it)",
    "README.md": "this file",
}

ARG_KINDS = {
    "tile": "a memory tile (named allocation or HBM tensor, optionally sliced)",
    "scalar": "an fp32 immediate or a [P, 1] tile broadcast along the free axis",
    "number": "an fp32 immediate",
    "int": "an integer immediate",
    "bool": "true or false",
    "enum": "one name of an enum table (isa/enums.toml)",
    "reg": "a register r0..r63",
    "reg_or_int": "a register or an integer immediate",
    "label": "a label defined in the same file",
    "int_list": "a bracketed list of integers, e.g. [1, 0, 3, 2]",
}
SPACES = ("hbm", "sbuf", "psum")
# At most this many arguments per instruction: the lowered instruction row (machine/layout.py)
# has a (tag, value) slot pair for each.
MAX_ARGS = 14
# The keys of the tables, each with what it means: the loader accepts exactly these, and
# isa/README.md (the format spec the tables point to) is generated from them by
# tools/gen_isa.py, so the spec and the loader cannot disagree.
INSTR_KEYS = {
    "opcode": "required. The binary opcode, unique in the ISA; its high byte is the engine's "
              "code in isa/enums.toml [engine] (0x05xx: Vector).",
    "summary": "required. One sentence, ending in a full stop: what the instruction computes.",
    "semantics": "required. `module.function` of neuronemu/semantics/ that executes it; "
                 "entries may share a function, and then share its argument order.",
    "cost_class": "required. A class of isa/costs.toml: how long it occupies its engine.",
    "example": "required. One line of assembly using it; tests run it on every target and "
               "round-trip it through the binary encoding.",
    "args": "required. The argument list, in operand order (keys below): the order is the "
            "lowered instruction row's, which the semantics function reads.",
    "checks": "Rules (below) the assembler applies, one `rule arg ...` string each.",
    "nki": "The NKI function it implements (`nki.isa.tensor_tensor`).",
    "nki_args": "An inline table from NKI's argument names, in NKI's order, to the table's "
                "(`{ dst = \"dst\", src_buffer = \"data\" }`), where NKI's names or order "
                "differ.",
    "nki_accepts": "An inline table of NKI arguments with no operand here and the values "
                   "accepted for them, space-separated (`{ pipe_id = \"*\" }`: any value).",
    "nki_default": "true: the entry an NKI call uses when it gives no `engine=` (several "
                   "entries may share an `nki` name).",
    "targets": "The targets that have it (isa/targets.toml names); all when absent.",
    "setup": "Declarations and instructions that make `example` runnable; the example may "
             "branch to the label `end`, placed after it.",
    "teardown": "Instructions that must follow the example (the cc.recv taking a cc.send's "
                "message).",
    "packed": "How it treats x4 (MX-packed) tiles: `use` reads them as packed values, "
              "`fill` zero-fills them (value=0), `copy` moves their bytes unchanged (same dtype "
              "on both sides). Absent: an x4 tile operand is an error.",
    "driver": "cc.* only: `p2p` or `collective`, how the multi-chip driver carries it out (a "
              "collective waits until every rank stands at one).",
    "sync": "sync.* only: `wait`, `signal` or `barrier`, what the explicit-sync replay does.",
    "copy_source": "The argument whose element i the destination's element i is (a copy): the "
                   "lab grader follows a byte's chain of writers through it.",
}
ARG_KEYS = {
    "name": "required. The operand's name (`dst`, `op`), as checks and keywords say it.",
    "kind": "required. One of the argument kinds below.",
    "space": "tile and scalar: the memories it may be in, `|`-separated (hbm, sbuf, psum); "
             "default `sbuf|psum`.",
    "access": "`r`, `w` or `rw`: how the instruction uses a tile (timing and race checks).",
    "keyword": "true: written `name=value`; keyword arguments follow positional ones.",
    "default": "The value when the argument is left out (an enum's value by name).",
    "optional": "true: may be left out without a default.",
    "enum": "enum only: the table of isa/enums.toml it names a value of.",
    "doc": "What the argument means; every non-tile argument has one.",
    "range": "int: `[low, high]`, the values allowed.",
    "compressed": "`yes`: the tile must belong to a compressed HBM tensor; `no` (default): it "
                  "must not.",
    "length": "int_list: the number of items.",
    "broadcast": "true: a read tile (a DMA source) of one partition whose free size equals "
                 "the written operand's is read by every partition of it.",
    "timing": "true: a keyword only the timing model reads, after every other argument (the "
              "semantics function never reads it; entries sharing one need not declare it).",
}


class TableError(ValueError):
    """An inconsistency in the ISA tables themselves (a maintainer's error, not a user's)."""


@dataclass(frozen=True)
class ArgDef:
    name: str
    kind: str
    spaces: tuple[str, ...] = ()
    access: str = "r"
    keyword: bool = False
    default: object = None
    optional: bool = False
    enum: str | None = None
    doc: str = ""
    range: tuple[int, int] | None = None
    # "yes": the tile must belong to a compressed HBM tensor; "no" (default): it must not
    compressed: str = "no"
    length: int = 0                 # int_list: the number of items
    # a DMA source that may be broadcast across partitions: a one-partition tile whose free
    # size equals the written operand's is read by every partition of it (docs/dma.md)
    broadcast: bool = False
    # read by the timing model only (a trailing keyword the semantics function never reads):
    # entries sharing a semantics function need not declare it
    timing: bool = False

    @property
    def required(self) -> bool:
        return self.default is None and not self.optional


@dataclass(frozen=True)
class Check:
    rule: str
    args: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class InstrDef:
    engine: str
    mnemonic: str
    opcode: int
    summary: str
    semantics: str
    cost_class: str
    example: str
    args: tuple[ArgDef, ...]
    checks: tuple[Check, ...]
    nki: str | None = None
    # NKI's argument names in NKI's positional order -> the table argument each feeds (absent:
    # NKI's arguments are the table's, in the table's order)
    nki_args: tuple[tuple[str, str], ...] = ()
    # NKI arguments with no operand here, accepted at these values only ("*": any value)
    nki_accepts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the entry an NKI call without engine= uses among those sharing its nki name
    nki_default: bool = False
    targets: tuple[str, ...] | None = None
    origin: str = ""
    # declarations and instructions that make ``example`` runnable; the example may branch to
    # the label ``end``, which the runner places after it (tests/test_isa_table.py runs them all)
    setup: str = ""
    # instructions that must follow the example (e.g. the cc.recv that takes a cc.send's message)
    teardown: str = ""
    packed: str | None = None        # x4 tiles: "use", "fill" or "copy" (INSTR_KEYS says how)
    driver: str | None = None        # cc.*: "p2p" or "collective"
    sync: str | None = None          # sync.*: "wait", "signal" or "barrier"
    copy_source: str | None = None   # the argument a copy's destination element i comes from

    @property
    def example_program(self) -> str:
        """Setup, example and teardown as one runnable source (ends with the label ``end``)."""
        parts = [self.setup, self.example, self.teardown, "end:"]
        return "\n".join(p for p in parts if p) + "\n"

    @property
    def name(self) -> str:
        return f"{self.engine}.{self.mnemonic}"

    def arg(self, name: str) -> ArgDef:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def syntax(self) -> str:
        parts = []
        for a in self.args:
            text = f"{a.name}=<{a.kind if a.kind != 'enum' else a.enum}>" if a.keyword else a.name
            parts.append(text if a.required else f"[{text}]")
        return f"{self.name} {', '.join(parts)}".rstrip()


@dataclass(frozen=True)
class EnumDef:
    name: str
    summary: str
    values: dict[str, int]

    def name_of(self, code: int) -> str:
        for k, v in self.values.items():
            if v == code:
                return k
        raise KeyError(code)


@dataclass(frozen=True)
class Target:
    name: str
    data: dict = field(repr=False)

    def __getattr__(self, key: str):
        try:
            return self.data[key]
        except KeyError:
            raise AttributeError(key) from None


COST_FORMULAS = ("free", "stream", "two_input", "matmul", "transpose", "dma", "network")
COST_KEYS = {
    "formula": "required. One of the formulas below (isa/costs.toml's comments give each).",
    "source": "required. Where the numbers come from.",
    "per_element": "Cycles per free element (stream, two_input).",
    "fast_per_element": "two_input: cycles per element on the fast path.",
    "min_ii": "The fewest cycles an instruction occupies the engine.",
    "fixed": "Cycles added to every instruction of the class.",
    "extra_output": "Cycles per optional output given.",
    "fp32_factor": "matmul: the factor for float32 operands.",
    "efficiency": "dma: fraction of engine bandwidth when reading HBM.",
    "sbuf_efficiency": "dma: the same when reading SBUF.",
    "indexed": "dma: 1 when an index tile picks the rows of an HBM table.",
    "latency": "Cycles after the issue interval until a result is readable.",
    "stationary_load": "matmul: LoadStationary cycles per stationary column when the PE "
                       "array idled before the instruction.",
}


@dataclass(frozen=True)
class CostClass:
    """One row of isa/costs.toml (see the comments there for what each number means)."""

    name: str
    code: int
    formula: str
    source: str
    per_element: float = 0.0
    fast_per_element: float = 0.0
    min_ii: float = 0.0
    fixed: float = 0.0
    extra_output: float = 0.0
    fp32_factor: float = 1.0
    efficiency: float = 1.0         # dma: fraction of engine bandwidth when reading HBM
    sbuf_efficiency: float = 1.0    # dma: the same when reading SBUF
    indexed: float = 0.0            # dma: 1 when an index tile picks the rows of an HBM table
    latency: float = 0.0            # cycles after the issue interval until a result is readable
    stationary_load: float = 0.0    # matmul: LoadStationary cycles per stationary column, when
                                    # the PE array idled before the instruction (not hidden)


@dataclass(frozen=True)
class ISA:
    instructions: dict[str, InstrDef]
    enums: dict[str, EnumDef]
    targets: dict[str, Target]
    costs: dict[str, CostClass] = field(default_factory=dict)

    def engines(self) -> list[str]:
        return sorted({i.engine for i in self.instructions.values()})


def _fail(origin: str, message: str):
    raise TableError(f"{origin}: {message}")


def _parse_arg(origin: str, raw: dict, enums: dict[str, EnumDef]) -> ArgDef:
    unknown = set(raw) - ARG_KEYS.keys()
    if unknown:
        _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(ARG_KEYS)}")
    if "name" not in raw or "kind" not in raw:
        _fail(origin, "every argument needs 'name' and 'kind'")
    kind = raw["kind"]
    if kind not in ARG_KINDS:
        _fail(origin, f"kind '{kind}' is not one of {sorted(ARG_KINDS)}")
    spaces: tuple[str, ...] = ()
    if kind in ("tile", "scalar"):
        spaces = tuple(raw.get("space", "sbuf|psum").split("|"))
        for s in spaces:
            if s not in SPACES:
                _fail(origin, f"space '{s}' is not one of {list(SPACES)}")
    elif "space" in raw:
        _fail(origin, f"'space' only applies to tile/scalar arguments, not {kind}")
    if kind == "enum":
        if raw.get("enum") not in enums:
            _fail(origin, f"enum '{raw.get('enum')}' is not a table of isa/enums.toml")
        default = raw.get("default")
        if default is not None and default not in enums[raw["enum"]].values:
            _fail(origin, f"default '{default}' is not a value of enum {raw['enum']}")
    access = raw.get("access", "r")
    if access not in ("r", "w", "rw"):
        _fail(origin, f"access must be r, w or rw, not {access!r}")
    rng = raw.get("range")
    if raw.get("compressed", "no") not in ("yes", "no"):
        _fail(origin, "compressed must be \"yes\" or \"no\"")
    if raw.get("broadcast", False) and (kind != "tile" or access != "r"):
        _fail(origin, "only a read tile argument (a DMA source) may broadcast")
    return ArgDef(compressed=raw.get("compressed", "no"), length=int(raw.get("length", 0)), name=raw["name"], kind=kind, spaces=spaces, access=access,
                  keyword=bool(raw.get("keyword", False)), default=raw.get("default"),
                  optional=bool(raw.get("optional", False)), enum=raw.get("enum"),
                  doc=raw.get("doc", ""), range=tuple(rng) if rng else None,
                  broadcast=bool(raw.get("broadcast", False)),
                  timing=bool(raw.get("timing", False)))


def _parse_instr(engine: str, mnemonic: str, raw: dict, origin: str,
                 enums: dict[str, EnumDef]) -> InstrDef:
    unknown = set(raw) - INSTR_KEYS.keys()
    if unknown:
        _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(INSTR_KEYS)}")
    for key in ("opcode", "summary", "semantics", "cost_class", "example", "args"):
        if key not in raw:
            _fail(origin, f"missing required key '{key}'")
    args = tuple(_parse_arg(f"{origin}.args[{i}]", a, enums) for i, a in enumerate(raw["args"]))
    names = [a.name for a in args]
    if len(args) > MAX_ARGS:
        _fail(origin, f"{len(args)} arguments; the lowered instruction row holds {MAX_ARGS} "
                      f"(neuronemu/isa/table.py MAX_ARGS)")
    if len(set(names)) != len(names):
        _fail(origin, f"duplicate argument names in {names}")
    seen_keyword = False
    for a in args:
        if a.keyword:
            seen_keyword = True
        elif seen_keyword:
            _fail(origin, f"positional argument '{a.name}' follows a keyword argument")
    checks = []
    for i, text in enumerate(raw.get("checks", [])):
        words = text.split()
        if not words:
            _fail(f"{origin}.checks[{i}]", "an empty check")
        # that the rule exists is checked by neuronemu.asm.checks.require_known_rules, which
        # owns the rules (the tables are a layer below the assembler)
        for w in words[1:]:
            if w[0].isalpha() and w not in names and not _is_dtype_word(w):
                _fail(f"{origin}.checks[{i}]", f"'{w}' is not an argument of {engine}.{mnemonic}")
        checks.append(Check(words[0], tuple(words[1:]), text))
    for key, allowed in _CHOICES.items():
        if key in raw and raw[key] not in allowed:
            _fail(origin, f"{key} must be one of {', '.join(allowed)}, not {raw[key]!r}")
    if "copy_source" in raw and raw["copy_source"] not in names:
        _fail(origin, f"copy_source '{raw['copy_source']}' is not an argument of "
                      f"{engine}.{mnemonic}")
    if (raw["opcode"] >> 8) != enums["engine"].values.get(engine, -1):
        _fail(origin, f"opcode {raw['opcode']:#06x}: the high byte must be the engine's code in "
                      f"isa/enums.toml [engine] ({engine} = {enums['engine'].values.get(engine)})")
    targets = raw.get("targets")
    nki_args = raw.get("nki_args", {})
    for nki_name, table_name in nki_args.items():
        if table_name not in names:
            _fail(origin, f"nki_args: {nki_name} = '{table_name}' is not an argument")
    nki_accepts = {k: tuple(str(v).split()) for k, v in raw.get("nki_accepts", {}).items()}
    if (nki_args or nki_accepts or "nki_default" in raw) and not raw.get("nki"):
        _fail(origin, "nki_args / nki_accepts / nki_default need an nki name")
    return InstrDef(nki_args=tuple(nki_args.items()), nki_accepts=tuple(nki_accepts.items()),
                    nki_default=bool(raw.get("nki_default", False)),
                    engine=engine, mnemonic=mnemonic, opcode=int(raw["opcode"]),
                    summary=raw["summary"], semantics=raw["semantics"],
                    cost_class=raw["cost_class"], example=raw["example"], args=args,
                    checks=tuple(checks), nki=raw.get("nki"),
                    targets=tuple(targets) if targets else None, origin=origin,
                    setup=raw.get("setup", "").strip(),
                    teardown=raw.get("teardown", "").strip(), packed=raw.get("packed"),
                    driver=raw.get("driver"), sync=raw.get("sync"),
                    copy_source=raw.get("copy_source"))


# the values of the instruction keys that name a policy
_CHOICES = {"packed": ("use", "fill", "copy"), "driver": ("p2p", "collective"),
            "sync": ("wait", "signal", "barrier")}


def _is_dtype_word(word: str) -> bool:
    from neuronemu.isa import dtypes

    return word in dtypes.names()


def _parse_enums(raw: dict) -> dict[str, EnumDef]:
    enums = {}
    for name, table in raw.items():
        values = {k: v for k, v in table.items() if k != "summary"}
        if len(set(values.values())) != len(values):
            _fail(f"isa/enums.toml: [{name}]", "two names share one code")
        enums[name] = EnumDef(name, table.get("summary", ""), values)
    return enums


@functools.cache
def load_isa(directory: str | None = None) -> ISA:
    """Read every table of the ISA directory (default: the bundled one) and validate it."""
    root = Path(directory) if directory else isa_dir()
    stray = sorted(p.name for p in root.iterdir() if p.is_file() and p.suffix in (".toml", ".md",
                                                                                 ".lark")
                   and p.stem not in ENGINE_FILES and p.name not in DATA_FILES)
    if stray:
        _fail(f"isa/{stray[0]}", f"neither an engine table ({', '.join(ENGINE_FILES)}) nor one "
                                 f"of {', '.join(DATA_FILES)}: add it to ENGINE_FILES or "
                                 f"DATA_FILES (neuronemu/isa/table.py)")
    enums = _parse_enums(read_toml(root / "enums.toml"))
    targets = {name: Target(name, data) for name, data in read_toml(root / "targets.toml").items()}
    instructions: dict[str, InstrDef] = {}
    opcodes: dict[int, str] = {}
    for engine in ENGINE_FILES:
        path = root / f"{engine}.toml"
        for mnemonic, raw in read_toml(path).items():
            origin = f"isa/{engine}.toml: [{mnemonic}]"
            instr = _parse_instr(engine, mnemonic, raw, origin, enums)
            if instr.opcode in opcodes:
                _fail(origin, f"opcode {instr.opcode:#06x} already used by {opcodes[instr.opcode]}")
            if instr.targets:
                for t in instr.targets:
                    if t not in targets:
                        _fail(origin, f"target '{t}' is not in isa/targets.toml")
            opcodes[instr.opcode] = instr.name
            instructions[instr.name] = instr
    _check_shared_semantics(instructions)
    costs = _parse_costs(read_toml(root / "costs.toml"))
    for instr in instructions.values():
        if instr.cost_class not in costs:
            _fail(instr.origin, f"cost_class '{instr.cost_class}' is not in isa/costs.toml "
                                f"(classes: {', '.join(sorted(costs))})")
    return ISA(instructions=instructions, enums=enums, targets=targets, costs=costs)


def argument_sets(instructions: dict[str, InstrDef]) -> dict[str, tuple[ArgDef, ...]]:
    """The arguments of each semantics function, in slot order (the order of its entries'
    ``args``): the compiled function reads an argument by its slot, through the names
    tools/gen_isa.py generates from this (neuronemu/isa/args/)."""
    sets: dict[str, tuple[ArgDef, ...]] = {}
    for instr in instructions.values():   # (timing arguments are not the function's)
        sets.setdefault(instr.semantics, tuple(a for a in instr.args if not a.timing))
    return sets


def _check_shared_semantics(instructions: dict[str, InstrDef]) -> None:
    """Entries naming one semantics function must declare the same argument names and kinds in
    the same order: the compiled function reads slot k as one argument for all of them, so a
    reordered argument in one table would otherwise be a silent change of meaning."""
    first: dict[str, InstrDef] = {}
    for instr in instructions.values():
        timing = [k for k, a in enumerate(instr.args) if a.timing]
        if timing and timing != list(range(len(instr.args) - len(timing), len(instr.args))):
            _fail(instr.origin, f"'{instr.args[timing[0]].name}' is a timing argument: it comes "
                                f"after every other argument")
        other = first.setdefault(instr.semantics, instr)
        mine = [(a.name, a.kind) for a in instr.args if not a.timing]
        theirs = [(a.name, a.kind) for a in other.args if not a.timing]
        if mine == theirs:
            continue
        k = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b),
                 min(len(mine), len(theirs)))
        what = (f"argument {k} is {_slot_text(mine, k)} here but {_slot_text(theirs, k)} in "
                f"{other.origin}")
        _fail(instr.origin, f"shares semantics '{instr.semantics}' with {other.origin}, whose "
                            f"arguments differ ({what}); the compiled function reads arguments by "
                            f"position, so every entry sharing it must declare the same names "
                            f"and kinds in the same order: "
                            f"{', '.join(f'{n} ({kind})' for n, kind in theirs)}")


def _slot_text(args: list[tuple[str, str]], k: int) -> str:
    return f"'{args[k][0]}' ({args[k][1]})" if k < len(args) else "missing"


def _parse_costs(raw: dict) -> dict[str, CostClass]:
    costs = {}
    for code, (name, fields) in enumerate(sorted(raw.items())):
        origin = f"isa/costs.toml: [{name}]"
        unknown = set(fields) - COST_KEYS.keys()
        if unknown:
            _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(COST_KEYS)}")
        if fields.get("formula") not in COST_FORMULAS:
            _fail(origin, f"formula must be one of {', '.join(COST_FORMULAS)}")
        if not fields.get("source"):
            _fail(origin, "every cost class names its source")
        costs[name] = CostClass(name=name, code=code, **fields)
    return costs
