"""Instructor tools for the labs of programs/labs (docs/labs/README.md).

    python -m tools.labs record           run every reference solution, write each budget.json
    python -m tools.labs table            grade every starter and reference: times, scores,
                                          budgets and the machine time it took (markdown)
    python -m tools.labs bundle DIR       the student bundle: programs/labs and docs/labs without
                                          any solution/ folder (and nothing else)
    python -m tools.labs pictures         the starter and reference timelines of docs/labs/img
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from neuronemu.grade.grader import grade
from neuronemu.grade.labs import LABS, lab_dir
from neuronemu.grade.spec import Budget


def solution(name: str) -> Path:
    return lab_dir(name) / "solution" / "solution.s"


def record(names: list[str]) -> None:
    for name in names:
        lab = LABS[name]
        placeholder = Budget({v.name: 1.0 for v in lab.variants if v.timed})
        report = grade(lab, solution(name), seeds=1, budget=placeholder)
        missing = [v.name for v in lab.variants if v.timed and v.name not in report.times_ns]
        if missing:
            sys.exit(f"{name}: the reference fails on {missing}:\n{report.text()}")
        Budget(report.times_ns).save(lab_dir(name) / "budget.json")
        print(f"{name}: " + ", ".join(f"{k} {v / 1000:.2f} us"
                                      for k, v in report.times_ns.items()))


def table(names: list[str]) -> None:
    print("| lab | timed shape | reference us | starter us | full marks within (us) "
          "| starter score | reference score |")
    print("|---|---|---:|---:|---:|---:|---:|")
    total = 0.0
    for name in names:
        budget = Budget.load(lab_dir(name) / "budget.json")
        started = time.perf_counter()
        ref = grade(LABS[name], solution(name))
        starter = grade(LABS[name], lab_dir(name) / "starter.s")
        total += time.perf_counter() - started
        for variant, ns in budget.reference_ns.items():
            s = starter.times_ns.get(variant)
            print(f"| {name} | {variant} | {ns / 1000:.2f} | "
                  f"{'-' if s is None else f'{s / 1000:.2f}'} | {1.2 * ns / 1000:.2f} | "
                  f"{starter.score:g} | {ref.score:g} |")
    print(f"\ngrading every starter and reference took {total:.1f} s of wall-clock time")


def bundle(directory: Path) -> None:
    if directory.exists():
        sys.exit(f"{directory} exists; give a new directory")
    ignore = shutil.ignore_patterns("solution", "__pycache__")
    shutil.copytree(ROOT / "programs" / "labs", directory / "programs" / "labs", ignore=ignore)
    shutil.copytree(ROOT / "docs" / "labs", directory / "docs" / "labs", ignore=ignore)
    left = [p for p in directory.rglob("*") if "solution" in p.parts]
    assert not left, left
    print(f"student bundle in {directory} (no solution/ folders)")


def pictures(names: list[str]) -> None:
    """The timelines of starter and reference on the shape the starter is written for."""
    import numpy as np

    from neuronemu.api import assemble
    from neuronemu.grade.grader import _run, rewrite_consts
    from neuronemu.plot import plot_timeline

    out = ROOT / "docs" / "labs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        lab = LABS[name]
        shown = next(v for v in lab.variants if v.shown)
        for which, kernel in (("starter", lab_dir(name) / "starter.s"),
                              ("reference", solution(name))):
            program = assemble(rewrite_consts(kernel.read_text(), shown.params), str(kernel),
                               lab.target)
            inputs = lab.inputs(np.random.default_rng(0), shown.params)
            _, timing, _, _ = _run(lab, program, inputs, 0)
            path = plot_timeline(program, timing, out / f"{name}-{which}.png",
                                 title=f"{name} {which} ({shown.name} shape)")
            print(f"{path.relative_to(ROOT)}: {timing.time_ns / 1000:.2f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("record", "table", "bundle", "pictures"))
    parser.add_argument("arg", nargs="?", help="bundle: the new directory")
    parser.add_argument("--only", help="comma-separated lab names")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(LABS)
    if args.command == "record":
        record(names)
    elif args.command == "table":
        table(names)
    elif args.command == "pictures":
        pictures(names)
    else:
        if not args.arg:
            parser.error("bundle needs a directory")
        bundle(Path(args.arg))


if __name__ == "__main__":
    main()
