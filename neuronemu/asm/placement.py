"""Where an on-chip buffer lives: automatic placement, ``at=`` and ``alias=`` (docs/language.md
"Placement and aliases").

Every buffer occupies the same byte range ``[offset, offset + bytes per partition)`` of every
partition. Buffers that are not aliases never share a byte (an explicit ``at=`` that would is an
error); an alias (``alias=OTHER``) lies inside OTHER's bytes, under its own shape and dtype, so
it reads and writes OTHER's memory (dependencies and races are tracked on bytes, so they see
through aliases). Automatic placement is the bump allocator it always was (declaration order,
4-byte aligned, PSUM tiles kept inside a bank), stepping over bytes an ``at=`` took.
"""

from __future__ import annotations

import math

from neuronemu.errors import AsmError
from neuronemu.isa import dtypes
from neuronemu.program import Allocation
from neuronemu.source import location_of

ALIGN = 4          # byte alignment of automatic on-chip allocations (at= needs the item size)
OPTIONS = ("at", "alias")


def place(asm, node, space: str, name: str, dtype: str, shape: tuple[int, ...],
          keywords: dict) -> Allocation:
    """The Allocation of ``.sbuf/.psum NAME DTYPE[shape] [at=BYTES] [alias=OTHER]``."""
    source = asm.source

    def fail(where, message, notes=()):
        return AsmError(message, location_of(source, getattr(where, "meta", where)), notes)

    for key, value in keywords.items():
        if key not in OPTIONS:
            raise fail(value, f"unknown option '{key}' for .{space} (options: at=BYTE_OFFSET, "
                              f"alias=BUFFER)")
    size = math.prod(shape[1:]) * dtypes.get(dtype).itemsize   # exact: no int64 wrap
    target = asm.target
    capacity = target.sbuf_partition_bytes if space == "sbuf" else target.psum_partition_bytes
    bank = target.psum_bank_bytes if space == "psum" else None
    where = location_of(source, node.meta)
    mine = [a for a in asm.allocations.values() if a.space == space]

    alias = None
    if "alias" in keywords:
        word = keywords["alias"]
        other = str(word.children[0]) if word.data == "name" else ""
        if other not in asm.allocations:
            if other in asm.tensors:
                raise fail(word, f"alias={other}: '{other}' is an HBM tensor; an alias shares the "
                                 f"bytes of an on-chip buffer (view an HBM tensor's bytes as "
                                 f"another dtype with ap(..., DTYPE))")
            declared = ", ".join(a.name for a in mine) or "none"
            raise fail(word, f"alias= names an on-chip buffer declared before this line; "
                             f"'{other or 'an expression'}' is not one",
                       (f"{space.upper()} buffers so far: {declared}",))
        alias = asm.allocations[other]
        if alias.space != space:
            raise fail(word, f"alias={other}: '{other}' is in {alias.space.upper()}, this buffer "
                             f"in {space.upper()}; an alias shares bytes of its own memory")
        if shape[0] > alias.shape[0]:
            raise fail(node, f"alias '{name}' spans {shape[0]} partitions but '{other}' spans "
                             f"{alias.shape[0]}: an alias uses only the partitions of the buffer "
                             f"it shares")

    if "at" in keywords:
        offset = asm.eval.integer(keywords["at"])
        item = dtypes.get(dtype).itemsize
        if offset < 0 or offset % item:
            raise fail(keywords["at"], f"at= is a byte offset in every partition, a multiple of "
                                       f"{item} (the size of one {dtype}) and >= 0; got {offset}")
    elif alias is not None:
        offset = alias.offset
    else:
        offset = _automatic(asm, space, size, bank)

    end = offset + size
    if end > capacity:
        used = ", ".join(f"{a.name} {a.bytes_per_partition}" for a in mine if a.alias is None)
        raise AsmError(f"{space.upper()} overflow on {target.name}: '{name}' needs {size} bytes "
                       f"per partition at offset {offset}, but {space.upper()} has {capacity} "
                       f"bytes per partition", where,
                       (f"already allocated (bytes per partition): {used or 'nothing'}",))
    if bank is not None and "at" in keywords:
        straddles = offset // bank != (end - 1) // bank
        if size <= bank and straddles:
            raise fail(keywords["at"], f"PSUM buffer '{name}' ({size} bytes per partition) at "
                                       f"{offset} straddles banks {offset // bank} and "
                                       f"{(end - 1) // bank} ({bank} bytes each); a buffer that "
                                       f"fits in a bank lies inside one")
        if size > bank and offset % bank:
            raise fail(keywords["at"], f"PSUM buffer '{name}' ({size} bytes per partition) is "
                                       f"larger than a bank: it starts on a bank boundary (a "
                                       f"multiple of {bank}), not at {offset}")
    if alias is not None:
        lo, hi = alias.offset, alias.offset + alias.bytes_per_partition
        if offset < lo or end > hi:
            raise fail(node, f"alias '{name}' covers bytes {offset}..{end - 1} of each partition "
                             f"but '{alias.name}' holds bytes {lo}..{hi - 1}: an alias lies "
                             f"inside the buffer it shares")
    else:
        for other in mine:
            if other.alias is None and offset < other.offset + other.bytes_per_partition \
                    and other.offset < end:
                first = max(offset, other.offset)
                last = min(end, other.offset + other.bytes_per_partition) - 1
                raise fail(keywords.get("at", node),
                           f"'{name}' at bytes {offset}..{end - 1} overlaps '{other.name}' (bytes "
                           f"{other.offset}..{other.offset + other.bytes_per_partition - 1}) on "
                           f"bytes {first}..{last} of every partition",
                           (f"to share bytes on purpose, declare it alias={other.name}",))
        if "at" not in keywords:
            asm.next_offset[space] = end
    return Allocation(name, space, dtype, tuple(shape), offset, where,
                      alias=alias.name if alias is not None else None, placed="at" in keywords)


def _automatic(asm, space: str, size: int, bank: int | None) -> int:
    """The bump allocator's next offset, moved past any bytes an ``at=`` buffer holds."""
    placed = sorted((a.offset, a.offset + a.bytes_per_partition)
                    for a in asm.allocations.values()
                    if a.space == space and a.placed and a.alias is None)
    offset = asm.next_offset[space]
    while True:
        offset = -(-offset // ALIGN) * ALIGN
        if bank is not None:
            # a tile that fits in a bank never straddles two; larger tiles start on a bank
            straddles = offset // bank != (offset + size - 1) // bank
            if size > bank or straddles:
                offset = -(-offset // bank) * bank
        clash = next((hi for lo, hi in placed if offset < hi and lo < offset + size), None)
        if clash is None:
            return offset
        offset = clash
