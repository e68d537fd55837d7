"""``neuronemu grade LAB KERNEL`` as a library call: find the lab, grade the kernel file, build
Gradescope's results.json and write it all-or-none where asked. The CLI prints what this
returns."""

from __future__ import annotations

from pathlib import Path

from neuronemu import files
from neuronemu.errors import InputError
from neuronemu.grade import gradescope
from neuronemu.grade.grader import Report, grade, note
from neuronemu.grade.labs import find_lab
from neuronemu.multichip.comm import launched_by_mpiexec


def grade_file(lab: str, kernel: str, *, seeds: int, seed_base: int, plot: Path | None = None,
               gradescope_path: Path | None = None) -> tuple[Report, dict]:
    """The grading report of ``kernel`` for ``lab`` (a lab folder's name or its number) and its
    results.json document. Raises NeuronemuError."""
    if launched_by_mpiexec():
        # every process would grade alone and the multi-chip labs would wait for each other:
        # each refuses alike, process 0 says why
        raise InputError("neuronemu grade runs in one process: run it without mpiexec (the "
                         "labs' multi-chip runs are small)")
    spec = find_lab(lab)
    path = Path(kernel)
    if not path.is_file():
        raise InputError(f"no such kernel file: {kernel}")
    graded = grade(spec, path, seeds=seeds, seed_base=seed_base, plot=plot, progress=note)
    doc = gradescope.results(graded)
    if gradescope_path is not None:
        files.save_all({"--gradescope": (str(gradescope_path), files.json_writer(doc))})
    return graded, doc
