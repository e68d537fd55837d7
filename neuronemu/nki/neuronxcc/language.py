"""``neuronxcc.nki.language``: the names of ``nki.language``, and NKI 0.1's own: ``arange``,
``mgrid`` (index tiles), ``par_dim``, and ``mask=`` on ``load`` and ``store``."""

from __future__ import annotations

import functools

from neuronemu.nki import isa as _isa
from neuronemu.nki import language as _language
from neuronemu.nki._index_tiles import Mask, MaskedView, arange, mgrid  # noqa: F401
from neuronemu.nki._trace import NkiTensor, fail


def __getattr__(name: str):
    """Every other name is ``nki.language``'s (a name neither has is a located error there),
    a function taking 0.1's ``mask=`` too (``_masked``)."""
    value = getattr(_language, name)
    if not callable(value) or isinstance(value, type):
        return value
    wrapped = globals()[name] = _masked(value)   # (made once: later lookups find it here)
    return wrapped


def _masked(func):
    """``func`` with NKI 0.1's ``mask=``: the call makes its whole new tile (the points the
    mask leaves out are undefined in NKI too, and a later masked store or assignment never
    moves them), and the tile remembers the mask, so that assigning it into another tile
    (``t[...] = nl.exp(x, mask=m)``) writes the points it keeps only."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        mask = kwargs.pop("mask", None)
        if mask is None:
            return func(*args, **kwargs)
        _checked(mask)
        result = func(*args, **kwargs)
        if isinstance(result, NkiTensor):
            result._masked = mask
        return result
    return call


class par_dim(int):   # (NKI's name)
    """``nl.par_dim(P)``: the partition dim of an on-chip tensor's shape (its first dim here,
    so it is the number itself)."""


def _checked(mask) -> Mask:
    if not isinstance(mask, Mask):
        fail(f"mask= takes comparisons of nl.arange / nl.mgrid index tiles (joined with &), "
             f"not {type(mask).__name__}", unsupported=True)
    return mask


def _boxes(mask, shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """The parts of a [shape] access ``mask`` keeps, as boxes of slices."""
    return _checked(mask).boxes(tuple(shape))


def load(src, dtype=None, mask=None, **kwargs) -> NkiTensor:
    """``nl.load(src[, mask=])``: a new SBUF tile holding ``src``; with a mask, only the
    points it keeps are loaded (one DMA per box of them), and only they need lie inside the
    tensor."""
    if mask is None:
        if isinstance(src, MaskedView):
            src.fail()
        return _language.load(src, dtype=dtype, **kwargs)
    if not isinstance(src, (NkiTensor, MaskedView)):
        fail(f"nl.load needs a tensor, got {type(src).__name__}")
    tile = _language.ndarray(src.shape, dtype or src.dtype, buffer=_language.sbuf)
    for box in _boxes(mask, src.shape):
        part = src.part(box) if isinstance(src, MaskedView) else src[box]
        _isa.dma_copy(tile[box], part)
    return tile


def store(dst, value, mask=None, **kwargs) -> None:
    """``nl.store(dst, value[, mask=])``; with a mask, only the points it keeps are written
    (one DMA per box of them), and only they need lie inside the tensor."""
    if mask is None:
        if isinstance(dst, MaskedView):
            dst.fail()
        return _language.store(dst, value, **kwargs)
    if not isinstance(dst, (NkiTensor, MaskedView)):
        fail(f"nl.store needs a tensor to store into, got {type(dst).__name__}")
    for box in _boxes(mask, dst.shape):
        part = dst.part(box) if isinstance(dst, MaskedView) else dst[box]
        _language.store(part, value[box], **kwargs)
    return None
