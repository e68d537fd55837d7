"""The engine timing rules, one implementation each, shared by both timing models: sync mode
auto (``neuronemu.timing.model.schedule``, inside the interpreter loop) and the explicit replay
(``neuronemu.timing.explicit._run``). The two models differ in what orders instructions across
tracks (memory dependencies vs. semaphores and barriers); how an engine occupies its PE blocks,
when its results are written and how its busy time adds up are these functions in both.

Every rule is inlined into its callers (numba ``inline="always"``), so the compiled loops are
the code they were when each wrote the rule out itself."""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.timing.costs import C_FORMULA, C_LATENCY, F_DMA, F_FREE, F_NETWORK

PE_BLOCKS = 16   # 32 x 32 blocks of the 128 x 128 PE array (a 4 x 4 grid)


@jit(inline="always")
def pe_blocks(ins):
    """The PE blocks a Tensor instruction occupies, one bit per block; 0: the whole array."""
    return (ins[L.I_FLAGS] >> L.PE_BLOCKS_SHIFT) & 0xFFFF


@jit(inline="always")
def pe_ready(blocks, pe_free, base, issue):
    """When a Tensor instruction the engine issues at ``issue`` may start: once every PE block
    it occupies is free (``pe_free[base + b]``: when block b's last instruction ends), so tiled
    matmuls on disjoint blocks overlap."""
    ready = issue
    for b in range(PE_BLOCKS):
        if blocks == 0 or (blocks >> b) & 1:
            ready = max(ready, pe_free[base + b])
    return ready


@jit(inline="always")
def pe_commit(blocks, pe_free, base, end):
    """The PE blocks a Tensor instruction occupies are busy until its ``end``."""
    for b in range(PE_BLOCKS):
        if blocks == 0 or (blocks >> b) & 1:
            pe_free[base + b] = end


@jit(inline="always")
def pe_raise(pe_free, base, end):
    """A whole-array matmul the compiler's schedule placed in an earlier gap: every PE block
    is busy until at least ``end`` (later work may already hold it longer)."""
    for b in range(PE_BLOCKS):
        pe_free[base + b] = max(pe_free[base + b], end)


@jit(inline="always")
def pe_finished(pe_free, base, after):
    """When everything the PE array started has finished, given the engine's own ``after``."""
    m = pe_free[base]
    for b in range(1, PE_BLOCKS):
        m = max(m, pe_free[base + b])
    return max(after, m)


@jit(inline="always")
def result_latency(cost_row, clock):
    """ns from the end of an instruction's issue interval until its results are written: its
    cost class's pipeline latency (isa/costs.toml ``latency``, cycles of its track's clock).
    DMA and cc.* transfers complete when their data is there, a free instruction writes
    nothing: 0. TensorE's results (PSUM) are written this long after the matmul too; sync mode
    auto charges it to the PSUM reader instead (``psum_readable``), so that accumulating
    matmuls stream back to back."""
    formula = int(cost_row[C_FORMULA])
    if formula == F_FREE or formula == F_DMA or formula == F_NETWORK:
        return 0.0
    return cost_row[C_LATENCY] / clock


@jit(inline="always")
def psum_readable(written, drain):
    """When another engine may read PSUM bytes a matmul ended writing at ``written``: after
    TensorE's pipeline drained (``drain``: result_latency of the matmul class, in ns). Bytes
    never written by then (0) wait for nothing."""
    if written > 0.0:
        return written + drain
    return written


@jit(inline="always")
def busy_union(busy, track, start, end, finished):
    """Count [start, end) as busy time of ``track``, less what overlaps work it already had
    until ``finished``: matmuls overlapping on disjoint PE blocks count once."""
    busy[track] += max(0.0, end - max(start, finished))
