"""``dma.copy oob=skip`` (NKI's ``oob_mode.skip``): a transfer whose register-offset tile lies
wholly outside its tensor is not made.

The compiled loop is not told about it: it stops at any tile outside its tensor with
STATUS_OUT_OF_BOUNDS, before the instruction touches anything, as it always has. Its caller
(``Core.run``, the debugger's ``call_loop``) then asks ``skip``: for a ``dma.copy oob=skip``
whose tiles are each in bounds or wholly outside, the instruction is counted as run and the
loop goes on after it (no data, no modelled time, no event). Doing this in Python costs a
round trip per skipped transfer (tens of microseconds; kernels skip a handful), and nothing per
instruction of every other kernel: a check in the loop itself made the [128, 64] small-tile
loop of tools/bench.py 5-7% slower.
"""

from __future__ import annotations

from neuronemu.machine import layout as L
from neuronemu.machine.memory import _TERM_LIMIT, in_bounds


def wholly_outside(op, regs) -> bool:
    """A register-offset tile that lies entirely outside its symbol's bytes (every row before
    the window or after it)."""
    if op[L.OP_SPACE] == L.SPACE_IMM or op[L.OP_NREG] == 0:
        return False
    start = int(op[L.OP_BASE])
    for k in range(int(op[L.OP_NREG])):
        coef = int(op[L.OP_COEF + 2 * k])
        value = int(regs[op[L.OP_REG + 2 * k]])
        if abs(value) > _TERM_LIMIT // max(abs(coef), 1):
            return True   # an offset this large is outside any tensor
        start += coef * value
    # rows run upward from start (the partition pitch is 0 on chip, the row pitch in HBM)
    end = start + (int(op[L.OP_PCOUNT]) - 1) * int(op[L.OP_PCOLSTEP]) + int(op[L.OP_EXTENT])
    return start >= op[L.OP_HI] or end <= op[L.OP_LO]


def skippable(program, core) -> bool:
    """Whether the instruction at ``core.pc``, which the loop stopped at for a tile outside its
    tensor, is a ``dma.copy oob=skip`` whose every tile is in bounds or wholly outside."""
    row = program.instrs[core.pc]
    if not row[L.I_FLAGS] & L.DMA_OOB_SKIP:
        return False
    for k in range(int(row[L.I_NARGS])):
        if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        op = program.ops[row[L.I_ARGS + 2 * k + 1]]
        if not in_bounds.py_func(op, core.regs, core.mems) and not wholly_outside(op, core.regs):
            return False
    return True


def skip(core) -> None:
    """Count the instruction at pc as run, without running it."""
    core.counts[core.pc] += 1
    core.steps += 1
    core.pc += 1
