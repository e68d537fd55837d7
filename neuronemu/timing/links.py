"""Link booking for the multi-chip network model, compiled.

Each direction of each link keeps its booked intervals sorted and disjoint (touching intervals
merge) in row ``link`` of ``starts`` / ``ends``; ``counts[link]`` says how many. ``book_many``
books messages in turn, each at the first time >= its ready at which every link of its route is
free for its duration (the same fixpoint as before: each link moves the start to its own first
gap, until none moves it). It was Python (bisect over lists, ~30 us per message on 144 chips); the
comparisons and float sums are the same, so the times are identical.
"""

from __future__ import annotations

import numpy as np

from neuronemu.compiled.jit import jit


@jit
def _earliest(starts, ends, n, t, duration):
    """First time >= t at which the link (its n intervals) is free for ``duration``."""
    i = np.searchsorted(ends[:n], t, side="right")
    while i < n:
        if starts[i] >= t + duration:
            return t
        t = max(t, ends[i])
        i += 1
    return t


@jit
def _book(starts, ends, n, start, end):
    """Insert [start, end) merging with overlapping or touching intervals; returns the new n."""
    i = np.searchsorted(starts[:n], start, side="left")
    lo = i
    if i > 0 and ends[i - 1] >= start:
        lo = i - 1
        start = starts[lo]
        end = max(end, ends[lo])
    hi = i   # first interval not merged yet
    while hi < n and starts[hi] <= end:
        end = max(end, ends[hi])
        hi += 1
    # intervals lo .. hi-1 (those merged) become one at lo
    removed = hi - lo
    if removed == 0:
        for j in range(n, lo, -1):
            starts[j] = starts[j - 1]
            ends[j] = ends[j - 1]
        starts[lo] = start
        ends[lo] = end
        return n + 1
    starts[lo] = start
    ends[lo] = end
    shift = removed - 1
    if shift:
        for j in range(lo + 1, n - shift):
            starts[j] = starts[j + shift]
            ends[j] = ends[j + shift]
    return n - shift


@jit
def _gap_after(ge, j, last, t):
    """The first gap at or after j (ge sorted, ge[j] <= t < ge[last]) that ends after t: a
    gallop from j, then halving. The common start of a route can jump over hundreds of a
    link's gaps at once (another link of the route was busy there): stepping over them one by
    one was 1.7 G steps of a 1,152-rank mesh step, this is 0.2 G."""
    lo = j
    step = 1
    hi = min(j + 1, last)
    while ge[hi] <= t:
        lo = hi
        step *= 2
        hi = min(j + step, last)
    return _first_ending_after(ge, lo + 1, hi, t)   # ge[lo] <= t < ge[hi]


@jit(inline="always")
def _first_ending_after(ge, lo, hi, t):
    """The first gap in [lo, hi) that ends after t (ge sorted), by halving; hi if none."""
    while lo < hi:
        m = (lo + hi) >> 1
        if ge[m] > t:
            hi = m
        else:
            lo = m + 1
    return lo


GAP_BATCH = 4096   # a batch this large is booked from its links' gaps (_book_by_gaps)


@jit
def book_many(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes, link_busy,
              link_messages, link_bytes):
    """Book messages one after another, each at the first common free time of its route's
    links at or after its ready time (``_book_in_turn``; ``_book_by_gaps`` for a batch of
    GAP_BATCH messages or more, the same result faster). Returns the starts."""
    if route_of.shape[0] >= GAP_BATCH:
        return _book_by_gaps(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes,
                             link_busy, link_messages, link_bytes)
    return _book_in_turn(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes,
                         link_busy, link_messages, link_bytes)


