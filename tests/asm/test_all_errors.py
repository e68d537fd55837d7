"""Every independent error of a file at once (asm/collect.py, docs/language.md "Errors").

Oracle: the golden diagnostics of tests/asm/invalid/*.s. Each of their case lines is an
independent error with a ``# CHECK:`` comment; assembling a whole file must report exactly the
CHECK lines (line, column, message), in the format each has alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronemu import AsmError, assemble
from neuronemu.cli import main
from neuronemu.errors import MAX_ERRORS

CASES_DIR = Path(__file__).parent / "invalid"
CHECK = re.compile(r"#\s*CHECK:\s*(\d+):\s*error:\s*(.*)$")
DECLS = ".hbm a float32[128, 512] input\n.sbuf t float32[128, 512]\n"


def errors_of(source: str) -> AsmError:
    with pytest.raises(AsmError) as info:
        assemble(source, "k.s")
    return info.value


@pytest.mark.parametrize("path", sorted(CASES_DIR.glob("*.s")), ids=lambda p: p.stem)
def test_a_whole_invalid_file_reports_every_case(path):
    lines = path.read_text().splitlines()
    expected = {}
    for number, line in enumerate(lines, 1):
        m = CHECK.search(line)
        if m:
            expected[(number, int(m.group(1)))] = m.group(2).strip()
    text = "\n".join(CHECK.sub("", line).rstrip() for line in lines) + "\n"
    error = errors_of(text)
    if any(message.startswith("unknown target") for message in expected.values()):
        # an unknown .target stops the assembler: every capacity and dtype depends on it
        assert [e.message.split(";")[0] for e in error.errors] == ["unknown target 'trn9'"]
        return
    got = {(e.location.line, e.location.column): e.message for e in error.errors}
    assert len(error.errors) == len(got)   # no line reported twice
    assert set(got) == set(expected), error.render()
    for key, message in expected.items():
        assert got[key].startswith(message), (key, got[key])
    assert not error.truncated


def test_the_first_error_is_the_one_reported_alone_and_each_keeps_its_format():
    source = DECLS + "    vector.memset t, value=1.0, x=1\n    dma.copy t, nowhere\n"
    error = errors_of(source)
    first_alone = errors_of(DECLS + "    vector.memset t, value=1.0, x=1\n")
    second_alone = errors_of(DECLS + "\n    dma.copy t, nowhere\n")
    assert error.message == first_alone.message
    assert (error.location.line, error.location.column) == (3, first_alone.location.column)
    assert error.render() == first_alone.render() + "\n" + second_alone.render()
    assert [e.location.line for e in error.errors] == [3, 4]


def test_syntax_errors_are_all_reported_with_the_other_errors():
    source = DECLS + "    vector.memset t,, value=1\n    dma.copy t, a, queue=99\n    ctrl.mov r0 1\n"
    error = errors_of(source)
    assert [(e.location.line, e.message.split(";")[0]) for e in error.errors] == [
        (3, "syntax error: unexpected ','"),
        (5, "syntax error: unexpected '1'"),
        (4, "dma.copy argument 'queue' must be in the range [0, 15], got 99")]


@pytest.mark.parametrize("declaration, use", [
    (".sbuf x float33[128, 4]", "    vector.memset x, value=0"),          # unknown dtype
    (".sbuf x float32[128, 4", "    vector.memset x, value=0"),           # syntax error
    (".const K = zz", "    vector.memset t[:, 0:K], value=0"),            # unknown name in it
    (".const K = 1 +", "    vector.memset t, value=K"),                   # syntax error
    (".hbm x float32[4, 4] inputt", "    dma.copy t[0:4, 0:4], x"),      # bad role
    ("loop: dma.copy t,, a", "    ctrl.jmp loop"),                      # syntax error
])
def test_uses_of_a_failed_declaration_are_not_reported_again(declaration, use):
    error = errors_of(DECLS + declaration + "\n" + use + "\n" + use + "\n")
    assert len(error.errors) == 1, error.render()
    assert error.location.line == 3


def test_an_undeclared_name_is_reported_at_every_use():
    error = errors_of(DECLS + "    vector.memset x, value=0\n    vector.memset x, value=0\n")
    assert [e.location.line for e in error.errors] == [3, 4]
    assert all(e.message.startswith("unknown tile 'x'") for e in error.errors)


def test_at_most_twenty_errors_then_too_many():
    bad = "".join(f"    dma.copy t, a, queue={16 + k}\n" for k in range(25))
    error = errors_of(DECLS + bad)
    assert len(error.errors) == MAX_ERRORS == 20
    assert error.truncated
    assert [e.location.line for e in error.errors] == list(range(3, 23))
    assert error.render().endswith("\nerror: too many errors; stopped after the first 20")
    exactly = errors_of(DECLS + bad.split("\n", 5)[-1])   # 20 errors: no "too many"
    assert len(exactly.errors) == 20 and not exactly.truncated
    assert "too many errors" not in exactly.render()


def test_cli_check_and_run_report_every_error_and_json_lists_them(tmp_path):
    kernel = tmp_path / "k.s"
    kernel.write_text(DECLS + "    dma.copy t, a, queue=99\n    vector.memset u, value=0\n")
    runner = CliRunner()
    for command in ("check", "run"):
        result = runner.invoke(main, [command, str(kernel)])
        assert result.exit_code == 3
        assert result.stderr.count(": error: ") == 2
        assert f"{kernel}:3:26: error: dma.copy argument 'queue'" in result.stderr
        assert f"{kernel}:4:19: error: unknown tile 'u'" in result.stderr
        result = runner.invoke(main, [command, str(kernel), "--json"])
        assert result.exit_code == 3
        doc = json.loads(result.stdout)
        assert doc["schema_version"] == 1
        assert doc["error"] == doc["errors"][0]
        assert [(e["line"], e["column"]) for e in doc["errors"]] == [(3, 26), (4, 19)]
        assert all(e["type"] == "AsmError" and e["exit_code"] == 3 for e in doc["errors"])
        assert doc["errors_truncated"] is False
    kernel.write_text(DECLS + "    dma.copy t, a, queue=99\n" * 21)
    doc = json.loads(runner.invoke(main, ["check", str(kernel), "--json"]).stdout)
    assert len(doc["errors"]) == 20 and doc["errors_truncated"] is True


def test_one_assembly_error_is_a_list_of_one_and_other_failures_keep_their_document(tmp_path):
    runner = CliRunner()
    kernel = tmp_path / "k.s"
    kernel.write_text(DECLS + "    dma.copy t, a, queue=99\n")
    doc = json.loads(runner.invoke(main, ["check", str(kernel), "--json"]).stdout)
    assert doc["errors"] == [doc["error"]] and doc["errors_truncated"] is False
    result = runner.invoke(main, ["check", str(tmp_path / "missing.s"), "--json"])
    assert result.exit_code == 4
    assert set(json.loads(result.stdout)) == {"schema_version", "error"}


_LINE = st.text(alphabet=st.sampled_from(list("abrt01 .,:=[]()+-*/%#\"_xé\t")), max_size=30)


@given(st.lists(_LINE, min_size=1, max_size=6))
@settings(max_examples=300, deadline=None, derandomize=True, database=None)
def test_syntax_errors_read_as_lark_reports_them_for_the_whole_file(lines):
    """The assembler's first error (it reads every line) and lark on the whole file (the
    grammar's reference parser, which stops at the first) agree: same line and column, the
    same unexpected token or character."""
    from lark_reference import parse_with_lark

    from neuronemu.source import SourceFile

    text = DECLS + "\n".join(lines) + "\n"
    try:
        parse_with_lark(SourceFile("k.s", text))
        return
    except AsmError as e:
        first = e
    with pytest.raises(AsmError) as info:
        assemble(text, "k.s")
    error = info.value
    assert (error.location.line, error.location.column, error.location.end_column) == \
        (first.location.line, first.location.column, first.location.end_column)
    assert error.message.split("; expected")[0] == first.message.split("; expected")[0]
