"""Grade a student's kernel for a lab: correctness on seeded random inputs over several shapes,
then its modelled time against the reference's, with feedback a student can act on.

The grader never trusts the kernel: it rewrites the size constants, checks the declared tensors
against the lab's interface (names, dtypes, shapes, roles), refuses instructions the lab is about
writing by hand, supplies every input itself, reads the outputs from the emulator's HBM image and
compares them with the lab's float64 oracle, and bounds every run by an instruction count and a
wall-clock limit."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neuronemu.errors import NeuronemuError
from neuronemu.grade.spec import (
    CORRECTNESS_POINTS,
    PERFORMANCE_POINTS,
    Budget,
    Lab,
    Variant,
    tier_fraction,
    tiers_text,
)

DEFAULT_SEEDS = 2


@dataclass
class TestResult:
    """One Gradescope test: a name, points and the feedback text."""

    name: str
    score: float
    max_score: float
    output: str

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


@dataclass
class Report:
    lab: str
    kernel: str
    tests: list[TestResult] = field(default_factory=list)
    times_ns: dict[str, float] = field(default_factory=dict)     # per timed variant
    wall_seconds: float = 0.0
    plots: list[str] = field(default_factory=list)
    plot_error: str | None = None     # why --plot drew nothing although a variant was timed

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 2)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 2)

    def text(self, plot: Path | None = None) -> str:
        """The report for a terminal; with ``plot``, a last line saying what was drawn."""
        lines = [f"lab {self.lab}: {self.kernel}"]
        for t in self.tests:
            mark = "PASS" if t.passed else ("PART" if t.score > 0 else "FAIL")
            lines.append(f"[{mark}] {t.name}: {t.score:g} / {t.max_score:g}")
            lines.extend("       " + line for line in t.output.splitlines())
        lines.append(f"score {self.score:g} / {self.max_score:g}  "
                     f"(graded in {self.wall_seconds:.1f} s)")
        if plot is not None:
            lines.append(f"plot     {plot}" if self.plots else
                         f"plot     none drawn: {self.plot_error}" if self.plot_error else
                         "plot     none drawn: no timed shape produced correct outputs")
        return "\n".join(lines)


class GradingError(NeuronemuError):
    """The kernel does not fit the lab (a missing .const, a different interface)."""

    exit_code = 3


def rewrite_consts(text: str, params: dict[str, int]) -> str:
    """Set each ``.const NAME = ...`` line of ``params`` to its value, in place (line numbers
    stay). Every parameter must be declared exactly once."""
    lines = text.split("\n")
    for name, value in params.items():
        pattern = re.compile(rf"^(\s*\.const\s+{re.escape(name)}\s*=)[^#]*(#.*)?$")
        hits = [i for i, line in enumerate(lines) if pattern.match(line)]
        if len(hits) != 1:
            raise GradingError(f"the kernel must declare `.const {name} = ...` exactly once (it "
                               f"declares it {len(hits)} times): the grader sets {name} to the "
                               f"sizes it tests")
        i = hits[0]
        m = pattern.match(lines[i])
        lines[i] = f"{m.group(1)} {value}" + (f"  {m.group(2)}" if m.group(2) else "")
    return "\n".join(lines)


def check_interface(lab: Lab, program, params: dict[str, int]) -> None:
    expected = lab.interface(params)
    declared = {t.name: (t.dtype, tuple(t.shape), t.role) for t in program.tensors.values()
                if t.role != "scratch"}
    problems = []
    for name, (dtype, shape, role) in expected.items():
        got = declared.get(name)
        if got is None:
            problems.append(f"missing `.hbm {name} {dtype}{list(shape)} {role}`")
        elif got != (dtype, shape, role):
            problems.append(f"'{name}' is declared {got[0]}{list(got[1])} {got[2]}, the lab "
                            f"needs {dtype}{list(shape)} {role}")
    for name in declared.keys() - expected.keys():
        problems.append(f"'{name}' is not part of the lab's interface (use a scratch tensor "
                        f"or SBUF)")
    if lab.sync and program.sync_mode != lab.sync:
        problems.append(f"this lab is about `.sync {lab.sync}`: the kernel must declare it")
    used = {ins.definition.name for ins in program.instructions}
    for name in lab.forbidden:
        if name in used:
            problems.append(f"{name} is what this lab asks you to build yourself; it may not "
                            f"be used")
    if program.target.name != lab.target:
        problems.append(f"the lab runs on {lab.target}, the kernel declares .target "
                        f"{program.target.name}")
    if problems:
        raise GradingError("the kernel does not match the lab's interface with "
                           + ", ".join(f"{k}={v}" for k, v in params.items()) + ":\n  "
                           + "\n  ".join(problems))


def _run(lab: Lab, program, inputs: dict[str, np.ndarray], seed: int):
    """One run under the lab's limits: (outputs, timing, the result object)."""
    import neuronemu
    from neuronemu.api import run_spmd

    options = {"seed": seed, "max_instructions": lab.max_instructions, "timeout": lab.timeout,
                   "stochastic_rounding": lab.stochastic_rounding}
    if lab.topology:
        result = run_spmd(program, lab.topology, inputs=inputs, **options)
        slowest = max(result.ranks, key=lambda r: r.timing.time_ns)
        return result.outputs, slowest.timing, result, slowest
    result = neuronemu.run(program, inputs=inputs, **options)
    return result.outputs, result.timing, result, result


