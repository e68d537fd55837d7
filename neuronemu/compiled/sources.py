"""Which source files a compiled module's code depends on, and a hash of them: the key of the
module's folder in the compiled-code cache (docs/engine.md, "The compiled-code cache").

Why per module: numba checks a cached function only against the file it is defined in, yet a
cached function holds the compiled code of everything it calls, from other modules too. One hash
of all compiled packages made any edit recompile everything (about 4 minutes of CPU); a hash of
the module and of the modules it imports, directly or through others, recompiles only what can
have changed -- an edit to ``semantics/scalar.py`` recompiles the Scalar engine's kernels and
nothing else (issue 29).

The import graph is read with a regular expression, not by importing or parsing: about 12 ms for
all of neuronemu, once per process. It over-approximates (an import inside a function, or in a
docstring, counts), which can only make more compile, never reuse stale code. Only modules of
the compiled packages are followed: their constants are what compiled code can read.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from neuronemu.isa.resources import isa_dir

_PACKAGE = Path(__file__).resolve().parents[1]
# The packages whose code is compiled or whose module constants compiled code reads; an edit
# elsewhere (assembler, CLI, API) leaves every compiled unit valid.
COMPILED_PACKAGES = ("compiled", "machine", "exec", "semantics", "numerics", "timing", "isa")

# The cache and the compile reporter decide where compiled code is kept and what is said about
# it, not what it is: left out of every key (and not followed), so editing them recompiles
# nothing. A change to the cache's file format bumps cache._LAYOUT instead; files of an older
# format that slipped through would fail their checksum and be compiled again, never run.
NOT_IN_KEYS = frozenset({"neuronemu.compiled.cache", "neuronemu.compiled.sources",
                         "neuronemu.compiled.compiling"})

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(neuronemu[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
    rb"|import[ \t]+(neuronemu[\w.]*))", re.MULTILINE)
_NAME = re.compile(rb"\w+")


@functools.cache
def module_files() -> dict[str, Path]:
    """Every module of the compiled packages, by dotted name (a package by its ``__init__``)."""
    found = {}
    for sub in COMPILED_PACKAGES:
        for path in (_PACKAGE / sub).rglob("*.py"):
            parts = path.relative_to(_PACKAGE.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


@functools.cache
def _source(module: str) -> bytes:
    return module_files()[module].read_bytes()


def _with_packages(module: str, known: dict) -> list[str]:
    """``module`` and the packages above it whose ``__init__`` importing it runs."""
    parts = module.split(".")
    return [m for m in (".".join(parts[:i]) for i in range(2, len(parts) + 1)) if m in known]


@functools.cache
def imports(module: str) -> frozenset[str]:
    """The compiled-package modules ``module`` imports (by any statement, anywhere in it)."""
    known = module_files()
    found: set[str] = set()
    for base, names, plain in _IMPORT.findall(_source(module)):
        if plain:
            found.update(_with_packages(plain.decode(), known))
            continue
        origin = base.decode()
        found.update(_with_packages(origin, known))
        for name in _NAME.findall(names):
            found.update(_with_packages(f"{origin}.{name.decode()}", known))
    found.discard(module)
    return frozenset(found - NOT_IN_KEYS)


@functools.cache
def closure(module: str) -> tuple[str, ...]:
    """``module`` and every compiled-package module it reaches through imports, sorted."""
    seen, todo = {module}, [module]
    while todo:
        for other in imports(todo.pop()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return tuple(sorted(seen))


def module_of(py_file: str | Path) -> str | None:
    """The dotted name of a compiled-package source file, or None for any other file."""
    try:
        path = Path(py_file).resolve()
    except OSError:
        return None
    return _by_path().get(path)


@functools.cache
def _by_path() -> dict[Path, str]:
    return {path: name for name, path in module_files().items()}


@functools.cache
def _isa_tables() -> tuple[tuple[str, bytes], ...]:
    return tuple((p.name, p.read_bytes()) for p in sorted(isa_dir().glob("*.toml")))


@functools.cache
def unit_key(module: str) -> str:
    """Hash of the sources ``module``'s compiled code can depend on: its closure's files, and
    the ISA tables when the closure reads them (they become constants of compiled code)."""
    members = closure(module)
    return _key(members, any(name.startswith("neuronemu.isa") for name in members))


def all_sources_key() -> str:
    """Hash of every compiled-package source and ISA table: equal for two checkouts exactly
    when every compiled unit of one fits the other."""
    return _key(sorted(module_files()), True)


def _key(modules, with_tables: bool) -> str:
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode() + b"\0" + _source(name) + b"\0")
    for name, data in _isa_tables() if with_tables else ():
        digest.update(name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]
