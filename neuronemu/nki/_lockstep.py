"""The programs of a launch grid traced in lockstep at their ``core_barrier`` calls.

A launch ``kernel[2](...)`` is traced program after program into one core's stream. That is
right until the programs synchronise: an LNC2 kernel that writes its half of a shared tensor,
meets the other core at ``nisa.core_barrier`` and then reads the other half needs every
program's code before the barrier to come before any program's code after it. So when a grid
program reaches a barrier, the trace starts again in lockstep: each program's Python function
runs in a thread of its own, one thread at a time, in program order, and a thread that reaches
a barrier hands the turn to the next; the emitted stream is phase 0 of every program, then
phase 1 of every program, and so on, and the barrier itself is that order (nothing is emitted
for it). Registers, tiles and ``shared_hbm`` tensors are allocated in emission order, as for
any trace, so a tile one program keeps across the barrier is still live while the others run.

The programs must reach the same barriers in the same order (LNC2's identical control flow):
a difference is a located error at the first barrier where they part.

``nisa.sendrecv`` between the programs is such a meeting point that also moves data: each
program leaves what it sends (``meet(site, payload, complete)``), and the last program to
arrive, before any program goes on, hands every program's payload to ``complete``, which emits
the copies (neuronemu/nki/_collectives.py). So each copy comes after every program's code
before the exchange (the data is written) and before any program's code after it (it is read).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class NeedsLockstep(BaseException):
    """A grid program reached a core_barrier while being traced sequentially: trace again.
    (A BaseException, so that a kernel's own ``except Exception`` does not stop it.)"""


class _Abort(BaseException):
    """Another program failed: this thread stops where it waits."""


class Lockstep:
    """Run ``run_program(program)`` for every program in lockstep (see the module)."""

    def __init__(self, tracer, programs: list[tuple[int, ...]],
                 run_program: Callable[[tuple[int, ...]], object]) -> None:
        self.tracer = tracer
        self.programs = programs
        self.run_program = run_program
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * len(programs)
        self.barriers: list[list] = [[] for _ in programs]   # sites reached, per program
        self.payloads: dict[int, dict[int, object]] = {}   # meeting number -> program -> payload
        self.shared_next = [0] * len(programs)
        self.results: list = [None] * len(programs)
        self.error: BaseException | None = None
        self.local = threading.local()

    def run(self) -> list:
        """Every program's return value; raises the first program's error."""
        self.tracer.lockstep = self
        self.tracer.lockstep_used = True
        threads = [threading.Thread(target=self._body, args=(i,), daemon=True,
                                    name=f"nki-program-{i}") for i in range(len(self.programs))]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            self.tracer.lockstep = None
        if self.error is not None:
            raise self.error
        return self.results

    def barrier(self, site) -> None:
        """The calling program reached a core_barrier at ``site``: the next program runs."""
        self.meet(site)

    def meet(self, site, payload=None,
             complete: Callable[[dict[int, object]], None] | None = None) -> None:
        """The calling program reached a meeting point at ``site`` (with ``payload``, for
        ``complete``): the next program runs. The program completing the meeting (every
        program has reached it) first calls ``complete`` with every program's payload."""
        i = self.local.index
        self.barriers[i].append(site)
        k = len(self.barriers[i]) - 1
        if complete is not None:
            self.payloads.setdefault(k, {})[i] = payload
        if all(len(reached) > k for reached in self.barriers) and k in self.payloads:
            complete(self.payloads.pop(k))
        self._pass(i)
        self._wait(i)

    def diverging(self):
        """(barrier number, the program that reached it, its site, a program that did not), for
        the first barrier not every program reached; None when they all reached the same."""
        longest = max(range(len(self.programs)), key=lambda i: len(self.barriers[i]))
        for k, site in enumerate(self.barriers[longest]):
            for i, reached in enumerate(self.barriers):
                if len(reached) <= k:
                    return k + 1, longest, site, i
        return None

    # -- turns
    def _wait(self, i: int) -> None:
        with self.cond:
            while self.turn != i and self.error is None:
                self.cond.wait()
            if self.error is not None:
                raise _Abort
        self.tracer.program = self.programs[i]
        self.tracer.shared_next = self.shared_next[i]

    def _pass(self, i: int) -> None:
        self.shared_next[i] = self.tracer.shared_next
        with self.cond:
            n = len(self.programs)
            for step in range(1, n + 1):
                j = (i + step) % n
                if not self.done[j]:
                    self.turn = j
                    break
            self.cond.notify_all()

    def _body(self, i: int) -> None:
        self.local.index = i
        try:
            self._wait(i)
            self.results[i] = self.run_program(self.programs[i])
        except _Abort:
            return
        except BaseException as error:   # noqa: BLE001 - handed to the tracing thread
            with self.cond:
                if self.error is None:
                    self.error = error
                self.cond.notify_all()
            return
        with self.cond:
            self.done[i] = True
        self._pass(i)
