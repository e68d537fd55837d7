"""What ``neuronemu isa NAME`` prints: the instruction reference from the ISA tables.

NAME may be an instruction (``scalar.activation`` or ``activation`` as its mnemonic), an engine
(its instructions), an enum table of isa/enums.toml (``activation``, ``alu_op``: its values and
the arguments that take it) or one value of an enum (``silu``: the table it belongs to). Why the
last two: an argument's legal values are what a kernel writer looks up most (issue 30 item 18),
and a value looked up by itself must not be answered with a near-miss instruction name.
"""

from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass, field

from neuronemu.isa.table import EnumDef, InstrDef, load_isa

_WIDTH = 100


class UnknownName(LookupError):
    """NAME is no instruction, engine, enum or enum value; ``str()`` says what is close."""


@dataclass
class Lookup:
    """What a name refers to: instructions (a listing or entries) and/or enum tables."""
    instructions: list[InstrDef] = field(default_factory=list)
    listing: bool = False           # print one line per instruction rather than full entries
    enums: list[EnumDef] = field(default_factory=list)
    value: str | None = None        # the enum value looked up, when NAME was one


def _users(enum: str) -> list[tuple[InstrDef, str]]:
    """(instruction, argument name) of every argument whose kind is this enum."""
    return [(d, a.name) for d in load_isa().instructions.values() for a in d.args
            if a.kind == "enum" and a.enum == enum]


def lookup(name: str | None) -> Lookup:
    isa = load_isa()
    table = isa.instructions
    everything = list(table.values())
    if not name:
        return Lookup(everything, listing=True)
    engines = {d.engine for d in everything}
    if name in engines:
        return Lookup([d for d in everything if d.engine == name], listing=True)
    entries = [d for d in everything if name in (d.name, d.mnemonic)]
    enums = [isa.enums[name]] if name in isa.enums else []
    if entries or enums:
        return Lookup(entries, enums=enums)
    holders = [e for e in isa.enums.values() if name in e.values]
    if holders:
        return Lookup(enums=holders, value=name)
    values = sorted({v for e in isa.enums.values() for v in e.values})
    candidates = list(dict.fromkeys(list(table) + sorted(engines)
                                    + [d.mnemonic for d in everything] + sorted(isa.enums)
                                    + values))
    close = difflib.get_close_matches(name, candidates, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownName(f"unknown instruction, engine or enum value '{name}'{hint}")


def _wrapped(label: str, words: list[str], indent: int) -> list[str]:
    head = " " * indent + label
    glued = [w.replace(" ", "\xa0") for w in words]   # a word with a space is not split
    return [line.replace("\xa0", " ") for line in
            textwrap.wrap(", ".join(glued), width=_WIDTH, initial_indent=head,
                          subsequent_indent=" " * len(head), break_on_hyphens=False)]


def render_text(found: Lookup) -> list[str]:
    isa = load_isa()
    lines: list[str] = []
    if found.listing:
        width = max(len(d.name) for d in found.instructions)
        return [f"{d.name:<{width}}  {d.summary}"
                for d in sorted(found.instructions, key=lambda d: (d.engine, d.opcode))]
    for d in found.instructions:
        lines += [f"{d.name}  ({d.nki or 'sequencer control'})", f"  {d.summary}",
                  f"  syntax:  {d.syntax}", f"  example: {d.example}"]
        width = max((len(a.name) for a in d.args), default=0)
        for a in d.args:
            kind = f"enum {a.enum}" if a.kind == "enum" else a.kind
            where = f" in {'/'.join(a.spaces)}" if a.spaces else ""
            default = f" (default {a.default})" if a.default is not None else ""
            lines.append(f"    {a.name:<{width}}  {kind}{where}{default} {a.doc}".rstrip())
            if a.kind == "enum":
                lines += _wrapped("one of: ", list(isa.enums[a.enum].values), width + 6)
    for enum in found.enums:
        if found.value is not None:
            lines.append(f"'{found.value}' is a value of enum {enum.name}")
        lines.append(f"enum {enum.name}: {enum.summary}")
        lines += _wrapped("values: ", list(enum.values), 2)
        users = [f"{d.name} {arg}=" for d, arg in _users(enum.name)]
        if users:
            lines += _wrapped("taken by: ", users, 2)
    return lines


def render_json(found: Lookup) -> dict:
    isa = load_isa()
    docs = [{"mnemonic": d.name, "engine": d.engine, "opcode": d.opcode,
             "targets": list(d.targets or isa.targets), "nki": d.nki, "summary": d.summary,
             "syntax": d.syntax, "cost_class": d.cost_class,
             "args": [{"name": a.name, "kind": a.kind, "spaces": list(a.spaces),
                       "keyword": a.keyword, "default": a.default,
                       **({"enum": a.enum, "values": list(isa.enums[a.enum].values)}
                          if a.kind == "enum" else {})} for a in d.args]}
            for d in found.instructions]
    out: dict = {"instructions": docs}
    if found.enums:
        out["enums"] = [{"name": e.name, "summary": e.summary, "values": list(e.values),
                         "taken_by": [{"mnemonic": d.name, "arg": arg}
                                      for d, arg in _users(e.name)]} for e in found.enums]
    return out
