"""Regression tests for the fuzzing reproducers of issue 17 (families B, C, D, E, F, I), copied
from research/robustness-repro-2026-11 into ``repro/``: each kernel gives a located error with
a message that names the problem (or, for D and I, now assembles as it should), each corrupt
``.neo`` a clean "not a valid .neo file ... at byte N" error with exit code 4."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu import encoding
from neuronemu.cli import main
from neuronemu.errors import AsmError

REPRO = Path(__file__).parent / "repro"

# file -> (line, column, words the message must contain)
LOCATED = {
    "B1_nan_index.s": (3, 19, ["indices must be integers", "nan"]),
    "B2_inf_slice.s": (2, 25, ["slice bounds must be integers", "inf"]),
    "B3_inf_step.s": (3, 36, ["float literal 1e309 overflows", "write inf"]),
    "B4_inf_index.s": (2, 21, ["float literal 1e309 overflows"]),
    "B5_inf_compressed.s": (3, 32, ["slice bounds must be integers", "inf"]),
    "C1_init_bigint.s": (1, 38, ["integer literal", "(400 characters)", "+-2**128"]),
    "C2_mul_1e308.s": (1, 22, ["ctrl.mul argument 'b'", "signed 64-bit",
                               "-9223372036854775808, 9223372036854775807"]),
    "C3_mov_bigint.s": (1, 18, ["ctrl.mov argument 'value'", "signed 64-bit",
                                "99999999999999999999999"]),
    "C4_5000_digits.s": (1, 16, ["integer literal", "(5000 characters)", "out of range"]),
    "C5_memset_bigint.s": (2, 28, ["integer literal", "out of range"]),
    "F1_normal_neg_std.s": (1, 40, ["normal(mean, std): std must be >= 0, got -1.0"]),
    "F2_uniform_reversed.s": (1, 39, ["uniform(lo, hi): hi must be >= lo"]),
    "F3_uniform_inf.s": (1, 38, ["uniform(lo, hi): lo must be finite, got inf"]),
}


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("name", sorted(LOCATED))
def test_reproducer_is_a_located_error(name: str) -> None:
    line, column, words = LOCATED[name]
    with pytest.raises(AsmError) as info:
        neuronemu.assemble_file(REPRO / name)
    error = info.value
    assert (error.location.line, error.location.column) == (line, column), error.render()
    for word in words:
        assert word in error.message, error.message


@pytest.mark.parametrize("name", sorted(LOCATED))
def test_reproducer_via_cli_check(name: str) -> None:
    result = _cli("check", str(REPRO / name))
    line, column, _ = LOCATED[name]
    assert result.exit_code == 3
    assert f"{name}:{line}:{column}: error:" in result.stderr
    assert "Traceback" not in result.stderr
    # the caret line is cut around the caret, even for a 5,000-digit literal
    assert all(len(shown) < 200 for shown in result.stderr.splitlines()[1:])


@pytest.mark.parametrize("name", ["D1_unary_chain.s", "D2_sum_chain.s"])
def test_deep_expressions_assemble(name: str) -> None:
    text = (REPRO / name).read_text()
    expression = text.split("=", 1)[1].strip()
    assert len(expression) > 900  # deep enough to exhaust the old recursive evaluator
    if name.startswith("D1"):  # ------...1
        expected = (-1) ** expression.count("-")
    else:                      # 1+1+...+1
        expected = expression.count("1")
    program = neuronemu.assemble(f"{text}\n    ctrl.mov r0, Q\n")
    assert program.instructions[0].args["value"] == ("int", expected)


def test_cr_only_file_runs_like_the_lf_file() -> None:
    raw = (REPRO / "I1_cr_only.s").read_bytes()
    assert b"\n" not in raw and raw.count(b"\r") > 10
    cr = neuronemu.assemble_file(REPRO / "I1_cr_only.s")
    lf = neuronemu.assemble(raw.decode().replace("\r", "\n"), "lf.s")
    assert len(cr.instructions) == 4
    assert encoding.encode(cr) == encoding.encode(lf)
    assert [i.location.line for i in cr.instructions] == [i.location.line for i in lf.instructions]


NEO_WHY = {
    "E1_bad_utf8.neo": "is not UTF-8",
    # an empty tensor name before its ndim 0; its header flags hold a stray bit 8, which the
    # decoder refuses first since the flags carry .topology (unknown bits are an error)
    "E2_ndim0.neo": "unknown header flags 0x100",
    "E3_bad_role.neo": "is not a valid name",
    "E4_bad_space.neo": "unknown memory space code 127",
    "E5_bad_dtype.neo": "unknown target 'tzn1'",
    "E6_bad_enum.neo": "unknown track code",
    "E7_bad_symbol.neo": "unknown argument tag 242",
}


@pytest.mark.parametrize("command", ["disasm", "check", "run"])
@pytest.mark.parametrize("name", sorted(NEO_WHY))
def test_corrupt_neo_is_a_clean_file_error(name: str, command: str) -> None:
    result = _cli(command, str(REPRO / name))
    assert result.exit_code == 4, result.output
    assert "not a valid .neo file: " in result.stderr and NEO_WHY[name] in result.stderr
    assert " at byte " in result.stderr and "Traceback" not in result.stderr
