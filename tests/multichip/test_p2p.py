"""Point-to-point messages (cc.send / cc.recv), the ctrl instructions SPMD kernels use to find
their neighbours, and the located errors of multi-rank runs: deadlocks, unmatched sends,
mismatched messages, disagreeing collectives, bad peers and world-dependent shapes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from spmd_helpers import NEIGHBOURS, TOPOLOGIES, assemble_for, spmd, world_of

import neuronemu
from neuronemu.api import run
from neuronemu.errors import RuntimeFault
from neuronemu.multichip.spmd import CommError


def line_of(text: str, fragment: str) -> int:
    """1-based line of the first line of ``text`` containing ``fragment``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def comm_error(text: str, topology: str = "trn2.48xlarge", **kwargs) -> CommError:
    with pytest.raises(CommError) as info:
        spmd(text, topology, **kwargs)
    assert info.value.exit_code == 5
    return info.value


# ---------------------------------------------------------------------------------------------
# messages


@pytest.mark.parametrize("topology", ["trn2-ultraserver", "trn3-ultraserver-gen1"])
def test_ring_exchange(topology) -> None:
    n = world_of(topology)
    text = (".hbm x int32[2, 6] input\n.hbm y int32[2, 6] output\n.hbm ids int32[1, 2] output\n"
            ".hbm ramp int32[1, 256] input init=arange\n" + NEIGHBOURS
            + "    cc.send x, peer=r2\n"
            "    cc.recv y, peer=r3\n"
            # the left neighbour's rank and the world, as seen through registers
            "    dma.copy ids[0:1, 0:1], ramp[0:1, r3 : r3 + 1]\n"
            "    dma.copy ids[0:1, 1:2], ramp[0:1, r1 : r1 + 1]\n")
    x = np.random.default_rng(1).integers(-(2 ** 31), 2 ** 31, (n, 2, 6)).astype(np.int32)
    result = spmd(text, topology, {"x": x})
    assert np.array_equal(result.outputs["y"], np.roll(x, 1, axis=0))
    ids = result.outputs["ids"][:, 0, :]
    assert np.array_equal(ids[:, 0], (np.arange(n) - 1) % n)
    assert (ids[:, 1] == n).all()
    assert result.network.messages == n


def test_messages_between_a_pair_arrive_in_order() -> None:
    """Rank 0 sends a then b to rank 1 and c to rank 2; rank 2 sends d to rank 1. Rank 1 first
    takes rank 2's message, then rank 0's two in the order they were sent."""
    text = """\
.hbm a float32[2, 8] input init=full(1)
.hbm b float32[2, 8] input init=full(2)
.hbm c float32[2, 8] input init=full(3)
.hbm d float32[2, 8] input init=full(4)
.hbm first float32[2, 8] output init=zeros
.hbm second float32[2, 8] output init=zeros
.hbm third float32[2, 8] output init=zeros
    ctrl.rank r0
    ctrl.bne r0, 0, not_zero
    cc.send a, peer=1
    cc.send b, peer=1, queue=2
    cc.send c, peer=2
not_zero:
    ctrl.bne r0, 2, not_two
    cc.send d, peer=1
    cc.recv first, peer=0
not_two:
    ctrl.bne r0, 1, done
    cc.recv first, peer=2
    cc.recv second, peer=0
    cc.recv third, peer=0
done:
"""
    result = spmd(text, "trn1.32xlarge")
    out = result.outputs
    assert (out["first"][1] == 4).all()
    assert (out["second"][1] == 1).all()
    assert (out["third"][1] == 2).all()
    assert (out["first"][2] == 3).all()
    assert not out["first"][3:].any()
    assert result.network.messages == 4


def test_send_and_recv_between_sbuf_tiles_with_register_offsets() -> None:
    """Every rank sends column block (r + 1) mod n of its SBUF tile to the right neighbour,
    which stores it at column block r of its own."""
    n = 16
    text = (".hbm x float32[8, 64] input\n.hbm y float32[8, 64] output init=zeros\n"
            ".sbuf t float32[128, 64]\n.sbuf u float32[128, 64]\n" + NEIGHBOURS
            + "    dma.copy t[0:8, :], x[:, :], queue=0\n"
            "    dma.copy u[0:8, :], y[:, :], queue=0\n"
            "    ctrl.mul r4, r2, 4\n"
            "    ctrl.mul r5, r0, 4\n"
            "    cc.send t[0:8, r4 : r4 + 4], peer=r2\n"
            "    cc.recv u[0:8, r5 : r5 + 4], peer=r3\n"
            "    dma.copy y[:, :], u[0:8, :], queue=1\n")
    x = np.random.default_rng(2).standard_normal((n, 8, 64)).astype(np.float32)
    y = spmd(text, "trn2.48xlarge", {"x": x}).outputs["y"]
    for r in range(n):
        left = (r - 1) % n
        expected = np.zeros((8, 64), np.float32)
        expected[:, 4 * r: 4 * r + 4] = x[left][:, 4 * r: 4 * r + 4]
        assert np.array_equal(y[r], expected), r