def compare(program, outputs: dict[str, np.ndarray],
            expected: dict[str, tuple[np.ndarray, np.ndarray | float]], timing,
            rank_result=None) -> str | None:
    """None when every output is within its bound, else the feedback for the first wrong
    element of the first wrong output (row-major), with its last writer when known."""
    from neuronemu.grade.provenance import last_writers

    for name, (want, bound) in expected.items():
        got = np.asarray(outputs[name]).astype(np.float64)
        want = np.asarray(want, dtype=np.float64)
        bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), want.shape)
        with np.errstate(invalid="ignore"):
            ok = (np.abs(got - want) <= bound) | ((got == want) & ~np.isnan(want))
        if ok.all():
            continue
        wrong = np.argwhere(~ok)
        first = tuple(int(i) for i in wrong[0])
        rank = ""
        if got.ndim == want.ndim and got.shape != program.tensors[name].shape:
            rank = f" (rank {first[0]})"   # multi-rank outputs carry a leading rank axis
        lines = [(f"output '{name}'{rank}: {len(wrong)} of {want.size} elements are wrong; "
                 f"the first is {name}{list(first[1:] if rank else first)}: got "
                 f"{float(got[first]):.9g}, expected {float(want[first]):.9g} (allowed error "
                 f"{float(bound[first]):.3g})")]
        nan, inf = int(np.isnan(got).sum()), int(np.isinf(got).sum())
        if nan or inf:
            lines.append(f"  the output holds {nan} NaN and {inf} infinite values")
        index = first[1:] if rank else first
        timing_of = rank_result.ranks[first[0]].timing if rank else timing
        chain = last_writers(program, timing_of, name, index)
        if chain:
            lines.extend("  " + w.describe(program) for w in chain)
        else:
            lines.append(f"  no instruction wrote {name}{list(index)}: the kernel never "
                         f"stores there (outputs start as NaN)")
        return "\n".join(lines)
    return None


def _slow_feedback(timing, ratio: float) -> str:
    share = sorted(timing.critical_path.items(), key=lambda kv: -kv[1])
    total = sum(v for _, v in share) or 1.0
    path = ", ".join(f"{name} {ns / 1000:.2f} us ({ns / total:.0%})" for name, ns in share[:4])
    busy = ", ".join(f"{name} {s.utilisation:.0%}" for name, s in
                     sorted(timing.tracks.items(), key=lambda kv: -kv[1].busy_ns)[:5])
    return (f"{ratio:.2f}x the reference's time. Critical path: {path}. "
            f"Busiest tracks (utilisation): {busy}.")


