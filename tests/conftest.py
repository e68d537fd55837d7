"""The golden corpus of the whole suite: every ``neuronemu.run`` / ``run_spmd`` call a test makes
is fingerprinted (tests/golden_digest.py) and compared with the fingerprint recorded for the same
kernel, inputs and options in tests/golden/suite.json.

So an engine change that alters any output bit, cycle count, trace event or warning of any run
the suite makes fails the test that made the run, even when that test's own assertions (bounds
against a float64 oracle, say) would still pass. Runs whose key is not in the corpus (random
inputs from hypothesis) are not compared.

``pytest --golden-record`` rewrites the corpus from this run (under pytest-xdist too: the workers'
runs are gathered in the controller); do that only on the engine the corpus describes (record
before an engine change, never to make a changed engine pass). A session whose corpus is empty or
missing fails: a golden check that compares nothing is no check.
"""

from __future__ import annotations

import json
from pathlib import Path

import golden_digest
import pytest

SUITE_CORPUS = Path(__file__).parent / "golden" / "suite.json"


def pytest_addoption(parser):
    parser.addoption("--golden-record", action="store_true",
                     help="rewrite tests/golden/suite.json from the runs of this session")
    parser.addoption("--golden-corpus", default=None, metavar="PATH",
                     help="the corpus file to compare with or record (default: "
                          "tests/golden/suite.json)")
    parser.addoption("--golden-values-only", action="store_true",
                     help="fingerprint values only (HBM tensors, counts, warnings, errors), not "
                          "timing or on-chip placement: to check a timing-model change")


class _Golden:
    def __init__(self, record: bool):
        self.record = record
        self.expected = {} if record or not SUITE_CORPUS.exists() else json.loads(
            SUITE_CORPUS.read_text())["runs"]
        self.seen: dict[str, str] = {}
        self.unstable: set[str] = set()
        self.compared = 0

    def observe(self, program, inputs, options, outcome):
        k = golden_digest.key(program, inputs, options)
        d = golden_digest.digest(outcome)
        if k in self.seen and self.seen[k] != d:
            self.unstable.add(k)   # the same run twice gave two results: not deterministic
        self.seen.setdefault(k, d)
        want = self.expected.get(k)
        if want is not None:
            self.compared += 1
            assert want == d, (f"golden corpus: this run of {program.source.name} on "
                               f"{program.target.name} ({options}) no longer matches its "
                               f"recorded result (tests/golden/suite.json, key {k})")

    def wrap(self, fn, spmd: bool):
        def wrapped(program, *args, **kwargs):
            names = (["topology", "inputs"] if spmd else ["inputs"])
            named = dict(zip(names, args))
            named.update(kwargs)
            inputs = named.pop("inputs", None)
            # a partitioned run must give the in-process run's result: keyed as that run, it
            # is compared with its recorded digest
            named.pop("partitions", None)
            try:
                outcome = fn(program, *args, **kwargs)
            except Exception as error:  # a fault of the engine is a result too
                if _engine_fault(error):
                    self.observe(program, inputs, named, error)
                raise
            self.observe(program, inputs, named, outcome)
            return outcome

        wrapped.__wrapped__ = fn
        wrapped.__doc__ = fn.__doc__
        return wrapped


def _engine_fault(error: Exception) -> bool:
    """Faults the engine reports from a run (bad offsets, races, deadlocks, bad indices). Input
    checks and limit stops are not the engine's results: their messages may change freely."""
    from neuronemu.errors import LimitReached, RuntimeFault

    return isinstance(error, RuntimeFault) and not isinstance(error, LimitReached)


_GOLDEN: _Golden | None = None


