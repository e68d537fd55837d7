"""The multi-chip systems of isa/topologies.toml as graphs: chips (and switches) joined by
links with a bandwidth and a hop latency, deterministic routing, and a ring through all chips.

Nodes 0 .. chips-1 are chips; switches (switched layouts) follow. Routing is dimension order on
a torus (each dimension the shorter way round, ties in the positive direction), and chip ->
server switch -> spine -> server switch -> chip through switches (same server: no spine)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import cache

from neuronemu.isa.resources import read_table


@dataclass(frozen=True)
class Link:
    a: int
    b: int
    gb_s: float       # one direction
    hop_ns: float


@dataclass
class Topology:
    name: str
    target: str
    layout: str
    chips: int
    cores_per_chip: int
    source: str
    shape: tuple[int, ...] = ()
    servers: int = 0
    chips_per_server: int = 0
    spines: int = 0
    links: dict[tuple[int, int], Link] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        return self.chips + (self.servers + self.spines if self.layout == "switched" else 0)

    @property
    def switches(self) -> int:
        return self.nodes - self.chips

    def link(self, a: int, b: int) -> Link:
        return self.links[(min(a, b), max(a, b))]

    def coords(self, chip: int) -> tuple[int, ...]:
        out = []
        for size in reversed(self.shape):
            out.append(chip % size)
            chip //= size
        return tuple(reversed(out))

    def chip_at(self, coords) -> int:
        chip = 0
        for c, size in zip(coords, self.shape, strict=True):
            chip = chip * size + c % size
        return chip

    def chip_neighbours(self, chip: int) -> list[int]:
        """Chips one link away (switched layouts: none, every path goes through a switch)."""
        return sorted({b if a == chip else a for (a, b) in self.links
                       if chip in (a, b) and max(a, b) < self.chips})

    def route(self, src: int, dst: int) -> list[int]:
        """The nodes a message from chip src to chip dst passes, both ends included."""
        for chip in (src, dst):
            if not 0 <= chip < self.chips:
                raise ValueError(f"chip {chip} does not exist in {self.name} (chips 0.."
                                 f"{self.chips - 1})")
        if src == dst:
            return [src]
        if self.layout == "torus":
            path = [src]
            here = list(self.coords(src))
            goal = self.coords(dst)
            for d, size in enumerate(self.shape):
                forward = (goal[d] - here[d]) % size
                step = 1 if forward <= size - forward else -1
                while here[d] != goal[d]:
                    here[d] = (here[d] + step) % size
                    path.append(self.chip_at(here))
            return path
        server_a, server_b = src // self.chips_per_server, dst // self.chips_per_server
        switch_a, switch_b = self.chips + server_a, self.chips + server_b
        if server_a == server_b:
            return [src, switch_a, dst]
        spine = self.chips + self.servers + (src + dst) % self.spines
        return [src, switch_a, spine, switch_b, dst]

    def hops(self, src: int, dst: int) -> int:
        return len(self.route(src, dst)) - 1

    @property
    def diameter(self) -> int:
        if self.layout == "single":
            return 0
        if self.layout == "torus":
            return sum(size // 2 for size in self.shape)
        return 4 if self.servers > 1 else 2

    def ring(self) -> list[int]:
        """All chips in an order where consecutive chips (and last -> first) are as close as
        the layout allows: a boustrophedon (snake) walk on a torus, which is a Hamiltonian cycle
        of neighbours when the first dimension is even."""
        if self.layout != "torus":
            return list(range(self.chips))

        def snake(shape):
            if len(shape) == 1:
                return [(i,) for i in range(shape[0])]
            inner = snake(shape[1:])
            out = []
            for i in range(shape[0]):
                part = inner if i % 2 == 0 else inner[::-1]
                out.extend((i, *rest) for rest in part)
            return out

        return [self.chip_at(c) for c in snake(self.shape)]

    def path_gb_s(self, src: int, dst: int) -> float:
        """Bandwidth of the slowest link on the route."""
        path = self.route(src, dst)
        return min(self.link(a, b).gb_s for a, b in itertools.pairwise(path))

    def ring_allreduce_ns(self, nbytes: int, reduce_gb_s: float = float("inf")) -> float:
        """The textbook ring all-reduce: 2 (n - 1) steps, each sending nbytes / n to the next
        chip of the ring: 2 (n - 1) / n * nbytes / bandwidth + 2 (n - 1) * step latency, with
        the slowest ring step's bandwidth and hops (an analytic bound, not an emulation), plus
        the n - 1 reduce-scatter steps' additions of nbytes / n at ``reduce_gb_s`` (the DMA
        reduce rate, Network.reduce_ns; infinite: the network alone)."""
        n = self.chips
        if n == 1:
            return 0.0
        ring = self.ring()
        steps = list(zip(ring, ring[1:] + ring[:1], strict=True))
        bandwidth = min(self.path_gb_s(a, b) for a, b in steps)
        latency = max(self.hops(a, b) for a, b in steps) * self.hop_ns
        return (2 * (n - 1) / n * nbytes / bandwidth + 2 * (n - 1) * latency
                + (n - 1) / n * nbytes / reduce_gb_s)

    @property
    def hop_ns(self) -> float:
        return next(iter(self.links.values())).hop_ns if self.links else 0.0

    @property
    def chip_gb_s(self) -> float:
        """Bandwidth out of one chip over all its links (one direction)."""
        if not self.links:
            return 0.0
        return sum(link.gb_s for (a, b), link in self.links.items() if 0 in (a, b))


def _build(name: str, raw: dict) -> Topology:
    topo = Topology(name=name, target=raw["target"], layout=raw["layout"], chips=raw["chips"],
                    cores_per_chip=raw["cores_per_chip"], source=raw["source"],
                    shape=tuple(raw.get("shape", (raw["chips"],))),
                    servers=raw.get("servers", 0), chips_per_server=raw.get("chips_per_server", 0),
                    spines=raw.get("spines", 0))
    hop = float(raw["hop_ns"])
    if topo.layout == "torus":
        per_dim = raw.get("dim_link_gb_s", [raw["link_gb_s"]] * len(topo.shape))
        for chip in range(topo.chips):
            here = topo.coords(chip)
            for d, size in enumerate(topo.shape):
                if size == 1:
                    continue
                there = list(here)
                there[d] = (here[d] + 1) % size
                other = topo.chip_at(there)
                key = (min(chip, other), max(chip, other))
                topo.links[key] = Link(*key, float(per_dim[d]), hop)
    elif topo.layout == "switched":
        for chip in range(topo.chips):
            switch = topo.chips + chip // topo.chips_per_server
            topo.links[(chip, switch)] = Link(chip, switch, float(raw["link_gb_s"]), hop)
        uplink = float(raw["uplink_gb_s"]) * topo.chips_per_server / max(topo.spines, 1)
        for server in range(topo.servers):
            for spine in range(topo.spines):
                a, b = topo.chips + server, topo.chips + topo.servers + spine
                topo.links[(a, b)] = Link(a, b, uplink, hop)
    elif topo.layout != "single":
        raise ValueError(f"{name}: unknown layout {topo.layout!r}")
    if topo.chips != (len(topo.ring()) if topo.layout == "torus" else topo.chips):
        raise ValueError(f"{name}: shape {topo.shape} does not hold {topo.chips} chips")
    return topo


@cache
def load_topologies() -> dict[str, Topology]:
    raw = read_table("topologies")
    return {name: _build(name, data) for name, data in raw.items()}


def topology_named(name: str, option: str | None = "topology"):
    """The topology called ``name``, or an InputError listing them (with the closest name),
    its message led by ``option`` unless that is None."""
    import difflib

    from neuronemu.errors import InputError

    topologies = load_topologies()
    if name not in topologies:
        close = difflib.get_close_matches(name, topologies, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise InputError(f"{option + ': ' if option else ''}unknown topology '{name}' (topologies: "
                         f"{', '.join(topologies)}){hint}")
    return topologies[name]