@jit
def _book_in_turn(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes, link_busy,
                  link_messages, link_bytes):
    """Book messages one after another, each at the first common free time of its route's
    links at or after its ready time (first-fit; duration 0: at its ready time): message i
    takes route ``route_of[i]`` (link rows ``rows[ptr[r]:ptr[r + 1]]``), is ready at
    ``ready[i]`` and lasts ``duration[i]``; each link it crosses counts it (messages, bytes,
    busy time, summed in message order). The caller has made room for every booking. Returns
    the starts.

    The same starts, found faster: with r0 the earliest ready time and dmin the shortest
    duration of the batch, ``floor[link]`` is the first time >= r0 at which the link is free
    for dmin. No message of the batch can start on that link before its floor (it would need a
    free gap of at least dmin there), and bookings only take free time, so each search starts
    at the floor instead of rescanning the link's early, fragmented intervals (a 1,152-rank mesh
    step books 1.3 M messages on links holding hundreds of intervals each). A floor is moved on
    only when a booking covers it."""
    n = route_of.shape[0]
    out = np.empty(n)
    if n == 0:
        return out
    r0 = ready.min()
    dmin = duration.min()
    floor = np.full(counts.shape[0], -np.inf)
    known = np.zeros(counts.shape[0], dtype=np.bool_)
    for i in range(n):
        r = route_of[i]
        route = rows[ptr[r]:ptr[r + 1]]
        d = duration[i]
        start = ready[i]
        if d > 0.0:
            if dmin > 0.0:
                for k in range(route.shape[0]):
                    link = route[k]
                    if not known[link]:
                        floor[link] = _earliest(starts[link], ends[link], counts[link], r0,
                                                dmin)
                        known[link] = True
            while True:
                moved = False
                for k in range(route.shape[0]):
                    link = route[k]
                    t = _earliest(starts[link], ends[link], counts[link],
                                  max(start, floor[link]), d)
                    if t > start:
                        start = t
                        moved = True
                if not moved:
                    break
            for k in range(route.shape[0]):
                link = route[k]
                counts[link] = _book(starts[link], ends[link], counts[link], start, start + d)
                if dmin > 0.0 and start <= floor[link] + dmin:
                    floor[link] = _earliest(starts[link], ends[link], counts[link],
                                            floor[link], dmin)
        out[i] = start
        for k in range(route.shape[0]):
            link = route[k]
            link_messages[link] += 1
            link_bytes[link] += nbytes[i]
            link_busy[link] += d
    return out


