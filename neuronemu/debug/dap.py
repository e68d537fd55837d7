"""``neuronemu dap``: the Debug Adapter Protocol on stdin / stdout, over ``session.Debugger``.

Any DAP client (VS Code, Neovim's nvim-dap, Emacs' dape, ...) can then debug a ``.s`` kernel or
an NKI script: breakpoints (with conditions) on its lines, steps forward and back (``stepBack``,
``reverseContinue``), the stack (the kernel's line; for NKI the Python line, then the generated
assembly line), variables (tiles as arrays, registers, semaphores, DMA queues) and evaluate.

A run on one core has one thread, "core 0"; a multi-rank run (``topology`` in the launch, or
the kernel's ``.topology``) has a thread per rank, "rank N" (id N + 1): a request naming a
thread looks at (and steps) that rank, and a stop names the rank it happened on, every rank
stopped with it. Requests are answered in order; a request that runs the
kernel answers at once and sends ``stopped`` when the run stops. A finished kernel stays
stopped at its end (reason ``step``, "the kernel has finished"), so that the user can still
step back; ``disconnect`` ends the session. docs/debugging.md shows a VS Code launch.json."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import BinaryIO

import numpy as np

from neuronemu.debug.expr import Text
from neuronemu.errors import NeuronemuError

THREAD = 1
_ASM_REFERENCE = 1            # sourceReference of an NKI kernel's generated assembly
_SCOPES = ("Tiles", "Registers", "Semaphores", "DMA queues")


class Server:
    def __init__(self, reader: BinaryIO, writer: BinaryIO):
        self.reader = reader
        self.writer = writer
        self.seq = 0
        self.debugger = None
        self.asm_text = None
        self.source_bps: dict[str, list[int]] = {}
        self.refs: dict[int, tuple] = {}
        self.done = False
        self.stop_on_entry = True

    # --- the wire -------------------------------------------------------------------------

    def read(self) -> dict | None:
        length = None
        while True:
            line = self.reader.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is not None:
                    break
                continue
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = self.reader.read(length)
        return json.loads(body)

    def send(self, message: dict) -> None:
        self.seq += 1
        message["seq"] = self.seq
        body = json.dumps(message).encode()
        self.writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.writer.flush()

    def event(self, name: str, body: dict | None = None) -> None:
        self.send({"type": "event", "event": name, "body": body or {}})

    def respond(self, request: dict, body: dict | None = None, error: str | None = None) -> None:
        message = {"type": "response", "request_seq": request["seq"],
                   "command": request["command"], "success": error is None,
                   "body": body or {}}
        if error is not None:
            message["message"] = error
            message["body"] = {"error": {"id": 1, "format": error, "showUser": True}}
        self.send(message)

    # --- the loop ---------------------------------------------------------------------------

    def serve(self) -> int:
        while not self.done:
            request = self.read()
            if request is None:
                break
            if request.get("type") != "request":
                continue
            handler = getattr(self, "on_" + request["command"], None)
            if handler is None:
                self.respond(request, error=f"neuronemu dap does not support "
                                            f"'{request['command']}'")
                continue
            try:
                handler(request, request.get("arguments") or {})
            except NeuronemuError as e:
                self.respond(request, error=e.render())
            except (KeyError, ValueError, TypeError) as e:
                self.respond(request, error=f"bad {request['command']} request: {e}")
        return 0

    # --- requests ---------------------------------------------------------------------------

    def on_initialize(self, request, args) -> None:
        self.respond(request, {
            "supportsConfigurationDoneRequest": True, "supportsStepBack": True,
            "supportsConditionalBreakpoints": True, "supportsEvaluateForHovers": True,
            "supportsRestartRequest": False, "supportsTerminateRequest": True})
        self.event("initialized")

    def on_launch(self, request, args) -> None:
        from pathlib import Path

        from neuronemu.debug import repl

        program = args.get("program")
        if not program:
            raise ValueError("launch needs 'program': the .s kernel or the NKI script")
        inputs = {name: np.load(path) for name, path in (args.get("inputs") or {}).items()}
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):   # the script's prints are not DAP
            self.debugger = repl.load(Path(program), target=args.get("target"),
                                      inputs=inputs, seed=int(args.get("seed", 0)),
                                      argv=[str(a) for a in args.get("args", [])],
                                      kernel_name=args.get("kernel"),
                                      topology=args.get("topology"),
                                      ranks_per_chip=args.get("ranksPerChip"))
        if self.debugger.places.source_map is not None:
            self.asm_text = self.debugger.program.source.text
        self.stop_on_entry = bool(args.get("stopOnEntry", True))
        self.respond(request)
        if captured.getvalue():
            self.event("output", {"category": "stdout", "output": captured.getvalue()})

    def on_setBreakpoints(self, request, args) -> None:
        d = self._debugger()
        path = args["source"].get("path") or args["source"].get("name", "")
        for old in self.source_bps.pop(path, []):
            d.delete([old])
        out, ids = [], []
        for bp in args.get("breakpoints", []):
            spec = f"{os.path.basename(path)}:{bp['line']}"
            if bp.get("condition"):
                spec += f" if {bp['condition']}"
            try:
                reply = d.break_at(Text(spec))
            except NeuronemuError as e:
                out.append({"verified": False, "line": bp["line"], "message": e.message})
                continue
            ids.append(reply.doc["breakpoint"]["id"])
            out.append({"verified": True, "line": bp["line"], "id": ids[-1]})
        self.source_bps[path] = ids
        self.respond(request, {"breakpoints": out})

    def on_setExceptionBreakpoints(self, request, args) -> None:
        self.respond(request, {"breakpoints": []})

    def on_configurationDone(self, request, args) -> None:
        self.respond(request)
        if self.stop_on_entry:
            self._stopped("entry", "stopped before the first instruction")
        else:
            self._run(self._debugger().cont)

    def on_threads(self, request, args) -> None:
        d = self._debugger()
        if not d.ranks:
            self.respond(request, {"threads": [{"id": THREAD, "name": "core 0"}]})
            return
        self.respond(request, {"threads": [{"id": THREAD + r, "name": f"rank {r}"}
                                           for r in range(d.machine.world)]})

    def on_stackTrace(self, request, args) -> None:
        d = self._debugger(args)
        pc = min(d.pc, len(d.program.instrs) - 1)
        frames = []
        for k, frame in enumerate(d.places.frames(pc)):
            source = self._source(frame.file)
            name = frame.function or d.program.instructions[pc].definition.name
            if d.machine.finished:
                name += " (finished)"
            frames.append({"id": k + 1, "name": name, "source": source, "line": frame.line,
                           "column": 1})
        self.respond(request, {"stackFrames": frames, "totalFrames": len(frames)})

    def on_scopes(self, request, args) -> None:
        self.refs.clear()
        scopes = []
        for name in _SCOPES:
            ref = self._ref(("scope", name))
            scopes.append({"name": name, "variablesReference": ref, "expensive": False})
        self.respond(request, {"scopes": scopes})

    def on_variables(self, request, args) -> None:
        d = self._debugger()
        what = self.refs.get(int(args["variablesReference"]))
        if what is None:
            self.respond(request, {"variables": []})
            return
        out = []
        if what == ("scope", "Tiles"):
            names = list(d.program.allocations) + list(d.program.tensors)
            names += [a for a in d.aliases if a not in names]
            for name in names:
                symbol = d.symbol(name)
                value = d.memory.value(symbol)
                label = f"{d.memory.dtype_of(symbol)}{list(value.shape)}"
                if symbol != name:
                    label = f"{symbol}: {label}"
                out.append({"name": name, "value": label, "type": d.memory.dtype_of(symbol),
                            "variablesReference": self._ref(("array", symbol, ()))})
        elif what == ("scope", "Registers"):
            for name, value in d.info_registers().doc["registers"].items():
                out.append({"name": name, "value": str(value), "variablesReference": 0})
            position = [("$pc", d.pc), ("$step", d.steps), ("$time", f"{d.time_ns():.1f} ns")]
            if d.ranks:
                position.append(("$rank", d.machine.focus))
            for name, value in position:
                out.append({"name": name, "value": str(value), "variablesReference": 0})
        elif what == ("scope", "Semaphores"):
            for name, value in d.info_semaphores().doc["semaphores"].items():
                out.append({"name": name, "value": str(value), "variablesReference": 0})
        elif what == ("scope", "DMA queues"):
            for name, doc in d.info_queues().doc["queues"].items():
                value = ", ".join(f"{k} {v:g}" for k, v in doc.items())
                out.append({"name": name, "value": value, "variablesReference": 0})
        elif what[0] == "array":
            _, symbol, index = what
            value = d.memory.value(symbol)[index]
            limit = 256
            for i in range(min(value.shape[0], limit)):
                item = value[i]
                if item.ndim:
                    text = np.array2string(item, threshold=16, edgeitems=3,
                                           max_line_width=10_000)
                    ref = self._ref(("array", symbol, index + (i,)))
                else:
                    text, ref = str(item), 0
                out.append({"name": f"[{i}]", "value": text, "variablesReference": ref})
            if value.shape[0] > limit:
                out.append({"name": "...", "value": f"{value.shape[0] - limit} more (evaluate "
                            f"a slice)", "variablesReference": 0})
        self.respond(request, {"variables": out})

    def on_evaluate(self, request, args) -> None:
        d = self._debugger()
        expression = args["expression"].strip()
        bits = expression.startswith("/x ")
        reply = d.print(Text(expression[3:] if bits else expression, "<evaluate>"), bits=bits)
        self.respond(request, {"result": reply.text, "variablesReference": 0})

    def on_continue(self, request, args) -> None:
        self.respond(request, {"allThreadsContinued": True})
        self._run(self._debugger(args).cont)

    def on_next(self, request, args) -> None:
        self.respond(request)
        self._run(self._debugger(args).next)

    def on_stepIn(self, request, args) -> None:
        self.respond(request)
        self._run(self._debugger(args).step)

    def on_stepOut(self, request, args) -> None:
        self.respond(request)
        d = self._debugger(args)
        in_loop = not d.machine.finished and d.places.loop_of(d.pc) is not None
        self._run(d.finish if in_loop else d.cont)

    def on_stepBack(self, request, args) -> None:
        self.respond(request)
        self._run(self._debugger(args).reverse_next)

    def on_reverseContinue(self, request, args) -> None:
        self.respond(request)
        self._run(self._debugger(args).reverse_cont)

    def on_pause(self, request, args) -> None:
        self.respond(request)   # runs are synchronous: the kernel is already stopped

    def on_source(self, request, args) -> None:
        if self.asm_text is None:
            raise ValueError("no generated source to show")
        self.respond(request, {"content": self.asm_text, "mimeType": "text/x-neuronemu"})

    def on_disconnect(self, request, args) -> None:
        self.respond(request)
        self.done = True

    on_terminate = on_disconnect

    # --- helpers ----------------------------------------------------------------------------

    def _debugger(self, args: dict | None = None):
        """The session; with a request's ``threadId`` of a multi-rank run, its rank in
        focus."""
        if self.debugger is None:
            raise ValueError("launch first")
        d = self.debugger
        thread = (args or {}).get("threadId")
        if thread is not None and d.ranks:
            rank = int(thread) - THREAD
            if not 0 <= rank < d.machine.world:
                raise ValueError(f"no thread {thread}: threads 1..{d.machine.world}")
            if rank != d.machine.focus:
                d.rank(rank)
        return d

    def _ref(self, what: tuple) -> int:
        ref = len(self.refs) + 1000
        self.refs[ref] = what
        return ref

    def _source(self, file: str) -> dict:
        d = self._debugger()
        if file == d.places.asm_file and self.asm_text is not None:
            return {"name": os.path.basename(file), "sourceReference": _ASM_REFERENCE}
        return {"name": os.path.basename(file), "path": os.path.abspath(file)}

    def _run(self, command) -> None:
        try:
            reply = command()
        except NeuronemuError as e:
            self.event("output", {"category": "stderr", "output": e.render() + "\n"})
            self._stopped("step", "not moved")
            return
        reason = reply.doc.get("reason", "step")
        dap_reason = {"breakpoint": "breakpoint", "watch": "data breakpoint",
                      "fault": "exception"}.get(reason, "step")
        self.event("output", {"category": "console", "output": reply.text + "\n"})
        self._stopped(dap_reason, reply.text.splitlines()[0] if reply.text else reason,
                      reply.doc.get("breakpoints"))

    def _stopped(self, reason: str, description: str, hits: list | None = None) -> None:
        body = {"reason": reason, "description": description,
                "threadId": THREAD + self._debugger().machine.focus, "allThreadsStopped": True}
        if hits:
            body["hitBreakpointIds"] = hits
        self.event("stopped", body)


def serve(reader: BinaryIO, writer: BinaryIO) -> int:
    """Serve one session. Whatever the kernel or its script prints goes to stderr: stdout
    carries the protocol."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        return Server(reader, writer).serve()
    finally:
        sys.stdout = saved
