"""An output no instruction writes is a located warning at its declaration (issue 30, item 5):
such a kernel used to exit 0 with only `nan 65536` in its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu.cli import main
from neuronemu.programs import bundled_programs

DECLS = """\
.hbm a float32[128, 512] input
.hbm b float32[128, 512] input
.hbm c float32[128, 512] output
.sbuf t float32[128, 512]
    dma.copy t, a
"""


def unwritten(program) -> list[str]:
    return [w.message for w in program.warnings if "no instruction writes output" in w.message]


def test_an_output_nothing_writes_is_named_at_its_declaration(tmp_path: Path) -> None:
    kernel = tmp_path / "k.s"
    kernel.write_text(DECLS + "    dma.copy b, t   # meant c\n")
    checked = CliRunner().invoke(main, ["check", str(kernel), "--json"])
    assert checked.exit_code == 0
    (warning,) = json.loads(checked.stdout)["warnings"]
    assert (warning["line"], warning["column"]) == (3, 1)
    assert warning["message"] == ("no instruction writes output 'c': it will hold NaN after the "
                                  "run (a store to another tensor, or a missing last DMA?)")
    ran = CliRunner().invoke(main, ["run", str(kernel)])
    assert ran.exit_code == 0
    assert f"{kernel}:3:1: warning: no instruction writes output 'c'" in ran.stderr
    assert "nan 65536" in ran.stdout


@pytest.mark.parametrize("store", [
    "    dma.copy c, t",                                    # the whole tensor
    "    dma.copy c[0:64, :], t[0:64, :]",                  # part of it: it is written
    "    ctrl.mov r1, 1\n    dma.copy c[:, r1*4 : r1*4 + 4], t[:, 0:4]",   # at a register offset
    "    cc.all_reduce c, a, op=add",                       # a collective's destination
])
def test_a_store_anywhere_into_the_output_counts(store: str) -> None:
    assert unwritten(neuronemu.assemble(DECLS + store + "\n", "k.s")) == []


def test_scratch_and_input_tensors_are_not_reported() -> None:
    scratch = DECLS.replace("output", "scratch")
    assert unwritten(neuronemu.assemble(scratch, "k.s")) == []


@pytest.mark.parametrize("name", sorted(bundled_programs()))
def test_no_bundled_program_is_reported(name: str) -> None:
    assert unwritten(neuronemu.assemble_file(bundled_programs()[name])) == []
