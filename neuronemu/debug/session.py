"""The debugger's commands on one kernel run: breakpoints and watches, moving forward and back,
and looking at tiles, registers, engines and who wrote an element.

Every command returns a ``Reply``: the text the prompt prints and a JSON document with the same
facts (``--json`` and the DAP server use the documents). The prompt (repl.py) and the DAP server
(dap.py) are front ends of this class."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

from neuronemu.debug import machine as M
from neuronemu.debug.expr import CommandError, Evaluator, Text, element, parse
from neuronemu.debug.memory import Memory, Place, writes, writes_possible
from neuronemu.debug.places import Frame, Places
from neuronemu.machine import layout as L
from neuronemu.program import Program


@dataclass
class Reply:
    text: str
    doc: dict = field(default_factory=dict)


@dataclass
class Breakpoint:
    id: int
    pcs: list[int]
    where: str
    condition: str | None = None
    tree: ast.AST | None = None
    text: Text | None = None
    hits: int = 0
    rank: int | None = None     # of a multi-rank run; None: every rank

    def doc(self) -> dict:
        return {"id": self.id, "kind": "breakpoint", "where": self.where, "pcs": self.pcs,
                "condition": self.condition, "hits": self.hits, "rank": self.rank}


@dataclass
class Watch:
    id: int
    name: str
    index: tuple[int, ...]
    place: Place
    pcs: np.ndarray
    hits: int = 0
    rank: int | None = None     # the rank whose element it is (None: a run of one core)

    @property
    def what(self) -> str:
        element = f"{self.name}[{', '.join(str(i) for i in self.index)}]"
        return element if self.rank is None else f"{element} of rank {self.rank}"

    def doc(self) -> dict:
        return {"id": self.id, "kind": "watch", "element": self.what, "hits": self.hits,
                "rank": self.rank}


class Debugger:
    """A kernel run under the debugger, stopped before its first instruction."""

    def __init__(self, program: Program, inputs: dict | None = None, seed: int = 0, *,
                 source_map: dict | None = None, main_file: str | None = None,
                 max_instructions: int = 50_000_000, checkpoint_seconds: float = 0.1,
                 topology: str | None = None, ranks_per_chip: int | None = None):
        from neuronemu.exec.session import uses_cc

        self.program = program
        if uses_cc(program) or topology is not None or program.topology is not None:
            from neuronemu.debug.world import WorldMachine

            # the ranks of a topology (the kernel's own .topology by default), or one core
            # whose cc.* instructions the multi-chip driver carries out
            self.machine: M.Machine | WorldMachine = WorldMachine(
                program, inputs, seed, topology=topology, ranks_per_chip=ranks_per_chip,
                max_instructions=max_instructions, checkpoint_seconds=checkpoint_seconds)
        else:
            self.machine = M.Machine(program, inputs, seed, max_instructions=max_instructions,
                                     checkpoint_seconds=checkpoint_seconds)
        self.places = Places(program, source_map, main_file)
        self._memory = Memory(program, self.machine.core)
        self.aliases = _python_names(program, source_map) if source_map else {}
        self._symbol_pcs: dict[str, np.ndarray] = {}
        self.breakpoints: dict[int, Breakpoint | Watch] = {}
        self._ids = 0
        self._checked_step = -1     # the step whose flagged pc has been looked at
        from neuronemu.timing.report import track_names

        self.track_names = track_names()

    # --- positions ----------------------------------------------------------------------------

    @property
    def memory(self) -> Memory:
        """The memories of the rank in focus."""
        self._memory.core = self.machine.core
        return self._memory

    @property
    def ranks(self) -> bool:
        """Whether the run has several ranks (one of them in focus)."""
        return self.machine.world > 1

    def _failed(self) -> bool:
        return self.machine.error is not None or self.machine.core.status != L.STATUS_OK

    @property
    def pc(self) -> int:
        return self.machine.pc

    @property
    def steps(self) -> int:
        return self.machine.steps

    def time_ns(self) -> float:
        """Modelled time so far: when the last instruction run until now ends."""
        return float(self.machine.core.track_free.max())

    def frames(self) -> list[Frame]:
        if self.machine.finished:
            return []
        return self.places.frames(self.pc)

    def position(self) -> dict:
        """Where the run stands, as a document."""
        m = self.machine
        doc = {"pc": m.pc, "step": m.steps, "time_ns": self.time_ns(),
               "finished": m.finished}
        if self.ranks:
            doc.update(rank=m.focus, world=m.world, all_finished=m.done)
        if not m.finished:
            ins = self.program.instructions[m.pc]
            doc["instruction"] = ins.text.strip()
            doc["frames"] = [{"file": f.file, "line": f.line, "function": f.function}
                             for f in self.frames()]
            same = self.places.pcs_of(self.places.frame(m.pc))
            doc["line_runs"] = int(m.core.counts[same].sum())
            loop = self.places.loop_of(m.pc)
            if loop is not None:
                head, tail = loop
                row = self.program.instrs[tail]
                regs = {f"r{int(row[L.I_ARGS + 2 * k + 1])}":
                        int(m.core.regs[int(row[L.I_ARGS + 2 * k + 1])])
                        for k in range(int(row[L.I_NARGS])) if row[L.I_ARGS + 2 * k] == L.TAG_REG}
                doc["loop"] = {"label": self.places.label_at(head),
                               "lines": [self.places.asm[head].line, self.places.asm[tail].line],
                               "registers": regs}
        if self._failed():
            doc["fault"] = self._fault_text()
        return doc

    def _fault_text(self) -> str:
        error = self.machine.fault()
        return "\n".join([error.message, *(f"  {note}" for note in error.notes)])

    def _line_text(self, pc: int) -> str:
        """The stop line: the user's line (and, for NKI, the generated instruction)."""
        frames = self.places.frames(pc)
        top = frames[0]
        out = [f"{top.line:>5} | {self.places.text_of(top)}"]
        if len(frames) > 1:
            asm = frames[1]
            out.append(f"        asm {asm.short}: {_code(self.places.text_of(asm))}")
        return "\n".join(out)

    def _where_line(self) -> str:
        m = self.machine
        rank = f"rank {m.focus}, " if self.ranks else ""
        if m.finished:
            if self.ranks and not m.done:
                return (f"rank {m.focus} has finished: {m.steps} instructions, modelled time "
                        f"{_us(self.time_ns())}; other ranks have not (info ranks)")
            every = f" on every rank ({m.world})" if self.ranks else ""
            return (f"the kernel has finished{every}: {rank}{m.steps} instructions, modelled "
                    f"time {_us(self.time_ns())}")
        top = self.places.frame(m.pc)
        function = f" ({top.function})" if top.function else ""
        return f"{rank}{top.short}{function}, pc {m.pc}, step {m.steps}"

    def stopped(self, headline: str, doc: dict | None = None) -> Reply:
        """A reply for a stop: the headline, the line, and the position document."""
        text = f"{headline}, {self._where_line()}" if headline else self._where_line()
        if not self.machine.finished:
            text += "\n" + self._line_text(self.pc)
        if self._failed():
            text += f"\nfault: {self._fault_text()}"
        full = {"position": self.position()}
        full.update(doc or {})
        return Reply(text, full)

    # --- breakpoints --------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._ids += 1
        return self._ids

    def break_at(self, spec: Text) -> Reply:
        """``LOCATION [rank N] [if CONDITION]``."""
        text, condition = spec, None
        at = _find_keyword(spec.text, "if")
        if at is not None:
            text, condition = spec.sub(0, at), spec.sub(at + 2)
        text, rank = self._rank_suffix(text)
        if not text.text:
            raise spec.error("break needs a location: LINE, FILE:LINE, a label or *PC")
        pcs, where = self.places.resolve(text)
        bp = Breakpoint(self._new_id(), pcs, where, rank=rank)
        if condition is not None:
            bp.tree, bp.text, bp.condition = parse(condition), condition, condition.text
            self._check_names(bp.tree, condition)
        self.breakpoints[bp.id] = bp
        self._update_flags()
        first = self.program.instructions[pcs[0]]
        more = f" (+{len(pcs) - 1} more instructions)" if len(pcs) > 1 else ""
        cond = f" if {bp.condition}" if bp.condition else ""
        on = f" on rank {rank}" if rank is not None else ""
        return Reply(f"Breakpoint {bp.id} at {where}{on}{cond}: pc {pcs[0]}{more}: "
                     f"{first.text.strip()}", {"breakpoint": bp.doc()})

    def _rank_suffix(self, text: Text) -> tuple[Text, int | None]:
        """``... rank N`` at the end of a location or element: (the rest, N), else None."""
        at = _find_keyword(text.text, "rank")
        if at is None:
            return text, None
        value = text.sub(at + 4)
        if not value.text.isdigit() or not int(value.text) < self.machine.world:
            raise value.error(f"rank takes a rank number, 0..{self.machine.world - 1}"
                              + ("" if self.ranks else " (this run has one core)"))
        return text.sub(0, at), int(value.text)

    def watch(self, spec: Text) -> Reply:
        """``ELEMENT [rank N]`` (a multi-rank run: the rank in focus by default)."""
        spec, rank = self._rank_suffix(spec)
        if rank is None and self.ranks:
            rank = self.machine.focus
        name, index = element(spec, self.shapes())
        name = self.symbol(name)
        place = self.memory.place(name, index)
        if place is None:
            raise spec.error(f"'{name}' is a compressed tensor: its elements have no fixed "
                             f"bytes to watch; watch the tile it is loaded into")
        pcs = writes_possible(self.program, place)
        w = Watch(self._new_id(), name, index, place, pcs, rank=rank)
        self.breakpoints[w.id] = w
        self._update_flags()
        count = int(pcs.sum())
        return Reply(f"Watchpoint {w.id}: {w.what} ({count} instruction"
                     f"{'s' if count != 1 else ''} may write it)", {"breakpoint": w.doc()})

    def delete(self, ids: list[int] | None = None) -> Reply:
        if ids is None:
            self.breakpoints.clear()
        for i in ids or []:
            if i not in self.breakpoints:
                raise CommandError(f"no breakpoint number {i} (have: "
                                   f"{', '.join(map(str, self.breakpoints)) or 'none'})")
            del self.breakpoints[i]
        self._update_flags()
        return Reply("", {"deleted": ids if ids is not None else "all"})

    def _update_flags(self, extra: np.ndarray | None = None) -> None:
        """Flag the pcs to stop at, per rank: breakpoints on their rank (or all), watches on
        theirs, ``extra`` on the rank in focus."""
        m = self.machine
        flags = np.zeros((m.world, len(self.program.instrs)), dtype=bool)
        for bp in self.breakpoints.values():
            ranks = slice(None) if bp.rank is None else bp.rank
            if isinstance(bp, Watch):
                flags[ranks] |= bp.pcs
            else:
                flags[ranks, bp.pcs] = True
        if extra is not None:
            flags[m.focus] |= extra
        m.set_flags(flags if m.world > 1 else flags[0])

    def _check_names(self, tree: ast.AST, text: Text) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self._lookup(node.id, text, node)

    def _hits(self) -> list[Breakpoint | Watch]:
        """The breakpoints and watches that trigger at the current pc and state."""
        pc, regs = self.pc, self.machine.core.regs
        out = []
        for bp in self.breakpoints.values():
            if bp.rank is not None and bp.rank != self.machine.focus:
                continue
            if isinstance(bp, Watch):
                if bp.pcs[pc] and writes(self.program, pc, regs, bp.place):
                    out.append(bp)
            elif pc in bp.pcs and (bp.tree is None
                                   or _truth(Evaluator(bp.text, self._lookup)(bp.tree))):
                out.append(bp)
        return out

    # --- moving -------------------------------------------------------------------------------

    def _skip_current(self) -> bool:
        return self._checked_step == self.steps

    def cont(self) -> Reply:
        """Run to the next breakpoint or watch that triggers, or the end."""
        pending = self._pending_watches()
        if pending:
            return self._report_hits(pending)
        while True:
            stop = self.machine.run(flagged=True, skip_current=self._skip_current())
            if stop.reason != M.BREAK:
                return self._report(stop)
            hits = self._hits()
            self._checked_step = self.steps
            if hits:
                return self._report_hits(hits)

    def _pending_watches(self) -> list[Watch]:
        """Resuming where a stop was reported, breakpoints here are not reported again, but
        a watch set since then on an element the instruction here writes is."""
        if not self._skip_current() or self.machine.finished:
            return []
        return [h for h in self._hits() if isinstance(h, Watch)]

    def _report_hits(self, hits: list) -> Reply:
        watches = [h for h in hits if isinstance(h, Watch)]
        for h in hits:
            h.hits += 1
        if watches:
            pc = self.pc
            old = {w.id: self._element(w) for w in watches}
            stop = self.machine.run(self.steps + 1, flagged=False)
            if stop.reason not in (M.LIMIT, M.FINISHED):
                return self._report(stop)
            lines, docs = [], []
            for w in watches:
                new = self._element(w)
                lines.append(f"Watchpoint {w.id}: {w.what} written by "
                             f"{self.places.frame(pc).short} (pc {pc})\n"
                             f"Old value = {_scalar(old[w.id])}\nNew value = {_scalar(new)}")
                docs.append({"id": w.id, "element": w.what, "pc": pc,
                             "old": _json_value(old[w.id]), "new": _json_value(new)})
            reply = self.stopped("")
            reply.text = "\n".join(lines) + "\n" + reply.text
            reply.doc.update(reason="watch", watches=docs)
            return reply
        return self.stopped(_hit_names(hits), {"reason": "breakpoint",
                                                  "breakpoints": [h.id for h in hits]})

    def _element(self, w: Watch):
        return self.memory.value(w.name)[w.index]

    def _report(self, stop: M.Stop) -> Reply:
        if stop.reason == M.FINISHED:
            return self.stopped("", {"reason": "finished"})
        if stop.reason == M.FAULT:
            return self.stopped("Fault", {"reason": "fault"})
        if stop.reason == M.INTERRUPTED:
            return self.stopped("Interrupted", {"reason": "interrupted"})
        if stop.reason == M.LIMIT and self.steps >= self.machine.max_instructions:
            return self.stopped(f"Instruction limit ({self.machine.max_instructions}) reached",
                                {"reason": "limit"})
        return self.stopped("", {"reason": "step"})

    def _refuse_after_end(self) -> None:
        m = self.machine
        if m.finished and self.ranks and not m.done:
            raise CommandError(f"rank {m.focus} has finished; continue runs the other ranks, "
                               f"rank N looks at another (info ranks), reverse-step goes back")
        if m.finished:
            raise CommandError("the kernel has finished; reverse-step, reverse-continue or "
                               "goto STEP go back")
        if m.error is not None:
            raise CommandError("the ranks cannot go on (the fault above); reverse-step, "
                               "reverse-continue or goto STEP go back")
        if m.core.status != L.STATUS_OK:
            raise CommandError("the next instruction faults; reverse-step, reverse-continue "
                               "or goto STEP go back")

    def step(self, count: int = 1) -> Reply:
        """Run ``count`` instructions (breakpoints are not looked at)."""
        self._refuse_after_end()
        stop = self.machine.run(self.steps + count, flagged=False)
        return self._report(stop)

    def next(self, count: int = 1) -> Reply:
        """Run to the next line (the next Python line of an NKI kernel), ``count`` times."""
        self._refuse_after_end()
        stop = None
        for _ in range(count):
            start = self.places.frame(self.pc)
            while True:
                stop = self.machine.run(self.steps + 1, flagged=False)
                if stop.reason != M.LIMIT or self.places.frame(self.pc) != start:
                    break
            if stop.reason != M.LIMIT:
                break
        return self._report(stop)

    def finish(self) -> Reply:
        """Run until the innermost loop around pc is left (breakpoints still stop it)."""
        self._refuse_after_end()
        loop = self.places.loop_of(self.pc)
        if loop is None:
            raise CommandError(f"pc {self.pc} is not inside a loop (no backward branch around "
                               f"it), so there is nothing to finish; use continue")
        head, tail = loop
        outside = np.ones(len(self.program.instrs), dtype=bool)
        outside[head: tail + 1] = False
        pending = self._pending_watches()
        if pending:
            return self._report_hits(pending)
        self._update_flags(outside)
        try:
            while True:
                stop = self.machine.run(flagged=True, skip_current=self._skip_current())
                if stop.reason != M.BREAK:
                    return self._report(stop)
                self._checked_step = self.steps
                if outside[self.pc]:
                    label = self.places.label_at(head)
                    name = f"loop {label}" if label else "the loop"
                    return self.stopped(f"Left {name} (lines {self.places.asm[head].line}-"
                                        f"{self.places.asm[tail].line})", {"reason": "finish"})
                hits = self._hits()
                if hits:
                    return self._report_hits(hits)
        finally:
            self._update_flags()

    def reverse_step(self, count: int = 1) -> Reply:
        if self.steps == 0:
            raise CommandError("already at the start of the run (step 0)")
        self.machine.go_to(self.steps - count)
        return self._report(M.Stop(M.LIMIT, self.pc, self.steps))

    def reverse_next(self, count: int = 1) -> Reply:
        if self.steps == 0:
            raise CommandError("already at the start of the run (step 0)")
        for _ in range(count):
            start = None if self.machine.finished else self.places.frame(self.pc)
            while self.steps > 0:
                self.machine.go_to(self.steps - 1)
                if self.places.frame(self.pc) != start:
                    break
        return self._report(M.Stop(M.LIMIT, self.pc, self.steps))

    def reverse_cont(self) -> Reply:
        """Go back to the last step before this one at which a breakpoint or watch triggers
        (a watch: just before the instruction that writes the element)."""
        if self.steps == 0:
            raise CommandError("already at the start of the run (step 0)")
        m = self.machine
        target = self.steps
        high = target
        while True:
            low = m.checkpoint_before(high)
            m.go_to(low, fresh=True)
            last = None
            skip = False
            while True:
                stop = m.run(high, flagged=True, skip_current=skip)
                if stop.reason != M.BREAK:
                    break
                skip = True
                if self.steps < target:
                    hits = self._hits()
                    if hits:
                        last = (self.steps, hits)
            if last is not None:
                m.go_to(last[0], fresh=True)
                self._checked_step = self.steps
                for h in last[1]:
                    h.hits += 1
                watched = [h.what for h in last[1] if isinstance(h, Watch)]
                note = (f" (the next instruction writes {', '.join(watched)})" if watched
                        else "")
                return self.stopped(f"{_hit_names(last[1])}{note}",
                                    {"reason": "breakpoint",
                                     "breakpoints": [h.id for h in last[1]]})
            if low == 0:
                m.go_to(0, fresh=True)
                self._checked_step = 0
                return self.stopped("Reached the start of the run", {"reason": "start"})
            high = low

    def goto(self, step: int) -> Reply:
        if step < 0:
            raise CommandError("a step is 0 or more")
        self.machine.go_to(step)
        if self.steps < step:
            self.machine.core.status = L.STATUS_OK
            stop = self.machine.run(step, flagged=False)
            return self._report(stop)
        return self._report(M.Stop(M.LIMIT, self.pc, self.steps))

    def rank(self, rank: int | None = None) -> Reply:
        """Look at rank ``rank`` of a multi-rank run (None: say which is in focus)."""
        m = self.machine
        if rank is None:
            return self.stopped(f"{m.world} ranks", {"reason": "rank"})
        if not 0 <= rank < m.world:
            raise CommandError(f"no rank {rank}: " + (f"ranks 0..{m.world - 1} (info ranks)"
                                                      if self.ranks else
                                                      "this run has one core, rank 0"))
        m.set_focus(rank)
        # a rank that has started stands where a stop left it: continuing runs on from there
        self._checked_step = -1 if m.rank_state(rank) == "ready" else self.steps
        return self.stopped("", {"reason": "rank"})

    def restart(self) -> Reply:
        self.machine.go_to(0, fresh=True)
        self._checked_step = -1
        return self.stopped("Restarted", {"reason": "restart"})

    # --- looking ------------------------------------------------------------------------------

    def symbol(self, name: str) -> str | None:
        """The tile or tensor a name means here: its own name, or for an NKI kernel a Python
        variable's slot (of the ring of slots its line allocates, the one the instruction at pc
        uses, else the one an executed instruction used last)."""
        if name in self.memory.shapes:
            return name
        slots = self.aliases.get(name)
        if not slots:
            return None
        if len(slots) == 1:
            return slots[0]
        if not self.machine.finished:
            here = {getattr(v, "symbol", None)
                    for v in self.program.instructions[self.pc].args.values()}
            for slot in slots:
                if slot in here:
                    return slot
        core = self.machine.core
        n = min(int(core.regs[L.REG_EVENTS]), len(core.events))
        pcs = core.events[:n, 0]
        best, best_event = slots[0], -1
        for slot in slots:
            users = self._users(slot)
            hit = np.nonzero(np.isin(pcs, users))[0]
            if hit.size and hit[-1] > best_event:
                best, best_event = slot, int(hit[-1])
        return best

    def _users(self, symbol: str) -> np.ndarray:
        """The pcs of the instructions with an operand in ``symbol``."""
        if symbol not in self._symbol_pcs:
            self._symbol_pcs[symbol] = np.array(
                [pc for pc, ins in enumerate(self.program.instructions)
                 if any(getattr(v, "symbol", None) == symbol for v in ins.args.values())],
                dtype=np.int64)
        return self._symbol_pcs[symbol]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every name a command may use for a tile or tensor, with its shape."""
        out = dict(self.memory.shapes)
        for name in self.aliases:
            if name not in out:
                out[name] = self.memory.shapes[self.symbol(name)]
        return out

    def _lookup(self, name: str, text: Text, node: ast.AST):
        core = self.machine.core
        symbol = self.symbol(name)
        if symbol is not None:
            return self.memory.value(symbol)
        if name in ("_pc", "_step", "_time", "_rank"):
            return {"_pc": self.pc, "_step": self.steps, "_time": self.time_ns(),
                    "_rank": self.machine.focus}[name]
        if name.startswith("r") and name[1:].isdigit():
            r = int(name[1:])
            if r < L.NUM_REGS:
                return int(core.regs[r])
        if name.startswith("sem") and name[3:].isdigit() and int(name[3:]) < 32:
            return self.semaphores()[int(name[3:])]
        column = getattr(node, "col_offset", 0)
        width = getattr(node, "end_col_offset", column + len(name)) - column
        names = sorted(self.shapes())
        raise text.error(f"'{name}' is not a tile, tensor, register (r0..r{L.NUM_REGS - 1}), "
                         f"semaphore (sem0..sem31) or $pc / $step / $time / $rank", column, width,
                         notes=(f"tiles and tensors: {', '.join(names)}",))

    def evaluate(self, text: Text):
        """The value of an expression (a numpy array, number or bool)."""
        queue = _queue_name(text.text)
        if queue is not None:
            return self.queue(queue, text)
        return Evaluator(text, self._lookup)(parse(text))

    def print(self, text: Text, bits: bool = False) -> Reply:
        value = self.evaluate(text)
        if isinstance(value, dict):   # a DMA queue
            lines = [f"{text.text}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())]
            return Reply("\n".join(lines), {"expression": text.text, "value": value})
        dtype = None
        tree = parse(text)
        base = tree.value if isinstance(tree, ast.Subscript) else tree
        symbol = self.symbol(base.id) if isinstance(base, ast.Name) else None
        if symbol is not None:
            dtype = self.memory.dtype_of(symbol)
        shown = value
        if bits:
            shown = _bits(value, dtype)
        text_out = _array_text(shown, bits)
        doc = {"expression": text.text, "value": _json_value(shown)}
        renamed = symbol is not None and symbol != base.id
        if renamed:
            doc["symbol"] = symbol
        if isinstance(value, np.ndarray) and value.ndim:
            doc.update(dtype=dtype or str(value.dtype), shape=list(value.shape))
            head = f"{dtype or value.dtype}{list(value.shape)}"
            if renamed:
                head = f"{base.id} is {symbol}: {head}"
            text_out = f"{head} =\n{text_out}"
        elif renamed:
            text_out = f"{base.id} is {symbol}: {text_out}"
        return Reply(text_out, doc)

    def semaphores(self) -> list[int]:
        """Each semaphore's count: the sync.signal instructions on it run so far."""
        values = [0] * 32
        counts = self.machine.core.counts
        for pc, ins in enumerate(self.program.instructions):
            if ins.definition.name == "sync.signal" and counts[pc]:
                values[int(ins.args["sem"])] += int(counts[pc])
        return values

    def queue(self, q: int, text: Text | None = None) -> dict:
        from neuronemu.timing.dma import S_BYTES, S_TRANSFERS, S_WIRE

        if not 0 <= q < L.NUM_DMA_QUEUES:
            raise (text or Text("")).error(f"queue {q} does not exist (q0..q"
                                           f"{L.NUM_DMA_QUEUES - 1})")
        core = self.machine.core
        track = L.DMA_TRACK0 + q
        stats = core.dma_stats[q]
        return {"transfers": int(stats[S_TRANSFERS]), "bytes": int(stats[S_BYTES]),
                "wire_bytes": int(stats[S_WIRE]), "busy_ns": float(core.busy[track]),
                "free_at_ns": float(core.track_free[track])}

    def info(self, what: str) -> Reply:
        what = what.strip()
        table = {"engines": self.info_engines, "registers": self.info_registers,
                 "breakpoints": self.info_breakpoints, "watchpoints": self.info_breakpoints,
                 "semaphores": self.info_semaphores, "queues": self.info_queues,
                 "tiles": self.info_tiles, "ranks": self.info_ranks}
        matches = [k for k in table if k.startswith(what)] if what else []
        if len(matches) != 1:
            raise CommandError(f"info what? one of: {', '.join(table)}")
        return table[matches[0]]()

    def info_ranks(self) -> Reply:
        """Every rank: what it is doing, where, its step and its modelled time."""
        m = self.machine
        if not self.ranks:
            return Reply("one core: rank 0 (a multi-rank run comes from --topology or the "
                         "kernel's .topology)", {"ranks": [self.position()]})
        rows = [f"  {'rank':<5} {'state':<28} {'where':<24} {'step':>8} {'modelled':>12}"]
        docs = []
        for r in range(m.world):
            core = m.cores[r]
            state = m.rank_state(r)
            where = ("-" if state == "finished"
                     else f"{self.places.frame(core.pc).short} (pc {core.pc})")
            mark = "*" if r == m.focus else " "
            time_ns = float(core.track_free.max())
            rows.append(f"{mark} {r:<5} {state:<28} {where:<24} {core.steps:>8} "
                        f"{_us(time_ns):>12}")
            docs.append({"rank": r, "state": state, "pc": core.pc, "step": core.steps,
                         "time_ns": time_ns, "focus": r == m.focus})
        return Reply("\n".join(rows), {"ranks": docs})

    def info_registers(self) -> Reply:
        regs = self.machine.core.regs
        used = sorted({r for ins in self.program.instrs for k in range(int(ins[L.I_NARGS]))
                       if ins[L.I_ARGS + 2 * k] == L.TAG_REG
                       for r in [int(ins[L.I_ARGS + 2 * k + 1])]}
                      | {r for op in self.program.ops for k in range(int(op[L.OP_NREG]))
                         for r in [int(op[L.OP_REG + 2 * k])]})
        values = {f"r{r}": int(regs[r]) for r in used if r < L.NUM_REGS}
        text = "  ".join(f"{k} = {v}" for k, v in values.items()) or "(no registers used)"
        return Reply(text, {"registers": values})

    def info_semaphores(self) -> Reply:
        values = self.semaphores()
        used = sorted({int(ins.args["sem"]) for ins in self.program.instructions
                       if ins.definition.name in ("sync.signal", "sync.wait")})
        shown = {f"sem{s}": values[s] for s in used}
        text = "  ".join(f"{k} = {v}" for k, v in shown.items()) or "(no semaphores used)"
        return Reply(text, {"semaphores": shown})

    def info_queues(self) -> Reply:
        rows, docs = [], {}
        for q in range(L.NUM_DMA_QUEUES):
            doc = self.queue(q)
            if doc["transfers"]:
                docs[f"q{q}"] = doc
                rows.append(f"  q{q:<3} {doc['transfers']:>6} transfers {doc['bytes']:>10} bytes "
                            f" busy {_us(doc['busy_ns']):>11}  free at {_us(doc['free_at_ns'])}")
        return Reply("\n".join(rows) or "(no DMA transfers yet)", {"queues": docs})

    def info_tiles(self) -> Reply:
        rows, docs = [], []
        for a in self.program.allocations.values():
            where = a.location.line
            site = self.places.source_map.get(where) if self.places.source_map else None
            origin = site.short() if site is not None else f"line {where}"
            rows.append(f"  {a.name:<16} {a.space} {a.dtype}{list(a.shape)}  ({origin})")
            docs.append({"name": a.name, "space": a.space, "dtype": a.dtype,
                         "shape": list(a.shape), "line": where,
                         "python": site.short() if site is not None else None})
        for t in self.program.tensors.values():
            rows.append(f"  {t.name:<16} hbm {t.dtype}{list(t.shape)}  ({t.role})")
            docs.append({"name": t.name, "space": "hbm", "dtype": t.dtype,
                         "shape": list(t.shape), "role": t.role})
        return Reply("\n".join(rows), {"tiles": docs})

    def info_breakpoints(self) -> Reply:
        rows = []
        for bp in self.breakpoints.values():
            if isinstance(bp, Watch):
                rows.append(f"  {bp.id:<3} watch       {bp.what}  (hit {bp.hits} times)")
            else:
                cond = f" if {bp.condition}" if bp.condition else ""
                rows.append(f"  {bp.id:<3} breakpoint  {bp.where}{cond}  (hit {bp.hits} "
                            f"times)")
        return Reply("\n".join(rows) or "(no breakpoints or watchpoints)",
                     {"breakpoints": [bp.doc() for bp in self.breakpoints.values()]})

    def info_engines(self) -> Reply:
        """Each track's instructions so far, busy time and when it is free; then what the
        next instruction waits for."""
        core = self.machine.core
        per_track = np.zeros(L.NUM_TRACKS, dtype=np.int64)
        np.add.at(per_track, self.program.instrs[:, L.I_TRACK], core.counts)
        rows = [f"  {'track':<8} {'instrs':>7} {'busy':>12} {'free at':>12}"]
        docs = {}
        for t in range(1, L.NUM_TRACKS):
            # the four compute engines always; DMA queues (and sync) once used; ctrl takes
            # no time, and DMAs run on their queues' tracks, not on "dma"
            if t in (4, 7) or (t not in (1, 2, 3, 5) and not per_track[t]):
                continue
            name = self.track_names.get(t)
            if name is None:
                continue
            docs[name] = {"instructions": int(per_track[t]), "busy_ns": float(core.busy[t]),
                          "free_at_ns": float(core.track_free[t])}
            rows.append(f"  {name:<8} {int(per_track[t]):>7} {_us(core.busy[t]):>12} "
                        f"{_us(core.track_free[t]):>12}")
        doc = {"tracks": docs, "time_ns": self.time_ns()}
        if not self.machine.finished:
            wait = self.waits()
            doc["next"] = wait
            rows.append(wait["text"])
        return Reply("\n".join(rows), doc)

    def waits(self) -> dict:
        """When the instruction at pc could start, and what it waits for: its track, or the
        last write (or read, for a write) of an operand."""
        from neuronemu.timing.model import C_FORMULA, F_FREE, operand_ready

        core, pc = self.machine.core, self.pc
        row = self.program.instrs[pc]
        ins = self.program.instructions[pc]
        track = int(row[L.I_TRACK])
        name = self.track_names.get(track, "all tracks")
        if core.timing_state[0][int(row[L.I_COST]), C_FORMULA] == F_FREE:
            return {"pc": pc, "text": f"next: pc {pc} {ins.definition.name} takes no time",
                    "waits_for": None}
        free = float(core.track_free[track]) if track else float(core.track_free.max())
        reason, start = f"{name} (free at {_us(free)})", free
        for k, arg in enumerate(ins.definition.args):
            if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
                continue
            access = (int(row[L.I_ACCESS]) >> (2 * k)) & 3
            op = self.program.ops[int(row[L.I_ARGS + 2 * k + 1])]
            ready, _ = operand_ready(op, core.regs, access, core.breaks, core.write_end,
                                     core.read_end)
            if float(ready) > start:
                tile = ins.args.get(arg.name)
                symbol = getattr(tile, "symbol", arg.name)
                verb = "written" if access & L.ACCESS_WRITE else "read"
                last = "last read or write" if verb == "written" else "last write"
                reason, start = f"{symbol} ({arg.name}: its {last} ends at {_us(ready)})", \
                    float(ready)
        text = (f"next: pc {pc} {ins.definition.name} on {name} starts at {_us(start)}, "
                f"waiting for {reason}")
        return {"pc": pc, "track": name, "start_ns": start, "waits_for": reason, "text": text}

    def where(self) -> Reply:
        doc = self.position()
        m = self.machine
        if m.finished:
            return Reply(self._where_line(), {"position": doc})
        lines = []
        for depth, frame in enumerate(self.frames()):
            fn = f" in {frame.function}" if frame.function else ""
            code = self.places.text_of(frame)
            if frame.file == self.places.asm_file:
                code = _code(code)
            lines.append(f"#{depth}  {frame.short}{fn}: {code}")
        rank = f"rank {m.focus}, " if self.ranks else ""
        extra = f"{rank}pc {m.pc}, step {m.steps}, modelled time {_us(self.time_ns())}"
        runs = doc["line_runs"]
        extra += f", this line has run {runs} time{'s' if runs != 1 else ''} before"
        loop = doc.get("loop")
        if loop:
            label = f"loop {loop['label']}" if loop["label"] else "a loop"
            regs = ", ".join(f"{k} = {v}" for k, v in loop["registers"].items())
            extra += (f"\n    in {label} (lines {loop['lines'][0]}-{loop['lines'][1]})"
                      + (f", {regs}" if regs else ""))
        lines.append("    " + extra)
        if "fault" in doc:
            lines.append(f"    fault: {doc['fault']}")
        return Reply("\n".join(lines), {"position": doc})

    def list_source(self, line: int | None = None) -> Reply:
        """Lines around ``line`` (default: the current one) of the user's file."""
        if self.machine.finished and line is None:
            raise CommandError("the kernel has finished; list LINE shows a line")
        frame = self.places.frame(self.pc) if line is None else Frame(
            self.places.frame(0).file, line)
        current = None if self.machine.finished else self.places.frame(self.pc)
        rows = []
        for n in range(max(1, frame.line - 4), frame.line + 5):
            text = self.places.text_of(Frame(frame.file, n))
            if not text and n > frame.line:
                break
            mark = "=>" if current is not None and (frame.file, n) == (current.file,
                                                                     current.line) else "  "
            rows.append(f"{mark}{n:>4} | {text}")
        return Reply("\n".join(rows), {"file": frame.file, "line": frame.line})

    def who_wrote(self, text: Text, depth: int = 6) -> Reply:
        """The last write of an element, and back through the copies that brought it there."""
        from neuronemu.grade.provenance import writers_of

        given, index = element(text, self.shapes())
        name = self.symbol(given)
        place = self.memory.place(name, index)
        if place is None:
            raise text.error(f"'{name}' is compressed: ask about the tile it is loaded into")
        core = self.machine.core
        n_events = int(core.regs[L.REG_EVENTS])
        if n_events > len(core.events):
            raise CommandError(f"the run has passed its {len(core.events)} recorded events; "
                               f"who-wrote reads them (go back with goto STEP)")
        space = {L.SPACE_SBUF: "sbuf", L.SPACE_PSUM: "psum", L.SPACE_HBM: "hbm"}[place.space]
        what = f"{given}[{', '.join(map(str, index))}]"
        if given != name:
            what += f" ({name})"
        chain = writers_of(self.program, core.events, n_events, space, place.row, place.byte,
                           what, depth)
        value = self.memory.value(name)[index]
        lines = [f"{what} = {_scalar(value)}"]
        docs = []
        if not chain:
            lines.append("  nothing has written it yet in this run (it holds its initial "
                         "value)")
        for k, w in enumerate(chain):
            frame = self.places.frame(w.pc)
            start, end = (float(v) for v in core.event_times[w.event, :2])
            head = "  written" if k == 0 else f"  <- {w.what}, written"
            ins = _code(self.program.instructions[w.pc].text)
            lines.append(f"{head} by {frame.short}, pc {w.pc}, modelled "
                         f"{start / 1000:.3f}-{_us(end)}")
            if frame.file != self.places.asm_file:
                lines.append(f"      {self.places.text_of(frame)}")
                lines.append(f"      asm: {ins}")
            else:
                lines.append(f"      {ins}")
            docs.append({"element": w.what, "pc": w.pc, "file": frame.file, "line": frame.line,
                         "instruction": ins, "start_ns": start, "end_ns": end,
                         "event": w.event})
        return Reply("\n".join(lines), {"element": what, "value": _json_value(value),
                                        "writers": docs})


