"""A kernel's default topology (`.topology NAME [ranks_per_chip=N]`, docs/language.md): the CLI,
``run_spmd``, ``run_kernel`` and ``.neo`` binaries run a multi-rank kernel on the system it
names when none is given; ``--topology`` / the API's argument wins.

Oracles: the world size is chips x ranks per chip of isa/topologies.toml, and each rank's
``ctrl.rank`` / ``ctrl.world`` values written to y are compared with numpy arange / full."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu import encoding
from neuronemu.api import run_spmd
from neuronemu.cli import main
from neuronemu.errors import AsmError, InputError
from neuronemu.isa.topologies import load_topologies
from neuronemu.testing import run_kernel

TOPOLOGIES = load_topologies()

# every rank writes [its rank, the world size] into y: rows r0 and r1 of an arange table
BODY = """.hbm table int32[256, 1] input init=arange
.hbm y int32[1, 2] output
    ctrl.rank r0
    ctrl.world r1
    dma.copy y[0:1, 0:1], table[r0:r0 + 1, :]
    dma.copy y[0:1, 1:2], table[r1:r1 + 1, :]
"""


def kernel(directive: str = ".topology trn2.48xlarge") -> str:
    return f"{directive}\n{BODY}"


def check_ranks(y: np.ndarray, world: int) -> None:
    assert y.shape == (world, 1, 2)
    np.testing.assert_array_equal(y[:, 0, 0], np.arange(world))
    np.testing.assert_array_equal(y[:, 0, 1], np.full(world, world))


def invoke(*args) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "k.s"
    path.write_text(text)
    return path


def test_directive_sets_topology_target_and_ranks() -> None:
    program = neuronemu.assemble(kernel(".topology trn3-ultraserver-gen2 ranks_per_chip=2"))
    assert (program.topology, program.ranks_per_chip) == ("trn3-ultraserver-gen2", 2)
    assert program.target.name == "trn3"      # the system's chips, with no .target
    plain = neuronemu.assemble(BODY)
    assert (plain.topology, plain.ranks_per_chip) == (None, 1)


def test_api_run_spmd_honours_the_directive_and_the_argument_wins() -> None:
    program = neuronemu.assemble(kernel())
    result = run_spmd(program)
    assert (result.topology, result.world) == ("trn2.48xlarge", 16)
    check_ranks(result.outputs["y"], 16)
    two = neuronemu.assemble(kernel(".topology trn2.48xlarge ranks_per_chip=2"))
    assert run_spmd(two).world == 32
    # another topology: its own ranks per chip (1 unless given), not the directive's
    other = run_spmd(two, "trn2-ultraserver")
    assert (other.topology, other.world) == ("trn2-ultraserver", 64)
    check_ranks(other.outputs["y"], 64)
    with pytest.raises(InputError, match="no topology"):
        run_spmd(neuronemu.assemble(BODY))


def test_run_kernel_honours_the_directive() -> None:
    run = run_kernel(kernel())
    assert run.result.world == 16
    check_ranks(run.result.outputs["y"], 16)
    assert run_kernel(kernel(), topology="trn2-ultraserver").result.world == 64


def test_cli_runs_a_bundled_16_rank_program_without_flags() -> None:
    result = invoke("run", "collectives/ring_allgather", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["topology"], doc["world"], doc["target"]) == ("trn2.48xlarge", 16, "trn2")
    assert doc["outputs"]["y"]["shape"] == [16, 128, 4096]


def test_cli_topology_and_ranks_per_chip_override(tmp_path: Path) -> None:
    path = write(tmp_path, kernel(".topology trn2.48xlarge ranks_per_chip=2"))
    out = tmp_path / "out"
    result = invoke("run", path, "--json", "--output-dir", out)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["world"] == 32
    check_ranks(np.load(out / "y.npy"), 32)
    result = invoke("run", path, "--json", "--topology", "trn1.32xlarge")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["topology"], doc["world"], doc["target"]) == ("trn1.32xlarge", 16, "trn1")
    result = invoke("run", path, "--json", "--ranks-per-chip", "3")
    assert json.loads(result.stdout)["world"] == 48
    # a kernel without the directive still needs --topology for --ranks-per-chip
    result = invoke("run", write(tmp_path, BODY), "--ranks-per-chip", "2")
    assert result.exit_code != 0 and "needs --topology" in result.stderr


def test_unknown_topology_is_a_located_error_listing_the_names(tmp_path: Path) -> None:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(kernel(".topology trn2.48xlarg"), "bad.s")
    text = str(info.value)
    assert text.startswith("bad.s:1:11: error: unknown topology 'trn2.48xlarg'")
    for name in TOPOLOGIES:
        assert name in text
    result = invoke("run", write(tmp_path, kernel(".topology nowhere")))
    assert result.exit_code == 3
    assert "k.s:1:11: error: unknown topology 'nowhere'" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("text, message", [
    (".topology trn2.48xlarge ranks_per_chip=9", "ranks_per_chip must be 1..8"),
    (".target trn1\n.topology trn2.48xlarge", "made of trn2 chips, but the kernel says .target"),
    (".topology trn2.48xlarge\n.topology trn2.48xlarge", "a second .topology"),
    (".topology", "usage: .topology NAME"),
])
def test_bad_directives(text: str, message: str) -> None:
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(f"{text}\n{BODY}", "bad.s")


def test_binary_carries_the_topology(tmp_path: Path) -> None:
    program = neuronemu.assemble(kernel(".topology trn2.48xlarge ranks_per_chip=2"))
    data = encoding.encode(program)
    text = encoding.disassemble(data)
    assert ".topology trn2.48xlarge ranks_per_chip=2" in text
    again = neuronemu.assemble(text)
    assert encoding.encode(again) == data
    assert (again.topology, again.ranks_per_chip) == ("trn2.48xlarge", 2)
    # without the directive the header is what it always was: flags 0
    assert encoding.encode(neuronemu.assemble(BODY))[6:8] == b"\x00\x00"
    neo = tmp_path / "k.neo"
    neo.write_bytes(data)
    result = invoke("run", neo, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["world"] == 32
