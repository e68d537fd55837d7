"""Tile versions: the NKI 0.1 compiler's renaming of a tile written whole again.

In NKI 0.1 an on-chip tensor names values, not bytes: "the compiler analyzes the memory
dependency and allocates a physical address to each tile", choosing "a space-time tradeoff at
liberty" (the NKI migration guide, "Removing block dimensions": a block tensor is "syntactic
sugar for a list of tensors managed by the compiler", and "multi-buffering is implicit").
So when an instruction overwrites the whole of a tile, what it writes is a new value, which
the compiler may put on other bytes than the value it replaces; the next iteration's load
then need not wait (write-after-read) for the last iteration's reader.
adaptive_avg_pool2d's window buffer is one such tile: rewritten for every output position,
it is measured on trn2 at 0.83 us per window, less than one DMA's cross-engine latency, so
the windows overlap on the device (docs/nki.md, the calibration table).

Under the compiler's schedule, a 0.1 kernel's tile therefore gets a new version (a new
``Slot`` with a live range of its own, placed by ``_alloc`` as a fresh tile of the same call
site: double-buffered while memory lasts) at each instruction that

- writes its first operand whole (the table's access ``w``; the operand is the whole tile,
  no slice or access pattern) and nothing else of it (no in-place read),
- is not an accumulation (``accumulate=true``), a DMA that may skip (``oob=skip``), a
  scatter, a copy to a register-given place or ``stream_shuffle`` (mask 255 keeps a
  partition),

once the version before it has been used. Values cannot change: every later instruction
names the version the write made, and the old one is only read by instructions before it.
Tiles placed by hand (``address=``), HBM, and kernels with device loops or registers (a
loop body's write would be read by the next iteration's earlier instructions) keep one
version each; a kernel whose tiles do not fit with the versions is placed without them
(``Tracer._merge_versions``). The 0.2+ dialect keeps its tiles as written: without block
dimensions, a kernel multi-buffers by allocating in the loop (the same guide).
"""

from __future__ import annotations

import functools
import sys

from neuronemu.nki._alloc import Live
from neuronemu.nki._trace import HOOKS, Slot, TileRef

# written by these only in part, whatever view they name: rows an index picks, the place a
# register gives, the partitions a mask does not keep
_KEEPS_PART = frozenset({"dma.scatter", "gpsimd.tensor_copy_dynamic_dst",
                         "vector.tensor_copy_dynamic_dst", "vector.stream_shuffle"})


@functools.cache
def _writes_first() -> frozenset[str]:
    """Mnemonics whose first positional operand is written and not read."""
    from neuronemu.isa.table import load_isa

    out = set()
    for name, instr in load_isa().instructions.items():
        positional = [a for a in instr.args if not a.keyword]
        if positional and positional[0].kind == "tile" and positional[0].access == "w":
            out.add(name)
    return frozenset(out - _KEEPS_PART)


def _refs(op) -> list[tuple[object, object]]:
    """(position, TileRef) of every tile operand of ``op``: an int for a positional operand,
    the keyword's name for a keyword's."""
    out = [(i, v) for i, v in enumerate(op.operands) if type(v) is TileRef]
    out += [(k, v) for k, v in op.keywords.items() if type(v) is TileRef]
    return out


def split_versions(instructions: list, slots: list[Slot]) -> int:
    """Give each whole overwrite of an on-chip tile a version of its own (the module's
    docstring); new slots are appended to ``slots``. Returns how many were made."""
    writers = _writes_first()
    current: dict[int, Slot] = {}    # id(a tile's first slot) -> its version now
    last_use: dict[int, int] = {}    # id(a version) -> the last instruction naming it
    made: list[Slot] = []
    families = 0
    renamed: list[Slot] = []         # first slots that got later versions
    for i, op in enumerate(instructions):
        if op.label is not None:
            continue
        refs = _refs(op)
        if not refs:
            continue
        first = op.operands[0] if op.operands else None
        if (type(first) is TileRef and first.index is None and first.ap is None
                and op.mnemonic in writers and first.slot.live is not None
                and first.slot.live.fixed is None
                and op.keywords.get("accumulate") not in (True, "true", 1)
                and op.keywords.get("oob") != "skip"
                and sum(1 for _, r in refs if r.slot is first.slot) == 1):
            base = first.slot
            version = current.get(id(base), base)
            if id(version) in last_use:   # the value it replaces was used: a new one
                if not base.family:   # its versions rotate over homes of their own
                    families += 1
                    base.family = families
                new = Slot("", base.kind, base.dtype, base.shape, base.site,
                           program=base.program, family=base.family, version_of=base)
                new.live = Live(new, i, size=base.live.size)
                current[id(base)] = new
                made.append(new)
                if version is base:
                    renamed.append(base)
        for where, ref in refs:
            slot = ref.slot
            if slot.live is None:
                continue
            version = current.get(id(slot), slot)
            if version is not slot:
                moved = TileRef(version, ref.index, ref.ap)
                if type(where) is int:
                    op.operands = op.operands[:where] + (moved,) + op.operands[where + 1:]
                else:
                    op.keywords[where] = moved
            last_use[id(version)] = i
    for slot in renamed + made:
        slot.live.end = last_use.get(id(slot), -1)
    slots.extend(made)
    return len(made)


def merge_versions(instructions: list, slots: list[Slot], sequential: tuple | None):
    """Undo ``split_versions`` (a kernel that does not fit with its versions): every
    instruction names each version's first tile again, whose live range then covers the
    versions'; ``sequential`` (the tracer's record of the programs before they were
    interleaved, or None) likewise. Returns (the slots without the versions, sequential)."""
    def first(ref):
        return TileRef(ref.slot.version_of, ref.index, ref.ap)

    for op in instructions:
        if op.label is None:
            for where, ref in _refs(op):
                if ref.slot.version_of is not None:
                    if type(where) is int:
                        op.operands = op.operands[:where] + (first(ref),) + op.operands[where + 1:]
                    else:
                        op.keywords[where] = first(ref)
    versions = {id(s): s.version_of for s in slots if s.version_of is not None}
    for slot in slots:
        if slot.version_of is not None:
            base = slot.version_of
            base.live.end = max(base.live.end, slot.live.end)
            base.family = 0
    if sequential is not None:
        ops, lives = sequential
        ends: dict[int, int] = {}
        for live, _, end, _ in lives:
            base = versions.get(id(live.slot), live.slot)
            ends[id(base)] = max(ends.get(id(base), -1), end)
        sequential = (ops, [(live, start, ends.get(id(live.slot), end), fixed)
                            for live, start, end, fixed in lives if id(live.slot) not in versions])
    return [s for s in slots if s.version_of is None], sequential


HOOKS["versions"] = sys.modules[__name__]
