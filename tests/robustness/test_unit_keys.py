"""Each compiled module's cache folder is keyed by the sources it depends on
(neuronemu/compiled/sources.py): an edit recompiles the modules that import the edited one,
directly or through others, and nothing else (issue 29)."""

from __future__ import annotations

import ast
import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

from neuronemu.compiled import sources

ROOT = Path(__file__).resolve().parents[2]
_KEYS = ("import json; from neuronemu.compiled import sources as s; "
         "print(json.dumps({m: s.unit_key(m) for m in s.module_files()}))")


def _copy(to: Path) -> Path:
    shutil.copytree(ROOT / "neuronemu", to / "neuronemu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "isa", to / "isa")
    return to


def _keys(checkout: Path) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", _KEYS], cwd=checkout, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(checkout),
                                                             "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


@functools.cache
def _parsed_imports() -> dict[str, frozenset[str]]:
    """Python's own parser's view: the compiled-package modules each module imports (by any
    statement, anywhere in the file, with the packages importing them runs)."""
    files = sources.module_files()
    direct: dict[str, set[str]] = {}
    for name, path in files.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ImportFrom) and node.module:
                bases = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                bases = [a.name for a in node.names]
            else:
                continue
            for base in bases:
                parts = base.split(".")
                found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} & set(files)
        direct[name] = frozenset(found - {name})
    return direct


def _importers_of(target: str) -> set[str]:
    """Brute force: the modules that reach ``target`` through imports, to a fixed point."""
    direct = _parsed_imports()
    reach = {target}
    while True:
        more = {name for name, deps in direct.items() if deps & reach} - reach
        if not more:
            return reach
        reach |= more


def test_an_edit_changes_the_keys_of_the_modules_that_import_it_and_no_others(tmp_path):
    base = _keys(_copy(tmp_path / "a"))
    edited = _copy(tmp_path / "b")
    scalar = edited / "neuronemu" / "semantics" / "scalar.py"
    scalar.write_text(scalar.read_text() + "\n# an edit\n")
    after = _keys(edited)
    changed = {m for m in base if base[m] != after[m]}
    assert changed == _importers_of("neuronemu.semantics.scalar")
    # what that means: the Scalar engine's kernels recompile, the interpreter loop, the timing
    # model and every other engine's kernels do not
    assert "neuronemu.exec.wrappers.scalar" in changed
    assert not changed & {"neuronemu.exec.interpreter", "neuronemu.timing.model",
                          "neuronemu.exec.wrappers.elementwise", "neuronemu.exec.wrappers.dma"}


def test_an_isa_table_edit_changes_the_keys_of_the_modules_that_read_the_tables(tmp_path):
    base = _keys(_copy(tmp_path / "a"))
    edited = _copy(tmp_path / "b")
    table = min((edited / "isa").glob("*.toml"))
    table.write_text(table.read_text() + "\n# an edit\n")
    after = _keys(edited)
    readers = {m for m in base if any(n.startswith("neuronemu.isa")
                                      for n in sources.closure(m))}
    assert {m for m in base if base[m] != after[m]} == readers


def test_the_regular_expression_finds_every_import_the_parser_finds():
    """Over-approximating is allowed (an import in a docstring), missing one is not: a missed
    import would let a cached unit outlive an edit to code it holds."""
    for name, parsed in _parsed_imports().items():
        missed = parsed - sources.NOT_IN_KEYS - sources.imports(name)
        assert not missed, (name, missed)


def test_the_modules_left_out_of_the_keys_shape_no_compiled_code():
    """The cache and the compile reporter are not hashed: they must hold no jitted code and
    no constant compiled code reads (nothing outside neuronemu.compiled imports them but the
    exec layer's kernel loader and run loop, which only call them)."""
    for name in sources.NOT_IN_KEYS:
        text = sources.module_files()[name].read_text()
        assert "@jit" not in text and "njit(" not in text, name
    readers = {m for m, deps in _parsed_imports().items() if deps & sources.NOT_IN_KEYS}
    assert readers <= sources.NOT_IN_KEYS | {"neuronemu.compiled.jit", "neuronemu.exec.kernels",
                                             "neuronemu.exec.core"}, readers


def test_the_key_covers_the_whole_closure_and_nothing_outside_it():
    closure = sources.closure("neuronemu.exec.wrappers.scalar")
    assert "neuronemu.semantics.scalar" in closure and "neuronemu.machine.memory" in closure
    assert "neuronemu.semantics.elementwise" not in closure
    assert not any(m.startswith("neuronemu.timing") for m in closure)


def test_pruning_keeps_each_modules_current_folder_and_its_two_newest_others(tmp_path,
                                                                             monkeypatch):
    import os

    from neuronemu.compiled import cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    module = "neuronemu.semantics.scalar"
    current = cache.cache_dir() / cache.unit_folder(module)
    others = [current.parent / f"{k:016x}" for k in range(5)]
    stray = cache.cache_dir() / "not-a-module" / "0123456789abcdef"   # not ours to judge
    for age, folder in enumerate([current, *others, stray]):
        folder.mkdir(parents=True)
        os.utime(folder, (1_000_000 - age, 1_000_000 - age))   # others[0] the newest
    old_toolchains = [tmp_path / "numba" / "neuronemu" / f"{k:016x}" for k in range(4)]
    for age, folder in enumerate(old_toolchains):
        folder.mkdir(parents=True)
        os.utime(folder, (2_000_000 - age, 2_000_000 - age))
    cache.prune_old_caches()
    assert sorted(p.name for p in current.parent.iterdir()) == sorted(
        [current.name, others[0].name, others[1].name])
    assert stray.is_dir()
    assert [p.is_dir() for p in old_toolchains] == [True, True, False, False]
