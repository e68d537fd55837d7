"""run_spmd as an API: the bundled collective programs against float64 sums, per-rank inputs and
initialisers, determinism, ranks per chip and the input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from spmd_helpers import TOPOLOGIES, assemble_for, bits_equal, spmd, world_of

import neuronemu
from neuronemu.api import run_spmd
from neuronemu.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
COLLECTIVES = ROOT / "programs" / "collectives"


def test_ring_allreduce_program_sums_over_ranks() -> None:
    """y: the ring written out with cc.send / cc.recv; z: cc.all_reduce algorithm=ring. Both
    equal the float64 sum of the ranks' x within the bound of a 16-term fp32 sum."""
    program = neuronemu.assemble_file(str(COLLECTIVES / "ring_allreduce.s"))
    result = run_spmd(program, "trn2.48xlarge")
    n = result.world
    assert n == 16
    x = np.stack([rank.tensors["x"] for rank in result.ranks]).astype(np.float64)
    assert x.shape == (16, 128, 4096)
    assert not np.array_equal(x[0], x[1])
    exact = x.sum(0)
    u = 2.0 ** -24
    bound = (n - 1) * u / (1 - (n - 1) * u) * np.abs(x).sum(0)
    for name in ("y", "z"):
        out = result.outputs[name]
        assert out.shape == (16, 128, 4096) and out.dtype == np.float32
        err = np.abs(out.astype(np.float64) - exact)
        assert (err <= bound).all(), (name, float((err / bound).max()))
    assert all(not rank.warnings for rank in result.ranks)
    assert result.network.messages > 0


def test_all_reduce_program_runs_on_any_topology() -> None:
    """programs/collectives/all_reduce.s has no .target: assembled for trn1 it runs on the
    trn1.32xlarge (1 MiB per rank: auto picks recursive halving/doubling)."""
    program = neuronemu.assemble_file(str(COLLECTIVES / "all_reduce.s"), target="trn1")
    result = run_spmd(program, "trn1.32xlarge")
    x = np.stack([rank.tensors["x"] for rank in result.ranks]).astype(np.float64)
    exact = x.sum(0)
    bound = 15 * 2.0 ** -24 * 1.001 * np.abs(x).sum(0)
    y = result.outputs["y"]
    assert y.shape == (16, 256, 1024)
    assert (np.abs(y.astype(np.float64) - exact) <= bound).all()


def test_auto_all_reduce_of_a_mebibyte_is_exact_for_integers() -> None:
    """1 MiB of int32 per rank: above the mesh range, so auto takes another algorithm; the
    integer sum stays exact."""
    n = 16
    rng = np.random.default_rng(9)
    x = rng.integers(-10 ** 6, 10 ** 6, (n, 256, 1024)).astype(np.int32)
    result = spmd(".hbm x int32[256, 1024] input\n.hbm y int32[256, 1024] output\n"
                  "    cc.all_reduce y, x, op=add\n", "trn2.48xlarge", {"x": x})
    expected = x.astype(np.int64).sum(0)
    for r in (0, 7, 15):
        assert np.array_equal(result.outputs["y"][r].astype(np.int64), expected)


# ---------------------------------------------------------------------------------------------
# inputs


INPUT_KERNEL = """\
.hbm x float32[2, 4] input
.hbm w float32[2, 4] input init=normal(0, 1)
.hbm u float32[2, 4] input init=uniform(-1, 1)
.hbm c float32[2, 4] input init=full(3)
.hbm y float32[2, 4] output
    cc.all_reduce y, x, op=add
"""


def test_inputs_shared_per_rank_and_split() -> None:
    n = 16
    shared = np.arange(8, dtype=np.float32).reshape(2, 4)
    result = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": shared})
    assert np.array_equal(result.outputs["y"], np.broadcast_to(shared * n, (n, 2, 4)))
    per_rank = np.arange(n * 8, dtype=np.float32).reshape(n, 2, 4)
    result = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": per_rank})
    for r in (0, 5, 15):
        assert np.array_equal(result.ranks[r].tensors["x"], per_rank[r])
    assert np.array_equal(result.outputs["y"][3], per_rank.sum(0))
    # first axis world x declared: rank r takes rows [2r, 2r + 2)
    split = per_rank.reshape(n * 2, 4)
    result = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": split})
    for r in (0, 9):
        assert np.array_equal(result.ranks[r].tensors["x"], split[2 * r: 2 * r + 2])


