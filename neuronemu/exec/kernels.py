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

A semantics function may be split into pieces (its module's ``PIECES``): each static
instruction gets the piece that covers it, chosen from what the program says of it (dtypes,
operator, layout), so a kernel whose copies all keep their dtype never compiles the casting
copy. A piece that covers an instruction only when its run-time addresses allow returns
``STATUS_FALLBACK``, having written nothing, and the loop calls the instruction's fallback
piece instead (``choose``).

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


@functools.cache
def _chooser(entry: str):
    """How the kernel of semantics function ``entry`` is chosen per static instruction: None
    when the function is one unit, else its module's ``<function>_pieces`` (semantics
    modules' ``PIECES``; docs/engine.md, "Pieces")."""
    module, function = entry.split("__", 1)
    semantics = importlib.import_module(f"neuronemu.semantics.{module}")
    if function not in getattr(semantics, "PIECES", {}):
        return None
    return getattr(semantics, f"{function}_pieces")


Pair = tuple[str | None, str | None]


def choose(instrs: np.ndarray, ops: np.ndarray, yields) -> tuple[list[Pair], np.ndarray]:
    """Per static instruction, (kernel, fallback): the unit that runs it and the unit it falls
    back to when its kernel finds, at run time, that the instruction is outside what it covers
    (None: it cannot be). Returned as the distinct pairs and an int array [n] indexing them
    (programs run to a million instructions); an instruction the interpreter hands to a driver
    (``yields[pc]``) gets (None, None)."""
    entries = _entry_of_opcode()
    opcodes = np.asarray(instrs[:, L.I_OPCODE])
    skip = np.asarray(yields, dtype=bool)
    pairs: list[Pair] = [(None, None)]
    which = np.zeros(len(opcodes), dtype=np.int64)
    for op in np.unique(opcodes[~skip]):
        rows = np.flatnonzero((opcodes == op) & ~skip)
        entry = entries[int(op)]
        chooser = _chooser(entry)
        if chooser is None:
            which[rows] = _index(pairs, (entry, None))
            continue
        module = entry.split("__", 1)[0]
        choices, index = chooser(instrs[rows], ops)
        codes = np.zeros(len(choices), dtype=np.int64)
        for c in np.unique(index):   # only the choices taken: each pair is compiled
            kernel, fallback = choices[c]
            codes[c] = _index(pairs, (f"{module}__{kernel}",
                                      f"{module}__{fallback}" if fallback else None))
        which[rows] = codes[index]
    return pairs, which


def _index(pairs: list, pair) -> int:
    if pair not in pairs:
        pairs.append(pair)
    return pairs.index(pair)


def kernel_addresses(instrs: np.ndarray, ops: np.ndarray, yields) -> np.ndarray:
    """int64 [n, 2]: the address of each static instruction's kernel and of its fallback (0:
    an instruction the interpreter hands to a driver, ``yields[pc]``; a kernel without
    fallback), compiling what is missing."""
    pairs, which = choose(instrs, ops, yields)
    return _addresses(tuple(pairs), which)


def program_addresses(instrs: np.ndarray, ops: np.ndarray, yields: np.ndarray) -> np.ndarray:
    """``kernel_addresses``, kept for the last few programs (keyed by the units chosen): the
    ranks of a multi-chip run share one table, and nothing is written onto the program."""
    pairs, which = choose(instrs, ops, yields)
    return _kept(tuple(pairs), which.tobytes())


@functools.lru_cache(maxsize=16)
def _kept(pairs: tuple, which: bytes) -> np.ndarray:
    return _addresses(pairs, np.frombuffer(which, dtype=np.int64))


def cold_entries(instrs: np.ndarray, ops: np.ndarray, yields) -> list[str]:
    """The kernels a program uses that are neither loaded in this process nor in the cache
    (in order of first use)."""
    pairs, which = choose(instrs, ops, yields)
    used, first = np.unique(which, return_index=True)
    names = [n for code in used[np.argsort(first)] for n in pairs[code] if n is not None]
    return [n for n in dict.fromkeys(names) if not is_ready(n)]


def is_ready(entry: str) -> bool:
    """Whether kernel ``entry`` is loaded in this process or can be loaded from the cache."""
    from neuronemu.compiled import compiling

    return entry in _compiled or compiling.is_cached(_made(entry))


@functools.cache
def _made(entry: str):
    return _make(entry)


def _addresses(pairs, which: np.ndarray) -> np.ndarray:
    ensure_compiled(n for pair in pairs for n in pair if n is not None)
    table = np.zeros((len(pairs), 2), dtype=np.int64)
    for code, pair in enumerate(pairs):
        for k, name in enumerate(pair):
            if name is not None:
                table[code, k] = _compiled[name].address
    return table[which]


def all_entries() -> list[str]:
    """Every unit a program can use: each semantics function's, or its pieces'."""
    out = set()
    for entry in set(_entry_of_opcode().values()):
        module, function = entry.split("__", 1)
        if _chooser(entry) is None:
            out.add(entry)
        else:
            semantics = importlib.import_module(f"neuronemu.semantics.{module}")
            out.update(f"{module}__{piece}" for piece in semantics.PIECES[function])
    return sorted(out)
