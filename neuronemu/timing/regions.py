"""The byte ranges the timing model tracks memory in: per memory space, a sorted array of byte
columns (``breaks``) that cuts every partition row into segments, so that every byte range an
operand can touch in a row is a whole number of segments.

Dependencies and races are then exact to the byte: two operands share a segment only if they
share a byte. Segments come from the operands themselves, not from a fixed granule, so a
buffer touched whole is one segment per row (one table entry per row, however large it is) and
a [P, 1] column next to a weight buffer gets segments of its own 4 bytes.

Sync mode ``auto`` times instructions while they run, so its cuts are worked out before the run
from the lowered program (``program_breaks``): every operand's first and one-past-last byte in
each row, and for a register-offset operand every place its registers can put it (its start moves
in steps of the gcd g of its register coefficients, inside its symbol's window). An operand whose
places are both many (more than ``FINE_PLACES``) and dense (g < ``FINE_STEP`` bytes), or more than
``LATTICE_LIMIT`` row boundaries in all, cuts its window into 64-byte blocks instead, the granule
of the earlier model: it can then wait on a neighbour in its block (a false dependency, never a
missed one), and the tables stay at most as large as that model's. ``.sync explicit`` replays recorded events, so it cuts at the offsets they
actually took (``neuronemu/timing/explicit.py``) and is exact always.
"""

from __future__ import annotations

import math

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L

FALLBACK_BYTES = 64
LATTICE_LIMIT = 1 << 16   # row boundaries of one register-offset operand enumerated exactly
FINE_PLACES = 256         # ... and more places than this only when they are FINE_STEP apart
FINE_STEP = 16


def program_breaks(program, widths: tuple[int, int, int]) -> tuple[np.ndarray, ...]:
    """The cuts of SBUF, PSUM and HBM (memory rows ``widths`` bytes wide), each sorted, unique,
    from 0 to the width; cached on the program per widths."""
    cache = program.__dict__.setdefault("_region_breaks", {})
    if widths not in cache:
        cache[widths] = _compute(program, widths)
    return cache[widths]


def _compute(program, widths) -> tuple[np.ndarray, ...]:
    points: list[list[np.ndarray]] = [[np.array([0, w], dtype=np.int64)] for w in widths]
    for a in program.allocations.values():
        points[L.SPACE_CODES[a.space]].append(
            np.array([a.offset, a.offset + a.bytes_per_partition], dtype=np.int64))
    for t in program.tensors.values():
        points[L.SPACE_HBM].append(np.array([t.offset, t.offset + t.nbytes], dtype=np.int64))
    ops = program.ops if program.ops is not None else np.zeros((0, L.OP_WIDTH), np.int64)
    ops = ops[(ops[:, L.OP_SPACE] != L.SPACE_IMM) & (ops[:, L.OP_PCOUNT] > 0)]
    fixed = ops[ops[:, L.OP_NREG] == 0]
    # on chip (and one-row HBM tiles) every row starts at the base
    flat = fixed[(fixed[:, L.OP_PCOLSTEP] == 0) | (fixed[:, L.OP_PCOUNT] == 1)]
    for space in range(3):
        mine = flat[flat[:, L.OP_SPACE] == space]
        points[space] += [mine[:, L.OP_BASE], mine[:, L.OP_BASE] + mine[:, L.OP_EXTENT]]
    # HBM tiles of several rows: every row's start and end. Distinct (base, pitch, rows,
    # extent) only, expanded a group of equal row counts at a time (one Python step per
    # operand was ~0.2 s of a 25,000-instruction traced matmul's set-up)
    rows = fixed[(fixed[:, L.OP_PCOLSTEP] != 0) & (fixed[:, L.OP_PCOUNT] > 1)]
    if len(rows):
        keys = np.unique(rows[:, [L.OP_SPACE, L.OP_BASE, L.OP_PCOLSTEP, L.OP_PCOUNT,
                                  L.OP_EXTENT]], axis=0)
        for count in np.unique(keys[:, 3]):
            group = keys[keys[:, 3] == count]
            starts = group[:, 1:2] + group[:, 2:3] * np.arange(count, dtype=np.int64)
            for space in np.unique(group[:, 0]):
                mine = group[:, 0] == space
                points[int(space)] += [starts[mine].ravel(),
                                       (starts[mine] + group[mine, 4:5]).ravel()]
    blocked: list[list[tuple[int, int]]] = [[], [], []]
    for op in ops[ops[:, L.OP_NREG] > 0]:
        exact = _register_points(op)
        if exact is None:
            blocked[op[L.OP_SPACE]].append((int(op[L.OP_LO]), int(op[L.OP_HI])))
        else:
            points[op[L.OP_SPACE]] += exact
    for space, windows in enumerate(blocked):
        points[space] += _block_points(windows)
    return tuple(_sorted_unique(np.clip(np.concatenate(p), 0, w))
                 for p, w in zip(points, widths))


