"""The tracer behind ``neuronemu.nki``: proxy tensors, the call-site allocator, the emitter.

A kernel runs as ordinary Python with ``NkiTensor`` proxies for its arguments. Every
``nki.isa`` call (and every ``nki.language`` wrapper, which expands to ``nki.isa`` calls)
appends one neuronemu instruction, as text, to the current ``Tracer``, together with the user's
Python frame that made the call. Python control flow runs natively: ``range``/``affine_range``
loops unroll, ``if`` on Python values is resolved, exactly as the NKI compiler's
specialisation stage does. At the end the tracer writes an assembly file whose every
instruction carries a ``# kernel.py:LINE`` comment, and keeps the map generated line -> Python
frame that ``map_error`` uses to point assembler and run-time diagnostics at the kernel's line.

On-chip allocation: each ``nl.ndarray(buffer=nl.sbuf/psum)`` call site owns a ring of
physical slots (``.sbuf``/``.psum`` declarations). A slot is free again when the Python object
that owned it is garbage collected (a weakref finaliser), so ``t = nl.ndarray(...)`` in a loop
body gets two slots (the previous iteration's ``t`` is still bound while the next one is
allocated): double buffering, as the compiler gives ``affine_range`` bodies. A list of tiles
kept alive gets one slot per tile. Placement mirrors the assembler's bump allocator (4-byte
alignment, PSUM tiles never straddle a 2 KiB bank), so capacity errors are reported here, at
the allocating Python line, before anything is assembled.
"""

from __future__ import annotations

import linecache
import math
import os
import sys
import weakref
from dataclasses import dataclass, field

import numpy as np

from neuronemu.errors import NeuronemuError
from neuronemu.nki import _dynamic
from neuronemu.nki._dynamic import RegExpr
from neuronemu.source import Location, SourceFile

NKI_VERSION = "0.6.0"
"""The NKI dialect mirrored: ``import nki`` (NKI 0.2+ "beta 2" API) as of Neuron SDK 2.32."""

HOOKS: dict = {}
"""``nl`` and ``nisa`` modules, registered by them on import (tensor operators call them; an
import from here would be a cycle)."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
MAX_TRACED = 200_000
"""Instructions one traced kernel may make: neuronemu.asm.macros.MAX_LINES, the lines an
unrolled assembly kernel may have (about 1 GB to assemble). An endless Python loop in a kernel
stops here with a located error instead of growing the tracer's list without end."""
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
        return f"{os.path.basename(self.filename)}:{self.line}"

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
            ours = _OURS[name] = os.path.dirname(os.path.abspath(name)) == _PACKAGE_DIR
        if not ours:
            break
        frame = frame.f_back
    if frame is None:   # called from inside the package only (cannot happen from a kernel)
        return Site("<unknown>", 1, "<unknown>")
    code = frame.f_code
    key = (code, frame.f_lasti, frame.f_lineno)
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


def unsupported_name(namespace: str, name: str):
    """A module ``__getattr__`` result for an NKI name this subset lacks: calling it fails at
    the kernel's line (so importing or referencing it outside a kernel does not)."""
    if name.startswith("__"):
        raise AttributeError(name)

    def unsupported(*args, **kwargs):
        fail(f"nki.{namespace}.{name} is not supported by neuronemu.nki (NKI 0.6.0 subset; "
             f"see docs/nki.md)", unsupported=True)

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


def dtype_name(dtype) -> str:
    """neuronemu's name of a numpy / ml_dtypes dtype (or of a dtype name)."""
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


