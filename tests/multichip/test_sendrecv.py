"""cc.sendrecv (nki.isa.sendrecv): send one tile and receive another in one instruction. Oracles:
numpy rolls of the inputs, cc.send / cc.recv written out as two instructions, and the documented
hop latency (docs/multichip.md) between a near and a far peer."""

from __future__ import annotations

import numpy as np
import pytest
from spmd_helpers import spmd, world_of

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault
from neuronemu.multichip.spmd import CommError

RING = """.hbm x int32[4, 8] input
.hbm y int32[4, 8] output
.sbuf xs int32[4, 8]
.sbuf ys int32[4, 8]
    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1
    ctrl.sub r3, r0, 1
    ctrl.rem r3, r3, r1
    dma.copy xs, x
{body}
    dma.copy y, ys
"""


@pytest.mark.parametrize("topology, ranks_per_chip", [("trn2.48xlarge", 1),
                                                      ("trn2.48xlarge", 2),
                                                      ("trn3-ultraserver-gen1", 1)])
def test_ring_exchange_in_one_instruction(topology: str, ranks_per_chip: int) -> None:
    n = world_of(topology, ranks_per_chip)
    x = np.random.default_rng(0).integers(-(2 ** 31), 2 ** 31, (n, 4, 8)).astype(np.int32)
    body = "    cc.sendrecv ys, xs, send_to=r2, recv_from=r3"
    result = spmd(RING.format(body=body), topology, {"x": x}, ranks_per_chip=ranks_per_chip)
    assert np.array_equal(result.outputs["y"], np.roll(x, 1, axis=0))
    assert result.network.messages == n


def test_lnc2_pair_swap() -> None:
    """The docs' use: the two cores of an LNC=2 pair (ranks 2c, 2c + 1) swap tiles."""
    n = world_of("trn2.48xlarge", 2)
    x = np.arange(n * 32, dtype=np.int32).reshape(n, 4, 8)
    body = "    ctrl.rem r4, r0, 2\n    ctrl.sub r5, 1, r4\n    ctrl.add r5, r5, r0\n" \
           "    ctrl.sub r5, r5, r4\n    cc.sendrecv ys, xs, send_to=r5, recv_from=r5"
    result = spmd(RING.format(body=body), "trn2.48xlarge", {"x": x}, ranks_per_chip=2)
    partner = np.arange(n) ^ 1
    assert np.array_equal(result.outputs["y"], x[partner])


def test_it_takes_the_time_of_its_slower_half() -> None:
    """Same data as cc.send + cc.recv; the instruction ends when both its message has arrived
    and the incoming one is there, which for a symmetric ring is the one-message time."""
    n = world_of("trn2.48xlarge")
    x = np.ones((n, 4, 8), np.int32)
    one = spmd(RING.format(body="    cc.sendrecv ys, xs, send_to=r2, recv_from=r3"),
               "trn2.48xlarge", {"x": x})
    two = spmd(RING.format(body="    cc.send xs, peer=r2\n    cc.recv ys, peer=r3"),
               "trn2.48xlarge", {"x": x})
    assert np.array_equal(one.outputs["y"], two.outputs["y"])
    # a symmetric ring: both halves arrive together, so one instruction takes as long as two
    assert one.time_ns == pytest.approx(two.time_ns)
    assert one.network.bytes == two.network.bytes == n * 4 * 8 * 4


ASYMMETRIC = """.hbm x int32[128, 512] input
.hbm y int32[128, 512] output
.sbuf xs int32[128, 512]
.sbuf ys int32[128, 512]
    ctrl.rank r0
    dma.copy xs, x
    ctrl.bne r0, 0, not0
    cc.sendrecv ys, xs, send_to={far}, recv_from=1
    ctrl.jmp done
not0:
    ctrl.bne r0, 1, not1
    cc.send xs, peer=0
    ctrl.jmp done
not1:
    ctrl.bne r0, {far}, done
    cc.recv ys, peer=0
done:
"""


def test_the_send_half_counts_when_it_arrives_last() -> None:
    """Rank 0 receives from its neighbour rank 1 and sends to rank 1 (1 hop) or to rank 10,
    chip (2, 2) of the 4 x 4 trn2.48xlarge torus (4 hops): with the far peer its sendrecv ends
    when its own message arrives, 3 hop latencies (3 x 1.5 us) later than with the near one."""
    x = np.ones((16, 128, 512), np.int32)
    times = {}
    for far in (1, 10):
        src = ASYMMETRIC.format(far=far)
        if far == 1:  # rank 1 both sends and receives
            src = src.replace("    cc.send xs, peer=0\n", "    cc.send xs, peer=0\n    cc.recv ys, peer=0\n")
        result = spmd(src, "trn2.48xlarge", {"x": x})
        times[far] = result.ranks[0].timing.time_ns
    assert times[10] - times[1] == pytest.approx(3 * 1500.0, abs=1.0)


def test_single_rank_sends_to_itself() -> None:
    src = """.target trn2
.hbm x float32[8, 16] input
.hbm y float32[8, 16] output
.sbuf xs float32[8, 16]
.sbuf ys float32[8, 16]
dma.copy xs, x
cc.sendrecv ys, xs, send_to=0, recv_from=0
dma.copy y, ys
"""
    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    out = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": x}).outputs["y"]
    assert np.array_equal(out, x)


def test_a_peer_that_never_sends_is_a_deadlock() -> None:
    body = "    ctrl.bne r0, 1, skip\n    cc.sendrecv ys, xs, send_to=0, recv_from=2\nskip:"
    with pytest.raises(CommError) as info:
        spmd(RING.format(body=body), "trn2.48xlarge", {"x": np.zeros((16, 4, 8), np.int32)})
    assert info.value.message.startswith("deadlock: 1 of 16 ranks")
    assert any("(cc.sendrecv) for a message from rank 2, which has finished" in note
               for note in info.value.notes)


def test_deadlock_report_names_messages_waiting_from_someone_else() -> None:
    """Every rank sends right and expects from the right too: each holds its left
    neighbour's message, which the report says."""
    body = "    cc.sendrecv ys, xs, send_to=r2, recv_from=r2"
    with pytest.raises(CommError) as info:
        spmd(RING.format(body=body), "trn2.48xlarge", {"x": np.zeros((16, 4, 8), np.int32)})
    assert "rank 1 holds 1 unreceived message(s) from rank 0 (sent at k.s:12)" in info.value.notes


def test_bad_rank_is_a_located_fault() -> None:
    body = "    cc.sendrecv ys, xs, send_to=r1, recv_from=r3"
    with pytest.raises(RuntimeFault, match=r"cc.sendrecv send_to=16 is not a rank \(ranks 0..15\)"):
        spmd(RING.format(body=body), "trn2.48xlarge", {"x": np.zeros((16, 4, 8), np.int32)})


@pytest.mark.parametrize("target, decls, message", [
    ("trn1", ".sbuf a int32[4, 8]\n.sbuf b int32[4, 8]", "trn1"),
    ("trn2", ".sbuf a int32[4, 8]\n.sbuf b float32[4, 8]", "dtype"),
    ("trn2", ".sbuf a int32[4, 8]\n.sbuf b int32[4, 16]", "shape mismatch"),
    ("trn2", ".hbm a int32[4, 8] output\n.sbuf b int32[4, 8]", "must be in SBUF"),
])
def test_assembly_errors(target: str, decls: str, message: str) -> None:
    src = f".target {target}\n{decls}\ncc.sendrecv a, b, send_to=0, recv_from=0\n"
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")
