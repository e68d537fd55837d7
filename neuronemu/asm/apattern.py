"""Raw access-pattern operands: ``ap(NAME, [[step, count], ...], OFFSET, DTYPE)``.

The operand names a declared buffer and reads it as NKI's ``t.ap(pattern, offset, dtype=)``
does (docs/language.md "Access patterns"): the buffer is a flat row-major array of elements
(of DTYPE when given: a dtype view of the same bytes, else of its own dtype); OFFSET is the
flat element index of the first element; the first ``[step, count]`` pair walks the partitions,
the others (at most ``layout.MAX_FREE_DIMS``, outer to inner) the elements of each partition.
Steps and the offset are in elements, never bytes.

It lowers onto the ordinary operand row (``Tile``), so nothing downstream (checks, lowering,
the jitted loaders, dependency tracking) needs to know it was written this way. Kept out of
``assembler.py`` so operand resolution there can change without touching this.
"""

from __future__ import annotations

import difflib
import math

import numpy as np

from neuronemu.errors import AsmError
from neuronemu.isa import dtypes
from neuronemu.machine import layout as L
from neuronemu.program import Allocation, Tile
from neuronemu.source import location_of

USAGE = "ap(NAME, [[partition_step, partitions], [step, count], ...], offset, dtype)"
# a destination's elements are checked to be distinct by enumerating them up to this many
# (beyond, a sufficient condition on the sorted steps decides)
_ENUMERATE_LIMIT = 1 << 20
_MAX = 1 << 40   # largest step or count (as the assembler's MAX_DIM: offsets stay far inside int64)


def is_access_pattern(node) -> bool:
    return getattr(node, "data", None) == "call" and str(node.children[0]) == "ap"


def access_pattern(asm, definition, arg, node) -> Tile:
    """The tile ``ap(...)`` (``node``, a call) names for argument ``arg`` of ``definition``."""
    source = asm.source

    def fail(where, message, notes=()):
        return AsmError(message, location_of(source, getattr(where, "meta", where)), notes)

    params = list(node.children[1:])
    if not 2 <= len(params) <= 4:
        raise fail(node, f"ap takes 2 to 4 arguments, got {len(params)}; usage: {USAGE}")
    buffer = params[0]
    if buffer.data != "name":
        raise fail(buffer, f"the first argument of ap is a declared buffer's name (the pattern "
                           f"addresses the whole buffer), not a slice; usage: {USAGE}")
    name = str(buffer.children[0])
    symbols = asm._tile_symbols()
    if name not in symbols:
        close = difflib.get_close_matches(name, list(symbols), n=1)
        raise AsmError(f"unknown tile '{name}'"
                       + (f"; did you mean '{close[0]}'?" if close else ""),
                       location_of(source, buffer.meta),
                       (f"declared tiles: {', '.join(symbols) or 'none'}",), symbol=name)
    view = None
    if len(params) == 4:
        view = str(params[3].children[0]) if params[3].data == "name" else ""
    where = {"buffer": buffer, "offset": params[2] if len(params) >= 3 else node,
             "dtype": params[3] if len(params) == 4 else node, "pattern": params[1],
             "node": node}
    _elements(asm, definition, arg, symbols[name], view, where, fail)
    pattern = _pattern(asm, params[1], fail)
    if len(params) >= 3:
        offset = asm.eval.offset(params[2], "the ap offset")
    else:
        from neuronemu.asm.expr import Affine
        offset = Affine(0)
    regs = tuple(sorted((int(r), int(c)) for r, c in offset.regs.items() if c))
    where["pair"] = next(c for c in params[1].children if c is not None)
    return pattern_tile(asm, definition, arg, symbols[name], pattern, int(offset.const), regs,
                        view, where, fail)


