"""neuronemu.debug: breakpoints, watches, steps forward and back, looking at the state.

Oracles: step numbers and register values counted by hand from the lab 2 starter's loops, tile
values from numpy float64 matmuls of the inputs, bit patterns from ml_dtypes, and, for going
back, the state a second machine reaches by running forward only (no checkpoint involved)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.debug.expr import CommandError, Text
from neuronemu.debug.machine import Machine
from neuronemu.debug.session import Debugger
from neuronemu.exec.core import initial_values

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "programs/labs/02-matmul/starter.s"

# The starter, by hand: pc 0 `ctrl.mov r1, 0`; pcs 1-4 the load loop (2 DMAs, add, blt) run
# KT = 2 times (steps 1..8); pc 5 mov r0 (step 9), pc 6 mov r2 (step 10), pc 7 mov r1
# (step 11); pc 8 the matmul on line 33 first runs at step 12 (r1 = 0), then at step 15
# (r1 = 1); pcs 11, 12 (lines 36, 37) copy acc out and store it.
MATMUL_LINE, MATMUL_PC = 33, 8


@pytest.fixture(scope="module")
def program():
    return neuronemu.assemble_file(STARTER)


def inputs_of(program):
    return {name: initial_values(program.tensors[name], 0).astype(ml_dtypes.bfloat16)
            for name in ("lhsT", "rhs")}


def test_break_on_a_line_stops_before_it_with_the_hand_counted_state(program):
    d = Debugger(program)
    d.break_at(Text(str(MATMUL_LINE)))
    reply = d.cont()
    assert (d.pc, d.steps) == (MATMUL_PC, 12)
    assert reply.doc["reason"] == "breakpoint"
    assert reply.doc["position"]["frames"][0]["line"] == MATMUL_LINE
    assert int(d.evaluate(Text("r1"))) == 0
    assert "tensor.matmul acc" in reply.text


def test_conditional_breakpoint_and_the_tile_after_one_matmul(program):
    d = Debugger(program)
    d.break_at(Text(f"{MATMUL_LINE} if r1 == 1"))
    d.cont()
    assert d.steps == 15 and int(d.evaluate(Text("r1"))) == 1
    # acc holds the first K tile's product (the starter overwrites: that is its bug)
    acc = d.evaluate(Text("acc"))
    x = inputs_of(program)
    lhsT, rhs = (x[n].astype(np.float64) for n in ("lhsT", "rhs"))
    expected = lhsT[0:128, 0:128].T @ rhs[0:128, 0:512]
    np.testing.assert_allclose(acc, expected, rtol=1e-5, atol=1e-4)


def test_watch_stops_after_the_write_with_old_and_new_values(program):
    d = Debugger(program)
    d.watch(Text("acc[0, 0]"))
    first = d.cont()
    assert first.doc["reason"] == "watch" and d.steps == 13 and d.pc == MATMUL_PC + 1
    second = d.cont()
    old, new = second.doc["watches"][0]["old"], second.doc["watches"][0]["new"]
    x = inputs_of(program)
    lhsT, rhs = (x[n].astype(np.float64) for n in ("lhsT", "rhs"))
    assert old == pytest.approx(float(lhsT[0:128, 0] @ rhs[0:128, 0]), rel=1e-5)
    assert new == pytest.approx(float(lhsT[128:256, 0] @ rhs[128:256, 0]), rel=1e-5)
    assert d.steps == 16


def test_reverse_step_and_continue_come_back_to_the_same_state(program):
    d = Debugger(program)
    d.break_at(Text(str(MATMUL_LINE)))
    d.cont()
    d.cont()
    assert d.steps == 15
    d.step(3)
    mems = [m.copy() for m in d.machine.core.mems]
    regs = d.machine.core.regs.copy()
    d.reverse_step(3)
    assert d.steps == 15
    d.reverse_cont()
    assert (d.pc, d.steps) == (MATMUL_PC, 12)
    d.goto(18)
    for a, b in zip(mems, d.machine.core.mems):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(regs, d.machine.core.regs)
    d.reverse_cont()
    assert d.steps == 15
    d.delete()
    d.reverse_cont()
    assert d.steps == 0 and d.pc == 0


def test_going_back_through_many_checkpoints_matches_a_forward_run():
    text = """\
.sbuf t float32[128, 8]
    vector.memset t, value=0.0
    ctrl.mov r0, 0
top:
    vector.tensor_scalar t, t, op0=add, operand0=1.0
    ctrl.add r0, r0, 1
    ctrl.blt r0, 3000, top
