"""Engine accumulator registers: one fp32 per partition and engine (Vector: ``REG_VACC``,
Scalar: ``REG_SACC``), shared by the instructions that take a ``reduce_cmd``
(nki.isa.reduce_cmd), so a reduction can run across several instructions. They live in
``regs[base + partition]`` as fp32 bit patterns and start at 0.0 (the power-on value is not
documented)."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.arrays import viewed
from neuronemu.compiled.jit import jit

IDLE, RESET, REDUCE, RESET_REDUCE, LOAD_REDUCE = 0, 1, 2, 3, 4  # isa/enums.toml reduce_cmd


@jit(inline="always")
def get(regs, base, partition):
    bits = np.empty(1, dtype=np.int32)
    bits[0] = np.int32(regs[base + partition] & 0xFFFFFFFF)
    return viewed(bits, np.float32)[0]


@jit(inline="always")
def put(regs, base, partition, value):
    word = np.empty(1, dtype=np.float32)
    word[0] = value
    regs[base + partition] = np.int64(viewed(word, np.uint32)[0])


@jit
def start(regs, base, partition, cmd, identity, init):
    """The accumulator value this instruction folds into: the identity when the instruction
    does not use the registers (idle) or resets them, the loaded value, or the register."""
    if cmd == IDLE or cmd == RESET or cmd == RESET_REDUCE:
        return np.float32(identity)
    if cmd == LOAD_REDUCE:
        return np.float32(init)
    return get(regs, base, partition)


@jit
def finish(regs, base, partition, cmd, value, identity):
    """Store the folded value unless the command leaves the registers alone."""
    if cmd == RESET:
        put(regs, base, partition, np.float32(identity))
    elif cmd != IDLE:
        put(regs, base, partition, value)
