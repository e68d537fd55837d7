"""Where numba's compiled code is cached: one folder per compiled module and version of the
sources it depends on, found by content, not by path (docs/engine.md, "Where it is cached").

Why a folder keyed by a hash of the sources a module depends on (neuronemu.compiled.sources):
numba invalidates a cached function only when *its own* file changes, not when a function it
calls from another file does, so an edit to a semantics module would otherwise leave a cached
kernel running old code; and a hash of the module's own imports, not of every compiled package,
lets an edit recompile only the code that can have changed. Why a locator of our own: numba names
cache directories after the absolute path of the source, so the same sources in a second
checkout, an installed copy or a CI clone would compile everything again; ours names them after
the module and the hash, under a folder for numba's and Python's versions and the build flags.

Why checksums: numba trusts its cache files. A damaged one (a disk error, a copy cut short, a
stray edit) made every later run fail the same way -- an unpickling traceback, LLVM's bare abort,
a segfault in code loaded from garbage -- with nothing pointing at the cache (issue 30 item 10).
Every file this cache writes carries a sha256 of its content; a file that does not match is
reported on stderr, removed, and its unit compiled again.

Why a fallback directory: a read-only HOME or cache (a container image, a shared install) made
numba give up with a RuntimeError, or quietly compile everything into the package directory
(item 11). A read-only cache is used as it is, for what it holds; what it lacks is compiled into a
per-user temporary directory, with a notice saying so.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import os
import pickle
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import numba
from numba.core import caching
from numba.core.caching import CacheImpl, _CacheLocator, _SourceFileBackedLocatorMixin

from neuronemu import notices
from neuronemu.compiled import sources

CACHE = os.environ.get("NEURONEMU_NUMBA_CACHE", "1") != "0"
BOUNDSCHECK = os.environ.get("NEURONEMU_BOUNDSCHECK", "0") == "1"
_KEEP_OLD_CACHES = 2   # older versions kept beside the current one (other checkouts, branches)
_LAYOUT = b"per-module 1"   # how the folders are laid out: a change starts a fresh cache


@functools.lru_cache(maxsize=1)
def toolchain_key() -> str:
    """Hash of numba's and Python's versions, the build flags and the cache's layout: the name of
    the folder holding one folder per compiled module (``cache_dir``)."""
    digest = hashlib.sha256(f"{numba.__version__}|{sys.version_info[:2]}".encode())
    digest.update(b"boundscheck" if BOUNDSCHECK else b"")
    digest.update(_LAYOUT)
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """The directory holding one cache per source version (``$NUMBA_CACHE_DIR/neuronemu`` when
    the user sets NUMBA_CACHE_DIR, so even then a source change gets a fresh directory)."""
    return _cache_root(os.environ.get("NUMBA_CACHE_DIR") or "",
                       os.environ.get("XDG_CACHE_HOME") or "", os.path.expanduser("~"))


@functools.lru_cache(maxsize=8)
def _cache_root(numba_dir: str, xdg: str, home: str) -> Path:
    # Keyed by the environment it reads (tests and users may change it): numba makes a cache
    # object per jitted function (about 200 at import), each asking for this several times.
    if numba_dir:
        return Path(numba_dir) / "neuronemu"
    return Path(xdg or os.path.join(home, ".cache")) / "neuronemu" / "numba"


def cache_dir() -> Path:
    """Where this toolchain's compiled code is cached (one folder per compiled module below):
    keyed by content, not by where the package lives, so a reinstall, a moved checkout or a
    fresh clone of one commit share it."""
    return cache_root() / toolchain_key()


def unit_folder(module: str) -> str:
    """The folder, relative to ``cache_dir``, of module ``module``'s compiled code: the module's
    name, then the hash of the sources it depends on."""
    return f"{module}/{sources.unit_key(module)}"


def prune_old_caches() -> list[Path]:
    """Delete the caches of other toolchains, and of each module's older source versions, but
    the most recently used few (called when something is about to be compiled, so never on
    the fast path)."""
    root, current = cache_root(), cache_dir()
    if not root.is_dir():
        return []
    removed = _keep_newest([p for p in root.iterdir()
                            if p.is_dir() and p != current and len(p.name) == 16])
    if current.is_dir():
        for module in current.iterdir():
            if module.is_dir() and module.name in sources.module_files():
                mine = unit_folder(module.name).rsplit("/", 1)[1]
                removed += _keep_newest([p for p in module.iterdir()
                                         if p.is_dir() and p.name != mine])
    return removed


def _keep_newest(others: list[Path]) -> list[Path]:
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for path in others[_KEEP_OLD_CACHES:]:
        shutil.rmtree(path, ignore_errors=True)
    return others[_KEEP_OLD_CACHES:]


def fallback_root() -> Path:
    """Where compiled code goes when the cache cannot be written: a per-user directory under the
    system's temporary directory (kept between runs until the system cleans it)."""
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"neuronemu-{uid}" / "numba"


