"""Run a lowered program: the jitted fetch/dispatch loop and its Python driver.

The loop executes instructions in program order (control flow included) and counts the dynamic
instructions per engine. Before an instruction runs, every register-offset tile operand is
bounds-checked, so a faulting instruction writes nothing.
"""

from __future__ import annotations

import numpy as np

from neuronemu._generated.dispatch import execute
from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import in_bounds

NUM_ENGINE_SLOTS = 8


@jit
def run_loop(instrs, ops, imms, mems, regs, fmt, table, max_steps, counts):
    """Returns (status, pc, steps). ``counts[engine]`` accumulates dynamic instructions."""
    pc = 0
    steps = 0
    n = instrs.shape[0]
    while pc < n:
        if steps >= max_steps:
            return L.STATUS_LIMIT, pc, steps
        ins = instrs[pc]
        for k in range(ins[L.I_NARGS]):
            if (ins[L.I_ARGS + 2 * k] == L.TAG_OPERAND
                    and not in_bounds(ops[ins[L.I_ARGS + 2 * k + 1]], regs)):
                regs[L.REG_FAULT_ARG] = k
                return L.STATUS_OUT_OF_BOUNDS, pc, steps
        regs[L.REG_PC] = pc + 1
        status = execute(ins[L.I_OPCODE], ins, ops, imms, mems, regs, fmt, table)
        counts[ins[L.I_ENGINE]] += 1
        steps += 1
        if status != L.STATUS_OK:
            return status, pc, steps
        pc = regs[L.REG_PC]
    return L.STATUS_OK, pc, steps


def make_memories(program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SBUF and PSUM start as 0xFF bytes (NaN in every float dtype, -1 in ints) so that reading
    never-written memory shows up, as nki.simulate does; HBM holds only the declared tensors."""
    target = program.target
    sbuf = np.full((target.partitions, target.sbuf_partition_bytes), 0xFF, dtype=np.uint8)
    psum = np.full((target.partitions, target.psum_partition_bytes), 0xFF, dtype=np.uint8)
    # a multiple of 4 bytes, so the loaders can view it as fp32 words
    hbm = np.full((1, max(-(-program.hbm_bytes // 4) * 4, 4)), 0xFF, dtype=np.uint8)
    return sbuf, psum, hbm
