"""NKI 0.1's index tiles: ``nl.arange`` and ``nl.mgrid`` index a tensor by affine expressions of
a grid's coordinates (``a[i * 128 + i_p, i_f]``), and ``mask=`` restricts an access to the grid
points where a comparison holds (``mask=(i * 128 + i_p < n)``).

An index tile here is ``offset + scale * k`` for the coordinate ``k`` (0 <= k < size) of one
axis of an ``ndim``-dim grid (shape: ``size`` on that axis, 1 elsewhere); + - * with Python ints
keep it affine. Indexing a tensor with index tiles on the grid's axes in order is a strided
slice per dim (``to_key``): the view's dims are the grid's axes. A mask is a conjunction of
bounds on affine expressions of the coordinates; on a load or store it is the number of grid
points along each axis where it holds (``Mask.counts``): the view is cut to them (the tails of
ragged tilings, 0.1's usual mask). Anything else (an index tile on the wrong axis, a mask that
is not a bound on the coordinates) is a located NkiUnsupported saying what to write."""

from __future__ import annotations

import operator

report = None
"""``_trace.fail``, set by ``_trace`` when it imports this module (importing it from here would
be a cycle): raises a located error at the kernel's line."""


def fail(message: str, *notes: str, unsupported: bool = False):
    report(message, *notes, unsupported=unsupported)


class IndexTile:
    """``offset + scale * k`` along ``axis`` of an ``ndim``-dim grid of ``size`` points."""

    __slots__ = ("axis", "ndim", "offset", "scale", "size")

    def __init__(self, size: int, axis: int = 0, ndim: int = 1, offset: int = 0,
                 scale: int = 1) -> None:
        self.size, self.axis, self.ndim, self.offset, self.scale = size, axis, ndim, offset, scale

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.size if a == self.axis else 1 for a in range(self.ndim))

    def _with(self, offset: int, scale: int) -> IndexTile:
        return IndexTile(self.size, self.axis, self.ndim, offset, scale)

    def __getitem__(self, key) -> IndexTile:
        """``arange(n)[:, None]`` / ``[None, :]``: a 1-dim index as an axis of a 2-dim grid."""
        key = key if type(key) is tuple else (key,)
        if self.ndim != 1 or key.count(None) != len(key) - 1 or any(
                k is not None and k != slice(None) for k in key):
            fail("an index tile takes [:, None] or [None, :] (a new axis around its one axis)",
                 unsupported=True)
        axis = next(i for i, k in enumerate(key) if k is not None)
        return IndexTile(self.size, axis, len(key), self.offset, self.scale)

    def __add__(self, other) -> IndexTile | IndexExpr:
        if isinstance(other, (IndexTile, IndexExpr)):
            return IndexExpr.of(self) + other
        return self._with(self.offset + _int(other, "+"), self.scale)

    __radd__ = __add__

    def __sub__(self, other) -> IndexTile | IndexExpr:
        if isinstance(other, (IndexTile, IndexExpr)):
            return IndexExpr.of(self) - other
        return self._with(self.offset - _int(other, "-"), self.scale)

    def __rsub__(self, other) -> IndexTile:
        return self._with(_int(other, "-") - self.offset, -self.scale)

    def __mul__(self, other) -> IndexTile:
        k = _int(other, "*")
        return self._with(self.offset * k, self.scale * k)

    __rmul__ = __mul__

    def __neg__(self) -> IndexTile:
        return self._with(-self.offset, -self.scale)

    def __lt__(self, other) -> Mask:
        return IndexExpr.of(self) < other

    def __le__(self, other) -> Mask:
        return IndexExpr.of(self) <= other

    def __gt__(self, other) -> Mask:
        return IndexExpr.of(self) > other

    def __ge__(self, other) -> Mask:
        return IndexExpr.of(self) >= other

    def slice(self) -> slice:
        """The indices it takes, as a slice (its scale must be positive)."""
        if self.scale <= 0:
            fail("an index tile indexes a tensor with a positive step (k * a + b, a > 0)",
                 unsupported=True)
        return slice(self.offset, self.offset + self.scale * (self.size - 1) + 1, self.scale)


