"""On-chip allocation by live range, as the NKI compiler allocates.

Every ``nl.ndarray(buffer=nl.sbuf/psum)`` (and every tile an ``nl`` wrapper returns) is a
tile of its own while tracing; its live range runs from the instruction count at its
allocation to the last instruction that names it. After the trace, the tiles are placed in
program order: a tile's bytes are free again once the instruction that last used it has been
issued, whatever Python objects still refer to it (a list of 112 tiles whose uses are over
costs nothing). A call site's first two tiles (of one dtype and shape) go next-fit: the search
for room starts after the last tile placed and wraps, so a tile freed a moment ago is the last
reused; from then on the site's tiles rotate over the byte ranges it already has, the one free
the longest first, and take a new range only when all of them are live. Consecutive
iterations of a loop thus land on different bytes (the double buffering the compiler gives
``affine_range`` bodies), and the generated file declares a few tiles per call site. A tile that does not fit is an error at its
allocating line that lists the tiles live there.

Tiles are declared as aliases of one pool per memory (``.sbuf pool uint8[128, N]`` and
``.sbuf NAME DTYPE[shape] alias=pool at=OFFSET``), so reused bytes are ordinary memory
dependencies to neuronemu's ``.sync auto`` (a new tile's writes wait for the old tile's last
reads). ``ndarray(address=(0, BYTES))`` places a tile by hand at that byte offset.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field

ALIGN = 4


@dataclass(slots=True)
class Live:
    """A tile's live range and placement."""

    slot: object                  # the tile's Slot (name, kind, dtype, shape, site)
    start: int                    # instructions issued before it was allocated
    end: int = -1                 # index of the last instruction naming it (-1: never used)
    fixed: int | None = None      # address=: the byte offset given by the kernel
    offset: int | None = None
    size: int = -1                # bytes per partition (asked for millions of times)

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = self.slot.bytes_per_partition


@dataclass
class Placement:
    """The result of ``place``: per-memory pool sizes and every used tile's offset."""

    pool_bytes: dict = field(default_factory=dict)
    placed: list = field(default_factory=list)


class Overflow(Exception):
    """A tile that does not fit: the tile and the tiles live when it was allocated."""

    def __init__(self, tile: Live, live: list[Live], capacity: int) -> None:
        super().__init__(tile.slot.name)
        self.tile, self.live, self.capacity = tile, live, capacity