def pytest_configure(config):
    global _GOLDEN, SUITE_CORPUS
    import neuronemu
    from neuronemu import api

    if config.getoption("--golden-corpus"):
        SUITE_CORPUS = Path(config.getoption("--golden-corpus")).resolve()
    golden_digest.VALUES_ONLY = bool(config.getoption("--golden-values-only"))
    _GOLDEN = _Golden(config.getoption("--golden-record"))
    api.run = _GOLDEN.wrap(api.run, spmd=False)
    api.run_spmd = _GOLDEN.wrap(api.run_spmd, spmd=True)
    neuronemu.run = api.run


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)   # before pytest-xdist starts its workers
def pytest_sessionstart(session):
    """From an empty cache, compile the instruction kernels first, on every core, saying so and
    how far it is (issue 29): the tests would otherwise compile them one at a time inside
    whichever test first needs each, as silences of up to half a minute. Once per version and
    machine; a warm cache (CI runs `neuronemu warm` first) skips it in well under a second."""
    import sys

    from neuronemu.exec import compile_jobs
    from neuronemu.warm import cold_kernels

    if _is_xdist_worker(session.config):
        return
    entries, cold = cold_kernels()
    if not cold:
        return
    parallel = compile_jobs.workers()

    def say(line: str) -> None:
        print(f"neuronemu: {line}", file=sys.stderr, flush=True)

    say(f"this version's compiled-code cache lacks {len(cold)} of {len(entries)} instruction "
        f"kernels: compiling them before the tests, {parallel} at once (about 1.5 min of CPU "
        f"in all, as `neuronemu warm`; once per version and machine)")
    compile_jobs.run_jobs([compile_jobs.kernel_job(e) for e in cold], say, parallel)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist, in the controller: a worker's runs and comparisons join the session's.
    Under ``-n N`` the tests (and so the runs) happen in the workers only; without this the
    controller would record an empty corpus and report 0 runs compared (issue 30 item 2)."""
    part = getattr(node, "workeroutput", {}).get("golden")
    if _GOLDEN is None or part is None:
        return
    _GOLDEN.compared += part["compared"]
    _GOLDEN.unstable.update(part["unstable"])
    for k, d in part["seen"].items():
        if k in _GOLDEN.seen and _GOLDEN.seen[k] != d:
            _GOLDEN.unstable.add(k)
        _GOLDEN.seen.setdefault(k, d)


def _corpus_problem() -> str | None:
    """Why this session's golden check compared nothing that it should have, or None."""
    if _GOLDEN.record:
        if _GOLDEN.seen and not any(k not in _GOLDEN.unstable for k in _GOLDEN.seen):
            return "every run of this session was non-deterministic: nothing to record"
        return None
    if not _GOLDEN.expected:
        return (f"{SUITE_CORPUS} holds no runs, so nothing was compared; restore it "
                f"(git checkout tests/golden/suite.json) or record it on the engine it describes")
    return None


def pytest_sessionfinish(session, exitstatus):
    if _GOLDEN is None:
        return
    config = session.config
    if _is_xdist_worker(config):   # the controller records and judges (pytest_testnodedown)
        config.workeroutput["golden"] = {"seen": _GOLDEN.seen, "unstable": sorted(_GOLDEN.unstable),
                                         "compared": _GOLDEN.compared}
        return
    problem = _corpus_problem()
    if problem is not None and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _GOLDEN.record and exitstatus == 0 and problem is None:
        runs = {k: d for k, d in sorted(_GOLDEN.seen.items()) if k not in _GOLDEN.unstable}
        if runs:   # a session that ran no kernel leaves the corpus as it was
            SUITE_CORPUS.parent.mkdir(exist_ok=True)
            SUITE_CORPUS.write_text(json.dumps({"schema": 1, "runs": runs}, indent=0) + "\n")


def pytest_terminal_summary(terminalreporter):
    if _GOLDEN is None or _is_xdist_worker(terminalreporter.config):
        return
    verb = "recorded" if _GOLDEN.record else "compared with tests/golden/suite.json"
    count = len(_GOLDEN.seen) - len(_GOLDEN.unstable) if _GOLDEN.record else _GOLDEN.compared
    line = f"golden corpus: {count} runs {verb}, {len(_GOLDEN.seen)} distinct runs"
    if _GOLDEN.unstable:
        line += f", {len(_GOLDEN.unstable)} NOT DETERMINISTIC (left out of the corpus)"
    terminalreporter.write_line(line)
    problem = _corpus_problem()
    if problem is not None:
        terminalreporter.write_line(f"golden corpus: FAILED: {problem}", red=True, bold=True)
