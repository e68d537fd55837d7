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

ENGINE_FILES = ("tensor", "vector", "scalar", "gpsimd", "dma", "sync", "ctrl", "cc")

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
_ARG_KEYS = {"name", "kind", "space", "access", "keyword", "default", "optional", "enum", "doc",
             "range", "compressed", "length", "broadcast"}
_INSTR_KEYS = {"opcode", "nki", "summary", "semantics", "cost_class", "example", "args", "checks",
               "targets", "setup", "teardown"}


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
    targets: tuple[str, ...] | None = None
    origin: str = ""
    # declarations and instructions that make ``example`` runnable; the example may branch to
    # the label ``end``, which the runner places after it (tests/test_isa_table.py runs them all)
    setup: str = ""
    # instructions that must follow the example (e.g. the cc.recv that takes a cc.send's message)
    teardown: str = ""

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
_COST_KEYS = {"formula", "per_element", "fast_per_element", "min_ii", "fixed", "extra_output",
              "latency", "stationary_load",
              "fp32_factor", "efficiency", "sbuf_efficiency", "indexed", "source"}


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
    unknown = set(raw) - _ARG_KEYS
    if unknown:
        _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_ARG_KEYS)}")
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
                  broadcast=bool(raw.get("broadcast", False)))


def _parse_instr(engine: str, mnemonic: str, raw: dict, origin: str,
                 enums: dict[str, EnumDef]) -> InstrDef:
    unknown = set(raw) - _INSTR_KEYS
    if unknown:
        _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_INSTR_KEYS)}")
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
    targets = raw.get("targets")
    return InstrDef(engine=engine, mnemonic=mnemonic, opcode=int(raw["opcode"]),
                    summary=raw["summary"], semantics=raw["semantics"],
                    cost_class=raw["cost_class"], example=raw["example"], args=args,
                    checks=tuple(checks), nki=raw.get("nki"),
                    targets=tuple(targets) if targets else None, origin=origin,
                    setup=raw.get("setup", "").strip(),
                    teardown=raw.get("teardown", "").strip())


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
    costs = _parse_costs(read_toml(root / "costs.toml"))
    for instr in instructions.values():
        if instr.cost_class not in costs:
            _fail(instr.origin, f"cost_class '{instr.cost_class}' is not in isa/costs.toml "
                                f"(classes: {', '.join(sorted(costs))})")
    return ISA(instructions=instructions, enums=enums, targets=targets, costs=costs)


def _parse_costs(raw: dict) -> dict[str, CostClass]:
    costs = {}
    for code, (name, fields) in enumerate(sorted(raw.items())):
        origin = f"isa/costs.toml: [{name}]"
        unknown = set(fields) - _COST_KEYS
        if unknown:
            _fail(origin, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_COST_KEYS)}")
        if fields.get("formula") not in COST_FORMULAS:
            _fail(origin, f"formula must be one of {', '.join(COST_FORMULAS)}")
        if not fields.get("source"):
            _fail(origin, "every cost class names its source")
        costs[name] = CostClass(name=name, code=code, **fields)
    return costs
