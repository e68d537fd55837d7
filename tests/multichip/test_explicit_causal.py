"""Explicit-sync timing of multi-rank kernels is causal across ranks: the ranks are replayed
together, so a recv ends when the matching send's data has arrived in the *replayed* schedule and
a collective runs from every rank's replayed arrival (issue 14). Rank 0 is made late by a long
GpSimd memset that its cc.* queue waits for through a semaphore, although the data it sends does
not depend on it: sync mode auto would send at once, so only a causal replay gives the times
below. Expected times are worked out by hand from isa/targets.toml (trn1: GpSimd 1.4 GHz,
on-chip rank-to-rank copies 1,300 ns + bytes at 272 B/ns, DMA reduce at half that rate) and
isa/costs.toml (gpsimd_stream: 150 + N cycles, 60 cycles of latency)."""

from __future__ import annotations

import numpy as np
import pytest
from spmd_helpers import spmd

from neuronemu.errors import RuntimeFault

LATE = (150 + 8192 + 60) / 1.4      # rank 0's memset of [128, 8192] fp32 written: 6001.4 ns
HOP = 1300.0                        # trn1.2xlarge: both ranks on one chip (docs/multichip.md)
B = 272.0                           # bytes per ns of the chip's DMA
NBYTES = 128 * 64 * 4               # one [128, 64] fp32 tile

HEADER = """.sync explicit
.hbm x float32[128, 64] input
.hbm y float32[128, 64] output
.sbuf t float32[128, 64]
.sbuf u float32[128, 64]
.sbuf w float32[128, 8192]
    ctrl.rank r0
    dma.copy t, x, queue=0
    sync.signal q0, sem=0
    ctrl.bne r0, 0, on_time
    gpsimd.memset w, value=1.0       # rank 0 only: long, and nothing below reads w
    sync.signal gpsimd, sem=1
    sync.wait q15, sem=1, value=1
on_time:
    sync.wait q15, sem=0, value=1
"""

P2P = HEADER + """\
    ctrl.bne r0, 0, receiver
    cc.send t, peer=1
    ctrl.jmp end
receiver:
    cc.recv u, peer=0
    sync.signal q15, sem=2
    sync.wait q1, sem=2, value=1
    dma.copy y, u, queue=1
end:
"""

ALL_REDUCE = HEADER + """\
    cc.all_reduce u, t, op=add, algorithm=mesh
    sync.signal q15, sem=2
    sync.wait q1, sem=2, value=1
    dma.copy y, u, queue=1
"""


def _event(result, rank: int, name: str) -> tuple[float, float]:
    """(start, end) of rank's last ``name`` event."""
    timing = result.ranks[rank].timing
    program = result.program
    found = [(float(t[0]), float(t[1]))
             for e, t in zip(timing.events, timing.event_times, strict=True)
             if program.instructions[int(e[0])].definition.name == name]
    assert found, f"rank {rank} ran no {name}"
    return found[-1]


def test_recv_waits_for_the_late_send() -> None:
    x = np.arange(2 * 128 * 64, dtype=np.float32).reshape(2, 128, 64)
    result = spmd(P2P, "trn1.2xlarge", {"x": x}, ranks_per_chip=2)
    np.testing.assert_array_equal(result.outputs["y"][1], x[0])
    send = _event(result, 0, "cc.send")
    recv = _event(result, 1, "cc.recv")
    assert send[0] == pytest.approx(LATE)             # the send leaves once the memset is done
    assert send[1] == pytest.approx(LATE + HOP + NBYTES / B)
    assert recv[0] < 1000.0                           # rank 1 was waiting from the start...
    assert recv[1] == pytest.approx(LATE + HOP + NBYTES / B)   # ...for the data to arrive
    store = _event(result, 1, "dma.copy")
    assert store[0] >= recv[1]


