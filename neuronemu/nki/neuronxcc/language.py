"""``neuronxcc.nki.language``: the names of ``nki.language``, and NKI 0.1's own: ``arange``,
``mgrid`` (index tiles), ``par_dim``, and ``mask=`` on ``load`` and ``store``."""

from __future__ import annotations

from neuronemu.nki import isa as _isa
from neuronemu.nki import language as _language
from neuronemu.nki._index_tiles import Mask, MaskedView, arange, mgrid  # noqa: F401
from neuronemu.nki._trace import NkiTensor, fail


def __getattr__(name: str):
    """Every other name is ``nki.language``'s (a name neither has is a located error there)."""
    return getattr(_language, name)


class par_dim(int):   # (NKI's name)
    """``nl.par_dim(P)``: the partition dim of an on-chip tensor's shape (its first dim here,
    so it is the number itself)."""


def _region(mask, shape: tuple[int, ...]) -> tuple[slice, ...] | None:
    """The part of a [shape] access ``mask`` keeps, as slices (None: nothing)."""
    if not isinstance(mask, Mask):
        fail(f"mask= takes comparisons of nl.arange / nl.mgrid index tiles (joined with &), "
             f"not {type(mask).__name__}", unsupported=True)
    ranges = mask.counts(len(shape))
    region = []
    for (first, end), size in zip(ranges, shape):
        end = size if end is None else min(end, size)
        if end <= first:
            return None
        region.append(slice(first, end))
    return tuple(region)


def load(src, dtype=None, mask=None, **kwargs) -> NkiTensor:
    """``nl.load(src[, mask=])``: a new SBUF tile holding ``src``; with a mask, only the
    points it keeps are loaded (and only they need lie inside the tensor)."""
    if mask is None:
        if isinstance(src, MaskedView):
            src.fail()
        return _language.load(src, dtype=dtype, **kwargs)
    if not isinstance(src, (NkiTensor, MaskedView)):
        fail(f"nl.load needs a tensor, got {type(src).__name__}")
    tile = _language.ndarray(src.shape, dtype or src.dtype, buffer=_language.sbuf)
    region = _region(mask, src.shape)
    if region is not None:
        part = src.part(region) if isinstance(src, MaskedView) else src[region]
        _isa.dma_copy(tile[region], part)
    return tile


def store(dst, value, mask=None, **kwargs) -> None:
    """``nl.store(dst, value[, mask=])``; with a mask, only the points it keeps are written
    (and only they need lie inside the tensor)."""
    if mask is None:
        if isinstance(dst, MaskedView):
            dst.fail()
        return _language.store(dst, value, **kwargs)
    if not isinstance(dst, (NkiTensor, MaskedView)):
        fail(f"nl.store needs a tensor to store into, got {type(dst).__name__}")
    region = _region(mask, dst.shape)
    if region is not None:
        part = dst.part(region) if isinstance(dst, MaskedView) else dst[region]
        _language.store(part, value[region], **kwargs)
    return None
