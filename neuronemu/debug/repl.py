"""The ``neuronemu debug`` prompt: gdb's command names over ``session.Debugger``.

Commands come from ``-x FILE`` scripts first, then (unless ``--batch``) from the terminal or
standard input. Read from a script or a pipe, each command is echoed after the prompt, so the
output reads as the session would on a terminal (docs/debugging.md's transcripts are replayed
this way by the tests). ``--json`` prints one JSON document per command instead."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from neuronemu.debug.expr import CommandError, Text
from neuronemu.debug.session import Debugger, Reply
from neuronemu.errors import NeuronemuError

PROMPT = "(nemu) "

HELP = """\
break LOCATION [rank N] [if COND]
                          stop before LOCATION: LINE, FILE:LINE (NKI: the kernel's .py), label,
                          *PC; with rank N only on that rank of a multi-rank run
watch NAME[i, j] [rank N] stop after an instruction writes that element (old and new value)
delete [N ...]            delete breakpoints / watchpoints (all without N)
continue | c              run to the next breakpoint or watchpoint that triggers, or the end
step | s | stepi [N]      run N instructions (default 1)
next | n [N]              run to the next line (NKI: the next Python line)
finish                    run until the innermost loop is left
reverse-step | rs [N]     go back N instructions
reverse-next | rn [N]     go back to the previous line
reverse-continue | rc     go back to the last breakpoint or watchpoint that triggered
goto STEP                 go to the run's state after STEP instructions (forward or back)
restart                   go back to step 0
print[/x] EXPR            a tile, slice, tensor, register (r3), semaphore (sem0), DMA queue (q2),
                          $pc / $step / $time / $rank, or arithmetic of them; /x: the storage bits
who-wrote NAME[i, j]      the last instruction that wrote the element, back through copies
rank [N]                  a multi-rank run: look at rank N (steps, prints and goto are its own)
info engines|registers|breakpoints|semaphores|queues|tiles|ranks
where | bt                the line, pc, step, modelled time and loop
list [LINE]               source lines around the current (or given) line
quit | q                  leave"""


def load(kernel: Path, *, target: str | None = None, inputs: dict | None = None, seed: int = 0,
         max_instructions: int = 50_000_000, argv: list[str] | None = None,
         kernel_name: str | None = None, topology: str | None = None,
         ranks_per_chip: int | None = None) -> Debugger:
    """A Debugger on a ``.s`` / ``.neo`` kernel, or on the first NKI kernel a ``.py`` script
    runs (its inputs are the script's arrays unless ``inputs`` overrides them). ``topology``
    (default: the kernel's ``.topology``) debugs every rank of it, as ``neuronemu run``
    runs them."""
    from neuronemu import runs

    if kernel.suffix == ".py":
        from neuronemu.debug.nkiscript import trace_script

        trace = trace_script(str(kernel), argv, kernel_name)
        program = trace.assemble()
        given = dict(trace.inputs)
        given.update(inputs or {})
        return Debugger(program, given, seed, source_map=trace.source_map,
                        main_file=str(kernel), max_instructions=max_instructions,
                        topology=topology, ranks_per_chip=ranks_per_chip)
    _, program = runs.assemble(str(kernel), target, topology)
    return Debugger(program, inputs, seed, max_instructions=max_instructions,
                    topology=topology, ranks_per_chip=ranks_per_chip)


class Prompt:
    """Runs commands on a Debugger and prints their replies."""

    def __init__(self, debugger: Debugger, as_json: bool = False,
                 write: Callable[[str], None] | None = None, colour: bool | None = None):
        self.debugger = debugger
        self.as_json = as_json
        self.write = write or (lambda s: print(s, flush=True))
        if colour is None:
            colour = (not as_json and sys.stdout.isatty() and "NO_COLOR" not in os.environ)
        self.colour = colour
        self.failed = 0
        self.quit = False

    def banner(self) -> None:
        d = self.debugger
        program = d.program
        reply = d.stopped("")
        head = (f"{os.path.basename(program.source.name)}: {len(program.instrs)} instructions "
                f"on {program.target.name}; stopped before the first (help: commands)")
        if self.as_json:
            self.write(json.dumps({"command": None, "ok": True, "loaded": head, **reply.doc}))
        else:
            self.write(head + "\n" + reply.text)

    def run_lines(self, lines: Iterable[tuple[str, int, str]], echo: bool) -> None:
        """Run (name, line number, text) commands until ``quit``."""
        for name, number, line in lines:
            if self.quit:
                return
            text = line.rstrip("\n")
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if echo and not self.as_json:
                self.write(PROMPT + text)
            self.execute(Text(text, name, number))

    def execute(self, text: Text) -> Reply | None:
        """Run one command line and print its reply (or its error)."""
        try:
            reply = self.dispatch(text)
        except NeuronemuError as error:
            self.failed += 1
            if self.as_json:
                self.write(json.dumps({"command": text.text, "ok": False,
                                       "error": error.to_json()}))
            else:
                rendered = error.render()
                self.write(self._style(rendered, "31") if self.colour else rendered)
            return None
        if reply is None:
            return None
        if self.as_json:
            self.write(json.dumps({"command": text.text, "ok": True, **reply.doc}))
        elif reply.text:
            out = reply.text
            if self.colour:
                first, _, rest = out.partition("\n")
                out = self._style(first, "1") + ("\n" + rest if rest else "")
            self.write(out)
        return reply

    @staticmethod
    def _style(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m"

    def dispatch(self, text: Text) -> Reply | None:
        d = self.debugger
        word, _, _ = text.text.strip().partition(" ")
        command, _, fmt = word.partition("/")
        rest = text.sub(text.text.find(word) + len(word))
        arg = rest.text

        def count() -> int:
            if not arg:
                return 1
            if not arg.isdigit() or int(arg) < 1:
                raise rest.error("give a count of 1 or more")
            return int(arg)

        simple = {"continue": d.cont, "c": d.cont, "finish": d.finish,
                  "reverse-continue": d.reverse_cont, "rc": d.reverse_cont,
                  "where": d.where, "bt": d.where, "backtrace": d.where,
                  "restart": d.restart, "run": d.restart}
        counted = {"step": d.step, "s": d.step, "stepi": d.step, "si": d.step,
                   "next": d.next, "n": d.next, "nexti": d.step, "ni": d.step,
                   "reverse-step": d.reverse_step, "rs": d.reverse_step,
                   "reverse-stepi": d.reverse_step, "rsi": d.reverse_step,
                   "reverse-next": d.reverse_next, "rn": d.reverse_next}
        if command in simple:
            if arg:
                raise rest.error(f"{command} takes no argument")
            return simple[command]()
        if command in counted:
            return counted[command](count())
        if command in ("break", "b", "br"):
            return d.break_at(rest)
        if command == "watch":
            return d.watch(rest)
        if command in ("delete", "d"):
            ids = None
            if arg:
                if not all(p.isdigit() for p in arg.split()):
                    raise rest.error("delete takes breakpoint numbers (info breakpoints lists "
                                     "them)")
                ids = [int(p) for p in arg.split()]
            return d.delete(ids)
        if command in ("print", "p", "output"):
            if fmt not in ("", "x"):
                raise text.error(f"print/{fmt}: the format is /x (the storage bits)",
                                 text.text.find("/") + 1, len(fmt))
            return d.print(rest, bits=fmt == "x")
        if command == "who-wrote":
            return d.who_wrote(rest)
        if command in ("info", "i"):
            return d.info(arg)
        if command in ("list", "l"):
            if arg and not arg.isdigit():
                raise rest.error("list takes a line number")
            return d.list_source(int(arg) if arg else None)
        if command == "rank":
            if arg and not arg.isdigit():
                raise rest.error("rank takes a rank number (info ranks lists them)")
            return d.rank(int(arg) if arg else None)
        if command == "goto":
            if not arg.isdigit():
                raise rest.error("goto takes a step number (where shows the current one)")
            return d.goto(int(arg))
        if command in ("help", "h"):
            return Reply(HELP, {"help": HELP})
        if command in ("quit", "q", "exit"):
            self.quit = True
            return None
        raise text.error(f"unknown command '{command}'", text.text.find(word), len(word),
                         notes=("help lists the commands",))


def _script_lines(path: Path) -> Iterator[tuple[str, int, str]]:
    try:
        content = path.read_text()
    except OSError as e:
        raise CommandError(f"cannot read command file {path}: {e.strerror}") from None
    for number, line in enumerate(content.splitlines(), 1):
        yield str(path), number, line


def _stdin_lines(interactive: bool) -> Iterator[tuple[str, int, str]]:
    number = 0
    while True:
        number += 1
        try:
            line = input(PROMPT) if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and not line:
            return
        yield "<stdin>", number, line


def main(debugger: Debugger, scripts: list[Path], batch: bool, as_json: bool) -> int:
    """Run the session; the exit status is 1 when a --batch session had a failing command."""
    prompt = Prompt(debugger, as_json)
    prompt.banner()
    for script in scripts:
        prompt.run_lines(_script_lines(script), echo=True)
    if not batch and not prompt.quit:
        interactive = sys.stdin.isatty() and not as_json
        if interactive:
            try:
                import readline  # noqa: F401  (history and line editing for input())
            except ImportError:
                pass
        _install_interrupt(debugger)
        prompt.run_lines(_stdin_lines(interactive), echo=not interactive)
    return 1 if batch and prompt.failed else 0


def _install_interrupt(debugger: Debugger) -> None:
    """Ctrl-C while the kernel runs stops it between two chunks of the loop."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum, frame) -> None:
        debugger.machine.interrupted = True

    signal.signal(signal.SIGINT, handler)
