"""The pytest plugin, driven by pytest's own pytester: sample suites that pass and fail, the
target option and marker, the entry point and the lazy loading."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[2]
PLUGIN = ("-p", "neuronemu.pytest_plugin", "-p", "no:cacheprovider")
# pytester points HOME at a temporary folder; the compiled kernels stay in the real cache
CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


@pytest.fixture(autouse=True)
def _compiled_kernels_cache(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE_HOME)

ADD = """\
.hbm a float32[128, 64] input init=normal(0, 1)
.hbm b float32[128, 64] input init=normal(0, 1)
.hbm c float32[128, 64] output
.sbuf ta float32[128, 64]
.sbuf tb float32[128, 64]
.sbuf tc {tile}[128, 64]
    dma.copy ta, a
    dma.copy tb, b
    vector.tensor_tensor tc, ta, tb, op=add
    dma.copy c, tc
"""

TEST_ADD = """\
import numpy as np
import pytest
from neuronemu.testing import assert_ulp_close

def test_add(neuronemu_run):
    run = neuronemu_run("add.s")
    expected = run.inputs["a"].astype(np.float64) + run.inputs["b"]
    assert_ulp_close(run.outputs["c"], expected, ulps=0.5)

@pytest.mark.neuronemu_targets
def test_add_everywhere(neuronemu_run, neuronemu_target):
    run = neuronemu_run("add.s")
    assert run.target == neuronemu_target

@pytest.mark.neuronemu_targets("trn2", "trn3")
def test_add_on_two(neuronemu_target):
    assert neuronemu_target in ("trn2", "trn3")
"""


@pytest.fixture
def suite(pytester):
    """A folder holding a correct add kernel and tests of it."""
    (pytester.path / "add.s").write_text(ADD.format(tile="float32"))
    pytester.makepyfile(test_add=TEST_ADD)
    return pytester


def test_a_correct_kernel_passes_on_every_marked_target(suite):
    result = suite.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*test_add_everywhere?trn1? PASSED*",
                                 "*test_add_everywhere?trn3? PASSED*",
                                 "*test_add_on_two?trn3? PASSED*"])


def test_the_target_option_narrows_and_parametrises(suite):
    result = suite.runpytest(*PLUGIN, "-v", "--neuronemu-target", "trn1,trn3")
    # test_add runs on both; the marked test on both; test_add_on_two only on trn3
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["neuronemu targets: trn1, trn3", "*test_add?trn1? PASSED*"])
    result = suite.runpytest(*PLUGIN, "--neuronemu-target", "trn1", "-k", "on_two", "-rs")
    result.assert_outcomes(skipped=1)


def test_an_unknown_target_is_a_usage_error(suite):
    result = suite.runpytest(*PLUGIN, "--neuronemu-target", "trn9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([("*--neuronemu-target: unknown target 'trn9' (targets: trn1, "
                                 "trn2, trn3, or all)*")])


def test_a_wrong_kernel_fails_with_a_readable_ulp_report(suite):
    (suite.path / "add.s").write_text(ADD.format(tile="bfloat16"))   # the sum goes via bf16
    result = suite.runpytest(*PLUGIN, "-k", "test_add and not everywhere and not two")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        ("E * AssertionError: * of 8192 elements (*%) are more than 0.5 ulp of float32 from "
        "expected (largest finite distance * ulp)"),
        "E * distances: <= 0.5: *",
        "E * worst 10 (largest distance first):",
        "E * index * actual (float32, bits) * expected * ulp",
        "E * [[]*, *[]] * (0x*0000) *",          # bf16 results: the low 16 bits are zero
        "E * ... and * more",
    ])
    assert "def assert_ulp_close" not in result.stdout.str()   # the helper's frame is hidden


def test_ctrl_c_in_a_test_stops_the_whole_session(pytester):
    """Ctrl-C while a kernel runs in a test used to fail that test alone and go on with the
    next ones (issue 30): it interrupts the session, as Ctrl-C does anywhere in pytest."""
    pytester.makepyfile("""
        import os, signal, threading
        import pytest
        import neuronemu

        SPIN = "ctrl.mov r0, 0\\nspin:\\nctrl.jmp spin\\n"

        def test_spins():
            program = neuronemu.assemble(SPIN, "spin.s")
            with pytest.raises(neuronemu.LimitReached):   # the loop is loaded
                neuronemu.run(program, max_instructions=10)
            # Python's own handler (a shell's background job starts with SIGINT ignored)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
            neuronemu.run(program, max_instructions=2 ** 62, timeout=120)

        def test_after():
            pass
    """)
    result = pytester.runpytest_subprocess(*PLUGIN, "-v")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines([("! neuronemu.errors.Interrupted: spin.s:3:1: error: "
                                  "interrupted (Ctrl-C) at ctrl.jmp after * instructions")])
    assert "test_after" not in result.stdout.str() and "no tests ran" in result.stdout.str()


def test_a_kernel_error_in_a_test_shows_the_located_message_without_internal_frames(suite):
    """A kernel error inside a test came after ~85 lines of this package's own traceback
    (issue 30): the test's own frames and the located message, as the assertions show."""
    (suite.path / "add.s").write_text(ADD.format(tile="float32").replace("op=add", "op=ad"))
    result = suite.runpytest(*PLUGIN, "-k", "test_add and not everywhere and not two")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*run = neuronemu_run(\"add.s\")",
        ("E * neuronemu.errors.AsmError: *add.s:9:*: error: vector.tensor_tensor argument 'op' "
         "must be one of: *did you mean 'add'?"),
        "E * 9 |     vector.tensor_tensor tc, ta, tb, op=ad",
    ])
    failure = out[out.index("_ test_add _"):out.index("test_add.py:6: AsmError")]
    assert "neuronemu/" not in failure and "site-packages" not in failure, failure
    assert len(failure.splitlines()) < 20, failure


