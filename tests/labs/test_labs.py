"""The labs of programs/labs and their grader (docs/labs/README.md).

Every reference solution gets full marks on every seed and shape; every starter gets exactly
the score its handout states; the recorded budgets match the references' modelled times; the
grader's feedback names what is wrong (the element, the line that wrote it, a race, an SBUF
overflow); results.json validates against Gradescope's format; the oracles agree with brute
force on small cases. Grading all fourteen kernels is the bulk of this file's time."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from neuronemu.cli import main
from neuronemu.grade import gradescope
from neuronemu.grade.grader import GradingError, grade, rewrite_consts
from neuronemu.grade.labs import LABS, find_lab, lab_dir
from neuronemu.grade.spec import Budget, tier_fraction

HERE = Path(__file__).parent

# What each starter scores out of 100, as its handout (docs/labs/NN-*.md) says.
STARTER_SCORES = {
    "01-vector-add": 46.67,      # right on the two shapes that fit in SBUF; 65536 columns do not
    "02-matmul": 0.0,            # no K accumulation: wrong everywhere
    "03-softmax": 0.0,           # exp overflows: wrong everywhere
    "04-double-buffer": 79.0,    # correct; one buffer: 1.55x the reference, 30% of the time points
    "05-low-precision": 79.0,    # correct; fp32 matmuls: 1.87x the reference
    "06-conv-maxpool": 70.0,     # correct; unfused, row by row: 5.5x the reference
    "07-ring-allreduce": 79.0,   # correct; whole-buffer ring: 1.54x the reference
}

# Gradescope's results.json, the parts the grader writes
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/, "Output format").
GRADESCOPE_SCHEMA = {
    "type": "object",
    "required": ["score", "tests"],
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "score", "max_score", "output"],
            "properties": {
                "name": {"type": "string"}, "score": {"type": "number"},
                "max_score": {"type": "number"}, "output": {"type": "string"},
                "visibility": {"enum": ["hidden", "after_due_date", "after_published",
                                        "visible"]}},
            "additionalProperties": False}},
    },
    "additionalProperties": False,
}


def reference_text(name: str) -> str:
    return (lab_dir(name) / "solution" / "solution.s").read_text()


def edited(tmp_path: Path, text: str, edits: list[tuple[str, str]]) -> Path:
    """A kernel made from ``text`` by replacing each ``old`` (which must be there) by ``new``."""
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "kernel.s"
    path.write_text(text)
    return path


@functools.cache
def graded(name: str, which: str):
    kernel = (lab_dir(name) / "starter.s" if which == "starter"
              else lab_dir(name) / "solution" / "solution.s")
    return grade(LABS[name], kernel)


def validate_gradescope(doc: dict) -> None:
    """Structural check of results.json (and jsonschema's, when it is installed)."""
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        jsonschema.validate(doc, GRADESCOPE_SCHEMA)
    assert isinstance(doc["score"], (int, float))
    assert set(doc) <= set(GRADESCOPE_SCHEMA["properties"])
    for test in doc["tests"]:
        assert {"name", "score", "max_score", "output"} <= set(test)
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert 0 <= test["score"] <= test["max_score"]
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]), abs=0.05)
    json.dumps(doc)


@pytest.mark.parametrize("name", list(LABS))
def test_reference_gets_full_marks_and_matches_its_budget(name: str) -> None:
    report = graded(name, "reference")
    assert report.score == report.max_score == 100.0, report.text()
    budget = Budget.load(lab_dir(name) / "budget.json")
    timed = [v.name for v in LABS[name].variants if v.timed]
    assert sorted(budget.reference_ns) == sorted(timed)
    for variant, ns in budget.reference_ns.items():
        # a timing-model change moves the references: re-record with tools/labs.py record
        assert report.times_ns[variant] == pytest.approx(ns, rel=0.05), (
            f"{name} {variant}: reference now {report.times_ns[variant]:.1f} ns, budget.json "
            f"says {ns}; run `python -m tools.labs record --only {name}`")
    validate_gradescope(gradescope.results(report))


