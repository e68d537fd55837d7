"""tools/inst_table.py, the cost-per-instruction table of docs/engine.md (issue 29): its
machinery on two cheap cases, the table it renders and the docs writer. Speed itself is never
asserted in tests: the figures are checked for sign and consistency, not size."""

from __future__ import annotations

import json

import pytest

from tools import inst_table


def test_every_case_assembles_and_has_a_floor():
    pairs = inst_table.select()
    assert len(pairs) > 200
    for case, n in pairs:
        inst_table.check(case, n)


def test_select_by_name_and_size():
    memset = inst_table.select(["vector.memset f32"], [64])
    assert [(c.label, n) for c, n in memset] == [("vector.memset f32", 64)]
    # a fixed-shape case answers for the column asked for: its larger size for 512
    transpose = inst_table.select(["tensor.transpose"], [512])
    assert [n for _, n in transpose] == [128, 128]
    assert [n for _, n in inst_table.select(["vector.transpose"], [64])] == [32]


def test_two_cases_measured_give_positive_figures(tmp_path):
    pairs = inst_table.select(["vector.memset f32", "ctrl.mov r5, 7"], [64])
    raw = tmp_path / "raw.json"
    doc = inst_table.run_cases(pairs, reps=1, target_s=0.03, json_path=raw)
    assert json.loads(raw.read_text()) == doc
    assert doc["ctrl_iter_us"] > 0
    memset, ctrl = doc["rows"]
    assert (memset["case"], memset["n"], ctrl["family"]) == ("f32", 64, "ctrl.mov")
    assert memset["emu_us"] > 0 and memset["np_us"] > 0 and memset["i2"] > memset["i1"]
    assert memset["ratio"] == pytest.approx(memset["emu_us"] / memset["np_us"])
    # a ctrl instruction costs about what the loop's own ctrl cost subtracted from it does, so
    # its figure is near zero and may come out slightly negative on a loaded machine
    assert abs(ctrl["emu_us"]) < 1.0 and ctrl["np_us"] is None and ctrl["ratio"] is None
    text = inst_table.table(doc)
    assert "| `vector.memset` | f32 |  |  |  | " in text   # N=64 only: the second column group
    assert "| `ctrl.mov` | ctrl.mov r5, 7 | " in text


def _row(family, case, n, emu, np_us, **extra):
    return {"family": family, "case": case, "n": n, "emu_us": emu, "np_us": np_us,
            "ratio": emu / np_us if np_us else None, **extra}


def test_the_table_bolds_ratios_over_three():
    doc = {"machine": {"commit": "abc1234", "started": "2026-11-27 12:00", "nproc": 2,
                       "loadavg_start": [1.0, 1, 1], "loadavg_end": [2.0, 1, 1], "reps": 3},
           "rows": [_row("vector.tensor_tensor", "add f32->f32", 512, 7.0, 2.0),
                    _row("vector.tensor_tensor", "add f32->f32", 64, 2.0, 1.0),
                    _row("scalar.activation", "exp f32->f32", 512, 250.0, 25.0, np64_us=60.0),
                    _row("vector.transpose", "f32 [32,32]", 32, 1.5, 0.5),
                    _row("gpsimd.local_gather", "one size", 64, 7.0, 2.0, sizes=[64]),
                    _row("ctrl.mov", "ctrl.mov r5, 7", 1, 0.01, None),
                    {"family": "dma.copy", "case": "broken", "n": 512, "error": "X: y"}]}
    lines = inst_table.table(doc).splitlines()
    assert lines[0].startswith("Measured at `abc1234`, 2026-11-27 12:00, 2 cores, load 1.0–2.0")
    assert lines[1].startswith("**2 of 2** cases over 3x at [128,512]; 1 of 2 fixed-shape")
    rows = [line for line in lines if line.startswith("| `")]
    assert rows == [
        "| `vector.tensor_tensor` | add f32->f32 | 7.00 | 2.00 | **3.50x** | 2.00 | 1.00 | 2.00x |",
        "| `scalar.activation` | exp f32->f32 | 250 | 25.0 (f64 60.0) | **10.0x** |  |  |  |",
        "| `vector.transpose` | f32 [32,32] (N=32) | 1.50 | 0.500 | 3.00x |  |  |  |",
        "| `gpsimd.local_gather` | one size (N=64) | 7.00 | 2.00 | **3.50x** |  |  |  |",
        "| `ctrl.mov` | ctrl.mov r5, 7 | 0.010 | — | — |  |  |  |",
        "| `dma.copy` | broken | error | — | — |  |  |  |",
    ]
    summary = inst_table.summary(doc["rows"])
    assert [name for _, _, name in summary["worst"]] == ["exp f32->f32", "add f32->f32"]
    assert summary["errors"] == ["dma.copy broken N=512"]


def test_write_docs_replaces_only_what_lies_between_the_markers(tmp_path):
    before = "# Title\n\ntext before\n" + inst_table.BEGIN
    after = inst_table.END + "\n\ntext after, with | a | table |\n"
    doc = tmp_path / "doc.md"
    doc.write_text(before + "\n| old | table |\n| 1 | 2 |\n" + after)
    inst_table.write_docs("| new | table |", doc)
    assert doc.read_text() == before + "\n| new | table |\n" + after
    inst_table.write_docs("| newer |", doc)   # and again, in place
    assert doc.read_text() == before + "\n| newer |\n" + after


@pytest.mark.parametrize("text", [
    "no markers at all\n",
    f"{inst_table.BEGIN}\nonly the first\n",
    f"{inst_table.END}\nreversed\n{inst_table.BEGIN}\n",
    f"{inst_table.BEGIN}\n{inst_table.END}\ntwice\n{inst_table.BEGIN}\n{inst_table.END}\n",
])
def test_write_docs_refuses_a_file_without_one_pair_of_markers(tmp_path, text):
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    with pytest.raises(ValueError, match="inst-table"):
        inst_table.write_docs("| new |", doc)
    assert doc.read_text() == text


def test_engine_docs_hold_one_pair_of_markers():
    inst_table.replace_table(inst_table.DOC.read_text(), "| table |")
