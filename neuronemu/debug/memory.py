"""Reading the stopped core's memories as the kernel's tiles and tensors, in their dtypes, and
finding which instructions can write one element."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.program import Program


@dataclass(frozen=True)
class Place:
    """One element's bytes: memory space code, row (partition; 0 in HBM), first byte."""

    space: int
    row: int
    byte: int
    itemsize: int


class Memory:
    """Named views of the core's memories: ``.sbuf`` / ``.psum`` allocations and HBM tensors."""

    def __init__(self, program: Program, core):
        from neuronemu.isa import dtypes

        self.program = program
        self.core = core
        self.dtypes = dtypes
        self.shapes = {a.name: tuple(a.shape) for a in program.allocations.values()}
        self.shapes.update({t.name: tuple(t.shape) for t in program.tensors.values()})

    def dtype_of(self, name: str) -> str:
        if name in self.program.allocations:
            return self.program.allocations[name].dtype
        return self.program.tensors[name].dtype

    def bits(self, name: str) -> np.ndarray:
        """The storage bits of a whole tile or tensor, unsigned, in its shape (a copy)."""
        core = self.core
        if name in self.program.allocations:
            a = self.program.allocations[name]
            itemsize = self.dtypes.get(a.dtype).itemsize
            mem = core.mems[L.SPACE_CODES[a.space]]
            raw = mem[: a.shape[0], a.offset: a.offset + a.bytes_per_partition]
            return raw.copy().view(f"<u{itemsize}").reshape(a.shape)
        t = self.program.tensors[name]
        itemsize = self.dtypes.get(t.dtype).itemsize
        raw = core.mems[L.SPACE_HBM][0, t.offset: t.offset + t.nbytes]
        if t.compressed:
            from neuronemu.machine.codec import decode_tensor

            bits = decode_tensor(raw.copy(), t.shape[0], t.shape[1], itemsize)
            return bits.astype(f"<u{itemsize}").reshape(t.shape)
        return raw.copy().view(f"<u{itemsize}").reshape(t.shape)

    def value(self, name: str) -> np.ndarray:
        """A tile or tensor as an array of its dtype (bf16 / fp8 as ml_dtypes values)."""
        return self.dtypes.from_bits(self.bits(name), self.dtype_of(name))

    def place(self, name: str, index: tuple[int, ...]) -> Place | None:
        """Where element ``index`` of ``name`` lies (None for a compressed tensor)."""
        if name in self.program.allocations:
            a = self.program.allocations[name]
            itemsize = self.dtypes.get(a.dtype).itemsize
            flat = int(np.ravel_multi_index(index[1:], a.shape[1:])) if len(a.shape) > 1 else 0
            return Place(L.SPACE_CODES[a.space], index[0], a.offset + flat * itemsize, itemsize)
        t = self.program.tensors[name]
        if t.compressed:
            return None
        itemsize = self.dtypes.get(t.dtype).itemsize
        flat = int(np.ravel_multi_index(index, t.shape))
        return Place(L.SPACE_HBM, 0, t.offset + flat * itemsize, itemsize)


def _columns(op: np.ndarray) -> np.ndarray:
    """Byte offset of each free element of a partition from the operand's start."""
    offsets = np.zeros(1, dtype=np.int64)
    for k in range(L.MAX_FREE_DIMS):
        stride, count = int(op[L.OP_STRIDE + k]), int(op[L.OP_COUNT + k])
        offsets = (offsets[:, None] + stride * np.arange(count, dtype=np.int64)).reshape(-1)
    return offsets


def covers(op: np.ndarray, regs: np.ndarray, place: Place) -> bool:
    """Whether operand row ``op`` (with the registers' current values) touches the element."""
    if int(op[L.OP_SPACE]) != place.space or int(op[L.OP_BLOCK]) != 0:
        return False
    start = int(op[L.OP_BASE])
    for k in range(int(op[L.OP_NREG])):
        start += int(op[L.OP_COEF + 2 * k]) * int(regs[int(op[L.OP_REG + 2 * k])])
    count, rowstep, colstep = int(op[L.OP_PCOUNT]), int(op[L.OP_PROWSTEP]), int(op[L.OP_PCOLSTEP])
    pstart = int(op[L.OP_PSTART])
    if rowstep:
        p, rem = divmod(place.row - pstart, rowstep)
        partitions = [p] if rem == 0 and 0 <= p < count else []
    else:
        partitions = range(count) if place.row == pstart else []
    columns = None
    for p in partitions:
        rel = place.byte - (start + p * colstep)
        if not 0 <= rel < int(op[L.OP_EXTENT]) + place.itemsize:
            continue
        if columns is None:
            columns = _columns(op)
        itemsize = int(op[L.OP_ITEMSIZE])
        if np.any((columns <= rel) & (rel < columns + itemsize)):
            return True
    return False


def writes_possible(program: Program, place: Place) -> np.ndarray:
    """bool [n]: the instructions that may write the element, whatever the registers hold
    (exact for operands without register terms, their column window otherwise)."""
    instrs, ops = program.instrs, program.ops
    out = np.zeros(len(instrs), dtype=bool)
    zero = np.zeros(L.REG_COUNT, dtype=np.int64)
    for pc in range(len(instrs)):
        access = int(instrs[pc, L.I_ACCESS])
        for k in range(int(instrs[pc, L.I_NARGS])):
            if (instrs[pc, L.I_ARGS + 2 * k] != L.TAG_OPERAND
                    or not (access >> (2 * k)) & L.ACCESS_WRITE):
                continue
            op = ops[int(instrs[pc, L.I_ARGS + 2 * k + 1])]
            if int(op[L.OP_SPACE]) != place.space:
                continue
            if int(op[L.OP_NREG]) == 0:
                hit = covers(op, zero, place)
            else:
                hit = int(op[L.OP_LO]) <= place.byte < int(op[L.OP_HI])
            if hit:
                out[pc] = True
                break
    return out


def writes(program: Program, pc: int, regs: np.ndarray, place: Place) -> bool:
    """Whether the instruction at pc, run with these registers, writes the element."""
    row = program.instrs[pc]
    access = int(row[L.I_ACCESS])
    for k in range(int(row[L.I_NARGS])):
        if (row[L.I_ARGS + 2 * k] == L.TAG_OPERAND and (access >> (2 * k)) & L.ACCESS_WRITE
                and covers(program.ops[int(row[L.I_ARGS + 2 * k + 1])], regs, place)):
            return True
    return False

