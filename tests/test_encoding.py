"""Binary encoding: assemble -> encode -> disassemble -> assemble gives the same bytes for every
bundled program and every ISA table example; damaged binaries are clean errors."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu import encoding
from neuronemu.cli import main
from neuronemu.isa.table import load_isa
from neuronemu.programs import bundled_programs

PROGRAMS = bundled_programs()
INSTRUCTIONS = sorted(load_isa().instructions.values(), key=lambda d: d.opcode)


def _round_trip(program: neuronemu.program.Program) -> tuple[bytes, bytes, str]:
    data = encoding.encode(program)
    text = encoding.disassemble(data)
    again = encoding.encode(neuronemu.assemble(text, filename="disassembled.s"))
    return data, again, text


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_bundled_programs_round_trip(name: str) -> None:
    program = neuronemu.assemble_file(PROGRAMS[name])
    data, again, text = _round_trip(program)
    assert data == again, text
    # and the disassembly computes the same thing (collectives on the 16 ranks they are for)
    if name.startswith("collectives/"):
        from neuronemu.api import run_spmd

        def run(p):
            return run_spmd(p, "trn2.48xlarge")
    else:
        run = neuronemu.run
    original = run(program)
    rerun = run(neuronemu.assemble(text))
    for out in original.outputs:
        assert original.outputs[out].tobytes() == rerun.outputs[out].tobytes()
    if name.startswith("collectives/"):
        assert original.time_ns == rerun.time_ns
    else:
        assert original.timing.time_ns == rerun.timing.time_ns


@pytest.mark.parametrize("definition", INSTRUCTIONS, ids=lambda d: d.name)
def test_every_table_example_round_trips(definition) -> None:
    target = definition.targets[0] if definition.targets else None
    program = neuronemu.assemble(definition.example_program,
                                 target=target)
    data, again, text = _round_trip(program)
    assert data == again, text
    opcodes = [ins.definition.opcode for ins in program.instructions]
    assert definition.opcode in opcodes


def test_header_and_instruction_layout() -> None:
    program = neuronemu.assemble(".sbuf t float32[4, 8]\nvector.memset t, value=2.5\n")
    data = encoding.encode(program)
    assert data[:4] == b"NEO\x00"
    assert struct.unpack_from("<HH", data, 4) == (encoding.VERSION, 0)
    # the last record: opcode, then the table's two arguments (tile t, number 2.5)
    tail = data[-(2 + 1 + 4 + 1 + 1 + 8):]
    opcode, tag, symbol, nitems, value_tag, value = struct.unpack("<HBIBBd", tail)
    assert (opcode, tag, symbol, nitems, value_tag, value) == (0x0505, 1, 0, 0, 3, 2.5)


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def test_cli_asm_disasm_and_run_a_binary(tmp_path: Path) -> None:
    binary = tmp_path / "k.neo"
    assert _cli("asm", "softmax", "-o", str(binary)).exit_code == 0
    listing = _cli("disasm", str(binary))
    assert listing.exit_code == 0 and "scalar.activation" in listing.stdout
    ran = _cli("run", str(binary), "--json")
    assert ran.exit_code == 0
    direct = _cli("run", "softmax", "--json")
    import json

    assert json.loads(ran.stdout)["outputs"] == json.loads(direct.stdout)["outputs"]


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"XXXX" + d[4:], "not a neuronemu binary"),
    (lambda d: d[:-3], "truncated .neo file"),
    (lambda d: d[:4] + struct.pack("<HH", 99, 0) + d[8:], "encoding version 99"),
    (lambda d: d + b"\x00", "trailing bytes"),
])
def test_damaged_binaries_are_clean_errors(tmp_path: Path, damage, message: str) -> None:
    program = neuronemu.assemble(".sbuf t float32[4, 8]\nvector.memset t, value=2.5\n")
    path = tmp_path / "bad.neo"
    path.write_bytes(damage(encoding.encode(program)))
    result = _cli("disasm", str(path))
    assert result.exit_code == 4
    assert message in result.stderr and "Traceback" not in result.stderr


def test_unknown_opcode(tmp_path: Path) -> None:
    program = neuronemu.assemble(".sbuf t float32[4, 8]\nvector.memset t, value=2.5\n")
    data = bytearray(encoding.encode(program))
    opcode_at = len(data) - (2 + 1 + 4 + 1 + 1 + 8)
    data[opcode_at: opcode_at + 2] = struct.pack("<H", 0x0EEE)
    with pytest.raises(neuronemu.InputError, match="unknown opcode 0x0eee"):
        encoding.disassemble(bytes(data))


def test_binary_inputs_are_checked_like_source(tmp_path: Path) -> None:
    """A binary whose tile no longer fits its target fails with a located error in the
    disassembly, not a crash."""
    program = neuronemu.assemble(".target trn3\n.sbuf big float32[128, 60000]\n"
                                 "vector.memset big, value=0.0\n")
    path = tmp_path / "big.neo"
    path.write_bytes(encoding.encode(program))
    with pytest.raises(neuronemu.AsmError, match="SBUF overflow on trn1"):
        neuronemu.assemble_file(path, target="trn1")
    assert np.all(neuronemu.run(neuronemu.assemble_file(path)).tiles["big"] == 0)


def test_sync_mode_round_trips() -> None:
    """Header flags bit 0 carries `.sync explicit` (it changes times and race checks, not
    values: the round trip of timing/explicit_sync caught it once issue 14's latencies made
    explicit and auto times differ)."""
    from neuronemu.encoding import disassemble, encode

    source = ".sync explicit\n.sbuf a float32[4, 4]\nvector.memset a, value=1.0\n"
    explicit = neuronemu.assemble(source, "k.s")
    assert ".sync explicit" in disassemble(encode(explicit)).splitlines()
    auto = neuronemu.assemble(source.replace(".sync explicit\n", ""), "k.s")
    assert ".sync" not in disassemble(encode(auto))
    assert neuronemu.assemble(disassemble(encode(explicit))).sync_mode == "explicit"


def test_version_1_files_still_load(monkeypatch):
    """A .neo written before dma.copy had its oob argument (version 1: no field for it) loads
    with oob's default and runs as the program it was written from."""
    src = """\
.target trn2
.hbm x float32[8, 16] input
.hbm y float32[8, 16] output
.sbuf t float32[8, 16]
    dma.copy t, x, queue=3
    vector.tensor_scalar t, t, op0=multiply, operand0=2.0
    dma.copy y, t, queue=1, dge=hw
"""
    program = neuronemu.assemble(src, "v1.s")
    write_field = encoding._encode_arg

    def version_1_field(w, arg, value, symbols, isa):
        if arg.name != "oob":          # version 1 had no field for it (nor gather/scatter's)
            write_field(w, arg, value, symbols, isa)

    monkeypatch.setattr(encoding, "_encode_arg", version_1_field)
    monkeypatch.setattr(encoding, "VERSION", 1)
    old = encoding.encode(program)
    monkeypatch.undo()
    assert struct.unpack_from("<H", old, 4) == (1,)
    assert len(old) < len(encoding.encode(program))
    text = encoding.disassemble(old, "v1.neo")
    assert "encoding v1" in text and "oob" not in text
    again = neuronemu.assemble(text, "v1.neo (disassembled)")
    assert encoding.encode(again) == encoding.encode(program)
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    np.testing.assert_array_equal(neuronemu.run(again, inputs={"x": x}).outputs["y"], 2 * x)


