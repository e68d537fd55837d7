"""The one numba decorator every jitted function in neuronemu uses.

Why one wrapper: caching must be switchable in one place (``NEURONEMU_NUMBA_CACHE=0``) because
numba's on-disk cache has known failure modes on some clusters; ``error_model="numpy"`` makes
float division by zero give inf/NaN as the hardware does instead of raising; ``fastmath`` stays
off because reassociation or FMA contraction would break bit-exact, order-defined numerics.
Where the cache lives is neuronemu.compiled.cache; importing this module also installs the compile
reporter (neuronemu.compiled.compiling) and the front-end speed-ups (neuronemu.compiled.frontend).

Why a dispatcher of our own: numba compiles a jitted function called from jitted code once per
argument *type* signature, and a constant argument has a type of its own (``Literal[int](0)``), so
``binary_rows(op, x, 0, 1, 0, ...)`` and ``binary_rows(op, x, p, step, col, ...)`` were two full
compiles of the function and everything it calls -- eight of binary_rows in one kernel. Calls
between neuronemu's functions are typed with the constants' plain types instead (int64, bool), one
compile per function and array signature. Nothing here asks for literal arguments
(``numba.literally``); LLVM still sees the constants where it inlines a call. First run of
flash_attention_causal from an empty cache: 119 -> 98 s of compiling (CPU).
"""

from __future__ import annotations

from numba.core import config, types
from numba.core.ccallback import CFunc
from numba.core.registry import CPUDispatcher

from neuronemu.compiled import compiling as _compiling  # noqa: F401  (reports compiles)
from neuronemu.compiled import frontend, linking
from neuronemu.compiled.cache import BOUNDSCHECK, CACHE

frontend.install()   # numba's front end without its repeated work (compiled/frontend.py)


def options() -> dict:
    """The compile options every neuronemu function gets."""
    opts = {"cache": CACHE, "error_model": "numpy", "fastmath": False, "nogil": True}
    if BOUNDSCHECK:
        opts["boundscheck"] = True
    return opts


class Dispatcher(CPUDispatcher):
    """numba's CPU dispatcher, compiling calls from jitted code for their arguments' plain types:
    one specialisation per function and array signature, not one per pattern of constants; a
    large function's callers call its code rather than copy it (neuronemu.compiled.linking)."""

    def get_call_template(self, args, kws):
        args = tuple(types.unliteral(a) for a in args)
        kws = {name: types.unliteral(a) for name, a in kws.items()}
        return super().get_call_template(args, kws)

    def add_overload(self, cres):
        super().add_overload(cres)
        linking.share(self, cres)


class Kernel(CFunc):
    """numba's C callback, whose cached code also records what it calls by symbol
    (neuronemu.compiled.linking)."""

    def _compile_uncached(self):
        cres = super()._compile_uncached()
        cres.library._ensure_finalized()   # numba finalises a C callback's code only later
        linking.record_needs(cres.library, cres.reload_init)
        return cres


def _njit(fn, opts: dict):
    # numba.njit's own steps (numba.core.decorators._jit) with our dispatcher class
    if config.DISABLE_JIT:
        return fn
    opts = dict(opts)
    cache = opts.pop("cache", False)
    dispatcher = Dispatcher(py_func=fn, locals={}, targetoptions={**opts, "nopython": True})
    if cache:
        dispatcher.enable_caching()
    return dispatcher


def jit(fn=None, **overrides):
    """``numba.njit`` with neuronemu's fixed options; usable as ``@jit`` or ``@jit(inline="always")``."""
    opts = {**options(), **overrides}
    if fn is None:
        return lambda f: _njit(f, opts)
    return _njit(fn, opts)


def inlined(dispatcher: Dispatcher) -> Dispatcher:
    """A copy of jitted function ``dispatcher`` that numba inlines into its caller at the IR level
    (``inline="always"``): an instruction kernel's wrapper calls its semantics function through
    one, so the function is typed and compiled once, inside the kernel. Called as a function of
    its own, numba would compile it separately too, then link it into the kernel and optimise and
    generate machine code for it a second time (~3 s for scalar.activation on a first run)."""
    # (under NUMBA_DISABLE_JIT ``jit`` returns the Python function itself: take it as it is)
    return jit(getattr(dispatcher, "py_func", dispatcher), inline="always", cache=False)
