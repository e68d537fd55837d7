"""The live-range allocator's searches (neuronemu/nki/_alloc.py) against a brute-force
reference of the same rules: every live tile scanned for each question, nothing sorted or
bisected. Random tile sets (call sites, sizes, live ranges, PSUM banks, hand-placed tiles)
must get the same offsets, the same pool sizes and the same overflows."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from neuronemu.nki import _alloc


@dataclass(frozen=True)
class _Site:
    filename: str
    line: int
    column: int


@dataclass
class _Slot:
    name: str
    kind: str
    dtype: str
    shape: tuple
    site: _Site
    bytes_per_partition: int
    family: int = 0   # versions of one tile (nki/_versions.py) share homes of their own


def reference_place(tiles, capacity, bank, group_buffers=False, sbuf_homes=2):
    """The rules of ``_alloc.place`` written as plainly as possible: (offsets, pool bytes), or
    the overflowing tile's name and the names of the live tiles. ``group_buffers``: a site
    reuses a home only once it has twice as many as the most of its tiles ever live at once,
    and an SBUF site only once it has ``sbuf_homes``."""
    offsets, pools = {}, {}
    for kind in ("sbuf", "psum"):
        mine = sorted((t for t in tiles if t.slot.kind == kind and t.end >= 0),
                      key=lambda t: t.start)
        cap, bank_size = capacity[kind], bank if kind == "psum" else None
        active, homes, cursor, peak = [], {}, 0, 0
        most = {}

        def overlaps(lo, hi, active):
            return any(offsets[id(t)] < hi and lo < offsets[id(t)] + t.size for t in active)

        def free_home(ring, size, active):
            best = None
            for home in ring:
                if not overlaps(home[0], home[0] + size, active) and (
                        best is None or home[1] < best[1]):
                    best = home
            return best

        def next_fit(size, active, cursor, cap, bank_size):
            for begin in (cursor, 0):
                offset = _alloc._fits_bank(begin, size, bank_size)
                moved = True
                while moved:      # until no live tile overlaps [offset, offset + size)
                    moved = False
                    for t in sorted(active, key=lambda t: offsets[id(t)]):
                        if offsets[id(t)] < offset + size and offset < offsets[id(t)] + t.size:
                            offset = _alloc._fits_bank(offsets[id(t)] + t.size, size, bank_size)
                            moved = True
                if offset + size <= cap:
                    return offset
            return None

        for tile in mine:
            active = [t for t in active if t.end >= tile.start]
            live = sorted((t.slot.name for t in active), key=lambda n: n)
            if tile.fixed is not None:
                offset = tile.fixed
            else:
                s = tile.slot
                key = (s.site, s.dtype, s.shape, s.family)
                ring = homes.setdefault(key, [])
                wanted = 2
                if group_buffers:
                    # this tile and the site's tiles still live (each home's last tile)
                    live_now = 1 + len([h for h in ring if h[1] >= tile.start])
                    most[key] = max(most.get(key, 1), live_now)
                    wanted = 2 * most[key]
                    if kind == "sbuf":
                        wanted = max(wanted, sbuf_homes)
                home = free_home(ring, tile.size, active) if len(ring) >= wanted else None
                if home is None:
                    offset = next_fit(tile.size, active, cursor, cap, bank_size)
                    if offset is None:
                        home = free_home(ring, tile.size, active)
                        if home is None:
                            return ("overflow", tile.slot.name, live)
                    else:
                        cursor = offset + tile.size
                        home = [offset, tile.end]
                        ring.append(home)
                offset = home[0]
                home[1] = tile.end
            if offset + tile.size > cap:
                return ("overflow", tile.slot.name, live)
            offsets[id(tile)] = offset
            active.append(tile)
            peak = max(peak, offset + tile.size)
        pools[kind] = peak
    return {t.slot.name: offsets[id(t)] for t in tiles if id(t) in offsets}, pools


def _random_tiles(rng: random.Random, fixed: bool) -> list:
    sites = [_Site("k.py", line, 4) for line in range(1, rng.randint(2, 6))]
    tiles, clock = [], 0
    for i in range(rng.randint(1, 60)):
        kind = rng.choice(["sbuf", "sbuf", "psum"])
        site = rng.choice(sites)
        size = rng.choice([4, 64, 512, 2048, 2052, 4096])
        slot = _Slot(f"t{i}", kind, "float32", (128, size // 4), site, size,
                     1 if i % 7 == 6 else 0)
        clock += rng.randint(0, 3)
        tile = _alloc.Live(slot, clock)
        tile.end = -1 if rng.random() < 0.05 else clock + rng.randint(0, 40)
        if fixed and rng.random() < 0.1:
            tile.fixed = rng.randrange(0, 8192, 4)
        tiles.append(tile)
    return tiles


@pytest.mark.parametrize("group_buffers,sbuf_homes", [(False, 2), (True, 2), (True, 5)])
@pytest.mark.parametrize("fixed", [False, True])
def test_placements_match_the_brute_force_rules(fixed, group_buffers, sbuf_homes):
    rng = random.Random(25 + fixed)
    capacity, bank = {"sbuf": 16384, "psum": 8192}, 2048
    modes_differ = 0
    for _ in range(400):
        tiles = _random_tiles(rng, fixed)
        want = reference_place(tiles, capacity, bank, group_buffers, sbuf_homes)
        modes_differ += want != reference_place(tiles, capacity, bank, not group_buffers)
        for t in tiles:
            t.offset = None
        try:
            got = _alloc.place(tiles, capacity, bank, group_buffers, sbuf_homes)
        except _alloc.Overflow as e:
            assert want == ("overflow", e.tile.slot.name,
                            sorted(t.slot.name for t in e.live)), want
            continue
        offsets = {t.slot.name: t.offset for t in got.placed}
        assert (offsets, got.pool_bytes) == want
    assert modes_differ > 10   # the two modes place some of these sets differently