def test_send_to_itself_and_messages_waiting_across_collectives() -> None:
    """A rank may send to itself; a message sent before a barrier and an all-reduce is still
    there to receive after them."""
    text = (".hbm x int32[2, 4] input\n.hbm own int32[2, 4] output\n"
            ".hbm late int32[2, 4] output\n.hbm s int32[2, 4] output\n" + NEIGHBOURS
            + "    cc.send x, peer=r0\n"
            "    cc.send x, peer=r2\n"
            "    cc.barrier\n"
            "    cc.all_reduce s, x, op=add\n"
            "    cc.recv late, peer=r3\n"
            "    cc.recv own, peer=r0\n")
    n = 16
    x = np.arange(n * 8, dtype=np.int32).reshape(n, 2, 4)
    out = spmd(text, "trn2.48xlarge", {"x": x}).outputs
    assert np.array_equal(out["own"], x)
    assert np.array_equal(out["late"], np.roll(x, 1, axis=0))
    assert np.array_equal(out["s"], np.broadcast_to(x.sum(0), (n, 2, 4)))


def test_barrier_holds_every_rank_until_the_slowest_arrives() -> None:
    """Rank 0 copies 4 MiB on queue 15 before the barrier (queue 15): no rank's barrier can end
    before that copy could have, at the target's DMA bandwidth, plus one hop."""
    text = """\
.hbm big float32[128, 8192] input init=zeros
.hbm copy float32[128, 8192] output
    ctrl.rank r0
    ctrl.bne r0, 0, sync
    dma.copy copy[:, :], big[:, :], queue=15
sync:
    cc.barrier
"""
    result = spmd(text, "trn2.48xlarge")
    copy_ns = 128 * 8192 * 4 / result.program.target.dma_bytes_per_ns
    # the last round's signal still has to cross at least one link after rank 0 arrived
    hop_ns = TOPOLOGIES["trn2.48xlarge"].hop_ns
    for rank in result.ranks:
        assert rank.timing.time_ns >= copy_ns + hop_ns


@pytest.mark.parametrize("topology, dst_chip", [("trn2.48xlarge", 10),
                                                ("trn3-ultraserver-gen1", 20)])
def test_message_time_is_hops_times_latency_plus_bytes_over_bandwidth(topology, dst_chip):
    """Cut-through: a 64 KiB message from chip 0 to chip 10 of the 4x4 torus (coordinates
    (0, 0) -> (2, 2): 4 hops) or from chip 0 to chip 20 of the switched gen1 UltraServer (another
    server: chip -> switch -> spine -> switch -> chip) arrives after 4 hop latencies plus the
    bytes at the slowest link's bandwidth."""
    topo = TOPOLOGIES[topology]
    text = (".hbm x float32[64, 256] input init=ones\n.hbm y float32[64, 256] output\n"
            "    ctrl.rank r0\n"
            "    ctrl.bne r0, 0, receiver\n"
            f"    cc.send x, peer={dst_chip}\n"
            "receiver:\n"
            f"    ctrl.bne r0, {dst_chip}, done\n"
            "    cc.recv y, peer=0\n"
            "done:\n")
    result = spmd(text, topology)
    nbytes = 64 * 256 * 4
    if topo.layout == "torus":
        bandwidth = topo.link(0, 1).gb_s
        assert topo.coords(dst_chip) == (2, 2)
    else:
        bandwidth = min(topo.link(0, topo.chips).gb_s, topo.link(topo.chips, topo.nodes - 1).gb_s)
        assert dst_chip // topo.chips_per_server != 0
    expected = 4 * topo.hop_ns + nbytes / bandwidth
    assert result.ranks[dst_chip].timing.time_ns == pytest.approx(expected, rel=1e-9)
    assert result.time_ns == pytest.approx(expected, rel=1e-9)
    assert (result.outputs["y"][dst_chip] == 1).all()
    net = result.network
    assert (net.messages, net.bytes, net.link_bytes) == (1, nbytes, 4 * nbytes)
    assert len(net.links) == 4
    if topo.layout != "torus":
        spine = topo.nodes - 1 - topo.chips   # the only spine of gen1, a switch number
        assert set(net.links) == {"chip0->switch0", f"switch0->switch{spine}",
                                  f"switch{spine}->switch1", "switch1->chip20"}


