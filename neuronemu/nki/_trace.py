"""The tracer behind ``neuronemu.nki``: proxy tensors, the call-site allocator, the emitter.

A kernel runs as ordinary Python with ``NkiTensor`` proxies for its arguments. Every
``nki.isa`` call (and every ``nki.language`` wrapper, which expands to ``nki.isa`` calls)
appends one neuronemu instruction, as text, to the current ``Tracer``, together with the user's
Python frame that made the call. Python control flow runs natively: ``range``/``affine_range``
loops unroll, ``if`` on Python values is resolved, exactly as the NKI compiler's
specialisation stage does. At the end the tracer writes an assembly file whose every
instruction carries a ``# kernel.py:LINE`` comment, and keeps the map generated line -> Python
frame that ``map_error`` uses to point assembler and run-time diagnostics at the kernel's line.

On-chip allocation is by live range, after the trace (neuronemu/nki/_alloc.py): a tile's bytes
are free once the instruction that last names it has been issued, whatever Python objects still
refer to it; a tile that does not fit is an error at its allocating line listing the tiles live
there.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import math
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np

from neuronemu.asm.direct import Op
from neuronemu.errors import NeuronemuError
from neuronemu.nki import _dynamic, _index_tiles
from neuronemu.nki._alloc import Live, Overflow, Placement, place
from neuronemu.nki._dynamic import RegExpr
from neuronemu.nki.versions import describe_missing
from neuronemu.source import Location, SourceFile

NKI_VERSION = "0.6.0"
"""The NKI dialect mirrored: ``import nki`` (NKI 0.2+ "beta 2" API) as of Neuron SDK 2.32."""

HOOKS: dict = {}
"""``nl``, ``nisa`` and ``versions`` (nki/_versions.py) modules, registered by them on import
(tensor operators and placement call them; an import from here would be a cycle)."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
MAX_TRACED = 1_000_000
"""Instructions one traced kernel may make. They reach the assembler as values, not text: about
2 KB each at its peak (600,000 tensor copies: 1.3 GB), so this is 5x the lines an unrolled
assembly file may have (neuronemu.asm.macros.MAX_LINES). Big 0.1 kernels unroll past 200,000
(nki-samples' flash attention backward at seqlen 8192 with sinks: 211,456). An endless Python
loop in a kernel stops here with a located error instead of growing the tracer's list without
end."""

_ALIGN = 4


class NkiError(NeuronemuError):
    """A kernel uses the API wrongly or outside the supported subset; located at the kernel's
    Python line (``location``), with the generated assembly line in a note when one exists."""

    exit_code = 3


class NkiUnsupported(NkiError, NotImplementedError):
    """An NKI call or feature this front end does not implement (yet)."""


# ------------------------------------------------------------------------------------------
# where in the user's code


@dataclass(frozen=True)
class Site:
    """One Python frame of the kernel (the innermost frame outside this package)."""

    filename: str
    line: int
    function: str
    column: int = 1
    end_column: int | None = None

    def short(self) -> str:
        short = self.__dict__.get("_short")   # (asked for every generated line)
        if short is None:
            short = self.__dict__["_short"] = f"{os.path.basename(self.filename)}:{self.line}"
        return short

    def location(self) -> Location:
        text = "".join(linecache.getlines(self.filename))
        return Location(SourceFile(self.filename, text), self.line, self.column, self.end_column)


_OURS: dict[str, bool] = {}        # code filename -> is it this package's
_POSITIONS: dict = {}               # code object -> its co_positions() as a list
_SITES: dict = {}                   # (code, instruction offset) -> Site


def user_site() -> Site:
    """The innermost frame that is not neuronemu.nki's own code: the kernel line being traced.
    (Cached per code object and instruction offset: tracing asks this for every instruction.)"""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        ours = _OURS.get(name)
        if ours is None:
            folder = os.path.dirname(os.path.abspath(name))
            # (the package and its 0.1 dialect's subpackage, neuronemu/nki/neuronxcc)
            ours = _OURS[name] = folder == _PACKAGE_DIR or os.path.dirname(
                folder) == _PACKAGE_DIR
        if not ours:
            break
        frame = frame.f_back
    if frame is None:   # called from inside the package only (cannot happen from a kernel)
        return Site("<unknown>", 1, "<unknown>")
    code = frame.f_code
    key = (code, frame.f_lasti)   # (the instruction offset fixes the line)
    site = _SITES.get(key)
    if site is not None:
        return site
    line, column, end_column = frame.f_lineno, 1, None
    try:   # exact columns of the call expression (Python 3.11+)
        positions = _POSITIONS.get(code)
        if positions is None:
            positions = _POSITIONS[code] = list(code.co_positions())
        pos = positions[frame.f_lasti // 2]
        if pos[0] is not None and pos[0] == pos[1] and pos[2] is not None:
            line, column, end_column = pos[0], pos[2] + 1, pos[3] + 1
        elif pos[0] is not None and pos[2] is not None:   # a call over several lines: its
            line, column = pos[0], pos[2] + 1             # first line, from its own column
    except (AttributeError, IndexError, TypeError):
        pass
    if len(_SITES) > 200_000:   # many kernels traced in one process: start afresh
        _SITES.clear()
        _POSITIONS.clear()
    site = _SITES[key] = Site(code.co_filename, line, code.co_name, column, end_column)
    return site


def fail(message: str, *notes: str, unsupported: bool = False):
    """Raise an NkiError located at the kernel's current line."""
    cls = NkiUnsupported if unsupported else NkiError
    raise cls(message, user_site().location(), tuple(notes))


_dynamic.report = fail
_index_tiles.report = fail


def unsupported_name(namespace: str, name: str):
    """A module ``__getattr__`` result for an NKI name this front end lacks: calling it fails
    at the kernel's line (so importing or referencing it outside a kernel does not), saying
    whether the name is NKI 0.6's or another version's and what to write instead."""
    if name.startswith("__"):
        raise AttributeError(name)
    def unsupported(*args, **kwargs):
        fail(describe_missing(namespace, name), unsupported=True)

    unsupported.__name__ = name
    return unsupported


# ------------------------------------------------------------------------------------------
# dtypes


def _dtype_tables():
    from neuronemu.isa import dtypes

    by_name, by_numpy = {}, {}
    for name in dtypes.names():
        try:
            npd = dtypes.numpy_dtype(name)
        except (AttributeError, TypeError):
            continue
        by_name[name] = npd
        if name != "tfloat32":
            by_numpy.setdefault(npd, name)
    return by_name, by_numpy


_DTYPES: tuple[dict, dict] | None = None


def dtype_tables() -> tuple[dict, dict]:
    global _DTYPES
    if _DTYPES is None:
        _DTYPES = _dtype_tables()
    return _DTYPES


_DTYPE_NAMES: dict = {}   # dtype (as kernels pass it) -> its name: asked for every tile


def dtype_name(dtype) -> str:
    """neuronemu's name of a numpy / ml_dtypes dtype (or of a dtype name)."""
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):
        pass
    name = _dtype_name(dtype)
    try:
        _DTYPE_NAMES[dtype] = name
    except TypeError:
        pass
    return name


def _dtype_name(dtype) -> str:
    by_name, by_numpy = dtype_tables()
    if isinstance(dtype, str) and dtype in by_name:
        return dtype
    try:
        npd = np.dtype(dtype)
    except TypeError:
        npd = None
    if npd is not None and npd in by_numpy:
        return by_numpy[npd]
    fail(f"dtype {dtype!r} is not a neuronemu dtype", f"dtypes: {', '.join(by_name)}")
    raise AssertionError


def numpy_dtype(dtype) -> np.dtype:
    return dtype_tables()[0][dtype_name(dtype)]


# ------------------------------------------------------------------------------------------
# memory


class Space:
    """A memory buffer kind: ``nl.sbuf``, ``nl.psum``, ``nl.hbm`` (shared/private alike)."""

    def __init__(self, name: str, kind: str):
        self.name = name
        self.kind = kind   # "sbuf" | "psum" | "hbm"

    def __repr__(self) -> str:
        return f"nl.{self.name}"


