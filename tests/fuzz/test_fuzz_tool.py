"""tools/fuzz.py as a program: its time budget ends the run with a summary (issue 30 item 14)."""

from __future__ import annotations

import json

from tools import fuzz


def test_time_budget_ends_with_a_summary(tmp_path, capsys):
    code = fuzz.main(["--time-budget", "2", "--cases", "1000000", "--modes", "api",
                      "--progress", "0", "--no-minimize", "--hostile-rounds", "0",
                      "--out", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0 and summary["failures"] == []
    assert 0 < summary["cases"] < 1_000_000          # stopped by the budget, not the count
    assert summary["seconds"] < 30
    assert "cases in" in capsys.readouterr().out
