"""The DMA engines' booking (neuronemu.timing.intervals.reserve: a ring with a binary search) against a
plain list that does what the docstring says, scanning every remembered interval from the
oldest: random bookings, in and out of order, many more than the list remembers."""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu.timing.intervals import RING as ENGINE_INTERVALS
from neuronemu.timing.intervals import reserve


def _reference(busy: list[list[float]], earliest: float, duration: float) -> float:
    if len(busy) == ENGINE_INTERVALS:      # the two oldest merge
        busy[0][1] = busy[1][1]
        del busy[1]
    start, slot = earliest, len(busy)
    for i, (a, b) in enumerate(busy):
        if b <= start:
            continue
        if a >= start + duration:
            slot = i
            break
        start = b
    busy.insert(slot, [start, start + duration])
    return start


def _ring(intervals: np.ndarray) -> list[list[float]]:
    n, head = int(intervals[0, 0]), int(intervals[0, 1])
    return [list(intervals[1 + (head + i) % ENGINE_INTERVALS]) for i in range(n)]


@pytest.mark.parametrize("seed", range(8))
def test_bookings_match_the_plain_scan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    intervals = np.zeros((ENGINE_INTERVALS + 1, 2))
    busy: list[list[float]] = []
    clock = 0.0
    for _ in range(600):
        clock += float(rng.exponential(30.0))
        # mostly in order, sometimes far back (a queue that was free while the engine idled)
        earliest = clock - float(rng.uniform(0, 400)) if rng.random() < 0.3 else clock
        duration = float(rng.choice([rng.uniform(0.5, 80.0), 5.0]))
        want = _reference(busy, earliest, duration)
        assert reserve(intervals, earliest, duration) == want
        assert _ring(intervals) == busy
    assert len(busy) == ENGINE_INTERVALS   # the merging was exercised
