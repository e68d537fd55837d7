"""`neuronemu isa` shows an argument's legal values; abbreviations get a suggestion; the
language reference lists every directive (issue 30 item 18)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu.asm.assembler import DIRECTIVES
from neuronemu.cli import main

DOCS = Path(__file__).resolve().parents[1] / "docs"
ACTIVATIONS = ["exp", "relu", "gelu_apprx_tanh", "silu", "prelu"]   # isa/enums.toml


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_an_instruction_entry_lists_its_enum_arguments_values():
    result = invoke("isa", "scalar.activation")
    assert result.exit_code == 0, result.stderr
    func = result.stdout[result.stdout.index("    func "):result.stdout.index("    scale ")]
    assert "one of:" in func and all(re.search(rf"\b{name}\b", func) for name in ACTIVATIONS)


def test_an_enum_value_names_its_table_and_the_arguments_taking_it():
    result = invoke("isa", "silu")
    assert result.exit_code == 0, result.stderr
    assert "'silu' is a value of enum activation" in result.stdout
    assert "signal" not in result.stdout
    assert "scalar.activation func=" in result.stdout
    assert all(name in result.stdout for name in ACTIVATIONS)


def test_an_enum_table_lists_its_values():
    result = invoke("isa", "alu_op")
    assert result.exit_code == 0, result.stderr
    assert "enum alu_op" in result.stdout and "multiply" in result.stdout
    assert "vector.tensor_scalar op0=" in result.stdout


def test_json_carries_the_values():
    doc = json.loads(invoke("isa", "scalar.activation", "--json").stdout)
    func = next(a for a in doc["instructions"][0]["args"] if a["name"] == "func")
    assert func["enum"] == "activation" and set(ACTIVATIONS) <= set(func["values"])
    value = json.loads(invoke("isa", "silu", "--json").stdout)
    assert value["enums"][0]["name"] == "activation"
    assert {"mnemonic": "scalar.activation", "arg": "func"} in value["enums"][0]["taken_by"]


def test_unknown_name_is_still_a_usage_error_with_suggestions():
    result = invoke("isa", "tensor_tensr")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "did you mean tensor_tensor, " in result.stderr
    assert result.stderr.count("tensor_tensor,") == 1          # each candidate once


@pytest.mark.parametrize("word, meant", [("mul", "multiply"), ("sub", "subtract"),
                                         ("div", "divide")])
def test_an_abbreviated_operator_suggests_the_full_name(word, meant):
    source = f".sbuf t float32[4, 4]\n    vector.tensor_scalar t, t, op0={word}, operand0=2.0\n"
    with pytest.raises(neuronemu.AsmError) as raised:
        neuronemu.assemble(source, filename="k.s")
    assert f"did you mean '{meant}'?" in raised.value.message
    assert raised.value.location.line == 2


def test_language_reference_lists_every_directive():
    text = (DOCS / "language.md").read_text()
    table = text[text.index("## Directives"):]
    table = table[:table.index("\n\n", table.index("| directive"))]
    missing = [d for d in DIRECTIVES if f"| `.{d}" not in table]
    assert not missing, f"docs/language.md's directive table lacks {missing}"
