"""The repository's own set-up (issue 30 item 19): what .ci/run creates is ignored by git, and
pytest's summary gives the reason of every skip."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ci_venv_is_ignored():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", ".ci/venv/bin/python"], cwd=ROOT,
                             check=False)
    assert ignored.returncode == 0, ".ci/venv/ (made by .ci/run) must be in .gitignore"


def test_skips_are_reported_with_their_reasons():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["addopts"]
    chars = "".join(word[2:] for word in shlex.split(options) if word.startswith("-r"))
    assert "s" in chars and "f" in chars and "E" in chars, options
