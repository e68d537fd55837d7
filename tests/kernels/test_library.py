"""The kernel library as a whole (issue 15 part 2): every library kernel has its unit test and its
row in docs/kernels.md, and the library covers the workloads the docs promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import kernels_table

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = kernels_table.library()


def test_the_library_has_at_least_twelve_kernels():
    assert len(LIBRARY) >= 12, sorted(LIBRARY)


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_every_kernel_has_a_test_and_a_row_in_the_docs(name):
    stem = name.rsplit("/", 1)[-1]
    tests = [p for p in (ROOT / "tests" / "kernels").glob("test_*.py")
             if p.name != "test_library.py" and f'"{name}"' in p.read_text()]
    assert tests, f"no test in tests/kernels runs {name} (e.g. tests/kernels/test_{stem}.py)"
    table = kernels_table.DOC.read_text()
    assert f"| `{name}` |" in table, f"{name} has no row in docs/kernels.md: run " \
                                     f"python -m tools.kernels_table --write"


def test_every_row_of_the_docs_is_a_kernel():
    rows = [line.split("`")[1] for line in kernels_table.DOC.read_text().splitlines()
            if line.startswith("| `")]
    assert sorted(rows) == sorted(LIBRARY)
