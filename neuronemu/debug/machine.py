"""One core run under the debugger: run to a step count or to a flagged instruction, keep
checkpoints, and go back to any earlier step by restoring one and replaying.

**Break flags cost nothing while they are not hit.** The compiled loop already reads one word
per instruction that says what to run: ``kernels[pc]``, the instruction's kernel address
(docs/engine.md). It returns ``STATUS_BAD_OPCODE`` at a pc whose address is 0, before the
instruction touches anything (pc and step count unchanged, no memory, register or timing
state written). The debugger runs the loop with a copy of the table in which the flagged pcs
hold 0: a breakpoint is one zero word, the loop is the same compiled code as a plain run, and
there is no Python callback per instruction. A stop at a pc the debugger did not flag is a
real bad opcode, reported as the fault it is.

**Going back** relies on the run being deterministic: the state after ``s`` steps is a
function of ``s``. Checkpoints copy the core's state (memories, registers, per-pc counts,
timing tables) every ``checkpoint_seconds`` of loop time; reaching step ``s`` restores the last
checkpoint at or before ``s`` and replays the steps in between with the loop. The trace events
are not copied: they are appended at ``regs[REG_EVENTS]``, which the checkpoint restores, so
the replay rewrites the same rows with the same values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from neuronemu.errors import NeuronemuError
from neuronemu.machine import layout as L
from neuronemu.program import Program

# what ends a call of Machine.run
BREAK = "break"          # at a flagged pc, before it runs
LIMIT = "limit"          # at the step asked for
FINISHED = "finished"    # the kernel ended
FAULT = "fault"          # an instruction faulted (pc on it); ``status`` says how
INTERRUPTED = "interrupted"


@dataclass
class Stop:
    """Why and where Machine.run returned."""

    reason: str
    pc: int
    steps: int
    status: int = L.STATUS_OK


class CoreView:
    """Where the core in view (``self.core``) stands; ``finished``: it has run its last
    instruction (for world.WorldMachine, the rank in focus; ``done`` says every rank has)."""

    @property
    def pc(self) -> int:
        return self.core.pc

    @property
    def steps(self) -> int:
        return self.core.steps

    @property
    def finished(self) -> bool:
        return self.core.pc >= len(self.program.instrs)

    def _timed_call(self, core, budget: int, table: np.ndarray) -> tuple[int, int, int, bool]:
        """One loop call on ``core`` up to ``budget``: (status, pc, steps, whether it ran the
        whole chunk). Counts its time, and doubles or halves the chunk so that a call takes
        about CHUNK_SECONDS (Ctrl-C is looked at between calls, as Core.run does)."""
        before = core.steps
        start = time.perf_counter()
        status, pc, steps = call_loop(core, budget, table)
        elapsed = time.perf_counter() - start
        self.loop_seconds += elapsed
        self._since_checkpoint += elapsed
        full = status == L.STATUS_LIMIT and steps == budget
        if full:
            if elapsed < self.CHUNK_SECONDS / 2 and steps - before >= self._chunk:
                self._chunk = min(self._chunk * 2, self.MAX_CHUNK)
            elif elapsed > self.CHUNK_SECONDS * 2:
                self._chunk = max(self._chunk // 2, 1)
        return status, pc, steps, full


class Machine(CoreView):
    """A single-core run of ``program`` that can be stopped, moved forward and moved back."""

    world = 1       # (world.WorldMachine runs several ranks, one of them in focus)
    focus = 0
    error = None

    CHUNK_SECONDS = 0.05          # loop time per call, so Ctrl-C is seen (as Core.run)
    MAX_CHUNK = 1 << 26

    def __init__(self, program: Program, inputs: dict | None = None, seed: int = 0, *,
                 max_instructions: int = 50_000_000, max_trace_events: int = 1 << 20,
                 checkpoint_seconds: float = 0.1, checkpoint_bytes: int = 1 << 29,
                 chunk: int = 1 << 12):
        from neuronemu.api import _checked_inputs
        from neuronemu.exec.core import Core, program_kernels
        from neuronemu.exec.session import uses_cc
        from neuronemu.hostmem import check_host_memory

        if uses_cc(program):   # exec/session.py's test: such kernels need the multichip driver
            raise ValueError("a kernel with cc.* instructions is debugged on a "
                             "debug.world.WorldMachine")
        self.program = program
        self.seed = seed
        self.inputs = _checked_inputs(program, inputs, 1)[0]
        check_host_memory(program, 1, compact=True)   # as exec/session.py's run_core
        self.core = Core(program, self.inputs, seed, max_trace_events=max_trace_events,
                         compact=True)
        self.max_instructions = max_instructions
        self.real = program_kernels(program, self.core.timing_state[0])
        self.flags = np.zeros(len(program.instrs), dtype=bool)
        self.flagged = self.real.copy()
        self.checkpoint_seconds = checkpoint_seconds
        self.checkpoint_bytes = checkpoint_bytes
        self.checkpoints: list[tuple[int, dict]] = []
        self._since_checkpoint = 0.0
        self._chunk = chunk           # steps per loop call; adapts to CHUNK_SECONDS
        self.interrupted = False
        self.loop_seconds = 0.0
        self._prepare()
        self.checkpoints.append((0, self._snapshot()))

    # --- state ------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.finished

    def fault(self) -> NeuronemuError | None:
        """The fault of the instruction at pc, when the run stopped on one."""
        return core_fault(self.program, self.core, self.max_instructions)

    def _snapshot(self) -> dict:
        return snapshot(self.core)

    def _restore(self, state: dict) -> None:
        restore(self.core, state)

    def checkpoint_nbytes(self) -> int:
        return sum(state_nbytes(s) for _, s in self.checkpoints)

    def _maybe_checkpoint(self) -> None:
        if self._since_checkpoint < self.checkpoint_seconds:
            return
        if self.checkpoints[-1][0] >= self.core.steps:
            return
        self._since_checkpoint = 0.0
        self.checkpoints.append((self.core.steps, self._snapshot()))
        if self.checkpoint_nbytes() > self.checkpoint_bytes and len(self.checkpoints) > 2:
            # over budget: keep the first and every other one after it, and space new ones
            # twice as far apart (a replay then takes up to twice as long)
            self.checkpoints = self.checkpoints[:1] + self.checkpoints[2::2]
            self.checkpoint_seconds *= 2

    # --- flags --------------------------------------------------------------------------------

    def set_flags(self, flags: np.ndarray) -> None:
        """Stop before every pc where ``flags`` is true (when running with ``flagged``)."""
        self.flags = np.asarray(flags, dtype=bool).copy()
        self.flagged[:] = np.where(self.flags, 0, self.real)

    # --- running ------------------------------------------------------------------------------

    def _prepare(self) -> None:
        prepare_loop(self)

    def _call(self, budget: int, table: np.ndarray) -> tuple[int, int, int]:
        return call_loop(self.core, budget, table)

    def run(self, to_step: int | None = None, flagged: bool = True,
            skip_current: bool = True) -> Stop:
        """Run until step ``to_step`` (None: the end or the instruction limit), stopping first
        at a flagged pc when ``flagged``. With ``skip_current``, a flagged pc the run is
        standing on is run past (continuing from a breakpoint runs the instruction it stopped
        at); without, the run stops there at once."""
        limit = self.max_instructions if to_step is None else min(to_step, self.max_instructions)
        if self.finished:
            return Stop(FINISHED, self.pc, self.steps)
        if flagged and self.flags[self.pc] and self.steps < limit:
            if not skip_current:
                return Stop(BREAK, self.pc, self.steps)
            stop = self._run(self.steps + 1, self.real)
            if stop.reason != LIMIT:
                return stop
        return self._run(limit, self.flagged if flagged else self.real)

    def _run(self, limit: int, table: np.ndarray) -> Stop:
        self.interrupted = False
        while True:
            if self.core.steps >= limit:
                return Stop(LIMIT, self.pc, self.steps)
            budget = min(limit, self.core.steps + self._chunk)
            status, pc, steps, full = self._timed_call(self.core, budget, table)
            if full:
                self._maybe_checkpoint()
                if self.interrupted:
                    return Stop(INTERRUPTED, pc, steps)
                continue
            if status == L.STATUS_OK:
                return Stop(FINISHED, pc, steps)
            if status == L.STATUS_BAD_OPCODE and table is self.flagged and self.flags[pc]:
                self._maybe_checkpoint()
                return Stop(BREAK, pc, steps)
            return self._fault(status)

    def _fault(self, status: int) -> Stop:
        """Leave the machine just before the faulting instruction (some faults count the
        instruction as run, some do not), with the fault's status to report."""
        fault_steps = self.core.steps
        self.go_to(fault_steps, fresh=True)
        if self.core.status != L.STATUS_OK or self.core.steps != fault_steps:
            self.go_to(fault_steps - 1, fresh=True)
        self.core.status = status
        return Stop(FAULT, self.pc, self.steps, status)

    def go_to(self, step: int, fresh: bool = False) -> Stop:
        """Restore the last checkpoint at or before ``step`` and replay to it (no flags). A
        fault on the way leaves ``core.status`` set and the machine where it happened.
        Without ``fresh``, a machine already between that checkpoint and ``step`` runs on
        from where it is."""
        step = max(0, step)
        base, state = max((c for c in self.checkpoints if c[0] <= step), key=lambda c: c[0])
        if fresh or not (base <= self.core.steps <= step and self.core.status == L.STATUS_OK):
            self._restore(state)
        while self.core.steps < step:
            status, _, steps = self._call(step, self.real)
            if status == L.STATUS_LIMIT and steps == step:
                break
            if status != L.STATUS_LIMIT:
                self.core.status = status
                break
        return Stop(LIMIT, self.pc, self.steps, self.core.status)

    def checkpoint_before(self, step: int) -> int:
        """The step of the last checkpoint strictly before ``step`` (0 if none)."""
        return max((c[0] for c in self.checkpoints if c[0] < step), default=0)


