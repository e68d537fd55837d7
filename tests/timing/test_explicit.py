"""Sync mode explicit: semaphores order tracks; races and deadlocks are located errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import neuronemu
from neuronemu.cli import main
from neuronemu.programs import find_program
from neuronemu.timing.explicit import SyncError

HERE = Path(__file__).resolve().parents[1] / "programs"
# one [128, 512] fp32 transfer on trn2: 8 rows of 2 KiB per engine, 256 bytes of overhead per
# row, at 368 / 16 bytes per ns (docs/dma.md); a transfer that waits for another engine pays
# the 1300 ns cross-engine latency too
DMA_NS = 8 * (2048 + 256) / (368 / 16)
SYNC_NS = 1300
EXP_NS = 512 / 1.2


def _run(source: str, **kwargs) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="k.s"), **kwargs)


PIPELINE = """.sync {mode}
.hbm x float32[128, 512] input
.hbm y float32[128, 512] output
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
    dma.copy a, x, queue=0
    sync.signal q0, sem=0
    sync.wait scalar, sem=0, value=1
    scalar.activation b, a, func=exp
    sync.signal scalar, sem=1
    sync.wait q1, sem=1, value=1
    dma.copy y, b, queue=1
"""


def test_semaphores_order_a_pipeline_like_auto_mode() -> None:
    explicit = _run(PIPELINE.format(mode="explicit"))
    auto = _run(PIPELINE.format(mode="auto"))
    assert explicit.outputs["y"].tobytes() == auto.outputs["y"].tobytes()
    # both wait for ScalarE's pipeline latency (200 cycles, PERF) before the store: in mode
    # explicit the semaphore is raised when the activation's result is written
    assert auto.timing.time_ns == pytest.approx(2 * DMA_NS + SYNC_NS + EXP_NS + 200 / 1.2)
    assert explicit.timing.time_ns == pytest.approx(auto.timing.time_ns)


def test_without_dependencies_tracks_overlap() -> None:
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
vector.memset a, value=1.0
gpsimd.memset b, value=2.0
"""
    t = _run(source).timing
    assert t.time_ns == pytest.approx(max(512 / 0.96, (150 + 512) / 1.2))


def test_wait_delays_until_the_signal() -> None:
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
vector.memset a, value=1.0
sync.signal vector, sem=7
sync.wait gpsimd, sem=7, value=1
gpsimd.memset b, value=2.0
"""
    t = _run(source).timing
    # the signal fires when the memset's result is written: its 512 cycles and Vector's
    # 100-cycle pipeline latency (isa/costs.toml) at 0.96 GHz
    assert t.time_ns == pytest.approx((512 + 100) / 0.96 + (150 + 512) / 1.2)


def test_racy_kernel_names_both_lines_and_the_bytes() -> None:
    program = neuronemu.assemble_file(HERE / "racy.s")
    with pytest.raises(SyncError) as info:
        neuronemu.run(program)
    text = info.value.render()
    assert "race on 'a': dma.copy (line 7) writes it as dst and scalar.activation (line 9) " \
           "reads it as data" in text
    assert "overlap: SBUF partition 0, bytes 0..2047 (bytes 0..2047 of 'a')" in text
    assert info.value.exit_code == 5


def test_write_after_read_race() -> None:
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
vector.memset a, value=1.0
sync.signal vector, sem=0
sync.wait scalar, sem=0, value=1
scalar.activation b, a, func=exp
sync.wait gpsimd, sem=0, value=1
gpsimd.memset a, value=0.0
"""
    # gpsimd is ordered after vector's write but not after scalar's read of the same bytes
    with pytest.raises(SyncError, match=r"race on 'a': scalar.activation \(line 7\) reads it"):
        _run(source)


def test_deadlock_lists_every_blocked_track() -> None:
    with pytest.raises(SyncError) as info:
        neuronemu.run(neuronemu.assemble_file(HERE / "deadlock.s"))
    text = info.value.render()
    assert "deadlock: no track can proceed" in text
    assert "scalar waits at line 9 for semaphore 1 >= 1 (it reached 0" in text
    assert "vector waits at line 6 for semaphore 0 >= 1" in text


def test_wait_for_a_count_never_reached() -> None:
    source = """.sync explicit
.sbuf a float32[4, 4]
vector.memset a, value=1.0
sync.signal vector, sem=2
sync.wait scalar, sem=2, value=2
"""
    with pytest.raises(SyncError, match="deadlock"):
        _run(source)


