"""Where numba's compiled code is cached: one directory per version of the compiled sources,
found by content, not by path (docs/engine.md).

Why a directory keyed by a hash of the compiled sources: numba invalidates a cached function
only when *its own* file changes, not when a function it calls from another file does, so an
edit to a semantics module would otherwise leave a cached kernel running old code. Why a locator
of our own: numba names cache directories after the absolute path of the source, so the same
sources in a second checkout, an installed copy or a CI clone would compile everything again;
ours names them after the package-relative path under the content hash.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
from pathlib import Path

import numba
from numba.core.caching import CacheImpl, _CacheLocator, _SourceFileBackedLocatorMixin

CACHE = os.environ.get("NEURONEMU_NUMBA_CACHE", "1") != "0"
BOUNDSCHECK = os.environ.get("NEURONEMU_BOUNDSCHECK", "0") == "1"
_KEEP_OLD_CACHES = 2   # older source versions kept beside the current one (other checkouts)

# The packages whose code is compiled or whose module constants compiled code reads; an edit
# elsewhere (assembler, CLI, API) leaves the compiled code valid, so it does not rebuild the cache.
_COMPILED_PACKAGES = ("compiled", "machine", "exec", "semantics", "numerics", "timing", "isa")
_PACKAGE = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def source_hash() -> str:
    """Hash of the compiled packages' sources, the ISA tables, numba's version and the build
    flags: the name of the cache directory, so no edit can leave stale compiled code in use."""
    from neuronemu.isa.resources import isa_dir

    digest = hashlib.sha256(f"{numba.__version__}|{sys.version_info[:2]}".encode())
    digest.update(b"boundscheck" if BOUNDSCHECK else b"")
    files = [p for sub in _COMPILED_PACKAGES for p in (_PACKAGE / sub).rglob("*.py")]
    for path in sorted(files):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    for path in sorted(isa_dir().glob("*.toml")):  # tables become constants of compiled code
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """The directory holding one cache per source version (``$NUMBA_CACHE_DIR/neuronemu`` when
    the user sets NUMBA_CACHE_DIR, so even then a source change gets a fresh directory)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "neuronemu"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuronemu" / "numba"


def cache_dir() -> Path:
    """Where this source version's compiled code is cached: keyed by content, not by where the
    package lives, so a reinstall, a moved checkout or a fresh clone of one commit share it."""
    return cache_root() / source_hash()


def prune_old_caches() -> list[Path]:
    """Delete the caches of source versions other than this one and the most recently used
    few (called when something is about to be compiled, so never on the fast path)."""
    root, current = cache_root(), cache_dir()
    if not root.is_dir():
        return []
    others = [p for p in root.iterdir() if p.is_dir() and p != current and len(p.name) == 16]
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    removed = []
    for path in others[_KEEP_OLD_CACHES:]:
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


class _ContentLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """numba cache locator for neuronemu's modules: the cache path is the package-relative
    directory under ``cache_dir()``; numba's own stamp (sha256 of the file) and index key (types,
    CPU) still decide whether an entry fits."""

    def __init__(self, py_func, py_file, relative: str):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(cache_dir() / relative)

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            relative = Path(py_file).resolve().parent.relative_to(_PACKAGE)
        except (ValueError, OSError):
            return None   # not one of neuronemu's modules: numba's own locators decide
        self = cls(py_func, py_file, "_".join(("neuronemu", *relative.parts)))
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


if CACHE and _ContentLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.insert(0, _ContentLocator)