def test_messages_sharing_a_link_take_turns() -> None:
    """Rank 1 sends 64 KiB to rank 3 (route 1 -> 2 -> 3: the tie of the 4-ring goes the positive
    way) and, from another queue at the same time, 64 KiB to rank 2 (1 -> 2). The link 1 -> 2
    carries one message at a time, so the second waits for the first: it arrives at
    256 ns (first message) + 1 hop + 256 ns instead of 1 hop + 256 ns."""
    text = """\
.hbm a float32[64, 256] input init=ones
.hbm y float32[64, 256] output
    ctrl.rank r0
    ctrl.bne r0, 1, receivers
    cc.send a, peer=3, queue=1
    cc.send a, peer=2, queue=2
receivers:
    ctrl.blt r0, 2, done
    ctrl.bge r0, 4, done
    cc.recv y, peer=1
done:
"""
    topo = TOPOLOGIES["trn2.48xlarge"]
    result = spmd(text, "trn2.48xlarge")
    body = 64 * 256 * 4 / topo.link(1, 2).gb_s
    assert body == 256.0
    assert result.ranks[3].timing.time_ns == pytest.approx(2 * topo.hop_ns + body)
    assert result.ranks[2].timing.time_ns == pytest.approx(body + topo.hop_ns + body)
    links = result.network.links
    assert set(links) == {"chip1->chip2", "chip2->chip3"}
    assert links["chip1->chip2"].messages == 2
    assert links["chip1->chip2"].busy_ns == pytest.approx(2 * body)
    assert (result.outputs["y"][2:4] == 1).all()


EXPLICIT = """\
.sync explicit
.hbm x float32[4, 8] input
.hbm y float32[4, 8] output
.sbuf t float32[128, 8]
.sbuf u float32[128, 8]
""" + NEIGHBOURS + """\
    dma.copy t[0:4, :], x[:, :], queue=0
    sync.signal q0, sem=0
    sync.wait q15, sem=0, value=1
    cc.send t[0:4, :], peer=r2
    cc.recv u[0:4, :], peer=r3
    sync.signal q15, sem=1
    sync.wait q1, sem=1, value=1
    dma.copy y[:, :], u[0:4, :], queue=1
"""


def test_explicit_sync_orders_cc_instructions_with_semaphores() -> None:
    n = 16
    x = np.arange(n * 32, dtype=np.float32).reshape(n, 4, 8)
    result = spmd(EXPLICIT, "trn2.48xlarge", {"x": x})
    assert np.array_equal(result.outputs["y"], np.roll(x, 1, axis=0))


def test_explicit_sync_reports_a_race_on_the_sent_tile() -> None:
    racy = EXPLICIT.replace("    sync.signal q0, sem=0\n    sync.wait q15, sem=0, value=1\n", "")
    with pytest.raises(RuntimeFault) as info:
        spmd(racy, "trn2.48xlarge", {"x": np.zeros((4, 8))})
    message = info.value.message
    assert info.value.exit_code == 5
    assert "race on 't'" in message and "cc.send" in message and "dma.copy" in message


# ---------------------------------------------------------------------------------------------
# errors


def test_recv_of_a_different_shape_names_both_sides() -> None:
    text = (".hbm x float32[2, 8] input\n.hbm y float32[2, 4] output\n" + NEIGHBOURS
            + "    cc.send x, peer=r2\n    cc.recv y, peer=r3\n")
    err = comm_error(text)
    send_line = line_of(text, "cc.send")
    # every rank's recv mismatches; the first one carried out is reported (all are ready at
    # once, so the lowest rank): the receiver and its left neighbour, the sender
    found = re.search(r"rank (\d+) receives float32\[2, 4\] into 'y', but rank (\d+) sent "
                      rf"float32\[2, 8\] at k\.s:{send_line}", err.message)
    assert found, err.message
    receiver, sender = int(found[1]), int(found[2])
    assert sender == (receiver - 1) % 16
    assert err.render().startswith(f"k.s:{line_of(text, 'cc.recv')}:")


