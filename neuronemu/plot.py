"""A picture of the modelled timeline: one row per engine and DMA queue, a bar per instruction,
each row labelled with its utilisation (busy time / run time), the critical path's largest share
in the title. Drawn from the same events as the Perfetto trace (``Timing.events``).

matplotlib is an optional extra (``pip install 'neuronemu[plot]'``); ``require_matplotlib``
says so clearly when it is missing."""

from __future__ import annotations

from pathlib import Path

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


def _rows(timing) -> dict[str, list[tuple[float, float]]]:
    """Track name -> [(start ns, duration ns)] of its recorded instructions, in track order."""
    from neuronemu.timing.report import track_names

    names = track_names()
    rows: dict[int, list[tuple[float, float]]] = {}
    for row, times in zip(timing.events, timing.event_times, strict=True):
        start, end = float(times[0]), float(times[1])
        if end > start:
            rows.setdefault(int(row[1]), []).append((start, end - start))
    return {names[t]: rows[t] for t in sorted(rows)}


def plot_timeline(program, timing, path: str | Path, title: str | None = None) -> Path:
    """Draw the timeline of one run to ``path`` (PNG, or any format matplotlib infers from the
    suffix). Returns the path."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(timing)
    names = list(rows)
    total_us = timing.time_ns / 1000.0
    fig_height = 1.1 + 0.32 * max(1, len(names))
    fig, ax = plt.subplots(figsize=(8.0, fig_height), dpi=80)
    for i, name in enumerate(names):
        family = name.split(".")[0]
        bars = [(s / 1000.0, d / 1000.0) for s, d in rows[name]]
        ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=_COLOURS.get(family, "#999999"),
                       edgecolors="white", linewidth=0.3)
    labels = []
    for name in names:
        stats = timing.tracks.get(name)
        util = f" {stats.utilisation:.0%}" if stats is not None else ""
        labels.append(f"{name}{util}")
    ax.set_yticks(range(len(names)), labels=labels, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, total_us * 1.01 if total_us else 1.0)
    ax.set_xlabel("modelled time (us)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    head = title or Path(program.source.name).name
    bound = timing.bound_by
    sub = f"{total_us:.2f} us on {program.target.name}"
    if bound:
        sub += f", critical path bound by {bound}"
    if timing.events_recorded < timing.events_total:
        sub += f" (first {timing.events_recorded} of {timing.events_total} instructions drawn)"
    ax.set_title(f"{head}\n{sub}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
