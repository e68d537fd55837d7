"""Exception hierarchy: every user-facing error knows its location and its CLI exit code.

Exit codes (documented in the README):
    0    success
    1    runtime fault (dynamic out-of-bounds tile), instruction limit or wall-clock limit reached
    2    command-line usage error (click's own code; an option out of its range)
    3    assembly / validation error in the kernel source
    4    bad input or output file (--input / --output / --output-dir / --trace)
    5    synchronisation error under .sync explicit (race, deadlock; neuronemu.timing.explicit)
    6    the run needs more host memory than the machine has available
    130  interrupted (Ctrl-C / SIGINT), as shells report a process killed by SIGINT
"""

from __future__ import annotations

from neuronemu.source import Location


class Reported:
    """What every user-facing error carries and how it is shown: a message, an optional source
    location and notes, and an exit code. Mixed into ``NeuronemuError`` (an ``Exception``) and
    ``Interrupted`` (a ``KeyboardInterrupt``, which ``except Exception`` must not catch)."""

    exit_code = 1
    kind = "error"

    def __init__(self, message: str, location: Location | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.location = location
        self.notes = tuple(notes)

    @property
    def errors(self) -> list[Reported]:
        """Every error reported with this one, this one first (AsmError collects several)."""
        return [self]

    def render(self) -> str:
        return self.render_one()

    def render_one(self) -> str:
        """This diagnostic alone: the located message, its notes, then the notes saying which
        macro or ``.rept`` expansion the line came from."""
        if self.location is None:
            return "\n".join([f"{self.kind}: {self.message}"]
                             + [f"note: {note}" for note in self.notes])
        text = self.location.render(self.kind, self.message, expansion=False)
        for note in self.notes:
            text += f"\nnote: {note}"
        return text + self.location.render_expansion()

    def to_json(self) -> dict:
        doc = {"type": type(self).__name__, "message": self.message, "exit_code": self.exit_code}
        if self.location is not None:
            doc.update(file=self.location.source.name, line=self.location.line,
                       column=self.location.column)
            if self.location.expansion is not None:
                doc["expansion"] = self.location.expansion_json()
        if self.notes:
            doc["notes"] = list(self.notes)
        return doc

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self):
        # pickled as its attributes (the partitions of an MPI run raise the same error): the
        # subclasses' constructors take other arguments than Exception.args
        return _rebuild, (type(self), self.args, self.__dict__)


class NeuronemuError(Reported, Exception):
    """Base class of the errors of a kernel, its inputs or its run (all but Ctrl-C)."""


def _rebuild(cls: type, args: tuple, state: dict) -> Reported:
    error = cls.__new__(cls)
    BaseException.__init__(error, *args)
    error.__dict__.update(state)
    return error


class Diagnostic(NeuronemuError):
    """A located warning: the run went on, but the kernel probably has a bug."""

    kind = "warning"
    exit_code = 0


MAX_ERRORS = 20  # errors reported from one file before "too many errors"


class AsmError(NeuronemuError):
    """The kernel source is malformed or violates an ISA or machine rule.

    The assembler reports every independent error of a file, as compilers do: the error raised
    is the first one found (its message and location are the first error's) and ``errors``
    lists them all, up to MAX_ERRORS (``truncated``: more were found and not reported).
    ``symbol``: the name an "unknown name" error is about (errors about a name whose
    declaration already failed are not reported again)."""

    exit_code = 3

    def __init__(self, message: str, location: Location | None = None, notes: tuple[str, ...] = (),
                 symbol: str | None = None):
        super().__init__(message, location, notes)
        self.symbol = symbol
        self.others: list[AsmError] = []
        self.truncated = False

    @property
    def errors(self) -> list[NeuronemuError]:
        return [self, *self.others]

    def render(self) -> str:
        text = "\n".join(e.render_one() for e in self.errors)
        if self.truncated:
            text += f"\nerror: too many errors; stopped after the first {MAX_ERRORS}"
        return text


class RuntimeFault(NeuronemuError):
    """The kernel assembled but faulted while running (e.g. a register-indexed tile out of bounds)."""

    exit_code = 1


class InputError(NeuronemuError):
    """An --input/--output file or a Python API input is missing, mis-shaped or of the wrong dtype."""

    exit_code = 4


class _Stopped:
    """A run that a limit stopped: ``limit`` says which, ``steps`` how many dynamic
    instructions ran (None if the run had not started)."""

    def __init__(self, message: str, location: Location | None = None, *, limit: str,
                 steps: int | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message, location, notes)
        self.limit = limit
        self.steps = steps

    def to_json(self) -> dict:
        doc = {**super().to_json(), "limit": self.limit}
        if self.steps is not None:
            doc["steps"] = self.steps
        return doc


class LimitReached(_Stopped, RuntimeFault):
    """A run stopped by one of its limits before the kernel ended: ``limit`` is
    ``"instructions"`` (max_instructions) or ``"timeout"`` (the wall-clock limit)."""


class Interrupted(_Stopped, Reported, KeyboardInterrupt):
    """The user interrupted the run (Ctrl-C); ``limit`` is ``"interrupt"``. A
    KeyboardInterrupt, not an Exception: whatever catches the errors of a run (a test's
    ``except Exception``, pytest's per-test reporting, the grader's per-shape feedback) lets
    it through, and the whole program stops as Ctrl-C stops Python. The exit code is the
    shell's for a process ended by SIGINT (128 + 2)."""

    exit_code = 130


REPORTED = (NeuronemuError, Interrupted)
"""The exceptions a command reports as a located error and an exit code."""


class ResourceError(NeuronemuError):
    """The run would need more host memory than the machine has available (checked before
    allocating, instead of a MemoryError or the OOM killer)."""

    exit_code = 6


class EncodingError(InputError):
    """A ``.neo`` binary that cannot be decoded: ``not a valid .neo file: <why> at byte N``."""
