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
    """Counters of one direction of a link; its booked intervals live in the Network's arrays
    (row ``row``), where neuronemu.timing.links books them."""

    __slots__ = ("busy", "bytes", "gb_s", "messages", "row")

    def __init__(self, gb_s: float, row: int):
        self.gb_s = gb_s
        self.row = row
        self.messages = 0
        self.bytes = 0
        self.busy = 0.0


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

    def _room(self, rows: np.ndarray) -> None:
        """Grow the interval arrays so every link of a route has a free slot for one booking."""
        links, cap = self.starts.shape
        need_links = max(len(self.links), int(rows.max()) + 1 if rows.size else 0)
        known = rows[rows < links]
        need_cap = int(self.counts[known].max()) + 2 if known.size else cap
        if need_links <= links and need_cap <= cap:
            return
        new_links, new_cap = max(links, need_links * 2), max(cap, need_cap * 2)
        for name in ("starts", "ends"):
            grown = np.zeros((new_links, new_cap))
            grown[:links, :cap] = getattr(self, name)
            setattr(self, name, grown)
        counts = np.zeros(new_links, dtype=np.int64)
        counts[:links] = self.counts
        self.counts = counts

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
        from neuronemu.timing.links import book_route

        hops, gb_s, latency, rows = self._route(a, b)
        duration = nbytes / gb_s
        links = [self.links[h] for h in hops]
        self._room(rows)
        start = float(book_route(self.starts, self.ends, self.counts, rows, float(ready),
                                 float(duration)))
        for link in links:
            link.messages += 1
            link.bytes += nbytes
            link.busy += duration
        return start, start + latency + duration

    def stats(self) -> NetworkStats:
        chips = self.topology.chips if self.topology else 1

        def node(n: int) -> str:
            return f"chip{n}" if n < chips else f"switch{n - chips}"

        links = {f"{node(a)}->{node(b)}": LinkStats(link.messages, link.bytes, link.busy)
                 for (a, b), link in sorted(self.links.items())}
        return NetworkStats(self.messages, self.bytes,
                            sum(s.bytes for s in links.values()), links)
