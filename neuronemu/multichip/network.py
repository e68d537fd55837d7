"""Time messages on a topology's links, with contention.

A message from rank a to rank b crosses the route of ``Topology.route`` between their chips
(cut-through: the head pays ``hop_ns`` per hop, the body streams at the slowest link's
bandwidth). Each direction of each link carries one message at a time: a message takes the
earliest interval, at or after it is ready, in which every link of its route is free for
``bytes / bandwidth`` (first-fit into gaps, so the order the driver books messages in does not
push an early message behind a later one). Ranks on one chip exchange through the chip's DMA
engines: the target's DMA fixed cost plus bytes at its per-core DMA bandwidth, without
contention (docs/multichip.md lists these choices).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass


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
    __slots__ = ("busy", "bytes", "ends", "gb_s", "messages", "starts")

    def __init__(self, gb_s: float):
        self.gb_s = gb_s
        self.starts: list[float] = []   # booked intervals, sorted and disjoint
        self.ends: list[float] = []
        self.messages = 0
        self.bytes = 0
        self.busy = 0.0

    def earliest(self, t: float, duration: float) -> float:
        """First time >= t at which the link is free for ``duration``."""
        i = bisect.bisect_right(self.ends, t)
        while i < len(self.starts):
            if self.starts[i] >= t + duration:
                return t
            t = max(t, self.ends[i])
            i += 1
        return t

    def book(self, start: float, end: float) -> None:
        i = bisect.bisect_left(self.starts, start)
        # merge with touching neighbours so the lists stay short in long collectives
        if i > 0 and self.ends[i - 1] >= start:
            i -= 1
            start = self.starts[i]
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        while i < len(self.starts) and self.starts[i] <= end:
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        self.starts.insert(i, start)
        self.ends.insert(i, end)


class Network:
    """Link state of one run. ``topology`` None: a single chip (world = ranks_per_chip)."""

    def __init__(self, topology, target, ranks_per_chip: int):
        self.topology = topology
        self.ranks_per_chip = ranks_per_chip
        self.local_gb_s = float(target.dma_bytes_per_ns)
        self.local_ns = float(target.dma_fixed_ns)
        self.links: dict[tuple[int, int], _Link] = {}
        self.routes: dict[tuple[int, int], tuple[list[tuple[int, int]], float, float]] = {}
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
                    self.links[hop] = _Link(topo.link(*hop).gb_s)
            gb_s = min(self.links[h].gb_s for h in hops)
            self.routes[key] = (hops, gb_s, len(hops) * topo.hop_ns)
        return self.routes[key]

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
        hops, gb_s, latency = self._route(a, b)
        duration = nbytes / gb_s
        links = [self.links[h] for h in hops]
        start = ready
        if duration > 0.0:
            while True:  # until every link of the route is free for the same interval
                moved = False
                for link in links:
                    t = link.earliest(start, duration)
                    if t > start:
                        start, moved = t, True
                if not moved:
                    break
            for link in links:
                link.book(start, start + duration)
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