def test_collective_finishes_after_the_last_rank_joins() -> None:
    x = np.ones((2, 128, 64), dtype=np.float32)
    result = spmd(ALL_REDUCE, "trn1.2xlarge", {"x": x}, ranks_per_chip=2)
    np.testing.assert_array_equal(result.outputs["y"], np.full((2, 128, 64), 2.0, np.float32))
    chunk = NBYTES / 2
    # mesh, two ranks: rank 0's half reaches rank 1 at LATE + HOP + chunk / B, which adds it
    # (chunk at B / 2); the all-gather step then sends the sums both ways, rank 1's leaving
    # after its add: every rank is done at LATE + 2 (HOP + chunk / B) + chunk / (B / 2)
    want = LATE + 2 * (HOP + chunk / B) + chunk / (B * 0.5)
    for rank in (0, 1):
        _start, end = _event(result, rank, "cc.all_reduce")
        assert end == pytest.approx(want), rank
    assert _event(result, 0, "cc.all_reduce")[0] == pytest.approx(LATE)
    assert _event(result, 1, "cc.all_reduce")[0] < 1000.0


def test_auto_mode_sends_at_once() -> None:
    """The same kernel in mode auto: memory alone orders it and the send does not read w, so
    the send leaves when t is loaded (the figure above is the replay's, not the run's)."""
    x = np.zeros((2, 128, 64), dtype=np.float32)
    result = spmd(P2P.replace(".sync explicit\n", ""), "trn1.2xlarge", {"x": x},
                  ranks_per_chip=2)
    assert _event(result, 1, "cc.recv")[1] < LATE


def test_race_on_a_received_tile_is_still_reported() -> None:
    racy = P2P.replace("    sync.signal q15, sem=2\n    sync.wait q1, sem=2, value=1\n", "")
    with pytest.raises(RuntimeFault) as info:
        spmd(racy, "trn1.2xlarge", {"x": np.zeros((128, 64), np.float32)}, ranks_per_chip=2)
    assert info.value.exit_code == 5
    assert info.value.message.startswith("rank 1: race on 'u'")


EXCHANGE = HEADER + """\
    ctrl.sub r1, 1, r0
    cc.send t, peer=r1
    cc.recv u, peer=r1, queue=14
    sync.signal q14, sem=2
    sync.wait q1, sem=2, value=1
    dma.copy y, u, queue=1
"""


def test_recv_on_another_queue_goes_on_pending() -> None:
    """Each rank receives on queue 14 (ready at once) while its send on queue 15 waits: both
    replays stop at their recv first, with no message sent yet, so they go on with the recv
    pending until the other rank's send is replayed. Rank 1's data arrives early; rank 0's
    late."""
    x = np.arange(2 * 128 * 64, dtype=np.float32).reshape(2, 128, 64)
    result = spmd(EXCHANGE, "trn1.2xlarge", {"x": x}, ranks_per_chip=2)
    np.testing.assert_array_equal(result.outputs["y"], x[::-1])
    early_send = _event(result, 1, "cc.send")
    assert early_send[0] < 1000.0
    assert _event(result, 0, "cc.recv")[1] == pytest.approx(early_send[0] + HOP + NBYTES / B)
    assert _event(result, 1, "cc.recv")[1] == pytest.approx(LATE + HOP + NBYTES / B)
    assert _event(result, 0, "cc.recv")[0] < 1000.0 and _event(result, 1, "cc.recv")[0] < 1000.0


def test_ranks_waiting_for_each_other_under_semaphores_deadlock() -> None:
    """Each rank's send waits (semaphore 3) for its own recv, which needs the other rank's
    send: the run (program order, semaphores ignored) completes, the hardware would not. The
    joint replay reports it, naming both ranks."""
    text = HEADER + """\
    ctrl.sub r1, 1, r0
    sync.wait q15, sem=3, value=1
    cc.send t, peer=r1
    cc.recv u, peer=r1, queue=14
    sync.signal q14, sem=3
"""
    with pytest.raises(RuntimeFault) as info:
        spmd(text, "trn1.2xlarge", {"x": np.zeros((128, 64), np.float32)}, ranks_per_chip=2)
    error = info.value
    assert error.exit_code == 5
    assert error.message.startswith("deadlock under explicit synchronisation")
    rendered = error.render()
    assert "rank 0 waits at k.s:" in rendered and "rank 1 waits at k.s:" in rendered
    assert "(cc.recv)" in rendered
