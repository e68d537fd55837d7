"""Generate the glue derived from the ISA tables (run after editing anything in isa/).

Writes, all committed and checked for freshness by tests/test_isa_table.py:
  neuronemu/isa/codes.py        opcode, engine and enum constants (beside the tables they come from)
  neuronemu/exec/wrappers.py    one kernel wrapper per semantics function (compiled lazily)
  docs/isa.md                         the instruction reference

Usage: python tools/gen_isa.py [--check]   (--check: exit 1 if any file is stale, write nothing)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neuronemu.isa.table import load_isa

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


def kernels(isa) -> str:
    entries = sorted({d.semantics for d in isa.instructions.values()})
    modules = sorted({s.split(".")[0] for s in entries})
    lines = [HEADER,
             ('"""Instruction kernels: one wrapper per semantics function, compiled on first use '
              'into'),
             'its own C-callable unit by neuronemu.exec.kernels (which explains why)."""',
             "",
             "from neuronemu.machine import layout as L",
             "from neuronemu.machine.abi import views",
             f"from neuronemu.semantics import {', '.join(modules)}",
             "",
             "# opcode -> kernel wrapper",
             "ENTRIES = {"]
    for name, d in sorted(isa.instructions.items(), key=lambda kv: kv[1].opcode):
        lines.append(f"    {d.opcode:#06x}: {kernel_entry(d.semantics)!r},  # {name}")
    lines.append("}")
    for sem in entries:
        lines += ["", "",
                  (f"def {kernel_entry(sem)}(ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, "
                   "fmt_p, table_p, dims_p):"),
                  "    ins, ops, imms, mems, regs, fmt, table = views(",
                  "        ins_p, ops_p, imms_p, sbuf_p, psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)",
                  "    try:",
                  f"        return {sem}(ins, ops, imms, mems, regs, fmt, table)",
                  "    except Exception:  # a C callback cannot raise: report it as a status",
                  "        return L.STATUS_KERNEL_ERROR"]
    return "\n".join(lines) + "\n"


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


def outputs() -> dict[Path, str]:
    isa = load_isa()
    return {
        ROOT / "neuronemu/isa/codes.py": constants(isa),
        ROOT / "neuronemu/exec/wrappers.py": kernels(isa),
        ROOT / "docs/isa.md": reference(isa),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    args = parser.parse_args()
    stale = []
    for path, text in outputs().items():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if args.check and stale:
        print("stale generated files: " + ", ".join(map(str, stale)) + "; run tools/gen_isa.py")
        return 1
    for p in stale:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
