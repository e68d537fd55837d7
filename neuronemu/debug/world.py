"""Every rank of a multi-chip run under the debugger (also a kernel with cc.* instructions on one
core: a world of one), stopped, moved forward and moved back as machine.Machine moves one core.

**The same run as ``neuronemu run``.** The debugger runs each rank's stretch between two cc.*
instructions itself, with machine.Machine's break flags (a flagged pc holds kernel address 0 in
that rank's copy of the table, so the compiled loop is the same as a plain run), and hands the
rank to the multi-chip driver (multichip/spmd.py's ``Driver``) when it reaches a cc.*
instruction or its end; when every rank has, the driver carries out its rounds and releases the
ranks whose instruction completed. The order is the driver's own: released ranks run one after
another, in rank order, to their next stop.

**One rank in focus.** Steps count the instructions of the rank in focus: ``run(to_step)`` runs
the world until that rank has run ``to_step``, the others running as the driver needs them. A
run that is not bounded by a step (``continue``) stops at a flagged pc of any rank and moves the
focus there; a bounded run (``step``, ``next``, the scan of ``reverse-continue``) looks only at
the focused rank's flags. A flagged cc.* instruction stops its rank before it is handed over.

**Going back.** The world's state is a function of how far the driver's order has gone, so
``go_to(s)`` restores the last world checkpoint (every core's state, the driver's mailboxes,
stops and link bookings) before the focused rank's step ``s`` and replays until that rank first
has ``s`` steps. The focused rank is then exactly where a forward run had it; another rank may
stand elsewhere than it did when the forward run stopped there (a rank the driver runs earlier
in the same round), which changes nothing the focused rank sees: ranks share no memory, only
the messages the driver moves.
"""

from __future__ import annotations

import copy
import time

import numpy as np

from neuronemu.debug.machine import (
    BREAK,
    FAULT,
    FINISHED,
    INTERRUPTED,
    LIMIT,
    CoreView,
    Machine,
    Stop,
    core_fault,
    prepare_loop,
    restore,
    snapshot,
    state_nbytes,
)
from neuronemu.errors import NeuronemuError
from neuronemu.machine import layout as L
from neuronemu.program import Program

# the driver's attributes a world checkpoint keeps (deep copies); the rest never change
_DRIVER_STATE = ("mail", "stops", "finished", "send_half", "sent", "timer", "network")


