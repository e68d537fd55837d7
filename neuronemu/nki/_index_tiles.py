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

import numpy as np

report = None
"""``_trace.fail``, set by ``_trace`` when it imports this module (importing it from here would
be a cycle): raises a located error at the kernel's line."""


tile_type = None
"""``_trace.NkiTensor``, set by ``_trace``: a key holding one is a gather by its values."""


def fail(message: str, *notes: str, unsupported: bool = False):
    report(message, *notes, unsupported=unsupported)


class IndexTile:
    """``offset + scale * k`` along ``axis`` of an ``ndim``-dim grid of ``size`` points."""

    __slots__ = ("axis", "dense", "ndim", "offset", "scale", "size")

    def __init__(self, size: int, axis: int = 0, ndim: int = 1, offset: int = 0,
                 scale: int = 1, dense: tuple[int, ...] | None = None) -> None:
        self.size, self.axis, self.ndim, self.offset, self.scale = size, axis, ndim, offset, scale
        self.dense = dense   # nl.mgrid's: the whole grid's shape (numpy's mgrid is dense too)

    @property
    def shape(self) -> tuple[int, ...]:
        if self.dense is not None:
            return self.dense
        return tuple(self.size if a == self.axis else 1 for a in range(self.ndim))

    def _with(self, offset: int, scale: int) -> IndexTile:
        return IndexTile(self.size, self.axis, self.ndim, offset, scale, self.dense)

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

    __slots__ = ("ndim", "offset", "scales", "sizes")

    def __init__(self, ndim: int, offset: int, scales: tuple[int, ...],
                 sizes: tuple[int, ...] | None = None) -> None:
        self.ndim, self.offset, self.scales = ndim, offset, scales
        self.sizes = sizes or (1,) * ndim   # the grid's points per axis (1: not seen yet)

    @classmethod
    def of(cls, tile: IndexTile) -> IndexExpr:
        return cls(tile.ndim, tile.offset, tuple(tile.scale if a == tile.axis else 0
                                                 for a in range(tile.ndim)), tile.shape)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.sizes

    def _scaled(self, offset: int, scales: tuple[int, ...]) -> IndexExpr:
        return IndexExpr(self.ndim, offset, scales, self.sizes)

    def __add__(self, other) -> IndexExpr:
        if isinstance(other, IndexTile):
            other = IndexExpr.of(other)
        if isinstance(other, IndexExpr):
            if other.ndim != self.ndim:
                fail(f"index tiles of a {self.ndim}-dim and a {other.ndim}-dim grid do not "
                     f"combine", unsupported=True)
            return IndexExpr(self.ndim, self.offset + other.offset,
                             tuple(map(operator.add, self.scales, other.scales)),
                             tuple(map(max, self.sizes, other.sizes)))
        return self._scaled(self.offset + _int(other, "+"), self.scales)

    __radd__ = __add__

    def __mul__(self, other) -> IndexExpr:
        k = _int(other, "*")
        return self._scaled(self.offset * k, tuple(s * k for s in self.scales))

    __rmul__ = __mul__

    def __neg__(self) -> IndexExpr:
        return self * -1

    def __sub__(self, other) -> IndexExpr:
        return self + (-other if isinstance(other, (IndexTile, IndexExpr)) else
                       -_int(other, "-"))

    def __rsub__(self, other) -> IndexExpr:
        return -self + other

    def _bound(self, op, other, word: str) -> Mask:
        if isinstance(other, (IndexTile, IndexExpr)):   # (i_q >= i_k + 3: i_q - i_k - 3 >= 0)
            return Mask([(self - other, op, 0)])
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

    @classmethod
    def nothing(cls, ndim: int) -> Mask:
        """The mask that keeps no point (``mask=False``)."""
        return cls([(IndexExpr(ndim, 0, (0,) * ndim), operator.lt, 0)])

    def __and__(self, other) -> Mask:
        if isinstance(other, (bool, np.bool_)):   # (a condition on loop variables only)
            return self if other else Mask.nothing(self.bounds[0][0].ndim)
        if not isinstance(other, Mask):
            fail("a mask joins other masks with & (comparisons of nl.arange index tiles)",
                 unsupported=True)
        return Mask(self.bounds + other.bounds)

    __rand__ = __and__

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


