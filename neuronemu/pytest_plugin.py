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

Loading it imports nothing but pytest and neuronemu's light package: numpy and numba load
when a fixture first runs a kernel, so an unrelated test suite does not pay for them.
"""

from __future__ import annotations

import functools
import types
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


_PREVIOUS_SINK = pytest.StashKey()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("neuronemu_nki", False):
        from neuronemu.nki import dropin

        dropin.install()
    config.addinivalue_line(
        "markers", f"{MARKER}(*targets): run the test once per target (no targets: every "
                   f"target); --neuronemu-target narrows the list")
    from neuronemu import notices

    config.stash[_PREVIOUS_SINK] = notices.set_sink(
        functools.partial(_notice_past_capture, config))


def pytest_unconfigure(config: pytest.Config) -> None:
    from neuronemu import notices

    notices.set_sink(config.stash.get(_PREVIOUS_SINK, None))


def _notice_past_capture(config: pytest.Config, text: str) -> None:
    """A notice (a first compile that will take a minute, a damaged cache) shown while the test
    runs: pytest captures stderr per test and shows it only for failures, which left a first
    compile inside a test as an unexplained silence (issue 30 item 19)."""
    import sys

    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        print(text, file=sys.stderr, flush=True)
        return
    redirected = sys.stdin, sys.stdout, sys.stderr
    with capture.global_and_fixture_disabled():
        print(f"\n{text}", file=sys.stderr, flush=True)
    # resuming puts pytest's own capture streams back in sys; streams a test had put there
    # (click's CliRunner, contextlib.redirect_stdout) must stay, or what the command prints
    # after its first compile goes astray
    sys.stdin, sys.stdout, sys.stderr = redirected


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


_PACKAGE = str(Path(__file__).resolve().parent)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    """A neuronemu error in a test (a kernel that does not assemble, a run-time fault, an
    input error, Ctrl-C) is the kernel's or the test's, not this package's: its report keeps
    the test's own frames (and an NKI kernel's) and the located message, without the frames
    inside neuronemu or what they caught on the way, as the assertion helpers'
    ``__tracebackhide__`` does. Other exceptions (an emulator bug) keep every frame."""
    excinfo = call.excinfo
    if excinfo is None or item.config.getoption("fulltrace", False):
        return
    from neuronemu.errors import Reported  # light: the errors import only the source module

    if not isinstance(excinfo.value, Reported):
        return
    frames, tb = [], excinfo.tb
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            frames.append(tb)
        tb = tb.tb_next
    if not frames:
        return
    # a new chain of the frames outside the package: pytest walks the raw chain when it
    # cuts the traceback at the test function, so filtering its entries would not last
    chain = None
    for tb in reversed(frames):
        chain = types.TracebackType(chain, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    error = excinfo.value
    error.__suppress_context__ = True   # what the package caught on the way is its own
    call.excinfo = pytest.ExceptionInfo.from_exc_info((type(error), error, chain))


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