def prepare_loop(machine) -> None:
    """Compile (or load) the loop with a zero-step call, as Core.run does."""
    from neuronemu.compiled import compiling
    from neuronemu.exec import core as C
    from neuronemu.exec.interpreter import run_loop

    if not C._loop_ready:
        if not compiling.is_cached(run_loop):
            compiling.announce("the interpreter loop")
        call_loop(machine.core, machine.core.steps, machine.real)
        C._loop_ready = True


def core_fault(program: Program, core, max_instructions: int,
               prefix: str = "") -> NeuronemuError | None:
    """The located fault of ``core``'s instruction at pc, when its status holds one."""
    if core.status == L.STATUS_OK:
        return None
    from neuronemu.exec.core import RunLimits
    from neuronemu.exec.faults import fault

    error = fault(program, core.status, core.pc, core.regs, RunLimits(max_instructions),
                  core.steps)
    error.message = prefix + error.message
    return error


def call_loop(core, budget: int, table: np.ndarray) -> tuple[int, int, int]:
    """One call of the interpreter loop on ``core`` up to step ``budget`` with the kernel table
    ``table``: (status, pc, steps), pc and steps also left on the core."""
    from neuronemu.exec import oob
    from neuronemu.exec.interpreter import run_loop
    from neuronemu.isa import dtypes
    from neuronemu.machine import abi

    program = core.program
    fmt, table_bits = dtypes.format_table(), dtypes.decode_table()
    dims = abi.dims_of(program.ops, program.imms, core.mems, core.regs, fmt, table_bits)
    while True:
        status, pc, steps = run_loop(program.instrs, program.ops, program.imms, core.mems,
                                     core.regs, fmt, table_bits, np.int64(budget), core.counts,
                                     core.timing_state, core.events, core.event_times,
                                     np.int64(core.pc), np.int64(core.steps), table, dims)
        core.pc, core.steps = int(pc), int(steps)
        if status != L.STATUS_OUT_OF_BOUNDS or not oob.skippable(program, core):
            return int(status), int(pc), int(steps)
        if table[core.pc] == 0:   # a break flag on the skipped copy: stop before it, as ever
            return L.STATUS_BAD_OPCODE, core.pc, core.steps
        oob.skip(core)            # dma.copy oob=skip with a tile wholly outside (exec/oob.py)
        if core.steps >= budget:
            return L.STATUS_LIMIT, core.pc, core.steps


