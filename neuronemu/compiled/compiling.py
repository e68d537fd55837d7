"""Say when numba compiles, and count the time it takes.

A compile on a new machine or after an upgrade takes 20 s to minutes; a user must
see why the first run is slow (one line on stderr, once per process: never stdout, which
``--json`` owns) and the run's report must not count it as run time. numba emits a
``numba:compile`` event around every real compile (not around cache loads), so one listener
covers every jitted function; the instruction kernels (numba cfuncs, which emit no event) are
announced and timed by ``neuronemu.exec.kernels`` through ``announce`` and ``add_seconds``.

``NEURONEMU_COMPILE_LOG=FILE`` appends a line per unit compiled (not loaded) to FILE: the
function or kernel, and the cache it went to. CI sets it for the test suite after ``neuronemu
warm`` and fails if the suite compiled anything in the warm cache (warm must be complete).
"""

from __future__ import annotations

import os
import time

from numba.core import event

_state = {"depth": 0, "start": 0.0, "seconds": 0.0, "announced": False, "ours": False}


def seconds() -> float:
    """Seconds this process has spent compiling neuronemu code so far."""
    return _state["seconds"]


def add_seconds(value: float) -> None:
    _state["seconds"] += value


def announce(what: str) -> None:
    """One line on stderr before a compile (once per process; later compiles stay quiet)."""
    if _state["announced"]:
        return
    _state["announced"] = True
    from neuronemu import notices
    from neuronemu.compiled.cache import prune_old_caches, write_dir

    prune_old_caches()
    notices.notify(notices.compiling(what, str(write_dir())))


def log(unit: str) -> None:
    """Append ``unit`` to the compile log, if ``NEURONEMU_COMPILE_LOG`` names one."""
    path = os.environ.get("NEURONEMU_COMPILE_LOG")
    if not path:
        return
    from neuronemu.compiled.cache import CACHE, cache_dir

    where = str(cache_dir()) if CACHE else "(no cache)"
    try:
        with open(path, "a") as f:
            f.write(f"{unit}\t{where}\t{os.getpid()}\n")
    except OSError:
        pass


class _Listener(event.Listener):
    def on_start(self, ev):
        if _state["depth"] == 0:
            dispatcher = (ev.data or {}).get("dispatcher")
            function = getattr(dispatcher, "py_func", None)
            module = getattr(function, "__module__", "") or ""
            _state["ours"] = module.startswith("neuronemu")   # not a caller's own numba code
            _state["start"] = time.perf_counter()
            if _state["ours"]:
                announce("the code this kernel needs")
                log(f"{module}.{getattr(function, '__qualname__', '?')}")
        _state["depth"] += 1

    def on_end(self, ev):
        _state["depth"] -= 1
        if _state["depth"] == 0 and _state["ours"]:
            _state["seconds"] += time.perf_counter() - _state["start"]


_LISTENER = _Listener()
event.register("numba:compile", _LISTENER)


def is_cached(dispatcher) -> bool:
    """Whether a jitted function (or kernel) has an on-disk cache index to load from."""
    if getattr(dispatcher, "overloads", None):
        return True   # already compiled or loaded in this process
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if hasattr(cache_file, "has_index"):   # neuronemu's layered cache (compiled/cache.py)
        return cache_file.has_index()
    index = getattr(cache_file, "_index_path", None)
    return bool(index) and os.path.exists(index)
