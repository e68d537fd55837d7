"""Long fuzz run (issue 17): generated and mutated kernels, corrupt .neo files, odd API inputs and
command lines, each executed in a worker process; prints counts by outcome and writes one
minimal reproducer per distinct failure signature.

Usage:
    python -m tools.fuzz [--cases N] [--seed S] [--time-budget SECONDS] [--jobs J]
                         [--modes generated,example,mutant,neo,api,cli] [--out DIR] [--no-minimize]
                         [--hostile-rounds R] [--hostile CLASS,...]

After the generated cases, the hostile-input replay (tests/fuzz/hostile.py, issue 30) runs each
of its classes R times (default 1; 0: none) -- devices, FIFOs, symlinks and read-only files as
outputs, pipes as inputs, nested .rept, Ctrl-C and SIGTERM mid-run and mid-write, damaged and
read-only caches, grader uploads that are not UTF-8, bf16 .npy, MPI mismatches -- and reports
per class. ``--cases 0`` runs the replay alone.

Outcomes: ``ok``; a documented error (``AsmError``, ``RuntimeFault``, ``SyncError``,
``CommError``, ``InputError``; for the CLI ``exit N``) -- these pass; and failures: a Python
traceback (signature = exception type @ innermost neuronemu frame), a signal that killed the
worker, a hang (> --timeout), an ``AsmError``/``RuntimeFault`` without a location, or a
``--json`` run whose stdout is not one JSON document. The strategies live in
tests/fuzz/fuzzgen.py (the short-budget property tests in tests/fuzz/test_fuzz.py use them too).
Exit status: 0 when no failure was seen, 1 otherwise.

Silent out-of-bounds accesses in the compiled interpreter are invisible to this property; run
with ``NEURONEMU_BOUNDSCHECK=1`` (inherited by the workers; the first run compiles again, with
bounds checks) to turn them into IndexError tracebacks.
"""

from __future__ import annotations

import argparse
import json
import pickle
import queue
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.fuzz import fuzzgen, fuzzrun, hostile
from tests.fuzz.known import known_family

# share of each mode in a run: kernels reach most code, the others are cheap
DEFAULT_MODES = {"generated": 3, "example": 2, "mutant": 3, "neo": 2, "api": 1, "cli": 1}


@dataclass
class Failure:
    signature: str
    kind: str
    count: int = 0
    modes: Counter = field(default_factory=Counter)
    case: dict | None = None
    detail: str = ""
    size: int = 1 << 60


