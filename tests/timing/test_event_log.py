"""Every event of a run is kept, however long the run (issue 29: events past 2^20 were dropped,
so the critical path, the trace and the explicit replay of a long kernel saw only its start).

The oracle of the bookkeeping is the run recorded whole in memory (``max_trace_events`` at
least its event count: one buffer, no file): the same run streamed through a buffer of a few
rows, emptied into a file dozens of times, must give the same events, times, critical path,
trace and replay, byte for byte. The critical path is also held against a plain-Python walk
written from its definition, and a loop's event count against the count by hand."""

from __future__ import annotations

import bisect
import io
import json
import os
import tempfile

import numpy as np
import pytest

import neuronemu
from neuronemu.api import run_spmd
from neuronemu.machine import layout as L
from neuronemu.programs import bundled_programs
from neuronemu.timing import eventlog
from neuronemu.timing.trace import chrome_trace, chrome_trace_ranks, trace_writer

ALL_IN_MEMORY = 1 << 24

LOOP = """.sbuf a float32[128, 8]
.sbuf b float32[128, 8]
.sbuf col float32[128, 1]
vector.memset a, value=1.0
ctrl.mov r0, 0
top:
vector.tensor_scalar b, a, op0=multiply, operand0=0.5
scalar.activation a, b, func=relu
vector.tensor_reduce col, a, op=maximum
ctrl.add r0, r0, 1
ctrl.blt r0, {n}, top
"""


@pytest.fixture
def rows(monkeypatch):
    """Streaming buffers of ``n`` rows."""
    def set_rows(n: int) -> None:
        monkeypatch.setattr(eventlog, "STREAM_ROWS", n)
        monkeypatch.setattr(eventlog, "MIN_STREAM_ROWS", n)
    return set_rows


def _fingerprint(result) -> tuple:
    t = result.timing
    width = 2 + int(result.program.instrs[:, L.I_NARGS].max())
    events = np.asarray(t.events)
    assert not events[:, width:].any()   # the buffer's columns past every argument
    return (t.time_ns, t.critical_path, t.tracks, t.events_recorded, t.events_total,
            events[:, :width].tobytes(), np.asarray(t.event_times).tobytes(),
            json.dumps(chrome_trace(result.program, t)),
            {k: np.asarray(v).tobytes() for k, v in result.outputs.items()})


SINGLE_CORE = [name for name in bundled_programs() if not name.startswith("collectives/")]


@pytest.mark.parametrize("name", SINGLE_CORE)
def test_a_run_streamed_through_a_small_buffer_is_the_run_kept_in_memory(name, rows) -> None:
    program = neuronemu.assemble_file(bundled_programs()[name])
    whole = neuronemu.run(program, seed=3, max_trace_events=ALL_IN_MEMORY)
    assert whole.timing.events_recorded == whole.timing.events_total
    rows(5)
    streamed = neuronemu.run(program, seed=3)
    assert _fingerprint(streamed) == _fingerprint(whole)
    if streamed.timing.events_total > 5:   # mapped from the file: the program's columns
        assert streamed.timing.events.shape[1] == 2 + int(program.instrs[:, L.I_NARGS].max())


def test_ranks_stream_their_events_and_the_cc_instructions_too(rows) -> None:
    program = neuronemu.assemble_file(bundled_programs()["collectives/ring_allreduce"])
    whole = run_spmd(program, "trn2.48xlarge", max_trace_events=ALL_IN_MEMORY)
    rows(3)
    streamed = run_spmd(program, "trn2.48xlarge")
    assert [_fingerprint(r) for r in streamed.ranks] == [_fingerprint(r) for r in whole.ranks]
    assert json.dumps(chrome_trace_ranks(streamed)) == json.dumps(chrome_trace_ranks(whole))


