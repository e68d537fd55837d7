"""Topologies of isa/topologies.toml: shapes and link counts worked out by hand from the
instance documents, routes that follow links and have torus-distance length, rings of
neighbours, the analytic ring all-reduce formula, and the CLI."""

from __future__ import annotations

import itertools
import json

import pytest
from click.testing import CliRunner

from neuronemu.cli import main
from neuronemu.isa.topologies import load_topologies

TOPOLOGIES = load_topologies()


@pytest.mark.parametrize("name, chips, links, degree, diameter", [
    ("trn1.2xlarge", 1, 0, 0, 0),
    ("trn1.32xlarge", 16, 32, 4, 4),       # 4x4 torus: 2 links per chip, diameter 2 + 2
    ("trn2.48xlarge", 16, 32, 4, 4),
    ("trn2-ultraserver", 64, 192, 6, 6),   # 4x4x4 torus: 3 links per chip, 2 + 2 + 2
    ("trn3-ultraserver-gen1", 64, 64 + 4, 0, 4),     # chip-switch links + 4 server uplinks
    ("trn3-ultraserver-gen2", 144, 144 + 36 * 2, 0, 4),
])
def test_shapes(name, chips, links, degree, diameter) -> None:
    t = TOPOLOGIES[name]
    assert t.chips == chips and len(t.links) == links and t.diameter == diameter
    assert all(len(t.chip_neighbours(c)) == degree for c in range(t.chips))


def _torus_distance(t, a, b) -> int:
    return sum(min((x - y) % s, (y - x) % s)
               for x, y, s in zip(t.coords(a), t.coords(b), t.shape, strict=True))


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_routes_follow_links_and_are_shortest_on_tori(name) -> None:
    t = TOPOLOGIES[name]
    worst = 0
    for a, b in itertools.product(range(t.chips), repeat=2):
        path = t.route(a, b)
        assert path[0] == a and path[-1] == b
        for u, v in itertools.pairwise(path):
            t.link(u, v)  # raises KeyError if the hop is not a link
        if t.layout == "torus":
            assert len(path) - 1 == _torus_distance(t, a, b)
        worst = max(worst, len(path) - 1)
    assert worst == t.diameter


def test_route_to_a_missing_chip_is_an_error() -> None:
    with pytest.raises(ValueError, match="chip 16 does not exist in trn2.48xlarge"):
        TOPOLOGIES["trn2.48xlarge"].route(0, 16)


@pytest.mark.parametrize("name", ["trn1.32xlarge", "trn2.48xlarge", "trn2-ultraserver"])
def test_torus_ring_is_a_cycle_of_neighbours(name) -> None:
    t = TOPOLOGIES[name]
    ring = t.ring()
    assert sorted(ring) == list(range(t.chips))
    for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
        assert t.hops(a, b) == 1


def test_ring_allreduce_formula() -> None:
    t = TOPOLOGIES["trn2.48xlarge"]
    size = 1 << 20
    # 16 chips, 256 GB/s links (= bytes per ns), one 1.5 us hop per step
    expected = 2 * 15 / 16 * size / 256 + 2 * 15 * 1500
    assert t.ring_allreduce_ns(size) == pytest.approx(expected)
    ultra = TOPOLOGIES["trn2-ultraserver"]
    # the ring crosses the 128 GB/s Z links, which bound every step
    assert ultra.ring_allreduce_ns(size) == pytest.approx(2 * 63 / 64 * size / 128
                                                          + 2 * 63 * 1500)


def test_cli_lists_and_describes() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["topology"])
    assert listing.exit_code == 0
    assert listing.output.count("\n") == len(TOPOLOGIES)
    one = runner.invoke(main, ["topology", "trn2.48xlarge"])
    assert one.exit_code == 0
    assert "4 x 4 torus, 4 neighbours per chip" in one.output
    doc = json.loads(runner.invoke(main, ["topology", "trn2-ultraserver", "--json"]).output)
    assert doc["chips"] == 64 and doc["shape"] == [4, 4, 4] and doc["link_gb_s"] == [128, 256]
    bad = runner.invoke(main, ["topology", "trn2-ultra"])
    assert bad.exit_code == 2
    assert "did you mean 'trn2-ultraserver'" in bad.output