class IndexExpr:
    """``offset + sum(scales[a] * k_a)`` over the axes of an ``ndim``-dim grid: index tiles of
    several axes combined (``j * 4096 + 512 * ix + iy``). It bounds masks; a tensor is
    indexed by single index tiles."""

    __slots__ = ("ndim", "offset", "scales")

    def __init__(self, ndim: int, offset: int, scales: tuple[int, ...]) -> None:
        self.ndim, self.offset, self.scales = ndim, offset, scales

    @classmethod
    def of(cls, tile: IndexTile) -> IndexExpr:
        return cls(tile.ndim, tile.offset, tuple(tile.scale if a == tile.axis else 0
                                                 for a in range(tile.ndim)))

    def __add__(self, other) -> IndexExpr:
        if isinstance(other, IndexTile):
            other = IndexExpr.of(other)
        if isinstance(other, IndexExpr):
            if other.ndim != self.ndim:
                fail(f"index tiles of a {self.ndim}-dim and a {other.ndim}-dim grid do not "
                     f"combine", unsupported=True)
            return IndexExpr(self.ndim, self.offset + other.offset,
                             tuple(map(operator.add, self.scales, other.scales)))
        return IndexExpr(self.ndim, self.offset + _int(other, "+"), self.scales)

    __radd__ = __add__

    def __mul__(self, other) -> IndexExpr:
        k = _int(other, "*")
        return IndexExpr(self.ndim, self.offset * k, tuple(s * k for s in self.scales))

    __rmul__ = __mul__

    def __neg__(self) -> IndexExpr:
        return self * -1

    def __sub__(self, other) -> IndexExpr:
        return self + (-other if isinstance(other, (IndexTile, IndexExpr)) else
                       -_int(other, "-"))

    def __rsub__(self, other) -> IndexExpr:
        return -self + other

    def _bound(self, op, other, word: str) -> Mask:
        return Mask([(self, op, _int(other, word))])

    def __lt__(self, other) -> Mask:
        return self._bound(operator.lt, other, "<")

    def __le__(self, other) -> Mask:
        return self._bound(operator.le, other, "<=")

    def __gt__(self, other) -> Mask:
        return self._bound(operator.gt, other, ">")

    def __ge__(self, other) -> Mask:
        return self._bound(operator.ge, other, ">=")


