"""docs/debugging.md's sessions, replayed: each ```text block that starts with
``$ neuronemu debug ...`` is run with its ``(nemu)`` commands as a script (--batch), and the
output must be the block, line for line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "debugging.md"
PROMPT = "(nemu) "


def sessions() -> list[str]:
    blocks = re.findall(r"```text\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    return [b for b in blocks if b.startswith("$ neuronemu debug ")]


def test_the_page_has_its_three_sessions():
    kernels = [s.splitlines()[0].split()[3] for s in sessions()]
    assert kernels == ["programs/labs/02-matmul/starter.s", "programs/nki/residual_relu.py",
                       "programs/labs/07-ring-allreduce/starter.s"]


@pytest.mark.parametrize("block", sessions(), ids=lambda b: b.splitlines()[0].split()[3])
def test_session_replays(block, tmp_path):
    lines = block.rstrip("\n").splitlines()
    args = shlex.split(lines[0][2:])[2:]
    script = tmp_path / "session.gdb"
    script.write_text("".join(line[len(PROMPT):] + "\n" for line in lines
                              if line.startswith(PROMPT)))
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "neuronemu", "debug", *args, "-x", str(script),
                           "--batch"], check=False, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n").splitlines() == lines[1:]
