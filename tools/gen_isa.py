"""Generate the glue derived from the ISA tables (run after editing anything in isa/).

Writes, all committed and checked for freshness by tests/test_isa_table.py:
  neuronemu/isa/codes.py        opcode, engine and enum constants (beside the tables they come from)
  neuronemu/isa/args/<module>.py   the argument slots of each semantics function, by name
  neuronemu/exec/wrappers/<module>.py   one kernel wrapper per semantics function (compiled
                                 lazily), by semantics module; __init__: opcode -> kernel
  docs/isa.md                   the instruction reference
  isa/README.md                 the tables' format, from the loader's key, kind and rule tables

Usage: python -m tools.gen_isa [--check] [--isa DIR]
  --check: exit 1 if any file is stale, write nothing; --isa: read the tables from DIR.
A table the loader rejects (e.g. two entries sharing a semantics function whose arguments
disagree) is reported as ``error: isa/<engine>.toml: [entry]: ...`` with exit status 1.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
from pathlib import Path

from neuronemu.isa.table import TableError, argument_sets, load_isa
from tools.generated import ROOT, write_generated

HEADER = "# Generated from isa/*.toml by tools/gen_isa.py -- do not edit.\n"


def _const_name(text: str) -> str:
    return text.upper().replace(".", "_")


def constants(isa) -> str:
    lines = [HEADER, '"""Opcode, engine and enum constants of the ISA tables."""', ""]
    for name, d in sorted(isa.instructions.items(), key=lambda kv: kv[1].opcode):
        lines.append(f"OP_{_const_name(name)} = {d.opcode:#06x}  # {d.origin.split(':')[0]}")
    for enum in isa.enums.values():
        lines.append("")
        prefix = {"engine": "ENGINE", "alu_op": "ALU", "reduce_op": "REDUCE",
                  "activation": "ACT", "cmp_op": "CMP"}.get(enum.name, enum.name.upper())
        for value, code in enum.values.items():
            lines.append(f"{prefix}_{value.upper()} = {code}")
    return "\n".join(lines) + "\n"


def kernel_entry(semantics: str) -> str:
    """Name of the kernel wrapper of a semantics function: ``module.function`` -> module__function."""
    return semantics.replace(".", "__")


def narrow_kernels(module: str) -> dict[str, tuple[str, ...]]:
    """``NARROW`` of neuronemu/semantics/<module>.py (function -> its narrow kernels, narrowest
    first, each a unit of its own: neuronemu/exec/kernels.py), read without importing it."""
    tree = ast.parse((ROOT / f"neuronemu/semantics/{module}.py").read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "NARROW"):
            return {function: (names,) if isinstance(names, str) else tuple(names)
                    for function, names in ast.literal_eval(node.value).items()}
    return {}


def kernels(isa) -> dict[str, str]:
    """``neuronemu/exec/wrappers/``: ``__init__`` maps opcodes to kernel names; one module per
    semantics module holds its kernels' wrappers. Why one module each: importing a semantics
    module makes a numba dispatcher per jitted function in it, and a run needs only the modules
    of the instructions it uses (neuronemu.exec.kernels imports them on first use)."""
    entries = sorted({d.semantics for d in isa.instructions.values()})
    modules = sorted({s.split(".")[0] for s in entries})
    narrow = {f"{module}.{function}": [f"{module}.{name}" for name in names]
              for module in modules for function, names in narrow_kernels(module).items()}
    lines = [HEADER,
             ('"""Instruction kernels: one wrapper per semantics function, compiled on first use '
              'into'),
             ("its own C-callable unit by neuronemu.exec.kernels (which explains why). The "
              "wrappers of"),
             ("``neuronemu/semantics/<module>.py`` are in ``neuronemu.exec.wrappers.<module>``, "
              "imported"),
             'only when a program uses one of them (``neuronemu.exec.kernels.wrapper``)."""',
             "",
             "# opcode -> kernel wrapper (<module>__<function>)",
             "ENTRIES = {"]
    for name, d in sorted(isa.instructions.items(), key=lambda kv: kv[1].opcode):
        lines.append(f"    {d.opcode:#06x}: {kernel_entry(d.semantics)!r},  # {name}")
    lines.append("}")
    files = {"__init__": "\n".join(lines) + "\n"}
    for module in modules:
        lines = [HEADER,
                 f'"""Kernel wrappers of neuronemu/semantics/{module}.py (see __init__)."""',
                 "",
                 "from neuronemu.compiled.jit import inlined",
                 "from neuronemu.machine import layout as L",
                 "from neuronemu.machine.abi import views",
                 f"from neuronemu.semantics import {module}"]
        units = []
        for sem in (s for s in entries if s.split(".")[0] == module):
            units += [sem, *narrow.get(sem, ())]
        lines += ["", "# each semantics function compiled inside its kernel, not also on its own",
                  "# (neuronemu.compiled.jit.inlined)"]
        lines += [f"_{sem.split('.')[1]} = inlined({sem})" for sem in sorted(units)]
        for sem in sorted(units):
            lines += ["", "",
                      (f"def {kernel_entry(sem)}(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, "
                       "regs_p, fmt_p, table_p, dims_p):"),
                      "    ins, ops, imms, mems, regs, fmt, table = views(",
                      ("        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, "
                       "table_p, dims_p)"),
                      "    try:",
                      f"        return _{sem.split('.')[1]}(ins, ops, imms, mems, regs, fmt, table)",
                      "    except Exception:  # a C callback cannot raise: report it as a status",
                      "        return L.STATUS_KERNEL_ERROR"]
        files[module] = "\n".join(lines) + "\n"
    return files


