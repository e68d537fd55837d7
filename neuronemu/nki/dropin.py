"""The drop-in switch: run an unmodified NKI kernel file, and its test harness, on neuronemu.

``python -m neuronemu.nki script.py [args]``, ``neuronemu nki run script.py [args]`` and the
pytest option ``--neuronemu-nki`` install import aliases, so that ``import nki``,
``import nki.language as nl``, ``import nki.isa as nisa``, ``from nki.typing import tensor``,
``from nki.isa.constants import oob_mode`` and ``import nki.collectives`` load neuronemu's
modules of the same names; the script then runs as ``__main__``, exactly as ``python
script.py`` would run it. The field's convention (``TRITON_INTERPRET=1``, ``NKI_SIMULATOR=1``)
is the same: one switch, no edited line.

Errors of neuronemu (``NkiError``, assembler and run-time errors, all located at the kernel's
Python line) are printed as diagnostics with the exit codes of README's table, not as
tracebacks."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

PREFIX = "nki"
"""The top-level package name NKI kernels import."""

_TARGET = "neuronemu.nki"

_SUBMODULES = {"nki.isa.constants": "neuronemu.nki.isa_constants"}
"""NKI submodules that live elsewhere here (``nki.isa`` is one module, not a package)."""


class _AliasLoader(importlib.abc.Loader):
    """Loads ``nki.X`` as the already imported ``neuronemu.nki.X``: the import system returns
    what ``sys.modules`` holds after ``exec_module``, so the neuronemu module itself (its
    ``__name__`` and ``__spec__`` untouched) is what the kernel gets."""

    def __init__(self, module) -> None:
        self.module = module

    def create_module(self, spec):
        return None   # a placeholder module, replaced in exec_module

    def exec_module(self, module) -> None:
        sys.modules[module.__name__] = self.module


class NkiAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``nki`` and ``nki.X`` to ``neuronemu.nki`` and ``neuronemu.nki.X``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        real = _SUBMODULES.get(fullname, _TARGET + fullname[len(PREFIX):])
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as error:
            if error.name != real:
                raise
            return None   # not a neuronemu.nki module: the import fails as usual
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


_FINDER = NkiAliasFinder()


def install() -> None:
    """Make ``import nki...`` load neuronemu's NKI modules (idempotent). A real ``nki``
    package, if one is installed, is shadowed for this process: the switch asks for that."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
        module = sys.modules[name]
        if not getattr(module, "__name__", "").startswith(_TARGET):
            del sys.modules[name]   # an AWS module imported before the switch


def uninstall() -> None:
    """Remove the aliases (the modules already imported under ``nki`` are forgotten)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == PREFIX or n.startswith(PREFIX + ".")]:
        if getattr(sys.modules[name], "__name__", "").startswith(_TARGET):
            del sys.modules[name]


def installed() -> bool:
    return _FINDER in sys.meta_path


def run_script(path: str, argv: list[str]) -> int:
    """Run ``path`` as ``__main__`` with ``sys.argv = [path, *argv]`` under the aliases; the
    exit code (neuronemu errors rendered as diagnostics on stderr)."""
    from neuronemu.errors import NeuronemuError

    if not os.path.isfile(path):
        print(f"error: no such script: {path}", file=sys.stderr)
        return 2
    install()
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    except NeuronemuError as error:
        print(error.render(), file=sys.stderr)
        return error.exit_code
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0
