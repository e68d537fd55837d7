"""The drop-in switch: run an unmodified NKI kernel file, and its test harness, on neuronemu.

``python -m neuronemu.nki script.py [args]``, ``neuronemu nki run script.py [args]`` and the
pytest option ``--neuronemu-nki`` install import aliases, so that ``import nki``,
``import nki.language as nl``, ``import nki.isa as nisa``, ``from nki.typing import tensor``,
``from nki.isa.constants import oob_mode`` and ``import nki.collectives`` load neuronemu's
modules of the same names; the script then runs as ``__main__``, exactly as ``python
script.py`` would run it. The field's convention (``TRITON_INTERPRET=1``, ``NKI_SIMULATOR=1``)
is the same: one switch, no edited line. AWS's stand-alone simulator package
(``nki_cpu_simulator.nki...``, which nki-library's harness imports in ``--test-mode
simulation``) resolves to neuronemu too, and ``neuronxcc.nki`` (the NKI 0.1 dialect) to
``neuronemu.nki.neuronxcc``.

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

SIMULATOR_PREFIX = "nki_cpu_simulator"
"""AWS's stand-alone CPU simulator package: test harnesses (nki-library's ``--test-mode
simulation``) import ``nki_cpu_simulator.nki...`` and alias it to ``nki`` themselves; under the
switch that package is neuronemu too (``nki_cpu_simulator.nki`` is ``neuronemu.nki``)."""

LEGACY_PREFIX = "neuronxcc"
"""NKI 0.1's package (``neuronxcc.nki``): under the switch, when the Neuron compiler is not
installed, its modules are neuronemu's NKI 0.1 dialect (``neuronemu.nki.neuronxcc``); 0.2+
code also takes annotations from ``neuronxcc.nki.typing``, the same in both."""

_LEGACY_MODULES = {"neuronxcc.nki": "neuronemu.nki.neuronxcc",
                   "neuronxcc.nki.language": "neuronemu.nki.neuronxcc.language",
                   "neuronxcc.nki.isa": "neuronemu.nki.neuronxcc.isa",
                   "neuronxcc.nki.compiler": "neuronemu.nki.neuronxcc.compiler",
                   "neuronxcc.nki.isa.constants": "neuronemu.nki.isa_constants",
                   "neuronxcc.nki.typing": "neuronemu.nki.typing"}

_TARGET = "neuronemu.nki"

_SUBMODULES = {"nki.isa.constants": "neuronemu.nki.isa_constants",
               "nki.language.dtypes": "neuronemu.nki.language",
               "nki.simulator": "neuronemu.nki.simulator"}
"""NKI submodules that live elsewhere here (``nki.isa`` is one module, not a package; the
dtypes are names of ``nki.language``)."""

_SIMULATOR_ONLY = ("nki.builtin", "nki.compiler", "nki.tensor")
"""Modules of the simulator package that NKI kernels do not use; they exist (empty) so that
its harnesses import, and any name taken from them is a located error when called."""


def _standin(name: str, doc: str, names_fail: bool = False):
    """An empty module (a package: it may have submodules) marked as neuronemu's; with
    ``names_fail`` any name taken from it fails at the kernel's line when called."""
    import types

    module = types.ModuleType(name, doc)
    module.__path__ = []
    module.__neuronemu_standin__ = True
    if names_fail:
        from neuronemu.nki._trace import unsupported_name

        namespace = name.rsplit(".", 1)[1]
        module.__getattr__ = lambda attr: unsupported_name(namespace, attr)
    return module


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


def _nki_name(fullname: str) -> str | None:
    """``nki[.X]`` for an aliased module name (``nki_cpu_simulator.nki[.X]`` included)."""
    if fullname == PREFIX or fullname.startswith(PREFIX + "."):
        return fullname
    inner = SIMULATOR_PREFIX + "." + PREFIX
    if fullname == inner or fullname.startswith(inner + "."):
        return fullname[len(SIMULATOR_PREFIX) + 1:]
    return None


class NkiAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``nki`` and ``nki.X`` to ``neuronemu.nki`` and ``neuronemu.nki.X``, and
    ``nki_cpu_simulator.nki[.X]`` the same way."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == SIMULATOR_PREFIX:
            return _spec(fullname, _standin(fullname, "neuronemu in place of AWS's CPU simulator"))
        if fullname == LEGACY_PREFIX or fullname.startswith(LEGACY_PREFIX + "."):
            return self._legacy_spec(fullname)
        name = _nki_name(fullname)
        if name is None:
            return None
        if name in _SIMULATOR_ONLY:
            return _spec(fullname, _standin(name, "neuronemu stand-in for the CPU simulator's "
                                            + name, names_fail=True))
        real = _SUBMODULES.get(name, _TARGET + name[len(PREFIX):])
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as error:
            if error.name != real:
                raise
            return None   # not a neuronemu.nki module: the import fails as usual
        return _spec(fullname, module)

    def _legacy_spec(self, fullname):
        if self._compiler_installed():
            return None
        if fullname == LEGACY_PREFIX:
            return _spec(fullname, _standin(fullname, "neuronemu's stand-in for " + fullname))
        real = _LEGACY_MODULES.get(fullname)
        if real is None:
            raise ImportError(f"No module named '{fullname}': {fullname} is not a module of "
                              f"the NKI 0.1 dialect as neuronemu runs it (neuronxcc.nki, "
                              f"neuronxcc.nki.language, neuronxcc.nki.isa, "
                              f"neuronxcc.nki.isa.constants, neuronxcc.nki.compiler, "
                              f"neuronxcc.nki.typing)", name=fullname)
        return _spec(fullname, importlib.import_module(real))

    def _compiler_installed(self) -> bool:
        if not hasattr(self, "_compiler"):
            others = [f for f in sys.meta_path if f is not self and hasattr(f, "find_spec")]
            self._compiler = any(f.find_spec(LEGACY_PREFIX, None) for f in others)
        return self._compiler


def _spec(fullname: str, module):
    """The import spec that makes ``fullname`` load ``module`` itself."""
    return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


_FINDER = NkiAliasFinder()


def install() -> None:
    """Make ``import nki...`` load neuronemu's NKI modules (idempotent). A real ``nki``
    package, if one is installed, is shadowed for this process: the switch asks for that."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in _aliased_names():
        if not _ours(sys.modules[name]):
            del sys.modules[name]   # an AWS module imported before the switch


def uninstall() -> None:
    """Remove the aliases (the modules already imported under ``nki`` are forgotten)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in _aliased_names():
        if _ours(sys.modules[name]):
            del sys.modules[name]


def _aliased_names() -> list[str]:
    legacy = [n for n in sys.modules if n == LEGACY_PREFIX or n.startswith(LEGACY_PREFIX + ".")]
    return [n for n in sys.modules if _nki_name(n) or n == SIMULATOR_PREFIX] + [
        n for n in legacy if _ours(sys.modules[n])]


def _ours(module) -> bool:
    return (getattr(module, "__name__", "").startswith(_TARGET)
            or getattr(module, "__neuronemu_standin__", False))


def _located_import_error(error: ImportError):
    """The 0.1-dialect import as an ``NkiUnsupported`` at the user's ``import`` line (the
    innermost frame of the traceback outside Python's import machinery and neuronemu)."""
    import traceback

    from neuronemu.nki._trace import NkiUnsupported, Site

    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith("<frozen")
              and os.path.dirname(os.path.abspath(f.filename)) != here]
    location = None
    if frames:
        frame = frames[-1]
        site = Site(frame.filename, frame.lineno, frame.name, (frame.colno or 0) + 1,
                    (frame.end_colno or 0) + 1 if frame.end_colno else None)
        location = site.location()
    return NkiUnsupported(str(error).split(": ", 1)[-1], location)


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
    except ImportError as error:
        if not (error.name or "").startswith(LEGACY_PREFIX + "."):
            raise
        unsupported = _located_import_error(error)
        print(unsupported.render(), file=sys.stderr)
        return unsupported.exit_code
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0