@pytest.mark.parametrize("name", list(LABS))
def test_starter_scores_what_its_handout_says(name: str) -> None:
    report = graded(name, "starter")
    assert report.score == pytest.approx(STARTER_SCORES[name], abs=0.01), report.text()
    assert report.score < 100.0
    handout = next((HERE.parents[1] / "docs" / "labs").glob(f"{name}*.md")).read_text()
    assert f"{STARTER_SCORES[name]:g} / 100" in handout
    validate_gradescope(gradescope.results(report))


def test_every_lab_has_its_files() -> None:
    docs = HERE.parents[1] / "docs" / "labs"
    assert len(LABS) >= 7
    for name in LABS:
        folder = lab_dir(name)
        assert (folder / "starter.s").is_file() and (folder / "solution" / "solution.s").is_file()
        assert len(list(docs.glob(f"{name}*.md"))) == 1
        for which in ("starter", "reference"):
            picture = docs / "img" / f"{name}-{which}.png"
            assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert picture.stat().st_size < 60_000   # keep the repository small


# ---- feedback ------------------------------------------------------------------------------

def _test(report, prefix: str):
    return next(t for t in report.tests if t.name.startswith(prefix))


def test_wrong_element_is_traced_to_the_instruction_that_wrote_it() -> None:
    report = graded("02-matmul", "starter")
    out = _test(report, "correct: shown").output
    assert "the first is result[0, 0]" in out
    source = (lab_dir("02-matmul") / "starter.s").read_text().split("\n")
    matmul_line = next(i + 1 for i, line in enumerate(source)
                       if "accumulate=false" in line and "tensor.matmul" in line)
    # result <- dma.copy <- out_sb <- vector.tensor_copy <- acc <- the matmul that overwrote it
    assert re.search(r"result\[0, 0\] was last written by line \d+: dma.copy", out)
    assert "vector.tensor_copy out_sb, acc" in out
    assert f"was last written by line {matmul_line}: tensor.matmul" in out


def test_fixing_the_lab2_starter_scores_what_the_handout_says(tmp_path: Path) -> None:
    # step 2 of the handout: the first K tile overwrites, the others accumulate
    fixed = edited(tmp_path, (lab_dir("02-matmul") / "starter.s").read_text(), [
        ("""    ctrl.mov r1, 0                     # k tile
k_tile:
    tensor.matmul acc, lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, r2*512 : r2*512 + 512], accumulate=false
""", """    tensor.matmul acc, lhsT_sb[:, 0, r0*128 : r0*128 + 128], rhs_sb[:, 0, r2*512 : r2*512 + 512], accumulate=false
    ctrl.mov r1, 1
k_tile:
    ctrl.bge r1, KT, done_k
    tensor.matmul acc, lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, r2*512 : r2*512 + 512], accumulate=true
"""),
        ("    ctrl.blt r1, KT, k_tile\n", "    ctrl.jmp k_tile\ndone_k:\n")])
    report = grade(LABS["02-matmul"], fixed)
    assert report.score == 88.0, report.text()
    handout = (HERE.parents[1] / "docs" / "labs" / "02-matmul.md").read_text()
    assert "scores 88 / 100" in handout


def test_sbuf_overflow_on_an_unseen_shape_is_reported() -> None:
    report = graded("01-vector-add", "starter")
    out = _test(report, "correct: past-sbuf").output
    assert "SBUF overflow" in out and "starter.s:" in out
    assert _test(report, "performance: past-sbuf").score == 0


def test_race_is_reported_by_the_detector(tmp_path: Path) -> None:
    # double buffering without waiting for a buffer's store before loading into it again
    racy = edited(tmp_path, reference_text("04-double-buffer"), [
        ("    sync.wait q0, sem=4, value=r0", "    # (no wait)"),
        ("    sync.wait q0, sem=5, value=r0", "    # (no wait)")])
    report = grade(LABS["04-double-buffer"], racy, seeds=1)
    out = _test(report, "correct: shown").output
    assert "race on 'buf'" in out
    assert report.score == 0