def test_cli_exit_code_and_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "y.npy"
    result = CliRunner().invoke(main, ["run", str(HERE / "racy.s"), "--output", f"y={out}"])
    assert result.exit_code == 5
    assert "race on 'a'" in result.stderr
    assert not out.exists()


def test_explicit_double_buffer_matches_auto_and_math() -> None:
    explicit = neuronemu.run(neuronemu.assemble_file(find_program("timing/explicit_sync")))
    auto = neuronemu.run(neuronemu.assemble_file(find_program("timing/double_buffer")))
    x = explicit.tensors["x"].astype(np.float64)
    np.testing.assert_array_equal(explicit.outputs["y"], np.maximum(2 * x, 0).astype(np.float32))
    # a semaphore is raised when the signalling instruction's result is written (its pipeline
    # latency, isa/costs.toml), as auto mode's readers wait for it: the same schedule
    assert explicit.timing.time_ns == pytest.approx(auto.timing.time_ns, rel=1e-12)
    single = neuronemu.run(neuronemu.assemble_file(find_program("timing/single_buffer")))
    assert explicit.timing.time_ns < 0.7 * single.timing.time_ns


def test_auto_mode_ignores_semaphores() -> None:
    """In auto mode memory dependencies alone order the pipeline; the waits add nothing."""
    with_sync = _run(PIPELINE.format(mode="auto"))
    plain = _run("\n".join(line for line in PIPELINE.format(mode="auto").splitlines()
                           if "sync." not in line) + "\n")
    assert with_sync.timing.time_ns == pytest.approx(plain.timing.time_ns)


def test_barrier_orders_every_track() -> None:
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
vector.memset a, value=1.0
gpsimd.memset b, value=1.0
sync.barrier
scalar.activation b, a, func=exp
"""
    t = _run(source).timing
    # the barrier passes once both memsets' results are written (pipeline latencies: Vector
    # 100 cycles at 0.96 GHz, GpSimd 60 at 1.2 GHz)
    assert t.time_ns == pytest.approx(max((512 + 100) / 0.96, (150 + 512 + 60) / 1.2)
                                      + 512 / 1.2)


def test_signal_waits_for_the_result_but_does_not_hold_its_engine() -> None:
    """ScalarE's second activation issues right after the first (the signal between them does
    not hold the engine); the semaphore, raised when the first result is written (200 cycles
    of latency), releases VectorE."""
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
.sbuf c float32[128, 512]
.sbuf d float32[128, 512]
gpsimd.memset a, value=1.0
sync.signal gpsimd, sem=0
sync.wait scalar, sem=0, value=1
scalar.activation b, a, func=exp
sync.signal scalar, sem=1
scalar.activation c, a, func=exp
sync.wait vector, sem=1, value=1
vector.tensor_copy d, b
"""
    t = _run(source)
    names = [t.program.instructions[int(e[0])].definition.name for e in t.timing.events]
    starts = {}
    for name, (start, _end, *_rest) in zip(names, t.timing.event_times, strict=True):
        starts.setdefault(name, []).append(start)
    memset = (150 + 512 + 60) / 1.2                 # result written: GPSIMD_START + N + latency
    assert starts["scalar.activation"] == pytest.approx([memset, memset + 512 / 1.2])
    assert starts["vector.tensor_copy"] == pytest.approx([memset + (512 + 200) / 1.2])


def test_own_track_reader_waits_for_the_result() -> None:
    """As in mode auto, an instruction reading what its own engine just wrote waits for that
    engine's pipeline latency (Vector: 100 cycles); one on other bytes does not."""
    source = """.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
vector.memset a, value=1.0
vector.memset b, value=1.0
vector.tensor_copy b, a
"""
    for mode in ("explicit", "auto"):
        t = _run(source.replace("explicit", mode)).timing
        # memset a, memset b back to back; the copy reads a (written at 512 + 100 cycles) and
        # writes b (written at 1024 + 100): it waits for b's write
        assert t.time_ns == pytest.approx((1024 + 100 + 512) / 0.96), mode


def test_barrier_behind_an_unsatisfiable_wait_deadlocks() -> None:
    source = """.sync explicit
.sbuf a float32[128, 512]
vector.memset a, value=1.0
sync.wait scalar, sem=3, value=1
sync.barrier
"""
    with pytest.raises(SyncError) as info:
        _run(source)
    text = info.value.render()
    assert "vector waits at the barrier on line 5" in text
    assert "scalar waits at line 4 for semaphore 3 >= 1" in text