class Tally:
    """Counts by outcome and by mode, and the smallest case of each failure signature."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: Counter = Counter()
        self.by_mode: dict[str, Counter] = {}
        self.failures: dict[str, Failure] = {}
        self.cases = 0
        self.slowest: list[tuple[float, str, str, dict]] = []  # (seconds, mode, outcome, case)

    def add(self, mode: str, case: dict, outcome: fuzzrun.Outcome, seconds: float) -> None:
        with self.lock:
            self.cases += 1
            self.slowest.append((seconds, mode, outcome.signature, case))
            self.slowest = sorted(self.slowest, key=lambda s: -s[0])[:5]
            label = outcome.signature if outcome.failed else _pass_label(outcome)
            self.outcomes[label] += 1
            self.by_mode.setdefault(mode, Counter())[label] += 1
            if not outcome.failed:
                return
            failure = self.failures.setdefault(outcome.signature,
                                               Failure(outcome.signature, outcome.kind))
            failure.count += 1
            failure.modes[mode] += 1
            size = case_size(case)
            if size < failure.size:
                failure.case, failure.detail, failure.size = case, outcome.detail, size


def _pass_label(outcome: fuzzrun.Outcome) -> str:
    if outcome.kind == "ok":
        return "ok"
    if outcome.kind == "error":
        return f"located {outcome.signature}"
    return outcome.signature                            # "exit N"


def case_size(case: dict) -> int:
    if case["mode"] == "asm":
        return len(case["source"])
    if case["mode"] == "neo":
        return len(case["corruptions"]) * 100000 + len(case["data"])
    return len(pickle.dumps(case))


# ---------------------------------------------------------------------------------------------
# generation and execution
# ---------------------------------------------------------------------------------------------

class _Stop(Exception):
    """Raised inside the hypothesis loop when the time budget is spent."""


def generate(args, sink) -> None:
    """Draw cases with hypothesis (generation phase only: no shrinking) and hand them on."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    weights = [m for m, w in args.modes.items() for _ in range(w)]
    deadline = time.monotonic() + args.time_budget if args.time_budget else None

    @hseed(args.seed)
    @settings(max_examples=args.cases, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw_cases(data) -> None:
        if deadline is not None and time.monotonic() > deadline:
            stopped.set()
            raise _Stop
        mode = data.draw(st.sampled_from(weights), label="mode")
        sink(mode, data.draw(fuzzgen.MODES[mode](), label="case"))

    stopped = threading.Event()
    try:
        draw_cases()
    except Exception:
        # Past the deadline hypothesis replays the example that raised _Stop; that example
        # draws less than the earlier one with the same start, so hypothesis may answer with
        # FlakyStrategyDefinition instead of _Stop (issue 30 item 14). Either is the stop.
        if not stopped.is_set():
            raise


def _report_at_once(out: Path | None, tally: Tally, mode: str, case: dict,
                    outcome: fuzzrun.Outcome) -> None:
    """A failure is shown and kept when it happens, not only in the summary: a run of 10^6
    cases takes hours, and one killed before its end would otherwise have lost them."""
    with tally.lock:
        number = sum(f.count for f in tally.failures.values())
    print(f"  failure {number} ({mode}): {outcome.signature}", file=sys.stderr, flush=True)
    if out is not None:
        write_reproducer(out / "as-found" / f"{number:04d}_{_slug(outcome.signature)}",
                         Failure(outcome.signature, outcome.kind, detail=outcome.detail), case)


def run_all(args) -> tuple[Tally, float, dict[str, float]]:
    tally = Tally()
    jobs: queue.Queue = queue.Queue(maxsize=4 * args.jobs)
    busy: Counter = Counter()                     # seconds spent executing, per mode
    workers = [fuzzrun.Worker(timeout=args.timeout) for _ in range(args.jobs)]

    def consume(worker: fuzzrun.Worker) -> None:
        while (item := jobs.get()) is not None:
            mode, case = item
            start = time.perf_counter()
            outcome = worker.run(case)
            with tally.lock:
                busy[mode] += time.perf_counter() - start
            tally.add(mode, case, outcome, time.perf_counter() - start)
            if outcome.failed:
                _report_at_once(args.out, tally, mode, case, outcome)
            if args.progress and tally.cases % args.progress == 0:
                fails = sum(f.count for f in tally.failures.values())
                print(f"  {tally.cases} cases, {fails} failures, "
                      f"{len(tally.failures)} signatures", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=consume, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    # start the workers (imports, numba cache) before the clock
    for w in workers:
        w.run({"mode": "api", "source": "", "inputs": {}})
    start = time.perf_counter()
    generate(args, lambda mode, case: jobs.put((mode, case)))
    for _ in threads:
        jobs.put(None)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for w in workers:
        w.close()
    return tally, elapsed, dict(busy)


# ---------------------------------------------------------------------------------------------
# minimisation
# ---------------------------------------------------------------------------------------------

def ddmin(items: list, still_fails) -> list:
    """Zeller's delta debugging: a 1-minimal sublist of ``items`` for which ``still_fails``."""
    n = 2
    while len(items) >= 2:
        chunk = max(1, len(items) // n)
        subsets = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for i in range(len(subsets)):
            complement = [x for j, s in enumerate(subsets) if j != i for x in s]
            if still_fails(complement):
                items, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def _rebuild(case: dict, parts: list) -> dict:
    new = dict(case)
    if case["mode"] == "asm":
        new["source"] = b"\n".join(parts)
    elif case["mode"] == "neo":
        new["corruptions"] = parts
        new["data"] = fuzzgen.apply_corruptions(fuzzgen.encoded_programs()[case["base"]], parts)
    elif case["mode"] == "cli":
        new["groups"] = parts
        new["argv"] = case["head"] + [word for group in parts for word in group]
    elif case["mode"] == "api":
        new["inputs"] = dict(parts[0]) if case["inputs"] is not None else None
        new["kwargs"] = dict(parts[1])
    return new


def _parts(case: dict) -> list:
    if case["mode"] == "asm":
        return case["source"].split(b"\n")
    if case["mode"] == "neo":
        return list(case["corruptions"])
    if case["mode"] == "cli":
        return list(case["groups"])
    return []


def minimise(failure: Failure, worker: fuzzrun.Worker, budget: float) -> dict:
    """The smallest case seen, reduced while the worker reports the same signature."""
    case = failure.case
    deadline = time.monotonic() + budget
    runs = 0

    def same(candidate: dict) -> bool:
        nonlocal runs
        if time.monotonic() > deadline:
            return False
        runs += 1
        return worker.run(candidate).signature == failure.signature

    if case["mode"] == "api":
        if case["inputs"]:
            for name in list(case["inputs"]):
                smaller = dict(case, inputs={k: v for k, v in case["inputs"].items() if k != name})
                if same(smaller):
                    case = smaller
        for key in list(case["kwargs"]):
            smaller = dict(case, kwargs={k: v for k, v in case["kwargs"].items() if k != key})
            if same(smaller):
                case = smaller
        return case
    parts = ddmin(_parts(case), lambda p: same(_rebuild(case, p)))
    case = _rebuild(case, parts)
    if case["mode"] == "asm":
        case = _shorten_lines(case, same)
    return case


def _shorten_lines(case: dict, same) -> dict:
    """Drop trailing comments and trailing operands line by line while the failure stays."""
    lines = case["source"].split(b"\n")
    for i, line in enumerate(lines):
        candidates = [re.sub(rb"\s*#.*$", b"", line)]
        pieces = line.split(b",")
        candidates += [b",".join(pieces[:k]) for k in range(len(pieces) - 1, 0, -1)]
        for candidate in candidates:
            if candidate == lines[i]:
                continue
            trial = dict(case, source=b"\n".join(lines[:i] + [candidate] + lines[i + 1:]))
            if same(trial):
                lines[i], case = candidate, trial
    return case


# ---------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------

def _jsonable(value):
    if isinstance(value, bytes):
        return {"bytes_latin1": value.decode("latin-1")}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return repr(value)


def _slug(signature: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", signature).strip("_")[:60]


def write_reproducer(directory: Path, failure: Failure, case: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "case.json").write_text(json.dumps(_jsonable(case), indent=1))
    (directory / "outcome.txt").write_text(f"{failure.signature}\n\n{failure.detail}\n")
    mode = case["mode"]
    if mode == "asm":
        (directory / "kernel.s").write_bytes(case["source"])
        how = (f"neuronemu {'run' if case.get('run') else 'check'} kernel.s"
               + (f" --max-instructions {case.get('max_instructions')}" if case.get("run") else ""))
    elif mode == "neo":
        (directory / "kernel.neo").write_bytes(case["data"])
        how = "neuronemu disasm kernel.neo" + (" && neuronemu run kernel.neo" if case["run"] else "")
    elif mode == "cli":
        for name, content in case["files"].items():
            if isinstance(content, bytes):
                (directory / name).write_bytes(content)
        how = ("(in a directory holding these files, an empty dir/, k.neo = `neuronemu asm k.s`, "
               f"in.npy = fuzzrun._npy_file({case['files'].get('in.npy')!r}))\n"
               f"neuronemu {' '.join(case['argv'])}")
    else:
        (directory / "repro.py").write_text(
            "# PYTHONPATH=<the repository root> python repro.py\n"
            "import neuronemu\nfrom tests.fuzz.fuzzrun import make_array\n\n"
            f"program = neuronemu.assemble({case['source']!r})\n"
            f"inputs = {case['inputs']!r}\n"
            "if isinstance(inputs, dict):\n"
            "    inputs = {k: make_array(v) if isinstance(v, tuple) else v "
            "for k, v in inputs.items()}\n"
            f"neuronemu.run(program, inputs=inputs, **{dict(case['kwargs'])!r})\n")
        how = f"PYTHONPATH={ROOT} python repro.py"
    (directory / "README").write_text(f"{failure.signature}\nseen {failure.count} times "
                                      f"({dict(failure.modes)})\nreproduce: {how}\n")


def report(tally: Tally, elapsed: float, busy: dict[str, float], minimal: dict[str, dict],
           out: Path | None) -> str:
    lines = [(f"{tally.cases} cases in {elapsed:.0f} s ({tally.cases / max(elapsed, 1e-9):.1f} "
             f"cases/s)"), "", "outcomes:"]
    for label, n in tally.outcomes.most_common():
        lines.append(f"  {n:8d}  {label}")
    lines += ["", "per mode (cases, worker seconds, cases/s of worker time):"]
    for mode, counts in sorted(tally.by_mode.items()):
        n = sum(counts.values())
        rate = n / busy[mode] if busy.get(mode) else 0.0
        failed = sum(v for k, v in counts.items() if k in tally.failures)
        lines.append(f"  {mode:10s} {n:8d} cases  {busy.get(mode, 0):7.1f} s  {rate:7.1f}/s  "
                     f"{failed} failures")
    lines += ["", "slowest cases:"]
    for seconds, mode, signature, case in tally.slowest:
        lines.append(f"  {seconds:7.2f} s  {mode:9s} {signature}  ({case.get('origin', '')})")
    lines += ["", f"distinct failure signatures: {len(tally.failures)}"]
    for i, f in enumerate(sorted(tally.failures.values(), key=lambda f: -f.count)):
        family = known_family(f.signature, f.case)
        label = f"known family {family}" if family else "NEW"
        lines.append(f"  [{i:02d}] {f.count:6d}  {f.signature}   modes {dict(f.modes)}  "
                     f"-> {label}")
        case = minimal.get(f.signature, f.case)
        if case and case["mode"] == "asm":
            text = case["source"].decode("utf-8", "backslashreplace")
            lines += ["         | " + _clip(line) for line in text.splitlines()[:12]]
        elif case and case["mode"] == "cli":
            lines.append(f"         | neuronemu {' '.join(case['argv'])}")
        elif case and case["mode"] == "neo":
            lines.append(_clip(f"         | {case['base']}.neo with {case['corruptions']}"))
        elif case:
            lines.append(_clip(f"         | inputs={case['inputs']} kwargs={case['kwargs']}"))
        if out is not None:
            lines.append(f"         reproducer: {out / 'failures' / f'{i:02d}_{_slug(f.signature)}'}")
    return "\n".join(lines)


def _clip(line: str, width: int = 160) -> str:
    return line if len(line) <= width else line[:width] + f"... ({len(line)} chars)"


# ---------------------------------------------------------------------------------------------
# hostile-input replay
# ---------------------------------------------------------------------------------------------

@dataclass
class Replay:
    """Per hostile class: each round's verdict."""
    verdicts: dict[str, list[hostile.Verdict]] = field(default_factory=dict)
    seconds: float = 0.0

    def failures(self) -> int:
        return sum(not v.ok for vs in self.verdicts.values() for v in vs)

    def summary(self) -> dict:
        return {"seconds": round(self.seconds, 1), "classes": {
            name: {"item": hostile.CLASSES[name][0],
                   "passed": sum(v.ok and not v.skipped for v in vs),
                   "failed": sum(not v.ok for v in vs),
                   "skipped": sum(bool(v.skipped) for v in vs),
                   "first_failure": next((v.detail for v in vs if not v.ok), None),
                   "skip_reason": next((v.skipped for v in vs if v.skipped), None)}
            for name, vs in self.verdicts.items()}}


def replay_hostile(classes: list[str], rounds: int, seed: int, jobs: int) -> Replay:
    """Every class ``rounds`` times (round r of a class uses seed ``seed * 1000 + r``)."""
    from concurrent.futures import ThreadPoolExecutor

    replay = Replay({name: [] for name in classes} if rounds > 0 else {})
    start = time.perf_counter()
    work = [(name, seed * 1000 + r) for r in range(rounds) for name in classes]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for (name, _), verdict in zip(work, pool.map(lambda w: hostile.replay(*w), work),
                                      strict=True):
            replay.verdicts[name].append(verdict)
    replay.seconds = time.perf_counter() - start
    return replay


def hostile_report(replay: Replay) -> str:
    cases = sum(len(vs) for vs in replay.verdicts.values())
    lines = [(f"hostile-input replay (issue 30): {cases} cases in {replay.seconds:.0f} s, "
             f"{replay.failures()} failed"), "  class                    item  pass  fail  skip"]
    for name, data in replay.summary()["classes"].items():
        lines.append(f"  {name:24s} {data['item']:>4s}  {data['passed']:4d}  {data['failed']:4d}"
                     f"  {data['skipped']:4d}")
        if data["first_failure"]:
            lines += ["      | " + _clip(line) for line in data["first_failure"].splitlines()[:6]]
        elif data["skip_reason"] and not data["passed"]:
            lines.append(f"      skipped: {data['skip_reason']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-budget", type=float, default=0.0,
                        help="stop generating after this many seconds (0: no limit)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help="comma-separated modes, optionally weighted: generated:4,neo:1")
    parser.add_argument("--timeout", type=float, default=fuzzrun.CASE_TIMEOUT,
                        help="seconds before a case counts as a hang")
    parser.add_argument("--out", type=Path, help="directory for the summary and reproducers")
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--minimize-seconds", type=float, default=60.0,
                        help="time spent reducing each failure signature")
    parser.add_argument("--progress", type=int, default=1000,
                        help="print a line every N cases (0: never)")
    parser.add_argument("--hostile-rounds", type=int, default=1,
                        help="rounds of the hostile-input replay after the cases (0: none)")
    parser.add_argument("--hostile", default=",".join(hostile.CLASSES),
                        help="comma-separated hostile-input classes to replay")
    args = parser.parse_args(argv)
    modes = {}
    for item in args.modes.split(","):
        name, _, weight = item.partition(":")
        if name not in fuzzgen.MODES:
            parser.error(f"unknown mode {name!r} (modes: {', '.join(fuzzgen.MODES)})")
        modes[name] = int(weight) if weight else DEFAULT_MODES.get(name, 1)
    args.modes = modes
    classes = [c for c in args.hostile.split(",") if c]
    unknown = [c for c in classes if c not in hostile.CLASSES]
    if unknown:
        parser.error(f"unknown hostile class(es) {unknown} (classes: "
                     f"{', '.join(hostile.CLASSES)})")

    if args.cases > 0:
        tally, elapsed, busy = run_all(args)
    else:
        tally, elapsed, busy = Tally(), 0.0, {}
    replay = replay_hostile(classes, args.hostile_rounds, args.seed, args.jobs)
    minimal: dict[str, dict] = {}
    if not args.no_minimize and tally.failures:
        worker = fuzzrun.Worker(timeout=args.timeout)
        for f in tally.failures.values():
            if f.kind in ("hang",):
                minimal[f.signature] = f.case    # each try would cost the whole timeout
                continue
            minimal[f.signature] = minimise(f, worker, args.minimize_seconds)
        worker.close()
    text = report(tally, elapsed, busy, minimal, args.out)
    if args.hostile_rounds > 0:
        text += "\n\n" + hostile_report(replay)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.txt").write_text(text + "\n")
        ordered = sorted(tally.failures.values(), key=lambda f: -f.count)
        for i, f in enumerate(ordered):
            write_reproducer(args.out / "failures" / f"{i:02d}_{_slug(f.signature)}", f,
                             minimal.get(f.signature, f.case))
        (args.out / "summary.json").write_text(json.dumps({
            "cases": tally.cases, "seconds": elapsed, "seed": args.seed,
            "outcomes": dict(tally.outcomes),
            "by_mode": {m: dict(c) for m, c in tally.by_mode.items()},
            "worker_seconds": busy,
            "failures": [{"signature": f.signature, "count": f.count, "modes": dict(f.modes),
                          "known_family": known_family(f.signature, f.case)}
                         for f in ordered],
            "hostile": replay.summary()},
            indent=1))
    return 1 if tally.failures or replay.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
