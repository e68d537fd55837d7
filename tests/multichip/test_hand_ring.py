"""A hand-written ring all-reduce (cc.send / cc.recv and a Vector add per step) against the
built-in cc.all_reduce on the same topology and size: both pay for their additions (issue 14,
part 4), so what is left between them is explained term by term here, from the documented
numbers, not by running one against the other."""

from __future__ import annotations

import numpy as np
import pytest
from spmd_helpers import TOPOLOGIES, spmd

from neuronemu.programs import find_program


def _hand_ring(n: int, cols: int) -> str:
    """The ring of programs/collectives/ring_allreduce.s (neighbours by rank number, (r + 1) mod n
    and (r - 1) mod n) without its built-in comparison, for n chunks of cols / n columns."""
    lines = [line for line in find_program("collectives/ring_allreduce").read_text().splitlines()
             if not line.startswith(".target") and "cc.all_reduce" not in line
             and not line.startswith(".hbm z")]
    text = "\n".join(lines) + "\n"
    for old, new in (("[128, 4096]", f"[128, {cols}]"), ("[128, 16, 256]", f"[128, {n}, {cols // n}]"),
                     ("[128, 256]", f"[128, {cols // n}]")):
        assert old in text
        text = text.replace(old, new)
    return text


BUILTIN = """.hbm x float32[128, {cols}] input init=normal(0, 1)
.hbm z float32[128, {cols}] output
    cc.all_reduce z, x, op=add, algorithm=ring
"""


def _kernels(n: int, cols: int) -> tuple[str, str]:
    return _hand_ring(n, cols), BUILTIN.format(cols=cols)


def test_hand_ring_and_builtin_on_a_trn2_torus() -> None:
    """trn2.48xlarge, 16 ranks, 512 KiB per rank (chunks of 32 KiB). Numbers (trn2): NeuronLink
    1500 ns per hop and 256 GB/s per link; Vector 0.96 GHz, a fp32 SBUF add max(64, 2N) cycles;
    DMA 368 GB/s per core, reduce at half of it (T3); a [128, 1024] fp32 load 8 rows of
    (4096 + 256) bytes per engine at 23 B/ns, a store of a result + 1300 ns cross-engine.

    The built-in walks the topology's ring (every step one hop). The hand ring's neighbours are
    rank numbers, and on the 4 x 4 torus rank 15 -> rank 0 is two hops (3,3) -> (0,0): every step
    waits for that slowest message. That, and the load and store the hand ring does itself, is
    the whole difference; the per-step addition costs about the same on either side (a Vector
    add of 133 ns + 104 ns latency against a DMA reduce of 178 ns)."""
    n, cols = 16, 1024
    hand, builtin = _kernels(n, cols)
    chunk_bytes = 128 * (cols // n) * 4
    transfer = chunk_bytes / 256
    # a Vector add, then its ~100-cycle pipeline latency before the next send reads the sum
    vector_add = (max(64, 2 * (cols // n)) + 100) / 0.96
    dma_reduce = chunk_bytes / (368 * 0.5)
    load = 8 * (cols * 4 + 256) / 23
    store = 1300 + load
    expected_builtin = 2 * (n - 1) * (1500 + transfer) + (n - 1) * dma_reduce
    slow_step = 2 * 1500 + transfer
    expected_hand = load + (n - 1) * (slow_step + vector_add) + (n - 1) * slow_step + store
    b = spmd(builtin, "trn2.48xlarge")
    h = spmd(hand, "trn2.48xlarge")
    assert b.time_ns == pytest.approx(expected_builtin, rel=1e-9)
    assert h.time_ns == pytest.approx(expected_hand, rel=1e-9)
    # the same sums (in a different order: last bits may differ)
    assert np.allclose(h.outputs["y"], b.outputs["z"], rtol=1e-5, atol=1e-5)
    # like with like: without its own load and store and the second hop of each of its 2 (n - 1)
    # steps, the hand ring is within 5% of the built-in (Vector add against DMA reduce)
    one_hop = h.time_ns - load - store - 2 * (n - 1) * 1500
    assert h.time_ns / b.time_ns > 1.9
    assert one_hop / b.time_ns == pytest.approx(1.0, abs=0.05)


def test_hand_ring_and_builtin_on_two_cores_of_one_chip() -> None:
    """trn1.2xlarge, both cores: the two ranks are each other's neighbour both ways, so both
    rings take the same route (the chip's DMA: 1300 ns + bytes at 272 B/ns) and differ only by
    the hand ring's load and store and Vector add (1.12 GHz) against the built-in's DMA reduce
    (272 / 2 B/ns)."""
    n, cols = 2, 512
    hand, builtin = _kernels(n, cols)
    chunk_bytes = 128 * (cols // n) * 4
    step = 1300 + chunk_bytes / 272
    vector_add = (max(64, 2 * (cols // n)) + 100) / 1.12  # with Vector's ~100-cycle latency
    dma_reduce = chunk_bytes / (272 * 0.5)
    load = 8 * (cols * 4 + 256) / 17
    store = 1300 + load
    b = spmd(builtin, "trn1.2xlarge", ranks_per_chip=2)
    h = spmd(hand, "trn1.2xlarge", ranks_per_chip=2)
    assert TOPOLOGIES["trn1.2xlarge"].chips == 1
    assert b.time_ns == pytest.approx(2 * step + dma_reduce, rel=1e-9)
    assert h.time_ns == pytest.approx(load + 2 * step + vector_add + store, rel=1e-9)
    ratio = (h.time_ns - load - store) / b.time_ns
    assert ratio == pytest.approx((2 * step + vector_add) / (2 * step + dma_reduce), rel=1e-9)
    # DMA reduce of 128 KiB at 136 B/ns (964 ns) is slower than the Vector add (546 ns): 0.9
    assert 0.85 < ratio < 1.0
