"""Outputs no instruction writes: a located warning at the declaration.

A kernel whose output nothing stores to runs, exits 0 and shows only the output's initial NaN
in its summary; the likely bug (a store to the wrong tensor, a forgotten last DMA) deserves a
word before the run. The check is static and exact about what it claims: no instruction of the
program has a written HBM operand whose tensor's bytes (its window: the declared tensor, or the
one a raw access pattern or an alias names) meet the output's bytes. An instruction that could
write it but never runs is not reported here (the run's unwritten-read warnings and the
grader's "no instruction wrote" feedback cover what happens at run time).
"""

from __future__ import annotations

import numpy as np

from neuronemu.errors import Diagnostic
from neuronemu.machine import layout as L


def unwritten_outputs(program) -> list[Diagnostic]:
    """One warning per output tensor that no instruction writes, at its declaration."""
    outputs = [t for t in program.tensors.values() if t.role == "output" and t.nbytes]
    if not outputs:
        return []
    instrs, ops = program.instrs, program.ops
    written: list[np.ndarray] = []
    if instrs is not None and len(instrs) and ops is not None and len(ops):
        for k in range(L.MAX_ARGS):
            access = (instrs[:, L.I_ACCESS] >> (2 * k)) & 3
            chosen = ((k < instrs[:, L.I_NARGS]) & (instrs[:, L.I_ARGS + 2 * k] == L.TAG_OPERAND)
                      & (access & L.ACCESS_WRITE != 0))
            written.append(instrs[chosen, L.I_ARGS + 2 * k + 1])
    rows = ops[np.unique(np.concatenate(written))] if written else np.zeros((0, L.OP_WIDTH),
                                                                             np.int64)
    rows = rows[rows[:, L.OP_SPACE] == L.SPACE_HBM]
    low, high = rows[:, L.OP_LO], rows[:, L.OP_HI]
    warnings = []
    for t in outputs:
        if not ((low < t.offset + t.nbytes) & (high > t.offset)).any():
            initial = "NaN" if t.init[0] == "nan" else "its init= values"
            warnings.append(Diagnostic(
                f"no instruction writes output '{t.name}': it will hold {initial} after the "
                f"run (a store to another tensor, or a missing last DMA?)", t.location))
    return warnings