"""
    program = neuronemu.assemble(text, "loop.s")
    m = Machine(program, checkpoint_seconds=0.0, chunk=64)
    m.run()
    assert m.finished and len(m.checkpoints) > 3
    rng = np.random.default_rng(1)
    for step in rng.integers(0, m.steps, 12):
        m.go_to(int(step))
        fresh = Machine(program, checkpoint_seconds=1e9)
        fresh.run(int(step), flagged=False)
        assert (m.pc, m.steps) == (fresh.pc, fresh.steps)
        np.testing.assert_array_equal(m.core.mems[0], fresh.core.mems[0])
        np.testing.assert_array_equal(m.core.regs, fresh.core.regs)
        np.testing.assert_array_equal(m.core.track_free, fresh.core.track_free)
    # t counts the loop's passes: after the memset (step 1), the mov (2), pass k ends at 2 + 3k
    m.go_to(2 + 3 * 1234)
    t = m.core.mems[0][:128, :32].view(np.float32)
    assert np.all(t == 1234.0)


def test_finish_leaves_the_loop(program):
    d = Debugger(program)
    d.break_at(Text(str(MATMUL_LINE)))
    d.cont()
    assert d.finish().doc["reason"] == "breakpoint" and d.steps == 15   # it still stops there
    d.delete()
    d.reverse_step(3)
    reply = d.finish()
    assert reply.doc["reason"] == "finish"
    assert d.places.frame(d.pc).line == 36 and d.steps == 18


def test_who_wrote_follows_the_copies(program):
    d = Debugger(program)
    d.cont()
    assert d.machine.finished
    reply = d.who_wrote(Text("result[0, 0]"))
    lines = [w["line"] for w in reply.doc["writers"]]
    assert lines == [37, 36, 33]
    assert all(w["end_ns"] > w["start_ns"] for w in reply.doc["writers"])
    x = inputs_of(program)
    lhsT, rhs = (x[n].astype(np.float64) for n in ("lhsT", "rhs"))
    # the last K tile's product, not the whole sum
    assert reply.doc["value"] == pytest.approx(float(lhsT[128:256, 0] @ rhs[128:256, 0]),
                                               rel=1e-5)


def test_print_bf16_as_values_and_bits(program):
    d = Debugger(program)
    d.break_at(Text(str(MATMUL_LINE)))
    d.cont()
    x = inputs_of(program)["lhsT"]
    values = d.print(Text("lhsT_sb[0, 0, 0:4]"))
    assert values.doc["dtype"] == "bfloat16"
    assert values.doc["value"] == [float(v) for v in x[0, 0:4]]
    bits = d.print(Text("lhsT_sb[0, 0, 0:4]"), bits=True)
    assert bits.doc["value"] == [int(b) for b in x[0, 0:4].view(np.uint16)]
    assert f"0x{int(x[0, 0].view(np.uint16)):04x}" in bits.text


def test_the_end_of_the_run_has_the_outputs_of_a_plain_run(program):
    d = Debugger(program)
    d.break_at(Text(str(MATMUL_LINE)))
    d.cont()
    d.reverse_step()
    d.delete()
    d.cont()
    assert d.machine.finished
    result = neuronemu.run(program)
    np.testing.assert_array_equal(d.memory.value("result"), result.outputs["result"])
    assert d.time_ns() == pytest.approx(result.timing.time_ns)


def test_fault_stops_before_the_faulting_instruction():
    text = """\
.sbuf t float32[128, 4]
    ctrl.mov r0, 0
again:
    vector.memset t[:, r0 : r0 + 1], value=1.0
    ctrl.add r0, r0, 1
    ctrl.blt r0, 5, again
"""
    program = neuronemu.assemble(text, "oob.s")
    d = Debugger(program)
    reply = d.cont()
    assert reply.doc["reason"] == "fault"
    assert d.pc == 1 and int(d.evaluate(Text("r0"))) == 4
    assert "leaves 't'" in reply.text
    with pytest.raises(CommandError, match="faults"):
        d.step()
    d.reverse_step()
    assert d.pc == 3 and "fault" not in d.position()


@pytest.mark.parametrize("command, message, column", [
    ("nosuch[0]", "'nosuch' is not a tile", 1),
    ("acc[0, 999]", "index 999 is out of bounds", 5),
    ("acc[0,", "cannot read this expression", 4),
])
def test_bad_expressions_are_located_errors(program, command, message, column):
    d = Debugger(program)
    with pytest.raises(CommandError) as info:
        d.print(Text(command))
    assert message in info.value.message
    assert info.value.location.column == column


def test_break_on_a_line_without_instructions_names_the_nearest(program):
    d = Debugger(program)
    with pytest.raises(CommandError) as info:
        d.break_at(Text("26"))
    assert "no instruction comes from line 26" in info.value.message
    assert "25 and 27" in info.value.notes[0]


def test_break_flags_cost_no_python_per_instruction(program, monkeypatch):
    """Running to a breakpoint calls the compiled loop a few times, not once per instruction."""
    d = Debugger(program)
    d.break_at(Text("37"))
    calls = []
    real = d.machine._call
    monkeypatch.setattr(d.machine, "_call", lambda *a: calls.append(1) or real(*a))
    d.cont()
    assert d.steps == 19 and len(calls) <= 2


def test_dma_queues_and_semaphores_by_hand():
    text = """\
.sync explicit
.hbm x float32[128, 64] input
.sbuf t float32[128, 64]
    dma.copy t, x, queue=3
    sync.signal q3, sem=2
    sync.wait vector, sem=2, value=1
    vector.memset t, value=1.0
    sync.signal vector, sem=2
"""
    program = neuronemu.assemble(text, "sems.s")
    d = Debugger(program)
    d.step(2)
    queue = d.print(Text("q3")).doc["value"]
    assert queue["transfers"] == 1 and queue["bytes"] == 128 * 64 * 4
    assert d.evaluate(Text("sem2")) == 1
    d.cont()
    assert d.info("semaphores").doc["semaphores"] == {"sem2": 2}
    d.goto(1)
    assert d.evaluate(Text("sem2")) == 0
