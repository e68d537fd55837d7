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

    def __add__(self, other) -> IndexTile:
        return self._with(self.offset + _int(other, "+"), self.scale)

    __radd__ = __add__

    def __sub__(self, other) -> IndexTile:
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
        return Mask([(self, operator.lt, _int(other, "<"))])

    def __le__(self, other) -> Mask:
        return Mask([(self, operator.le, _int(other, "<="))])

    def __gt__(self, other) -> Mask:
        return Mask([(self, operator.gt, _int(other, ">"))])

    def __ge__(self, other) -> Mask:
        return Mask([(self, operator.ge, _int(other, ">="))])

    def slice(self) -> slice:
        """The indices it takes, as a slice (its scale must be positive)."""
        if self.scale <= 0:
            fail("an index tile indexes a tensor with a positive step (k * a + b, a > 0)",
                 unsupported=True)
        return slice(self.offset, self.offset + self.scale * (self.size - 1) + 1, self.scale)


class Mask:
    """A conjunction of bounds ``tile op bound`` on index tiles; ``&`` joins two."""

    __slots__ = ("bounds",)

    def __init__(self, bounds: list) -> None:
        self.bounds = bounds

    def __and__(self, other) -> Mask:
        if not isinstance(other, Mask):
            fail("a mask joins other masks with & (comparisons of nl.arange index tiles)",
                 unsupported=True)
        return Mask(self.bounds + other.bounds)

    def counts(self, ndim: int) -> list[tuple[int, int]]:
        """Per grid axis, the range [first, end) of coordinates where every bound holds."""
        ranges = [(0, None)] * ndim
        for tile, op, bound in self.bounds:
            if tile.ndim != ndim:
                fail(f"the mask is over a {tile.ndim}-dim grid but the access over a "
                     f"{ndim}-dim one", unsupported=True)
            points = [k for k in range(tile.size) if op(tile.offset + tile.scale * k, bound)]
            first, end = (points[0], points[-1] + 1) if points else (0, 0)
            if points and end - first != len(points):
                fail("a mask must keep one run of consecutive points per axis", unsupported=True)
            lo, hi = ranges[tile.axis]
            hi = end if hi is None else min(hi, end)
            ranges[tile.axis] = (max(lo, first), hi)
        return ranges


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
