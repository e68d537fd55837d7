"""DMA queues: data movement between HBM and SBUF."""

from __future__ import annotations

from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import arg_value, copy_tile


@jit
def copy(ins, ops, imms, mems, regs, fmt, table):
    """dst = src; bit-exact for equal dtypes, else each element cast src -> fp32 -> dst (RNE)."""
    copy_tile(ops[arg_value(ins, 0)], ops[arg_value(ins, 1)], mems, regs, fmt, table)
    return L.STATUS_OK
