"""``.schedule compiler`` (docs/timing.md, "The compiler's schedule"): an engine's instruction
takes the engine's first idle gap at or after its operands are ready, instead of waiting behind
earlier instructions. Oracles: the cost formulas by hand (vector_two_input max(64, 2N) cycles at
trn2's 0.96 GHz; the bf16 add's max(64, N)), a plain list scheduler written here for random
programs, and numpy for the values (which never depend on the schedule)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import NeuronemuError
from neuronemu.machine import layout as L

VECTOR_GHZ = 0.96   # trn2
ADD_NS = 2 * 512 / VECTOR_GHZ          # fp32 tensor_tensor, N = 512: max(64, 2N) cycles

KERNEL = """\
.target trn2
.schedule {schedule}
.hbm x float32[128, 512] input
.hbm y float32[128, 512] input
.hbm big float32[128, 16384] input
.hbm out float32[128, 512] output
.hbm out2 float32[128, 512] output
.sbuf slab float32[128, 16384]
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
.sbuf c float32[128, 512]
.sbuf d float32[128, 512]
    dma.copy a, x, queue=1
    dma.copy b, y, queue=2
    dma.copy slab, big, queue=0
    vector.tensor_tensor c, slab[:, 0:512], a, op=add     # waits for the long load
    vector.tensor_tensor d, a, b, op=multiply             # ready long before
    dma.copy out, c, queue=3
    dma.copy out2, d, queue=4
"""


def _run(schedule: str) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(KERNEL.format(schedule=schedule), "sched.s"))


def _span(result: neuronemu.Result, pc: int) -> tuple[float, float]:
    events, times = result.timing.events, result.timing.event_times
    row = int(np.flatnonzero(events[: result.timing.events_recorded, 0] == pc)[0])
    return float(times[row, 0]), float(times[row, 1])


def test_an_independent_instruction_takes_the_gap_before_a_waiting_one() -> None:
    program, compiler = _run("program"), _run("compiler")
    load_end = _span(program, 2)[1]
    inputs_end = max(_span(program, 0)[1], _span(program, 1)[1])
    # program order: the multiply waits behind the add, which waits for the long load
    assert _span(program, 3)[0] == pytest.approx(load_end)
    assert _span(program, 4)[0] == pytest.approx(load_end + ADD_NS)
    # the compiler's schedule: the multiply runs as soon as its inputs are there
    assert _span(compiler, 4) == pytest.approx((inputs_end, inputs_end + ADD_NS))
    assert _span(compiler, 3)[0] == pytest.approx(load_end)
    assert compiler.timing.time_ns < program.timing.time_ns
    # values never depend on the schedule
    x, y, big = (program.tensors[n].astype(np.float64) for n in ("x", "y", "big"))
    for result in (program, compiler):
        np.testing.assert_array_equal(result.outputs["out"], (big[:, :512] + x).astype(np.float32))
        np.testing.assert_array_equal(result.outputs["out2"], (x * y).astype(np.float32))


def test_a_gap_too_short_is_not_taken() -> None:
    # a second instruction reading the first one's result: it waits for that result (the
    # Vector latency, 100 cycles) and still fits in the gap before the long load's end
    text = KERNEL.format(schedule="compiler").replace(
        "    dma.copy out, c, queue=3\n",
        "    vector.tensor_tensor b, a, d, op=subtract\n    dma.copy out, c, queue=3\n")
    result = neuronemu.run(neuronemu.assemble(text, "sched.s"))
    first = _span(result, 4)
    second = _span(result, 5)
    # the subtract reads d: it waits for the multiply's result (its latency, 100 cycles)
    assert second[0] == pytest.approx(first[1] + 100 / VECTOR_GHZ)
    assert second[1] <= _span(result, 3)[0] + 1e-9   # both before the add


def test_schedule_compiler_needs_sync_auto() -> None:
    text = KERNEL.format(schedule="compiler").replace(".target trn2\n",
                                                      ".target trn2\n.sync explicit\n")
    with pytest.raises(NeuronemuError) as info:
        neuronemu.assemble(text, "sched.s")
    assert "sched.s:3:1: error: .schedule compiler needs .sync auto" in info.value.render()


def test_unknown_schedule_is_a_usage_error() -> None:
    with pytest.raises(NeuronemuError) as info:
        neuronemu.assemble(KERNEL.format(schedule="greedy"), "sched.s")
    assert "usage: .schedule program|compiler" in info.value.render()


def _list_schedule(jobs):
    """A plain list scheduler on one engine: each job (ready, duration), in program order,
    takes the first idle gap at or after its ready time (every gap remembered)."""
    busy: list[tuple[float, float]] = []
    starts = []
    for ready, duration in jobs:
        start = ready
        for a, b in sorted(busy):
            if b <= start:
                continue
            if a >= start + duration:
                break
            start = b
        busy.append((start, start + duration))
        starts.append(start)
    return starts


@pytest.mark.parametrize("seed", range(6))
def test_gaps_match_a_plain_list_scheduler(seed: int) -> None:
    """Random loads of random lengths, each followed by a Vector copy of what it loaded: the
    copies' start times are those of a list scheduler fed each copy's ready time."""
    rng = np.random.default_rng(seed)
    n = 12
    sizes = rng.choice([64, 512, 2048, 8192], size=n)
    lines = [".target trn2", ".schedule compiler"]
    for i, size in enumerate(sizes):
        lines += [f".hbm x{i} float32[128, {size}] input", f".sbuf s{i} float32[128, {size}]",
                  f".sbuf t{i} float32[128, 64]"]
    lines.append(".hbm out float32[128, 64] output")
    for i in range(n):
        lines.append(f"    dma.copy s{i}, x{i}, queue={i % 16}")
    for i in range(n):
        lines.append(f"    vector.tensor_copy t{i}, s{i}[:, 0:64]")
    lines.append(f"    dma.copy out, t{n - 1}, queue=15")
    result = neuronemu.run(neuronemu.assemble("\n".join(lines) + "\n", "random.s"))
    copy_ns = 64 / VECTOR_GHZ   # max(MIN_II, N) with N = 64
    ready = [_span(result, i)[1] for i in range(n)]
    want = _list_schedule([(r, copy_ns) for r in ready])
    got = [_span(result, n + i)[0] for i in range(n)]
    assert got == pytest.approx(want)


def test_no_reorder_keeps_its_instructions_in_program_order() -> None:
    text = KERNEL.format(schedule="compiler").replace(".hbm x ", ".no_reorder 3, 2\n.hbm x ")
    result = neuronemu.run(neuronemu.assemble(text, "sched.s"))
    add, multiply = _span(result, 3), _span(result, 4)
    assert multiply[0] == pytest.approx(add[1])   # behind the waiting add, as written
    ordered = [pc for pc in range(len(result.program.instrs))
               if result.program.instrs[pc, L.I_FLAGS] & L.ORDERED]
    assert ordered == [3, 4]


def test_no_reorder_past_the_last_instruction_is_an_error() -> None:
    text = KERNEL.format(schedule="compiler").replace(".hbm x ", ".no_reorder 6, 2\n.hbm x ")
    with pytest.raises(NeuronemuError) as info:
        neuronemu.assemble(text, "sched.s")
    assert "sched.s:3:1: error: .no_reorder 6, 2: the kernel has 7 instructions" in \
        info.value.render()


# ------------------------------------------------------------------ compiler_engine copies
# trn2 clocks: VectorE 0.96 GHz, ScalarE 1.2 GHz; a copy of N = 512 elements is max(64, N)
# cycles on either (vector_one_input, scalar_stream): 533.3 ns on VectorE, 426.7 ns on ScalarE.
COPY_VECTOR_NS = 512 / VECTOR_GHZ
COPY_SCALAR_NS = 512 / 1.2
EXP_BIG_NS = 16384 / 1.2                 # scalar.activation over N = 16384

FLEX = """\
.target trn2
.schedule {schedule}
.hbm x float32[128, 512] input
.hbm big float32[128, 16384] input
.hbm out bfloat16[128, 512] output
.hbm out2 float32[128, 16384] output
.sbuf a float32[128, 512]
.sbuf slab float32[128, 16384]
.sbuf e float32[128, 16384]
.sbuf b bfloat16[128, 512]
    dma.copy slab, big, queue=2
    dma.copy a, x, queue=2
    {busy}
    vector.tensor_copy b, a, compiler_engine=true
    dma.copy out, b, queue=3
    dma.copy out2, e, queue=4
