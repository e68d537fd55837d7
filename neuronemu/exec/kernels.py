"""Instruction kernels: one separately compiled, C-callable unit per semantics function, compiled
(or loaded from the cache) the first time a program that uses it runs.

Why: a loop that calls every instruction's semantics directly makes numba compile all of them,
and re-optimise the shared load/store helpers inside each caller, before the first instruction
runs (3.5 to 7 minutes on a new machine). Here the interpreter loop knows only a table of
addresses, one per static instruction (``kernel_addresses``), and calls through it with
``call_kernel``; each entry is a ``numba.cfunc`` made from a wrapper in
``neuronemu/exec/wrappers/<module>.py`` that rebuilds the arrays from raw pointers and calls the
semantics function. A kernel that uses two instruction kinds compiles two units, once, and
imports only the semantics modules of those two (``wrapper``).

The calling convention is neuronemu.machine.abi.
"""

from __future__ import annotations

import functools
import importlib
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

    opts = {k: v for k, v in options().items() if k in ("error_model", "fastmath", "boundscheck")}
    cfunc = CFunc(wrapper(entry), sigutils.normalize_signature(SIGNATURE), locals={},
                  options=opts)
    if CACHE:
        cfunc.enable_caching()
    return cfunc


def wrapper(entry: str):
    """The generated wrapper of kernel ``entry`` (``<module>__<function>``). Its module, and so
    its semantics module, is imported here: importing a semantics module makes a numba dispatcher
    for each of its jitted functions, which a run not using that module need not pay for."""
    module = importlib.import_module(f"neuronemu.exec.wrappers.{entry.split('__', 1)[0]}")
    return getattr(module, entry)


def ensure_compiled(entries) -> None:
    """Compile (or load from the cache) the kernels named."""
    from neuronemu.compiled import compiling

    missing = [e for e in dict.fromkeys(entries) if e not in _compiled]
    if not missing:
        return
    pending = [(e, _made(e)) for e in missing]
    cold = [e for e, c in pending if not compiling.is_cached(c)]
    if cold:
        compiling.announce("instruction kernels " + ", ".join(sorted(cold)))
    for entry, cfunc in pending:
        start, counted = time.perf_counter(), compiling.seconds()
        if entry in cold:
            compiling.log(f"kernel {entry}")
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
    return _by_opcode(instrs[:, L.I_OPCODE], yields)


def program_addresses(instrs: np.ndarray, yields: np.ndarray) -> np.ndarray:
    """``kernel_addresses``, kept for the last few programs (keyed by their opcode column):
    the ranks of a multi-chip run share one table, and nothing is written onto the program."""
    opcodes = np.ascontiguousarray(instrs[:, L.I_OPCODE], dtype=np.int64)
    return _kept(opcodes.tobytes(), np.ascontiguousarray(yields, dtype=bool).tobytes())


@functools.lru_cache(maxsize=16)
def _kept(opcodes: bytes, yields: bytes) -> np.ndarray:
    return _by_opcode(np.frombuffer(opcodes, dtype=np.int64), np.frombuffer(yields, dtype=bool))


def _names(opcodes, yields) -> list[str | None]:
    entries = _entry_of_opcode()
    return [None if y else entries[int(op)] for op, y in zip(opcodes, yields, strict=True)]


def cold_entries(instrs: np.ndarray, yields) -> list[str]:
    """The kernels a program uses that are neither loaded in this process nor in the cache
    (in order of first use)."""
    opcodes = np.asarray(instrs[:, L.I_OPCODE])[~np.asarray(yields, dtype=bool)]
    unique, first = np.unique(opcodes, return_index=True)
    entries = _entry_of_opcode()
    names = [entries[int(op)] for op in unique[np.argsort(first)]]
    return [n for n in dict.fromkeys(names) if not is_ready(n)]


def is_ready(entry: str) -> bool:
    """Whether kernel ``entry`` is loaded in this process or can be loaded from the cache."""
    from neuronemu.compiled import compiling

    return entry in _compiled or compiling.is_cached(_made(entry))


@functools.cache
def _made(entry: str):
    return _make(entry)


def _by_opcode(opcodes, yields) -> np.ndarray:
    names = _names(opcodes, yields)
    ensure_compiled(name for name in names if name is not None)
    out = np.zeros(len(names), dtype=np.int64)
    for pc, name in enumerate(names):
        if name is not None:
            out[pc] = _compiled[name].address
    return out


def all_entries() -> list[str]:
    return sorted(set(_entry_of_opcode().values()))
