"""The grader's front door (issue 30 item 12): uploads saved with a byte-order mark or as UTF-16
are graded as the text they hold; an upload that is not text gets a score of 0 with located
feedback and a results.json; --plot into a missing directory is refused before grading."""

from __future__ import annotations

import codecs
import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronemu.cli import main
from neuronemu.grade.grader import grade
from neuronemu.grade.labs import LABS, lab_dir

LAB = "01-vector-add"
REFERENCE = lab_dir(LAB) / "solution" / "solution.s"
# the lab's smallest shape only: what is tested is how the file is read, not the kernel
SMALL = dataclasses.replace(LABS[LAB], variants=LABS[LAB].variants[:1])


@pytest.mark.parametrize("encoding, mark", [("utf-8", codecs.BOM_UTF8),
                                            ("utf-16-le", codecs.BOM_UTF16_LE),
                                            ("utf-16-be", codecs.BOM_UTF16_BE)])
def test_the_reference_with_a_byte_order_mark_gets_full_marks(tmp_path, encoding, mark):
    upload = tmp_path / "solution.s"
    upload.write_bytes(mark + REFERENCE.read_text().encode(encoding))
    report = grade(SMALL, upload, seeds=1)
    assert report.score == report.max_score > 0, report.text()


def test_a_non_utf8_upload_is_graded_0_with_located_feedback(tmp_path):
    upload = tmp_path / "latin1.s"
    upload.write_bytes(("# author: Andr\u00e9\n" + REFERENCE.read_text()).encode("latin-1"))
    results = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["grade", LAB, str(upload), "--gradescope", str(results)])
    assert result.exit_code == 0, result.output          # grading finished: exit 0
    assert "Traceback" not in result.output
    doc = json.loads(results.read_text())
    assert doc["score"] == 0 and doc["tests"]
    feedback = doc["tests"][0]["output"]
    assert f"{upload}:1:15: error: the kernel is not UTF-8 text: byte e9" in feedback
    assert "save the file as UTF-8" in feedback


def test_plot_into_a_missing_directory_is_refused_before_grading(tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra")
    picture = tmp_path / "missing" / "t.png"
    result = CliRunner().invoke(main, ["grade", LAB, str(REFERENCE), "--plot", str(picture)])
    assert result.exit_code == 4 and "Traceback" not in result.output
    assert f"--plot: cannot write {picture}: the directory {picture.parent} does not exist" \
        in result.output
    assert "grading" not in result.output                  # nothing was graded first


def test_run_refuses_a_plot_into_a_missing_directory_before_running(tmp_path):
    pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra")
    picture = tmp_path / "missing" / "t.png"
    result = CliRunner().invoke(main, ["run", "vector_add", "--plot", str(picture), "--json"])
    assert result.exit_code == 4
    assert json.loads(result.stdout)["error"]["type"] == "InputError"


def test_a_plot_that_cannot_be_written_keeps_the_grade(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="--plot needs the [plot] extra")
    import neuronemu.plot

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(neuronemu.plot, "plot_timeline", full_disk)
    timed = dataclasses.replace(LABS[LAB], variants=(dataclasses.replace(
        LABS[LAB].variants[0], timed=True),))
    report = grade(timed, REFERENCE, seeds=1, plot=Path(tmp_path / "t.png"))
    assert report.tests[0].passed and report.plots == []
    assert report.plot_error == f"cannot write {tmp_path / 't.png'}: No space left on device"


def test_kernel_files_decode_alike_for_run(tmp_path):
    """`neuronemu run`/`check` read kernels the same way (UTF-16 with its mark is text)."""
    kernel = tmp_path / "k.s"
    kernel.write_bytes(codecs.BOM_UTF16_LE + REFERENCE.read_text().encode("utf-16-le"))
    result = CliRunner().invoke(main, ["check", str(kernel)])
    assert result.exit_code == 0 and ": ok (trn2)" in result.output
