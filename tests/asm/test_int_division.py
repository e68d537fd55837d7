"""The integer-division trap: ``scale=1/N`` with an integer N is 0. A division of two integers
that leaves a remainder, in an expression whose value goes to a float argument, is a located
warning that suggests the float division (docs/language.md, "Expressions")."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu import assemble
from neuronemu.cli import main

DECLS = """\
.const N = 128
.hbm a float32[128, 512] input
.hbm c float32[128, 512] output
.sbuf t float32[128, 512]
"""
MUL = "    vector.tensor_scalar t, t, op0=multiply, operand0="


def warnings_of(body: str) -> list:
    # the output is stored last, so that its "no instruction writes output" warning is not
    # among the ones counted here
    return assemble(DECLS + body + "    dma.copy c, t\n", "k.s").warnings


@pytest.mark.parametrize("expression, shown, fix, exact", [
    ("1/N", "1/128", "1.0/N", 0.0078125),
    ("3/2", "3/2", "3.0/2", 1.5),
    ("(N+1)/N", "129/128", "1.0*(N+1)/N", 1.0078125),
    ("1/(2*N)", "1/256", "1.0/(2*N)", 0.00390625),
    ("-1/N", "-1/128", "-1.0/N", -0.0078125),
    ("N/3*2", "128/3", "1.0*N/3", 42.666666666666664),
])
def test_a_truncating_division_in_a_float_argument_warns(expression, shown, fix, exact):
    (warning,) = warnings_of(MUL + expression + "\n")
    quotient = int(shown.split("/")[0]) // int(shown.split("/")[1])
    assert warning.message == (
        f"integer division {shown} is {quotient}, not {exact!r} (both operands are integers: "
        f"the quotient is rounded down), and vector.tensor_scalar argument 'operand0' is a "
        f"float: write {fix}")
    assert (warning.location.line, warning.location.column) == (5, len(MUL) + 1)
    assert warning.render().startswith(f"k.s:5:{len(MUL) + 1}: warning: integer division")
    assert "^" in warning.render()


@pytest.mark.parametrize("expression", [
    "N/2", "256/N", "1.0/N", "1/2.0", "N*1/N", "7%2", "0.5", "N", "-N/4",
])
def test_exact_and_float_divisions_do_not_warn(expression):
    assert warnings_of(MUL + expression + "\n") == []


def test_integer_contexts_do_not_warn():
    body = "    vector.memset t[0:N/3, 0:N/3], value=0\n    dma.copy t, a, queue=7/2\n"
    assert warnings_of(body) == []


def test_a_constant_holding_a_truncated_division_warns_where_it_is_used_as_a_float():
    body = (".const INV = 1/N\n.const COLS = 512/3\n"
            "    vector.memset t[:, 0:COLS], value=0\n"
            "    scalar.activation t, t, func=exp, scale=INV\n")
    (warning,) = warnings_of(body)
    assert warning.message == ("'INV' is 0, not 0.0078125: its .const divides the integers "
                               "1/128 (the quotient is rounded down), and scalar.activation "
                               "argument 'scale' is a float: write 1.0/N in the .const")
    assert (warning.location.line, warning.location.column) == (8, 45)
    assert warning.notes == ("the division is at k.s:5:14",)


def test_init_parameters_are_floats_too():
    program = assemble(".hbm x float32[4, 4] input init=uniform(0, 1/3)\n", "k.s")
    (warning,) = program.warnings
    assert "uniform(...) parameter is a float: write 1.0/3" in warning.message


def test_a_warning_inside_a_macro_names_the_body_line_and_the_use():
    body = ".macro norm n\n    scalar.activation t, t, func=exp, scale=1/\\n\n.endm\n    norm 7\n"
    (warning,) = warnings_of(body)
    assert (warning.location.line, warning.location.column) == (6, 45)
    assert "integer division 1/7 is 0, not 0.14285714285714285" in warning.message
    assert warning.message.endswith("write 1.0/7")   # the fix names the argument's text
    assert "\nnote: in expansion of macro 'norm' from k.s:8:5\n    8 |     norm 7" in \
        warning.render()


def test_check_and_run_show_the_warning_and_json_lists_it(tmp_path):
    kernel = tmp_path / "k.s"
    kernel.write_text(DECLS + "    dma.copy t, a\n" + MUL + "1/N\n    dma.copy c, t\n")
    runner = CliRunner()
    result = runner.invoke(main, ["check", str(kernel)])
    assert result.exit_code == 0
    assert f"{kernel}:6:55: warning: integer division 1/128" in result.stderr
    doc = json.loads(runner.invoke(main, ["check", str(kernel), "--json"]).stdout)
    assert [w["line"] for w in doc["warnings"]] == [6] and doc["ok"] is True
    result = runner.invoke(main, ["run", str(kernel), "--json"])
    assert result.exit_code == 0
    assert "warning: integer division 1/128" in result.stderr
    doc = json.loads(result.stdout)
    assert [w["message"][:25] for w in doc["warnings"]] == ["integer division 1/128 is"]
    # and the trap it warns about is real: the kernel multiplied by 0
    assert doc["outputs"]["c"]["max"] == 0.0
    assert neuronemu.run(neuronemu.assemble_file(kernel)).warnings[0].location.line == 6


def test_the_language_doc_shows_the_warning_as_printed():
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text()
    section = text.split("\n## Expressions\n")[1].split("\n## ")[0]
    shown = re.findall(r"```\n(k\.s:.*?)```", section, re.DOTALL)[0]
    (warning,) = warnings_of("\n\n" + MUL + "1/N\n")   # line 7
    assert warning.render() == shown.rstrip("\n")
