"""Time messages on a topology's links, with contention.

A message from rank a to rank b crosses the route of ``Topology.route`` between their chips
(cut-through: the head pays ``hop_ns`` per hop, the body streams at the slowest link's
bandwidth). Each direction of each link carries one message at a time: a message takes the
earliest interval, at or after it is ready, in which every link of its route is free for
``bytes / bandwidth`` (first-fit into gaps, so the order the driver books messages in does not
push an early message behind a later one). Ranks on one chip exchange through the chip's DMA
engines: the target's DMA fixed cost plus bytes at its per-core DMA bandwidth, without
contention. Reductions of collectives run on the receiver's DMA engines at ``reduce_ns``
(docs/multichip.md lists these choices).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinkStats:
    messages: int
    bytes: int
    busy_ns: float


@dataclass(frozen=True)
class NetworkStats:
    messages: int
    bytes: int               # summed over messages (each counted once, whatever its hops)
    link_bytes: int          # summed over the links each message crossed
    links: dict[str, LinkStats]
    """Per used direction of a link, named 'chip3->chip7' / 'chip3->switch1'."""


class _Link:
    """One direction of a link: its bandwidth and its row in the Network's arrays, where
    neuronemu.timing.links books its intervals and counts its messages, bytes and busy time."""

    __slots__ = ("gb_s", "row")

    def __init__(self, gb_s: float, row: int):
        self.gb_s = gb_s
        self.row = row


class Network:
    """Link state of one run. ``topology`` None: a single chip (world = ranks_per_chip)."""

    def __init__(self, topology, target, ranks_per_chip: int):
        self.topology = topology
        self.ranks_per_chip = ranks_per_chip
        self.local_gb_s = float(target.dma_bytes_per_ns)
        self.local_ns = float(target.dma_fixed_ns)
        self.reduce_gb_s = float(target.dma_bytes_per_ns) * float(target.dma_reduce_efficiency)
        self.links: dict[tuple[int, int], _Link] = {}
        self.routes: dict[tuple[int, int], tuple[list[tuple[int, int]], float, float,
                                                 np.ndarray]] = {}
        # booked intervals per link row, sorted and disjoint: see neuronemu.timing.links
        self.starts = np.zeros((8, 8))
        self.ends = np.zeros((8, 8))
        self.counts = np.zeros(8, dtype=np.int64)
        # per link row: messages, bytes and busy ns (summed in booking order)
        self.link_messages = np.zeros(8, dtype=np.int64)
        self.link_bytes = np.zeros(8, dtype=np.int64)
        self.link_busy = np.zeros(8)
        self.messages = 0
        self.bytes = 0

    def chip(self, rank: int) -> int:
        return rank // self.ranks_per_chip

    def _route(self, a: int, b: int):
        key = (a, b)
        if key not in self.routes:
            topo = self.topology
            path = topo.route(a, b)
            hops = list(itertools.pairwise(path))
            for hop in hops:
                if hop not in self.links:
                    self.links[hop] = _Link(topo.link(*hop).gb_s, len(self.links))
            gb_s = min(self.links[h].gb_s for h in hops)
            rows = np.array([self.links[h].row for h in hops], dtype=np.int64)
            self.routes[key] = (hops, gb_s, len(hops) * topo.hop_ns, rows)
        return self.routes[key]

    def _room(self, rows: np.ndarray, bookings: np.ndarray | None = None) -> None:
        """Grow the interval arrays so every link of ``rows`` has room for its bookings
        (``bookings[k]`` more on rows[k]; None: one each)."""
        links, cap = self.starts.shape
        need_links = max(len(self.links), int(rows.max()) + 1 if rows.size else 0)
        known = rows < links
        extra = np.ones(rows.size, dtype=np.int64) if bookings is None else bookings
        need_cap = (int((self.counts[rows[known]] + extra[known]).max()) + 1
                    if known.any() else 0)
        need_cap = max(need_cap, int(extra.max()) + 1 if extra.size else 0)
        if need_links <= links and need_cap <= cap:
            return
        new_links, new_cap = max(links, need_links * 2), max(cap, need_cap * 2)
        for name in ("starts", "ends"):
            # only each link's booked intervals are copied: the rest of a row is never read,
            # and copying it would make the new array's pages resident (zeros are mapped only
            # as they are written: 130 MB at a 1,152-rank mesh step)
            old, grown = getattr(self, name), np.zeros((new_links, new_cap))
            for row in np.flatnonzero(self.counts[:links]).tolist():
                grown[row, :self.counts[row]] = old[row, :self.counts[row]]
            setattr(self, name, grown)
        for name in ("counts", "link_messages", "link_bytes", "link_busy"):
            old = getattr(self, name)
            grown = np.zeros(new_links, dtype=old.dtype)
            grown[:links] = old
            setattr(self, name, grown)

    def reduce_ns(self, nbytes: int) -> float:
        """Time for a rank's DMA engines to add ``nbytes`` received into its own chunk: the
        per-core DMA bandwidth times dma_reduce_efficiency (isa/targets.toml)."""
        return nbytes / self.reduce_gb_s

    def transfer(self, src: int, dst: int, nbytes: int, ready: float) -> tuple[float, float]:
        """Book a message of ``nbytes`` from rank src to rank dst that can leave at ``ready``;
        returns (start, arrival) in ns."""
        self.messages += 1
        self.bytes += nbytes
        a, b = self.chip(src), self.chip(dst)
        if src == dst:
            return ready, ready + nbytes / self.local_gb_s
        if a == b:
            return ready, ready + self.local_ns + nbytes / self.local_gb_s
        _, gb_s, latency, rows = self._route(a, b)
        duration = nbytes / gb_s
        self._room(rows)
        start = float(self._book(rows, np.array([0, rows.size]), np.zeros(1, np.int64),
                                 np.array([float(ready)]), np.array([duration]),
                                 np.array([nbytes], dtype=np.int64))[0])
        return start, start + latency + duration

    def _book(self, rows, ptr, route_of, ready, duration, nbytes) -> np.ndarray:
        """Book messages over link routes in order (neuronemu.timing.links.book_many); the
        caller has made room."""
        from neuronemu.timing.links import book_many

        return book_many(self.starts, self.ends, self.counts, rows, ptr, route_of, ready,
                         duration, nbytes, self.link_busy, self.link_messages, self.link_bytes)

    def transfer_many(self, src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray,
                      ready: np.ndarray) -> np.ndarray:
        """Book messages in the order given, as ``transfer`` called for each in turn would
        (the same times to the bit, the same link counters); returns their arrivals."""
        n = src.size
        self.messages += n
        self.bytes += int(nbytes.sum())
        arrival = np.empty(n)
        a, b = src // self.ranks_per_chip, dst // self.ranks_per_chip
        itself = src == dst
        arrival[itself] = ready[itself] + nbytes[itself] / self.local_gb_s
        chip = (a == b) & ~itself
        arrival[chip] = ready[chip] + self.local_ns + nbytes[chip] / self.local_gb_s
        cross = np.flatnonzero(a != b)
        if cross.size == 0:
            return arrival
        nodes = self.topology.nodes
        pair_of = a[cross] * nodes + b[cross]
        # a mesh step's temporaries are 10 MB each at 1,152 ranks: gone before the booking
        del a, b, itself, chip
        pairs, route_of = np.unique(pair_of, return_inverse=True)
        del pair_of
        routes = [self._route(int(p) // nodes, int(p) % nodes) for p in pairs]
        rows = np.concatenate([r[3] for r in routes])
        ptr = np.zeros(len(routes) + 1, dtype=np.int64)
        np.cumsum([r[3].size for r in routes], out=ptr[1:])
        gb_s = np.array([r[1] for r in routes])
        latency = np.array([r[2] for r in routes])
        route_of = route_of.astype(np.int64, copy=False).ravel()
        duration = nbytes[cross] / gb_s[route_of]
        per_row = np.repeat(np.bincount(route_of, minlength=len(routes)), np.diff(ptr))
        used = np.unique(rows)
        bookings = np.bincount(rows, weights=per_row, minlength=int(rows.max()) + 1)[used]
        self._room(used, bookings.astype(np.int64))
        start = self._book(rows, ptr, route_of, ready[cross].astype(np.float64, copy=False),
                           duration, nbytes[cross].astype(np.int64, copy=False))
        arrival[cross] = start + latency[route_of] + duration
        return arrival

    def stats(self) -> NetworkStats:
        chips = self.topology.chips if self.topology else 1

        def node(n: int) -> str:
            return f"chip{n}" if n < chips else f"switch{n - chips}"

        links = {f"{node(a)}->{node(b)}": LinkStats(int(self.link_messages[link.row]),
                                                    int(self.link_bytes[link.row]),
                                                    float(self.link_busy[link.row]))
                 for (a, b), link in sorted(self.links.items())}
        return NetworkStats(self.messages, self.bytes,
                            sum(s.bytes for s in links.values()), links)
