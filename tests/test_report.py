"""The library's report, file and lookup jobs, out of the CLI (issue 27, problem 7):
``neuronemu.report`` is the one definition of the --json documents, ``programs.resolve_kernel``
the one kernel lookup, and cli.py click declarations and glue."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neuronemu import report
from neuronemu.cli import main
from neuronemu.errors import InputError, LimitReached
from neuronemu.programs import resolve_kernel
from neuronemu.testing.runner import load_kernel

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "neuronemu" / "cli.py"


def test_the_cli_holds_no_schema() -> None:
    """No schema in the CLI: its documents come from report."""
    text = CLI.read_text()
    assert "schema_version" not in text and "SCHEMA_VERSION" not in text


def test_the_cli_is_within_the_issues_bound() -> None:
    """Issue 27: the commands only; running, grading and failing live in neuronemu.runs,
    neuronemu.grade.command and neuronemu.cli_errors."""
    assert len(CLI.read_text().splitlines()) <= 450


def test_every_document_carries_the_one_schema_version(tmp_path: Path) -> None:
    kernel = tmp_path / "k.s"
    kernel.write_text(".hbm c float32[128, 4] output\n.sbuf t float32[128, 4]\n"
                      "    vector.memset t, value=1.0\n    dma.copy c, t, queue=0\n")
    documents = [["run", str(kernel), "--json"], ["check", str(kernel), "--json"],
                 ["isa", "vector.memset", "--json"], ["run", "nope.s", "--json"],
                 ["run", str(kernel), "--seed", "-1", "--json"]]
    for args in documents:
        doc = json.loads(CliRunner().invoke(main, args).stdout)
        assert doc["schema_version"] == report.SCHEMA_VERSION, args


def test_an_error_document_adds_warnings_only_when_there_are_some() -> None:
    error = LimitReached("stopped", limit="instructions")
    assert "warnings" not in report.error_document(error)
    assert "warnings" not in report.error_document(error, [])


def test_the_summary_in_pieces_equals_float64_numpy(monkeypatch) -> None:
    monkeypatch.setattr(report, "SUMMARY_PIECE", 1000)   # pieces that end mid-row
    values = np.random.default_rng(5).standard_normal((37, 91)).astype(np.float32)
    values[3, 4], values[20, 1], values[30, 30] = np.nan, np.inf, -np.inf
    finite = values[np.isfinite(values)].astype(np.float64)
    doc = report.summary(values)
    assert doc["nan_count"] == 1
    assert (doc["min"], doc["max"]) == (finite.min(), finite.max())
    assert doc["mean"] == pytest.approx(finite.mean(), rel=1e-12)
    assert report.summary(np.full(4, np.nan)) == {"nan_count": 4}


@pytest.mark.parametrize("sizes", [[300] * 7, [1000, 1000], [999, 2, 1500], [5], [1001] * 5])
def test_the_summary_of_parts_is_the_summary_of_their_concatenation(monkeypatch, sizes) -> None:
    """A multi-rank output is summarised rank by rank, in the same pieces as the stacked array
    would be: the same figures to the bit. The oracle cuts the concatenation into pieces of
    SUMMARY_PIECE itself and sums their finite sums with math.fsum."""
    import math

    piece = 1000
    monkeypatch.setattr(report, "SUMMARY_PIECE", piece)
    rng = np.random.default_rng(len(sizes))
    parts = [(rng.standard_normal(n) * 1e3).astype(np.float32) for n in sizes]
    parts[0][:2] = np.nan
    parts[-1][-1] = np.inf
    whole = np.concatenate(parts).astype(np.float64)
    finite = whole[np.isfinite(whole)]
    doc = report.summary_of_parts(parts)
    assert doc["nan_count"] == 2 and (doc["min"], doc["max"]) == (finite.min(), finite.max())
    if whole.size <= piece:
        assert doc["mean"] == float(finite.mean())
    else:
        sums = [float(p[np.isfinite(p)].sum()) for p in
                (whole[i: i + piece] for i in range(0, whole.size, piece))]
        assert doc["mean"] == math.fsum(sums) / finite.size


# --- the one kernel lookup -------------------------------------------------------------------

def test_a_bundled_name_resolves_to_its_file() -> None:
    want = ROOT / "programs" / "examples" / "vector_add.s"
    assert resolve_kernel("vector_add").resolve() == want
    assert resolve_kernel("examples/vector_add.s").resolve() == want


def test_a_file_wins_over_a_bundled_name_and_base_over_the_working_directory(
        tmp_path: Path, monkeypatch) -> None:
    base, cwd = tmp_path / "base", tmp_path / "cwd"
    base.mkdir()
    cwd.mkdir()
    (base / "vector_add").write_text("# in base\n")
    (cwd / "vector_add").write_text("# in cwd\n")
    monkeypatch.chdir(cwd)
    assert resolve_kernel("vector_add", base) == base / "vector_add"
    assert resolve_kernel("vector_add") == Path("vector_add")
    os.remove(base / "vector_add")
    assert resolve_kernel("vector_add", base) == Path("vector_add")


def test_the_cli_and_the_test_kit_refuse_an_unknown_kernel_alike(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["check", "nope.s", "--json"])
    cli_message = json.loads(result.stdout)["error"]["message"]
    with pytest.raises(InputError) as kit:
        load_kernel("nope.s")
    assert cli_message == kit.value.message == (
        "no such kernel file: nope.s (bundled programs: `neuronemu programs` lists them)")
    with pytest.raises(InputError, match=f"looked in {tmp_path} and "):
        load_kernel("nope.s", base=tmp_path)
