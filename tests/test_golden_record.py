"""The suite's golden corpus machinery itself (tests/conftest.py), run as a separate pytest on a
copy of the conftest with two small kernel tests: recording under pytest-xdist keeps the workers'
runs, and a session whose corpus is empty fails instead of passing with "0 runs compared"
(issue 30 item 2)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

KERNEL = """
.hbm a float32[4, 8] input
.hbm c float32[4, 8] output
.sbuf t float32[4, 8]
    dma.copy t, a, queue=0
    vector.tensor_scalar t, t, op0=add, operand0={value}
    dma.copy c, t, queue=0
"""

TESTS_FILE = '''
import numpy as np
import neuronemu

KERNEL = {kernel!r}

def _run(value):
    program = neuronemu.assemble(KERNEL.format(value=value), filename="k.s")
    return neuronemu.run(program, inputs={{"a": np.ones((4, 8), np.float32)}})

def test_one():
    assert _run(1.0).outputs["c"][0, 0] == 2.0

def test_two():
    assert _run(2.0).outputs["c"][0, 0] == 3.0
'''


@pytest.fixture
def suite(tmp_path):
    """A suite of two kernel tests with this repository's golden conftest; returns a runner."""
    tests = tmp_path / "tests"
    (tests / "golden").mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", tests / "conftest.py")
    shutil.copy(TESTS / "golden_digest.py", tests / "golden_digest.py")
    (tests / "test_k.py").write_text(TESTS_FILE.format(kernel=KERNEL))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tests),
                                                        os.environ.get("PYTHONPATH", "")])}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               "-q", str(tests), *args], cwd=tmp_path, env=env,
                              check=False, capture_output=True, text=True, timeout=600)

    run.corpus = tests / "golden" / "suite.json"
    return run


def _runs(corpus: Path) -> dict:
    return json.loads(corpus.read_text())["runs"]


def test_an_empty_corpus_fails_the_session(suite):
    suite.corpus.write_text(json.dumps({"schema": 1, "runs": {}}))
    result = suite()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert "golden corpus: FAILED" in result.stdout and "holds no runs" in result.stdout


def test_a_missing_corpus_fails_the_session(suite):
    result = suite()
    assert result.returncode == 1 and "holds no runs" in result.stdout


def test_record_then_compare(suite):
    recorded = suite("--golden-record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len(_runs(suite.corpus)) == 2
    compared = suite()
    assert compared.returncode == 0 and "2 runs compared" in compared.stdout


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None,
                    reason="pytest-xdist is not installed (the [test] extra brings it)")
def test_record_and_compare_under_xdist(suite):
    recorded = suite("-n", "2", "--golden-record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert len(_runs(suite.corpus)) == 2          # the workers' runs, not the controller's none
    compared = suite("-n", "2")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "2 runs compared" in compared.stdout
    # and a changed result is caught in a worker
    corpus = json.loads(suite.corpus.read_text())
    corpus["runs"] = {k: "0" * len(d) for k, d in corpus["runs"].items()}
    suite.corpus.write_text(json.dumps(corpus))
    changed = suite("-n", "2")
    assert changed.returncode == 1 and "2 failed" in changed.stdout