def pattern_tile(asm, definition, arg, symbol, pattern: list[tuple[int, int]], start: int,
                 regs: tuple, view: str | None, where: dict, fail) -> Tile:
    """The tile of ``ap(symbol, pattern, start + regs, view)`` for argument ``arg``: the
    checks and the lowering shared by the operand text and a traced view (asm/direct.py).
    ``where``: what to point a problem at, by part (buffer, offset, dtype, pair, pattern,
    node); ``fail(where, message, notes)`` makes the error."""
    name = symbol.name
    node = where["node"]
    what = f"{definition.name} argument '{arg.name}'"
    on_chip = isinstance(symbol, Allocation)
    space = symbol.space if on_chip else "hbm"
    dtype, itemsize, row_bytes = _elements(asm, definition, arg, symbol, view, where, fail)
    if start < 0:
        raise fail(where["offset"], f"the ap offset must be >= 0 (an element of '{name}'), "
                                    f"got {start}")
    if len(regs) > L.MAX_REG_TERMS:
        raise fail(where["offset"], f"at most {L.MAX_REG_TERMS} registers may offset one tile")
    writes = "w" in arg.access
    (pstep, pcount), free = pattern[0], pattern[1:]
    pattern_node = where["pattern"]

    broadcast = pstep == 0 and pcount > 1
    if broadcast and not arg.broadcast:
        allowed = ("only DMA sources broadcast a row to every partition (docs/dma.md "
                   "\"Partition broadcast\")")
        raise fail(where["pair"], f"partition step 0 (broadcast) is not allowed for {what}: "
                                  f"{allowed}")

    elements = row_bytes // itemsize   # per partition on chip, of the whole tensor in HBM
    free_span = sum(s * (c - 1) for s, c in free)   # steps are >= 0 (checked)
    if on_chip:
        partition_start, column = divmod(start, elements)
        if pcount > 1 and not broadcast and pstep != elements:
            raise fail(where["pair"],
                       f"the partition step of {space.upper()} buffer '{name}' must be "
                       f"{elements} (one partition: its row of {elements} {dtype} elements) or 0 "
                       f"(broadcast, DMA sources only), got {pstep}",
                       ("on-chip partitions are consecutive: a tile cannot skip or revisit "
                        + "partitions",))
        last_partition = partition_start + (0 if broadcast else pcount - 1)
        if last_partition >= symbol.shape[0]:
            raise fail(node, f"the pattern reaches partition {last_partition} of '{name}', which "
                             f"has {symbol.shape[0]} (offset {start} starts at partition "
                             f"{partition_start}, element {column})")
        if column + free_span >= elements:
            raise fail(node, f"the pattern reaches element {column + free_span} of a partition of "
                             f"'{name}', which holds {elements} {dtype} elements per partition "
                             f"(offset {start} starts at element {column} of partition "
                             f"{partition_start})")
        base = symbol.offset + column * itemsize
        pitch = 0
        window = (symbol.offset, symbol.offset + row_bytes)
    else:
        partition_start = 0
        last = start + (0 if broadcast else (pcount - 1) * pstep) + free_span
        if last >= elements:
            raise fail(node, f"the pattern reaches element {last} of '{name}', which holds "
                             f"{elements} {dtype} elements (offset {start} + partitions "
                             f"{0 if broadcast else (pcount - 1) * pstep} + free {free_span})")
        base = symbol.offset + start * itemsize
        pitch = 0 if broadcast else pstep * itemsize
        window = (symbol.offset, symbol.offset + row_bytes)
    if writes:
        # a free step of 0 writes one element again and again (NKI kernels name such a dst
        # for an output they discard): the last write stays; the other dims must be distinct
        written = [(st, c) for st, c in (free if on_chip else pattern) if st != 0]
        _check_distinct(written, pattern_node, fail, what)

    dims = [(s * itemsize, c) for s, c in free if c != 1]
    merged: list[tuple[int, int]] = []
    for s, c in dims:
        if merged and merged[-1][0] == s * c:
            merged[-1] = (s, merged[-1][1] * c)
        else:
            merged.append((s, c))
    if len(merged) > L.MAX_FREE_DIMS:
        raise fail(pattern_node, f"the pattern needs {len(merged)} free dims; at most "
                                 f"{L.MAX_FREE_DIMS} are supported")
    byte_regs = tuple((r, c * itemsize) for r, c in regs)
    asm._check_register_bytes(node, (c for _, c in byte_regs))
    spec = (("ap", start, regs, tuple(pattern), view or ""),)
    return Tile(space, dtype, name, base, partition_start, pcount, pitch, tuple(merged),
                byte_regs, window, location_of(asm.source, getattr(node, "meta", node)), spec,
                broadcast=broadcast)


