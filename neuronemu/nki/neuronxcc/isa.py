"""``neuronxcc.nki.isa``: NKI 0.1's ISA calls, which return a new tile, and the 0.2+ form with
``dst`` first (either runs). A 0.1 call (no ``dst``) gets a new tile as NKI 0.1 makes it
(``_RESULTS``: its shape, dtype and memory) and is the 0.2+ call with that tile as ``dst``
(its other arguments as 0.2+ spells them, for ``memset`` and ``iota``); a call this module
does not know the result of says so at the kernel's line."""

from __future__ import annotations

import functools

import numpy as np

from neuronemu.nki import isa as _isa
from neuronemu.nki import language as _nl
from neuronemu.nki._index_tiles import IndexTile, Mask
from neuronemu.nki._trace import NkiError, NkiTensor, fail


def _same_as_data(name: str, index: int):
    """An elementwise result: the shape of argument ``name`` (positional ``index``: the
    data), in SBUF; its dtype ``dtype=``, else the data's (the widest of the tiles', as 0.1
    says, when they differ)."""
    def result(args, kwargs):
        tiles = [a for a in (*args, *kwargs.values()) if isinstance(a, NkiTensor)]
        data = args[index] if len(args) > index else kwargs.get(name)
        if not isinstance(data, NkiTensor):
            return None
        dtype = kwargs.pop("dtype", None)
        if dtype is None:
            dtypes = {np.dtype(t.dtype) for t in tiles}
            dtype = data.dtype if len(dtypes) == 1 else np.float32
        return _nl.ndarray(data.shape, dtype, buffer=_nl.sbuf), [(args, kwargs)]
    return result


def _matmul(args, kwargs):
    stationary, moving = (list(args) + [kwargs.get("stationary"), kwargs.get("moving")])[:2]
    if not isinstance(stationary, NkiTensor) or not isinstance(moving, NkiTensor):
        return None
    return _nl.ndarray((stationary.shape[1], moving.shape[1]), np.float32,
                       buffer=_nl.psum), [(args, kwargs)]


def _transpose(args, kwargs):
    data = args[0] if args else kwargs.get("data")
    if not isinstance(data, NkiTensor) or len(data.shape) != 2:
        return None
    vector = str(kwargs.get("engine", "")).endswith("vector")
    return _nl.ndarray((data.shape[1], data.shape[0]), data.dtype,
                       buffer=_nl.sbuf if vector else _nl.psum), [(args, kwargs)]


def _reduce(args, kwargs):
    data = args[1] if len(args) > 1 else kwargs.get("data")
    axis = args[2] if len(args) > 2 else kwargs.get("axis")
    if not isinstance(data, NkiTensor) or axis is None:
        return None
    axes = {int(a) % len(data.shape) for a in (axis if isinstance(axis, (list, tuple))
                                                 else (axis,))}
    keep = kwargs.get("keepdims", False)
    shape = tuple(1 if i in axes else n for i, n in enumerate(data.shape)
                  if keep or i not in axes or i == 0)
    if len(shape) == 1:   # (an on-chip tile keeps a free dim: [P, 1])
        shape += (1,)
    dtype = kwargs.pop("dtype", None) or data.dtype
    return _nl.ndarray(shape, dtype, buffer=_nl.sbuf), [(args, kwargs)]


def _memset(args, kwargs):
    """``memset(shape, value, dtype)``: a new tile of that shape filled with value."""
    named = dict(zip(("shape", "value", "dtype"), args), **kwargs)
    if "shape" not in named or "value" not in named:
        return None
    rest = {k: v for k, v in named.items() if k not in ("shape", "value", "dtype")}
    dst = _nl.ndarray(tuple(named["shape"]), named.get("dtype") or np.float32, buffer=_nl.sbuf)
    return dst, [((), {"value": named["value"], **rest})]


def _iota(args, kwargs):
    """``iota(expr, dtype)``: the values of an index tile of a 2-dim grid (``3 * nl.arange(n)
    [:, None]``: a [n, 1] column; ``nl.arange(n)[None, :]``: a [1, n] row) as a new tile."""
    named = dict(zip(("expr", "dtype"), args), **kwargs)
    expr = named.get("expr")
    if not isinstance(expr, IndexTile) or expr.ndim != 2:
        return None
    dst = _nl.ndarray(expr.shape, named.get("dtype") or np.int32, buffer=_nl.sbuf)
    if expr.axis == 0:   # along the partitions
        return dst, [(([[0, 1]],), {"offset": expr.offset, "channel_multiplier": expr.scale})]
    return dst, [(([[expr.scale, expr.size]],), {"offset": expr.offset})]


_CMP = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}


def _affine_select(args, kwargs):
    """``affine_select(pred, on_true_tile, on_false_value)``: ``pred`` a comparison of an
    index expression of a 2-dim grid (``i_p - i_f >= 0``: a causal mask), as the 0.2+ call's
    pattern, channel multiplier, offset and ``cmp_op``; comparisons joined with ``&`` are one
    select each, in turn on the result."""
    named = dict(zip(("pred", "on_true_tile", "on_false_value", "dtype"), args), **kwargs)
    pred, data = named.get("pred"), named.get("on_true_tile")
    if not isinstance(pred, Mask) or not isinstance(data, NkiTensor) or len(data.shape) != 2:
        return None
    if any(expr.ndim != 2 for expr, _, _ in pred.bounds):
        return None
    dst = _nl.ndarray(data.shape, named.get("dtype") or data.dtype, buffer=_nl.sbuf)
    calls = []
    source = data
    for expr, op, bound in pred.bounds:
        calls.append(((), {"on_true_tile": source, "on_false_value": named["on_false_value"],
                           "pattern": [[expr.scales[1], data.shape[1]]],
                           "channel_multiplier": expr.scales[0],
                           "offset": expr.offset - bound, "cmp_op": _CMP[op.__name__]}))
        source = dst
    return dst, calls


_RESULTS = {
    "nc_matmul": _matmul,
    "nc_transpose": _transpose,
    "activation": _same_as_data("data", 1),
    "tensor_tensor": _same_as_data("data1", 0),
    "tensor_scalar": _same_as_data("data", 0),
    "tensor_copy": _same_as_data("src", 0),
    "tensor_reduce": _reduce,
    "memset": _memset,
    "iota": _iota,
    "affine_select": _affine_select,
}
"""0.1 ISA calls whose result this module makes: name -> (positional args, keywords) -> (the
new tile, the 0.2+ calls that make it: their other positional args and keywords), or None when
the arguments are not those of a 0.1 call (``dtype=``, when it only says the result's dtype,
is taken out)."""


def __getattr__(name: str):
    value = getattr(_isa, name)
    if not callable(value) or isinstance(value, type):
        return value
    result = _RESULTS.get(name)

    @functools.wraps(value)
    def call(*args, **kwargs):
        if result is not None and "dst" not in kwargs:
            made = result(args, dict(kwargs))
            if made is not None:
                dst, calls = made
                for call_args, call_kwargs in calls:
                    value(dst, *call_args, **call_kwargs)
                return dst
        try:
            return value(*args, **kwargs)
        except NkiError as error:   # (a binding error of the 0.2+ call)
            if "dst" in kwargs or not error.message.startswith(f"nisa.{name}()"):
                raise
            fail(f"nisa.{name} without dst= (NKI 0.1's call that returns a new tile) is not "
                 f"run for this call yet: allocate the result and pass it as dst=, as NKI "
                 f"0.2+ does", *error.notes, unsupported=True)

    globals()[name] = call   # (made once: later lookups find it here)
    return call