@jit
def _book_by_gaps(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes, link_busy,
                  link_messages, link_bytes):
    """``_book_in_turn``'s starts, link rows and counters for a large batch, from each link's
    gaps instead of its intervals: the gaps between its busy intervals that could hold the
    batch's shortest message (a longer one cannot fit in a gap the shortest does not fit:
    float addition is monotone), kept sorted with room for the splits its bookings make.
    A message's links each keep a cursor in their gaps, moved only forward while the common
    start grows, and its booking replaces the gap that holds it by what is left on either
    side (if that could hold the shortest message). The batch's bookings are merged into
    each link's intervals at the end (the same union, touching intervals merged, as booking
    them one by one). The first common free time of a route at or after the ready time is
    what both find, whatever order the links are asked in. A 1,152-rank mesh step (1.3 M
    messages on 432 links holding thousands of intervals) took 5.0 / 7.0 s in turn, 2.4 / 2.3 s
    here, 1.8 / 1.8 s with the cursors galloping (``_gap_after``)."""
    n = route_of.shape[0]
    out = np.empty(n)
    if n == 0:
        return out
    dmin = np.inf   # the shortest booking (no array for it: this runs at the memory peak)
    for i in range(n):
        if 0.0 < duration[i] < dmin:
            dmin = duration[i]
    if dmin == np.inf:
        dmin = 1.0
    nlinks = counts.shape[0]
    local = np.full(nlinks, -1, dtype=np.int64)
    nused = 0
    per_route = np.bincount(route_of, minlength=ptr.shape[0] - 1)
    for r in range(ptr.shape[0] - 1):
        if per_route[r] == 0:
            continue
        for k in range(ptr[r], ptr[r + 1]):
            if local[rows[k]] < 0:
                local[rows[k]] = nused
                nused += 1
    link_of = np.empty(nused, dtype=np.int64)
    bookings = np.zeros(nused, dtype=np.int64)
    for r in range(ptr.shape[0] - 1):
        for k in range(ptr[r], ptr[r + 1]):
            li = local[rows[k]]
            if li >= 0:
                link_of[li] = rows[k]
                bookings[li] += per_route[r]
    # gap regions: the usable gaps of each link (fit dmin), room for one more per booking
    # each link's usable gaps, with room for one more per booking (np.empty: only the
    # room a link's gaps reach is ever touched)
    gptr = np.zeros(nused + 1, dtype=np.int64)
    for li in range(nused):
        gptr[li + 1] = gptr[li] + counts[link_of[li]] + 1 + bookings[li]
    gs = np.empty(gptr[nused])
    ge = np.empty(gptr[nused])
    gcount = np.zeros(nused, dtype=np.int64)
    for li in range(nused):
        link = link_of[li]
        c = counts[link]
        g = gptr[li]
        prev = -np.inf
        for i in range(c + 1):
            nxt = starts[link, i] if i < c else np.inf
            if nxt > prev and nxt >= prev + dmin:
                gs[g] = prev
                ge[g] = nxt
                g += 1
            if i < c:
                prev = ends[link, i]
        gcount[li] = g - gptr[li]
    # the batch's bookings of a link go, unsorted, after its intervals (the caller made room
    # for every booking) and are merged into them at the end
    bcount = np.zeros(nused, dtype=np.int64)
    longest = 0
    for r in range(ptr.shape[0] - 1):
        longest = max(longest, ptr[r + 1] - ptr[r])
    cursor = np.empty(longest, dtype=np.int64)
    local_of = np.empty(longest, dtype=np.int64)   # each route link's local index
    for i in range(n):
        r = route_of[i]
        d = duration[i]
        start = ready[i]
        if d > 0.0:
            # each link's gap cursor: the first gap ending after start (start only grows)
            p0, p1 = ptr[r], ptr[r + 1]
            for k in range(p0, p1):
                li = local[rows[k]]
                cursor[k - p0] = _first_ending_after(ge, gptr[li], gptr[li] + gcount[li], start)
                local_of[k - p0] = li
            while True:
                moved = False
                for k in range(p0, p1):
                    j = cursor[k - p0]
                    if ge[j] <= start:
                        j = _gap_after(ge, j, gptr[local_of[k - p0]] + gcount[local_of[k - p0]]
                                       - 1, start)
                    while True:
                        tp = max(start, gs[j])
                        if ge[j] >= tp + d:
                            break
                        j += 1
                    cursor[k - p0] = j
                    if tp > start:
                        start = tp
                        moved = True
                if not moved:
                    break
            end = start + d
            for k in range(ptr[r], ptr[r + 1]):
                li = local[rows[k]]
                hi = gptr[li] + gcount[li]
                j = cursor[k - ptr[r]]   # the gap holding [start, end) on this link
                g0, g1 = gs[j], ge[j]
                keep_left = start > g0 and start >= g0 + dmin
                keep_right = g1 > end and g1 >= end + dmin
                new = (1 if keep_left else 0) + (1 if keep_right else 0)
                if new == 0:
                    for q in range(j, hi - 1):
                        gs[q] = gs[q + 1]
                        ge[q] = ge[q + 1]
                elif new == 2:
                    for q in range(hi, j + 1, -1):
                        gs[q] = gs[q - 1]
                        ge[q] = ge[q - 1]
                w = j
                if keep_left:
                    gs[w] = g0
                    ge[w] = start
                    w += 1
                if keep_right:
                    gs[w] = end
                    ge[w] = g1
                gcount[li] += new - 1
                link = link_of[li]
                starts[link, counts[link] + bcount[li]] = start
                ends[link, counts[link] + bcount[li]] = end
                bcount[li] += 1
        out[i] = start
        for k in range(ptr[r], ptr[r + 1]):
            link = rows[k]
            link_messages[link] += 1
            link_bytes[link] += nbytes[i]
            link_busy[link] += d
    # the bookings into each link's intervals: the union, touching intervals merged
    for li in range(nused):
        m = bcount[li]
        if m == 0:
            continue
        link = link_of[li]
        c = counts[link]
        bs = starts[link, c:c + m].copy()
        be = ends[link, c:c + m].copy()
        order = np.argsort(bs, kind="mergesort")
        ms = np.empty(c + m)
        me = np.empty(c + m)
        x = 0
        y = 0
        w = 0
        while x < c or y < m:
            if y >= m or (x < c and starts[link, x] <= bs[order[y]]):
                s, e = starts[link, x], ends[link, x]
                x += 1
            else:
                s, e = bs[order[y]], be[order[y]]
                y += 1
            if w > 0 and me[w - 1] >= s:
                me[w - 1] = max(me[w - 1], e)
            else:
                ms[w] = s
                me[w] = e
                w += 1
        starts[link, :w] = ms[:w]
        ends[link, :w] = me[:w]
        counts[link] = w
    return out


@jit
def reduce_in_turn(arrival, dst, duration, done):
    """Receivers add what they received one message after another: for messages sorted by
    (arrival, dst, src, bytes), each starts when it has arrived and its receiver's adder is
    free, and holds the adder for ``duration``; ``done[dst]`` becomes at least its end."""
    free = np.zeros(done.shape[0])
    for i in range(arrival.shape[0]):
        d = dst[i]
        start = max(arrival[i], free[d])
        free[d] = start + duration[i]
        done[d] = max(done[d], free[d])