def _block_points(windows: list[tuple[int, int]]) -> list[np.ndarray]:
    """The 64-byte block boundaries covering each window [lo, hi) (blocks lo // 64 to
    (hi + 63) // 64), and the windows' own ends. Overlapping windows are merged first:
    operands over one large tensor share its blocks, listed once (a kernel over a 1 GB HBM
    tensor spent 40 s sorting four copies of its 16 M blocks)."""
    out = [np.array([lo, hi], dtype=np.int64) for lo, hi in windows]
    merged: list[list[int]] = []
    for first, last in sorted((lo // FALLBACK_BYTES, (hi + FALLBACK_BYTES - 1) // FALLBACK_BYTES)
                              for lo, hi in windows):
        if merged and first <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    out += [np.arange(first, last + 1, dtype=np.int64) * FALLBACK_BYTES
            for first, last in merged]
    return out


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy's hash-based unique of int64 was 9x slower on 67 M)."""
    values = np.sort(values)
    if values.size < 2:
        return values
    keep = np.empty(values.size, dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _register_points(op: np.ndarray) -> list[np.ndarray] | None:
    """Every row boundary a register-offset operand can have: its start is the base plus a
    multiple of g (the gcd of its coefficients), inside its window [lo, hi). None: too many
    (or too dense) to list, so the window is cut into 64-byte blocks (``_block_points``)."""
    g = 0
    for k in range(int(op[L.OP_NREG])):
        g = math.gcd(g, abs(int(op[L.OP_COEF + 2 * k])))
    lo, hi = int(op[L.OP_LO]), int(op[L.OP_HI])
    pcount, pitch, extent = int(op[L.OP_PCOUNT]), int(op[L.OP_PCOLSTEP]), int(op[L.OP_EXTENT])
    span = (pcount - 1) * pitch + extent
    base = int(op[L.OP_BASE])
    if g == 0:
        first, count = base, 1
    else:
        first = lo + (base - lo) % g
        count = max(0, (hi - span - first) // g + 1)
    rows = pcount if pitch else 1
    if count * rows > LATTICE_LIMIT or (count > FINE_PLACES and g < FINE_STEP):
        return None
    starts = (first + g * np.arange(count, dtype=np.int64))[:, None]
    starts = (starts + pitch * np.arange(rows, dtype=np.int64)[None, :]).ravel()
    return [starts, starts + extent]


@jit
def segment(breaks, c):
    """The segment holding byte c: the last i with breaks[i] <= c (breaks[0] <= c)."""
    lo = 0
    hi = breaks.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if breaks[np.uintp(mid)] <= c:
            lo = mid
        else:
            hi = mid
    return lo


@jit(inline="always")
def segment_from(breaks, c, hint):
    """``segment(breaks, c)`` for a byte at or after breaks[hint]: a few steps on from ``hint``
    (the segment of the previous row of an operand whose rows ascend), else the search."""
    last = breaks.shape[0] - 2
    s = hint
    for _ in range(8):
        if s >= last or breaks[np.uintp(s + 1)] > c:
            return s
        s += 1
    return segment(breaks, c)


@jit(inline="always")
def segments_from(breaks, c, extent, hint):
    """``segments`` found with ``segment_from``: HBM tiles are cut at every row, so a [128, N]
    transfer looked up 4 x 128 rows by binary search (0.4 us of a 5 us DMA at N = 4)."""
    s0 = segment_from(breaks, c, hint)
    s1 = s0 + 1
    end = c + extent
    if end > breaks[np.uintp(s1)]:
        s1 = segment_from(breaks, end - 1, s0) + 1
    return s0, s1


@jit
def segments(breaks, c, extent):
    """Segments [s0, s1) covering bytes [c, c + extent) (exactly, when c and c + extent are
    cuts; otherwise the segments that hold them, a superset)."""
    s0 = segment(breaks, c)
    s1 = s0 + 1
    end = c + extent
    if end > breaks[np.uintp(s1)]:
        s1 = segment(breaks, end - 1) + 1
    return s0, s1
