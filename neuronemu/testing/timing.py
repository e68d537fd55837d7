"""Performance assertions on the modelled time of a run: ``assert_timing``.

A failure prints the timing report a kernel engineer acts on: per-track busy time and
utilisation, the critical path (ns per track along the chain of instructions that set the end
time, walked back from the last instruction to finish; neuronemu.timing.report), and the
source lines that kept the critical-path tracks busiest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from neuronemu.timing.report import Timing


def _timing_and_program(run):
    """(Timing, Program or None) of a KernelRun, a neuronemu.Result or a Timing."""
    if hasattr(run, "ranks"):
        raise TypeError("assert_timing takes one core's run; for a multi-rank run pass "
                        "run.result.ranks[r]")
    result = getattr(run, "result", run)
    timing = getattr(result, "timing", result)
    if not hasattr(timing, "critical_path"):
        raise TypeError(f"expected a KernelRun, neuronemu.Result or Timing, not "
                        f"{type(run).__name__}")
    return timing, getattr(result, "program", None)


def utilisation(timing: Timing, name: str) -> float:
    """Busy fraction of a track ("tensor", "vector", "scalar", "gpsimd", "dma.q0", ...), or of
    the DMA engines on average ("dma"), or of the TensorE bf16 peak FLOP/s ("tensor_peak")."""
    if name == "dma":
        return timing.dma.engine_utilisation if timing.dma is not None else 0.0
    if name == "tensor_peak":
        return timing.tensor_peak_fraction
    track = timing.tracks.get(name)
    if track is None:
        from neuronemu.timing.report import track_names

        known = [n for n in track_names().values() if n != "barrier"] + ["dma", "tensor_peak"]
        if name not in known:
            raise ValueError(f"no track '{name}'; tracks: {', '.join(known)}")
        return 0.0   # a track no instruction used
    return track.utilisation


def timing_report(run, lines_per_track: int = 3) -> str:
    """The text ``assert_timing`` prints: tracks, critical path, busiest source lines."""
    timing, program = _timing_and_program(run)
    out = []
    path_ns = sum(timing.critical_path.values())
    target = f" on {program.target.name}" if program is not None else ""
    out.append(f"time {timing.time_ns:.1f} ns{target} (modelled); "
               f"cycles {', '.join(f'{k} {v}' for k, v in timing.cycles.items())}")
    out.append(f"  {'track':<10} {'instrs':>7} {'busy ns':>11} {'util':>7}")
    for name, t in timing.tracks.items():
        out.append(f"  {name:<10} {t.instructions:>7} {t.busy_ns:>11.1f} {t.utilisation:>7.1%}")
    if timing.tensor_flops:
        out.append(f"  tensor: {timing.tensor_peak_fraction:.1%} of the bf16 peak FLOP/s")
    if timing.dma is not None:
        out.append(f"  dma: {timing.dma.transfers} transfers, {timing.dma.bytes} bytes, engines "
                   f"{timing.dma.engine_utilisation:.1%} busy")
    if not path_ns:
        out.append("critical path: empty (no timed instructions recorded)")
        return "\n".join(out)
    out.append(f"critical path: bound by {timing.bound_by} (ns per track along the chain that "
               f"set the end time)")
    for name, ns in timing.critical_path.items():
        out.append(f"  {name:<10} {ns:>11.1f} ns {ns / path_ns:>6.1%}")
    if program is not None and timing.events_recorded:
        out.append("busiest source lines on those tracks (busy ns, instructions):")
        out += _busiest_lines(program, timing, lines_per_track)
    if timing.events_recorded < timing.events_total:
        out.append(f"  (trace holds the first {timing.events_recorded} of "
                   f"{timing.events_total} timed instructions)")
    return "\n".join(out)


def _busiest_lines(program, timing: Timing, per_track: int) -> list[str]:
    from neuronemu.timing.report import track_names

    names = track_names()
    pcs = timing.events[:, 0].astype(np.int64)
    tracks = timing.events[:, 1].astype(np.int64)
    busy = timing.event_times[:, 1] - timing.event_times[:, 0]
    source = Path(program.source.name).name
    lines = []
    for track_name in timing.critical_path:
        codes = [code for code, n in names.items() if n == track_name]
        on_track = np.isin(tracks, codes)
        if not on_track.any():
            continue
        by_pc: dict[int, list[float]] = {}
        for pc, ns in zip(pcs[on_track], busy[on_track], strict=True):
            entry = by_pc.setdefault(int(pc), [0.0, 0])
            entry[0] += float(ns)
            entry[1] += 1
        for pc, (ns, count) in sorted(by_pc.items(), key=lambda kv: -kv[1][0])[:per_track]:
            ins = program.instructions[pc]
            lines.append(f"  {track_name:<10} {source}:{ins.location.line:<5} "
                         f"{ins.definition.name:<24} {ns:>11.1f} ns  x{count}")
    return lines


def assert_timing(run, *, max_ns: float | None = None, max_cycles: int | None = None,
                  clock: str = "tensor",
                  min_utilisation: dict[str, float] | None = None) -> None:
    """Fail unless the run's modelled time is within budget: ``max_ns`` nanoseconds,
    ``max_cycles`` cycles of the ``clock`` engine's clock (engines have their own clocks; see
    isa/targets.toml), and each ``min_utilisation`` entry (track name, "dma" or "tensor_peak",
    see ``utilisation``) at least its fraction. ``run``: a KernelRun, neuronemu.Result or
    Timing. The message holds ``timing_report``."""
    __tracebackhide__ = True   # pytest shows the message, not this frame
    timing, _ = _timing_and_program(run)
    failures = []
    if max_ns is not None and timing.time_ns > max_ns:
        failures.append(f"time {timing.time_ns:.1f} ns > budget {max_ns:g} ns "
                        f"({timing.time_ns / max_ns:.2f}x)")
    if max_cycles is not None:
        if clock not in timing.cycles:
            raise ValueError(f"no clock '{clock}'; clocks: {', '.join(timing.cycles)}")
        cycles = timing.cycles[clock]
        if cycles > max_cycles:
            failures.append(f"{cycles} {clock} cycles > budget {max_cycles} "
                            f"({cycles / max_cycles:.2f}x)")
    for name, least in (min_utilisation or {}).items():
        got = utilisation(timing, name)
        if got < least:
            failures.append(f"{name} utilisation {got:.1%} < {least:.1%}")
    if failures:
        raise AssertionError("timing budget missed: " + "; ".join(failures) + "\n"
                             + timing_report(run))
