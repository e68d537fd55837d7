"""Busy intervals of one resource (a DMA engine, or a track under the compiler's schedule), and
the first idle gap where a piece of work fits.

A resource's intervals are a ring ``intervals`` [RING + 1, 2]: row 0 holds (count, head), rows
1.. the busy intervals (start, end) sorted by start from ``head`` on. Work placed later (in
program order) may use a gap left earlier: a DMA engine idled while a queue waited for its
fixed cost, or an engine waited for data that a later, independent instruction did not need.
Only the last RING intervals are remembered: when the ring is full the two oldest merge, so
the oldest gap is treated as busy (conservative), which also bounds how far back work moves
(a list scheduler's window).

A ring, a binary search past the intervals that end before ``earliest`` and an append without
a scan in the usual case (a rotated list shifted on every booking once full: 0.8 us a DMA over
16 engines); the same bookings as the scan from the oldest interval."""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit

RING = 32  # busy intervals remembered per resource; older gaps are given up


@jit
def _row(head, i):
    """The row of the ring's i-th interval (oldest first)."""
    return np.uintp(1 + (head + i) % RING)


@jit
def find_gap(intervals, earliest, duration):
    """(start, end of the interval before it or -1.0, its slot): the first idle gap of
    ``duration`` ns at or after ``earliest``. Nothing is booked, but a full ring first merges
    its two oldest intervals (the second starts at the first), so that ``book`` has room."""
    n = int(intervals[0, 0])
    head = int(intervals[0, 1])
    if n == RING:
        intervals[_row(head, 1), 0] = intervals[_row(head, 0), 0]
        head = (head + 1) % RING
        n -= 1
        intervals[0, 0] = n
        intervals[0, 1] = head
    start = earliest
    slot = n
    before = -1.0
    if n > 0 and intervals[_row(head, n - 1), 1] > earliest:
        # busy intervals do not overlap, so their ends ascend too: skip those ending by then
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if intervals[_row(head, mid), 1] <= earliest:
                lo = mid + 1
            else:
                hi = mid
        if lo > 0:
            before = intervals[_row(head, lo - 1), 1]
        for i in range(lo, n):
            a = intervals[_row(head, i), 0]
            b = intervals[_row(head, i), 1]
            if b <= start:
                before = b
                continue
            if a >= start + duration:
                slot = i
                break
            start = b
            before = b
    elif n > 0:
        before = intervals[_row(head, n - 1), 1]
    return start, before, slot


@jit
def book(intervals, start, duration, slot):
    """Mark [start, start + duration) busy at ``slot``, as find_gap just returned them."""
    n = int(intervals[0, 0])
    head = int(intervals[0, 1])
    for i in range(n, slot, -1):   # make room at ``slot`` (usually the end: nothing moves)
        intervals[_row(head, i), 0] = intervals[_row(head, i - 1), 0]
        intervals[_row(head, i), 1] = intervals[_row(head, i - 1), 1]
    intervals[_row(head, slot), 0] = start
    intervals[_row(head, slot), 1] = start + duration
    intervals[0, 0] = n + 1
    intervals[0, 1] = head


@jit(inline="always")  # one caller per unit: compiled inside it
def reserve(intervals, earliest, duration):
    """Book ``duration`` ns at the first idle gap at or after ``earliest``; returns its start."""
    start, _, slot = find_gap(intervals, earliest, duration)
    book(intervals, start, duration, slot)
    return start


@jit(inline="always")
def last_end(intervals):
    """When the resource's last booked work ends (0 when none)."""
    n = int(intervals[0, 0])
    if n == 0:
        return 0.0
    return intervals[_row(int(intervals[0, 1]), n - 1), 1]


@jit(inline="always")  # one caller per unit: compiled inside it
def fence(intervals, end):
    """Everything before ``end`` counts as busy from now on: later work cannot be placed
    before it (an instruction kept in program order)."""
    until = max(end, last_end(intervals))
    intervals[0, 0] = 1
    intervals[0, 1] = 0
    intervals[1, 0] = 0.0
    intervals[1, 1] = until
