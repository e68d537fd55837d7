"""docs/testing.md runs as written: its `# file:` blocks are written into a fresh folder, its
other Python blocks run in order (one namespace; a ```text block right after one is the output
it must print), and its `$ pytest` blocks run pytest there with the plugin: the `E ` lines they
show must appear in pytest's output, in order, and the final counts must match."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(DOC.read_text())]


def _check_pytest_block(pytester, text: str) -> None:
    command, *shown = text.splitlines()
    assert command.startswith("$ pytest"), command
    result = pytester.runpytest("-p", "neuronemu.pytest_plugin", "-p", "no:cacheprovider",
                                *shlex.split(command)[2:])
    output = [line.rstrip() for line in result.outlines]
    position = 0
    for line in (s.rstrip() for s in shown if s.startswith("E ")):
        assert line in output[position:], f"docs/testing.md shows a line pytest did not print:\n" \
                                          f"{line}\n--- pytest printed:\n" + "\n".join(output)
        position = output.index(line, position) + 1
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped)",
                                                           shown[-1])}
    result.assert_outcomes(**counts)


def test_the_tutorial_runs_as_written(pytester, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE_HOME)   # pytester moved HOME; keep the kernels
    namespace: dict = {}
    found = blocks()
    assert len(found) > 10
    printed = None
    for kind, text in found:
        first = text.splitlines()[0] if text else ""
        if kind == "text" and printed is not None:
            assert printed == text, f"docs/testing.md shows:\n{text}\nthe code printed:\n{printed}"
            printed = None
            continue
        printed = None
        if first.startswith("# file: "):
            (pytester.path / first.removeprefix("# file: ").strip()).write_text(text)
        elif kind == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(text, str(DOC), "exec"), namespace)   # noqa: S102 - our own doc
            printed = out.getvalue()
        elif kind == "console":
            _check_pytest_block(pytester, text)
        else:
            assert kind in ("text", "asm"), f"docs/testing.md: a ```{kind} block nothing checks"
    assert printed is None or printed == "", "a printing block without its shown output"


@pytest.mark.parametrize("kind", ["python", "asm", "console"])
def test_the_page_has_blocks_of_each_kind(kind):
    assert any(k == kind for k, _ in blocks())