def _elements(asm, definition, arg, symbol, view: str | None, where: dict,
              fail) -> tuple[str, int, int]:
    """(the dtype the pattern counts in, its size, the bytes the pattern may address: of one
    partition on chip, of the whole tensor in HBM), once the buffer may be read by pattern."""
    name = symbol.name
    what = f"{definition.name} argument '{arg.name}'"
    on_chip = isinstance(symbol, Allocation)
    space = symbol.space if on_chip else "hbm"
    if getattr(symbol, "compressed", False):
        raise fail(where["buffer"], f"'{name}' is stored compressed: its bytes are blocks, not "
                                    f"elements, so it has no access pattern (slice whole "
                                    f"blocks instead)")
    if arg.compressed == "yes":
        raise fail(where["node"], f"{what} is compressed data; an access pattern addresses "
                                  f"plain elements (use a slice of a compressed tensor)")
    if space not in arg.spaces:
        allowed = " or ".join(s.upper() for s in arg.spaces)
        raise fail(where["node"], f"{what} must be in {allowed}, but '{name}' is in "
                                  f"{space.upper()}")
    dtype = symbol.dtype
    if view is not None:
        if view not in dtypes.names():
            raise fail(where["dtype"], f"the fourth argument of ap is a dtype (a view of the "
                                       f"bytes as that type), e.g. int32; got "
                                       f"{repr(view) if view else 'an expression'}",
                       (f"dtypes: {', '.join(dtypes.names())}",))
        if view not in asm.target.dtypes:
            raise fail(where["dtype"], f"dtype {view} is not available on {asm.target.name}")
        dtype = view
    itemsize = dtypes.get(dtype).itemsize
    row_bytes = symbol.bytes_per_partition if on_chip else symbol.nbytes
    if row_bytes % itemsize:   # only a view can fail this
        unit = "a partition of " if on_chip else ""
        raise fail(where["dtype"], f"{unit}'{name}' holds {row_bytes} bytes ({symbol.dtype}), "
                                   f"not a whole number of {dtype} elements ({itemsize} bytes "
                                   f"each)")
    return dtype, itemsize, row_bytes


def _pattern(asm, node, fail) -> list[tuple[int, int]]:
    """[[step, count], ...]: constant integers, steps >= 0, counts >= 1, at least one pair."""
    shape = ("the pattern is a list of [step, count] pairs, partitions first, e.g. "
             "[[512, 128], [1, 512]]")
    if node.data != "list":
        raise fail(node, f"{shape}; usage: {USAGE}")
    pairs = [c for c in node.children if c is not None]
    if not pairs:
        raise fail(node, f"{shape}: it needs at least the partition pair")
    if len(pairs) > 1 + L.MAX_FREE_DIMS:
        raise fail(node, f"the pattern has {len(pairs) - 1} free dims; at most "
                         f"{L.MAX_FREE_DIMS} (plus the partition pair)")
    out = []
    for pair in pairs:
        items = [c for c in pair.children if c is not None] if pair.data == "list" else []
        if pair.data != "list" or len(items) != 2:
            raise fail(pair, f"{shape}; this item is not a [step, count] pair")
        step, count = (asm.eval.integer(items[0]), asm.eval.integer(items[1]))
        if step < 0:
            raise fail(items[0], f"a step must be >= 0 (negative steps are not supported), got "
                                 f"{step}")
        if count < 1:
            raise fail(items[1], f"a count must be >= 1, got {count}")
        if step > _MAX or count > _MAX:
            raise fail(pair, f"[{step}, {count}] is too large (at most {_MAX})")
        out.append((step, count))
    return out


def is_valid_pattern(pairs) -> bool:
    """Whether ``pairs`` is a pattern ``_pattern`` accepts (a traced view's: asm/direct.py)."""
    return 1 <= len(pairs) <= 1 + L.MAX_FREE_DIMS and all(
        type(st) is int and type(c) is int and 0 <= st <= _MAX and 1 <= c <= _MAX
        for st, c in pairs)


def _check_distinct(pattern, node, fail, what) -> None:
    """A written pattern must name every element once (two writes of one element in one
    instruction have no defined order). Cheap sufficient test first (each step passes beyond
    everything the smaller steps reach: true of every row-major pattern), then, when it fails,
    the elements themselves are enumerated (up to _ENUMERATE_LIMIT)."""
    counts = [c for _, c in pattern]
    total = math.prod(counts)
    if total <= 1:
        return
    reach = 0
    for s, c in sorted(p for p in pattern if p[1] > 1):
        if s <= reach:
            break
        reach += s * (c - 1)
    else:
        return
    if total <= _ENUMERATE_LIMIT:
        index = np.zeros(1, dtype=np.int64)
        for s, c in pattern:
            index = (index[:, None] + s * np.arange(c, dtype=np.int64)[None, :]).ravel()
        if np.unique(index).size == total:
            return
    raise fail(node,
               f"{what} is written, but its pattern names some elements more than once "
               f"(steps {[s for s, _ in pattern]}, counts {counts}); a destination's elements "
               f"must be distinct")