def test_a_long_loop_keeps_every_event_with_one_buffer_of_memory(rows, monkeypatch,
                                                                  tmp_path) -> None:
    """3 timed instructions an iteration (ctrl is not timed), plus the memset: counted by
    hand. The buffer stays its size; the rest went to a file that has no name in the
    temporary directory, during the run or after it."""
    from neuronemu.exec.core import Core

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    logs = []
    real_init = Core.__init__

    def spy(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        logs.append(self.log)
    monkeypatch.setattr(Core, "__init__", spy)
    rows(64)
    n = 5000
    result = neuronemu.run(neuronemu.assemble(LOOP.format(n=n), "loop.s"))
    timing = result.timing
    assert timing.events_total == timing.events_recorded == 3 * n + 1
    [log] = logs
    assert log.events.shape[0] == 64 and log.spilled == 3 * n + 1
    assert os.listdir(tmp_path) == []
    pcs = np.asarray(timing.events[:, 0])
    assert list(pcs[:4]) == [0, 2, 3, 4] and list(pcs[-3:]) == [2, 3, 4]
    assert (np.diff(np.asarray(timing.event_times[:, 1])) >= 0).all()   # one dependent chain
    assert timing.critical_path == _python_critical_path(timing)
    # a chain of dependent instructions: the path covers the run, start to end
    assert sum(timing.critical_path.values()) == pytest.approx(timing.time_ns, rel=1e-12)


def test_a_capped_log_keeps_the_first_events_and_counts_the_rest(rows) -> None:
    rows(64)
    program = neuronemu.assemble(LOOP.format(n=100), "loop.s")
    whole = neuronemu.run(program).timing
    capped = neuronemu.run(program, max_trace_events=10).timing
    assert (capped.events_recorded, capped.events_total) == (10, whole.events_total)
    assert np.array_equal(capped.event_times, np.asarray(whole.event_times[:10]))


def test_the_trace_is_written_event_by_event_as_the_document_reads(rows) -> None:
    rows(16)
    program = neuronemu.assemble(LOOP.format(n=2000), "loop.s")   # > one write batch
    result = neuronemu.run(program)
    out = io.BytesIO()
    trace_writer(program, result, spmd=False)(out)
    assert out.getvalue() == json.dumps(chrome_trace(program, result.timing)).encode()
    ranks = run_spmd(neuronemu.assemble_file(bundled_programs()["collectives/all_reduce"]),
                     "trn2.48xlarge")
    out = io.BytesIO()
    trace_writer(ranks.program, ranks, spmd=True)(out)
    assert out.getvalue() == json.dumps(chrome_trace_ranks(ranks)).encode()


def test_a_long_trace_says_how_far_its_writing_is(rows, monkeypatch) -> None:
    from neuronemu.timing import trace

    said = []
    monkeypatch.setattr(trace, "FIRST_NOTICE_S", 0.0)
    monkeypatch.setattr("neuronemu.notices.notify", said.append)
    program = neuronemu.assemble(LOOP.format(n=3000), "loop.s")
    result = neuronemu.run(program)
    trace_writer(program, result, spmd=False)(io.BytesIO())
    assert said and said[0].startswith("neuronemu: writing the trace: 4,096 of 9,001 events")


def _python_critical_path(timing) -> dict[str, float]:
    """The walk back from the last event to end, from its definition (timing/report.py): to the
    event ending exactly at this one's start, latest in program order, preferring this one's
    track; else to the last event to end before the start, the gap counting for that one."""
    from neuronemu.timing.report import track_names

    names = track_names()
    tracks = [int(t) for t in np.asarray(timing.events[:, 1])]
    starts = [float(x) for x in np.asarray(timing.event_times[:, 0])]
    ends = [float(x) for x in np.asarray(timing.event_times[:, 1])]
    at_end: dict[float, list[int]] = {}   # end -> the events ending then, in program order
    for i, end in enumerate(ends):
        at_end.setdefault(end, []).append(i)
    distinct = sorted(at_end)
    shares: dict[int, float] = {}
    order: list[int] = []
    current = max(range(len(ends)), key=lambda i: (ends[i], -i))
    while True:
        track = tracks[current]
        if track not in shares:
            shares[track] = 0.0
            order.append(track)
        shares[track] += ends[current] - starts[current]
        start = starts[current]
        if start <= 0.0:
            break
        exact = [i for i in at_end.get(start, ()) if i < current]
        if exact:
            same = [i for i in exact if tracks[i] == track]
            current = max(same) if same else max(exact)
            continue
        latest = -1
        for k in range(bisect.bisect_left(distinct, start) - 1, -1, -1):
            earlier = [i for i in at_end[distinct[k]] if i < current]
            if earlier:
                latest = max(earlier)
                break
        if latest < 0:
            break
        if tracks[latest] not in shares:
            shares[tracks[latest]] = 0.0
            order.append(tracks[latest])
        shares[tracks[latest]] += start - ends[latest]
        current = latest
    visited = {names[t]: shares[t] for t in order}
    return dict(sorted(visited.items(), key=lambda kv: -kv[1]))
