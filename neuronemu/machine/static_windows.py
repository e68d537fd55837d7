"""What a program's operand table says, before it runs, of the tiles the fast paths need:
``memory.f32_window`` and ``memory.in_place_safe`` answered for many instructions at once.

Why: a program gets a function's narrow fp32 kernel (neuronemu/exec/kernels.py) only when
every instruction of it is sure to be covered, and then never compiles the general path. An
operand whose address depends on registers is unknown here (-1: not sure), so its program keeps
the general kernel. tests/semantics/test_narrow_kernels.py holds these against the jitted
functions they answer for.
"""

from __future__ import annotations

import numpy as np

from neuronemu.isa import dtypes as D
from neuronemu.machine import layout as L

_F32 = D.get("float32").code


def f32_windows(rows: np.ndarray) -> np.ndarray:
    """int64 [k]: ``memory.f32_window`` of each operand row of ``rows`` [k, OP_WIDTH] whose
    address has no register term; -1 for the others and for tiles that are no fp32 window."""
    base = rows[:, L.OP_BASE]
    ok = ((rows[:, L.OP_DTYPE] == _F32) & (rows[:, L.OP_DENSE] == 1)
          & (rows[:, L.OP_PCOLSTEP] == 0) & (rows[:, L.OP_PROWSTEP] >= 1)
          & (rows[:, L.OP_SPACE] != L.SPACE_HBM) & (rows[:, L.OP_SPACE] != L.SPACE_IMM)
          & (rows[:, L.OP_NREG] == 0) & (base % 4 == 0))
    return np.where(ok, base // 4, -1)


def in_place_safe(dst: np.ndarray, dst_column: np.ndarray, src: np.ndarray,
                  src_column: np.ndarray) -> np.ndarray:
    """bool [k]: ``memory.in_place_safe`` row by row (operand rows [k, OP_WIDTH] and their
    ``f32_windows``)."""
    dst_last = dst[:, L.OP_PSTART] + (dst[:, L.OP_PCOUNT] - 1) * dst[:, L.OP_PROWSTEP]
    src_last = src[:, L.OP_PSTART] + (src[:, L.OP_PCOUNT] - 1) * src[:, L.OP_PROWSTEP]
    same = ((dst_column == src_column) & (dst[:, L.OP_PSTART] == src[:, L.OP_PSTART])
            & (dst[:, L.OP_PROWSTEP] == src[:, L.OP_PROWSTEP])
            & (dst[:, L.OP_PCOUNT] == src[:, L.OP_PCOUNT])
            & (dst[:, L.OP_SIZE] == src[:, L.OP_SIZE]))
    return ((dst[:, L.OP_SPACE] != src[:, L.OP_SPACE])
            | (dst_column + dst[:, L.OP_SIZE] <= src_column)
            | (src_column + src[:, L.OP_SIZE] <= dst_column)
            | (dst_last < src[:, L.OP_PSTART]) | (src_last < dst[:, L.OP_PSTART]) | same)


def operand_rows(instrs: np.ndarray, ops: np.ndarray, slot: int) -> np.ndarray:
    """[k, OP_WIDTH]: the operand row of argument ``slot`` of each instruction; ops' first row
    where the argument is no operand (an immediate, absent: see ``is_operand``)."""
    rows = np.where(is_operand(instrs, slot), instrs[:, L.I_ARGS + 2 * slot + 1], 0)
    return ops[rows]


def is_operand(instrs: np.ndarray, slot: int) -> np.ndarray:
    """bool [k]: argument ``slot`` is an operand (a tile or an immediate's row), not a value."""
    return instrs[:, L.I_ARGS + 2 * slot] == L.TAG_OPERAND


def f32_tiles(tiles: list[np.ndarray], in_place: bool = True) -> np.ndarray:
    """bool per instruction: the operand rows ``tiles`` (the destination first) are sure to be
    fp32 windows of one shape (and, ``in_place``, the destination may be written over each
    source element by element: ``memory.in_place_safe``)."""
    dst = tiles[0]
    dst_col = f32_windows(dst)
    sure = dst_col >= 0
    for src in tiles[1:]:
        col = f32_windows(src)
        sure &= ((col >= 0) & (src[:, L.OP_PCOUNT] == dst[:, L.OP_PCOUNT])
                 & (src[:, L.OP_SIZE] == dst[:, L.OP_SIZE]))
        if in_place:
            sure &= in_place_safe(dst, dst_col, src, col)
    return sure


def f32_scalars(instrs: np.ndarray, ops: np.ndarray, slots: tuple[int, ...]) -> np.ndarray:
    """bool per instruction: each scalar argument of ``slots`` is an immediate or sure to be an
    fp32 column window (``memory.f32_column``)."""
    sure = np.ones(len(instrs), dtype=bool)
    for slot in slots:
        sure &= ~is_operand(instrs, slot) | (f32_windows(operand_rows(instrs, ops, slot)) >= 0)
    return sure