def fallback_dir() -> Path:
    return fallback_root() / toolchain_key()


def fallback_is_safe() -> bool:
    """Whether the fallback's top directory is this user's alone. Cache files are unpickled,
    and an attacker who made ``/tmp/neuronemu-<uid>`` first could plant code in them."""
    top = fallback_root().parent
    try:
        top.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(top)
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return stat.S_ISDIR(info.st_mode) and mine and not info.st_mode & 0o022


@functools.cache
def writable(folder: str) -> bool:
    """Whether new files can be created in ``folder`` (tried, as numba does: permission bits
    say nothing about a read-only mount, and nothing at all to root)."""
    try:
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def write_dir() -> Path:
    """Where code compiled now is cached: the cache, or the fallback when it is read-only."""
    current = cache_dir()
    if current.is_dir() and writable(str(current)):
        return current
    try:
        current.mkdir(parents=True, exist_ok=True)
        if writable(str(current)):
            return current
    except OSError:
        pass
    return fallback_dir()


_told: set[str] = set()


def _tell_once(key: str, text: str) -> None:
    if key not in _told:
        _told.add(key)
        notices.notify(text)


def _tell_fallback(why: str) -> None:
    _tell_once("fallback", notices.cache_fallback(str(cache_dir()), why, str(fallback_dir())))


# ----------------------------------------------------------------------------- checked files

_MAGIC = b"neuronemu numba cache 1\n"
_DIGEST = hashlib.sha256().digest_size


class DamagedCacheFile(Exception):
    """A cache file whose checksum does not match its content (or that does not parse)."""


def seal(payload: bytes) -> bytes:
    """The bytes written for ``payload``: a marker, its sha256, then the payload."""
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def unseal(blob: bytes, path: str) -> bytes:
    """The payload of a sealed file; ``DamagedCacheFile`` if it is not exactly what was sealed."""
    head = len(_MAGIC) + _DIGEST
    payload = blob[head:]
    if (len(blob) < head or not blob.startswith(_MAGIC)
            or hashlib.sha256(payload).digest() != blob[len(_MAGIC):head]):
        raise DamagedCacheFile(path)
    return payload


def _is_ours(folder: str) -> bool:
    return _is_under(folder, cache_root(), fallback_root())


@functools.lru_cache(maxsize=64)
def _is_under(folder: str, *roots: Path) -> bool:
    # cached: asked once per jitted function, for a handful of folders
    path = Path(folder)
    return any(root in path.parents for root in roots)


@functools.lru_cache(maxsize=64)
def _spare_folder(cache_path: str, current: Path, spare_root: Path) -> str | None:
    """The fallback folder mirroring ``cache_path`` (a folder of the cache ``current``)."""
    if not cache_path.startswith(str(current)):
        return None
    spare = str(spare_root / os.path.relpath(cache_path, current))
    return spare if spare != cache_path else None


