"""Collecting every independent error of a file, as compilers do (docs/language.md, "Errors").

The parser and the assembler report an error to a ``Collector`` and go on with the next line
or declaration; at the end (or at the MAX_ERRORS-th error) the first error is raised with all
of them in ``AsmError.errors``. A declaration (or label) whose line failed is *poisoned*: an
"unknown name" error about it later would only repeat the first error, so it is not reported.
"""

from __future__ import annotations

import re

from neuronemu.errors import MAX_ERRORS, AsmError

# the name a line declares, guessed from its text (the line did not parse): a label, or the
# NAME of .const / .hbm / .sbuf / .psum
_DECLARED = re.compile(r"[ \t\f]*(?:([A-Za-z_][A-Za-z0-9_]*)[ \t\f]*:[ \t\f]*)?"
                       r"(?:\.(?:const|hbm|sbuf|psum)[ \t\f]+([A-Za-z_][A-Za-z0-9_]*))?")


class Collector:
    """The errors found so far, the poisoned names, and whether the limit was reached."""

    def __init__(self) -> None:
        self.errors: list[AsmError] = []
        self.poisoned: set[str] = set()

    def add(self, error: AsmError) -> None:
        """Record ``error`` (and any it carries), unless it is about a poisoned name; at the
        MAX_ERRORS + 1-th error, raise them all ("too many errors")."""
        for e in error.errors:
            e.others, e.truncated = [], False   # it is one error in this collector's list
            if e.symbol is not None and e.symbol in self.poisoned:
                continue
            if len(self.errors) == MAX_ERRORS:
                raise self.combined(truncated=True)
            self.errors.append(e)

    def poison(self, name: str | None) -> None:
        if name:
            self.poisoned.add(name)

    def poison_line(self, text: str) -> None:
        """Poison what a line that failed to parse declares (its label, its .const/.hbm/.sbuf/
        .psum name)."""
        m = _DECLARED.match(text)
        self.poison(m.group(1))
        self.poison(m.group(2))

    def combined(self, truncated: bool = False) -> AsmError:
        first = self.errors[0]
        first.others = self.errors[1:]
        first.truncated = truncated
        return first

    def raise_if_any(self) -> None:
        if self.errors:
            raise self.combined()