def test_recv_of_a_different_dtype_is_an_error() -> None:
    text = (".hbm x float32[2, 8] input\n.hbm y int32[2, 8] output\n" + NEIGHBOURS
            + "    cc.send x, peer=r2\n    cc.recv y, peer=r3\n")
    err = comm_error(text)
    assert "int32[2, 8]" in err.message and "float32[2, 8]" in err.message


def test_deadlock_on_a_message_that_never_comes() -> None:
    text = """\
.hbm x float32[2, 8] input
.hbm y float32[2, 8] output
    ctrl.rank r0
    ctrl.bne r0, 1, done
    cc.recv y, peer=0
done:
"""
    err = comm_error(text)
    assert err.message.startswith("deadlock:")
    assert "1 of 16 ranks" in err.message
    assert "rank 1 waits at k.s:5 (cc.recv) for a message from rank 0, which has finished" \
        in err.notes
    rendered = err.render()
    assert rendered.startswith("k.s:5:5: error: deadlock:")
    assert "^" in rendered
    assert "cc.recv y, peer=0" in rendered


def test_deadlock_of_two_ranks_waiting_for_each_other() -> None:
    text = """\
.hbm x float32[2, 8] input
.hbm y float32[2, 8] output
    ctrl.rank r0
    ctrl.bge r0, 2, done
    ctrl.sub r1, 1, r0
    cc.recv y, peer=r1
    cc.send x, peer=r1
done:
"""
    err = comm_error(text, topology="trn1.32xlarge")
    assert err.message.startswith("deadlock: 2 of 16 ranks")
    notes = "\n".join(err.notes)
    assert ("rank 0 waits at k.s:6 (cc.recv) for a message from rank 1, which waits at k.s:6 "
            "(cc.recv)") in notes
    assert ("rank 1 waits at k.s:6 (cc.recv) for a message from rank 0, which waits at k.s:6 "
            "(cc.recv)") in notes


def test_deadlock_at_a_collective_one_rank_skips() -> None:
    text = """\
.hbm x float32[2, 8] input
    ctrl.rank r0
    ctrl.beq r0, 0, done
    cc.barrier
done:
"""
    err = comm_error(text)
    assert err.message.startswith("deadlock: 15 of 16 ranks")
    notes = "\n".join(err.notes)
    assert "ranks 1..15 wait at k.s:4 (cc.barrier)" in notes
    assert "rank 0" in notes


def test_unmatched_send_is_reported_at_the_send() -> None:
    text = """\
.hbm x float32[2, 8] input
    ctrl.rank r0
    ctrl.bne r0, 3, done
    cc.send x, peer=7
done:
"""
    err = comm_error(text)
    assert "rank 3 sent 1 message(s) to rank 7" in err.message
    assert "never received" in err.message
    assert err.render().startswith("k.s:4:")


@pytest.mark.parametrize("peer_setup, peer, value", [
    ("", "16", 16),
    ("    ctrl.sub r9, r0, 1\n", "r9", -1),    # rank 0's left neighbour without the mod
])
def test_peer_outside_the_world(peer_setup, peer, value) -> None:
    text = (".hbm x float32[2, 8] input\n.hbm y float32[2, 8] output\n    ctrl.rank r0\n"
            + peer_setup + f"    cc.send x, peer={peer}\n")
    with pytest.raises(RuntimeFault) as info:
        spmd(text, "trn2.48xlarge")
    assert f"peer={value} is not a rank (ranks 0..15)" in info.value.message
    assert info.value.message.startswith("rank 0:")
    assert info.value.render().startswith(f"k.s:{line_of(text, 'cc.send')}:")


def test_recv_from_a_peer_outside_the_world() -> None:
    with pytest.raises(RuntimeFault, match="peer=64 is not a rank"):
        spmd(".hbm y float32[2, 8] output\n    cc.recv y, peer=64\n", "trn2-ultraserver")


def test_ranks_taking_different_collectives() -> None:
    text = """\
.hbm x int32[2, 4] input
.hbm y int32[2, 4] output
.hbm z int32[32, 4] output
    ctrl.rank r0
    ctrl.beq r0, 5, other
    cc.all_reduce y, x, op=add
    ctrl.jmp done
other:
    cc.all_gather z, x, dim=0
done:
"""
    err = comm_error(text)
    assert "ranks disagree on a collective" in err.message
    assert "rank 0 is at k.s:6 (cc.all_reduce)" in err.message
    assert "rank 5 at k.s:9 (cc.all_gather)" in err.message
    assert err.render().startswith("k.s:9:")