def test_the_marker_needs_a_target_fixture(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.neuronemu_targets
        def test_no_fixture():
            pass
    """)
    result = pytester.runpytest(*PLUGIN)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*the neuronemu_targets marker needs the test to take*"])


def test_loading_the_plugin_imports_neither_numpy_nor_numba_nor_lark(pytester, monkeypatch):
    pytester.makepyfile("""
        import sys
        def test_nothing_heavy_loaded():
            heavy = [m for m in ("numpy", "numba", "lark", "ml_dtypes", "neuronemu.api",
                                 "neuronemu.testing") if m in sys.modules]
            assert heavy == []
    """)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess(*PLUGIN, "--neuronemu-target", "all")
    result.assert_outcomes(passed=1)


def test_the_entry_point_loads_the_plugin_and_tolerates_dash_p(pytester, monkeypatch):
    """A dist-info folder on the path declares the entry point as pyproject.toml does (what
    `pip install` writes), so pytest loads the plugin with no -p at all."""
    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    assert entry["pytest11"] == {"neuronemu.pytest_plugin": "neuronemu.pytest_plugin"}
    info = pytester.path / "site" / "neuronemu_probe-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: neuronemu-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in entry["pytest11"].items()))
    pytester.makepyfile("""
        def test_fixture_available(neuronemu_target):
            assert neuronemu_target == "trn2"
    """)
    monkeypatch.setenv("PYTHONPATH", f"{pytester.path / 'site'}:{REPO}")
    for extra in ((), ("-p", "neuronemu.pytest_plugin")):
        result = pytester.runpytest_subprocess("--neuronemu-target", "trn2", *extra)
        result.assert_outcomes(passed=1)


def test_this_repository_suite_collects_with_the_plugin():
    """The project's own tests and conftest live with the plugin loaded."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "neuronemu.pytest_plugin",
                           "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