def test_version_2_gathers_load_with_oob_error(monkeypatch):
    """dma.gather and dma.scatter gained oob= in version 3: a version 2 file's records of them
    have no field for it and load with oob=error."""
    src = """\
.target trn2
.hbm table float32[16, 4] input
.hbm ids int32[8, 1] input
.hbm y float32[8, 4] output
.sbuf idx int32[8, 1]
.sbuf rows float32[8, 4]
    dma.copy idx, ids
    dma.gather rows, table, index=idx, oob=skip
    dma.copy y, rows
"""
    program = neuronemu.assemble(src, "v2.s")
    write_field = encoding._encode_arg

    def without_gather_oob(w, arg, value, symbols, isa):
        if arg.name == "oob" and arg.doc.startswith("an index outside"):
            return   # gather's / scatter's oob (version 2 had no field for it)
        write_field(w, arg, value, symbols, isa)

    monkeypatch.setattr(encoding, "_encode_arg", without_gather_oob)
    monkeypatch.setattr(encoding, "VERSION", 2)
    old = encoding.encode(program)
    monkeypatch.undo()
    text = encoding.disassemble(old, "v2.neo")
    assert "encoding v2" in text and "dma.gather rows, table, index=idx" in text
    assert "oob=skip" not in text
    ids = np.array([[3], [20], [0], [1], [2], [5], [6], [7]], np.int32)   # 20 is outside
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    with pytest.raises(neuronemu.RuntimeFault):
        neuronemu.run(neuronemu.assemble(text, "v2.neo"), inputs={"table": table, "ids": ids})


def test_version_3_collectives_load_as_one_group_of_every_rank(monkeypatch):
    """The collectives gained group_size= and group_stride= in version 4: a version 3 file's
    records of them have no fields for them and load with the defaults (one group)."""
    src = """\
.target trn2
.hbm x float32[8, 64] input
.hbm y float32[8, 64] output
.hbm z float32[32, 64] output
    cc.all_reduce y, x, op=maximum, group_size=4
    cc.all_gather z, x, dim=0, group_size=2, group_stride=2
"""
    program = neuronemu.assemble(src, "v3.s")
    write_field = encoding._encode_arg

    def without_groups(w, arg, value, symbols, isa):
        if arg.name not in ("group_size", "group_stride"):
            write_field(w, arg, value, symbols, isa)

    monkeypatch.setattr(encoding, "_encode_arg", without_groups)
    monkeypatch.setattr(encoding, "VERSION", 3)
    old = encoding.encode(program)
    monkeypatch.undo()
    text = encoding.disassemble(old, "v3.neo")
    assert "encoding v3" in text and "group" not in text
    assert "cc.all_reduce y, x, op=maximum" in text
    now = encoding.disassemble(encoding.encode(program), "v4.neo")
    assert "group_size=4" in now and "group_size=2, group_stride=2" in now