def _core_arrays(core) -> dict[str, np.ndarray]:
    """Every array of a core's state that the loop updates (events aside)."""
    arrays = {"sbuf": core.mems[0], "psum": core.mems[1], "hbm": core.mems[2],
              "regs": core.regs, "counts": core.counts, "track_free": core.track_free,
              "busy": core.busy, "engine_free": core.engine_free,
              "engine_busy": core.engine_busy, "dma_stats": core.dma_stats}
    for k in range(3):
        arrays[f"write_end{k}"] = core.write_end[k]
        arrays[f"read_end{k}"] = core.read_end[k]
    return arrays


def snapshot(core) -> dict:
    """A copy of a core's state: what ``restore`` puts back."""
    state = {name: a.copy() for name, a in _core_arrays(core).items()}
    state["pc"], state["steps"], state["status"] = core.pc, core.steps, 0
    return state


def restore(core, state: dict) -> None:
    # in place: the core's timing tuple and the loop's arguments are these very arrays
    for name, a in _core_arrays(core).items():
        np.copyto(a, state[name])
    core.pc, core.steps = state["pc"], state["steps"]
    core.status = L.STATUS_OK


def state_nbytes(state: dict) -> int:
    return sum(a.nbytes for a in state.values() if isinstance(a, np.ndarray))