"""


def _flex(schedule: str, busy: str) -> neuronemu.Result:
    x = np.random.default_rng(9).standard_normal((128, 512)).astype(np.float32)
    big = np.zeros((128, 16384), np.float32)
    src = FLEX.format(schedule=schedule, busy=busy)
    return neuronemu.run(neuronemu.assemble(src, "flex.s"), inputs={"x": x, "big": big})


def _track(result: neuronemu.Result, pc: int) -> int:
    events = result.timing.events[: result.timing.events_recorded]
    return int(events[np.flatnonzero(events[:, 0] == pc)[0], 1])


@pytest.mark.parametrize("busy, engine, ns", [
    # both engines idle: ScalarE's faster clock finishes the copy first
    ("vector.memset e, value=1.0", L.SCALAR_TRACK, COPY_SCALAR_NS),
    # ScalarE busy with a long activation of the slab (which lands just before the copy's
    # input, on the same queue) when the copy is ready: VectorE
    ("scalar.activation e, slab, func=exp", L.VECTOR_TRACK, COPY_VECTOR_NS),
])
def test_a_compiler_engine_copy_runs_on_the_engine_that_finishes_it_first(busy, engine,
                                                                          ns) -> None:
    result = _flex("compiler", busy)
    assert _track(result, 3) == engine
    start, end = _span(result, 3)
    assert end - start == pytest.approx(ns)
    assert start == pytest.approx(_span(result, 1)[1])   # as soon as its input has landed
    # the values are the copy's (bf16 of the fp32 input) whichever engine ran it
    x = np.random.default_rng(9).standard_normal((128, 512)).astype(np.float32)
    np.testing.assert_array_equal(result.outputs["out"].view(np.uint16),
                                  x.astype(ml_dtypes.bfloat16).view(np.uint16))
    # the report counts the copy on the engine it ran on
    names = {L.SCALAR_TRACK: "scalar", L.VECTOR_TRACK: "vector"}
    tracks = result.timing.tracks
    assert tracks[names[engine]].instructions == 1 + (
        1 if busy.split(".")[0] == names[engine] else 0)


def test_program_order_keeps_a_compiler_engine_copy_on_vector() -> None:
    result = _flex("program", "vector.memset e, value=1.0")
    assert _track(result, 3) == L.VECTOR_TRACK
    start, end = _span(result, 3)
    assert end - start == pytest.approx(COPY_VECTOR_NS)
    assert "scalar" not in result.timing.tracks
