"""Vector engine search instructions: the 8 largest values, and where given values occur."""

from __future__ import annotations

import numpy as np

from neuronemu.exec import layout as L
from neuronemu.exec.jit import jit
from neuronemu.exec.memory import arg_value, load_f32, store_f32


@jit
def max8(ins, ops, imms, mems, regs, fmt, table):
    """Descending top 8 per partition. np.sort puts NaN last, so NaN ranks above +inf here."""
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    out = np.empty((data.shape[0], 8), dtype=np.float32)
    for p in range(data.shape[0]):
        ordered = np.sort(data[p])
        for k in range(8):
            out[p, k] = ordered[ordered.size - 1 - k]
    store_f32(ops[arg_value(ins, 0)], mems, regs, fmt, out)
    return L.STATUS_OK


@jit
def find_index8(ins, ops, imms, mems, regs, fmt, table):
    """First index of each of the 8 values; a missing value stores the largest integer of dst's
    dtype (all ones), since the fp32 value 2**32 saturates when stored as uint16/uint32."""
    data = load_f32(ops[arg_value(ins, 1)], mems, regs, fmt, table)
    vals = load_f32(ops[arg_value(ins, 2)], mems, regs, fmt, table)
    out = np.empty((data.shape[0], 8), dtype=np.float32)
    for p in range(data.shape[0]):
        for k in range(8):
            found = np.float32(4294967296.0)
            for i in range(data.shape[1]):
                if data[p, i] == vals[p, k]:
                    found = np.float32(i)
                    break
            out[p, k] = found
    store_f32(ops[arg_value(ins, 0)], mems, regs, fmt, out)
    return L.STATUS_OK