def test_ranks_passing_different_shifts() -> None:
    text = (".hbm x int32[2, 4] input\n.hbm y int32[2, 4] output\n    ctrl.rank r0\n"
            "    cc.permute y, x, shift=r0\n")
    err = comm_error(text)
    assert "ranks disagree" in err.message
    assert "shift=0" in err.message and "shift=1" in err.message


def test_disagreeing_options_are_named() -> None:
    """The report should say which op each rank asked for. It prints the enum codes instead:
    'op=1' for add and 'op=5' for maximum (BUG: _describe in multichip/spmd.py)."""
    text = """\
.hbm x int32[2, 4] input
.hbm y int32[2, 4] output
    ctrl.rank r0
    ctrl.beq r0, 3, other
    cc.all_reduce y, x, op=add
    ctrl.jmp done
other:
    cc.all_reduce y, x, op=maximum
done:
"""
    err = comm_error(text)
    assert "ranks disagree" in err.message
    assert "op=add" in err.message and "op=maximum" in err.message, err.message


def test_rdh_needs_a_power_of_two_world_144() -> None:
    with pytest.raises(RuntimeFault) as info:
        spmd(".hbm x float32[2, 8] input\n.hbm y float32[2, 8] output\n"
             "    cc.all_reduce y, x, op=add, algorithm=rdh\n", "trn3-ultraserver-gen2")
    assert "power-of-two" in info.value.message
    assert "144" in info.value.message
    assert info.value.render().startswith("k.s:3:")


@pytest.mark.parametrize("instruction", [
    "cc.reduce_scatter v, w, op=add, dim=0, algorithm=rdh",
    "cc.all_gather w, v, dim=0, algorithm=rdh",
])
def test_rdh_needs_a_power_of_two_world_48(instruction) -> None:
    """trn2.48xlarge with 3 ranks per chip: 48 ranks."""
    with pytest.raises(RuntimeFault, match="power-of-two"):
        spmd(f".hbm v float32[1, 8] input\n.hbm w float32[48, 8] input\n    {instruction}\n",
             "trn2.48xlarge", ranks_per_chip=3)


@pytest.mark.parametrize("decl, instruction, fragment", [
    (".hbm x int32[2, 5] input\n.hbm y int32[4, 5] output",
     "cc.all_gather y, x, dim=0", "[32, 5], not [4, 5]"),
    (".hbm x int32[2, 5] input\n.hbm y int32[2, 5] output",
     "cc.all_gather y, x, dim=1", "[2, 80], not [2, 5]"),
    (".hbm x int32[16, 5] input\n.hbm y int32[2, 5] output",
     "cc.reduce_scatter y, x, op=add, dim=0", "[32, 5], not [16, 5]"),
    (".hbm x int32[4, 24] input\n.hbm y int32[4, 2] output",
     "cc.reduce_scatter y, x, op=add, dim=1", "[4, 32], not [4, 24]"),
    (".hbm x int32[2, 24] input\n.hbm y int32[2, 24] output",
     "cc.all_to_all y, x, dim=1", "cannot split evenly"),
])
def test_world_dependent_shapes_are_checked(decl, instruction, fragment) -> None:
    with pytest.raises(RuntimeFault) as info:
        spmd(f"{decl}\n    {instruction}\n", "trn2.48xlarge")
    assert not isinstance(info.value, CommError)
    assert fragment in info.value.message
    assert info.value.render().startswith("k.s:")


# ---------------------------------------------------------------------------------------------
# ctrl arithmetic and world-one runs


