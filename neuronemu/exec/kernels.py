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

A semantics function may have narrow kernels (its module's ``NARROW``): one of its paths
alone, for the instructions a plain-Python ``<narrow>_covers`` says it covers, judged from what
the program says of them (dtypes, operator, layout). A program whose instructions of that
function are all covered by one compiles the narrowest such kernel and not the function's
general paths (``choose``).

The calling convention is neuronemu.machine.abi.
"""

from __future__ import annotations

import functools
import importlib
import time
import weakref

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.machine.abi import SIGNATURE

# ----------------------------------------------------------------------------- compiling

_compiled: dict[str, object] = {}


def _make(entry: str):
    from numba.core import sigutils

    from neuronemu.compiled.cache import CACHE
    from neuronemu.compiled.jit import Kernel, options

    opts = {k: v for k, v in options().items() if k in ("error_model", "fastmath", "boundscheck")}
    cfunc = Kernel(wrapper(entry), sigutils.normalize_signature(SIGNATURE), locals={},
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


@functools.cache
def _narrow(entry: str) -> tuple:
    """The narrow kernels of semantics function ``entry`` (its module's ``NARROW``, one name or
    several, narrowest first; docs/engine.md, "Narrow kernels"), as (kernel, its module's
    ``<narrow>_covers``) pairs; () when it has none."""
    module, function = entry.split("__", 1)
    semantics = importlib.import_module(f"neuronemu.semantics.{module}")
    narrow = getattr(semantics, "NARROW", {}).get(function, ())
    names = (narrow,) if isinstance(narrow, str) else narrow
    return tuple((f"{module}__{name}", getattr(semantics, f"{name}_covers")) for name in names)


def choose(instrs: np.ndarray, ops: np.ndarray, yields) -> tuple[list[str | None], np.ndarray]:
    """The unit each static instruction runs, as the distinct names and an int array [n]
    indexing them (programs run to a million instructions); None for an instruction the
    interpreter hands to a driver (``yields[pc]``). A semantics function with a narrow kernel
    that covers every instruction of the program that uses it gets the narrowest such kernel,
    else all get the function's own: one unit per function and program, so a kernel with some
    fp32 and some bf16 tiles compiles what it compiled before, not two units."""
    entries = _entry_of_opcode()
    opcodes = np.asarray(instrs[:, L.I_OPCODE])
    skip = np.asarray(yields, dtype=bool)
    used = np.unique(opcodes[~skip])
    names: list[str | None] = [None]
    which = np.zeros(len(opcodes), dtype=np.int64)
    for entry in dict.fromkeys(entries[int(op)] for op in used):
        rows = np.flatnonzero(np.isin(opcodes, [op for op in used if entries[int(op)] == entry])
                              & ~skip)
        name = entry
        for kernel, covers in _narrow(entry):
            if covers(instrs[rows], ops).all():
                name = kernel
                break
        names.append(name)
        which[rows] = len(names) - 1
    return names, which


def kernel_addresses(instrs: np.ndarray, ops: np.ndarray, yields) -> np.ndarray:
    """int64 [n]: the address of each static instruction's kernel (0 for instructions the
    interpreter hands to a driver: ``yields[pc]``), compiling what is missing."""
    names, which = _chosen(instrs, ops, yields)
    return _addresses(tuple(names), which)


_recent: dict[tuple, tuple] = {}
"""(id(instrs), id(ops), yields) -> (weak references to both, ``choose``'s answer): a program
run again (a benchmark, a test, the ranks of a multi-chip run), or asked first which kernels are
cold, skips ``choose`` (~0.13 ms of numpy even for four instructions). Lowered programs are not
changed after assembly."""


def _chosen(instrs: np.ndarray, ops: np.ndarray, yields) -> tuple[list[str | None], np.ndarray]:
    key = (id(instrs), id(ops), np.asarray(yields, dtype=bool).tobytes())
    hit = _recent.get(key)
    if hit is not None and hit[0]() is instrs and hit[1]() is ops:
        return hit[2]
    answer = choose(instrs, ops, yields)
    if len(_recent) >= 16:
        _recent.pop(next(iter(_recent)))
    _recent[key] = (weakref.ref(instrs), weakref.ref(ops), answer)
    return answer


def program_addresses(instrs: np.ndarray, ops: np.ndarray, yields: np.ndarray) -> np.ndarray:
    """``kernel_addresses``, kept for the last few programs (keyed by the units chosen): the
    ranks of a multi-chip run share one table, and nothing is written onto the program."""
    names, which = _chosen(instrs, ops, yields)
    return _kept(tuple(names), which.tobytes())


@functools.lru_cache(maxsize=16)
def _kept(names: tuple, which: bytes) -> np.ndarray:
    return _addresses(names, np.frombuffer(which, dtype=np.int64))


def cold_entries(instrs: np.ndarray, ops: np.ndarray, yields) -> list[str]:
    """The kernels a program uses that are neither loaded in this process nor in the cache
    (in order of first use)."""
    names, which = _chosen(instrs, ops, yields)
    used, first = np.unique(which, return_index=True)
    ordered = [names[code] for code in used[np.argsort(first)]]
    return [n for n in ordered if n is not None and not is_ready(n)]


def is_ready(entry: str) -> bool:
    """Whether kernel ``entry`` is loaded in this process or can be loaded from the cache."""
    from neuronemu.compiled import compiling

    return entry in _compiled or compiling.is_cached(_made(entry))


@functools.cache
def _made(entry: str):
    return _make(entry)


def _addresses(names, which: np.ndarray) -> np.ndarray:
    ensure_compiled(n for n in names if n is not None)
    table = np.array([0 if n is None else _compiled[n].address for n in names], dtype=np.int64)
    return table[which]


def all_entries() -> list[str]:
    """Every unit a program can use: each semantics function's, and its narrow kernels."""
    out = set()
    for entry in set(_entry_of_opcode().values()):
        out.add(entry)
        out.update(kernel for kernel, _ in _narrow(entry))
    return sorted(out)
