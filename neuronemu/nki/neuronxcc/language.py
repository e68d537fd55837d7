"""``neuronxcc.nki.language``: the names of ``nki.language``, and NKI 0.1's own: ``arange``,
``mgrid`` (index tiles), ``par_dim``, and ``mask=`` on ``load`` and ``store``."""

from __future__ import annotations

import functools

import numpy as np

from neuronemu.nki import isa as _isa
from neuronemu.nki import language as _language
from neuronemu.nki._index_tiles import (  # noqa: F401
    GatherView,
    MaskedView,
    arange,
    mask_boxes,
    mask_of,
    mgrid,
)
from neuronemu.nki._trace import NkiTensor, Space, fail, tracer
from neuronemu.nki.neuronxcc._blocks import BlockTensor


def __getattr__(name: str):
    """Every other name is ``nki.language``'s (a name neither has is a located error there),
    a function taking 0.1's ``mask=`` too (``_masked``)."""
    value = getattr(_language, name)
    if not callable(value) or isinstance(value, type):
        return value
    wrapped = _masked(value)
    if name in _ALLOCATING:
        wrapped = _with_blocks(wrapped)
    globals()[name] = wrapped   # (made once: later lookups find it here)
    return wrapped


_ALLOCATING = ("ndarray", "zeros", "ones", "full")
"""Calls that make a tensor of a shape, where 0.1 marks the partition dim by ``nl.par_dim``
(``_with_blocks``)."""


def _with_blocks(func):
    """``func`` taking a shape whose partition dim is ``nl.par_dim(P)`` after block dims
    (``(n, nl.par_dim(128), 512)``): a ``BlockTensor`` of n tiles of [128, 512], each made by
    ``func`` with the tile's shape when first used."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        shape = args[0] if args else kwargs.get("shape")
        at = next((i for i, d in enumerate(shape) if isinstance(d, par_dim)), 0) if (
            isinstance(shape, (tuple, list))) else 0
        on_chip = not any(isinstance(a, Space) and a.kind == "hbm"
                          for a in (*args, *kwargs.values()))
        if not at or not on_chip:   # (an HBM tensor's par_dim marks nothing)
            return func(*args, **kwargs)
        shape = tuple(shape)
        rest, kw = args[1:], dict(kwargs)
        kw.pop("shape", None)
        return BlockTensor(shape[:at], shape[at:], lambda tile: func(tile, *rest, **kw))
    return call


def _masked(func):
    """``func`` with NKI 0.1's ``mask=``: the call makes its whole new tile (the points the
    mask leaves out are undefined in NKI too, and a later masked store or assignment never
    moves them), and the tile remembers the mask, so that assigning it into another tile
    (``t[...] = nl.exp(x, mask=m)``) writes the points it keeps only."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        mask = kwargs.pop("mask", None)
        if isinstance(mask, (bool, np.bool_)) and not mask:
            return _left_out(func, args, kwargs)
        result = func(*args, **kwargs)
        if mask is not None and isinstance(result, NkiTensor):
            result._masked = mask_of(mask, len(result.shape))
        return result
    return call


def _left_out(func, args, kwargs):
    """A call with ``mask=False`` (a condition on loop variables that fails): 0.1 emits no
    instruction for it. It is traced for its result (a tile of the right shape and dtype,
    holding nothing, assigned nowhere), then its instructions are dropped; a PSUM zero-fill
    it flushed is pending again."""
    tr = tracer()
    before = len(tr.instructions)
    tr.flushed = flushed = []
    try:
        result = func(*args, **kwargs)
    finally:
        tr.flushed = None
    if any(op.label is not None for op in tr.instructions[before:]):
        fail("a call with mask=False that makes device loops is not supported", unsupported=True)
    del tr.instructions[before:]
    for buffer, view, written, mask, count in flushed:
        buffer.pending_zero = view   # (and unwritten, as it was)
        buffer.written, buffer.written_mask, buffer.written_count = written, mask, count
    if isinstance(result, NkiTensor):
        result._masked = mask_of(False, len(result.shape))
    return result


def static_cast(x, dtype):
    """``nl.static_cast(x, dtype)``: a numpy array (0.1's tests make inputs with it) as
    ``dtype`` (a bfloat16 or float8 dtype too); a tile, copied into a new tile of ``dtype``
    (``nisa.tensor_copy``)."""
    if isinstance(x, NkiTensor):
        out = _language.ndarray(x.shape, dtype, buffer=_language.sbuf)
        _isa.tensor_copy(dst=out, src=x)
        return out
    return np.asarray(x).astype(dtype)


