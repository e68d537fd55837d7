"""Link booking (neuronemu/timing/links.py) against a brute-force reference: each link a plain
Python list of busy intervals, each message placed at the first time >= its ready at which every
link of its route is free for its duration. The compiled batch (book_many, with its per-link
floors; _book_by_gaps, which book_many takes for GAP_BATCH messages or more) and transfer_many
must give exactly the reference's starts and link counters."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.isa.topologies import load_topologies
from neuronemu.multichip.network import Network
from neuronemu.timing.links import GAP_BATCH, _book_by_gaps, _book_in_turn, _gap_after, book_many


def reference_starts(messages, links: int) -> tuple[list[float], list[float]]:
    """messages: (route rows, ready, duration), booked in order; returns starts and busy ns."""
    busy: list[list[tuple[float, float]]] = [[] for _ in range(links)]
    starts, total = [], [0.0] * links
    for route, ready, duration in messages:
        candidates = sorted({ready} | {e for row in route for _, e in busy[row] if e >= ready})
        start = ready if duration == 0 else next(t for t in candidates if all(
            not (s < t + duration and t < e) for row in route for s, e in busy[row]))
        if duration > 0:
            for row in route:
                busy[row].append((start, start + duration))
        for row in route:
            total[row] += duration
        starts.append(start)
    return starts, total


def random_routes(rng, links: int, count: int, longest: int):
    """``count`` routes of 1 to ``longest`` distinct links: (the routes, their link rows one
    after another, and where each route's rows start) as book_many takes them."""
    routes = [rng.choice(links, size=rng.integers(1, longest + 1), replace=False)
              for _ in range(count)]
    rows = np.concatenate(routes).astype(np.int64)
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum([len(r) for r in routes], out=ptr[1:])
    return routes, rows, ptr


@pytest.mark.parametrize("book", [book_many, _book_by_gaps])
@pytest.mark.parametrize("seed", range(6))
def test_book_many_places_every_message_first_fit(seed: int, book) -> None:
    rng = np.random.default_rng(seed)
    links, routes_n, n = 5, 7, 300
    routes, rows, ptr = random_routes(rng, links, routes_n, longest=3)
    route_of = rng.integers(0, routes_n, n).astype(np.int64)
    # sorted ready times with ties, durations from a few sizes (and a zero one) as in a step
    ready = np.sort(rng.integers(0, 40, n)).astype(np.float64) * 2.5
    duration = rng.choice([0.0, 3.0, 3.5, 7.25], n)
    nbytes = (duration * 4).astype(np.int64)
    cap = n + 2
    starts = np.zeros((links, cap))
    ends = np.zeros((links, cap))
    counts = np.zeros(links, dtype=np.int64)
    busy = np.zeros(links)
    messages = np.zeros(links, dtype=np.int64)
    moved = np.zeros(links, dtype=np.int64)
    got = book(starts, ends, counts, rows, ptr, route_of, ready, duration, nbytes, busy,
               messages, moved)
    want, want_busy = reference_starts(
        [(routes[r], ready[i], duration[i]) for i, r in enumerate(route_of)], links)
    assert got.tolist() == want
    assert busy.tolist() == want_busy
    assert messages.tolist() == [sum(int(row in routes[r]) for r in route_of)
                                 for row in range(links)]
    for link in range(links):   # intervals stay sorted and disjoint
        k = counts[link]
        assert (starts[link, :k] < ends[link, :k]).all()
        assert (ends[link, :k - 1] < starts[link, 1:k]).all()


@pytest.mark.parametrize("n", [2000, GAP_BATCH + 1000])
def test_transfer_many_equals_one_transfer_per_message(n: int) -> None:
    """The same messages on a switched topology (shared server uplinks), booked one call each
    and as one batch (in turn, or from the links' gaps past GAP_BATCH messages): equal
    arrivals and link statistics, to the bit."""
    program = neuronemu.assemble(".hbm x float32[2, 2] input\n", "k.s", target="trn3")
    topology = load_topologies()["trn3-ultraserver-gen1"]
    rng = np.random.default_rng(3)
    src = rng.integers(0, 128, n).astype(np.int64)
    dst = rng.integers(0, 128, n).astype(np.int64)
    nbytes = rng.choice([0, 4096, 65536, 65540], n).astype(np.int64)
    ready = np.sort(rng.uniform(0, 2e4, n))
    one, batch = Network(topology, program.target, 2), Network(topology, program.target, 2)
    arrivals = [one.transfer(int(s), int(d), int(b), float(t))[1]
                for s, d, b, t in zip(src, dst, nbytes, ready, strict=True)]
    assert batch.transfer_many(src, dst, nbytes, ready).tolist() == arrivals
    assert batch.stats() == one.stats()


@pytest.mark.parametrize("seed", range(4))
def test_booking_from_gaps_is_booking_in_turn_on_fragmented_links(seed: int) -> None:
    """Two batches of 5,000 messages on 12 links with routes of 1 to 4 links, ready times with
    ties, durations of a few sizes (one zero): the second batch books among the first's
    fragments, as a mesh step's second half does. Every start, every link's intervals and
    counters equal the in-turn booking's."""
    rng = np.random.default_rng(seed)
    links, routes_n, n = 12, 40, 5000
    _, rows, ptr = random_routes(rng, links, routes_n, longest=4)
    state = {}
    for name in ("turn", "gaps"):
        cap = 2 * n + 2
        state[name] = [np.zeros((links, cap)), np.zeros((links, cap)),
                       np.zeros(links, dtype=np.int64), np.zeros(links),
                       np.zeros(links, dtype=np.int64), np.zeros(links, dtype=np.int64)]
    for batch in range(2):
        route_of = rng.integers(0, routes_n, n).astype(np.int64)
        ready = np.sort(rng.integers(0, 200, n)).astype(np.float64) * 1.25 + 300.0 * batch
        duration = rng.choice([0.0, 3.546875, 3.5625, 7.1, 0.3], n)
        nbytes = (duration * 4).astype(np.int64)
        got = {}
        for name, book in (("turn", _book_in_turn), ("gaps", _book_by_gaps)):
            st, en, co, busy, msgs, moved = state[name]
            got[name] = book(st, en, co, rows, ptr, route_of, ready, duration, nbytes, busy, msgs,
                             moved)
        assert np.array_equal(got["turn"], got["gaps"]), batch
        (st, en, co, *counters), (st2, en2, co2, *counters2) = state["turn"], state["gaps"]
        assert np.array_equal(co, co2), batch
        for link in range(links):   # past a link's count, the arrays hold leftovers
            assert np.array_equal(st[link, :co[link]], st2[link, :co[link]]), batch
            assert np.array_equal(en[link, :co[link]], en2[link, :co[link]]), batch
        for a, b in zip(counters, counters2, strict=True):
            assert np.array_equal(a, b), batch
    assert state["gaps"][2].max() > 100   # the links did fragment


@pytest.mark.parametrize("seed", range(3))
def test_gap_after_is_a_sorted_search(seed: int) -> None:
    """The gallop that moves a link's gap cursor lands where a binary search of the whole
    sorted gap ends does: the first gap ending after t, for jumps of one gap to thousands."""
    rng = np.random.default_rng(seed)
    ge = np.sort(rng.integers(0, 3000, 4000)).astype(np.float64)   # ties included
    ge[-1] = np.inf   # a link's last gap never ends
    for _ in range(2000):
        j = int(rng.integers(0, len(ge) - 1))
        t = ge[j] + float(rng.choice([0.0, 0.5, rng.uniform(0, 3000)]))
        assert _gap_after(ge, j, len(ge) - 1, t) == np.searchsorted(ge, t, side="right")