def test_div_and_rem_round_toward_minus_infinity() -> None:
    """Each result is shown through an element index: ramp[0, value + 2048] = value + 2048."""
    cases = [(7, 2), (-7, 2), (7, -2), (-7, -2), (-1, 16), (-16, 16), (-17, 16), (6, -3),
             (0, -5), (-1999, 1), (1999999, -1000)]
    lines = [".hbm ramp int32[1, 4096] input init=arange",
             f".hbm q int32[1, {len(cases)}] output", f".hbm m int32[1, {len(cases)}] output",
             f".hbm qi int32[1, {len(cases)}] output", f".hbm mi int32[1, {len(cases)}] output"]
    for k, (a, b) in enumerate(cases):
        lines += [f"    ctrl.mov r0, {a}", f"    ctrl.mov r1, {b}",
                  "    ctrl.div r2, r0, r1", "    ctrl.rem r3, r0, r1",
                  f"    ctrl.div r4, {a}, {b}", f"    ctrl.rem r5, {a}, {b}"]   # immediates
        for name, reg in (("q", "r2"), ("m", "r3"), ("qi", "r4"), ("mi", "r5")):
            lines += [f"    ctrl.add {reg}, {reg}, 2048",
                      f"    dma.copy {name}[0:1, {k}:{k + 1}], ramp[0:1, {reg} : {reg} + 1]"]
    result = run(neuronemu.assemble("\n".join(lines) + "\n", "k.s", target="trn2"))
    out = {name: result.outputs[name][0].astype(np.int64) - 2048 for name in ("q", "m", "qi", "mi")}
    assert out["q"].tolist() == [a // b for a, b in cases]
    assert out["qi"].tolist() == [a // b for a, b in cases]
    assert out["m"].tolist() == [a % b for a, b in cases]
    assert out["mi"].tolist() == [a % b for a, b in cases]


@pytest.mark.parametrize("op", ["div", "rem"])
def test_div_and_rem_by_zero_stop_the_run(op) -> None:
    text = f"    ctrl.mov r0, 5\n    ctrl.mov r1, 0\n    ctrl.{op} r2, r0, r1\n"
    with pytest.raises(RuntimeFault) as info:
        run(neuronemu.assemble(text, "k.s", target="trn2"))
    assert "division by zero" in info.value.message
    assert info.value.render().startswith("k.s:3:")


def test_division_by_zero_on_one_rank_names_it() -> None:
    text = NEIGHBOURS + "    ctrl.sub r4, r0, 9\n    ctrl.div r5, 100, r4\n"
    with pytest.raises(RuntimeFault) as info:
        spmd(text, "trn2.48xlarge")
    assert not isinstance(info.value, CommError)
    assert info.value.message.startswith("rank 9:")
    assert "division by zero" in info.value.message


def test_single_core_run_has_a_world_of_one() -> None:
    """neuronemu.run: rank 0 of 1; a send to itself comes back; collectives copy."""
    text = """\
.hbm x float32[4, 8] input
.hbm back float32[4, 8] output
.hbm red float32[4, 8] output
.hbm gat float32[4, 8] output
.hbm per float32[4, 8] output
.hbm ids int32[1, 2] output
.hbm ramp int32[1, 8] input init=arange
    ctrl.rank r0
    ctrl.world r1
    cc.send x, peer=r0
    cc.recv back, peer=0
    cc.all_reduce red, x, op=add, algorithm=ring
    cc.all_gather gat, x, dim=1
    cc.permute per, x, shift=-7
    cc.barrier
    dma.copy ids[0:1, 0:1], ramp[0:1, r0 : r0 + 1]
    dma.copy ids[0:1, 1:2], ramp[0:1, r1 : r1 + 1]
"""
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    result = run(assemble_for(text, "trn1.2xlarge"), {"x": x})
    for name in ("back", "red", "gat", "per"):
        assert np.array_equal(result.outputs[name], x), name
    assert result.outputs["ids"].tolist() == [[0, 1]]


def test_packed_mx_tiles_move_unchanged() -> None:
    """x4 tiles are moved bit for bit by the collectives that only move data."""
    text = (".hbm x float8_e4m3fn_x4[4, 8] input\n.hbm y float8_e4m3fn_x4[4, 8] output\n"
            ".hbm z float8_e4m3fn_x4[256, 8] output\n"
            "    cc.permute y, x, shift=1\n    cc.all_gather z, x, dim=0\n")
    world = world_of("trn3-ultraserver-gen1", 1)
    bits = np.random.default_rng(7).integers(0, 2 ** 32, size=(world, 4, 8), dtype=np.uint64)
    bits = bits.astype(np.uint32)
    result = spmd(text, "trn3-ultraserver-gen1", {"x": bits})
    y = np.asarray(result.outputs["y"]).view(np.uint32)
    assert np.array_equal(y, np.roll(bits, 1, axis=0))
    z = np.asarray(result.outputs["z"]).view(np.uint32)
    assert np.array_equal(z[5], bits.reshape(world * 4, 8))
