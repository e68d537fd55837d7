"""The run's record of instruction events, which the explicit replay (neuronemu.timing.explicit)
replays and the timing report draws: one row per executed non-control instruction while the
arrays have room (neuronemu.timing.eventlog empties a full buffer into a file). Recorded by one
function, for the interpreter loop and for the cc.* instructions the multi-chip driver executes
(``Core.complete``)."""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.machine.memory import dynamic_offset

EVENT_WIDTH = 2 + L.MAX_ARGS   # pc, track, then per argument its value at run time
EVENT_TIMES_WIDTH = 5          # start, end, cycles (ns for DMA), bytes, wire bytes


@jit(inline="always")
def record_event(events, event_times, ins, ops, regs, pc, start, end, cycles, nbytes, wire):
    """Append the instruction at ``pc`` (row ``ins``) as run from ``start`` to ``end``: (pc,
    track, and per argument a tile's byte offset, a register's value or the integer) to
    ``events`` and (start, end, cycles, bytes, wire bytes) to ``event_times``, while they have
    room; ``regs[REG_EVENTS]`` counts the events, also past the room. The buffer's row 0 is
    event ``regs[REG_EVENT_BASE]``: the rows before it were moved out (timing/eventlog.py)."""
    n = regs[L.REG_EVENTS]
    e = n - regs[L.REG_EVENT_BASE]
    if e < events.shape[0]:
        events[e, 0] = pc
        events[e, 1] = ins[L.I_TRACK]
        for k in range(ins[L.I_NARGS]):
            tag = ins[L.I_ARGS + 2 * k]
            value = ins[L.I_ARGS + 2 * k + 1]
            if tag == L.TAG_OPERAND:
                events[e, 2 + k] = dynamic_offset(ops[value], regs)
            elif tag == L.TAG_REG:
                events[e, 2 + k] = regs[value]
            else:
                events[e, 2 + k] = value
        event_times[e, 0] = start
        event_times[e, 1] = end
        event_times[e, 2] = cycles
        event_times[e, 3] = nbytes
        event_times[e, 4] = wire
    regs[L.REG_EVENTS] = n + 1
