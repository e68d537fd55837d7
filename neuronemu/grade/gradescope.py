"""The grader's report as Gradescope's autograder ``results.json``: a top-level ``score``, the
``tests`` list (``name``, ``score``, ``max_score``, ``output``) and run metadata, following
https://gradescope-autograders.readthedocs.io/en/latest/specs/ (Output format)."""

from __future__ import annotations

from neuronemu.grade.grader import Report


def results(report: Report) -> dict:
    return {
        "score": report.score,
        "max_score": report.max_score,
        "execution_time": round(report.wall_seconds, 3),
        "output": (f"neuronemu grade {report.lab}: {report.score:g} / {report.max_score:g}"
                   + "".join(f"\ntimeline: {p}" for p in report.plots)),
        "visibility": "visible",
        "tests": [{"name": t.name, "score": round(t.score, 2), "max_score": round(t.max_score, 2),
                   "output": t.output, "visibility": "visible"} for t in report.tests],
    }
