"""Collectives within replica groups (cc.* group_size= / group_stride=): every group reduces or
exchanges among its own ranks, the groups side by side on the links. Checked against numpy
oracles over groups written out here, by hand-computed times, and located faults."""

from __future__ import annotations

import numpy as np
import pytest
from spmd_helpers import TOPOLOGIES, blocks, spmd

from neuronemu.errors import RuntimeFault

TOPOLOGY = "trn2.48xlarge"   # 16 chips on a 4 x 4 torus, one rank each
WORLD = 16

# (group_size, group_stride) -> the groups, written out independently of the emulator
GROUPS = {
    (4, 1): [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]],
    (4, 4): [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]],
    (2, 8): [[j, j + 8] for j in range(8)],
    (8, 2): [[0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 15]],
    (2, 2): [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]],
    (1, 1): [[r] for r in range(WORLD)],
}


def grouped_kernel(size: int, stride: int, algorithm: str) -> str:
    m = size
    group = f"group_size={size}" + (f", group_stride={stride}" if stride != 1 else "")
    return f"""\
.hbm x float32[8, 64] input
.hbm ar float32[8, 64] output
.hbm rs float32[8, {64 // m}] output
.hbm ag float32[{8 * m}, 64] output
.hbm a2a float32[8, 64] output
.hbm perm float32[8, 64] output
    cc.all_reduce ar, x, op=add, algorithm={algorithm}, {group}
    cc.reduce_scatter rs, x, op=add, dim=1, algorithm={algorithm}, {group}
    cc.all_gather ag, x, dim=0, algorithm={algorithm}, {group}
    cc.all_to_all a2a, x, dim=1, {group}
    cc.permute perm, x, shift=1, {group}
"""


def grouped_oracle(x: np.ndarray, groups: list[list[int]]) -> dict[str, np.ndarray]:
    out = {name: [None] * WORLD for name in ("ar", "rs", "ag", "a2a", "perm")}
    for group in groups:
        m = len(group)
        total = sum(x[q].astype(np.float64) for q in group).astype(np.float32)
        for i, r in enumerate(group):
            out["ar"][r] = total
            out["rs"][r] = blocks(total, m, 1)[i]
            out["ag"][r] = np.concatenate([x[q] for q in group], axis=0)
            out["a2a"][r] = np.concatenate([blocks(x[q], m, 1)[i] for q in group], axis=1)
            out["perm"][r] = x[group[(i - 1) % m]]
    return {name: np.stack(arrays) for name, arrays in out.items()}


@pytest.mark.parametrize("layout", list(GROUPS), ids=lambda g: f"size{g[0]}-stride{g[1]}")
@pytest.mark.parametrize("algorithm", ["ring", "mesh", "rdh"])
def test_every_collective_stays_within_its_group(layout, algorithm) -> None:
    size, stride = layout
    rng = np.random.default_rng(size * 100 + stride)
    x = rng.integers(-64, 64, size=(WORLD, 8, 64)).astype(np.float32)   # exact sums
    result = spmd(grouped_kernel(size, stride, algorithm), TOPOLOGY, inputs={"x": x})
    want = grouped_oracle(x, GROUPS[layout])
    for name, array in want.items():
        np.testing.assert_array_equal(result.outputs[name], array, err_msg=name)


def test_group_of_every_rank_is_the_default() -> None:
    """group_size=16 is the same collective, cycle for cycle, as no group operand."""
    rng = np.random.default_rng(3)
    x = rng.integers(-64, 64, size=(WORLD, 8, 64)).astype(np.float32)
    body = ".hbm x float32[8, 64] input\n.hbm y float32[8, 64] output\n"
    plain = spmd(body + "    cc.all_reduce y, x, algorithm=ring\n", TOPOLOGY, inputs={"x": x})
    whole = spmd(body + "    cc.all_reduce y, x, algorithm=ring, group_size=16\n", TOPOLOGY,
                 inputs={"x": x})
    np.testing.assert_array_equal(plain.outputs["y"], whole.outputs["y"])
    assert plain.time_ns == whole.time_ns
    assert plain.network.messages == whole.network.messages