def argument_modules(isa) -> dict[str, str]:
    """``neuronemu/isa/args/<module>.py`` per semantics module: ``FUNCTION_ARGUMENT = slot`` for
    every argument of every semantics function defined there. Plain module-level ints: numba
    reads a module's int as a compile-time constant, so ``arg_value(ins, TENSOR_SCALAR_OP1)``
    compiles to the same code as ``arg_value(ins, 5)`` (docs/engine.md, "Argument names")."""
    sets = argument_sets(isa.instructions)
    users: dict[str, list] = {}
    for d in sorted(isa.instructions.values(), key=lambda d: d.opcode):
        users.setdefault(d.semantics, []).append(d)
    files: dict[str, str] = {}
    for module in sorted({sem.split(".")[0] for sem in sets}):
        doc = (f'"""Argument slots of the semantics functions of neuronemu/semantics/{module}.py, '
               "by name:\n``arg_value(ins, FUNCTION_ARGUMENT)`` reads that argument of the "
               "instruction (its position in the\nentries' ``args``, which every entry sharing a "
               'function declares alike)."""')
        lines = [HEADER, doc]
        named: dict[str, str] = {}
        for sem in sorted(s for s in sets if s.split(".")[0] == module):
            function = sem.split(".")[1]
            lines += ["", f"# {sem}: " + ", ".join(d.origin for d in users[sem])]
            for slot, a in enumerate(sets[sem]):
                name = f"{_const_name(function)}_{_const_name(a.name)}"
                if name in named:   # e.g. f + argument reduce_x and f_reduce + argument x
                    raise TableError(f"{users[sem][0].origin}: argument '{a.name}' would be named "
                                     f"{name}, as {named[name]} is; rename one of them")
                named[name] = f"argument '{a.name}' of {sem}"
                lines.append(f"{name} = {slot}")
        files[module] = "\n".join(lines) + "\n"
    files["__init__"] = (HEADER + '"""Argument slots by name, one module per semantics module '
                         '(generated by tools/gen_isa.py)."""\n')
    return files


