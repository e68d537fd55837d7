"""The pytest plugin of neuronemu (entry point ``pytest11``, loaded once neuronemu is installed;
or ``pytest -p neuronemu.pytest_plugin``).

- fixture ``neuronemu_run``: ``neuronemu_run(kernel, inputs=None, **options)`` assembles and runs
  a kernel (a path relative to the test file, a bundled program name or source text) on the
  test's target and returns a ``neuronemu.testing.KernelRun``;
- fixture ``neuronemu_assemble``: the same without running (a ``Program``);
- fixture ``neuronemu_target``: the test's target (None: the kernel's own ``.target``);
- option ``--neuronemu-target T`` (repeatable, comma lists, ``all``): the targets to run on;
- marker ``@pytest.mark.neuronemu_targets("trn2", "trn3")`` (no arguments: every target): run
  the test once per target, narrowed by ``--neuronemu-target``;
- option ``--neuronemu-nki``: the NKI drop-in switch for a test suite: ``import nki``,
  ``nki.language``, ``nki.isa``, ``nki.typing``, ``nki.collectives`` resolve to
  ``neuronemu.nki`` (installed before conftest files load), so an NKI project's own tests run
  their kernels on neuronemu unchanged.

Loading it imports nothing but pytest and neuronemu's light package: numpy, numba and lark load
when a fixture first runs a kernel, so an unrelated test suite does not pay for them.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

MARKER = "neuronemu_targets"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neuronemu", "neuronemu kernel tests")
    group.addoption("--neuronemu-target", action="append", default=[], metavar="TARGET",
                    help="run kernel tests on TARGET (trn1, trn2, trn3 or all); repeat or "
                         "comma-separate for several. Default: each kernel's own .target, and "
                         "the targets a test's neuronemu_targets marker names")
    group.addoption("--neuronemu-nki", action="store_true", default=False,
                    help="run NKI kernels on neuronemu: `import nki` (nki.language, nki.isa, "
                         "nki.typing, nki.collectives) resolves to neuronemu.nki")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser, args) -> None:
    if "--neuronemu-nki" in args:   # before conftest.py files import the kernels
        from neuronemu.nki import dropin

        dropin.install()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("neuronemu_nki", False):
        from neuronemu.nki import dropin

        dropin.install()
    config.addinivalue_line(
        "markers", f"{MARKER}(*targets): run the test once per target (no targets: every "
                   f"target); --neuronemu-target narrows the list")


@functools.cache
def all_targets() -> tuple[str, ...]:
    """The target names of isa/targets.toml (read with tomllib: no numpy, no ISA table)."""
    from neuronemu.isa.resources import read_table

    return tuple(read_table("targets"))


def _checked(targets, where: str) -> list[str]:
    known = all_targets()
    for t in targets:
        if t not in known:
            raise pytest.UsageError(f"{where}: unknown target '{t}' (targets: "
                                    f"{', '.join(known)}, or all)")
    return list(targets)


def chosen_targets(config: pytest.Config) -> list[str] | None:
    """The targets of --neuronemu-target (None when it was not given)."""
    given = [t.strip() for value in config.getoption("neuronemu_target")
             for t in value.split(",") if t.strip()]
    if not given:
        return None
    if "all" in given:
        return list(all_targets())
    return _checked(dict.fromkeys(given), "--neuronemu-target")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    uses_target = "neuronemu_target" in metafunc.fixturenames
    if marker is not None and not uses_target:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: the {MARKER} marker needs the "
                                f"test to take the neuronemu_run, neuronemu_assemble or "
                                f"neuronemu_target fixture")
    if not uses_target:
        return
    chosen = chosen_targets(metafunc.config)
    if marker is None:
        if chosen is None:
            return   # the fixture gives None: each kernel's own .target
        targets = chosen
    else:
        marked = _checked(marker.args, f"{metafunc.definition.nodeid}: {MARKER}") \
            or list(all_targets())
        targets = [t for t in marked if chosen is None or t in chosen]
    # an empty list makes pytest skip the test ("got empty parameter set")
    metafunc.parametrize("neuronemu_target", targets, ids=[str(t) for t in targets])


def pytest_report_header(config: pytest.Config) -> str | None:
    chosen = chosen_targets(config)
    return None if chosen is None else f"neuronemu targets: {', '.join(chosen)}"


@pytest.fixture
def neuronemu_target() -> str | None:
    """The target of this test: set by --neuronemu-target or the neuronemu_targets marker;
    None runs each kernel on its own ``.target``."""
    return None


@pytest.fixture
def neuronemu_assemble(request: pytest.FixtureRequest, neuronemu_target: str | None):
    """``neuronemu_assemble(kernel, target=None)`` -> Program, for the test's target."""
    from neuronemu.testing import load_kernel

    base = Path(request.path).parent

    def assemble(kernel, target: str | None = None):
        return load_kernel(kernel, target or neuronemu_target, base)

    return assemble


@pytest.fixture
def neuronemu_run(request: pytest.FixtureRequest, neuronemu_target: str | None):
    """``neuronemu_run(kernel, inputs=None, *, seed=0, target=None, topology=None, **options)``
    -> neuronemu.testing.KernelRun, on the test's target (relative kernel paths are looked up
    next to the test file first)."""
    from neuronemu.testing import run_kernel

    base = Path(request.path).parent

    def run(kernel, inputs=None, *, target: str | None = None, **options):
        return run_kernel(kernel, inputs, target=target or neuronemu_target, base=base,
                          **options)

    return run
