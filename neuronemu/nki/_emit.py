"""Table-driven ``nki.isa`` calls: an entry of ``isa/*.toml`` with ``nki = "nki.isa.NAME"``
makes ``nisa.NAME`` exist.

One generic lowering binds an NKI call's arguments to the entry's arguments (``InstrDef.args``,
renamed by the entry's ``nki_args`` where NKI's names differ), turns each value into assembly
text by the argument's kind (tile, scalar, number, int, bool, enum, register, int list) and
appends the instruction. Entries sharing an nki name are told apart by ``engine=`` (the entry
marked ``nki_default`` when it is not given) and by the target. NKI arguments the instruction
has no operand for are accepted at the values ``nki_accepts`` lists; ``name=`` (scheduling
names) and ``priority=`` (DMA QoS) are accepted and ignored. Hand-written lowerings in
``isa.py`` remain only where a call does more than fill one instruction's operands (PSUM
accumulation, NKI patterns, list arguments, registers).
"""

from __future__ import annotations

import functools

from neuronemu.isa.table import ArgDef, InstrDef, load_isa
from neuronemu.nki import _indirection
from neuronemu.nki._operands import (
    act_name,
    alu_name,
    bool_text,
    mark_written,
    number,
    onchip,
    reduce_name,
    scalar_operand,
    tile_arg,
)
from neuronemu.nki._trace import NkiTensor, fail, tracer

IGNORED = ("name", "priority")
"""NKI arguments every call takes that change nothing neuronemu models."""

_ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma", "ctrl", "cc", "sync")


@functools.cache
def isa_entries() -> dict[str, tuple[InstrDef, ...]]:
    """nki.isa short name -> the table entries implementing it, the default one first."""
    out: dict[str, list[InstrDef]] = {}
    for d in load_isa().instructions.values():
        if d.nki and d.nki.startswith("nki.isa."):
            out.setdefault(d.nki[len("nki.isa."):], []).append(d)
    return {name: tuple(sorted(defs, key=lambda d: (not d.nki_default, _ENGINES.index(d.engine))))
            for name, defs in out.items()}


def signature(d: InstrDef) -> tuple[tuple[str, str], ...]:
    """(NKI argument name, table argument name) in NKI's positional order."""
    if d.nki_args:
        return d.nki_args
    return tuple((a.name, a.name) for a in d.args if a.name != "queue")


_DEFAULTS: dict[tuple[str, str], InstrDef] = {}   # (name, target) -> entry without engine=


def choose(name: str, engine=None) -> InstrDef:
    """The entry of ``nisa.<name>`` for ``engine=`` on the target being traced."""
    target = tracer().target
    if engine is None:
        d = _DEFAULTS.get((name, target))
        if d is not None:
            return d
    defs = isa_entries()[name]
    wanted = getattr(engine, "name", engine)
    if wanted in (None, "unknown"):
        usable = [d for d in defs if d.targets is None or target in d.targets]
        if usable:
            _DEFAULTS[(name, target)] = usable[0]
            return usable[0]
        needs = sorted({t for d in defs for t in d.targets or ()})
        fail(f"nisa.{name} needs target {' or '.join(needs)}; this kernel is traced for "
             f"{target}", "trace for another target: nki.run(kernel, ..., target=...) or "
             "@nki.jit(platform_target=...)")
    for d in defs:
        if d.engine == wanted:
            if d.targets is not None and target not in d.targets:
                fail(f"nisa.{name} on the {wanted} engine needs target "
                     f"{' or '.join(d.targets)}; this kernel is traced for {target}")
            return d
    fail(f"nisa.{name} does not run on engine={wanted!r} here",
         f"engines: {', '.join(d.engine for d in defs)} (or leave engine= out)")
    raise AssertionError


class _Spec:
    """What binding an NKI call to one entry needs, computed once per entry."""

    def __init__(self, d: InstrDef) -> None:
        self.sig = signature(d)
        self.by_nki = dict(self.sig)
        self.accepts = dict(d.nki_accepts)
        self.table_names = {a.name for a in d.args if a.name != "queue"}
        self.required = [(a.name, next((n for n, t in self.sig if t == a.name), a.name))
                         for a in d.args if a.required and a.name != "queue"]
        # (argument, its default as text: a keyword argument at its default is left out)
        self.lowering = [(a, None if a.default is None else _default_text(a.default))
                         for a in d.args]
        self.written = [a.name for a in d.args if a.kind == "tile" and "w" in a.access]


_SPECS: dict[str, _Spec] = {}


def _spec(d: InstrDef) -> _Spec:
    spec = _SPECS.get(d.name)
    if spec is None:
        spec = _SPECS[d.name] = _Spec(d)
    return spec


def _signature(name: str, sig) -> str:
    """The note of a call whose arguments do not bind, as nki.names words it for the others."""
    return f"NKI 0.6 signature: nisa.{name}({', '.join(n for n, _ in sig)})"


