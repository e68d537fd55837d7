"""Instruction kernels: one separately compiled, C-callable unit per semantics function, compiled
(or loaded from the cache) the first time a program that uses it runs.

Why: a loop that calls every instruction's semantics directly makes numba compile all of them,
and re-optimise the shared load/store helpers inside each caller, before the first instruction
runs (3.5 to 7 minutes on a new machine). Here the interpreter loop knows only a table of
addresses, one per static instruction (``kernel_addresses``), and calls through it with
``call_kernel``; each entry is a ``numba.cfunc`` made from a wrapper in
``neuronemu/exec/wrappers.py`` that rebuilds the arrays from raw pointers and calls the
semantics function. A kernel that uses two instruction kinds compiles two units, once.

The calling convention is neuronemu.machine.abi.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.machine.abi import SIGNATURE

# ----------------------------------------------------------------------------- compiling

_compiled: dict[str, object] = {}


def _make(entry: str):
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    from neuronemu.compiled.cache import CACHE
    from neuronemu.compiled.jit import options
    from neuronemu.exec import wrappers as generated

    opts = {k: v for k, v in options().items() if k in ("error_model", "fastmath", "boundscheck")}
    cfunc = CFunc(getattr(generated, entry), sigutils.normalize_signature(SIGNATURE), locals={},
                  options=opts)
    if CACHE:
        cfunc.enable_caching()
    return cfunc


def ensure_compiled(entries) -> None:
    """Compile (or load from the cache) the kernels named."""
    from neuronemu.compiled import compiling

    missing = [e for e in dict.fromkeys(entries) if e not in _compiled]
    if not missing:
        return
    pending = [(e, _make(e)) for e in missing]
    cold = [e for e, c in pending if not compiling.is_cached(c)]
    if cold:
        compiling.announce("instruction kernels " + ", ".join(sorted(cold)))
    for entry, cfunc in pending:
        start, counted = time.perf_counter(), compiling.seconds()
        cfunc.compile()
        if entry in cold:  # less what the listener already counted for the callees it compiled
            compiling.add_seconds(time.perf_counter() - start - (compiling.seconds() - counted))
        _compiled[entry] = cfunc


@functools.cache
def _entry_of_opcode() -> dict[int, str]:
    from neuronemu.exec.wrappers import ENTRIES

    return ENTRIES


def kernel_addresses(instrs: np.ndarray, yields) -> np.ndarray:
    """int64 [n]: the address of each static instruction's kernel (0 for instructions the
    interpreter hands to a driver: ``yields[pc]`` true), compiling what is missing."""
    entries = _entry_of_opcode()
    n = instrs.shape[0]
    names = [None if yields[pc] else entries[int(instrs[pc, L.I_OPCODE])] for pc in range(n)]
    ensure_compiled(name for name in names if name is not None)
    out = np.zeros(n, dtype=np.int64)
    for pc, name in enumerate(names):
        if name is not None:
            out[pc] = _compiled[name].address
    return out


def all_entries() -> list[str]:
    return sorted(set(_entry_of_opcode().values()))