def test_pairs_of_neighbours_take_the_two_step_ring_time() -> None:
    """Groups of two torus neighbours (chips 2k, 2k + 1 of a row): a ring all-reduce is one
    reduce-scatter and one all-gather step, each half the data over the one link between them,
    plus one addition of half the data at the DMA reduce rate (half of trn2's 368 GB/s per
    core); the eight pairs use eight different links, so nothing contends."""
    topo = TOPOLOGIES[TOPOLOGY]
    assert all(topo.hops(2 * k, 2 * k + 1) == 1 for k in range(8))
    nbytes = 64 * 256 * 4
    result = spmd(".hbm x float32[64, 256] input init=ones\n.hbm y float32[64, 256] output\n"
                  "    cc.all_reduce y, x, op=add, algorithm=ring, group_size=2\n", TOPOLOGY)
    assert (result.outputs["y"] == 2).all()
    half = nbytes / 2
    want = 2 * (half / topo.path_gb_s(0, 1) + topo.hop_ns) + half / (368 * 0.5)
    assert result.time_ns == pytest.approx(want, rel=1e-9)
    assert result.network.messages == 2 * 2 * 8   # 2 steps x 2 messages x 8 pairs
    assert result.network.bytes == 2 * 2 * 8 * half


def test_groups_of_one_copy_locally() -> None:
    """group_size=1: every rank is its own group; dst is src, copied by the core's DMA, and
    no message crosses a link."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((WORLD, 8, 64)).astype(np.float32)
    result = spmd(".hbm x float32[8, 64] input\n.hbm y float32[8, 64] output\n"
                  "    cc.all_reduce y, x, group_size=1\n", TOPOLOGY, inputs={"x": x})
    np.testing.assert_array_equal(result.outputs["y"], x)
    assert result.network.messages == 0
    assert result.time_ns > 0


@pytest.mark.parametrize("operands, message", [
    ("group_size=3", "group_size=3 x group_stride=1 = 3 ranks does not divide the world of 16"),
    ("group_size=4, group_stride=8",
     "group_size=4 x group_stride=8 = 32 ranks does not divide the world of 16"),
    ("group_stride=2", "group_stride=2 needs a group_size"),
])
def test_groups_that_do_not_tile_the_world_are_located_faults(operands, message) -> None:
    text = (".hbm x float32[8, 64] input\n.hbm y float32[8, 64] output\n"
            f"    cc.all_reduce y, x, {operands}\n")
    with pytest.raises(RuntimeFault, match=message) as e:
        spmd(text, TOPOLOGY, inputs={"x": np.zeros((WORLD, 8, 64), np.float32)})
    assert e.value.location.line == 3


def test_rdh_needs_power_of_two_groups() -> None:
    """algorithm=rdh pairs ranks by the bits of their place in the group: groups of 24 (a
    48-rank world: 3 ranks on each of 16 chips) cannot use it, and the fault says so."""
    text = (".hbm x float32[8, 96] input\n.hbm y float32[8, 96] output\n"
            "    cc.all_reduce y, x, algorithm=rdh, group_size=24, group_stride=1\n")
    with pytest.raises(RuntimeFault, match="its groups have 24"):
        spmd(text, TOPOLOGY, inputs={"x": np.zeros((48, 8, 96), np.float32)}, ranks_per_chip=3)


@pytest.mark.parametrize("partitions", [2, 5])
def test_partitioned_runs_give_the_same_bits_and_times(partitions) -> None:
    """Groups across partitions (stride 4: every group spans several partitions of whole
    chips) give the same outputs, per-rank times and link statistics as one partition."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((WORLD, 8, 64)).astype(np.float32)   # float sums: order matters
    text = grouped_kernel(4, 4, "ring")
    one = spmd(text, TOPOLOGY, inputs={"x": x})
    split = spmd(text, TOPOLOGY, inputs={"x": x}, partitions=partitions)
    for name in one.outputs:
        np.testing.assert_array_equal(one.outputs[name], split.outputs[name], err_msg=name)
    assert [r.timing.time_ns for r in one.ranks] == [r.timing.time_ns for r in split.ranks]
    assert repr(one.network) == repr(split.network)
