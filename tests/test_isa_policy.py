"""Instruction policy lives in the tables (issue 27, review problem 6): which instructions read,
fill or copy x4-packed tiles, which cc.* instructions are collectives, what a sync.*
instruction does in the replay, which argument a copy copies. The loader rejects bad values,
stray files and opcodes outside their engine's range; isa/README.md (the tables' format) is
generated from the loader's own key, kind and rule tables (freshness: tests/test_isa_table.py)."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pytest

from neuronemu.asm.checks import RULES
from neuronemu.isa.table import INSTR_KEYS, TableError, load_isa

ISA_DIR = Path(__file__).resolve().parents[1] / "isa"


def _names(**where) -> set[str]:
    (key, value), = where.items()
    return {n for n, d in load_isa().instructions.items() if getattr(d, key) == value}


def test_the_tables_name_what_the_code_used_to_list():
    # the name sets of asm/assembler.py, multichip/spmd.py, timing/explicit.py and
    # grade/provenance.py before issue 27, written out as they were (plus the variable
    # collectives added since, issue 25)
    assert _names(packed="use") == {"vector.quantize_mx", "tensor.matmul_mx"}
    assert _names(packed="fill") == {"vector.memset", "gpsimd.memset"}
    assert _names(packed="copy") == {
        "dma.copy", "dma.compress", "dma.decompress", "vector.tensor_copy", "gpsimd.tensor_copy",
        "cc.send", "cc.recv", "cc.sendrecv", "cc.all_gather", "cc.all_to_all", "cc.permute",
        "cc.all_gather_v", "cc.all_to_all_v"}
    assert _names(driver="collective") == {"cc.all_reduce", "cc.reduce_scatter", "cc.all_gather",
                                           "cc.all_to_all", "cc.permute", "cc.barrier",
                                           "cc.all_gather_v", "cc.all_to_all_v"}
    assert _names(driver="p2p") == {"cc.send", "cc.recv", "cc.sendrecv"}
    assert {n: d.sync for n, d in load_isa().instructions.items() if d.sync} == {
        "sync.wait": "wait", "sync.signal": "signal", "sync.barrier": "barrier"}
    assert {n: d.copy_source for n, d in load_isa().instructions.items() if d.copy_source} == {
        "dma.copy": "src", "vector.tensor_copy": "data", "gpsimd.tensor_copy": "data"}


def _copy(tmp_path: Path) -> Path:
    directory = tmp_path / "isa"
    shutil.copytree(ISA_DIR, directory)
    return directory


def _edit(directory: Path, table: str, old: str, new: str) -> None:
    path = directory / f"{table}.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_policy_value_outside_its_choices_is_a_table_error(tmp_path):
    directory = _copy(tmp_path)
    _edit(directory, "vector", 'packed = "fill"', 'packed = "zero"')
    with pytest.raises(TableError, match=r"isa/vector.toml: \[memset\]: packed must be one of "
                                         r"use, fill, copy, not 'zero'"):
        load_isa(str(directory))


def test_a_copy_source_that_is_no_argument_is_a_table_error(tmp_path):
    directory = _copy(tmp_path)
    _edit(directory, "dma", 'copy_source = "src"', 'copy_source = "source"')
    with pytest.raises(TableError, match="copy_source 'source' is not an argument of dma.copy"):
        load_isa(str(directory))


def test_an_opcode_outside_its_engines_range_is_a_table_error(tmp_path):
    directory = _copy(tmp_path)
    _edit(directory, "vector", "opcode = 0x0501", "opcode = 0x0901")
    with pytest.raises(TableError, match=r"\[tensor_tensor\]: opcode 0x0901: the high byte must "
                                         r"be the engine's code .* \(vector = 5\)"):
        load_isa(str(directory))


def test_a_table_the_loader_does_not_know_is_a_table_error(tmp_path):
    directory = _copy(tmp_path)
    (directory / "vectr.toml").write_text((directory / "vector.toml").read_text())
    with pytest.raises(TableError, match="isa/vectr.toml: neither an engine table"):
        load_isa(str(directory))


def test_every_key_and_rule_the_format_spec_lists_is_described():
    assert all(text.strip() for text in INSTR_KEYS.values())
    undocumented = sorted(name for name, fn in RULES.items() if not inspect.getdoc(fn))
    assert undocumented == []


def test_the_format_spec_exists_where_the_tables_point():
    readme = (ISA_DIR / "README.md").read_text()
    assert "Format: isa/README.md" in (ISA_DIR / "vector.toml").read_text()
    for key in INSTR_KEYS:
        assert f"| `{key}` |" in readme


def test_every_target_says_whether_its_pe_array_has_a_transpose_mode():
    # NeuronCore-v2 (trn1) transposes through a matmul with an identity (assembler, checks)
    targets = load_isa().targets
    assert {name: t.pe_transpose_mode for name, t in targets.items()} == {
        "trn1": False, "trn2": True, "trn3": True}
