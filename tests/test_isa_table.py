"""The ISA tables: consistent, every derived file fresh, every example runs."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import neuronemu
from neuronemu.isa.table import load_isa

ROOT = Path(__file__).resolve().parents[1]
ISA = load_isa()
INSTRUCTIONS = sorted(ISA.instructions.values(), key=lambda d: d.opcode)


def test_generated_files_are_fresh() -> None:
    """Editing isa/*.toml without rerunning tools/gen_isa.py fails here."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_isa.py"), "--check"],
                            check=False, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_opcodes_are_unique_and_carry_the_engine() -> None:
    opcodes = [d.opcode for d in INSTRUCTIONS]
    assert len(set(opcodes)) == len(opcodes)
    engines = ISA.enums["engine"]
    for d in INSTRUCTIONS:
        assert d.opcode >> 8 == engines.values[d.engine], d.name


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_semantics_function_exists(definition) -> None:
    module, function = definition.semantics.split(".")
    assert hasattr(importlib.import_module(f"neuronemu.semantics.{module}"), function)


NO_NKI_NAME = {"dma.compress", "dma.decompress"}


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_entry_is_documented(definition) -> None:
    assert definition.summary.endswith(".")
    for arg in definition.args:
        if arg.kind not in ("tile", "reg", "reg_or_int", "label"):
            assert arg.doc, f"{definition.name} argument {arg.name} has no doc"
    # sequencer instructions and inline compression (no public API, ARCHITECTURE.md 5.4) have no
    # nki.isa name
    if definition.engine not in ("ctrl", "sync") and definition.name not in NO_NKI_NAME:
        assert definition.nki and definition.nki.startswith(("nki.isa.", "nki.collectives.")), (
            definition.name)


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_example_runs(definition) -> None:
    """Each table example, with its setup, assembles and runs on every target it supports, and
    executes the example instruction itself."""
    source = definition.example_program
    for target in definition.targets or ("trn1", "trn2", "trn3"):
        program = neuronemu.assemble(f".target {target}\n{source}",
                                     filename=f"{definition.name}.s")
        result = neuronemu.run(program)
        assert result.instructions.get(definition.engine, 0) >= 1


def _run_example(definition) -> neuronemu.Result:
    program = neuronemu.assemble(definition.example_program)
    return neuronemu.run(program)


def _final_tile(result: neuronemu.Result, name: str) -> np.ndarray:
    return result.tiles[name].astype(np.float64)


def test_table_examples_compute_what_their_setups_imply() -> None:
    """Spot values of a few examples, computed by hand from their setup lines."""
    matmul = _run_example(ISA.instructions["tensor.matmul"])
    assert np.all(_final_tile(matmul, "acc") == 128 * 0.25 * 2.0)
    activation = _run_example(ISA.instructions["scalar.activation"])
    assert np.allclose(_final_tile(activation, "rowsum"), 512 * np.exp(0.0), rtol=1e-6)
    scalar = _run_example(ISA.instructions["vector.tensor_scalar"])
    assert np.all(_final_tile(scalar, "y") == (3.0 - 1.0) * 0.5)
    aggr = _run_example(ISA.instructions["vector.bn_aggr"])
    values = np.arange(512, dtype=np.float64)
    assert np.allclose(_final_tile(aggr, "mv"), [values.mean(), values.var()], rtol=1e-6)


def test_import_is_light() -> None:
    code = ("import sys, neuronemu; "
            "heavy = [m for m in ('numba', 'lark', 'click', 'ml_dtypes') if m in sys.modules]; "
            "print(heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
