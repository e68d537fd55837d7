"""What the assembler produces: declarations, checked instructions and the lowered arrays."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from neuronemu.source import Location, SourceFile

if TYPE_CHECKING:   # annotations only: the ISA tables are a layer above the program's data
    from neuronemu.isa.table import InstrDef, Target


@dataclass(frozen=True)
class HbmTensor:
    """A tensor in device memory (HBM), declared with ``.hbm``."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    role: str                       # input | output | scratch
    init: tuple                     # (kind, *params), e.g. ("normal", 0.0, 1.0)
    offset: int                     # byte offset in the core's HBM image
    location: Location
    compressed: bool = False        # stored in the block format of docs/dma.md

    @property
    def raw_nbytes(self) -> int:
        """Bytes of the values uncompressed."""
        from neuronemu.isa import dtypes

        return math.prod(self.shape) * dtypes.get(self.dtype).itemsize

    @property
    def row_pitch(self) -> int:
        """Bytes between rows (dim 0) in HBM: slots of whole blocks when compressed."""
        from neuronemu.isa import dtypes
        from neuronemu.machine import compression

        itemsize = dtypes.get(self.dtype).itemsize
        columns = math.prod(self.shape[1:])
        if not self.compressed:
            return columns * itemsize
        return compression.blocks_per_row(columns) * compression.slot_bytes(itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes the tensor occupies in HBM (for compressed tensors: every block slot)."""
        return self.shape[0] * self.row_pitch if self.compressed else self.raw_nbytes


@dataclass(frozen=True)
class Allocation:
    """A named on-chip buffer (``.sbuf`` / ``.psum``): partitions x free shape at a byte offset."""

    name: str
    space: str                      # sbuf | psum
    dtype: str
    shape: tuple[int, ...]          # (partitions, *free)
    offset: int                     # byte offset inside every partition
    location: Location
    # docs/language.md "Placement and aliases": the buffer whose bytes this one shares
    # (alias=NAME; None for a buffer of its own), and whether at= gave the offset
    alias: str | None = None
    placed: bool = False

    @property
    def bytes_per_partition(self) -> int:
        from neuronemu.isa import dtypes

        return math.prod(self.shape[1:]) * dtypes.get(self.dtype).itemsize


@dataclass(frozen=True)
class Tile:
    """A resolved memory operand: a partition range and a free-dim access pattern.

    ``regs`` holds the register terms of the byte offset ((register, bytes per unit), ...)."""

    space: str
    dtype: str
    symbol: str
    base: int                       # byte offset (column) of element [0, 0...]
    partition_start: int
    partitions: int
    partition_pitch: int            # HBM: bytes between consecutive logical partitions
    free_dims: tuple[tuple[int, int], ...]   # ((byte stride, count), ...) outer to inner
    regs: tuple[tuple[int, int], ...]
    window: tuple[int, int]         # column window of the symbol, for register-offset bounds
    location: Location
    # the operand as written, canonical: per given dim ("slice", start, regs, count, step) or
    # ("index", start, regs), regs = ((register, coefficient), ...); or for an access-pattern
    # operand one item ("ap", offset, regs, ((step, count), ...), view dtype or "")
    # (asm/apattern.py); used by the binary encoding
    spec: tuple = ()
    compressed: bool = False        # a tile of a compressed HBM tensor: whole blocks per row
    # partition broadcast (DMA sources only, docs/dma.md): every one of ``partitions`` logical
    # partitions reads the same single row (partition stride 0 in the access pattern), the row
    # at partition_start / base; ``partitions`` is then the destination's count
    broadcast: bool = False

    def __post_init__(self) -> None:
        # A register-offset tile is bounds-checked at run time, in int64: a span larger than its
        # symbol (e.g. a huge slice step) can wrap that check and reach memory outside the
        # buffer. No register value makes such a tile fit, so it is an assembly error.
        if self.regs:
            span = self.rows_touched_span
            size = self.window[1] - self.window[0]
            if span > size:
                from neuronemu.errors import AsmError

                raise AsmError(f"this tile of '{self.symbol}' spans {span} bytes but "
                               f"'{self.symbol}' holds {size}, so no register value keeps it in "
                               f"bounds", self.location)

    @property
    def rows_touched_span(self) -> int:
        """Bytes from the first byte of the first row to one past the last byte of the last."""
        rows = 1 if self.broadcast else self.partitions
        return (rows - 1) * self.partition_pitch + self.extent

    def memory_row(self, p: int) -> int:
        """The memory row (partition) logical partition p of an on-chip tile lives in."""
        return self.partition_start + (0 if self.broadcast else p)

    @property
    def free_size(self) -> int:
        return math.prod(c for _, c in self.free_dims)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.partitions, *(c for _, c in self.free_dims))

    def free_dims_as_written(self, declared_shape) -> tuple[int, ...]:
        """The free dims as the kernel wrote them (the lowered access pattern merges contiguous
        dims): each dim of the declared shape that a slice keeps or that the operand leaves
        unwritten, minus integer-indexed dims, minus the partition dim (on chip the first dim,
        in HBM the first kept one)."""
        if self.spec and self.spec[0][0] == "ap":   # ap(...): the pattern's free counts
            return tuple(c for _, c in self.spec[0][3][1:])
        kept = []
        for i, size in enumerate(declared_shape):
            if i < len(self.spec):
                if self.spec[i][0] == "slice":
                    kept.append((i, self.spec[i][3]))
            else:
                kept.append((i, int(size)))
        if self.space != "hbm" and (not kept or kept[0][0] != 0):
            return tuple(c for _, c in kept)  # the partition dim was indexed away
        return tuple(c for _, c in kept[1:])

    @property
    def extent(self) -> int:
        """Bytes from the first byte of a partition row to one past the last one touched."""
        from neuronemu.isa import dtypes

        itemsize = dtypes.get(self.dtype).itemsize
        if self.compressed:
            from neuronemu.machine import compression

            return (compression.blocks_per_row(self.free_size)
                    * compression.slot_bytes(itemsize))
        return sum(s * (c - 1) for s, c in self.free_dims) + itemsize

    def describe(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        if self.broadcast:
            dims = ", ".join(str(d) for d in (1, *self.shape[1:]))
            return (f"{self.symbol} ({self.space} {self.dtype}[{dims}] broadcast to "
                    f"{self.partitions} partitions)")
        return f"{self.symbol} ({self.space} {self.dtype}[{dims}])"


@dataclass(frozen=True)
class Immediate:
    """A scalar immediate given where a [P, 1] tile is also allowed."""

    value: float
    location: Location


@dataclass(frozen=True)
class Instruction:
    """One checked instruction: its table entry, argument values by name, and where it came from."""

    definition: InstrDef
    args: dict
    location: Location
    text: str


def pe_tile(args: dict) -> tuple[int, int, int, int] | None:
    """(start_row, start_column, row_size, column_size) of a Tensor instruction's PE tile
    (tile_position / tile_size), or None when it uses the whole array."""
    position, size = args.get("tile_position"), args.get("tile_size")
    if position is None or size is None:
        return None
    (row, column), (rows, columns) = [v for _, v in position], [v for _, v in size]
    return row, column, rows, columns


@dataclass
class Program:
    """An assembled kernel, ready to run on its target."""

    source: SourceFile
    target: Target
    tensors: dict[str, HbmTensor]
    allocations: dict[str, Allocation]
    instructions: list[Instruction]
    labels: dict[str, int]
    instrs: np.ndarray = field(repr=False, default=None)
    ops: np.ndarray = field(repr=False, default=None)
    imms: np.ndarray = field(repr=False, default=None)
    warnings: list = field(default_factory=list)   # the assembler's Diagnostics (located)
    sync_mode: str = "auto"         # .sync auto | explicit (docs/timing.md)
    schedule: str = "program"       # .schedule program | compiler (docs/timing.md)
    topology: str | None = None     # .topology NAME: the system it runs on by default
    ranks_per_chip: int = 1         # .topology NAME ranks_per_chip=N

    @property
    def hbm_bytes(self) -> int:
        return max((t.offset + t.nbytes for t in self.tensors.values()), default=0)

    def directive_location(self, name: str) -> Location | None:
        """Where the kernel's first ``.NAME`` directive line is (None: it has none), for
        errors about what the directive chose."""
        import re

        pattern = re.compile(rf"[ \t]*(\.{name})(?![A-Za-z0-9_])")
        for number, line in enumerate(self.source.text.split("\n"), 1):
            m = pattern.match(line)
            if m is not None:
                return Location(self.source, number, m.start(1) + 1, m.end(1) + 1)
        return None

    def inputs(self) -> list[HbmTensor]:
        return [t for t in self.tensors.values() if t.role == "input"]

    def outputs(self) -> list[HbmTensor]:
        return [t for t in self.tensors.values() if t.role == "output"]

    def __getattr__(self, name: str):
        # ``instructions`` made on first use: the assembler may leave lines resolved by a
        # plan (asm/direct.py) as compact records that build their Instruction
        # (with its Tiles and Locations) only when someone asks, which most assemblies never do
        pending = self.__dict__.get("_pending")
        if name != "instructions" or pending is None:
            raise AttributeError(f"'Program' object has no attribute '{name}'")
        for pc, ins in enumerate(pending):
            if not isinstance(ins, Instruction):
                pending[pc] = ins.build()
        del self.__dict__["_pending"]
        self.__dict__["instructions"] = pending
        return pending

    def instruction(self, pc: int) -> Instruction | None:
        """The instruction at ``pc`` (None past the end), built alone if the rest are still
        records: a progress line or a diagnostic about one instruction must not build them
        all (a 100,000-line traced kernel: seconds)."""
        pending = self.__dict__.get("_pending")
        listed = self.instructions if pending is None else pending
        if not 0 <= pc < len(listed):
            return None
        ins = listed[pc]
        if not isinstance(ins, Instruction):
            ins = listed[pc] = ins.build()
        return ins

    def raw_instructions(self) -> list:
        """The instructions as the assembler left them (some maybe records with ``build()``
        and ``made``, the rows their plan lowered): for ``lower``, which needs no objects."""
        pending = self.__dict__.get("_pending")
        return self.instructions if pending is None else pending

    def static_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for ins in self.raw_instructions():   # (a record knows its definition: nothing built)
            counts[ins.definition.engine] = counts.get(ins.definition.engine, 0) + 1
        return counts
