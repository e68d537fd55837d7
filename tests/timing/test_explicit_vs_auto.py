"""Sync mode explicit against sync mode auto: a kernel whose semaphores encode exactly its
memory dependencies must get, from the explicit replay, the schedule auto mode gives the same
kernel without them, instruction for instruction. Both models take their engine rules (PE
blocks, result latencies, the PSUM drain, busy time) from neuronemu/timing/engines.py but order
instructions by different means (the replay by semaphores and vector clocks, auto by its region
tables), so this is a differential test of the two orderings and of the rules' use in each.
(Races are checked against the brute-force byte model of tests/timing/test_byte_ranges.py; every
run's exact result is pinned by the golden corpus.)"""

from __future__ import annotations

from collections import defaultdict

import pytest

import neuronemu
from neuronemu.programs import find_program

TARGETS = ("trn1", "trn2", "trn3")


def _schedule(result) -> dict[tuple, list[tuple[float, float]]]:
    """(instruction, track, run-time arguments) -> [(start, end), ...] in program order, for
    every recorded instruction except sync.*, and the per-track busy time."""
    program, timing = result.program, result.timing
    assert timing.events_recorded == timing.events_total
    out = defaultdict(list)
    for row, times in zip(timing.events, timing.event_times, strict=True):
        name = program.instructions[int(row[0])].definition.name
        if name.startswith("sync."):
            continue
        out[(name, int(row[1]), tuple(int(v) for v in row[2:]))].append(
            (float(times[0]), float(times[1])))
    return dict(out)


def _assert_same_schedule(explicit, auto) -> None:
    got, want = _schedule(explicit), _schedule(auto)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    assert explicit.timing.time_ns == auto.timing.time_ns
    for track, stats in auto.timing.tracks.items():
        # equal durations, summed in another order (replay order vs program order)
        assert explicit.timing.tracks[track].busy_ns == pytest.approx(stats.busy_ns,
                                                                      rel=1e-13), track


@pytest.mark.parametrize("target", TARGETS)
def test_explicit_sync_is_double_buffer_instruction_for_instruction(target: str) -> None:
    """DMA queues and ScalarE: loads, RAW through ScalarE's pipeline latency, WAR on the
    buffers (README: 'the same 38 us as double_buffer')."""
    run = lambda name: neuronemu.run(neuronemu.assemble_file(find_program(name), target=target))
    _assert_same_schedule(run("timing/explicit_sync"), run("timing/double_buffer"))


# programs/timing/pe_row_tiles.s with one semaphore per dependency: four matmuls on disjoint PE
# row tiles at once (PE blocks), VectorE reading their PSUM results (the TensorE drain: auto
# charges it to the reader, the replay to the signal), and queue 0 storing each result before
# VectorE overwrites the staging tile (WAR) while VectorE's own writes wait for its latency
PE_ROW_TILES_EXPLICIT = """.sync explicit
.target trn2
.hbm q bfloat16[128, 128] input
.hbm k bfloat16[128, 512] input
.hbm scores float32[4, 128, 512] output
.sbuf qs bfloat16[128, 128]
.sbuf ks bfloat16[128, 512]
.psum s0 float32[128, 512]
.psum s1 float32[128, 512]
.psum s2 float32[128, 512]
.psum s3 float32[128, 512]
.sbuf out float32[128, 512]
    dma.copy qs, q, queue=0
    sync.signal q0, sem=0
    dma.copy ks, k, queue=1
    sync.signal q1, sem=1
    sync.wait tensor, sem=0, value=1
    sync.wait tensor, sem=1, value=1
    tensor.matmul s0, qs[0:32, :], ks[0:32, :], tile_position=[0, 0], tile_size=[32, 128]
    tensor.matmul s1, qs[32:64, :], ks[32:64, :], tile_position=[32, 0], tile_size=[32, 128]
    tensor.matmul s2, qs[64:96, :], ks[64:96, :], tile_position=[64, 0], tile_size=[32, 128]
    tensor.matmul s3, qs[96:128, :], ks[96:128, :], tile_position=[96, 0], tile_size=[32, 128]
    sync.signal tensor, sem=2
    sync.wait vector, sem=2, value=1
""" + "".join(f"""    vector.tensor_copy out, s{h}
    sync.signal vector, sem=3
    sync.wait q0, sem=3, value={h + 1}
    dma.copy scores[{h}, :, :], out
    sync.signal q0, sem=4
    sync.wait vector, sem=4, value={h + 1}
""" for h in range(4))


def test_pe_row_tiles_with_semaphores_is_the_auto_schedule() -> None:
    explicit = neuronemu.run(neuronemu.assemble(PE_ROW_TILES_EXPLICIT, filename="pe_explicit.s"))
    auto = neuronemu.run(neuronemu.assemble_file(find_program("timing/pe_row_tiles")))
    _assert_same_schedule(explicit, auto)
    # the four tiles overlap in both: TensorE is busy for one matmul's time, not four
    starts = {t for key, times in _schedule(explicit).items() if key[0] == "tensor.matmul"
              for t, _ in times}
    assert len(starts) == 1