@dataclass
class Slot:
    """One physical on-chip declaration (``.sbuf``/``.psum``) or HBM tensor."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    site: Site
    offset: int = 0
    free: bool = False
    role: str = "scratch"          # HBM: input | output | scratch
    used_shape: tuple[int, ...] | None = None
    used_site: Site | None = None

    @property
    def bytes_per_partition(self) -> int:
        from neuronemu.isa import dtypes

        return math.prod(self.shape[1:]) * dtypes.get(self.dtype).itemsize


class Buffer:
    """What one ``nl.ndarray`` (or kernel argument) allocated; frees its slot when dropped."""

    def __init__(self, slot: Slot):
        self.slot = slot
        self.written: list[tuple] = []     # PSUM regions written (for accumulate auto-detect)
        # device loops open when it was allocated (a PSUM tile from outside a loop is written
        # by every iteration of it)
        self.loop_depth = len(_CURRENT[-1].loops) if _CURRENT else 0
        if slot.kind != "hbm":
            weakref.finalize(self, _release, slot)


def _release(slot: Slot) -> None:
    slot.free = True


# ------------------------------------------------------------------------------------------
# tensors


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


class NkiTensor:
    """A view of a buffer: per base dim, an int (dim dropped) or (start, size, step)."""

    __array_priority__ = 1000   # numpy scalars on the left defer to our operators

    def __init__(self, buffer: Buffer, base_shape: tuple[int, ...], index=None,
                 broadcast: int | None = None):
        self._buffer = buffer
        self._base_shape = tuple(base_shape)
        self._index = (tuple((0, n, 1) for n in base_shape) if index is None else tuple(index))
        self._broadcast = broadcast   # partitions a [1, N] row is broadcast to (DMA only)
        self._ap = None               # (pairs, offset, dtype name | None) of a .ap() view
        self._indirect = None         # (HBM tensor, [P, 1] row index tile): vector_offset rows

    # -- numpy-like attributes
    @property
    def shape(self) -> tuple[int, ...]:
        if self._ap is not None:
            return tuple(c for _, c in self._ap[0])
        if self._indirect is not None:
            return self._indirect[2]
        dims = tuple(e[1] for e in self._index if isinstance(e, tuple))
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
        fail("the truth value of a tensor is a run-time value; a traced kernel's Python "
             "control flow can only depend on Python values (shapes, loop indices)",
             "use nl.fori_loop / nisa.* selects for data-dependent control flow (not supported "
             "here)", unsupported=True)
        return False

    def __iter__(self):
        fail("iterating over a tensor is not supported; index it with t[i] or slices",
             unsupported=True)

    # -- indexing
    def __getitem__(self, key) -> NkiTensor:
        if self._ap is not None:
            fail("indexing an .ap() view is not supported; fold the slice into the pattern",
                 unsupported=True)
        if self._broadcast is not None:
            fail("indexing a broadcast view is not supported; slice before broadcast_to",
                 unsupported=True)
        if not isinstance(key, tuple):
            key = (key,)
        view_dims = [i for i, e in enumerate(self._index) if isinstance(e, tuple)]
        if sum(1 for k in key if k is Ellipsis) > 1:
            fail("an index can only have a single ellipsis ('...')")
        if Ellipsis in key:
            at = key.index(Ellipsis)
            fill = len(view_dims) - (len(key) - 1)
            key = key[:at] + (slice(None),) * fill + key[at + 1:]
        if len(key) > len(view_dims):
            fail(f"too many indices for a tensor of shape {list(self.shape)}: {len(key)}")
        index = list(self._index)
        for k, dim in zip(key, view_dims):
            start, size, step = index[dim]
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
                if n == 0:
                    fail(f"slice {k.start}:{k.stop} of a dim of size {size} is empty")
                index[dim] = (start + s0 * step, n, step * st)
            else:
                fail(f"unsupported index {k!r} (ints, slices, nl.ds and ... are supported)",
                     unsupported=True)
        return NkiTensor(self._buffer, self._base_shape, index)

    def __setitem__(self, key, value):
        if isinstance(value, NkiTensor):
            isa = HOOKS["nisa"]
            dst = self[key]
            if dst.kind == "hbm" or value.kind == "hbm":
                isa.dma_copy(dst, value)
            else:
                isa.tensor_copy(dst, value)
            return
        fail("assigning a Python value into a tensor is not supported; use nisa.memset",
             unsupported=True)

    # -- views
    def _is_whole(self) -> bool:
        return (self._index == tuple((0, n, 1) for n in self._base_shape)
                and self._broadcast is None and self._ap is None)

    def reshape(self, *shape) -> NkiTensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(math.prod(self.shape) // known if s == -1 else s for s in shape)
        if math.prod(shape) != math.prod(self.shape):
            fail(f"cannot reshape a tensor of shape {list(self.shape)} into {list(shape)}")
        if shape == self.shape:
            return self
        if self.kind != "hbm" or not self._is_whole():
            fail("reshape is supported only for whole HBM tensors (an on-chip or sliced view "
                 "needs the assembler's access-pattern operands, not landed yet)",
                 unsupported=True)
        return NkiTensor(self._buffer, shape)

    def broadcast_to(self, shape) -> NkiTensor:
        shape = tuple(int(s) for s in shape)
        if shape == self.shape:
            return self
        if (len(shape) == len(self.shape) and self.shape[0] == 1 and shape[1:] == self.shape[1:]
                and self._broadcast is None):
            return NkiTensor(self._buffer, self._base_shape, self._index, broadcast=shape[0])
        fail(f"broadcast_to {list(shape)} from {list(self.shape)}: only a one-partition row "
             f"[1, ...] broadcast across partitions (by DMA) is supported", unsupported=True)

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None,
           indirect_dim: int = 0, dtype=None, **kwargs) -> NkiTensor:
        """A raw access pattern over this tensor's buffer (NKI ``.ap()``): ``pattern`` is
        [[step, count], ...], the partition pair first, steps in elements of the flat
        row-major buffer from the first element of this view plus ``offset``. Lowered to the
        assembler's ``ap(...)`` operand. ``scalar_offset`` (a register or a [1, 1] tile) adds
        register * the step of pattern dim ``indirect_dim`` to the offset at run time;
        ``vector_offset`` (a [P, 1] tile of row numbers) makes a row gather/scatter view of an
        HBM tensor for ``nisa.dma_copy``."""
        for key in kwargs:
            fail(f"Tensor.ap({key}=...) is not supported (static patterns only)",
                 unsupported=True)
        if self._ap is not None or self._broadcast is not None:
            fail("Tensor.ap() of an .ap() or broadcast view is not supported", unsupported=True)
        try:
            pairs = [(int(step), int(count)) for step, count in pattern]
        except (TypeError, ValueError):
            fail(f"pattern must be a list of [step, count] pairs, got {pattern!r}")
        if not pairs or any(c < 1 or st < 0 for st, c in pairs):
            fail(f"pattern {pattern!r}: counts must be >= 1 and steps >= 0")
        strides = [math.prod(self._base_shape[i + 1:]) for i in range(len(self._base_shape))]
        start = 0
        for e, stride in zip(self._index, strides):
            start += (e[0] if isinstance(e, tuple) else e) * stride
        offset = 0 if offset is None else offset
        if not isinstance(offset, (int, np.integer, RegExpr)):
            fail(f"offset must be an int, got {type(offset).__name__}")
        dim = int(indirect_dim)
        if not 0 <= dim < len(pairs):
            fail(f"indirect_dim={dim} is not a dim of the {len(pairs)}-dim pattern")
        if scalar_offset is not None and vector_offset is not None:
            fail("scalar_offset and vector_offset are mutually exclusive (as in NKI)")
        if scalar_offset is not None:
            offset = offset + self._scalar_offset(scalar_offset) * pairs[dim][0]
        if vector_offset is not None:
            return self._vector_offset(pairs, dim, start + offset, dtype, vector_offset)
        view = NkiTensor(self._buffer, self._base_shape)
        view._ap = (pairs, start + offset, None if dtype is None else dtype_name(dtype))
        return view

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
        """``.ap(vector_offset=idx, indirect_dim=0)`` of an HBM tensor: partition p reads or
        writes row idx[p] (``dma.gather`` / ``dma.scatter`` of whole rows)."""
        if not isinstance(index, NkiTensor) or index.kind == "hbm":
            fail("vector_offset must be an on-chip [P, 1] integer tile")
        row = math.prod(self._base_shape[1:])
        whole_rows = (len(pairs) == 2 and pairs[1] == (1, row) and pairs[0][0] == row)
        if (self.kind != "hbm" or dim != 0 or not whole_rows or dtype is not None
                or offset != 0 or len(self._base_shape) != 2 or not self._is_whole()):
            fail("vector_offset is supported for whole rows of a 2-D HBM tensor: "
                 f"t.ap([[{row}, P], [1, {row}]], vector_offset=idx, indirect_dim=0)",
                 unsupported=True)
        view = NkiTensor(self._buffer, self._base_shape)
        view._indirect = (self, index, (pairs[0][1], row))
        return view

    def indirect(self, index, num_elem=None):
        fail("Tensor.indirect() (NeuronCore-v4 tensor indirection on compute engines) is not "
             "modelled here", "gather rows by DMA instead: t.ap([[F, P], [1, F]], "
             "vector_offset=idx, indirect_dim=0) with nisa.dma_copy, or nisa.local_gather / "
             "nisa.nc_n_gather on chip", unsupported=True)

    @property
    def T(self):
        fail("t.T (a transposed view) is not supported; use nisa.nc_transpose / nl.transpose",
             unsupported=True)

    def view(self, dtype):
        fail("Tensor.view(dtype) (reinterpreting a buffer) is not supported yet",
             unsupported=True)

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
        fail("'+=' into a tile (the NKI 0.1 PSUM accumulation idiom) is not supported; in the "
             "0.2+ dialect call nisa.nc_matmul(dst=psum_tile, ...) again (it accumulates) or "
             "nisa.tensor_tensor(dst=t, data1=t, data2=x, op=nl.add)", unsupported=True)

    # -- operand text
    def operand(self, tracer: Tracer) -> str:
        slot = self._buffer.slot
        if self._indirect is not None:
            fail("a vector_offset view can only be the source or destination of nisa.dma_copy")
        if self._ap is not None:
            pairs, offset, dtype = self._ap
            text = ", ".join(f"[{st}, {c}]" for st, c in pairs)
            return f"ap({slot.name}, [{text}], {offset}" + (f", {dtype})" if dtype else ")")
        if slot.kind == "hbm":
            if slot.used_shape is None:
                slot.used_shape, slot.used_site = self._base_shape, user_site()
            elif slot.used_shape != self._base_shape:
                fail(f"HBM tensor '{slot.name}' is used with shape {list(self._base_shape)} here "
                     f"and with shape {list(slot.used_shape)} at {slot.used_site.short()}; one HBM "
                     f"tensor can have one shape until the assembler's access-pattern syntax "
                     f"lands", unsupported=True)
        if self._index == tuple((0, n, 1) for n in self._base_shape):
            return slot.name
        parts = []
        for e in self._index:
            if not isinstance(e, tuple):
                parts.append(str(e))
            else:
                start, size, step = e
                stop = start + (size - 1) * step + 1
                parts.append(f"{start}:{stop}" if step == 1 else f"{start}:{stop}:{step}")
        return f"{slot.name}[{', '.join(parts)}]"

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


SPACES = {"sbuf": Space("sbuf", "sbuf"), "psum": Space("psum", "psum"),
          "hbm": Space("hbm", "hbm")}


# ------------------------------------------------------------------------------------------
# the tracer


@dataclass
class Emitted:
    text: str
    site: Site


@dataclass
class Tracer:
    target: str = "trn2"
    dma_queues: tuple[int, ...] = tuple(range(16))
    instructions: list[Emitted] = field(default_factory=list)
    hbm: list[Slot] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)
    rings: dict = field(default_factory=dict)
    prefixes: dict = field(default_factory=dict)
    next_offset: dict = field(default_factory=lambda: {"sbuf": 0, "psum": 0})
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

    @property
    def target_data(self):
        from neuronemu.isa.table import load_isa

        return load_isa().targets[self.target]

    # -- naming
    def unique(self, base: str) -> str:
        import re

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
               name: str = "") -> NkiTensor:
        tdata = self.target_data
        if len(shape) < 2:
            fail(f"on-chip tensors are at least 2-D [partitions, free...], got {list(shape)}")
        if len(shape) > 5:
            fail(f"on-chip tensors have at most 4 free dims, got {list(shape)}")
        if shape[0] > tdata.partitions:
            fail(f"{shape[0]} partitions requested; {kind.upper()} has {tdata.partitions} "
                 f"(the first dim of an on-chip tensor is the partition dim)")
        if any(s <= 0 for s in shape):
            fail(f"tensor dims must be positive, got {list(shape)}")
        key = (site.filename, site.line, site.column, kind, dtype, shape)
        ring = self.rings.setdefault(key, [])
        for slot in ring:
            if slot.free:
                slot.free = False
                return NkiTensor(Buffer(slot), shape)
        if key not in self.prefixes:
            tag = {"sbuf": "sb", "psum": "ps"}[kind]
            self.prefixes[key] = self.unique(f"{name or tag}_L{site.line}")
        prefix = self.prefixes[key]
        slot = Slot(f"{prefix}_{len(ring)}", kind, dtype, shape, site)
        if not self._place(slot):
            # out of room: borrow a free slot of the same type from another call site
            for other in self.slots:
                if (other.free and other.kind == kind and other.dtype == dtype
                        and other.shape == shape):
                    other.free = False
                    return NkiTensor(Buffer(other), shape)
            self._overflow(slot)
        self.names.add(slot.name)
        ring.append(slot)
        self.slots.append(slot)
        return NkiTensor(Buffer(slot), shape)

    def _place(self, slot: Slot) -> bool:
        tdata = self.target_data
        size = slot.bytes_per_partition
        offset = -(-self.next_offset[slot.kind] // _ALIGN) * _ALIGN
        capacity = (tdata.sbuf_partition_bytes if slot.kind == "sbuf"
                    else tdata.psum_partition_bytes)
        if slot.kind == "psum":
            bank = tdata.psum_bank_bytes
            if size > bank or offset // bank != (offset + size - 1) // bank:
                offset = -(-offset // bank) * bank
        if offset + size > capacity:
            return False
        slot.offset = offset
        self.next_offset[slot.kind] = offset + size
        self.peak[slot.kind] = offset + size
        return True

    def _overflow(self, slot: Slot):
        tdata = self.target_data
        kind = slot.kind
        capacity = tdata.sbuf_partition_bytes if kind == "sbuf" else tdata.psum_partition_bytes
        per_site: dict = {}
        for s in self.slots:
            if s.kind == kind:
                k = s.site.short()
                n, b = per_site.get(k, (0, 0))
                per_site[k] = (n + 1, b + s.bytes_per_partition)
        used = "; ".join(f"{k}: {n} slot(s), {b} B" for k, (n, b) in
                         sorted(per_site.items(), key=lambda kv: -kv[1][1]))
        fail(f"{kind.upper()} overflow on {self.target}: this {list(slot.shape)} {slot.dtype} "
             f"tile needs {slot.bytes_per_partition} bytes per partition, "
             f"{self.next_offset[kind]} of {capacity} are taken",
             f"allocated by call site (bytes per partition): {used}",
             "a tile stays allocated while a Python variable or list still refers to it; "
             "smaller tiles or fewer live tiles make the kernel fit")

    # -- instructions
    def emit(self, mnemonic: str, *operands: str, **kwargs) -> None:
        if len(self.instructions) >= MAX_TRACED:
            fail(f"the kernel has made {MAX_TRACED:,} instructions while being traced, the most "
                 f"one kernel may have (an endless Python loop?)",
                 "Python loops unroll when a kernel is traced (docs/nki.md): every iteration "
                 "adds its instructions; the limit is the assembler's for unrolled code")
        args = list(operands) + [f"{k}={v}" for k, v in kwargs.items() if v is not None]
        self.instructions.append(Emitted(f"{mnemonic} {', '.join(args)}", user_site()))

    def label(self, name: str) -> None:
        self.instructions.append(Emitted(f"{name}:", user_site()))

    def new_label(self, base: str) -> str:
        self.label_count += 1
        return f"{base}_{self.label_count}"

    def register(self):
        """A free sequencer register (``VirtualRegister``), returned to the pool when dropped."""
        from neuronemu.nki._dynamic import VirtualRegister

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
    def assembly(self, name: str, kernel_site: Site) -> tuple[str, dict[int, Site]]:
        header = (f"# generated by neuronemu.nki (NKI {NKI_VERSION} dialect) from "
                  f"{kernel_site.short()} ({kernel_site.function}); do not edit")
        policy = ("# DMA queue policy: round-robin over queues "
                  f"{','.join(map(str, self.dma_queues))} in program order")
        if self.deferred_errors:
            raise self.deferred_errors[0]
        lines = [header, policy, f".target {self.target}"]
        source_map: dict[int, Site] = {}
        for slot in self.hbm:
            if slot.role == "scratch" and slot.used_shape is None:
                continue
            shape = slot.used_shape or slot.shape
            dims = ", ".join(map(str, shape))
            lines.append(f".hbm {slot.name} {slot.dtype}[{dims}] {slot.role}")
            source_map[len(lines)] = slot.site
        for slot in self.slots:
            dims = ", ".join(map(str, slot.shape))
            lines.append(f".{slot.kind} {slot.name} {slot.dtype}[{dims}]    "
                         f"# {slot.site.short()}")
            source_map[len(lines)] = slot.site
        for ins in self.instructions:
            lines.append(f"    {ins.text}    # {ins.site.short()}")
            source_map[len(lines)] = ins.site
        return "\n".join(lines) + "\n", source_map


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