def _python_names(program: Program, source_map: dict) -> dict[str, list[str]]:
    """NKI kernel variables -> the tiles / tensors their lines allocate: the name a
    ``NAME = nl.ndarray(...)`` line assigns, for every slot the front end declared for it."""
    import linecache

    out: dict[str, list[str]] = {}
    declared = [(a.name, a.location.line) for a in program.allocations.values()]
    declared += [(t.name, t.location.line) for t in program.tensors.values()
                 if t.role != "input"]
    for symbol, line in declared:
        site = source_map.get(line)
        if site is None:
            continue
        code = linecache.getline(site.filename, site.line).strip()
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        stmt = tree.body[0] if tree.body else None
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            out.setdefault(stmt.targets[0].id, []).append(symbol)
    return out


# --- helpers ----------------------------------------------------------------------------------

def _code(line: str) -> str:
    """An assembly line without its comment (the NKI front end's ``# file.py:LINE``)."""
    return line.split("#", 1)[0].strip()


def _hit_names(hits: list) -> str:
    return ", ".join(f"{'Watchpoint' if isinstance(h, Watch) else 'Breakpoint'} {h.id}"
                     for h in hits)


def _find_keyword(text: str, word: str) -> int | None:
    """Position of `` word `` as a separate word, or None."""
    padded = f" {text} "
    at = padded.find(f" {word} ")
    return None if at < 0 else at


