"""Which instruction last wrote an element: read back from the run's timeline events.

Every timed instruction the interpreter executes leaves an event with its pc and the dynamic
byte offset of each tile operand (``Timing.events``), in execution order. The last event whose
written operand covers a byte is that byte's last writer. When that writer is a plain
copy (``dma.copy``, ``tensor_copy``), element i of its destination came from element i of its
source, so the chain is followed on chip (``c[3, 17]`` <- ``dma.copy`` <- ``out_sb`` <-
``vector.tensor_copy`` <- ``acc`` <- ``tensor.matmul``).
Only the recorded events are searched (the first 2^20 of a run)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.program import Program, Tile

# Instructions whose destination element i is source element i (the argument named here):
# the chain of last writers goes on through them.
COPIES = {"dma.copy": "src", "vector.tensor_copy": "data", "gpsimd.tensor_copy": "data"}


@dataclass(frozen=True)
class Writer:
    """One link of the chain: the instruction that wrote the byte, and where."""

    pc: int
    what: str           # e.g. "a_tile[partition 3, element 17]"

    def describe(self, program: Program) -> str:
        ins = program.instructions[self.pc]
        text = program.source.line(ins.location.line).strip()
        return f"{self.what} was last written by line {ins.location.line}: {text}"


def _element_offsets(tile: Tile) -> np.ndarray:
    """Byte offset (from the tile's start) of each free element of a partition, in the
    row-major order instructions see them."""
    offsets = np.zeros(1, dtype=np.int64)
    for stride, count in tile.free_dims:
        offsets = (offsets[:, None] + stride * np.arange(count, dtype=np.int64)).reshape(-1)
    return offsets


def _locate(tile: Tile, start: int, row: int, byte: int) -> tuple[int, int] | None:
    """(logical partition, free element index) of ``tile`` at dynamic offset ``start`` holding
    byte ``byte`` of memory row ``row``, or None."""
    from neuronemu.isa import dtypes

    itemsize = dtypes.get(tile.dtype).itemsize
    last = start + (tile.partitions - 1) * tile.partition_pitch + tile.extent
    if not start <= byte < last:
        return None
    if tile.space == "hbm":
        partitions = range(tile.partitions)
    else:
        p = row - tile.partition_start
        if not 0 <= p < tile.partitions:
            return None
        partitions = range(p, p + 1)
    offsets = None
    for p in partitions:
        base = start + p * tile.partition_pitch
        if not base <= byte < base + tile.extent:
            continue
        if offsets is None:
            offsets = _element_offsets(tile)
        rel = byte - base
        hit = np.nonzero((offsets <= rel) & (rel < offsets + itemsize))[0]
        if hit.size:
            return p, int(hit[-1])
    return None


def _last_write(program: Program, events: np.ndarray, before: int, space: str, row: int,
                byte: int):
    """The latest event before index ``before`` writing (space, row, byte): (event, arg name,
    tile, partition, element) or None."""
    instrs = program.instrs
    for e in range(before - 1, -1, -1):
        pc = int(events[e, 0])
        ins = program.instructions[pc]
        access = int(instrs[pc, L.I_ACCESS])
        for k, arg in enumerate(ins.definition.args):
            tile = ins.args.get(arg.name)
            if not isinstance(tile, Tile) or tile.space != space:
                continue
            if not (access >> (2 * k)) & L.ACCESS_WRITE:
                continue
            found = _locate(tile, int(events[e, 2 + k]), row, byte)
            if found is not None:
                return e, arg.name, tile, found[0], found[1]
    return None


def last_writers(program: Program, timing, tensor: str, index: tuple[int, ...],
                 depth: int = 4) -> list[Writer]:
    """The chain of last writers of HBM ``tensor[index]`` (empty when no recorded event wrote
    it, e.g. the kernel never stored there)."""
    from neuronemu.isa import dtypes

    if timing is None or not timing.events_recorded:
        return []
    declared = program.tensors[tensor]
    if declared.compressed:
        return []
    itemsize = dtypes.get(declared.dtype).itemsize
    flat = int(np.ravel_multi_index(index, declared.shape))
    space, row, byte = "hbm", 0, declared.offset + flat * itemsize
    events = timing.events
    before = len(events)
    chain: list[Writer] = []
    what = f"{tensor}{list(index)}"
    while len(chain) < depth:
        hit = _last_write(program, events, before, space, row, byte)
        if hit is None:
            break
        e, _arg, tile, p, n = hit
        pc = int(events[e, 0])
        chain.append(Writer(pc, what))
        ins = program.instructions[pc]
        src_arg = COPIES.get(ins.definition.name)
        if src_arg is None:
            break
        source = ins.args.get(src_arg)
        k = next(i for i, a in enumerate(ins.definition.args) if a.name == src_arg)
        if not isinstance(source, Tile) or source.free_size != tile.free_size:
            break
        start = int(events[e, 2 + k])
        offsets = _element_offsets(source)
        space = source.space
        byte = start + p * source.partition_pitch + int(offsets[n])
        row = 0 if space == "hbm" else source.memory_row(p)
        what = (f"{source.symbol}[element {n} of partition {p}]" if space == "hbm"
                else f"{source.symbol} (partition {row}, element {n} of the copied tile)")
        before = e
    return chain
