"""A single-core run from start to end, the whole of ``neuronemu.run``'s engine path: the
host-memory check, the core, its run under the limits (instructions, wall clock, Ctrl-C), the
fault of a run that failed, and the explicit-sync replay.

A kernel with cc.* instructions is not run here: those instructions need a driver to carry them
out (mailboxes, collectives, their timing on the links, deadlock reports), and the one driver is
neuronemu/multichip/spmd.py, which runs such a kernel on one core as a world of one
(``uses_cc``). Everything else runs without importing neuronemu.multichip.
"""

from __future__ import annotations

import numpy as np

from neuronemu.exec.core import FINISHED, Core, RunLimits, stop_on_sigint
from neuronemu.program import Program


def uses_cc(program: Program) -> bool:
    """Whether the program has a cc.* instruction: one the interpreter hands to a driver (its
    cost class has the formula ``network``, as exec/core.py's kernel table reads it)."""
    from neuronemu.isa.table import load_isa
    from neuronemu.machine import layout as L

    network = [c.code for c in load_isa().costs.values() if c.formula == "network"]
    return bool(np.isin(program.instrs[:, L.I_COST], network).any())


def run_core(program: Program, inputs: dict[str, np.ndarray], seed: int, *,
             max_instructions: int, max_trace_events: int | None, stochastic_rounding: bool,
             rounding_seed: int | None, timeout: float | None) -> Core:
    """Run ``program`` (without cc.* instructions) on one core to its end; ``inputs`` are
    checked arrays by tensor name. Raises the run's fault (a located RuntimeFault, a
    LimitReached, Interrupted) or, under ``.sync explicit``, the replay's SyncError; otherwise
    the core holds the final state and, for an explicit kernel, its replay in ``core.replay``."""
    from neuronemu.exec.faults import fault
    from neuronemu.hostmem import check_host_memory
    from neuronemu.machine import layout as L

    if uses_cc(program):
        raise ValueError("a kernel with cc.* instructions runs through neuronemu.multichip "
                         "(api.run does so with a world of one)")
    # compact on-chip memory: tiles never leave their allocations (in_bounds), so bytes past
    # the last allocation are never read or written (multichip/spmd.py allocates ranks alike)
    check_host_memory(program, 1, compact=True)
    core = Core(program, inputs, seed, max_trace_events=max_trace_events,
                stochastic_rounding=stochastic_rounding, rounding_seed=rounding_seed,
                compact=True)
    limits = RunLimits(max_instructions, timeout)
    with stop_on_sigint(limits):
        ended = core.run(limits)
    assert ended == FINISHED, "only a cc.* instruction stops the loop before the end"
    if core.status != L.STATUS_OK:
        raise fault(program, core.status, core.pc, core.regs, limits, core.steps)
    if program.sync_mode == "explicit":
        from neuronemu.timing.explicit import replay_cores

        [core.replay] = replay_cores(program, [core])
    return core
