"""Where instructions come from and where a user's ``break`` points: assembly lines, the NKI
kernel's Python lines (through the front end's source map), labels, loops."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from neuronemu.debug.expr import Text
from neuronemu.machine import layout as L
from neuronemu.program import Program


@dataclass(frozen=True)
class Frame:
    """One line an instruction belongs to: the file, line and (Python) function."""

    file: str
    line: int
    function: str = ""

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


class Places:
    """The program's instructions by line, and (for an NKI kernel) by Python line."""

    def __init__(self, program: Program, source_map: dict | None = None,
                 main_file: str | None = None):
        self.program = program
        self.source_map = source_map
        self.asm_file = program.source.name
        self.main_file = main_file or self.asm_file
        self.asm = [Frame(self.asm_file, ins.location.line) for ins in program.instructions]
        self.python: list[Frame | None] = []
        if source_map is not None:
            for frame in self.asm:
                site = source_map.get(frame.line)
                self.python.append(None if site is None else
                                   Frame(site.filename, site.line, site.function))
        self.loops = _loops(program)

    def frame(self, pc: int) -> Frame:
        """The user's line of pc: the Python line for an NKI kernel, else the assembly line."""
        if self.python and pc < len(self.python) and self.python[pc] is not None:
            return self.python[pc]
        return self.asm[min(pc, len(self.asm) - 1)]

    def frames(self, pc: int) -> list[Frame]:
        """Innermost first: the Python line (NKI) and the assembly line."""
        out = []
        if self.python and pc < len(self.python) and self.python[pc] is not None:
            out.append(self.python[pc])
        out.append(self.asm[pc])
        return out

    def text_of(self, frame: Frame) -> str:
        if frame.file == self.asm_file:
            return self.program.source.line(frame.line).strip()
        import linecache

        return linecache.getline(frame.file, frame.line).strip()

    def resolve(self, text: Text) -> tuple[list[int], str]:
        """The pcs a breakpoint location names, and how to show it: ``LINE`` (a line of the
        file being debugged), ``FILE:LINE``, a label, or ``*PC``."""
        spec = text.text
        n = len(self.program.instrs)
        if spec.startswith("*"):
            try:
                pc = int(spec[1:], 0)
            except ValueError:
                raise text.error("write *PC with an instruction index, e.g. *12", 1) from None
            if not 0 <= pc < n:
                raise text.error(f"pc {pc} is not an instruction (0..{n - 1})", 1)
            return [pc], f"pc {pc}"
        if spec in self.program.labels:
            pc = self.program.labels[spec]
            if pc >= n:
                raise text.error(f"label '{spec}' is at the end of the kernel: no instruction")
            return [pc], f"{spec} ({self.asm[pc].short})"
        file, _, line = spec.rpartition(":")
        if not line.isdigit():
            labels = ", ".join(sorted(self.program.labels)) or "none"
            raise text.error(f"'{spec}' is not a line number, FILE:LINE, label or *PC",
                             notes=(f"labels: {labels}",))
        line_no = int(line)
        if file:
            table = self._table_for(file, text)
            shown = f"{os.path.basename(file)}:{line_no}"
        else:
            table = self.python if self.python and self.main_file != self.asm_file else self.asm
            file_name = self.main_file if table is self.python else self.asm_file
            shown = f"{os.path.basename(file_name)}:{line_no}"
        base = os.path.basename(file) if file else None
        pcs = [pc for pc, f in enumerate(table) if f is not None and f.line == line_no
               and (base is None and (table is self.asm or _same(f.file, self.main_file))
                    or base is not None and os.path.basename(f.file) == base)]
        pcs += [pc for pc in self._expanded_at(line_no) if table is self.asm and pc not in pcs]
        if not pcs:
            lines = sorted({f.line for f in table if f is not None
                            and (base is None or os.path.basename(f.file) == base)})
            near = _nearest(lines, line_no)
            raise text.error(f"no instruction comes from line {line_no}",
                             notes=(f"lines with instructions nearby: {near}",) if near else ())
        return sorted(pcs), shown

    def _table_for(self, file: str, text: Text) -> list:
        base = os.path.basename(file)
        if base == os.path.basename(self.asm_file):
            return self.asm
        if self.python and any(f is not None and os.path.basename(f.file) == base
                               for f in self.python):
            return self.python
        files = {os.path.basename(self.asm_file)}
        files |= {os.path.basename(f.file) for f in self.python if f is not None}
        raise text.error(f"no instruction comes from a file named '{base}'", 0, len(file),
                         notes=(f"files: {', '.join(sorted(files))}",))

    def _expanded_at(self, line: int) -> list[int]:
        """pcs of instructions a macro or .rept used on ``line`` expanded to."""
        out = []
        for pc, ins in enumerate(self.program.instructions):
            frame = ins.location.expansion
            while frame is not None:
                if frame.site.line == line:
                    out.append(pc)
                    break
                frame = frame.site.expansion
        return out

    def pcs_of(self, frame: Frame) -> list[int]:
        """Every pc whose user line is ``frame``'s."""
        table = self.python if self.python and frame.file != self.asm_file else self.asm
        return [pc for pc, f in enumerate(table) if f == frame]

    def loop_of(self, pc: int) -> tuple[int, int] | None:
        """(head, tail) of the innermost loop around pc: a backward branch at ``tail`` to
        ``head`` <= pc <= tail."""
        around = [(h, t) for h, t in self.loops if h <= pc <= t]
        return min(around, key=lambda ht: ht[1] - ht[0]) if around else None

    def label_at(self, pc: int) -> str | None:
        return next((name for name, at in self.program.labels.items() if at == pc), None)


def _loops(program: Program) -> list[tuple[int, int]]:
    loops = []
    instrs = program.instrs
    for pc in range(len(instrs)):
        for k in range(int(instrs[pc, L.I_NARGS])):
            if instrs[pc, L.I_ARGS + 2 * k] == L.TAG_LABEL:
                target = int(instrs[pc, L.I_ARGS + 2 * k + 1])
                if target <= pc:
                    loops.append((target, pc))
    return loops


def _same(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _nearest(lines: list[int], line: int) -> str:
    if not lines:
        return ""
    arr = np.array(lines)
    below, above = arr[arr < line], arr[arr > line]
    picks = ([int(below.max())] if below.size else []) + ([int(above.min())] if above.size else [])
    return " and ".join(str(p) for p in picks)
