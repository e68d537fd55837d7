"""The critical path of a run, compiled: the walk back from the last instruction to finish.

Each step goes to the event whose end set this one's start, preferring the same track (the
engine was busy) over another one (waiting for data); of several, the latest in program order.
When no event ends exactly there, the start waited for a result's pipeline latency
(isa/costs.toml ``latency``): the step goes to the last event to end before it, and the gap
counts for that event's track.
The walk was a Python loop (about 2 us per recorded instruction); this is the same walk over
events sorted by end time, with the same float64 sums in the same order.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L


@jit(inline="always")
def _bisect(values, x, right):
    """np.searchsorted(values, x, side="right" if right else "left") for sorted, NaN-free
    float64 values: numba's own compiles comparison overloads for every number type, complex
    ones included (~1 s of a first run)."""
    lo, hi = 0, values.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x or (right and values[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(inline="always")
def _first_max(values):
    """np.argmax(values) of a non-empty float64 array (the first maximum, or the first NaN):
    numba's own is a unit of its own to compile (~0.3 s of every first run)."""
    best = 0
    for i in range(values.shape[0]):
        if values[i] != values[i]:
            return i
        if values[i] > values[best]:
            best = i
    return best


@jit
def walk(tracks, starts, ends, by_end):
    """(ns per track [NUM_TRACKS], tracks in the order the walk first reached them, how many).
    ``by_end``: the events in order of end time, equal ends in program order (numpy's stable
    argsort, a timsort: ends arrive nearly sorted, so it is several times faster than a
    merge sort here)."""
    # (np.empty and loops, not np.zeros: numba compiles np.zeros once per dtype on a first run)
    shares = np.empty(L.NUM_TRACKS, dtype=np.float64)
    order = np.empty(L.NUM_TRACKS, dtype=np.int64)
    seen = np.empty(L.NUM_TRACKS, dtype=np.bool_)
    for t in range(L.NUM_TRACKS):
        shares[t] = 0.0
        seen[t] = False
    n_order = 0
    n = ends.shape[0]
    if n == 0:
        return shares, order, 0
    sorted_ends = ends[by_end]
    current = _first_max(ends)
    while True:
        track = tracks[current]
        if not seen[track]:
            seen[track] = True
            order[n_order] = track
            n_order += 1
        shares[track] += ends[current] - starts[current]
        start = starts[current]
        if start <= 0.0:
            break
        lo = _bisect(sorted_ends, start, False)
        hi = _bisect(sorted_ends, start, True)
        latest = -1
        latest_same = -1
        for j in range(hi - 1, lo - 1, -1):
            i = by_end[j]
            if i >= current:
                continue
            if latest < 0:
                latest = i
            if tracks[i] == track:
                latest_same = i
                break
        if latest < 0:
            # no exact match: the start waited for a pipeline latency after the last event to
            # end before it (events ending before ``start`` sit below ``lo``)
            for j in range(lo - 1, -1, -1):
                i = by_end[j]
                if i < current:
                    latest = i
                    break
            if latest < 0:
                break
            shares[tracks[latest]] += start - ends[latest]
        current = latest_same if latest_same >= 0 else latest
    return shares, order, n_order
