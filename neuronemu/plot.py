"""A picture of the modelled timeline: one row per engine and DMA queue, a bar per instruction
(labelled with its mnemonic and source line where it is wide enough), each row labelled with its
utilisation (busy time / run time), the critical path's largest share in the title. Drawn from the same events as the Perfetto trace (``Timing.events``).

matplotlib is an optional extra (``pip install 'neuronemu[plot]'``); ``require_matplotlib``
says so clearly when it is missing."""

from __future__ import annotations

import os
from pathlib import Path

from neuronemu.errors import InputError

INSTALL_HINT = ("drawing a timeline needs matplotlib, which is not installed: "
                "pip install 'neuronemu[plot]' (or: pip install matplotlib)")

# one colour per engine family; DMA queues share one
_COLOURS = {"tensor": "#4C72B0", "vector": "#55A868", "scalar": "#C44E52", "gpsimd": "#8172B2",
            "dma": "#CCB974", "cc": "#64B5CD"}


class MissingMatplotlib(ImportError):
    pass


def require_matplotlib() -> None:
    """Raise MissingMatplotlib (with the install command) unless matplotlib can be imported."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise MissingMatplotlib(INSTALL_HINT)


# Why these sizes (issue 30 item 19: the picture was 640 px wide and its bars unlabelled): a
# picture people read on a screen or a slide at full width, with rows tall enough for a label
_WIDTH_INCHES, _DPI, _ROW_INCHES = 15.0, 100, 0.5
DRAWN_EVENTS = 1 << 20   # bars drawn at most (the first ones)
_LABEL_POINTS = 7
_MAX_LABELS = 600          # text objects cost time to draw: the widest bars get them first


def check_destination(path: Path | None) -> None:
    """A picture to be drawn after a run (or after grading): matplotlib must be there and the
    directory writable now, so neither fails after the work is done. Raises MissingMatplotlib
    or InputError."""
    if path is None:
        return
    require_matplotlib()
    folder = Path(path).parent
    if not folder.is_dir():
        why = "is not a directory" if folder.exists() else "does not exist"
        raise InputError(f"--plot: cannot write {path}: the directory {folder} {why}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"--plot: cannot write {path}: the directory {folder} is not writable")


def _rows(timing) -> dict[str, list[tuple[float, float, int]]]:
    """Track name -> [(start ns, duration ns, pc)] of its recorded instructions, in track
    order."""
    from neuronemu.timing.report import track_names

    names = track_names()
    rows: dict[int, list[tuple[float, float, int]]] = {}
    n = _drawn(timing)
    for row, times in zip(timing.events[:n, :2].tolist(), timing.event_times[:n, :2].tolist(),
                          strict=True):
        start, end = float(times[0]), float(times[1])
        if end > start:
            rows.setdefault(int(row[1]), []).append((start, end - start, int(row[0])))
    return {names[t]: rows[t] for t in sorted(rows)}


def _drawn(timing) -> int:
    """Instructions drawn: a picture of more than 2^20 bars shows nothing more (a run keeps
    every event now; the trace has them all)."""
    return min(timing.events_recorded, DRAWN_EVENTS)


def _bar_label(program, pc: int) -> str:
    """What a bar shows: the instruction's mnemonic and source line (``tensor_tensor :12``)."""
    ins = program.instructions[pc]
    line = ins.location.line if ins.location is not None else None
    return ins.definition.mnemonic + (f" :{line}" if line else "")


def draw_timeline(program, timing, title: str | None = None):
    """The timeline of one run as a matplotlib Figure (the caller saves or closes it)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(timing)
    names = list(rows)
    total_us = timing.time_ns / 1000.0
    fig_height = 1.6 + _ROW_INCHES * max(1, len(names))
    fig, ax = plt.subplots(figsize=(_WIDTH_INCHES, fig_height), dpi=_DPI)
    for i, name in enumerate(names):
        family = name.split(".")[0]
        bars = [(s / 1000.0, d / 1000.0) for s, d, _ in rows[name]]
        ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=_COLOURS.get(family, "#999999"),
                       edgecolors="white", linewidth=0.4)
    labels = []
    for name in names:
        stats = timing.tracks.get(name)
        util = f" {stats.utilisation:.0%}" if stats is not None else ""
        labels.append(f"{name}{util}")
    ax.set_yticks(range(len(names)), labels=labels, fontsize=9)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, total_us * 1.01 if total_us else 1.0)
    ax.set_xlabel("modelled time (us)", fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    head = title or Path(program.source.name).name
    bound = timing.bound_by
    sub = f"{total_us:.2f} us on {program.target.name}"
    if bound:
        sub += f", critical path bound by {bound}"
    if _drawn(timing) < timing.events_total:
        sub += f" (first {_drawn(timing)} of {timing.events_total} instructions drawn)"
    ax.set_title(f"{head}\n{sub}", fontsize=10)
    fig.tight_layout()
    _label_bars(ax, program, rows, names, total_us)
    return fig


def _label_bars(ax, program, rows, names, total_us: float) -> None:
    """Write each bar's instruction inside it where the bar is wide enough for the text."""
    if not total_us:
        return
    width_px = ax.get_window_extent().width
    px_per_us = width_px / (total_us * 1.01)
    char_px = _LABEL_POINTS * 0.62 * _DPI / 72        # a monospace-ish average glyph
    fits = []
    for i, name in enumerate(names):
        for start, duration, pc in rows[name]:
            text = _bar_label(program, pc)
            if duration / 1000.0 * px_per_us >= (len(text) + 1) * char_px:
                fits.append((duration, i, start, text))
    fits.sort(key=lambda f: -f[0])
    for duration, i, start, text in fits[:_MAX_LABELS]:
        ax.text((start + duration / 2) / 1000.0, i, text, ha="center", va="center",
                fontsize=_LABEL_POINTS, color="black", clip_on=True)


def plot_timeline(program, timing, path: str | Path, title: str | None = None) -> Path:
    """Draw the timeline of one run to ``path`` (PNG, or any format matplotlib infers from the
    suffix). Returns the path."""
    fig = draw_timeline(program, timing, title)   # says how to install matplotlib if missing
    import matplotlib.pyplot as plt

    path = Path(path)
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