def bind(name: str, d: InstrDef, args: tuple, kwargs: dict) -> dict[str, object]:
    """Table argument name -> the value the NKI call gave (defaults left out)."""
    spec = _spec(d)
    sig = spec.sig
    if len(args) > len(sig):
        fail(f"nisa.{name}() takes {len(sig)} positional arguments but {len(args)} were given",
             _signature(name, sig), unsupported=True)
    values: dict[str, object] = {}
    for (_, table_name), value in zip(sig, args):
        values[table_name] = value
    for key, value in kwargs.items():
        table_name = spec.by_nki.get(key)
        if table_name is None:
            if key in spec.accepts:
                allowed = spec.accepts[key]
                text = _accept_text(value)
                if allowed != ("*",) and value is not None and text not in allowed:
                    fail(f"nisa.{name}({key}={text}) is not modelled here; {key} can be "
                         f"{' or '.join(allowed)}", unsupported=True)
                continue
            if key in IGNORED or key == "engine":
                continue
            if key == "mask":
                fail(f"nisa.{name}(mask=...) is the NKI 0.1 dialect; in NKI 0.2+ slice the "
                     f"operands instead", unsupported=True)
            if key not in spec.table_names:
                fail(f"nisa.{name}() has no argument '{key}' in NKI 0.6", _signature(name, sig),
                     unsupported=True)
            table_name = key
        if table_name in values:
            fail(f"nisa.{name}() got multiple values for argument {key!r}")
        values[table_name] = value
    for table_name, nki_name in spec.required:
        if values.get(table_name) is None:
            fail(f"nisa.{name}() is missing its argument {nki_name!r}")
    return values


def _accept_text(value) -> str:
    if isinstance(value, bool):
        return bool_text(value)
    for attr in ("_nki_reduce", "_nki_alu", "__name__"):
        text = getattr(value, attr, None)
        if isinstance(text, str):
            return {"max": "maximum", "amax": "maximum", "min": "minimum",
                    "amin": "minimum"}.get(text, text)
    return str(value)


def operand_text(a: ArgDef, value) -> str:
    """One argument's value as assembly text, by the table argument's kind."""
    what = a.name
    if a.kind == "tile":
        if not isinstance(value, NkiTensor):
            fail(f"{what} must be a tensor, got {type(value).__name__}")
        if "hbm" in a.spaces:
            if value._broadcast is not None and not a.broadcast:
                tile_arg(value, what)
            return value.operand(tracer())
        return onchip(value, what)
    if a.kind == "scalar":
        return scalar_operand(value, what)
    if a.kind == "number":
        return number(value, what)
    if a.kind == "int":
        if isinstance(value, NkiTensor) or isinstance(value, float) and not value.is_integer():
            fail(f"{what} must be a Python int, got {value!r}")
        try:
            return str(int(value))
        except (TypeError, ValueError):
            fail(f"{what} must be a Python int, got {type(value).__name__}")
    if a.kind == "bool":
        return bool_text(bool(value))
    if a.kind == "enum":
        if a.enum == "alu_op":
            return alu_name(value, what)
        if a.enum == "reduce_op":
            return reduce_name(value, what)
        if a.enum == "activation":
            return act_name(value)
        text = str(getattr(value, "name", value))
        values = load_isa().enums[a.enum].values
        if text not in values:
            fail(f"{what}={text!r} is not one of {', '.join(values)}")
        return text
    if a.kind in ("reg", "reg_or_int"):
        reg = getattr(value, "register_text", None)
        if reg is not None:
            return reg()
        if a.kind == "reg_or_int" and isinstance(value, int):
            return str(int(value))
        fail(f"{what} must be a register (nisa.register_alloc)"
             + (" or a Python int" if a.kind == "reg_or_int" else "")
             + f", got {type(value).__name__}")
    if a.kind == "int_list":
        try:
            items = [int(v) for v in value]
        except (TypeError, ValueError):
            fail(f"{what} must be a list of Python ints, got {value!r}")
        if a.length and len(items) != a.length:
            fail(f"{what} has {len(items)} items; it needs {a.length}")
        return "[" + ", ".join(map(str, items)) + "]"
    fail(f"{what}: argument kind {a.kind} cannot come from an NKI call")
    raise AssertionError


def lower(d: InstrDef, values: dict[str, object]) -> None:
    """Append ``d`` with ``values`` (table names) to the kernel being traced."""
    tr = tracer()
    spec = _spec(d)
    operands: list[str] = []
    keywords: dict[str, str] = {}
    for a, default in spec.lowering:
        value = values.get(a.name)
        if a.name == "queue":
            if d.engine == "dma":
                keywords["queue"] = str(tr.next_queue())
            continue
        if value is None:
            continue
        text = operand_text(a, value)
        if not a.keyword:
            operands.append(text)
        elif text != default:
            keywords[a.name] = text
    tr.emit(d.name, *operands, **keywords)
    for name in spec.written:
        mark_written(values.get(name))


def _default_text(default) -> str:
    if isinstance(default, bool):
        return bool_text(default)
    if isinstance(default, float):
        return repr(default)
    return str(default)


def call(name: str, args: tuple, kwargs: dict) -> None:
    """``nisa.<name>(*args, **kwargs)`` by its table entry."""
    d = choose(name, kwargs.get("engine"))
    values = bind(name, d, args, kwargs)
    scatter = None
    if _indirection.has_indirect(values.values()):
        values, scatter = _indirection.resolve(name, values, _indirection.OTHER_GROUP,
                                               reads_dst=name == "tensor_copy_predicated")
    lower(d, values)
    if scatter is not None:
        scatter()


def wrapper(name: str):
    """The ``nisa.<name>`` function of a table-driven call."""
    defs = isa_entries()[name]

    def nki_call(*args, **kwargs):
        call(name, args, kwargs)

    engines = ", ".join(d.name for d in defs)
    sig = ", ".join(n for n, _ in signature(defs[0]))
    nki_call.__name__ = nki_call.__qualname__ = name
    nki_call.__doc__ = (f"nisa.{name}({sig}, engine=, name=): {defs[0].summary}\n\n"
                        f"Lowered to {engines} (docs/isa.md).")
    return nki_call