class WorldMachine(CoreView):
    """Every rank of ``program`` on ``topology`` (None: the kernel's own ``.topology``, else one
    core), stopped before the first instruction, rank 0 in focus."""

    CHUNK_SECONDS = Machine.CHUNK_SECONDS
    MAX_CHUNK = Machine.MAX_CHUNK

    def __init__(self, program: Program, inputs: dict | None = None, seed: int = 0, *,
                 topology: str | None = None, ranks_per_chip: int | None = None,
                 max_instructions: int = 50_000_000, max_trace_events: int = 1 << 20,
                 checkpoint_seconds: float = 0.1, checkpoint_bytes: int = 1 << 29,
                 chunk: int = 1 << 12):
        from neuronemu import api
        from neuronemu.exec.core import Core, RunLimits, program_kernels
        from neuronemu.hostmem import check_host_memory
        from neuronemu.multichip.comm import LocalComm
        from neuronemu.multichip.network import Network
        from neuronemu.multichip.spmd import Driver

        if topology is None and program.topology is None:
            topo, ranks_per_chip = None, 1     # api.run's world of one
        else:
            topo, ranks_per_chip = api.spmd_topology(program, topology, ranks_per_chip)
        self.program = program
        self.seed = seed
        self.topology = topo
        self.ranks_per_chip = ranks_per_chip
        self.world = (topo.chips if topo is not None else 1) * ranks_per_chip
        per_rank = api._checked_inputs(program, inputs, self.world, spmd=True)
        check_host_memory(program, self.world, compact=True)
        events = max(1024, max_trace_events // self.world)   # as run_spmd in sync mode auto
        self.cores = [Core(program, per_rank[r], seed, rank=r, world=self.world,
                           max_trace_events=events, compact=True) for r in range(self.world)]
        self.max_instructions = max_instructions
        self.driver = Driver(program, topo, ranks_per_chip, dict(enumerate(self.cores)),
                             Network(topo, program.target, ranks_per_chip),
                             RunLimits(max_instructions), LocalComm(), [0] * self.world)
        self.driver.logging = False      # only the explicit-sync replay reads the log
        self.real = program_kernels(program, self.cores[0].timing_state[0])
        self.flags = np.zeros((self.world, len(program.instrs)), dtype=bool)
        self.flagged = np.tile(self.real, (self.world, 1))
        self.focus = 0
        self.pending: list[int] = list(range(self.world))   # ranks to run, the first now
        self.done = False                 # every rank has finished
        self.error: NeuronemuError | None = None   # the driver's: a deadlock, a mismatch
        self.checkpoint_seconds = checkpoint_seconds
        self.checkpoint_bytes = checkpoint_bytes
        self.checkpoints: list[dict] = []
        self._since_checkpoint = 0.0
        # a world's snapshot copies every rank: checkpoints are spaced so that copying takes
        # at most this share of the time
        self.copy_share = 1 / 3
        self._chunk = chunk
        self.interrupted = False
        self.loop_seconds = 0.0
        prepare_loop(self)
        self.checkpoints.append(self._snapshot())

    # --- state ------------------------------------------------------------------------------

    @property
    def core(self):
        return self.cores[self.focus]

    def fault(self) -> NeuronemuError | None:
        """What stops the run here: the driver's error, or the fault of the focused rank's
        next instruction."""
        if self.error is not None:
            return self.error
        return core_fault(self.program, self.core, self.max_instructions,
                          f"rank {self.focus}: " if self.world > 1 else "")

    def ticks(self) -> int:
        """Instructions run by all ranks: how far the driver's order has gone."""
        return sum(c.steps for c in self.cores)

    def _snapshot(self) -> dict:
        keep = {id(self.topology): self.topology}   # shared, never changed
        return {"cores": [snapshot(c) for c in self.cores],
                "driver": copy.deepcopy({k: getattr(self.driver, k) for k in _DRIVER_STATE},
                                        keep),
                "pending": list(self.pending), "done": self.done,
                "steps": [c.steps for c in self.cores], "ticks": self.ticks()}

    def _restore(self, state: dict) -> None:
        for core, saved in zip(self.cores, state["cores"], strict=True):
            restore(core, saved)
        keep = {id(self.topology): self.topology}
        for name, value in copy.deepcopy(state["driver"], keep).items():
            setattr(self.driver, name, value)
        self.pending = list(state["pending"])
        self.done = state["done"]
        self.error = None

    def checkpoint_nbytes(self) -> int:
        return sum(state_nbytes(c) for s in self.checkpoints for c in s["cores"])

    def _maybe_checkpoint(self) -> None:
        if self._since_checkpoint < self.checkpoint_seconds:
            return
        if self.checkpoints[-1]["ticks"] >= self.ticks():
            return
        start = time.perf_counter()
        self.checkpoints.append(self._snapshot())
        copying = time.perf_counter() - start
        self._since_checkpoint = -copying * (1 / self.copy_share - 1)
        if self.checkpoint_nbytes() > self.checkpoint_bytes and len(self.checkpoints) > 2:
            self.checkpoints = self.checkpoints[:1] + self.checkpoints[2::2]
            self.checkpoint_seconds *= 2

    def checkpoint_before(self, step: int) -> int:
        """The focused rank's step at the last checkpoint before its ``step`` (0 if none)."""
        return max((c["steps"][self.focus] for c in self.checkpoints
                    if c["steps"][self.focus] < step), default=0)

    # --- flags and focus --------------------------------------------------------------------

    def set_flags(self, flags: np.ndarray) -> None:
        """Stop before the flagged pcs: ``flags`` [n] for every rank, or [world, n]."""
        flags = np.asarray(flags, dtype=bool)
        self.flags = np.broadcast_to(flags, self.flags.shape).copy()
        self.flagged[:] = np.where(self.flags, 0, self.real)

    def set_focus(self, rank: int) -> None:
        self.focus = rank

    def rank_state(self, r: int) -> str:
        """What rank r is doing, in words: running, at a cc.* instruction, finished."""
        core = self.cores[r]
        if core.pc >= len(self.program.instrs):
            return "finished"
        if self.pending and self.pending[0] == r:
            return "running"
        if r in self.pending:
            return "ready"
        name = self.program.instructions[core.pc].definition.name
        stop = self.driver.stops[r]
        if name in ("cc.recv", "cc.sendrecv") and stop.source >= 0:
            return f"waits in {name} for rank {stop.source}"
        return f"waits in {name}"

    # --- running ----------------------------------------------------------------------------

    def run(self, to_step: int | None = None, flagged: bool = True,
            skip_current: bool = True) -> Stop:
        """As Machine.run, for the rank in focus (see the module's docstring)."""
        bounded = to_step is not None
        limit = self.max_instructions if not bounded else min(to_step, self.max_instructions)
        if self.done:
            return Stop(FINISHED, self.pc, self.steps)
        if self.error is not None or self.core.status != L.STATUS_OK:
            return Stop(FAULT, self.pc, self.steps, self.core.status)
        skip = None
        if flagged and skip_current and not self.finished and self.flags[self.focus, self.pc]:
            skip = (self.focus, self.steps)
        stop = self._run(limit, flagged, bounded, skip)
        if stop.reason == FAULT and self.error is None:
            return self._fault(stop.status)
        return stop

    def _run(self, limit: int, flagged: bool, bounded: bool,
             skip: tuple[int, int] | None, keep_checkpoints: bool = True) -> Stop:
        self.interrupted = False
        while True:
            focus = self.core
            if focus.steps >= limit:
                return Stop(LIMIT, focus.pc, focus.steps)
            if not self.pending:
                try:
                    released = self.driver.coordinate()
                except NeuronemuError as error:
                    self.error = error
                    return Stop(FAULT, focus.pc, focus.steps)
                if released is None:
                    self.done = True
                    return Stop(FINISHED, focus.pc, focus.steps)
                self.pending = released
                continue
            r = self.pending[0]
            core = self.cores[r]
            if core.steps >= self.max_instructions:
                self.focus = r
                return Stop(LIMIT, core.pc, core.steps)
            watched = flagged and (not bounded or r == self.focus)
            table = self.flagged[r] if watched else self.real
            budget = min(core.steps + self._chunk, self.max_instructions)
            if r == self.focus:
                budget = min(budget, limit)
            if skip == (r, core.steps):   # run past the stop already reported here
                skip, table, budget = None, self.real, core.steps + 1
            status, pc, steps, full = self._timed_call(core, budget, table)
            if full:
                if keep_checkpoints:
                    self._maybe_checkpoint()
                if self.interrupted:
                    self.focus = r
                    return Stop(INTERRUPTED, pc, steps)
                continue
            if status == L.STATUS_YIELD and table is not self.real and self.flags[r, pc]:
                self.focus = r                  # a flagged cc.* instruction, not yet handed on
                return Stop(BREAK, pc, steps)
            if status in (L.STATUS_YIELD, L.STATUS_OK):
                stop = self.driver.stopped(r, finished=status == L.STATUS_OK)
                try:
                    self.driver.update_stops([(r, stop)])
                except NeuronemuError as error:
                    self.error, self.focus = error, r
                    return Stop(FAULT, pc, steps)
                self.pending.pop(0)
                if status == L.STATUS_OK and r == self.focus and bounded:
                    return Stop(FINISHED, pc, steps)
                continue
            if status == L.STATUS_BAD_OPCODE and watched and self.flags[r, pc]:
                self.focus = r
                if keep_checkpoints:
                    self._maybe_checkpoint()
                return Stop(BREAK, pc, steps)
            self.focus = r
            core.status = status
            return Stop(FAULT, pc, steps, status)

    def _fault(self, status: int) -> Stop:
        """Leave the world just before the focused rank's faulting instruction."""
        fault_steps = self.steps
        self.go_to(fault_steps, fresh=True)
        if self.core.status != L.STATUS_OK or self.steps != fault_steps:
            self.go_to(fault_steps - 1, fresh=True)
        self.core.status = status
        return Stop(FAULT, self.pc, self.steps, status)

    def go_to(self, step: int, fresh: bool = False) -> Stop:
        """Restore the last checkpoint before the focused rank's ``step`` and replay until it
        first has ``step`` steps (no flags). Without ``fresh``, a world already between that
        checkpoint and ``step`` runs on from where it is."""
        step = max(0, step)
        f = self.focus
        base = next((c for c in reversed(self.checkpoints) if c["steps"][f] < step),
                    self.checkpoints[0])
        moving_on = (base["ticks"] <= self.ticks() and self.steps <= step
                     and self.error is None and self.core.status == L.STATUS_OK)
        if fresh or not moving_on:
            self._restore(base)
        if self.steps < step:
            # checkpoints stay in the driver's order: new ones only past the last
            stop = self._run(step, flagged=False, bounded=True, skip=None,
                             keep_checkpoints=self.ticks() >= self.checkpoints[-1]["ticks"])
            if stop.reason == FAULT and self.error is None:
                self.core.status = stop.status
            self.focus = f
        return Stop(LIMIT, self.pc, self.steps, self.core.status)
