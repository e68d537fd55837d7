"""Fingerprints of runs, for the golden corpus that keeps engine changes bit-identical.

``key`` names a run by everything that decides its result (the kernel's source text and file
name, target, sync mode, inputs, options); ``digest`` fingerprints everything a run reports:
every HBM tensor and on-chip allocation bit for bit, instruction counts, the whole timing report
(times, cycles, per-track and DMA statistics, critical path, every recorded trace event) and the
rendered warnings, or the rendered error a run raised. Two engines agree on a run exactly when
the digests are equal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _source_name(name: str) -> str:
    """A kernel file inside the checkout by its path relative to the checkout, so a key is the
    same in every clone and worktree (CI runs in a fresh clone elsewhere); other names as given."""
    path = Path(name)
    if not path.is_absolute():
        return name
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return name


def _portable(text: str) -> str:
    """Rendered diagnostics name their files: paths inside the checkout relative to it. Values
    only: a generated NKI file's line numbers too (its header changes with the schedule)."""
    text = text.replace(f"{ROOT.as_posix()}/", "")
    if VALUES_ONLY:
        text = re.sub(r"(\.nki\.s):\d+(:\d+)?", r"\1:N", text)
        text = re.sub(r"(?m)^ *\d+ \| ", "| ", text)   # the quoted line's number
    return text


def _array(h, name: str, array) -> None:
    array = np.ascontiguousarray(np.asarray(array))
    h.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
    h.update(array.view(np.uint8).tobytes() if array.size else b"")


def _full_width(events):
    """A long run's events mapped from its file have only the program's argument columns
    (timing/eventlog.py); the buffer's columns past them are zeros: the same digest either
    way."""
    from neuronemu.timing.events import EVENT_WIDTH

    events = np.asarray(events)
    if events.shape[1] == EVENT_WIDTH:
        return events
    full = np.zeros((events.shape[0], EVENT_WIDTH), dtype=events.dtype)
    full[:, :events.shape[1]] = events
    return full


VALUES_ONLY = False
"""(pytest --golden-values-only) Fingerprint what a run computes, not when: HBM tensors,
instruction counts, warnings and errors, without the timing report, the on-chip allocations
(whose placement a traced kernel's schedule may change) or a ``.schedule`` line in the key.
Around a change of the timing model: record a values-only corpus (--golden-corpus PATH) before
it, compare after it, then re-record the corpus (README, "Tests")."""


def key(program, inputs, options: dict) -> str:
    h = hashlib.sha256()
    text = program.source.text
    if VALUES_ONLY:
        text = "\n".join(line for line in text.split("\n") if not line.startswith(".schedule"))
    h.update(_source_name(program.source.name).encode() + b"\0" + text.encode())
    h.update(f"|{program.target.name}|{program.sync_mode}|".encode())
    for name in sorted(inputs or {}):
        value = (inputs or {})[name]
        _array(h, name, value if isinstance(value, np.ndarray) else np.asarray(value))
    h.update(json.dumps(options, sort_keys=True, default=repr).encode())
    return h.hexdigest()[:24]


def _plain(value):
    """Dataclasses and containers as JSON-able values; floats by repr, so every bit counts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not isinstance(getattr(value, f.name), np.ndarray)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (np.integer, np.floating)):
        return repr(value.item())
    return value


def _result(h, result) -> None:
    for group in ("outputs", "tensors") if VALUES_ONLY else ("outputs", "tensors", "tiles"):
        for name, array in sorted(getattr(result, group).items()):
            _array(h, f"{group}.{name}", array)
    h.update(json.dumps([result.instructions, result.steps], sort_keys=True).encode())
    timing = result.timing
    if timing is not None and not VALUES_ONLY:
        h.update(json.dumps(_plain(timing), sort_keys=True).encode())
        n = timing.events_recorded
        if timing.events is not None:
            _array(h, "events", _full_width(timing.events[:n]))
        if timing.event_times is not None:
            _array(h, "event_times", timing.event_times[:n])
    for warning in result.warnings:
        text = warning.render() if hasattr(warning, "render") else str(warning)
        h.update(_portable(text).encode())


def digest(outcome) -> str:
    """Fingerprint of a Result, an SpmdResult or a raised exception."""
    h = hashlib.sha256()
    if isinstance(outcome, BaseException):
        render = getattr(outcome, "render", None)
        h.update(type(outcome).__name__.encode())
        h.update(_portable(render() if render else str(outcome)).encode())
    elif hasattr(outcome, "ranks"):
        for rank in outcome.ranks:
            _result(h, rank)
        h.update(json.dumps(_plain(outcome.network), sort_keys=True).encode())
    else:
        _result(h, outcome)
    return h.hexdigest()[:24]