class CheckedCacheFile(caching.IndexDataCacheFile):
    """numba's index + data files, for neuronemu's caches sealed with a checksum and layered:
    read from the cache, then from the fallback; written to the first writable of the two.
    Other packages' numba caches keep numba's own behaviour."""

    def __init__(self, cache_path, filename_base, source_stamp):
        super().__init__(cache_path, filename_base, source_stamp)
        self._base = filename_base
        self._ours = _is_ours(cache_path)
        self._folders = [cache_path]
        spare = _spare_folder(cache_path, cache_dir(), fallback_dir()) if self._ours else None
        if spare is not None:
            self._folders.append(spare)

    # numba's entry points ----------------------------------------------------------------

    def load(self, key):
        if not self._ours:
            return super().load(key)
        for i, folder in enumerate(self._folders):
            if i > 0 and not fallback_is_safe():
                continue
            overloads = self._index_of(folder)
            name = overloads.get(key)
            if name is None:
                continue
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    return pickle.loads(unseal(f.read(), path))
            except OSError:
                continue   # removed while the index still names it: compile it again
            except Exception:   # noqa: BLE001 - any undecodable content is damage
                self._damaged(folder, path)
        return None

    def save(self, key, data):
        if not self._ours:
            return super().save(key, data)
        folder = self._writable_folder()
        if folder is None:
            return   # nowhere to write: the code runs, uncached
        # Locked: processes compiling at once (parallel compile jobs, pytest-xdist workers, MPI
        # ranks) would otherwise read the same index, pick the same data file name for two
        # signatures and leave an index naming the other one's code. The data is written
        # before the index that names it.
        with _locked(os.path.join(folder, self._index_name + ".lock")):
            overloads = self._index_of(folder)
            name = overloads.get(key)
            fresh = name is None
            if fresh:
                taken = set(overloads.values())
                name = next(n for n in (self._data_name(i) for i in itertools.count(1))
                            if n not in taken)
                overloads[key] = name
            self._write(folder, name, self._dump(data))
            if fresh:
                self._write(folder, self._index_name, self._index_bytes(overloads))

    def flush(self):
        if not self._ours:
            return super().flush()
        folder = self._writable_folder()
        if folder is not None:
            with _locked(os.path.join(folder, self._index_name + ".lock")):
                self._write(folder, self._index_name, self._index_bytes({}))

    def has_index(self) -> bool:
        """Whether any layer holds an index for this function (a load may succeed)."""
        return any(os.path.exists(os.path.join(f, self._index_name)) for f in self._folders)

    # layers ------------------------------------------------------------------------------

    def _writable_folder(self) -> str | None:
        for i, folder in enumerate(self._folders):
            if i > 0 and not fallback_is_safe():
                continue
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError:
                continue
            if writable(folder):
                if i > 0:
                    _tell_fallback("is read-only (its compiled code is still used)")
                return folder
        return None

    def _index_of(self, folder: str) -> dict:
        path = os.path.join(folder, self._index_name)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            return {}
        try:
            stream = io.BytesIO(unseal(blob, path))
            version = pickle.load(stream)
            if version != self._version:
                return {}
            stamp, overloads = pickle.loads(stream.read())
        except Exception:   # noqa: BLE001 - any undecodable content is damage
            self._damaged(folder, path)
            return {}
        return overloads if stamp == self._source_stamp else {}

    def _index_bytes(self, overloads: dict) -> bytes:
        return pickle.dumps(self._version, protocol=-1) + self._dump(
            (self._source_stamp, overloads))

    def _write(self, folder: str, name: str, payload: bytes) -> None:
        with self._open_for_write(os.path.join(folder, name)) as f:
            f.write(seal(payload))

    def _damaged(self, folder: str, path: str) -> None:
        """Say so, and remove this function's files from ``folder`` so it compiles afresh."""
        unit = self._base.split("-")[0]
        removed = []
        for name in [self._index_name] + [n for n in _listdir(folder)
                                          if n.startswith(self._base + ".")
                                          and n.endswith(".nbc")]:
            try:
                os.unlink(os.path.join(folder, name))
                removed.append(name)
            except OSError:
                pass
        notices.notify(notices.cache_damaged(path, unit, bool(removed)))


@contextlib.contextmanager
def _locked(path: str):
    """An exclusive lock on ``path`` (created if missing) while the block runs; no lock where
    the system has no flock or the file cannot be opened (a read-only fallback is not written)."""
    try:
        import fcntl
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


# ----------------------------------------------------------------------------- locator

@functools.lru_cache(maxsize=256)
def _unit_of(py_file: str) -> str | None:
    """The cache folder of a source file's compiled code (``neuronemu.exec.interpreter/<hash>``),
    or None outside the compiled packages (cached: one file holds many jitted functions)."""
    module = sources.module_of(py_file)
    return None if module is None else unit_folder(module)


# Cache folders that passed the strict check (created, a file can be made in them) in this
# process: the check creates and deletes a file, once per jitted function otherwise. numba runs
# ensure_cache_path again before every save, so a folder that stops being writable is still seen.
_usable_paths: set[str] = set()


class _ContentLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """numba cache locator for neuronemu's compiled modules: the cache path is the module's
    ``unit_folder`` under ``cache_dir()``; numba's own stamp (sha256 of the file) and index key (types,
    CPU) still decide whether an entry fits. A cache that cannot be created at all is replaced
    by the fallback directory; one that exists but is read-only is kept, to read from."""

    def __init__(self, py_func, py_file, relative: str):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._relative = relative
        self._cache_path = str(cache_dir() / relative)

    def get_cache_path(self):
        return self._cache_path

    def ensure_cache_path(self):
        """numba calls this before every save: a read-only cache that exists is not an error
        (CheckedCacheFile writes to the fallback instead)."""
        try:
            super().ensure_cache_path()
        except OSError:
            if not os.path.isdir(self._cache_path):
                raise

    @classmethod
    def from_function(cls, py_func, py_file):
        relative = _unit_of(py_file)
        if relative is None:
            return None   # not one of neuronemu's compiled modules: numba's own locators decide
        self = cls(py_func, py_file, relative)
        if self._cache_path in _usable_paths:
            return self
        try:
            _CacheLocator.ensure_cache_path(self)   # the strict check: exists and writable
            _usable_paths.add(self._cache_path)
            return self
        except OSError as error:
            if os.path.isdir(self._cache_path):
                return self   # read-only: CheckedCacheFile reads it, writes to the fallback
            reason = error.strerror or str(error)
        if not fallback_is_safe():
            return None
        self._cache_path = str(fallback_dir() / self._relative)
        try:
            _CacheLocator.ensure_cache_path(self)
        except OSError:
            return None
        _tell_fallback(f"cannot be created ({reason})")
        return self


if CACHE and _ContentLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.insert(0, _ContentLocator)
    # numba's Cache builds its file object by this module-level name; ours behaves as numba's
    # for every cache outside neuronemu's directories
    caching.IndexDataCacheFile = CheckedCacheFile