def test_fp8_operands_break_the_error_bound(tmp_path: Path) -> None:
    fp8 = edited(tmp_path, reference_text("05-low-precision"), [("bfloat16", "float8_e4m3")])
    report = grade(LABS["05-low-precision"], fp8, seeds=1)
    for shape in ("shown", "wide"):
        assert "allowed error" in _test(report, f"correct: {shape}").output
    assert report.score < 50


def test_slow_kernel_gets_a_tier_and_its_critical_path() -> None:
    report = graded("06-conv-maxpool", "starter")
    perf = _test(report, "performance: layer")
    assert perf.score == 0 and "Critical path: dma.q" in perf.output
    ratio = float(re.search(r"\(([\d.]+)x;", perf.output).group(1))
    assert ratio > 2.0


def test_tiers() -> None:
    assert tier_fraction(1.0) == tier_fraction(1.2) == 1.0
    assert tier_fraction(1.21) == 0.6 and tier_fraction(1.9) == 0.3 and tier_fraction(2.01) == 0


# ---- the grader does not trust the kernel ---------------------------------------------------

def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kernel.s"
    path.write_text(text)
    return path


def test_kernel_without_the_size_constant_is_refused(tmp_path: Path) -> None:
    text = (lab_dir("01-vector-add") / "starter.s").read_text().replace(".const N = 4096",
                                                                       ".const M = 4096")
    report = grade(LABS["01-vector-add"], _write(tmp_path, text.replace("N]", "M]")), seeds=1)
    assert report.score == 0
    assert "must declare `.const N = ...`" in report.tests[0].output


def test_rewrite_keeps_line_numbers_and_comments() -> None:
    text = "# x\n.const N = 4  # columns\n  .const  K=2\n"
    assert rewrite_consts(text, {"N": 64, "K": 3}) == "# x\n.const N = 64  # columns\n  .const  K= 3\n"
    with pytest.raises(GradingError):
        rewrite_consts(".const N = 1\n.const N = 2\n", {"N": 3})


def test_interface_mismatch_is_refused(tmp_path: Path) -> None:
    text = (lab_dir("01-vector-add") / "starter.s").read_text()
    kernel = _write(tmp_path, text.replace(".hbm b float32", ".hbm b bfloat16").replace(
        ".sbuf b_tile float32", ".sbuf b_tile bfloat16"))
    report = grade(LABS["01-vector-add"], kernel, seeds=1)
    assert report.score == 0
    assert "'b' is declared bfloat16[128, 4096] input, the lab needs float32" in \
        report.tests[0].output


def test_forbidden_builtin_is_refused(tmp_path: Path) -> None:
    kernel = _write(tmp_path, ".target trn2\n.const COLS = 4096\n"
                    ".hbm x float32[128, COLS] input\n.hbm y float32[128, COLS] output\n"
                    "    cc.all_reduce y, x, op=add\n")
    report = grade(LABS["07-ring-allreduce"], kernel, seeds=1)
    assert report.score == 0
    assert "cc.all_reduce is what this lab asks you to build yourself" in report.tests[0].output


def test_an_endless_kernel_is_stopped_by_the_instruction_limit(tmp_path: Path) -> None:
    text = (lab_dir("01-vector-add") / "starter.s").read_text() + "spin:\n    ctrl.jmp spin\n"
    lab = dataclasses.replace(LABS["01-vector-add"], max_instructions=10_000)
    report = grade(lab, _write(tmp_path, text), seeds=1)
    assert "instruction limit" in report.tests[0].output or "10000" in report.tests[0].output
    assert report.score == 0


def test_an_expansion_bomb_is_graded_zero_and_results_are_written(tmp_path: Path) -> None:
    """Two nested empty `.rept 1000000` never finished assembling: `grade` spun without limit
    and wrote no results.json (issue 30). Now each shape gets the located error and a 0."""
    text = (lab_dir("01-vector-add") / "starter.s").read_text() + (
        ".rept 1000000\n.rept 1000000\n.endr\n.endr\n")
    out = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["grade", "1", str(_write(tmp_path, text)),
                                       "--gradescope", str(out), "--seeds", "1"])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["score"] == 0
    assert "exceeds 1,000,000 repetitions and macro uses" in doc["tests"][0]["output"]