def _queue_name(text: str) -> int | None:
    t = text.strip()
    for prefix in ("dma.q", "q"):
        if t.startswith(prefix) and t[len(prefix):].isdigit():
            return int(t[len(prefix):])
    return None


def _truth(value) -> bool:
    if isinstance(value, np.ndarray):
        return bool(value.all())
    return bool(value)


def _us(ns) -> str:
    return f"{float(ns) / 1000:.3f} us"


def _fmt(v) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def _scalar(value) -> str:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (np.generic,)) and not isinstance(value, (np.integer, np.bool_)):
        return str(value)
    return str(value)


def _bits(value, dtype: str | None):
    """The storage bits of a value of ``dtype`` (integers as they are)."""
    if not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
        return value
    arr = np.asarray(value)
    if arr.dtype.kind in "iub":
        return arr
    return arr.view(f"<u{arr.dtype.itemsize}")


def _array_text(value, bits: bool) -> str:
    if not isinstance(value, (np.ndarray, np.generic)):
        return hex(value) if bits and isinstance(value, int) else str(value)
    arr = np.asarray(value)
    if bits:
        digits = 2 * arr.dtype.itemsize
        formatter = {"int": lambda v: f"0x{int(v) & ((1 << (8 * arr.dtype.itemsize)) - 1):0{digits}x}"}
        return np.array2string(arr, formatter=formatter, threshold=200, edgeitems=3,
                               max_line_width=100)
    if arr.shape == ():
        return str(arr[()])
    return np.array2string(arr, threshold=200, edgeitems=3, max_line_width=100)


def _json_value(value):
    """A value for JSON: numbers (non-finite as strings), nested lists for arrays (at most
    4096 elements; larger ones as their shape and a note)."""
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.size > 4096:
            return {"shape": list(arr.shape), "truncated": True}
        if arr.dtype.kind in "iub":
            return arr.tolist()
        floats = arr.astype(np.float64)
        out = floats.tolist()
        return _finite(out)
    if isinstance(value, float):
        return _finite(value)
    return value


def _finite(v):
    if isinstance(v, list):
        return [_finite(x) for x in v]
    if isinstance(v, float) and not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    return v