class Mask:
    """A conjunction of bounds ``expr op bound`` on index expressions; ``&`` joins two."""

    __slots__ = ("bounds",)

    def __init__(self, bounds: list) -> None:
        self.bounds = bounds

    def __and__(self, other) -> Mask:
        if not isinstance(other, Mask):
            fail("a mask joins other masks with & (comparisons of nl.arange index tiles)",
                 unsupported=True)
        return Mask(self.bounds + other.bounds)

    def boxes(self, shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
        """The grid points of an access of ``shape`` where every bound holds, as boxes (one
        per run of rows that keep the same columns): an access moves each box."""
        ndim = len(shape)
        for expr, _, _ in self.bounds:
            if expr.ndim != ndim:
                fail(f"the mask is over a {expr.ndim}-dim grid but the access over a "
                     f"{ndim}-dim one", unsupported=True)
        if ndim > 2 and any(sum(1 for s in e.scales if s) > 1 for e, _, _ in self.bounds):
            fail("a mask over more than 2 axes bounds one axis per comparison",
                 unsupported=True)
        if ndim > 2:   # each bound is on one axis: one box
            ranges = [[0, n] for n in shape]
            for expr, op, bound in self.bounds:
                axis = next((a for a, s in enumerate(expr.scales) if s), 0)
                lo, hi = _interval(expr.scales[axis], bound - expr.offset, op)
                ranges[axis] = [max(ranges[axis][0], lo), min(ranges[axis][1], hi)]
            if any(lo >= hi for lo, hi in ranges):
                return []
            return [tuple(slice(lo, hi) for lo, hi in ranges)]
        rows, columns = (shape[0], 1) if ndim == 1 else shape
        boxes: list = []
        for r in range(rows):
            lo, hi = 0, columns
            for expr, op, bound in self.bounds:
                base = expr.offset + expr.scales[0] * r
                if ndim == 1:   # (the one axis is the row's: a point holds or not)
                    keep = op(base, bound)
                    lo, hi = (lo, hi) if keep else (0, 0)
                    continue
                a, b = _interval(expr.scales[1], bound - base, op)
                lo, hi = max(lo, a), min(hi, b)
            if lo >= hi:
                continue
            if boxes and boxes[-1][1] == (lo, hi) and boxes[-1][0][1] == r:
                boxes[-1][0][1] = r + 1
            else:
                boxes.append(([r, r + 1], (lo, hi)))
        if ndim == 1:
            return [(slice(*rows_),) for rows_, _ in boxes]
        return [(slice(*rows_), slice(lo, hi)) for rows_, (lo, hi) in boxes]


def _interval(scale: int, rhs: int, op) -> tuple[float, float]:
    """The integers c with ``scale * c op rhs``, as [lo, hi) (infinite ends as +-inf)."""
    inf = float("inf")
    if scale == 0:
        return (-inf, inf) if op(0, rhs) else (0, 0)
    if scale < 0:   # -|s| c op rhs  <=>  |s| c op' -rhs
        scale, rhs = -scale, -rhs
        op = {operator.lt: operator.gt, operator.le: operator.ge,
              operator.gt: operator.lt, operator.ge: operator.le}[op]
    if op is operator.lt:
        return -inf, (rhs - 1) // scale + 1
    if op is operator.le:
        return -inf, rhs // scale + 1
    if op is operator.gt:
        return rhs // scale + 1, inf
    return -(-rhs // scale), inf


def _int(value, op: str) -> int:
    import numpy as np

    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    fail(f"an index tile combines with Python ints by {op} (loops unroll: their variables are "
         f"ints), not {type(value).__name__}", unsupported=True)


def arange(*args) -> IndexTile:
    """``nl.arange(n)`` / ``nl.arange(start, stop[, step])``: a 1-dim index tile."""
    r = range(*[_int(a, "arange") for a in args])
    if len(r) == 0 or r.step <= 0:
        fail(f"nl.arange{args}: an index tile needs at least one point and a positive step")
    return IndexTile(len(r), 0, 1, r.start, r.step)


class Grid(tuple):
    """``nl.mgrid[0:P, 0:F]``: one index tile per axis; also ``.p`` (the first) and ``.x``
    (the last), as NKI 0.1 names them."""

    @property
    def p(self) -> IndexTile:
        return self[0]

    @property
    def x(self) -> IndexTile:
        return self[-1]


class _MGrid:
    def __getitem__(self, key) -> Grid:
        key = key if type(key) is tuple else (key,)
        tiles = []
        for axis, k in enumerate(key):
            if not isinstance(k, slice):
                fail("nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]", unsupported=True)
            r = range(_int(k.start or 0, "mgrid"), _int(k.stop, "mgrid"),
                      _int(k.step or 1, "mgrid"))
            if len(r) == 0 or r.step <= 0:
                fail(f"nl.mgrid: {k.start}:{k.stop} holds no point")
            tiles.append(IndexTile(len(r), axis, len(key), r.start, r.step))
        return Grid(tiles)


mgrid = _MGrid()


def has_index_tiles(key) -> bool:
    return isinstance(key, IndexTile) or type(key) is tuple and any(
        isinstance(k, IndexTile) for k in key)


class MaskedView:
    """An access by index tiles that reaches outside its tensor: legal only under a mask that
    keeps the points inside (0.1's ragged tails), so only ``nl.load`` and ``nl.store`` take it.
    ``view``: the part inside (None: none is), whose dims are the grid's axes cut to
    ``inside`` ((first, end) grid coordinates per axis); ``grid``: the grid's shape."""

    __slots__ = ("grid", "inside", "problem", "view")

    def __init__(self, view, inside: list, grid: tuple, problem: str) -> None:
        self.view, self.inside, self.grid, self.problem = view, inside, grid, problem

    @property
    def shape(self) -> tuple[int, ...]:
        return self.grid

    @property
    def dtype(self):
        if self.view is None:
            self.fail()
        return self.view.dtype

    def fail(self):
        fail(f"{self.problem}; only nl.load and nl.store take an access that leaves its "
             f"tensor, with a mask= that keeps the points inside it")

    def part(self, region: tuple[slice, ...]):
        """The view of the grid points ``region`` (inside the tensor, else an error)."""
        cut = []
        for r, (first, end) in zip(region, self.inside):
            if r.start < first or r.stop > end:
                fail(f"{self.problem}, and the mask keeps points outside it (grid coordinates "
                     f"{r.start}..{r.stop - 1}; inside: {first}..{end - 1})")
            cut.append(slice(r.start - first, r.stop - first))
        return self.view[tuple(cut)]


def index(tensor, key):
    """``tensor[key]`` for a key of index tiles and ints (NKI 0.1): the tiles must be on their
    grid's axes in order (the view's dims are the grid's axes), each a strided slice. An access
    that leaves the tensor is a ``MaskedView`` (a load or store with a mask takes it)."""
    key = key if type(key) is tuple else (key,)
    shape = tensor.shape
    if len(key) != len(shape):
        fail(f"an access by index tiles indexes every dim: {len(shape)} for shape "
             f"{list(shape)}, not {len(key)}", unsupported=True)
    axis = 0
    out, inside, grid, problem = [], [], [], None
    for dim, (k, size) in enumerate(zip(key, shape)):
        if not isinstance(k, IndexTile):
            out.append(k)
            continue
        if k.axis != axis:
            fail(f"index tile for axis {k.axis} of its grid where axis {axis} comes: index "
                 f"the tensor's dims with the grid's axes in order (a[i_p, i_f])",
                 unsupported=True)
        axis += 1
        whole = k.slice()
        points = [c for c in range(k.size) if 0 <= k.offset + k.scale * c < size]
        first, end = (points[0], points[-1] + 1) if points else (0, 0)
        grid.append(k.size)
        inside.append((first, end))
        if end - first != k.size and problem is None:
            last = whole.stop - 1
            problem = (f"index {whole.start}..{last} is out of bounds for dim {dim} of size "
                       f"{size}")
        out.append(slice(k.offset + k.scale * first, k.offset + k.scale * (end - 1) + 1,
                         k.scale) if end > first else None)
    if problem is None:
        return tensor[tuple(out)]
    if any(s is None for s in out):
        return MaskedView(None, inside, tuple(grid), problem)
    return MaskedView(tensor[tuple(out)], inside, tuple(grid), problem)
