"""Text helpers shared by the assertions' failure messages."""

from __future__ import annotations

import numpy as np


def index_text(flat: int, shape: tuple[int, ...]) -> str:
    """A flat index as the n-d index a reader looks up: ``[3, 17]``."""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    """Left-aligned columns, indented by two spaces."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]


def worst_first(score: np.ndarray, bad: np.ndarray, show: int) -> list[int]:
    """Flat indices of the ``show`` failing elements with the largest score (ties: first)."""
    candidates = np.flatnonzero(bad)
    order = np.lexsort((candidates, -score[candidates]))
    return [int(i) for i in candidates[order[:show]]]