def mask_of(mask, ndim: int) -> Mask | None:
    """What a ``mask=`` value keeps of an ``ndim``-dim access: None for all of it (no mask,
    ``True``), a ``Mask`` (comparisons of index tiles; ``False``, a condition on loop variables
    that fails: nothing); anything else is a located error."""
    if mask is None or isinstance(mask, (bool, np.bool_)) and mask:
        return None
    if isinstance(mask, (bool, np.bool_)):
        return Mask.nothing(ndim)
    if not isinstance(mask, Mask):
        fail(f"mask= takes comparisons of nl.arange / nl.mgrid index tiles (joined with &), "
             f"not {type(mask).__name__}", unsupported=True)
    return mask


def mask_boxes(mask, shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The parts of a [shape] access a ``mask=`` value keeps, as boxes of slices."""
    kept = mask_of(mask, len(shape))
    return [tuple(slice(0, n) for n in shape)] if kept is None else kept.boxes(tuple(shape))


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
    """``nl.mgrid[0:P, 0:F]``: one index tile per axis; also ``.p``, ``.x``, ``.y``, ``.z``
    (axes 0 to 3), as NKI 0.1 names them."""

    def _axis(self, axis: int, name: str) -> IndexTile:
        if axis >= len(self):
            fail(f"a {len(self)}-axis grid has no .{name} (axis {axis})")
        return self[axis]

    @property
    def p(self) -> IndexTile:
        return self[0]

    @property
    def x(self) -> IndexTile:
        return self._axis(1, "x")

    @property
    def y(self) -> IndexTile:
        return self._axis(2, "y")

    @property
    def z(self) -> IndexTile:
        return self._axis(3, "z")


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
        dense = tuple(t.size for t in tiles)
        for t in tiles:
            t.dense = dense
        return Grid(tiles)


mgrid = _MGrid()


def has_index_tiles(key) -> bool:
    return isinstance(key, (IndexTile, IndexExpr)) or type(key) is tuple and any(
        isinstance(k, (IndexTile, IndexExpr, tile_type, Grid)) for k in key)


class MaskedView:
    """An access by index tiles that reaches outside its tensor: legal only under a mask that
    keeps the points inside (0.1's ragged tails), so only ``nl.load`` and ``nl.store`` take it.
    ``view``: the part inside (None: none is), whose dims are the grid's axes cut to
    ``inside`` ((first, end) grid coordinates per axis); ``grid``: the grid's shape."""

    __slots__ = ("dtype", "grid", "inside", "problem", "view")

    def __init__(self, view, inside: list, grid: tuple, problem: str, dtype) -> None:
        self.view, self.inside, self.grid, self.problem = view, inside, grid, problem
        self.dtype = dtype   # (the tensor's)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.grid

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


def as_tiles(key: tuple, shape: tuple[int, ...]) -> tuple:
    """A key of ints and slices (of ints, positive steps) as ints and index tiles of a grid
    with an axis per slice: ``t[256:384, 0:4]`` is ``t[256 + i_p, i_f]`` with
    ``i_p, i_f = nl.mgrid[0:128, 0:4]`` (NKI 0.1 takes a slice past the end of a tensor under a
    mask, as it takes index tiles)."""
    key = tuple(key) + (slice(None),) * (len(shape) - len(key))
    cuts = [k for k in key if isinstance(k, slice)]
    out, axis = [], 0
    for k, size in zip(key, shape):
        if not isinstance(k, slice):
            out.append(k)
            continue
        start = 0 if k.start is None else k.start
        stop = size if k.stop is None else k.stop
        if (k.step or 1) <= 0 or start < 0 or stop < 0:
            fail(f"slice {k.start}:{k.stop} is out of bounds for a dim of size {size}")
        r = range(start, stop, k.step or 1)
        out.append(IndexTile(len(r), axis, len(cuts), r.start, r.step))
        axis += 1
    return tuple(out)


def index(tensor, key):
    """``tensor[key]`` for a key of index tiles and ints (NKI 0.1): the tiles must be on their
    grid's axes in order (the view's dims are the grid's axes), each a strided slice. An access
    that leaves the tensor is a ``MaskedView`` (a load or store with a mask takes it)."""
    key = key if type(key) is tuple else (key,)
    if len(key) == 1 and isinstance(key[0], Grid):   # (t[nl.mgrid[0:128, 0:512]])
        key = tuple(key[0])
    shape = tensor.shape
    if any(isinstance(k, tile_type) for k in key):
        return _gather(tensor, key)
    if len(key) != len(shape):
        fail(f"an access by index tiles indexes every dim: {len(shape)} for shape "
             f"{list(shape)}, not {len(key)}", unsupported=True)
    tiles = [k for k in key if isinstance(k, (IndexTile, IndexExpr))]
    ndim = tiles[0].ndim
    taken = {k.axis for k in tiles if isinstance(k, IndexTile)} | {
        a for k in tiles if isinstance(k, IndexExpr) for a, sc in enumerate(k.scales) if sc}
    missing = [a for a in range(ndim) if a not in taken]
    ints = [d for d, k in enumerate(key) if type(k) is int or type(k).__module__ == "numpy"]
    if missing and tensor.kind != "hbm" and len(ints) >= len(missing):
        # grid axes no index tile takes (t[i_p, 0] with i_p = arange(P)[:, None]): the view
        # still has them, of size 1, from the last ints of the key (a [P, 1] column)
        key = list(key)
        for axis, dim in zip(missing, ints[-len(missing):]):
            k = int(key[dim])
            key[dim] = IndexTile(1, axis, ndim, k + shape[dim] if k < 0 else k, 1)
        key = tuple(key)
        tiles = [k for k in key if isinstance(k, (IndexTile, IndexExpr))]
    if any(isinstance(k, IndexExpr) for k in tiles) or [k.axis for k in tiles] != list(
            range(len(tiles))):
        return _affine(tensor, key)
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
        return MaskedView(None, inside, tuple(grid), problem, tensor.dtype)
    return MaskedView(tensor[tuple(out)], inside, tuple(grid), problem, tensor.dtype)


def _affine(tensor, key):
    """``tensor[key]`` where the key's index expressions are any affine functions of the
    grid's coordinates (``t[i_p, 2 * i_y + i_z]``, ``out[i_f, i_p]``): an access pattern whose
    dims are the grid's axes, each stepping by the sum of its coefficients times the strides
    of the dims it indexes. On chip, the grid's first axis indexes the partition dim, and only
    it does. Every point must lie inside the tensor."""
    exprs = [IndexExpr.of(k) if isinstance(k, IndexTile) else k for k in key
             if isinstance(k, (IndexTile, IndexExpr))]
    ndim = exprs[0].ndim
    if any(e.ndim != ndim for e in exprs):
        fail("the index tiles of one access come from one grid (same number of axes)",
             unsupported=True)
    sizes = tuple(max(e.sizes[a] for e in exprs) for a in range(ndim))
    pairs, offset, dtype = tensor._pattern()
    shape = tensor.shape
    if len(pairs) != len(shape):
        fail("an access by index expressions takes a tensor or a plain slice of one",
             unsupported=True)
    steps = [0] * ndim
    for dim, (k, (stride, count)) in enumerate(zip(key, pairs)):
        if isinstance(k, (int, np.integer)):
            if not -count <= k < count:
                fail(f"index {k} is out of bounds for dim {dim} of size {count}")
            offset += (int(k) % count) * stride
            continue
        if not isinstance(k, (IndexTile, IndexExpr)):
            fail(f"an access by index tiles takes index tiles and ints in every dim, not "
                 f"{type(k).__name__} (dim {dim})", unsupported=True)
        e = IndexExpr.of(k) if isinstance(k, IndexTile) else k
        low = e.offset + sum(min(0, s * (n - 1)) for s, n in zip(e.scales, sizes))
        high = e.offset + sum(max(0, s * (n - 1)) for s, n in zip(e.scales, sizes))
        if low < 0 or high >= count:
            fail(f"index {low}..{high} is out of bounds for dim {dim} of size {count}",
                 "an access that leaves its tensor is run for index tiles each on its own "
                 "axis, in the grid's order (with a mask on nl.load / nl.store)",
                 unsupported=True)
        offset += e.offset * stride
        for a, s in enumerate(e.scales):
            steps[a] += s * stride
    if any(st < 0 for st in steps):
        fail("an access by index expressions steps forward along every axis of its grid",
             unsupported=True)
    if tensor.kind != "hbm":
        first = key[0]
        e = IndexExpr.of(first) if isinstance(first, IndexTile) else first
        others = [IndexExpr.of(k) if isinstance(k, IndexTile) else k for k in key[1:]
                  if isinstance(k, (IndexTile, IndexExpr))]
        if (not isinstance(e, IndexExpr) or any(e.scales[1:])
                or any(o.scales[0] for o in others)):
            fail("on chip, the grid's first axis indexes the partition dim and only it "
                 "(t[i_p, ...]); move data between partitions with nisa.nc_transpose or a DMA",
                 unsupported=True)
    return tensor._with_pattern(list(zip(steps, sizes)), offset, dtype)


class GatherView:
    """``t[b, idx, i_f]`` with ``idx`` a [P, 1] tile of row numbers (0.1's indirect access):
    partition p reads or writes row ``idx[p]`` of ``sub`` (``t`` with the dims before the
    gathered one fixed), the columns the index tiles after it take. ``nl.load`` / ``nl.store``
    (with a mask: the boxes it keeps, each a DMA gather or scatter) take it."""

    __slots__ = ("free", "index", "offset", "sub")

    def __init__(self, sub, index, free: list, offset: int) -> None:
        self.sub, self.index, self.free, self.offset = sub, index, free, offset

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.index.shape[0], *[c for _, c in self.free])

    @property
    def dtype(self):
        return self.sub.dtype

    def part(self, region: tuple[slice, ...]):
        """The gather of the grid points ``region`` (rows of the index, columns of the rest)."""
        rows, cols = region[0], region[1:]
        offset, free = self.offset, []
        for (step, count), r in zip(self.free, cols):
            offset += r.start * step
            free.append([step, r.stop - r.start])
        row_step = self.sub._pattern()[0][0][0]
        index = self.index[rows.start:rows.stop, :]
        return self.sub.ap([[row_step, rows.stop - rows.start], *free], offset=offset,
                           vector_offset=index, indirect_dim=0)

    def whole(self):
        return self.part(tuple(slice(0, n) for n in self.shape))

    def fail(self):
        fail("an access by a tile of indices is a DMA gather or scatter: only nl.load and "
             "nl.store take it")


def _gather(tensor, key):
    """``tensor[ints..., idx, index tiles or ints...]`` of an HBM tensor, ``idx`` a [P, 1]
    tile of row numbers taking the grid's first axis: a ``GatherView``."""
    at = next(d for d, k in enumerate(key) if isinstance(k, tile_type))
    index = key[at]
    if tensor.kind != "hbm" or len(key) != len(tensor.shape):
        fail("indexing by a tile of indices (a gather) takes an HBM tensor and an index for "
             "each of its dims", unsupported=True)
    if len(index.shape) != 2 or index.shape[1] != 1 or index.kind == "hbm":
        fail(f"the tile of indices of a gather is an on-chip [P, 1] tile, not "
             f"{list(index.shape)} in {index.kind.upper()}", unsupported=True)
    if any(not isinstance(k, (int, np.integer)) for k in key[:at]):
        fail("the dims before a gathered one take ints (t[b, idx, i_f])", unsupported=True)
    sub = tensor[tuple(int(k) for k in key[:at])] if at else tensor
    pairs = sub._pattern()[0]
    free, offset, axis = [], 0, 1
    for (step, count), k in zip(pairs[1:], key[at + 1:]):
        if isinstance(k, (int, np.integer)):
            offset += int(k) * step
            continue
        if not isinstance(k, IndexTile) or k.axis != axis or k.scale <= 0 or (
                k.offset < 0 or k.offset + k.scale * (k.size - 1) >= count):
            fail("after a gathered dim, each dim takes an int or an index tile of the grid's "
                 "next axis, inside the tensor (t[b, idx, i_f])", unsupported=True)
        axis += 1
        offset += k.offset * step
        free.append((step * k.scale, k.size))
    return GatherView(sub, index, free, offset)