def reference(isa) -> str:
    out = ["<!-- Generated from isa/*.toml by tools/gen_isa.py -- do not edit. -->",
           "# neuronemu ISA reference", "",
           ("One section per instruction, generated from the tables in `isa/`. Syntax: "
           "`engine.mnemonic positional, ..., keyword=value`; `[...]` marks optional arguments. "
           "Tiles are named allocations (`.sbuf`, `.psum`) or HBM tensors (`.hbm`), optionally "
           "sliced: `x[0:128, 0:512]`; the first dim of an on-chip tile is the partition dim."),
           ""]
    # every engine the tables name, in opcode order (tensor 0x01.., ..., cc 0x08..): an engine
    # added to the tables gets its section without an edit here
    engines = sorted({d.engine for d in isa.instructions.values()},
                     key=lambda e: min(d.opcode for d in isa.instructions.values()
                                       if d.engine == e))
    for engine in engines:
        entries = [d for d in isa.instructions.values() if d.engine == engine]
        out += [f"## {engine}", ""]
        for d in sorted(entries, key=lambda d: d.opcode):
            out += [f"### `{d.name}`", "", d.summary, "",
                    f"- syntax: `{d.syntax}`",
                    f"- implements: `{d.nki}`" if d.nki else "- implements: (sequencer control)",
                    f"- opcode: `{d.opcode:#06x}`, cost class: `{d.cost_class}`"]
            out += _nki_lines(d)
            if d.targets:
                out.append(f"- targets: {', '.join(d.targets)}")
            out += ["", "| argument | kind | memory | access | default | notes |",
                    "|---|---|---|---|---|---|"]
            for a in d.args:
                kind = f"enum `{a.enum}`" if a.kind == "enum" else a.kind
                default = "" if a.default is None else f"`{a.default}`".lower()
                if a.optional:
                    default = "(none)"
                out.append(f"| `{a.name}` | {kind} | {'/'.join(a.spaces)} | {a.access} | "
                           f"{default} | {a.doc} |")
            if d.checks:
                out += ["", "Checks: " + "; ".join(f"`{c.text}`" for c in d.checks)]
            if d.setup or d.teardown:
                lines = [x for x in (d.setup, d.example, d.teardown) if x]
                out += ["", "Example (with the declarations and instructions it needs):", "",
                        "```asm", *lines, "```", ""]
            else:
                out += ["", f"Example: `{d.example}`", ""]
    out += ["## Cost classes", "",
            ("From `isa/costs.toml` (formulas explained there and in docs/timing.md); N = free "
            "elements per partition of the largest tile operand."), "",
            ("| class | formula | per element | fast | min II | fixed | extra output | fp32 x | "
            "source |"), "|---|---|---|---|---|---|---|---|---|"]
    for c in sorted(isa.costs.values(), key=lambda c: c.name):
        out.append(f"| `{c.name}` | {c.formula} | {c.per_element:g} | {c.fast_per_element:g} | "
                   f"{c.min_ii:g} | {c.fixed:g} | {c.extra_output:g} | {c.fp32_factor:g} | "
                   f"{c.source} |")
    out += ["", "## Enums", ""]
    for enum in isa.enums.values():
        out += [f"### `{enum.name}`", "", enum.summary, "",
                ", ".join(f"`{k}`={v}" for k, v in enum.values.items()), ""]
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rule_reads(name: str) -> str:
    from neuronemu.asm.checks import PLACELESS, TILES_ONLY

    reads = "tiles" if name in TILES_ONLY else "values"
    return reads if name in PLACELESS else f"{reads}, place"


def _rule_params(fn) -> str:
    params = list(inspect.signature(fn).parameters.values())[1:]   # after ctx
    return " ".join(f"{p.name}..." if p.kind is p.VAR_POSITIONAL else p.name for p in params)