def grade(lab: Lab, kernel: Path, seeds: int = DEFAULT_SEEDS, seed_base: int = 0,
          budget: Budget | None = None, plot: Path | None = None,
          progress=None) -> Report:
    """Grade ``kernel`` for ``lab``. ``budget`` holds the reference's times (default: the lab's
    budget.json); ``plot`` writes the timeline of the first timed variant there."""
    from neuronemu.api import assemble
    from neuronemu.grade.labs import lab_dir

    started = time.perf_counter()
    if budget is None:
        budget = Budget.load(lab_dir(lab.name) / "budget.json")
    from neuronemu.errors import InputError
    from neuronemu.kernel_text import decode_kernel

    try:
        data = kernel.read_bytes()
    except OSError as error:   # no upload to grade: the grader's own error (exit 4)
        raise InputError(f"cannot read kernel {kernel}: {error.strerror}") from None
    try:
        text, unreadable = decode_kernel(data, str(kernel)), None
    except InputError as error:
        # an upload that is not text is graded (0, with the reason), not refused: the student
        # gets a score and feedback in results.json (issue 30 item 12)
        text, unreadable = "", error
    report = Report(lab.name, str(kernel))
    n_variants = len(lab.variants)
    timed = [v for v in lab.variants if v.timed]
    for variant in lab.variants:
        points = CORRECTNESS_POINTS / n_variants
        label = _label(variant)
        if progress:
            progress(f"grading {lab.name}: {label}")
        try:
            if unreadable is not None:
                raise unreadable
            program = assemble(rewrite_consts(text, variant.params), str(kernel), lab.target)
            check_interface(lab, program, variant.params)
        except NeuronemuError as error:
            report.tests.append(TestResult(f"correct: {label}", 0.0, points, error.render()))
            if variant.timed:
                report.tests.append(_no_perf(variant, len(timed), "not graded: the kernel "
                                             "does not fit this shape"))
            continue
        failure, timing = None, None
        for s in range(seeds):
            seed = seed_base + s
            rng = np.random.default_rng([seed, *variant.params.values()])
            inputs = lab.inputs(rng, variant.params)
            expected = lab.oracle(inputs, variant.params)
            try:
                outputs, run_timing, whole, _ = _run(lab, program, inputs, seed)
            except NeuronemuError as error:
                failure = f"seed {seed}: " + error.render()
                break
            if timing is None:
                timing = run_timing
            wrong = compare(program, outputs, expected, run_timing,
                            whole if lab.topology else None)
            if wrong is not None:
                failure = f"seed {seed}: " + wrong + _warnings(whole)
                break
        if failure is not None:
            report.tests.append(TestResult(f"correct: {label}", 0.0, points, failure))
            if variant.timed:
                report.tests.append(_no_perf(variant, len(timed),
                                             "not graded: the outputs are wrong"))
            continue
        report.tests.append(TestResult(f"correct: {label}", points, points,
                                       f"all {seeds} seeds within the error bound"))
        if variant.timed:
            report.times_ns[variant.name] = timing.time_ns
            report.tests.append(_perf(lab, variant, timing, budget, len(timed)))
            if plot is not None and not report.plots:
                from neuronemu.plot import plot_timeline

                try:
                    plot_timeline(program, timing, plot,
                                  title=f"{lab.name} {variant.name}: {Path(kernel).name}")
                    report.plots.append(str(plot))
                except OSError as error:   # the grade stands; the picture is an extra
                    report.plot_error = f"cannot write {plot}: {error.strerror}"
    report.wall_seconds = time.perf_counter() - started
    return report


def _warnings(result) -> str:
    """The run's located warnings (a read of memory nothing wrote, an activation input outside
    its range): often the cause of wrong values."""
    found = [w for r in getattr(result, "ranks", [result]) for w in r.warnings]
    return "".join("\n" + w.render() for w in found[:2])


def _label(variant: Variant) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in variant.params.items())
    return f"{variant.name} ({shape}{'' if variant.shown else ', not shown'})"


def _no_perf(variant: Variant, n_timed: int, why: str) -> TestResult:
    return TestResult(f"performance: {variant.name}", 0.0, PERFORMANCE_POINTS / n_timed, why)


def _perf(lab: Lab, variant: Variant, timing, budget: Budget, n_timed: int) -> TestResult:
    points = PERFORMANCE_POINTS / n_timed
    name = f"performance: {variant.name}"
    reference = budget.reference_ns.get(variant.name)
    if reference is None:
        return TestResult(name, 0.0, points, f"no recorded reference time for {variant.name} "
                          f"(instructors: python -m tools.labs record)")
    ratio = timing.time_ns / reference
    fraction = tier_fraction(ratio)
    head = (f"modelled {timing.time_ns / 1000:.2f} us, reference {reference / 1000:.2f} us "
            f"({ratio:.2f}x; tiers {tiers_text()})")
    if fraction >= 1.0:
        return TestResult(name, points, points, head)
    return TestResult(name, round(points * fraction, 2), points,
                      head + "\n" + _slow_feedback(timing, ratio))


def note(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
