"""The hostile-input replay (tests/fuzz/hostile.py, issue 30): one case of every class. The long
replay is ``python -m tools.fuzz --hostile-rounds R``."""

from __future__ import annotations

import hostile
import pytest

# Classes whose fix another branch of issue 30 carries: skipped (with the reason shown) until
# that branch is merged; remove an entry when its fix lands, and the class runs again.
PENDING = {
    "output-device": "writing through devices (i30a)",
    "output-fifo": "writing through FIFOs (i30a)",
    "output-symlink": "writing through symlinks (i30a)",
    "output-read-only": "read-only destinations (i30a)",
    "unwritten-output": "a warning for an output nothing writes (i30b)",
    "mpi-mismatch": "MPI processes checked to agree (i30b)",
    "nested-rept": "assembly expansion limits (i30b)",
    "sigint-grade": "Ctrl-C stops grading (i30b)",
    "endless-progress": "'still running' progress messages (i30b)",
    "pipe-input": "--input from a pipe (i30b)",
    "asm-topology-target": "asm checks .topology against --target (i30b)",
    "warning-then-fault": "assembler warnings kept when the run faults",
    "bf16-npy": "a bf16 .npy refused with what to do",
}


@pytest.mark.parametrize("name", list(hostile.CLASSES))
def test_hostile_class(name, tmp_path):
    if name in PENDING:
        pytest.skip(f"issue 30 item {hostile.CLASSES[name][0]}: {PENDING[name]}")
    verdict = hostile.replay(name, seed=0, scratch_root=tmp_path)
    if verdict.skipped:
        pytest.skip(verdict.skipped)
    assert verdict.ok, verdict.detail
