"""The cache of parsed ISA tables (neuronemu/isa/resources.py): what it returns is exactly
tomllib's parse of the file as it is now; an edited table is parsed afresh, a damaged entry is
parsed again and replaced, nowhere to write is no error, and processes starting at once agree."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from neuronemu.isa import resources
from neuronemu.isa.resources import isa_dir, read_toml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A parsed-table cache of this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "neuronemu" / "tables"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.marshal")) if folder.is_dir() else []


@pytest.mark.parametrize("path", sorted(isa_dir().glob("*.toml")), ids=lambda p: p.name)
def test_every_bundled_table_reads_as_tomllib_parses_it(cache, path) -> None:
    expected = tomllib.loads(path.read_text())
    first, second = read_toml(path), read_toml(path)   # parsed, then from the cache
    assert len(_entries(cache)) == 1
    # repr tells 1, 1.0 and True apart, and shows the key order
    assert repr(first) == repr(second) == repr(expected)


def test_each_read_is_a_fresh_object(cache, tmp_path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('[a]\nlist = [1, 2]\n')
    read_toml(table)["a"]["list"].append(3)
    assert read_toml(table) == {"a": {"list": [1, 2]}}


def test_an_edited_table_is_parsed_afresh(cache, tmp_path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('x = 1\n')
    assert read_toml(table) == {"x": 1}
    table.write_text('x = 2\n')
    assert read_toml(table) == {"x": 2}
    assert len(_entries(cache)) == 2


def test_a_damaged_entry_is_parsed_again_and_replaced(cache, tmp_path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('name = "abcdef"\n')
    read_toml(table)
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0x01   # a bit inside the string: still valid marshal, wrong content
    entry.write_bytes(bytes(data))
    assert read_toml(table) == {"name": "abcdef"}
    assert read_toml(table) == {"name": "abcdef"}
    entry.write_bytes(b"short")
    assert read_toml(table) == {"name": "abcdef"}
    assert resources._load_parsed(entry.stem) == {"name": "abcdef"}   # rewritten


def test_nowhere_to_write_is_no_error(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    table = tmp_path / "t.toml"
    table.write_text('x = 1\n')
    assert read_toml(table) == read_toml(table) == {"x": 1}


def test_a_value_marshal_cannot_hold_is_parsed_every_time(cache, tmp_path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('when = 1979-05-27\n')
    assert read_toml(table) == tomllib.loads(table.read_text())
    assert _entries(cache) == []


def test_a_syntax_error_is_tomllibs(cache, tmp_path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('x = = 1\n')
    with pytest.raises(tomllib.TOMLDecodeError) as ours:
        read_toml(table)
    with pytest.raises(tomllib.TOMLDecodeError) as theirs:
        tomllib.loads(table.read_text())
    assert str(ours.value) == str(theirs.value)


def test_processes_starting_at_once_agree(cache, tmp_path) -> None:
    """Several processes parse and store the same new table at the same moment: each reads it
    right, one valid entry is left and no temporary file."""
    table = tmp_path / "t.toml"
    table.write_text("".join(f'[entry{i}]\nvalue = {i}\nname = "n{i}"\n' for i in range(300)))
    code = ("import sys; from pathlib import Path; from neuronemu.isa.resources import read_toml; "
            "print(repr(read_toml(Path(sys.argv[1]))) == repr(__import__('tomllib').loads("
            "Path(sys.argv[1]).read_text())))")
    env = {"PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache.parents[1]), "PATH": ""}
    runs = [subprocess.Popen([sys.executable, "-c", code, str(table)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(6)]
    results = [run.communicate(timeout=120) for run in runs]
    assert [out.strip() for out, _ in results] == ["True"] * 6, results
    (entry,) = _entries(cache)
    assert resources._load_parsed(entry.stem) == tomllib.loads(table.read_text())
    assert [p.name for p in cache.iterdir()] == [entry.name]
