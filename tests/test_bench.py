"""Smoke test of tools/bench.py: it runs and reports a figure. Speed itself is asserted only by
the benchmark (issue 13), never here, so this checks the JSON's shape, not the number's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_quick_ctrl_loop_json():
    proc = subprocess.run([sys.executable, "-m", "tools.bench", "--quick", "--skip-cold",
                           "--only", "ctrl_loop", "--json"], capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc["ctrl_loop_ips"], float) and doc["ctrl_loop_ips"] > 0
    assert doc["machine"]["nproc"] >= 1
