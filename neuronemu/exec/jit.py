"""The one numba decorator every jitted function in neuronemu uses.

Why one wrapper: caching must be switchable in one place (``NEURONEMU_NUMBA_CACHE=0``) because
numba's on-disk cache has known failure modes on some clusters; ``error_model="numpy"`` makes
float division by zero give inf/NaN as the hardware does instead of raising; ``fastmath`` stays
off because reassociation or FMA contraction would break bit-exact, order-defined numerics.

Why a cache directory keyed by a hash of the package sources: numba invalidates a cached function
only when *its own* file changes, not when a function it calls from another file does, so an edit
to a semantics module would otherwise leave the cached dispatcher running old code.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

_CACHE = os.environ.get("NEURONEMU_NUMBA_CACHE", "1") != "0"
_BOUNDSCHECK = os.environ.get("NEURONEMU_BOUNDSCHECK", "0") == "1"


def _source_hash() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """Where compiled kernels are cached (``NUMBA_CACHE_DIR`` wins when the user sets it)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuronemu" / "numba" / _source_hash()


if _CACHE and not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = str(cache_dir())


def jit(fn=None, **overrides):
    """``numba.njit`` with neuronemu's fixed options; usable as ``@jit`` or ``@jit(inline="always")``."""
    options = {"cache": _CACHE, "error_model": "numpy", "fastmath": False, "nogil": True}
    if _BOUNDSCHECK:
        options["boundscheck"] = True
    options.update(overrides)
    if fn is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(fn)
