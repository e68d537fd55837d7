"""The words of neuronemu assembly, read from the ISA tables and the assembler, so that every
highlighter made from them knows each mnemonic, argument name and enum value the tables do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Vocabulary:
    mnemonics: dict[str, tuple[str, ...]]   # engine -> the names after "engine."
    arguments: tuple[str, ...]              # argument names (written name=value)
    keyword_values: tuple[str, ...]         # enum values written after name=
    positional_values: tuple[str, ...]      # enum values written as a plain argument (tracks)
    engines: tuple[str, ...]
    directives: tuple[str, ...]             # without the dot
    dtypes: tuple[str, ...]
    targets: tuple[str, ...]
    declarations: tuple[str, ...]           # .hbm roles and initialisers
    constants: tuple[str, ...] = ("true", "false")

    @property
    def enum_values(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.keyword_values) | set(self.positional_values)))


def vocabulary() -> Vocabulary:
    from neuronemu.asm.assembler import DIRECTIVES, INITIALISERS, ROLES
    from neuronemu.asm.macros import BLOCK_DIRECTIVES
    from neuronemu.isa import dtypes
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    mnemonics: dict[str, list[str]] = {}
    arguments, keyword, positional = set(), set(), set()
    for d in isa.instructions.values():
        mnemonics.setdefault(d.engine, []).append(d.mnemonic)
        for a in d.args:
            arguments.add(a.name)
            if a.kind == "enum":
                (keyword if a.keyword else positional).update(isa.enums[a.enum].values)
    engines = tuple(isa.enums["engine"].values)
    return Vocabulary(
        mnemonics={e: tuple(sorted(m)) for e, m in sorted(mnemonics.items())},
        arguments=tuple(sorted(arguments)), keyword_values=tuple(sorted(keyword)),
        positional_values=tuple(sorted(positional)), engines=engines,
        directives=tuple(sorted(set(DIRECTIVES) | set(BLOCK_DIRECTIVES))),
        dtypes=tuple(sorted(dtypes.names())), targets=tuple(sorted(isa.targets)),
        declarations=tuple(sorted(set(ROLES) | set(INITIALISERS))))
