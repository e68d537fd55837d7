"""The developer tools are a package run as ``python -m tools.<name>`` from the repository root
(issue 27): none of them edits the import path, and the tests import them by name."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _path_edits(source: str) -> list[int]:
    """Lines calling sys.path.insert / append / extend (the import path edits of old)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append", "extend")
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path"
                and isinstance(node.func.value.value, ast.Name)
                and node.func.value.value.id == "sys"):
            lines.append(node.lineno)
    return lines


def test_no_tool_edits_the_import_path():
    edits = {p.name: _path_edits(p.read_text()) for p in sorted(TOOLS.glob("*.py"))}
    assert {name: lines for name, lines in edits.items() if lines} == {}


def test_the_check_finds_a_path_edit():
    assert _path_edits("import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\n") == [2, 3]


def test_the_tools_are_a_package_the_tests_import():
    from tools import golden, kernels_table

    assert (TOOLS / "__init__.py").is_file()
    assert callable(golden.record) and callable(kernels_table.library)


def test_warm_cache_is_gone_for_neuronemu_warm():
    ci = (TOOLS.parent / ".ci" / "run").read_text()
    assert not (TOOLS / "warm_cache.py").exists()
    assert "\nneuronemu warm\n" in ci
