"""The Chrome / Perfetto trace of a run: one thread per track, one complete event per instruction.

``chrome_trace`` returns the document; ``trace_writer`` writes the same bytes as
``json.dumps`` of it, event by event, so a run of ten million instructions is written without
ten million dicts in memory (about 200 bytes of JSON an event; a line on stderr says how far
the writing is when it takes longer than a few seconds)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.timing.report import Timing, track_names

_BATCH = 4096   # events joined per write
FIRST_NOTICE_S = 2.0   # a writing that takes longer says how far it is, then every 10 s
NOTICE_EVERY_S = 10.0


def chrome_trace(program, timing: Timing, pid: int = 0, label: str | None = None) -> dict:
    """Chrome / Perfetto trace JSON: one thread per track, one complete event per instruction."""
    return {"traceEvents": list(trace_events(program, timing, pid, label)),
            "displayTimeUnit": "ns", "otherData": _other(timing)}


def chrome_trace_ranks(result) -> dict:
    """One trace of a multi-rank run (api.SpmdResult): a process per rank, named by its chip
    and core, holding that rank's tracks."""
    return {"traceEvents": [e for rank in _ranks(result) for e in trace_events(*rank)],
            "displayTimeUnit": "ns", "otherData": _other_ranks(result)}


def trace_writer(program, result, spmd: bool):
    """A files.Writer of the run's trace (``chrome_trace`` or, for ``spmd``, the ranks'),
    streamed: the same bytes as ``json.dumps`` of the document."""
    def write(f: IO[bytes]) -> None:
        if spmd:
            streams = [trace_events(*rank) for rank in _ranks(result)]
            other = _other_ranks(result)
            total = sum(r.timing.events_recorded for r in result.ranks)
        else:
            streams = [trace_events(program, result.timing)]
            other = _other(result.timing)
            total = result.timing.events_recorded
        _write_document(f, streams, other, total)
    return write


def _write_document(f: IO[bytes], streams: list[Iterator[dict]], other: dict,
                    total: int) -> None:
    f.write(b'{"traceEvents": [')
    dumps = json.JSONEncoder().encode
    batch, written, first = [], 0, True
    started = time.perf_counter()
    next_notice = started + FIRST_NOTICE_S
    for stream in streams:
        for event in stream:
            batch.append(dumps(event))
            if len(batch) == _BATCH:
                f.write(((", " if not first else "") + ", ".join(batch)).encode())
                first, written = False, written + len(batch)
                batch = []
                now = time.perf_counter()
                if now >= next_notice:
                    _say_progress(written, total, now - started)
                    next_notice = now + NOTICE_EVERY_S
    if batch:
        f.write(((", " if not first else "") + ", ".join(batch)).encode())
    f.write(b'], "displayTimeUnit": "ns", "otherData": ' + dumps(other).encode() + b"}")


def _say_progress(written: int, total: int, seconds: float) -> None:
    from neuronemu.notices import notify

    notify(f"neuronemu: writing the trace: {written:,} of {total:,} events after "
           f"{seconds:.0f} s (about 200 bytes of JSON each)")


def _ranks(result) -> Iterator[tuple]:
    for rank, r in enumerate(result.ranks):
        chip, core = divmod(rank, result.ranks_per_chip)
        yield result.program, r.timing, rank, f"rank {rank} (chip {chip}, core {core})"


def _other(timing: Timing) -> dict:
    return {"time_ns": timing.time_ns, "events_total": timing.events_total,
            "events_recorded": timing.events_recorded}


def _other_ranks(result) -> dict:
    return {"time_ns": result.time_ns, "topology": result.topology, "world": result.world}


def trace_events(program, timing: Timing, pid: int = 0, label: str | None = None
                 ) -> Iterator[dict]:
    """The trace's events of one run: its process and thread names, then an event per
    recorded instruction, in the order recorded."""
    names = track_names()
    source = Path(program.source.name).name
    name = f"{program.source.name} ({program.target.name})"
    yield {"name": "process_name", "ph": "M", "pid": pid,
           "args": {"name": f"{label}: {name}" if label else name}}
    yield {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}
    events = timing.events if timing.events_recorded else np.zeros((0, 2), dtype=np.int64)
    # (pc, track) pairs in order of first appearance: the threads are numbered in that order
    pairs, first = (np.unique(events[:, :2], axis=0, return_index=True) if len(events)
                    else (np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)))
    pairs = [(int(pc), int(track)) for pc, track in pairs[np.argsort(first, kind="stable")]]
    tids = {}  # (track, PE tile) -> thread; tiled matmuls overlap, so each tile gets its own
    for pc, track in pairs:
        key = _trace_thread(program, pc, track)
        tids.setdefault(key, key[0] if key[1] is None else 1000 + len(tids))
    for (t, tile), tid in sorted(tids.items(), key=lambda kv: (kv[0][0], kv[1])):
        yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
               "args": {"name": names[t] + (f" {tile}" if tile else "")}}
        yield {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
               "args": {"sort_index": t * 1000 + (tid - 999 if tile else 0)}}
    # what an event's pc and track say, worked out once per pair
    fixed = {}
    for pc, track in pairs:
        ins = program.instructions[pc]
        fixed[pc, track] = (ins.definition.name, tids[_trace_thread(program, pc, track)],
                            f"{source}:{ins.location.line}",
                            _broadcast_label(ins) if track >= L.DMA_TRACK0 else "")
    for start in range(0, len(events), _BATCH):
        rows = events[start: start + _BATCH, :2].tolist()
        times = timing.event_times[start: start + _BATCH].tolist()
        for (pc, track), (t0, t1, cycles, nbytes, wire) in zip(rows, times, strict=True):
            ins_name, tid, where, spread = fixed[pc, track]
            if track >= L.DMA_TRACK0:
                nbytes, wire = int(nbytes), int(wire)
                args = {"ns_alone": round(cycles, 3), "source": where, "bytes": nbytes,
                        "compressed_bytes": wire,
                        "compression_ratio": round(nbytes / wire, 6) if wire else 1.0}
                if spread:
                    args["broadcast"] = spread
            else:
                args = {"cycles": round(cycles, 3), "source": where}
            yield {"name": ins_name, "ph": "X", "pid": pid, "tid": tid,
                   "ts": round(t0 / 1000.0, 6), "dur": round((t1 - t0) / 1000.0, 6),
                   "args": args}


def _broadcast_label(ins) -> str:
    """'gamma: 1 row -> 128 partitions' for each source a DMA broadcasts, else ''."""
    from neuronemu.program import Tile

    return "; ".join(f"{v.symbol}: 1 row -> {v.partitions} partitions"
                     for v in ins.args.values() if isinstance(v, Tile) and v.broadcast)


def _trace_thread(program, pc: int, track: int) -> tuple[int, str | None]:
    """(track, PE tile label): a tiled Tensor instruction runs on its own trace thread, named by
    its rows and columns of the PE array, since it may overlap others on the same engine."""
    if track != L.TENSOR_TRACK:
        return track, None
    from neuronemu.program import pe_tile

    tile = pe_tile(program.instructions[pc].args)
    if tile is None:
        return track, None
    r, c, rows, cols = tile
    return track, f"PE rows {r}-{r + rows - 1}, cols {c}-{c + cols - 1}"