def test_random_initialisers_differ_per_rank_and_repeat_per_seed() -> None:
    first = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": np.zeros((2, 4))}, seed=3)
    again = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": np.zeros((2, 4))}, seed=3)
    other = spmd(INPUT_KERNEL, "trn2.48xlarge", {"x": np.zeros((2, 4))}, seed=4)
    for name in ("w", "u"):
        values = np.stack([rank.tensors[name] for rank in first.ranks])
        assert len({v.tobytes() for v in values}) == 16, name   # 16 different streams
        assert np.array_equal(values, np.stack([rank.tensors[name] for rank in again.ranks]))
        assert not np.array_equal(values[0], other.ranks[0].tensors[name])
    u = np.stack([rank.tensors["u"] for rank in first.ranks])
    assert (np.abs(u) <= 1).all()
    c = np.stack([rank.tensors["c"] for rank in first.ranks])
    assert (c == 3).all()


def test_per_rank_input_with_a_world_of_one() -> None:
    """trn1.2xlarge with one rank per chip has a world of 1; its outputs come back with a leading
    axis of 1, and an input with a leading axis of length world (1) should give rank 0 its [0],
    as on every other topology. BUG: _checked_inputs only accepts the leading axis when
    world > 1, so generic code that stacks one array per rank fails on this topology only."""
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    result = spmd(INPUT_KERNEL, "trn1.2xlarge", {"x": x})
    assert result.outputs["y"].shape == (1, 2, 4)
    assert np.array_equal(result.outputs["y"], x)


@pytest.mark.parametrize("inputs, fragment", [
    ({"x": np.zeros((15, 2, 4))}, "leading axis of length 16"),
    ({"x": np.zeros((3, 4))}, "has shape (3, 4)"),
    ({"nope": np.zeros((2, 4))}, "no tensor 'nope'"),
])
def test_bad_inputs(inputs, fragment) -> None:
    with pytest.raises(InputError) as info:
        spmd(INPUT_KERNEL, "trn2.48xlarge", inputs)
    assert fragment in info.value.message
    assert info.value.exit_code == 4


def test_unknown_topology_and_wrong_target() -> None:
    program = assemble_for(INPUT_KERNEL, "trn2.48xlarge")
    with pytest.raises(InputError) as info:
        run_spmd(program, "trn2.96xlarge")
    for name in TOPOLOGIES:
        assert name in info.value.message
    with pytest.raises(InputError, match="trn1 chips"):
        run_spmd(program, "trn1.32xlarge")


# ---------------------------------------------------------------------------------------------
# ranks per chip


def test_ranks_per_chip_two_on_trn1_2xlarge() -> None:
    text = (".hbm x int32[4, 6] input\n.hbm y int32[4, 6] output\n.hbm z int32[4, 6] output\n"
            ".hbm g int32[8, 6] output\n"
            "    cc.all_reduce y, x, op=add\n"
            "    cc.all_reduce z, x, op=minimum, algorithm=rdh\n"
            "    cc.all_gather g, x, dim=0, algorithm=ring\n")
    x = np.random.default_rng(6).integers(-99, 99, (2, 4, 6)).astype(np.int32)
    result = spmd(text, "trn1.2xlarge", {"x": x}, ranks_per_chip=2)
    assert result.world == 2 and result.ranks_per_chip == 2
    assert np.array_equal(result.outputs["y"], np.broadcast_to(x.sum(0), (2, 4, 6)))
    assert np.array_equal(result.outputs["z"], np.broadcast_to(x.min(0), (2, 4, 6)))
    assert np.array_equal(result.outputs["g"], np.broadcast_to(np.concatenate(list(x)), (2, 8, 6)))