@dataclass(slots=True)
class Slot:
    """One physical on-chip declaration (``.sbuf``/``.psum``) or HBM tensor."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    site: Site
    offset: int = 0
    role: str = "scratch"          # HBM: input | output | scratch
    private: bool = False          # HBM: nl.private_hbm (a core's own scratch, never returned)
    used_shape: tuple[int, ...] | None = None
    used_site: Site | None = None
    live: object = None            # on chip: its _alloc.Live (live range, placement)
    program: int = 0               # on chip: the grid program that allocated it
    family: int = 0                # on chip: versions of one tile share it (nki._versions)
    version_of: object = None      # on chip: the tile this is a later version of

    @property
    def bytes_per_partition(self) -> int:
        return math.prod(self.shape[1:]) * _itemsize(self.dtype)


_ITEMSIZES: dict[str, int] = {}
_WHOLE: dict[tuple, tuple] = {}     # a shape -> the index of a whole view of it
_PLAIN = (int, type(None))


def _whole(shape: tuple[int, ...]) -> tuple:
    """The index of a whole view of a tensor of ``shape`` (one per shape: made per tile)."""
    index = _WHOLE.get(shape)
    if index is None:
        index = _WHOLE[shape] = tuple([(0, n, 1) for n in shape])
    return index


def _itemsize(dtype: str) -> int:
    size = _ITEMSIZES.get(dtype)
    if size is None:
        from neuronemu.isa import dtypes

        size = _ITEMSIZES[dtype] = dtypes.get(dtype).itemsize
    return size


class Buffer:
    """What one ``nl.ndarray`` (or kernel argument) allocated."""

    def __init__(self, slot: Slot):
        self.slot = slot
        self.written: list[tuple] = []     # PSUM regions written (for accumulate auto-detect)
        self.written_mask = None           # ... or exactly which elements (a bool array)
        self.written_count = 0             # elements set in written_mask
        # nl.zeros in PSUM under the compiler's schedule: the whole view to zero, not yet
        # emitted (the first use that needs the zeros emits it; a whole-tile `+=` matmul
        # first does not: it overwrites, as the compiler folds the fill into it)
        self.pending_zero = None
        # device loops open when it was allocated (a PSUM tile from outside a loop is written
        # by every iteration of it)
        self.loop_depth = len(_CURRENT[-1].loops) if _CURRENT else 0

    def fill_zero(self) -> None:
        """Emit the pending ``nl.zeros`` fill now."""
        view, self.pending_zero = self.pending_zero, None
        if _CURRENT and _CURRENT[-1].flushed is not None:   # (a call being left out)
            mask = self.written_mask
            _CURRENT[-1].flushed.append((self, view, list(self.written),
                                         None if mask is None else mask.copy(),
                                         self.written_count))
        HOOKS["nisa"].memset(view, 0.0)


# ------------------------------------------------------------------------------------------
# tensors


class NKIObject:
    """NKI's base class of kernel-side objects (``nl.NKIObject``): kernels derive their
    configuration dataclasses from it. Keyword arguments become attributes."""

    def __init__(self, **kwargs) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __init_subclass__(cls, **kwargs) -> None:
        """Plain class attributes of a subclass are fields too: nki-library writes
        ``@dataclass class SectionParams(nl.NKIObject): section_idx = None`` and constructs
        it with ``SectionParams(section_idx=...)``, which NKI accepts but a dataclass of
        unannotated attributes would not. Annotating them (after the annotated ones, so no
        positional order changes) makes @dataclass take them; unhashable defaults (lists),
        which dataclass refuses, stay class attributes. Fields without a default default to
        None: NKI accepts a configuration object built without some of its fields."""
        super().__init_subclass__(**kwargs)
        own = dict(inspect.get_annotations(cls))
        for name, value in list(cls.__dict__.items()):
            if (name.startswith("__") or name in own or callable(value)
                    or isinstance(value, (property, classmethod, staticmethod))
                    or type(value).__hash__ is None):
                continue
            own[name] = "typing.Any"
        for name in own:
            # an annotated field the constructor is not given is None, as NKI has it
            # (nki-library builds MLPTKGConstantsDimensionSizes without remainderIFused)
            if name not in cls.__dict__ and not any(name in vars(b) for b in cls.__mro__[1:]):
                setattr(cls, name, None)
        cls.__annotations__ = own


class DynSlice:
    """``nl.ds(start, size)``: the slice start:start+size; ``start`` may be a register
    expression (a device loop's induction variable), ``size`` and ``step`` are ints."""

    def __init__(self, start, size, step: int = 1):
        if not all(isinstance(v, (int, np.integer)) for v in (size, step)):
            fail("nl.ds size and step must be Python ints", unsupported=True)
        if not isinstance(start, (int, np.integer, RegExpr)):
            fail(f"nl.ds start must be a Python int or a register expression, got "
                 f"{type(start).__name__}")
        self.start = start if isinstance(start, RegExpr) else int(start)
        self.size, self.step = int(size), int(step)

    def as_slice(self) -> slice:
        return slice(self.start, self.start + self.size * self.step, self.step)


class NkiTensor(NKIObject):
    """A view of a buffer: per base dim, an int (dim dropped) or (start, size, step)."""

    __array_priority__ = 1000   # numpy scalars on the left defer to our operators

    def __init__(self, buffer: Buffer, base_shape: tuple[int, ...], index=None,
                 broadcast: int | None = None):
        self._buffer = buffer
        if type(base_shape) is not tuple:
            base_shape = tuple(base_shape)
        self._base_shape = base_shape
        if index is None:
            index = _whole(base_shape)
        self._index = index if type(index) is tuple else tuple(index)
        self._broadcast = broadcast   # partitions a [1, N] row is broadcast to (DMA only)
        self._ap = None               # (pairs, offset, dtype name | None) of a .ap() view
        self._indirect = None         # (HBM tensor, [P, 1] row index tile): vector_offset rows
        self._ti = None               # (tile, index tile, num_elem): a t.indirect(index) view
        # NKI 0.1's mask= of the compute call that made this tile (its ``boxes(shape)``: the
        # points it defines): assigning the tile into another writes those points only
        self._masked = None

    # -- numpy-like attributes
    @property
    def shape(self) -> tuple[int, ...]:
        if self._ap is not None:
            return tuple([c for _, c in self._ap[0]])
        if self._indirect is not None:
            return self._indirect[2]
        if self._ti is not None:
            return (self._ti[0].shape[0], self._ti[2])
        dims = tuple([e[1] for e in self._index if type(e) is tuple])
        if self._broadcast is not None:
            return (self._broadcast,) + dims[1:]
        return dims

    @property
    def dtype(self) -> np.dtype:
        if self._ap is not None and self._ap[2] is not None:
            return dtype_tables()[0][self._ap[2]]
        return dtype_tables()[0][self._buffer.slot.dtype]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def buffer(self) -> Space:
        return SPACES[self._buffer.slot.kind]

    @property
    def kind(self) -> str:
        return self._buffer.slot.kind

    def __repr__(self) -> str:
        return (f"NkiTensor({self.kind} {self._buffer.slot.name}{list(self.shape)} "
                f"{self._buffer.slot.dtype})")

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        # True, as NKI's own tensor objects are: kernels test optional tensors with
        # ``if outs.down_activations:`` (nki-library). A tensor's values never reach Python
        # control flow: comparisons are nl.greater & co., which return tensors, not bools.
        return True

    def __iter__(self):
        fail("iterating over a tensor is not supported; index it with t[i] or slices",
             unsupported=True)

    # -- indexing
    def __getitem__(self, key) -> NkiTensor:
        if self._ap is not None or self._broadcast is not None or self._ti is not None:
            if self._ti is not None:
                self._no_view_of_indirect()
            return self._index_pattern(key)
        if type(key) is tuple and len(key) == len(self._index):
            # the common case first: a slice of Python ints in every dim of a plain view
            out = []
            for k, e in zip(key, self._index):
                if type(k) is not slice or type(e) is not tuple or k.step is not None:
                    break
                a, b = k.start, k.stop
                start, size, step = e
                a = 0 if a is None else a
                b = size if b is None else b
                if type(a) is not int or type(b) is not int or not 0 <= a <= b <= size:
                    break
                out.append((start + a * step, b - a, step))
            else:
                return NkiTensor(self._buffer, self._base_shape, tuple(out))
        if type(key) is not tuple:
            key = (key,)
        if _index_tiles.has_index_tiles(key):   # NKI 0.1: a[i * 128 + i_p, i_f]
            return _index_tiles.index(self, key)
        view_dims = [i for i, e in enumerate(self._index) if type(e) is tuple]
        if Ellipsis in key:
            if sum(1 for k in key if k is Ellipsis) > 1:
                fail("an index can only have a single ellipsis ('...')")
            at = key.index(Ellipsis)
            fill = len(view_dims) - (len(key) - 1)
            key = key[:at] + (slice(None),) * fill + key[at + 1:]
        index = list(self._index)
        if len(key) == len(view_dims) + 1 and self.kind != "hbm":
            # an on-chip tile is at least [partitions, 1] in the hardware: a free dim an int
            # index dropped (t[:, k], shape [P]) is still one column to index (attention_cte
            # writes t[:, k][:n, :1])
            dropped = [i for i, e in enumerate(index) if i > 0 and type(e) is int]
            if dropped and view_dims == [0]:
                index[dropped[-1]] = (index[dropped[-1]], 1, 1)
                view_dims = [i for i, e in enumerate(index) if type(e) is tuple]
        if len(key) > len(view_dims):
            fail(f"too many indices for a tensor of shape {list(self.shape)}: {len(key)}")
        for k, dim in zip(key, view_dims):
            start, size, step = index[dim]
            kind = type(k)
            if kind is slice and type(k.start) in _PLAIN and type(k.stop) in _PLAIN and (
                    k.step is None or type(k.step) is int and k.step > 0):
                # the common case first: a slice of Python ints (loop variables of an
                # unrolled loop)
                if (k.start is not None and not -size <= k.start <= size) or (
                        k.stop is not None and not -size <= k.stop <= size):
                    if tracer().dialect == "0.1":   # (legal under a mask, as index tiles)
                        return _index_tiles.index(self, _index_tiles.as_tiles(
                            key, self.shape))
                    fail(f"slice {k.start}:{k.stop} is out of bounds for dim "
                         f"{view_dims.index(dim)} of size {size}")
                s0, s1, st = k.indices(size)
                index[dim] = (start + s0 * step, len(range(s0, s1, st)), step * st)
                continue
            if kind is int and -size <= k < size:
                index[dim] = start + (k % size) * step
                continue
            if isinstance(k, DynSlice) and isinstance(k.start, RegExpr):
                # a run-time start: bounds are checked when the instruction runs
                index[dim] = (start + k.start * step, k.size, step * k.step)
                continue
            if isinstance(k, DynSlice):
                k = k.as_slice()
            if isinstance(k, RegExpr):
                index[dim] = start + k * step
                continue
            if isinstance(k, slice) and any(isinstance(v, RegExpr) for v in (k.start, k.stop)):
                size_k = k.stop - k.start if k.start is not None and k.stop is not None else None
                if not isinstance(size_k, int) or (k.step or 1) <= 0:
                    fail("a slice with a register bound needs the same register terms in start "
                         "and stop (a constant size), e.g. t[:, r*128 : r*128 + 128]",
                         unsupported=True)
                st = int(k.step or 1)
                index[dim] = (start + k.start * step, len(range(0, size_k, st)), step * st)
                continue
            if isinstance(k, (int, np.integer)):
                k = int(k)
                if not -size <= k < size:
                    fail(f"index {k} is out of bounds for dim {view_dims.index(dim)} of size "
                         f"{size}")
                k %= size
                index[dim] = start + k * step
            elif isinstance(k, slice):
                for v in (k.start, k.stop, k.step):
                    if v is not None and not isinstance(v, (int, np.integer)):
                        fail(f"slice bounds must be Python ints, not {type(v).__name__} "
                             f"(loops are unrolled: loop variables are ints)", unsupported=True)
                if k.step is not None and k.step <= 0:
                    fail("slice steps must be positive", unsupported=True)
                if (k.start is not None and not -size <= k.start <= size) or (
                        k.stop is not None and not -size <= k.stop <= size):
                    fail(f"slice {k.start}:{k.stop} is out of bounds for dim "
                         f"{view_dims.index(dim)} of size {size}")
                s0, s1, st = k.indices(size)
                n = len(range(s0, s1, st))
                # an empty view is legal (a core with no rows of a sharded tensor takes
                # t[nl.ds(k, 0)]); it only cannot be an instruction's operand (operand())
                index[dim] = (start + s0 * step, n, step * st)
            else:
                fail(f"unsupported index {k!r} (ints, slices, nl.ds and ... are supported)",
                     unsupported=True)
        if (self.kind != "hbm" and type(index[0]) is tuple
                and [type(e) is tuple for e in index].count(True) == 1
                and tracer().dialect == "0.1"):
            # NKI 0.1: t[:, 0] of an on-chip tile is the [P, 1] column (a tile keeps a free dim)
            dropped = [i for i, e in enumerate(index) if i > 0 and type(e) is int]
            if dropped:
                index[dropped[-1]] = (index[dropped[-1]], 1, 1)
        return NkiTensor(self._buffer, self._base_shape, index)

    def _index_pattern(self, key) -> NkiTensor:
        """Indexing a strided view: ints select (the dim goes; on chip dim 0 stays as one
        partition), slices narrow, as numpy's indexing of an ``as_strided`` view."""
        pairs, offset, dtype = self._pattern()
        if not isinstance(key, tuple):
            key = (key,)
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (len(pairs) - len(key) + 1) + key[at + 1:]
        if len(key) > len(pairs):
            fail(f"too many indices for a tensor of shape {list(self.shape)}: {len(key)}")
        out = []
        for d, (st, c) in enumerate(pairs):
            k = key[d] if d < len(key) else slice(None)
            if isinstance(k, DynSlice):
                k = k.as_slice()
            if isinstance(k, (int, np.integer)):
                k = int(k)
                if not -c <= k < c:
                    fail(f"index {k} is out of bounds for dim {d} of size {c}")
                offset += (k % c) * st
                if d == 0 and self.kind != "hbm":
                    out.append((st, 1))
            elif isinstance(k, slice):
                for v in (k.start, k.stop, k.step):
                    if v is not None and not isinstance(v, (int, np.integer)):
                        fail(f"slice bounds must be Python ints, not {type(v).__name__}",
                             unsupported=True)
                s0, s1, step = k.indices(c)
                n = len(range(s0, s1, step))
                if n == 0 or step <= 0:
                    fail(f"slice {k.start}:{k.stop}:{k.step} of a dim of size {c} is empty or "
                         f"reversed")
                offset += s0 * st
                out.append((st * step, n))
            else:
                fail(f"unsupported index {k!r} (ints, slices, nl.ds and ... are supported)",
                     unsupported=True)
        return self._with_pattern(out, offset, dtype)

    def __setitem__(self, key, value):
        if isinstance(value, NkiTensor):
            isa = HOOKS["nisa"]
            dst = self[key]
            if (value._buffer is dst._buffer and value._index == dst._index
                    and value._ap is None and dst._ap is None):
                return   # t[k] += x: the += wrote t[k] itself (NKI 0.1)
            accumulate = getattr(value, "_accumulate", None)
            if accumulate is not None:   # NKI 0.1: t[k] = nl.loop_reduce(x, op=np.add, ...)
                boxes = (value._masked.boxes(value.shape) if value._masked is not None
                         else [(slice(None),) * len(value.shape)])
                for box in boxes:
                    isa.tensor_tensor(dst[box], dst[box], value[box], op=accumulate)
                return
            if value._masked is None and value._into(dst):
                return   # NKI 0.1: t[k] = nisa.nc_matmul(...) computes into t[k]
            if value._masked is not None:   # NKI 0.1: t[k] = nl.exp(x, mask=m)
                copy = isa.dma_copy if dst.kind == "hbm" else isa.tensor_copy
                for box in value._masked.boxes(value.shape):
                    copy(dst[box], value[box])
                return
            if dst.kind == "hbm" or value.kind == "hbm":
                isa.dma_copy(dst, value)
            else:
                isa.tensor_copy(dst, value)
            return
        if isinstance(value, (int, float, np.integer, np.floating)) and (
                tracer().dialect == "0.1"):   # NKI 0.1: t[...] = 0 fills the view
            HOOKS["nisa"].memset(self[key], value)
            return
        fail("assigning a Python value into a tensor is not supported; use nisa.memset",
             unsupported=True)

    def _into(self, dst: NkiTensor) -> bool:
        """NKI 0.1's ``t[k] = call(...)``: the call's instruction writes ``t[k]`` itself (as
        the 0.1 compiler makes it) instead of a new tile then copied, when this tile is that
        new tile: made for the last instruction traced, named by it only, as its destination,
        and ``t[k]`` is of the same shape, dtype and memory. This tile becomes a view of
        ``t[k]`` (later uses read what was written there); its own bytes are never placed."""
        tr = tracer()
        if tr.dialect != "0.1" or not tr.instructions:
            return False
        last, slot = tr.instructions[-1], self._buffer.slot
        first = last.operands[0] if last.operands else None
        if (slot.live is None or slot.live.start != len(tr.instructions) - 1
                or type(first) is not TileRef or first.slot is not slot
                or first.index is not None or first.ap is not None
                or any(type(o) is TileRef and o.slot is slot for o in last.operands[1:])
                or any(type(v) is TileRef and v.slot is slot for v in last.keywords.values())
                or not self._is_whole() or self._ap is not None or dst._ap is not None
                or dst._broadcast is not None or dst._indirect is not None
                or dst.shape != self.shape or dst.dtype != self.dtype or dst.kind != self.kind):
            return False
        last.operands = (dst.operand(tr),) + last.operands[1:]
        if dst._buffer.slot.live is not None:   # (named by the last instruction, not a next)
            dst._buffer.slot.live.end = len(tr.instructions) - 1
        HOOKS["nisa"].mark_written(dst)   # (an overwrite: a later += into PSUM accumulates)
        slot.live.end = -1
        self._buffer, self._base_shape, self._index = dst._buffer, dst._base_shape, dst._index
        return True

    # -- views
    def _is_whole(self) -> bool:
        return (self._index == tuple((0, n, 1) for n in self._base_shape)
                and self._broadcast is None and self._ap is None)

    def reshape(self, *shape, **kwargs) -> NkiTensor:
        """A view of the same elements in another shape (no copy): ``t.reshape((4, 32))``,
        ``t.reshape(4, 32)`` or ``t.reshape(shape=(4, 32))``. On chip the partition dim stays
        (a reshape cannot move elements between partitions); a sliced view reshapes when its
        layout allows it without a copy, as numpy's ``reshape`` of a strided view does."""
        if "shape" in kwargs:
            shape = (kwargs.pop("shape"),)
        for key in kwargs:
            fail(f"reshape() got an unexpected keyword argument {key!r}; write "
                 f"t.reshape(shape) or t.reshape(shape=...)")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(math.prod(self.shape) // known if s == -1 else s for s in shape)
        if math.prod(shape) != math.prod(self.shape) or any(s < 1 for s in shape):
            fail(f"cannot reshape a tensor of shape {list(self.shape)} into {list(shape)}")
        if shape == self.shape:
            return self
        if self.kind == "hbm" and self._is_whole():
            return NkiTensor(self._buffer, shape)
        pairs, offset, dtype = self._pattern()
        if self.kind != "hbm":
            if shape[0] != self.shape[0]:
                fail(f"an on-chip reshape keeps the partition dim: {list(self.shape)} cannot "
                     f"become {list(shape)} (partitions {self.shape[0]} -> {shape[0]})",
                     "reshape the free dims only, e.g. t.reshape((P, ...)), or move the data "
                     "between partitions by DMA or nisa.nc_transpose")
            free = _reshape_pairs(pairs[1:], shape[1:])
            new = None if free is None else [pairs[0]] + free
        else:
            new = _reshape_pairs(pairs, shape)
        if new is None:
            fail(f"this view {list(self.shape)} cannot be reshaped into {list(shape)} without a "
                 f"copy (its elements are not evenly strided in the dims being merged)",
                 "copy it into a contiguous tile first (nisa.tensor_copy), then reshape",
                 unsupported=True)
        return self._with_pattern(new, offset, dtype)

    # -- the NKI 0.5 view algebra, on (step, count) pairs
    def _pattern(self) -> tuple[list, int, str | None]:
        """This view as an access pattern: [[step, count], ...] (partition pair first) and
        the offset, in elements of the buffer's flat row-major array, and its dtype view."""
        if self._ti is not None:
            self._no_view_of_indirect()
        if self._ap is not None:
            pairs, offset, dtype = self._ap
            return [tuple(p) for p in pairs], offset, dtype
        strides = [math.prod(self._base_shape[i + 1:]) for i in range(len(self._base_shape))]
        pairs, offset = [], 0
        for i, (e, stride) in enumerate(zip(self._index, strides)):
            if isinstance(e, int):
                offset += e * stride
                if i == 0 and self.kind != "hbm":   # one partition stays the partition dim
                    pairs.append((stride, 1))
            else:
                offset += e[0] * stride
                pairs.append((stride * e[2], e[1]))
        if self._broadcast is not None:
            pairs[0] = (0, self._broadcast)
        return pairs, offset, None

    def _with_pattern(self, pairs, offset: int, dtype: str | None = None) -> NkiTensor:
        if self.kind != "hbm" and (not pairs or len(pairs) > 5):
            fail(f"an on-chip view has a partition dim and at most 4 free dims; this one would "
                 f"have {len(pairs)} dims", unsupported=True)
        view = NkiTensor(self._buffer, self._base_shape)
        view._ap = ([tuple(int(v) for v in p) for p in pairs], int(offset), dtype)
        return view

    def _dim(self, dim: int, what: str) -> int:
        n = len(self.shape)
        if not isinstance(dim, (int, np.integer)) or not -n <= dim < n:
            fail(f"{what}: dim {dim!r} is out of range for a {n}-D tensor")
        return int(dim) % n

    def _keep_partitions(self, what: str, moved: bool) -> None:
        if moved and self.kind != "hbm":
            fail(f"{what} would move the partition dim of an on-chip tensor; on chip dim 0 "
                 f"is the partition dim and stays first", "move data between partitions with "
                 "nisa.nc_transpose or a DMA", unsupported=True)

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> NkiTensor:
        """``t.slice(d, a, b, s)``: ``t[..., a:b:s, ...]`` along dim d."""
        d = self._dim(dim, "slice")
        key = [slice(None)] * len(self.shape)
        key[d] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index) -> NkiTensor:
        """``t.select(d, i)``: ``t[..., i, ...]`` along dim d (the dim is removed)."""
        d = self._dim(dim, "select")
        if not isinstance(index, (int, np.integer)):
            fail("select() with a run-time (tensor) index is not supported; loops are "
                 "unrolled, so use a Python int", unsupported=True)
        key = [slice(None)] * len(self.shape)
        key[d] = int(index)
        return self[tuple(key)]

    def permute(self, dims) -> NkiTensor:
        """The dims in another order (``t.permute((0, 2, 1))``), no copy."""
        dims = tuple(int(d) for d in dims)
        if sorted(dims) != list(range(len(self.shape))):
            fail(f"permute{dims}: not a permutation of the {len(self.shape)} dims")
        self._keep_partitions(f"permute{dims}", dims[0] != 0)
        pairs, offset, dtype = self._pattern()
        return self._with_pattern([pairs[d] for d in dims], offset, dtype)

    def broadcast(self, dim: int, size: int) -> NkiTensor:
        """A size-1 dim repeated ``size`` times (step 0), no copy."""
        d = self._dim(dim, "broadcast")
        if self.shape[d] != 1:
            fail(f"broadcast: dim {d} has size {self.shape[d]}; only a size-1 dim broadcasts")
        shape = list(self.shape)
        shape[d] = int(size)
        return self.broadcast_to(tuple(shape))

    def expand_dim(self, dim: int) -> NkiTensor:
        """A new size-1 dim at ``dim``."""
        n = len(self.shape)
        if not -n - 1 <= dim <= n:
            fail(f"expand_dim: dim {dim} is out of range for a {n}-D tensor")
        d = dim % (n + 1)
        self._keep_partitions(f"expand_dim({dim})", d == 0)
        pairs, offset, dtype = self._pattern()
        return self._with_pattern(pairs[:d] + [(0, 1)] + pairs[d:], offset, dtype)

    def squeeze_dim(self, dim: int) -> NkiTensor:
        """The size-1 dim ``dim`` removed."""
        d = self._dim(dim, "squeeze_dim")
        if self.shape[d] != 1:
            fail(f"squeeze_dim: dim {d} has size {self.shape[d]}, not 1")
        self._keep_partitions(f"squeeze_dim({dim})", d == 0)
        pairs, offset, dtype = self._pattern()
        return self._with_pattern(pairs[:d] + pairs[d + 1:], offset, dtype)

    def reshape_dim(self, dim: int, shape) -> NkiTensor:
        """Dim ``dim`` split into ``shape`` (one entry may be -1)."""
        d = self._dim(dim, "reshape_dim")
        shape = [int(s) for s in shape]
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = [self.shape[d] // known if s == -1 else s for s in shape]
        if math.prod(shape) != self.shape[d]:
            fail(f"reshape_dim: {shape} does not multiply to dim {d}'s size {self.shape[d]}")
        self._keep_partitions(f"reshape_dim({dim})", d == 0 and len(shape) > 1)
        pairs, offset, dtype = self._pattern()
        step = pairs[d][0]
        split = []
        for n in reversed(shape):
            split.insert(0, (step, n))
            step *= n
        return self._with_pattern(pairs[:d] + split + pairs[d + 1:], offset, dtype)

    def flatten_dims(self, start_dim: int, end_dim: int) -> NkiTensor:
        """Dims ``start_dim..end_dim`` (inclusive) merged into one."""
        a, b = self._dim(start_dim, "flatten_dims"), self._dim(end_dim, "flatten_dims")
        if a > b:
            fail(f"flatten_dims({start_dim}, {end_dim}): start after end")
        shape = self.shape[:a] + (math.prod(self.shape[a:b + 1]),) + self.shape[b + 1:]
        self._keep_partitions(f"flatten_dims({start_dim}, {end_dim})", a == 0 and b > 0)
        return self.reshape(shape)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None) -> NkiTensor:
        """einops-style view: ``src_pattern`` names each dim (a tuple of names splits it,
        sizes from ``fixed_sizes``, one per group inferred), ``dst_pattern`` orders the names
        (a tuple merges them). Made of ``reshape_dim``, ``permute`` and ``flatten_dims``, so
        the same rules hold (on chip the partition dim stays first)."""
        def groups(pattern, which):
            if not isinstance(pattern, (tuple, list)):
                fail(f"rearrange: {which} pattern must be a tuple of names, got {pattern!r}")
            out = [tuple(p) if isinstance(p, (tuple, list)) else (p,) for p in pattern]
            if any(not g or not all(isinstance(n, str) for n in g) for g in out):
                fail(f"rearrange: {which} pattern {pattern!r} holds something that is not a "
                     f"name or a non-empty tuple of names")
            return out

        src, dst = groups(src_pattern, "source"), groups(dst_pattern, "destination")
        fixed = {str(k): int(v) for k, v in dict(fixed_sizes or {}).items()}
        if len(src) != len(self.shape):
            fail(f"rearrange: the source pattern {src_pattern!r} has {len(src)} dims, the "
                 f"tensor {len(self.shape)} ({list(self.shape)})")
        names = [n for g in src for n in g]
        if len(set(names)) != len(names) or sorted(names) != sorted(n for g in dst for n in g):
            fail(f"rearrange: {dst_pattern!r} must use each name of {src_pattern!r} once")
        sizes = {}
        for group, size in zip(src, self.shape):
            unknown = [n for n in group if n not in fixed]
            known = math.prod(fixed[n] for n in group if n in fixed)
            if len(unknown) > 1:
                fail(f"rearrange: give fixed_sizes for all but one of {group!r}")
            if (size % known if unknown else known != size):
                fail(f"rearrange: {group!r} cannot split a dim of size {size} "
                     f"(fixed sizes {[fixed[n] for n in group if n in fixed]})")
            sizes.update({n: fixed.get(n, size // known) for n in group})
        view = self
        for i in reversed(range(len(src))):
            if len(src[i]) > 1:
                view = view.reshape_dim(i, [sizes[n] for n in src[i]])
        order = [names.index(n) for g in dst for n in g]
        if order != sorted(order):
            view = view.permute(order)
        ends, at = [], 0
        for g in dst:
            ends.append((at, at + len(g) - 1))
            at += len(g)
        for a, b in reversed(ends):
            if b > a:
                view = view.flatten_dims(a, b)
        return view

    def vector_select(self, dim: int, vector_offset) -> NkiTensor:
        """Partition p reads (or writes) row ``vector_offset[p]`` of a 2-D HBM tensor: the
        row-gather view ``.ap(vector_offset=)`` makes, for ``nisa.dma_copy``."""
        if int(dim) != 0:
            fail(f"vector_select(dim={dim}): the dim must be 0 (as in NKI)")
        if not isinstance(vector_offset, NkiTensor) or len(vector_offset.shape) != 2 or (
                vector_offset.shape[1] != 1):
            fail("vector_select: vector_offset must be a [P, 1] integer tile")
        if self.kind != "hbm" or len(self.shape) != 2:
            fail(f"vector_select is supported on 2-D HBM tensors (this one is "
                 f"{self.kind} {list(self.shape)}): flatten the trailing dims first, "
                 f"t.reshape((rows, row_size))", unsupported=self.kind == "hbm")
        row = self.shape[1]
        return self.ap([[row, vector_offset.shape[0]], [1, row]], vector_offset=vector_offset,
                       indirect_dim=0)

    def is_contiguous(self) -> bool:
        pairs, _, _ = self._pattern()
        step = 1
        for st, c in reversed(pairs):
            if c != 1 and st != step:
                return False
            step *= c
        return True

    def get_pattern(self) -> list[list[int]]:
        return [list(p) for p in self._pattern()[0]]

    def is_indirect(self) -> bool:
        return self._ti is not None

    @staticmethod
    def _no_view_of_indirect() -> None:
        fail("an indirect view (t.indirect(index)) cannot be sliced, reshaped or viewed again "
             "(as in NKI); slice the tile and the index first, then call .indirect()")

    def broadcast_to(self, shape) -> NkiTensor:
        """Size-1 dims repeated (``[P, 1] -> [P, N]``, ``[1, N] -> [P, N]``). A free-dim
        broadcast is a step-0 view (any operand). A partition broadcast of an HBM row is a DMA
        source; of an on-chip row it is copied to a new SBUF tile by a DMA partition broadcast
        (compute engines cannot read across partitions), allocated at the calling line."""
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        if shape == self.shape:
            return self
        if len(shape) != len(self.shape) or any(
                a != b and a != 1 for a, b in zip(self.shape, shape)):
            fail(f"cannot broadcast a tensor of shape {list(self.shape)} to {list(shape)} (only "
                 f"size-1 dims broadcast, and the rank stays)")
        if (self.kind == "hbm" and self.shape[0] == 1 and shape[1:] == self.shape[1:]
                and self._broadcast is None and self._ap is None):
            return NkiTensor(self._buffer, self._base_shape, self._index, broadcast=shape[0])
        pairs, offset, dtype = self._pattern()
        pairs = [(0, n) if c != n else (st, c) for (st, c), n in zip(pairs, shape)]
        view = self._with_pattern(pairs, offset, dtype)
        if self.kind == "hbm" or shape[0] == self.shape[0]:
            return view
        tile = tracer().onchip("sbuf", dtype or self._buffer.slot.dtype, shape, user_site())
        HOOKS["nisa"].dma_copy(tile, view)
        return tile

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None,
           indirect_dim: int = 0, dtype=None, **kwargs) -> NkiTensor:
        """A raw access pattern over this tensor's buffer (NKI ``.ap()``): ``pattern`` is
        [[step, count], ...], the partition pair first, steps in elements of the flat
        row-major buffer from the first element of this view plus ``offset``. Lowered to the
        assembler's ``ap(...)`` operand. ``scalar_offset`` (a register or a [1, 1] tile) adds
        register * the stride of dim ``indirect_dim`` of this tensor to the offset at run time;
        ``vector_offset`` (a [P, 1] tile of row numbers) makes a row gather/scatter view of an
        HBM tensor for ``nisa.dma_copy``."""
        for key in kwargs:
            fail(f"Tensor.ap({key}=...) is not supported (static patterns only)",
                 unsupported=True)
        try:
            pairs = [(int(step), int(count)) for step, count in pattern]
        except (TypeError, ValueError):
            fail(f"pattern must be a list of [step, count] pairs, got {pattern!r}")
        if not pairs or any(c < 1 or st < 0 for st, c in pairs):
            fail(f"pattern {pattern!r}: counts must be >= 1 and steps >= 0")
        # The pattern starts at this view's first element (an .ap() or broadcast view's
        # too), counted in elements of the dtype the new view is read as.
        _, start, seen_as = self._pattern()
        if dtype is not None:
            start = self._rescaled(start, seen_as, dtype_name(dtype))
        elif seen_as is not None:
            dtype = seen_as
        offset = 0 if offset is None else offset
        if not isinstance(offset, (int, np.integer, RegExpr)):
            fail(f"offset must be an int, got {type(offset).__name__}")
        dim = int(indirect_dim)
        if scalar_offset is not None and vector_offset is not None:
            fail("scalar_offset and vector_offset are mutually exclusive (as in NKI)")
        if scalar_offset is not None:
            # NKI: the offset is scaled by the stride of dim `indirect_dim` of this tensor's
            # own shape (not of the new pattern): t.ap(..., indirect_dim=1) on a [T, C]
            # tensor moves by whole columns.
            own = self._pattern()[0]
            if not 0 <= dim < len(own):
                fail(f"indirect_dim={dim} is not a dim of the {len(own)}-dim tensor "
                     f"{list(self.shape)}")
            offset = offset + self._scalar_offset(scalar_offset) * own[dim][0]
        elif not 0 <= dim < len(pairs):
            fail(f"indirect_dim={dim} is not a dim of the {len(pairs)}-dim pattern")
        if vector_offset is not None:
            return self._vector_offset(pairs, dim, start + offset, dtype, vector_offset)
        view = NkiTensor(self._buffer, self._base_shape)
        view._ap = (pairs, start + offset, None if dtype is None else dtype_name(dtype))
        return view

    def _rescaled(self, start: int, seen_as: str | None, new: str) -> int:
        """``start`` elements of ``seen_as`` (None: the buffer's dtype) as ``new`` elements."""
        old = seen_as or self._buffer.slot.dtype
        if old == new or not start:
            return start
        a, b = _itemsize(old), _itemsize(new)
        if (start * a) % b:
            fail(f"ap(dtype={new}): the view starts {start} {old} elements in, which is not a "
                 f"whole number of {new} elements")
        return start * a // b

    @staticmethod
    def _scalar_offset(value):
        """A register (expression) for ``.ap(scalar_offset=)``: a register, or a [1, 1]
        integer tile loaded into a fresh register here (``ctrl.load``, in program order)."""
        if isinstance(value, RegExpr):
            return value
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, NkiTensor):
            tr = tracer()
            reg = tr.register()
            tr.emit("ctrl.load", reg.register_text(), value.operand(tr))
            return reg
        fail(f"scalar_offset must be a register (nisa.register_alloc) or a [1, 1] integer "
             f"tile, got {type(value).__name__}")

    def _vector_offset(self, pairs, dim, offset, dtype, index) -> NkiTensor:
        """``.ap(pattern, offset, vector_offset=idx, indirect_dim=0)`` of an HBM tensor:
        partition p reads or writes at ``offset + idx[p] * S + (the pattern's free pairs)``,
        S the stride of dim 0 of this tensor's own shape (NKI: the partition pair's step is
        replaced by the indirect one). Lowered to ``dma.gather`` / ``dma.scatter`` over the
        table ``ap(t, [[S, rows], *free pairs], offset)``: whole rows, part of each row
        (a column range of a sharded output), single elements of a flat tensor."""
        if not isinstance(index, NkiTensor) or index.kind == "hbm":
            fail("vector_offset must be an on-chip [P, 1] integer tile")
        own, _, seen_as = self._pattern()
        buffer_dtype = self._buffer.slot.dtype
        if dtype is not None and dtype_name(dtype) != (seen_as or buffer_dtype):
            fail(f"vector_offset with ap(dtype={dtype_name(dtype)}) of a "
                 f"{seen_as or buffer_dtype} tensor is not supported", unsupported=True)
        if self.kind != "hbm" or dim != 0 or isinstance(offset, RegExpr):
            fail("vector_offset is supported on dim 0 of an HBM tensor (indirect_dim=0), "
                 "with a constant offset: t.ap([[F, P], [1, F]], vector_offset=idx, "
                 "indirect_dim=0)", unsupported=True)
        step, rows = own[0]
        free = [(int(st), int(c)) for st, c in pairs[1:]]
        extent = 1 + sum((c - 1) * st for st, c in free)
        total = math.prod(self._base_shape)
        # rows of the table: those whose elements lie inside the tensor (a row past the end
        # is outside the table: an error, or skipped under oob_mode.skip)
        if step > 0:
            rows = min(rows, (total - int(offset) - extent) // step + 1)
        if rows < 1 or offset < 0:
            fail(f"vector_offset: the pattern {[list(p) for p in pairs]} at offset {offset} "
                 f"does not fit in the tensor {list(self.shape)}")
        table = NkiTensor(self._buffer, self._base_shape)
        table._ap = ([(step, rows), *free] if free else [(step, rows), (1, 1)], int(offset),
                     None)
        view = NkiTensor(self._buffer, self._base_shape)
        view._indirect = (table, index, (pairs[0][1], *[c for _, c in free]) if free
                          else (pairs[0][1], 1))
        return view

    def indirect(self, index, num_elem=None) -> NkiTensor:
        """Tensor indirection (NeuronCore-v4): the view [P, num_elem] whose column k is this
        [P, F] tile's column at the run-time offset o(k) = index[G g + k % G, k // G], each
        group g of G partitions reading its own partitions of ``index`` (G = 16 for the
        Vector, Scalar and GpSimd engines, 32 for the Tensor engine). An operand of
        tensor_copy, tensor_copy_predicated, tensor_tensor (dst, data1) and nc_matmul
        (neuronemu.nki._indirection)."""
        if tracer().target != "trn3":
            fail(f".indirect() (tensor indirection) needs NeuronCore-v4 (trn3); this kernel is "
                 f"traced for {tracer().target}", "trace it with target='trn3'")
        if (self.kind == "hbm" or self._ap is not None or self._broadcast is not None
                or self._ti is not None or len(self.shape) != 2):
            fail(f"indirect() takes a 2-D SBUF or PSUM tile [P, F] (this is a "
                 f"{len(self.shape)}-D {self.kind} view{' already indirect' if self._ti else ''})")
        if (not isinstance(index, NkiTensor) or index.kind != "sbuf" or len(index.shape) != 2
                or index.shape[0] != self.shape[0]
                or np.dtype(index.dtype).kind not in "iu"):
            fail(f"indirect(index): index must be an integer SBUF tile [{self.shape[0]}, K] "
                 f"(the tile's partitions), got {index!r}")
        count = index.shape[0] * index.shape[1] if num_elem is None else int(num_elem)
        if count < 1:
            fail(f"indirect(num_elem={num_elem}): num_elem must be at least 1")
        view = NkiTensor(self._buffer, self._base_shape, self._index)
        view._ti = (self, index, count)
        return view

    @property
    def T(self):
        """The 2-D transpose as a view (HBM; on chip the partition dim cannot move: use
        nisa.nc_transpose / nl.transpose)."""
        if len(self.shape) != 2:
            fail(f"t.T is defined for 2-D tensors, not {len(self.shape)}-D")
        if self.kind != "hbm":
            fail("t.T of an on-chip tile would move its partition dim; transpose it with "
                 "nisa.nc_transpose or nl.transpose", unsupported=True)
        return self.permute((1, 0))

    def view(self, dtype) -> NkiTensor:
        """The same bytes seen as another dtype (no conversion): the innermost dim scales by
        the ratio of the item sizes (``[P, 64] float32 -> [P, 128] bfloat16``)."""
        new = dtype_name(dtype)
        old = self._ap[2] if self._ap is not None and self._ap[2] else self._buffer.slot.dtype
        if new == old:
            return self
        a, b = _itemsize(old), _itemsize(new)
        pairs, offset, _ = self._pattern()
        if pairs[-1][0] != 1 and pairs[-1][1] != 1:
            fail(f"view({new}): the innermost dim must be contiguous (step 1) to change the "
                 f"item size", unsupported=True)
        scaled = []
        for st, c in pairs[:-1]:
            if (st * a) % b:
                fail(f"view({new}): a step of {st} {old} elements is not a whole number of "
                     f"{new} elements")
            scaled.append((st * a // b, c))
        last_bytes = pairs[-1][1] * a
        if last_bytes % b or (offset * a) % b:
            fail(f"view({new}): the innermost dim ({pairs[-1][1]} x {old}) is not a whole "
                 f"number of {new} elements")
        scaled.append((1, last_bytes // b))
        return self._with_pattern(scaled, offset * a // b, new)

    # -- arithmetic: the nl.* convenience layer
    def _nl(self):
        return HOOKS["nl"]

    def __add__(self, other):
        return self._nl().add(self, other)

    def __radd__(self, other):
        return self._nl().add(other, self)

    def __sub__(self, other):
        return self._nl().subtract(self, other)

    def __rsub__(self, other):
        return self._nl().subtract(other, self)

    def __mul__(self, other):
        return self._nl().multiply(self, other)

    def __rmul__(self, other):
        return self._nl().multiply(other, self)

    def __truediv__(self, other):
        return self._nl().divide(self, other)

    def __rtruediv__(self, other):
        return self._nl().divide(other, self)

    def __pow__(self, other):
        return self._nl().power(self, other)

    def __neg__(self):
        return self._nl().negative(self)

    def __matmul__(self, other):
        fail("'@' on tiles is not supported; use nl.matmul or nisa.nc_matmul", unsupported=True)

    def __iadd__(self, other):
        """NKI 0.1's ``+=``. PSUM accumulation, ``acc += nl.matmul(a, b)``: the matmul just
        traced writes into ``acc`` instead of its own new tile, accumulating where ``acc`` was
        written, as the hardware accumulates in PSUM; under the compiler's schedule a whole
        ``nl.zeros`` tile's first matmul overwrites instead (its fill was never emitted).
        Anything else is an addition in place on the Vector engine."""
        tr = tracer()
        if isinstance(other, NkiTensor) and other._masked is not None and not (
                other._masked.boxes(other.shape)):
            return self   # (acc += nisa.nc_matmul(..., mask=False): nothing was computed)
        last = tr.instructions[-1] if tr.instructions else None
        if (self.kind == "psum" and isinstance(other, NkiTensor) and other.kind == "psum"
                and last is not None and last.mnemonic == "tensor.matmul"
                and type(last.operands[0]) is TileRef
                and last.operands[0].slot is other._buffer.slot
                and last.operands[0].index is None and last.operands[0].ap is None
                and other._index == _whole(other._base_shape) and other.shape == self.shape):
            buffer = self._buffer
            if buffer.pending_zero is not None:
                if self._index == _whole(self._base_shape) and self._ap is None \
                        and self.shape == tuple(buffer.slot.shape) \
                        and buffer.loop_depth == len(tr.loops):   # (not once per iteration)
                    buffer.pending_zero = None   # the first matmul overwrites the whole tile
                else:   # the zeros go first, then this matmul accumulates onto them
                    buffer.fill_zero()
                    tr.instructions[-2], tr.instructions[-1] = tr.instructions[-1], last
                    for operand in last.operands:   # (still read at its new place)
                        if type(operand) is TileRef and operand.slot.live is not None:
                            operand.slot.live.end = max(operand.slot.live.end,
                                                        len(tr.instructions) - 1)
            accumulate = HOOKS["nisa"]._psum_accumulate(self)
            last.operands = (self.operand(tr),) + last.operands[1:]
            last.keywords["accumulate"] = "true" if accumulate else "false"
            return self
        # anything else: added in place by the Vector engine, as NKI 0.1 compiles it
        isa = HOOKS["nisa"]
        if isinstance(other, NkiTensor) and other.shape == self.shape:
            isa.tensor_tensor(self, self, other, op="add")
        elif isinstance(other, NkiTensor) and len(other.shape) == 2 and other.shape == (
                self.shape[0], 1):
            isa.tensor_scalar(self, self, "add", other)
        elif isinstance(other, (int, float, np.integer, np.floating)):
            isa.tensor_scalar(self, self, "add", float(other))
        else:
            fail(f"'+=' adds a tile of the same shape {list(self.shape)}, a [P, 1] column or "
                 f"a number, not {getattr(other, 'shape', type(other).__name__)}",
                 unsupported=True)
        return self

    # -- operands
    def operand(self, tracer: Tracer) -> TileRef:
        """This view as an instruction operand (the tile's bytes and name are chosen after the
        trace: the operand names the tile, not its text)."""
        if self._buffer.pending_zero is not None:
            self._buffer.fill_zero()   # (before the instruction being built)
        slot = self._buffer.slot
        plain = self._ap is None and self._indirect is None and self._broadcast is None
        if not plain and 0 in self.shape:   # (a plain view is looked at below, on the way)
            self._empty()
        if self._indirect is not None:
            fail("a vector_offset view can only be the source or destination of nisa.dma_copy")
        if self._ti is not None:
            fail("an indirect view (t.indirect(index)) is an operand of nisa.tensor_copy, "
                 "tensor_copy_predicated (dst, predicate), tensor_tensor (dst, data1) and "
                 "nc_matmul (dst, stationary, moving) only", unsupported=True)
        if slot.live is not None:   # on chip: live up to the instruction being emitted
            slot.live.end = len(tracer.instructions)
        if self._ap is not None:
            if slot.kind == "hbm" and slot.used_shape is None:
                slot.used_shape, slot.used_site = self._base_shape, user_site()
            pairs, offset, dtype = self._ap
            if type(offset) is not int:   # a register's: its text now (see _frozen)
                return TileRef(slot, None, (pairs, str(offset), dtype))
            return TileRef(slot, None, self._ap)
        if slot.kind == "hbm":
            if slot.used_shape is None:
                slot.used_shape, slot.used_site = self._base_shape, user_site()
            elif slot.used_shape != self._base_shape:
                # the same bytes in another shape (t.reshape(...) of an HBM tensor): the view
                # as an access pattern over the tensor's flat row-major elements
                if any(isinstance(e, RegExpr) or isinstance(e, tuple)
                       and isinstance(e[0], RegExpr) for e in self._index):
                    fail(f"HBM tensor '{slot.name}' is used with shape "
                         f"{list(self._base_shape)} here and with shape "
                         f"{list(slot.used_shape)} at {slot.used_site.short()}; a reshaped "
                         f"view with a run-time index is not supported",
                         "index the tensor in the shape it was first used in",
                         unsupported=True)
                if 0 in self.shape:
                    self._empty()
                return TileRef(slot, None, self._pattern())
        if self._index == _whole(self._base_shape):
            if 0 in self._base_shape:
                self._empty()
            return TileRef(slot, None, None)
        index = self._index
        for e in index:
            if type(e) is tuple:
                if e[1] == 0:
                    self._empty()
                if type(e[0]) is not int:
                    index = _frozen(index)
            elif type(e) is not int:
                index = _frozen(index)
        return TileRef(slot, index, None)

    def _empty(self) -> None:
        fail(f"an empty view (shape {list(self.shape)}) cannot be an instruction's operand",
             "skip the instruction when the slice is empty (e.g. `if n > 0:`)")

    def box(self) -> tuple[slice, ...] | None:
        """This view as slices of its buffer's own shape, when it is one (no ``.ap()``,
        broadcast, indirect or run-time index): the cheap form of ``elements()``."""
        if self._ap is not None or self._broadcast is not None or self._indirect is not None:
            return None
        out = []
        for e in self._index:
            if isinstance(e, tuple):
                start, size, step = e
                if not isinstance(start, int):
                    return None
                out.append(slice(start, start + (size - 1) * step + 1, step))
            elif isinstance(e, int):
                out.append(slice(e, e + 1))
            else:
                return None
        return tuple(out)

    def elements(self) -> np.ndarray | None:
        """The flat indices (row-major, in elements of the buffer's dtype) of the elements
        this view covers, or None when they are not known while tracing (a register offset)
        or not whole elements of the buffer (a view as a dtype of another size)."""
        pairs, offset, seen_as = self._pattern()
        if not isinstance(offset, (int, np.integer)):
            return None
        if seen_as is not None and seen_as != self._buffer.slot.dtype and (
                _itemsize(seen_as) != _itemsize(self._buffer.slot.dtype)):
            return None
        index = np.array([int(offset)], np.int64)
        for step, count in pairs:
            index = (index[:, None] + np.arange(count, dtype=np.int64) * step).ravel()
        return index

    def region(self) -> tuple:
        """Per base dim (start, stop) covered (steps ignored: a conservative box; an .ap()
        view counts as the whole buffer)."""
        if self._ap is not None:
            return tuple((0, n) for n in self._base_shape)
        out = []
        for e, n in zip(self._index, self._base_shape):
            if isinstance(e, RegExpr) or isinstance(e, tuple) and isinstance(e[0], RegExpr):
                out.append((0, n))   # a run-time position: anywhere in the dim
            elif not isinstance(e, tuple):
                out.append((e, e + 1))
            else:
                out.append((e[0], e[0] + (e[1] - 1) * e[2] + 1))
        return tuple(out)


def _reshape_pairs(pairs, shape) -> list | None:
    """The (step, count) pairs of ``shape`` over the elements ``pairs`` address in row-major
    order, or None when that needs a copy (numpy's rule for reshaping a strided view)."""
    old = [(st, c) for st, c in pairs if c != 1]
    new: list = [None] * len(shape)
    i = j = 0
    while j < len(shape) and shape[j] == 1:
        new[j] = (0, 1)
        j += 1
    while i < len(old):
        if j >= len(shape):
            return None
        i0, j0 = i, j
        have, want = old[i][1], shape[j]
        while have != want:
            if have < want:
                i += 1
                if i >= len(old):
                    return None
                have *= old[i][1]
            else:
                j += 1
                if j >= len(shape):
                    return None
                want *= shape[j]
        for k in range(i0, i):   # the old dims merged here must be evenly strided
            if old[k][0] != old[k + 1][0] * old[k + 1][1]:
                return None
        step = old[i][0]
        for k in range(j, j0 - 1, -1):
            new[k] = (step, shape[k])
            step *= shape[k]
        i += 1
        j += 1
        while j < len(shape) and shape[j] == 1:
            new[j] = (0, 1)
            j += 1
    if j != len(shape) or any(p is None for p in new):
        return None
    return new


SPACES = {"sbuf": Space("sbuf", "sbuf"), "psum": Space("psum", "psum"),
          "hbm": Space("hbm", "hbm"), "shared_hbm": Space("shared_hbm", "hbm"),
          "private_hbm": Space("private_hbm", "hbm")}


# ------------------------------------------------------------------------------------------
# the tracer


def _dim_text(e) -> str:
    """One dim of an index as operand text: an index, or a slice (start, size, step)."""
    if type(e) is not tuple:
        return str(e)
    start, size, step = e
    stop = start + (size - 1) * step + 1
    return f"{start}:{stop}" if step == 1 else f"{start}:{stop}:{step}"


def _frozen(index: tuple) -> tuple:
    """An index with run-time (register) parts, those written as text now: an instruction
    must not keep a register alive (the pool frees a register no variable refers to), and
    the register's number is the one it has now."""
    return tuple([e if type(e) is int or type(e) is tuple and type(e[0]) is int
                  else _dim_text(e) for e in index])


class TileRef:
    """An instruction operand naming a traced tensor, or a view of it: the assembler takes
    its ``view()`` directly; ``str()`` is its assembly text. Both name the tensor's
    declaration, which for an on-chip tile is chosen after the trace (``place_onchip``)."""

    __slots__ = ("ap", "index", "slot")

    def __init__(self, slot: Slot, index: tuple | None, ap: tuple | None) -> None:
        # index None and ap None: the whole tensor; a run-time (register) part of either is
        # kept as its text (``_frozen``), and the view then goes the text path
        self.slot, self.index, self.ap = slot, index, ap

    def __str__(self) -> str:
        name = self.slot.name
        if self.ap is not None:
            pairs, offset, dtype = self.ap
            text = ", ".join(f"[{st}, {c}]" for st, c in pairs)
            return f"ap({name}, [{text}], {offset}" + (f", {dtype})" if dtype else ")")
        if self.index is None:
            return name
        return f"{name}[{', '.join(map(_dim_text, self.index))}]"

    __repr__ = __str__

    def shape_key(self) -> tuple[str, tuple, list[int]] | None:
        """(the declared name, the view but for where it starts, its start in each written
        dim), or None when a register offsets it (asm/direct.py)."""
        name = self.slot.name
        if self.ap is not None:
            view = self.view()
            return None if view is None else (name, view[1], [])
        if self.index is None:
            return name, (), []
        shape = []
        starts = []
        for e in self.index:
            if type(e) is int:
                shape.append(None)
                starts.append(e)
            elif type(e) is tuple and type(e[0]) is int:
                shape.append(e[1:])
                starts.append(e[0])
            else:
                return None
        return name, tuple(shape), starts

    def view(self) -> tuple | None:
        """(declared name, the operand as ``Tile.spec`` writes it), or None when a register
        offsets it (the assembler then reads its text)."""
        if self.ap is not None:
            pairs, offset, dtype = self.ap
            if type(offset) is not int or any(type(st) is not int or type(c) is not int
                                              for st, c in pairs):
                return None
            return self.slot.name, (("ap", offset, (), tuple(map(tuple, pairs)), dtype or ""),)
        if self.index is None:
            return self.slot.name, ()
        spec = []
        for e in self.index:
            if type(e) is int:
                spec.append(("index", e, ()))
            elif type(e) is tuple and type(e[0]) is int:
                start, size, step = e
                spec.append(("slice", start, (), size, step if size > 1 else 1))
            else:
                return None
        return self.slot.name, tuple(spec)


@dataclass
class Tracer:
    target: str = "trn2"
    dialect: str = NKI_VERSION
    """The NKI version the kernel is written in (0.1: it takes ``neuronxcc.nki``'s names)."""
    dma_queues: tuple[int, ...] = tuple(range(16))
    schedule: str = "compiler"
    """How the run models each engine's order (``.schedule``): the compiler's, or program."""
    no_reorder: int = 0
    """Open ``nl.no_reorder()`` blocks: their instructions keep program order."""
    instructions: list[Op] = field(default_factory=list)
    hbm: list[Slot] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    prefixes: dict = field(default_factory=dict)
    tile_bytes: dict = field(default_factory=dict)
    """(kind, dtype, shape) of on-chip tiles allocated so far -> bytes per partition."""
    peak: dict = field(default_factory=lambda: {"sbuf": 0, "psum": 0})
    dma_count: int = 0
    names: set = field(default_factory=set)
    # sequencer registers not in use (r0 handed out first), open device loops (the index of
    # each one's first body instruction), labels made so far
    register_pool: list = field(default_factory=lambda: list(range(63, -1, -1)))
    loops: list = field(default_factory=list)
    label_count: int = 0
    # errors found after the call that caused them returned (a break out of a device loop)
    deferred_errors: list = field(default_factory=list)
    # ranks the collectives' replica groups name (the run needs that many), and the barriers
    # and collectives in program order: (kind, Site, device-loop depth)
    collective_world: int | None = None
    sync_points: list = field(default_factory=list)
    lockstep: object = None
    """While the programs of a grid are traced in lockstep: the ``_lockstep.Lockstep``."""
    cores: int = 1
    """Cores whose memories the programs are placed in (``.target NAME cores=N``): 1, or the
    launch's program count when programs traced in lockstep do not fit one core together."""
    lockstep_used: bool = False
    """Whether the programs were traced in lockstep or interleaved afterwards (their tiles
    may be live together)."""
    sequential: tuple | None = None
    """The instructions and live ranges before ``interleave_programs`` merged them."""
    flushed: list | None = None
    """While a call is traced to be left out (NKI 0.1's ``mask=False``): the pending PSUM
    zero-fills it emitted, (Buffer, view, and the buffer's record of written regions before),
    to be pending again."""
    deep_homes: bool = True
    """Under the compiler's schedule: an SBUF site gets a home per DMA queue (dropped when the
    kernel does not fit with it)."""
    control_flow: bool = False
    """Whether the trace made labels or used sequencer registers (its instructions cannot
    be reordered)."""
    grid: tuple[int, ...] = ()
    """The SPMD launch grid (``kernel[g](...)``); () for a plain call."""
    program: tuple[int, ...] = ()
    """The program being traced: its index along each grid axis."""
    shared: list = field(default_factory=list)
    """HBM tensors program 0 allocated as ``nl.shared_hbm`` / ``nl.hbm``, in order: the other
    programs of a grid get the same tensors back (one tensor shared by every program)."""
    shared_next: int = 0
    constants: dict = field(default_factory=dict)
    """HBM inputs the kernel made itself (``nl.shared_constant``): name -> array."""
    prints: list = field(default_factory=list)
    """(prefix, HBM output name) of each ``nl.device_print``, in program order."""

    # -- SPMD
    def program_id(self, axis: int = 0) -> int:
        if not self.grid:
            if axis != 0:
                fail(f"program_id({axis}): the kernel was launched without a grid")
            return 0
        if not 0 <= axis < len(self.grid):
            fail(f"program_id({axis}): the launch grid {list(self.grid)} has {len(self.grid)} "
                 f"axes")
        return self.program[axis]

    def num_programs(self, axes=None) -> int:
        if axes is None:
            return math.prod(self.grid) if self.grid else 1
        if isinstance(axes, int):
            axes = (axes,)
        out = 1
        for axis in axes:
            if not self.grid:
                if axis != 0:
                    fail(f"num_programs({axis}): the kernel was launched without a grid")
                continue
            if not 0 <= axis < len(self.grid):
                fail(f"num_programs({axis}): the launch grid {list(self.grid)} has "
                     f"{len(self.grid)} axes")
            out *= self.grid[axis]
        return out

    def start_program(self, program: tuple[int, ...]) -> None:
        self.program = program
        self.shared_next = 0

    def shared_hbm_tensor(self, name: str, dtype: str, shape, site: Site) -> NkiTensor:
        """An ``nl.shared_hbm`` tensor: new in the first program of a grid, the same tensor
        (allocated by the same statement) in the others."""
        if not self.program or not any(self.program):
            t = self.hbm_tensor(name, dtype, shape, "scratch", site)
            self.shared.append((t, site))
            return t
        k = self.shared_next
        self.shared_next += 1
        if k >= len(self.shared):
            fail(f"program {list(self.program)} allocates more nl.shared_hbm tensors than "
                 f"program 0; every program of a launch grid shares the same ones",
                 *((("the programs are traced in lockstep between their core_barriers: one "
                     "that allocates here before a barrier the other allocates after parts "
                     "from it (LNC2 programs keep identical control flow)"),)
                   if self.lockstep is not None else ()))
        t, first = self.shared[k]
        if tuple(t.shape) != tuple(shape) or t._buffer.slot.dtype != dtype:
            fail(f"program {list(self.program)} allocates shared_hbm {dtype}{list(shape)} where "
                 f"program 0 allocated {t._buffer.slot.dtype}{list(t.shape)} "
                 f"({first.short()}); every program shares the same tensors")
        return t

    @property
    def target_data(self):
        cached = self.__dict__.get("_target_data")
        if cached is None or cached[0] != self.target:
            from neuronemu.isa.table import load_isa

            cached = self.__dict__["_target_data"] = (self.target,
                                                      load_isa().targets[self.target])
        return cached[1]

    # -- naming
    def unique(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", base) or "t"
        if base[0].isdigit() or re.fullmatch(r"r\d+", base) or base in (
                "inf", "nan", "true", "false"):
            base = "t_" + base
        name, k = base, 1
        while name in self.names:
            name = f"{base}_{k}"
            k += 1
        self.names.add(name)
        return name

    # -- HBM
    def hbm_tensor(self, name: str, dtype: str, shape, role: str, site: Site) -> NkiTensor:
        slot = Slot(self.unique(name), "hbm", dtype, tuple(shape), site, role=role)
        self.hbm.append(slot)
        return NkiTensor(Buffer(slot), tuple(shape))

    # -- on-chip
    def onchip(self, kind: str, dtype: str, shape: tuple[int, ...], site: Site,
               name: str = "", address: int | None = None) -> NkiTensor:
        """A new on-chip tile; its bytes are chosen after the trace, by live range
        (``neuronemu.nki._alloc``). ``address``: a byte offset given by the kernel."""
        size = self.tile_bytes.get((kind, dtype, shape))
        if size is None:
            size = self._tile_bytes(kind, dtype, shape)
        key = (site.filename, site.line, site.column, kind)
        if key not in self.prefixes:
            tag = {"sbuf": "sb", "psum": "ps"}[kind]
            self.prefixes[key] = [self.unique(f"{name or tag}_L{site.line}"), {}]
        slot = Slot("", kind, dtype, shape, site)
        slot.live = Live(slot, len(self.instructions), fixed=address, size=size)
        if self.grid:
            slot.program = self.program_index()
        self.slots.append(slot)
        return NkiTensor(Buffer(slot), shape)

    def _tile_bytes(self, kind: str, dtype: str, shape: tuple[int, ...]) -> int:
        """Bytes per partition of a new on-chip tile of this kind, dtype and shape (checked
        once per such triple: every loop iteration allocates the same tiles)."""
        tdata = self.target_data
        if len(shape) < 2:
            fail(f"on-chip tensors are at least 2-D [partitions, free...], got {list(shape)}")
        if len(shape) > 5:
            fail(f"on-chip tensors have at most 4 free dims, got {list(shape)}")
        if shape[0] > tdata.partitions:
            fail(f"{shape[0]} partitions requested; {kind.upper()} has {tdata.partitions} "
                 f"(the first dim of an on-chip tensor is the partition dim)")
        if min(shape) <= 0:
            fail(f"tensor dims must be positive, got {list(shape)}")
        size = math.prod(shape[1:]) * _itemsize(dtype)
        capacity = (tdata.sbuf_partition_bytes if kind == "sbuf"
                    else tdata.psum_partition_bytes)
        if size > capacity:
            fail(f"{kind.upper()} overflow on {self.target}: this {list(shape)} {dtype} tile "
                 f"needs {size} bytes per partition, more than the "
                 f"{capacity} a partition has")
        self.tile_bytes[(kind, dtype, shape)] = size
        return size

    def interleave_programs(self, starts: list[int]) -> None:
        """The programs of a launch grid traced one after another (``starts``: where each
        program's instructions begin, then the end) as they run on the hardware, side by side:
        their instructions are merged one from each program in turn, so that what every
        program does first comes before what any does later (two LNC2 programs that each
        zero a shared output and then write their half: traced one after the other, the
        second's zeroing would erase the first's half). Tile live ranges move with their
        instructions. Nothing is reordered when a program has device loops or registers;
        ``place_onchip`` goes back to one program after another when the merged programs'
        tiles do not fit in one core together."""
        if self.control_flow or self.sync_points or len(starts) < 3:
            return
        segments = [range(a, b) for a, b in itertools.pairwise(starts)]
        order = []
        for k in range(max(len(seg) for seg in segments)):
            order.extend(seg[k] for seg in segments if k < len(seg))
        position = [0] * len(order)
        for new, old in enumerate(order):
            position[old] = new
        self.sequential = (self.instructions, [(s.live, s.live.start, s.live.end, s.live.fixed)
                                               for s in self.slots])
        self.instructions = [self.instructions[old] for old in order]
        for slot in self.slots:
            live, seg = slot.live, segments[slot.program]
            # allocated before the program's instruction live.start (or after its last)
            live.start = (position[live.start] if live.start < seg.stop
                          else position[seg.stop - 1] + 1 if len(seg) else live.start)
            if live.end >= 0:
                live.end = position[live.end]
        self.lockstep_used = True   # the programs' tiles are live together now

    def _unmerge(self) -> None:
        """Back to the programs one after another (``interleave_programs`` undone)."""
        self.instructions, lives = self.sequential
        for live, start, end, fixed in lives:
            live.start, live.end, live.fixed = start, end, fixed
        self.sequential = None
        self.lockstep_used = False

    def program_index(self) -> int:
        """The row-major number of the grid program being traced (0 without a grid)."""
        if not self.grid or not self.program:
            return 0
        index = 0
        for i, n in zip(self.program, self.grid):
            index = index * n + i
        return index

    _ONE_CORE_EACH = ("on the hardware each program has a core of its own; run one program "
                      "(kernel[1]) or let neuronemu place the tiles (no address=)")

    def _separate_programs(self, capacity: dict[str, int]) -> None:
        """Programs traced in lockstep share this one core's memory, but on the hardware each
        runs on a core of its own: the same ``address=`` in two programs is two tiles. So
        program p's hand-placed tiles move up by p times the span the kernel's addresses use
        (their layout within one program is kept)."""
        if not self.lockstep_used:
            return   # traced one program after another: their tiles are never live together
        for kind in ("sbuf", "psum"):
            fixed = [s.live for s in self.slots if s.kind == kind and s.live.fixed is not None]
            if not fixed:
                continue
            align = self.target_data.psum_bank_bytes if kind == "psum" else _ALIGN
            span = max(t.fixed + t.size for t in fixed)
            span = -(-span // align) * align
            programs = math.prod(self.grid)
            if span * programs > capacity[kind]:
                site = next(t.slot.site for t in fixed if t.fixed + t.size == max(
                    u.fixed + u.size for u in fixed))
                raise NkiUnsupported(
                    f"the {programs} programs of this launch each place tiles by address= "
                    f"over {span} bytes per partition of {kind.upper()}; traced together on "
                    f"one core here they need {span * programs}, more than its "
                    f"{capacity[kind]}", site.location(), (self._ONE_CORE_EACH,))
            for t in fixed:
                t.fixed += t.slot.program * span

    def place_onchip(self) -> None:
        """Choose every tile's bytes (live ranges) and its declaration name: tiles of one
        call site that land on the same bytes with the same type share a declaration."""
        tdata = self.target_data
        capacity = {"sbuf": tdata.sbuf_partition_bytes, "psum": tdata.psum_partition_bytes}
        fixed = [(s.live, s.live.fixed) for s in self.slots if s.live.fixed is not None]
        try:
            if self.cores > 1:
                placement = self._place_per_core(capacity, tdata.psum_bank_bytes)
            else:
                self._separate_programs(capacity)
                placement = place([s.live for s in self.slots], capacity,
                                  tdata.psum_bank_bytes, *self._homes())
        except (Overflow, NkiUnsupported) as error:
            for live, at in fixed:
                live.fixed = at
            if isinstance(error, Overflow) and self.schedule == "compiler":
                # the compiler's extra buffering lasts while memory does: a kernel that does
                # not fit with it is placed without the deeper SBUF rings, then without the
                # 0.1 tile versions
                if self.deep_homes:
                    self.deep_homes = False
                    return self.place_onchip()
                if self._merge_versions():
                    return self.place_onchip()
            if self.sequential is not None:
                # merged, the programs' tiles do not fit in one core together (each program
                # has a core of its own on the hardware): keep them one after the other
                self._unmerge()
                return self.place_onchip()
            if self.lockstep_used and self.cores == 1 and math.prod(self.grid) > 1:
                # programs traced in lockstep cannot go one after the other: each gets the
                # memory of a core of its own, in a logical core of as many (.target cores=)
                self.cores = math.prod(self.grid)
                return self.place_onchip()
            if isinstance(error, Overflow):
                self._overflow(error)
            raise
        self.peak = {k: placement.pool_bytes.get(k, 0) for k in ("sbuf", "psum")}
        self.declared: list[Slot] = []
        for live in placement.placed:
            slot = live.slot
            s = slot.site
            prefix, names = self.prefixes[(s.filename, s.line, s.column, slot.kind)]
            key = (live.offset, slot.dtype, slot.shape)
            if key not in names:
                names[key] = f"{prefix}_{len(names)}"
                slot.name = names[key]
                slot.offset = live.offset
                self.declared.append(slot)
            slot.name = names[key]
            slot.offset = live.offset

    def _homes(self) -> tuple[bool, int]:
        """``place``'s group_buffers and sbuf_homes: under the compiler's schedule, groups
        double-buffered and an SBUF site given a home per DMA queue (docs/timing.md)."""
        if self.schedule != "compiler":
            return False, 2
        return True, len(self.dma_queues) if self.deep_homes else 2

    def _merge_versions(self) -> bool:
        """Undo the 0.1 tile versions (``_versions.merge_versions``); False when none."""
        if not any(s.version_of is not None for s in self.slots):
            return False   # (versions exist only once _versions, which made them, is loaded)
        self.slots, self.sequential = HOOKS["versions"].merge_versions(
            self.instructions, self.slots, self.sequential)
        return True

    def _ordered_runs(self) -> list[tuple[int, int]]:
        """The instructions of ``no_reorder`` blocks as (first, count) runs of instruction
        numbers (labels are not instructions)."""
        return _runs([op.ordered for op in self.instructions if op.label is None])

    def _place_per_core(self, capacity: dict[str, int], bank: int) -> Placement:
        """Program p's tiles in core p's SBUF and PSUM, which follow core p - 1's in the
        logical core's (each program placed as if alone, its address= tiles where it put
        them in its own core)."""
        out = Placement()
        for p in range(self.cores):
            mine = place([s.live for s in self.slots if s.program == p], capacity, bank,
                         *self._homes())
            for live in mine.placed:
                live.offset += p * capacity[live.slot.kind]
            out.placed += mine.placed
            for kind, peak in mine.pool_bytes.items():
                if peak:
                    out.pool_bytes[kind] = max(out.pool_bytes.get(kind, 0),
                                               p * capacity[kind] + peak)
        return out

    def _overflow(self, over: Overflow):
        tile, live, capacity = over.tile, over.live, over.capacity
        slot = tile.slot
        kind = slot.kind
        used = sum(t.size for t in live)
        listed = "; ".join(f"{list(t.slot.shape)} {t.slot.dtype} from {t.slot.site.short()} "
                           f"({t.size} B, last used by the instruction at "
                           f"{self.instructions[t.end].site.short()})" for t in live[:12])
        more = f"; and {len(live) - 12} more" if len(live) > 12 else ""
        raise NkiError(
            f"{kind.upper()} overflow on {self.target}: this {list(slot.shape)} {slot.dtype} "
            f"tile needs {tile.size} bytes per partition; {len(live)} tiles live here hold "
            f"{used} of the {capacity} bytes (a contiguous {tile.size}-byte gap is needed)",
            slot.site.location(),
            (f"tiles live at this line (bytes per partition): {listed}{more}",
             ("a tile's bytes are free after the last instruction that uses it; smaller "
              "tiles, or using tiles before allocating the next ones, make the kernel fit")))

    # -- instructions
    def emit(self, mnemonic: str, *operands: str, **kwargs) -> None:
        if len(self.instructions) >= MAX_TRACED:
            fail(f"the kernel has made {MAX_TRACED:,} instructions while being traced, the most "
                 f"one kernel may have (an endless Python loop?)",
                 "Python loops unroll when a kernel is traced (docs/nki.md): every iteration "
                 "adds its instructions; the limit is the assembler's for unrolled code")
        op = Op(mnemonic, operands, kwargs, user_site())
        op.ordered = self.no_reorder > 0
        self.instructions.append(op)

    def label(self, name: str) -> None:
        self.control_flow = True
        self.instructions.append(Op(None, (), {}, user_site(), label=name))

    def new_label(self, base: str) -> str:
        self.label_count += 1
        return f"{base}_{self.label_count}"

    def register(self):
        """A free sequencer register (``VirtualRegister``), returned to the pool when dropped."""
        from neuronemu.nki._dynamic import VirtualRegister

        self.control_flow = True
        if not self.register_pool:
            import gc

            gc.collect()   # registers only an unreachable cycle still held
        if not self.register_pool:
            fail("all 64 sequencer registers are in use (registers are freed when no "
                 "variable refers to them)")
        return VirtualRegister(self.register_pool.pop(), self.register_pool)

    def next_queue(self) -> int:
        q = self.dma_queues[self.dma_count % len(self.dma_queues)]
        self.dma_count += 1
        return q

    # -- the assembly file
    def assembly(self, name: str, kernel_site: Site) -> tuple[str, list[Op], dict[int, Site]]:
        """(the declarations as assembly text, the instructions, generated line -> kernel
        frame). The instructions' lines follow the declarations' (``Op.line``); their text,
        ``assembly_text``, is written only when asked for."""
        header = (f"# generated by neuronemu.nki (NKI {self.dialect} dialect) from "
                  f"{kernel_site.short()} ({kernel_site.function}); do not edit")
        policy = ("# DMA queue policy: round-robin over queues "
                  f"{','.join(map(str, self.dma_queues))} in program order")
        if self.deferred_errors:
            raise self.deferred_errors[0]
        lines = [header, policy, f".target {self.target}"]
        if self.schedule != "program":   # program order is what a .s file gets by default
            lines.append(f".schedule {self.schedule}")
            lines += [f".no_reorder {first}, {count}    # nl.no_reorder()"
                      for first, count in self._ordered_runs()]
        source_map: dict[int, Site] = {}
        for slot in self.hbm:
            if slot.role == "scratch" and slot.used_shape is None:
                continue
            shape = slot.used_shape or slot.shape
            dims = ", ".join(map(str, shape))
            lines.append(f".hbm {slot.name} {slot.dtype}[{dims}] {slot.role}")
            source_map[len(lines)] = slot.site
        self.place_onchip()
        if self.cores > 1:   # each program in a core of its own: a logical core of them all
            lines[2] = (f".target {self.target} cores={self.cores}    # one core's SBUF and "
                        f"PSUM for each program of the launch")
        pools = {}
        for kind in ("sbuf", "psum"):
            if self.peak[kind]:
                pools[kind] = self.unique(f"{kind}_pool")
                size = -(-self.peak[kind] // _ALIGN) * _ALIGN
                lines.append(f".{kind} {pools[kind]} uint8[{self.target_data.partitions}, "
                             f"{size}] at=0    # tiles are placed in it by live range")
        for slot in self.declared:
            dims = ", ".join(map(str, slot.shape))
            lines.append(f".{slot.kind} {slot.name} {slot.dtype}[{dims}] "
                         f"alias={pools[slot.kind]} at={slot.offset}    # {slot.site.short()}")
            source_map[len(lines)] = slot.site
        line = len(lines)
        for op in self.instructions:
            line += 1
            op.line = line
            source_map[line] = op.site
        return "\n".join(lines) + "\n", self.instructions, source_map


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """(first, count) of each run of True in ``flags``."""
    runs: list[tuple[int, int]] = []
    for i, flag in enumerate(flags):
        if not flag:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs


def render(op: Op) -> str:
    """An instruction's line of the generated ``.s``: with the kernel line it came from."""
    return f"    {op.text}    # {op.site.short()}"


def assembly_text(header: str, ops: list[Op]) -> str:
    """The whole generated ``.s``: the declarations, then every instruction's line."""
    return header + "".join([render(op) + "\n" for op in ops])


_CURRENT: list[Tracer] = []


def tracer() -> Tracer:
    if not _CURRENT:
        fail("nki.isa / nki.language calls need a kernel being traced: call the kernel through "
             "nki.simulate(kernel)(...), an @nki.jit kernel, or neuronemu.nki.run")
    return _CURRENT[-1]


def scalar_text(value) -> str:
    """An fp32 immediate as assembly text."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def map_location(location: Location | None, asm_name: str,
                 source_map: dict[int, Site]) -> tuple[Location | None, str | None]:
    """The kernel's Python location for a location in the generated assembly, and a note that
    names the generated line (None, None when the location is not in the generated file)."""
    if location is None or location.source.name != asm_name:
        return None, None
    site = source_map.get(location.line)
    if site is None:
        return None, None
    text = location.source.line(location.line).strip()
    return site.location(), f"generated instruction {asm_name}:{location.line}: {text}"


def map_error(error: NeuronemuError, asm_name: str, source_map: dict[int, Site]) -> None:
    """Point ``error`` (and every error it lists) at the kernel's Python line, in place."""
    for err in error.errors:
        loc, note = map_location(err.location, asm_name, source_map)
        if loc is not None:
            err.location = loc
            err.notes = tuple(err.notes) + (note,)

_index_tiles.tile_type = NkiTensor   # (a tile of indices in a 0.1 key: a gather)
