"""The one numba decorator every jitted function in neuronemu uses.

Why one wrapper: caching must be switchable in one place (``NEURONEMU_NUMBA_CACHE=0``) because
numba's on-disk cache has known failure modes on some clusters; ``error_model="numpy"`` makes
float division by zero give inf/NaN as the hardware does instead of raising; ``fastmath`` stays
off because reassociation or FMA contraction would break bit-exact, order-defined numerics.
Where the cache lives is neuronemu.compiled.cache; importing this module also installs the compile
reporter (neuronemu.compiled.compiling).
"""

from __future__ import annotations

import numba

from neuronemu.compiled import compiling as _compiling  # noqa: F401  (reports compiles)
from neuronemu.compiled.cache import BOUNDSCHECK, CACHE


def options() -> dict:
    """The compile options every neuronemu function gets."""
    opts = {"cache": CACHE, "error_model": "numpy", "fastmath": False, "nogil": True}
    if BOUNDSCHECK:
        opts["boundscheck"] = True
    return opts


def jit(fn=None, **overrides):
    """``numba.njit`` with neuronemu's fixed options; usable as ``@jit`` or ``@jit(inline="always")``."""
    opts = {**options(), **overrides}
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)