def test_ranks_per_chip_numbering_on_a_torus() -> None:
    """rank = chip * ranks_per_chip + core: 32 ranks on trn1.32xlarge, each writes its rank."""
    text = (".hbm ramp int32[1, 64] input init=arange\n.hbm me int32[1, 2] output\n"
            "    ctrl.rank r0\n    ctrl.world r1\n"
            "    dma.copy me[0:1, 0:1], ramp[0:1, r0 : r0 + 1]\n"
            "    dma.copy me[0:1, 1:2], ramp[0:1, r1 : r1 + 1]\n"
            "    cc.barrier\n")
    result = spmd(text, "trn1.32xlarge", ranks_per_chip=2)
    me = result.outputs["me"][:, 0, :]
    assert me[:, 0].tolist() == list(range(32))
    assert (me[:, 1] == 32).all()


@pytest.mark.parametrize("topology, ranks_per_chip", [("trn1.2xlarge", 3),
                                                      ("trn2.48xlarge", 9),
                                                      ("trn2.48xlarge", 0)])
def test_too_many_ranks_per_chip(topology, ranks_per_chip) -> None:
    with pytest.raises(InputError) as info:
        spmd(INPUT_KERNEL, topology, ranks_per_chip=ranks_per_chip)
    cores = TOPOLOGIES[topology].cores_per_chip
    assert f"1..{cores}" in info.value.message


# ---------------------------------------------------------------------------------------------
# determinism


DETERMINISM_KERNEL = """\
.hbm x float32[4, 64] input init=normal(0, 1)
.hbm b bfloat16[4, 64] input init=normal(0, 1)
.hbm ring float32[4, 64] output
.hbm mesh float32[4, 64] output
.hbm rdh bfloat16[4, 64] output
.hbm gat float32[4, 4096] output
.hbm a2a float32[4, 64] output
.hbm nxt float32[4, 64] output
    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1
    ctrl.sub r3, r0, 1
    ctrl.rem r3, r3, r1
    cc.all_reduce ring, x, op=add, algorithm=ring
    cc.all_reduce mesh, x, op=add, algorithm=mesh, queue=4
    cc.all_reduce rdh, b, op=add, algorithm=rdh
    cc.all_gather gat, x, dim=1
    cc.all_to_all a2a, x, dim=1
    cc.send x, peer=r2
    cc.recv nxt, peer=r3
"""


def test_two_runs_are_identical() -> None:
    topology = "trn2-ultraserver"
    first = spmd(DETERMINISM_KERNEL, topology, seed=1)
    second = spmd(DETERMINISM_KERNEL, topology, seed=1)
    assert first.world == second.world == world_of(topology)
    for name, value in first.outputs.items():
        assert bits_equal(value, second.outputs[name]), name
    for a, b in zip(first.ranks, second.ranks, strict=True):
        assert a.timing.time_ns == b.timing.time_ns
    assert first.time_ns == second.time_ns
    assert first.network == second.network
    assert min(rank.timing.time_ns for rank in first.ranks) > 0


def test_ring_allgather_program_puts_every_rank_side_by_side() -> None:
    program = neuronemu.assemble_file(str(COLLECTIVES / "ring_allgather.s"))
    result = run_spmd(program, "trn2.48xlarge")
    x = np.stack([r.tensors["x"] for r in result.ranks])            # (16, 128, 256)
    expected = np.concatenate(list(x), axis=1)                      # block r = rank r's x
    for name in ("y", "z"):
        got = result.outputs[name]
        assert all(np.array_equal(got[r], expected) for r in range(16)), name


def test_pairwise_alltoall_program_transposes_the_blocks() -> None:
    program = neuronemu.assemble_file(str(COLLECTIVES / "pairwise_alltoall.s"))
    result = run_spmd(program, "trn2.48xlarge")
    x = np.stack([r.tensors["x"] for r in result.ranks]).reshape(16, 128, 16, 64)
    expected = x.transpose(2, 1, 0, 3).reshape(16, 128, 1024)      # y[r] block j = x[j] block r
    assert np.array_equal(result.outputs["y"], expected)
    assert np.array_equal(result.outputs["z"], expected)