def test_ctrl_c_stops_grading_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C during one shape's run was graded as that shape's failure: grading went on,
    exited 0 and wrote results.json (issue 30). It stops the grader: exit 130, no file."""
    from neuronemu.errors import Interrupted
    from neuronemu.grade import grader

    calls = []

    def interrupted_run(*args, **kwargs):
        calls.append(args)
        raise Interrupted("interrupted (Ctrl-C) at vector.tensor_tensor after 3 instructions",
                          limit="interrupt", steps=3)

    monkeypatch.setattr(grader, "_run", interrupted_run)
    with pytest.raises(KeyboardInterrupt):
        grade(LABS["01-vector-add"], lab_dir("01-vector-add") / "starter.s", seeds=1)
    assert len(calls) == 1
    out = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["grade", "1", str(lab_dir("01-vector-add") /
                                                         "starter.s"),
                                       "--gradescope", str(out), "--seeds", "1", "--json"])
    assert result.exit_code == 130, result.output
    assert not out.exists() and len(calls) == 2
    assert json.loads(result.stdout)["error"]["type"] == "Interrupted"
    assert "error: interrupted (Ctrl-C) at vector.tensor_tensor" in result.stderr


def test_unwritten_output_is_named(tmp_path: Path) -> None:
    text = (lab_dir("01-vector-add") / "starter.s").read_text().replace(
        "    dma.copy c, a_tile, queue=2", "    dma.copy c[0:64, :], a_tile[0:64, :], queue=2")
    report = grade(LABS["01-vector-add"], _write(tmp_path, text), seeds=1)
    out = report.tests[0].output
    assert "the first is c[64, 0]" in out and "no instruction wrote c[64, 0]" in out


# ---- the oracles against brute force --------------------------------------------------------

def test_conv_oracle_matches_loops() -> None:
    lab = LABS["06-conv-maxpool"]
    p = {"C_IN": 2, "C_OUT": 3, "H": 4, "W": 4}
    inputs = lab.inputs(np.random.default_rng(5), p)
    want, bound = lab.oracle(inputs, p)["y"]
    x, w = inputs["x"].astype(np.float64), inputs["w"].astype(np.float64)
    assert not x[:, 0, :].any() and not x[:, :, -1].any()   # zero padding
    conv = np.zeros((3, 4, 4))
    for o in range(3):
        for i in range(4):
            for j in range(4):
                conv[o, i, j] = sum(x[c, i + dy, j + dx] * w[c, 3 * dy + dx, o]
                                    for c in range(2) for dy in range(3) for dx in range(3))
    pooled = np.array([[[conv[o, 2 * i: 2 * i + 2, 2 * j: 2 * j + 2].max() for j in range(2)]
                        for i in range(2)] for o in range(3)])
    np.testing.assert_allclose(want, pooled, rtol=1e-12, atol=1e-12)
    assert (bound > 0).all() and (bound < 1e-4).all()


def test_softmax_and_allreduce_oracles() -> None:
    soft = LABS["03-softmax"]
    x = np.array([[1000.0, 1000.0, -1000.0, 1000.0]], dtype=np.float32)
    y, _ = soft.oracle({"x": x}, {"R": 1, "D": 4})["y"]
    np.testing.assert_allclose(y, [[1 / 3, 1 / 3, 0, 1 / 3]], rtol=1e-15)
    ring = LABS["07-ring-allreduce"]
    x = np.arange(16 * 128 * 16, dtype=np.float32).reshape(16, 128, 16)
    y, _ = ring.oracle({"x": x}, {"COLS": 16})["y"]
    assert y.shape == x.shape and y[3, 1, 2] == sum(x[r, 1, 2] for r in range(16))


def test_matmul_oracle_bound_is_tight_enough_to_catch_bf16_output() -> None:
    lab = LABS["02-matmul"]
    p = {"M": 128, "K": 128, "N": 512}
    inputs = lab.inputs(np.random.default_rng(1), p)
    want, bound = lab.oracle(inputs, p)["result"]
    rounded = want.astype(ml_dtypes.bfloat16).astype(np.float64)   # a bf16 result is too coarse
    assert (np.abs(rounded - want) > bound).any()
    assert (np.abs(want.astype(np.float32) - want) <= bound).all()  # one fp32 rounding is fine


# ---- command line ---------------------------------------------------------------------------

def test_cli_grade_writes_gradescope_json(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["grade", "3", str(lab_dir("03-softmax") / "starter.s"),
                                       "--gradescope", str(out), "--seeds", "1"])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    validate_gradescope(doc)
    assert doc["score"] == 0 and "FAIL" in result.output


def test_cli_grade_errors_and_list(tmp_path: Path) -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["grade", "--list"])
    assert listing.exit_code == 0 and all(name in listing.output for name in LABS)
    unknown = runner.invoke(main, ["grade", "99-nope", str(tmp_path / "k.s")])
    assert unknown.exit_code == 4 and "no lab '99-nope'" in unknown.output
    missing = runner.invoke(main, ["grade", "1", str(tmp_path / "absent.s")])
    assert missing.exit_code == 4 and "no such kernel file" in missing.output
    assert find_lab("1") is find_lab("01-vector-add")


def test_plot_is_drawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    picture = tmp_path / "t.png"
    result = CliRunner().invoke(main, ["run", str(lab_dir("01-vector-add") / "starter.s"),
                                       "--plot", str(picture)])
    assert result.exit_code == 0, result.output
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = grade(LABS["03-softmax"], lab_dir("03-softmax") / "solution" / "solution.s",
                   seeds=1, plot=tmp_path / "g.png")
    assert report.plots == [str(tmp_path / "g.png")] and (tmp_path / "g.png").stat().st_size


def test_plot_without_matplotlib_says_how_to_install(monkeypatch, tmp_path: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    picture = tmp_path / "t.png"
    for args in (["run", str(lab_dir("01-vector-add") / "starter.s")],
                 ["grade", "1", str(lab_dir("01-vector-add") / "starter.s")]):
        result = CliRunner().invoke(main, [*args, "--plot", str(picture)])
        assert result.exit_code == 2
        assert "pip install 'neuronemu[plot]'" in result.output
        assert not picture.exists()


def test_last_writer_is_the_last_of_two_overlapping_stores() -> None:
    import neuronemu
    from neuronemu.grade.provenance import last_writers

    program = neuronemu.assemble(
        ".hbm a float32[128, 64] input\n"             # line 1
        ".hbm c float32[128, 64] output\n"
        ".sbuf t float32[128, 64]\n"
        ".sbuf u float32[128, 64]\n"
        "    dma.copy t, a, queue=0\n"                  # line 5
        "    vector.tensor_scalar u, t, op0=add, operand0=1.0\n"
        "    dma.copy c, t, queue=1\n"                  # line 7: all of c
        "    dma.copy c[0:64, 32:64], u[0:64, 32:64], queue=2\n",   # line 8: a corner again
        "k.s")
    result = neuronemu.run(program)
    lines = [program.instructions[w.pc].location.line
             for w in last_writers(program, result.timing, "c", (10, 40))]
    assert lines == [8, 6]          # c <- dma.copy (8) <- u <- vector.tensor_scalar (6)
    lines = [program.instructions[w.pc].location.line
             for w in last_writers(program, result.timing, "c", (100, 40))]
    assert lines == [7, 5]          # c <- dma.copy (7) <- t <- dma.copy (5) <- a: an input
    lines = [program.instructions[w.pc].location.line
             for w in last_writers(program, result.timing, "c", (10, 31))]
    assert lines == [7, 5]


def test_student_bundle_leaves_out_the_solutions(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "bundle"
    subprocess.run([sys.executable, str(HERE.parents[1] / "tools" / "labs.py"), "bundle",
                    str(out)], check=True, capture_output=True)
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert "programs/labs/01-vector-add/starter.s" in files
    assert "programs/labs/01-vector-add/budget.json" in files      # grading needs no solution
    assert "docs/labs/01-vector-add.md" in files
    assert not [f for f in files if "solution" in f]