def _fits_bank(offset: int, size: int, bank: int | None) -> int:
    """The first offset >= offset where a PSUM tile obeys the bank rule (one bank, or a bank
    boundary for a tile larger than a bank); SBUF (bank None) needs only alignment."""
    offset = -(-offset // ALIGN) * ALIGN
    if bank is None:
        return offset
    if size > bank or offset // bank != (offset + size - 1) // bank:
        return -(-offset // bank) * bank
    return offset


def place(tiles: list[Live], capacity: dict[str, int], bank: int,
          group_buffers: bool = False, sbuf_homes: int = 2) -> Placement:
    """Give every used tile an offset. A call site whose tiles already have two or more homes
    (byte ranges of the same dtype and shape) reuses the one free the longest, as a ring of
    buffers; otherwise the tile goes next-fit over the bytes free at its allocation.

    ``group_buffers`` (the compiler's schedule): a site reuses a home only once it has twice
    as many as it ever had tiles live at once, so that a group of tiles (eight lhsT tiles of
    one block) is double-buffered as a whole, not only tile by tile: the next group loads
    into bytes of its own while the last one is still being read; and an SBUF site reuses
    none before it has ``sbuf_homes`` (the tracer passes its DMA queue count, 16: each queue
    may have a transfer of the site's in flight). While memory lasts: a site that finds no
    room reuses a free home as before."""
    out = Placement()
    for kind in ("sbuf", "psum"):
        mine = sorted((t for t in tiles if t.slot.kind == kind and t.end >= 0),
                      key=lambda t: t.start)
        cap = capacity[kind]
        bank_size = bank if kind == "psum" else None
        # Placed tiles never share bytes unless the kernel placed some by hand (address=):
        # then live tiles sorted by offset are sorted by end too, and a search is a bisection
        # (a kernel keeping 5,000 tiles spent 20 s in linear scans); otherwise a plain scan.
        disjoint = all(t.fixed is None for t in mine)
        active = _Active(disjoint)       # placed and live, by offset
        homes: dict[tuple, list[list[int]]] = {}   # site key -> [[offset, last end], ...]
        most_live: dict[tuple, int] = {}   # site key -> the most of its tiles live at once
        cursor, peak = 0, 0
        for tile in mine:
            active.expire(tile.start)
            if tile.fixed is not None:
                tile.offset = tile.fixed
            else:
                s = tile.slot
                key = (s.site.filename, s.site.line, s.site.column, s.dtype, s.shape, s.family)
                ring = homes.setdefault(key, [])
                wanted = 2
                if group_buffers:
                    live = 1 + sum(1 for h in ring if h[1] >= tile.start)
                    most_live[key] = max(most_live.get(key, 1), live)
                    wanted = max(2 * most_live[key], sbuf_homes if kind == "sbuf" else 2)
                home = active.free_home(ring, tile) if len(ring) >= wanted else None
                if home is None:
                    tile.offset = active.next_fit(tile.size, cursor, cap, bank_size)
                    if tile.offset is None:
                        home = active.free_home(ring, tile)
                        if home is None:
                            raise Overflow(tile, list(active.tiles), cap)
                    else:
                        cursor = tile.offset + tile.size
                        home = [tile.offset, tile.end]
                        ring.append(home)
                tile.offset = home[0]
                home[1] = tile.end
            if tile.offset + tile.size > cap:
                raise Overflow(tile, list(active.tiles), cap)
            active.add(tile)
            peak = max(peak, tile.offset + tile.size)
            out.placed.append(tile)
        out.pool_bytes[kind] = peak
    return out


def _offset(t: Live) -> int:
    return t.offset


def _last_use(home: list[int]) -> int:
    return home[1]


def _end_byte(t: Live) -> int:
    return t.offset + t.size


class _Active:
    """The placed tiles still live, sorted by offset, with the two searches ``place`` makes."""

    def __init__(self, disjoint: bool) -> None:
        self.tiles: list[Live] = []
        self.disjoint = disjoint
        self.ends: list[tuple[int, int, Live]] = []    # heap of (last use, order, tile)
        self.order = 0

    def add(self, tile: Live) -> None:
        bisect.insort(self.tiles, tile, key=_offset)
        heapq.heappush(self.ends, (tile.end, self.order, tile))
        self.order += 1

    def expire(self, now: int) -> None:
        """Drop the tiles whose last use came before instruction ``now``."""
        if not self.ends or self.ends[0][0] >= now:
            return
        while self.ends and self.ends[0][0] < now:
            heapq.heappop(self.ends)
        self.tiles = [t for t in self.tiles if t.end >= now]

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether a live tile holds a byte of [lo, hi)."""
        if not self.disjoint:
            return any(t.offset < hi and lo < t.offset + t.size for t in self.tiles)
        i = bisect.bisect_left(self.tiles, hi, key=_offset)   # tiles[:i] start before hi
        return i > 0 and _end_byte(self.tiles[i - 1]) > lo

    def free_home(self, ring: list[list[int]], tile: Live) -> list[int] | None:
        """The home of ``ring`` whose bytes no live tile holds, the one free the longest (the
        first in ring order among equals). A home whose own last tile is still live is not
        free, so only homes last used before this tile are looked at, oldest first."""
        start = tile.start
        homes = [h for h in ring if h[1] < start]
        if len(homes) > 1:
            homes.sort(key=_last_use)
        for home in homes:
            if not self.overlaps(home[0], home[0] + tile.size):
                return home
        return None

    def next_fit(self, size: int, cursor: int, cap: int, bank: int | None) -> int | None:
        """The first gap of ``size`` bytes at or after ``cursor``, else from 0."""
        for begin in (cursor, 0):
            offset = _fits_bank(begin, size, bank)
            # the tiles ending after ``offset`` (all of them when tiles may overlap)
            first = bisect.bisect_right(self.tiles, offset, key=_end_byte) if self.disjoint else 0
            for t in self.tiles[first:]:
                if t.offset + t.size <= offset:
                    continue
                if t.offset >= offset + size:
                    break
                offset = _fits_bank(t.offset + t.size, size, bank)
            if offset + size <= cap:
                return offset
        return None
