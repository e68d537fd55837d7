"""One-line notices to the user that are not diagnostics of a kernel: a compile is starting, the
compiled-code cache is read-only or was damaged. They go to stderr (stdout belongs to ``--json``).

Why a sink that can be replaced: under pytest, stderr is captured per test and shown only for
failures, so a minute-long first compile inside a test was silent (issue 30 item 19); the pytest
plugin routes notices around the capture. This module imports nothing heavy, so the plugin can
use it without loading numba.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


_sink: Callable[[str], None] = _to_stderr


def notify(text: str) -> None:
    """Show ``text`` (one line, starting ``neuronemu: ``) to the user."""
    _sink(text)


def set_sink(sink: Callable[[str], None] | None) -> Callable[[str], None]:
    """Route notices to ``sink`` (None: back to stderr); returns the sink it replaces, to be
    put back (pytest sessions nest under pytester)."""
    global _sink
    previous, _sink = _sink, sink or _to_stderr
    return previous


# The texts, kept here rather than beside the code that raises them: that code is in a compiled
# package, whose every edit makes numba compile everything again (compiled/cache.py).

def compiling(what: str, where: str) -> str:
    """Before a first compile. The figures are measured (2026-11-28, 2 cores): a library
    kernel's first run from an empty cache takes 9 s (vector_add) to 34 s (flash attention) of
    CPU in one process, less wall time on several cores; under `neuronemu warm` each instruction
    kind adds 0.2 s (a branch) to 4 s (vector.exponential) to the helpers compiled before it.
    A slower or busier machine takes longer: the text says up to a few minutes."""
    return (f"neuronemu: compiling {what} with numba, once for this version on this machine: "
            f"10 s to a few minutes (under a second to several seconds per instruction kind), "
            f"cached in {where}; `neuronemu warm` compiles everything ahead")


def cache_fallback(cache: str, why: str, fallback: str) -> str:
    return (f"neuronemu: the compiled-code cache {cache} {why}: compiled code is cached in "
            f"{fallback} instead")


def cache_damaged(path: str, unit: str, removed: bool) -> str:
    kept = "" if removed else " (it could not be removed: the cache is read-only)"
    return (f"neuronemu: compiled-code cache file {path} is damaged (checksum mismatch); "
            f"compiling {unit} again{kept}")
