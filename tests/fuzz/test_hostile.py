"""The hostile-input replay (tests/fuzz/hostile.py, issue 30): one case of every class. The long
replay is ``python -m tools.fuzz --hostile-rounds R``."""

from __future__ import annotations

import hostile
import pytest


@pytest.mark.parametrize("name", list(hostile.CLASSES))
def test_hostile_class(name, tmp_path):
    verdict = hostile.replay(name, seed=0, scratch_root=tmp_path)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.ok, verdict.detail