def readme(isa) -> str:
    """isa/README.md: the format of the tables, from the loader's own key, kind and rule tables
    (neuronemu/isa/table.py, neuronemu/asm/checks.py)."""
    from neuronemu.asm.checks import RULES
    from neuronemu.isa import table

    out = [("<!-- Generated from neuronemu/isa/table.py and neuronemu/asm/checks.py by "
           "tools/gen_isa.py -- do not edit. -->"),
           "# The ISA tables: format", "",
           ("Everything neuronemu knows about an instruction is one entry in a table of this "
            "directory; the assembler, the binary encoding, the interpreter's kernel table, the "
            "timing model and docs/isa.md are derived from it. `neuronemu/isa/table.py` loads "
            "the tables and rejects any key, kind or rule not listed below, naming the entry "
            "(`isa/vector.toml: [tensor_tensor].args[2]: ...`)."), "",
           "## Files", "",
           "| file | holds |", "|---|---|",
           *(f"| `{name}.toml` | the {name} engine's instructions |" for name in table.ENGINE_FILES),
           *(f"| `{name}` | {_cell(what)} |" for name, what in table.DATA_FILES.items()),
           "",
           ("Adding an instruction: an entry in its engine's table (keys below), its semantics "
            "function in `neuronemu/semantics/`, a test against an independent oracle, then "
            "`python -m tools.gen_isa` (writes `neuronemu/isa/codes.py`, the argument names "
            "`neuronemu/isa/args/<module>.py`, the kernel wrappers "
            "`neuronemu/exec/wrappers/<module>.py` and `docs/isa.md`; this file when a key or a "
            "rule changes)."), "",
           "## Instruction entries", "",
           ("One TOML table per instruction, named by its mnemonic (`[tensor_tensor]` in "
            "`vector.toml` is `vector.tensor_tensor`)."), "",
           "| key | meaning |", "|---|---|",
           *(f"| `{k}` | {_cell(v)} |" for k, v in table.INSTR_KEYS.items()),
           "", f"At most {table.MAX_ARGS} arguments per instruction.", "",
           "## Arguments", "",
           ("Each item of `args` is an inline table: "
           "`{ name = \"dst\", kind = \"tile\", space = \"sbuf|psum\", access = \"w\" }`."),
           "", "| key | meaning |", "|---|---|",
           *(f"| `{k}` | {_cell(v)} |" for k, v in table.ARG_KEYS.items()),
           "", "### Argument kinds", "", "| kind | written as |", "|---|---|",
           *(f"| `{k}` | {_cell(v)} |" for k, v in table.ARG_KINDS.items()),
           "", "## Checks", "",
           ("A check is `rule arg ...`: the rule's parameters are argument names, numbers, dtype "
            "names or `@field` (a field of the target's table in `targets.toml`). A rule skips "
            "an optional argument left out and an immediate where it expects a tile."), "",
           ("*reads*: what the rule looks at besides shapes and dtypes, as it is registered in "
            "`neuronemu/asm/checks.py`; the assembler's plans (`neuronemu/asm/direct.py`) rely "
            "on it. `tiles` reads its arguments only where they are tiles (a number there may "
            "differ between the lines of one plan); `values` reads the values of the arguments "
            "it names; `place` also looks at where a tile lies (its first byte or partition, "
            "its registers), so an instruction with such a rule is resolved line by line."), "",
           "| rule | parameters | reads | checks |", "|---|---|---|---|",
           *(f"| `{name}` | {_rule_params(fn)} | {_rule_reads(name)} | "
             f"{_cell(inspect.getdoc(fn) or '')} |"
             for name, fn in sorted(RULES.items())),
           "", "## Cost classes (`costs.toml`)", "",
           (f"One table per class; `formula` is one of {', '.join(f'`{f}`' for f in table.COST_FORMULAS)}. "
            "The comments at the top of `costs.toml` give each formula."), "",
           "| key | meaning |", "|---|---|",
           *(f"| `{k}` | {_cell(v)} |" for k, v in table.COST_KEYS.items()),
           ""]
    return "\n".join(out)


def _nki_lines(d) -> list[str]:
    """How the NKI call's arguments differ from the instruction's (table fields nki_*)."""
    out = []
    renamed = [f"`{n}` -> `{a}`" for n, a in d.nki_args if n != a]
    if d.nki_args:
        out.append("- NKI arguments, in order: " + ", ".join(f"`{n}`" for n, _ in d.nki_args)
                   + (f" (renamed: {', '.join(renamed)})" if renamed else ""))
    if d.nki_accepts:
        out.append("- NKI arguments without an operand here: " + ", ".join(
            f"`{n}` ({'any value' if v == ('*',) else ' or '.join(v)})" for n, v in d.nki_accepts))
    if d.nki_default:
        out.append("- the NKI call's engine when `engine=` is not given")
    return out


def outputs(isa_directory: str | None = None) -> dict[Path, str]:
    isa = load_isa(isa_directory)
    files = {
        ROOT / "neuronemu/isa/codes.py": constants(isa),
        ROOT / "docs/isa.md": reference(isa),
        ROOT / "isa/README.md": readme(isa),
    }
    for module, text in argument_modules(isa).items():
        files[ROOT / f"neuronemu/isa/args/{module}.py"] = text
    for module, text in kernels(isa).items():
        files[ROOT / f"neuronemu/exec/wrappers/{module}.py"] = text
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    parser.add_argument("--isa", metavar="DIR", help="read the tables from DIR (default: isa/)")
    args = parser.parse_args()
    try:
        files = outputs(args.isa)
    except TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return write_generated(files, args.check, "python -m tools.gen_isa")


if __name__ == "__main__":
    sys.exit(main())