def rand(shape, dtype=np.float32, **kwargs) -> NkiTensor:
    """``nl.rand(shape[, dtype])``: 0.1's dtype is float32 unless given."""
    return _masked(_language.rand)(shape, dtype, **kwargs)


def loop_reduce(x, op, loop_indices=None, dtype=None, mask=None, **kwargs):
    """``t[k] = nl.loop_reduce(x, op=np.add, loop_indices=(i,))`` in a loop: each iteration
    combines x into t[k] (``t[k] = op(t[k], x)``, one ``tensor_tensor``; t[k] is set before the
    loop, as 0.1 requires). ``dtype`` is the accumulator's own (t's)."""
    if not isinstance(x, NkiTensor):
        fail(f"nl.loop_reduce reduces a tile, not {type(x).__name__}")
    view = x[...]
    view._accumulate = op
    view._masked = mask_of(mask, len(x.shape))
    return view


class fp32:   # (NKI's name)
    """``nl.fp32``: float32's limits, as 0.1 kernels name them (``nl.fp32.min`` fills a
    running maximum)."""

    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)


class nc(int):   # (NKI's name)
    """``nl.nc(n)``: ``n`` physical NeuronCores in an SPMD launch grid (``spmd_dim``)."""


def spmd_dim(*sizes) -> int:
    """``nl.spmd_dim(n, nl.nc(2))``: a launch-grid dim of ``n`` instances on each of 2 cores,
    ``2 * n`` in all (``nl.program_id`` counts them all; here the instances run one after
    another on one core, as the cores would compute them)."""
    total = 1
    for size in sizes:
        total *= int(size)
    return total


class par_dim(int):   # (NKI's name)
    """``nl.par_dim(P)``: the partition dim of an on-chip tensor's shape (its first dim here,
    so it is the number itself)."""


def load(src, dtype=None, mask=None, **kwargs) -> NkiTensor:
    """``nl.load(src[, mask=])``: a new SBUF tile holding ``src``; with a mask, only the
    points it keeps are loaded (one DMA per box of them), and only they need lie inside the
    tensor."""
    if isinstance(src, GatherView) and mask is None:
        src = src.whole()
    if mask is None:
        if isinstance(src, MaskedView):
            src.fail()
        if isinstance(src, NkiTensor) and len(src.shape) < 2 and not kwargs:
            # a 1-dim access (a[0:128, j]) loads as a [128, 1] column, one element as a
            # [1, 1] tile, as 0.1 makes them
            tile = _language.ndarray((*src.shape, 1) if src.shape else (1, 1),
                                     dtype or src.dtype, buffer=_language.sbuf)
            _isa.dma_copy(tile, src)
            return tile
        return _language.load(src, dtype=dtype, **kwargs)
    if not isinstance(src, (NkiTensor, MaskedView, GatherView)):
        fail(f"nl.load needs a tensor, got {type(src).__name__}")
    tile = _language.ndarray(src.shape, dtype or src.dtype, buffer=_language.sbuf)
    for box in mask_boxes(mask, src.shape):
        part = src.part(box) if isinstance(src, (MaskedView, GatherView)) else src[box]
        _isa.dma_copy(tile[box], part)
    return tile


def store(dst, value, mask=None, **kwargs) -> None:
    """``nl.store(dst, value[, mask=])``; with a mask, only the points it keeps are written
    (one DMA per box of them), and only they need lie inside the tensor."""
    if isinstance(dst, GatherView) and mask is None:
        dst = dst.whole()
    if isinstance(value, (int, float, np.integer, np.floating)) and isinstance(
            dst, (NkiTensor, MaskedView)):
        # a number stored (0.1: effectively a memset of the tensor): a tile of it, stored
        tile = _language.full(dst.shape, value, dst.dtype, buffer=_language.sbuf)
        return store(dst, tile, mask=mask, **kwargs)
    if mask is None:
        if isinstance(dst, MaskedView):
            dst.fail()
        return _language.store(dst, value, **kwargs)
    if not isinstance(dst, (NkiTensor, MaskedView, GatherView)):
        fail(f"nl.store needs a tensor to store into, got {type(dst).__name__}")
    for box in mask_boxes(mask, dst.shape):
        part = dst.part(box) if isinstance(dst, (MaskedView, GatherView)) else dst[box]
        _language.store(part, value[box], **kwargs)
    return None
