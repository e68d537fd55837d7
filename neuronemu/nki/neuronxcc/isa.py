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
from neuronemu.nki._index_tiles import (
    GatherView,
    IndexExpr,
    IndexTile,
    Mask,
    MaskedView,
    mask_boxes,
    mask_of,
)
from neuronemu.nki._trace import NkiError, NkiTensor, fail, tracer


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


def _shaped(name: str, index: int, shape_of, dtype=None):
    """A result of ``shape_of(data shape)`` in SBUF, of ``dtype=`` if the call gives one, else
    ``dtype`` (the call's own), else the data's."""
    def result(args, kwargs):
        data = args[index] if len(args) > index else kwargs.get(name)
        if not isinstance(data, NkiTensor):
            return None
        made = kwargs.pop("dtype", None) or dtype or data.dtype
        return _nl.ndarray(shape_of(tuple(data.shape)), made, buffer=_nl.sbuf), [(args, kwargs)]
    return result


def _local_gather(args, kwargs):
    """``local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=0)``: a new
    [P, num_valid_indices * num_elem_per_idx] tile (all of each 16-partition group's indices
    when num_valid_indices is 0) of the data's dtype."""
    named = dict(zip(("src_buffer", "index", "num_elem_per_idx", "num_valid_indices"), args),
                 **kwargs)
    data, index = named.get("src_buffer"), named.get("index")
    if not isinstance(data, NkiTensor) or not isinstance(index, NkiTensor):
        return None
    per_index = int(named.get("num_elem_per_idx", 1))
    count = int(named.get("num_valid_indices", 0)) or 16 * int(np.prod(index.shape[1:]))
    return _nl.ndarray((data.shape[0], count * per_index), data.dtype,
                       buffer=_nl.sbuf), [((), named)]


def _matmul(args, kwargs):
    stationary, moving = (list(args) + [kwargs.get("stationary"), kwargs.get("moving")])[:2]
    if not isinstance(stationary, NkiTensor) or not isinstance(moving, NkiTensor):
        return None
    # TensorE reads SBUF only: an operand in PSUM (a transpose's result) is copied out first,
    # as the 0.1 compiler does
    args = tuple(_nl._in_sbuf(a) for a in args)
    kwargs = {k: _nl._in_sbuf(v) if k in ("stationary", "moving") else v
              for k, v in kwargs.items()}
    # ([K, M] x [K, N]; the double-row modes' [K, 2, M] x [K, 2, N] give [M, N] too)
    return _nl.ndarray((stationary.shape[-1], moving.shape[-1]), np.float32,
                       buffer=_nl.psum), [(args, kwargs)]



def _transpose(args, kwargs):
    data = args[0] if args else kwargs.get("data")
    if not isinstance(data, NkiTensor) or len(data.shape) != 2:
        return None
    vector = str(kwargs.get("engine", "")).endswith("vector")
    # (trn1's PE array transposes as a matmul with an identity: fp32 into PSUM)
    dtype = np.float32 if not vector and tracer().target == "trn1" else data.dtype
    return _nl.ndarray((data.shape[1], data.shape[0]), dtype,
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
    """``iota(expr, dtype)``: the values of an index expression over its grid
    (``3 * nl.arange(n)[:, None]``: a [n, 1] column; ``3 * g.y + g.z`` of a 4-axis grid) as a
    new tile: the grid's first axis steps by the partitions' multiplier, the others by the
    pattern's steps."""
    named = dict(zip(("expr", "dtype"), args), **kwargs)
    expr = named.get("expr")
    if isinstance(expr, IndexTile):
        expr = IndexExpr.of(expr)
    if not isinstance(expr, IndexExpr) or expr.ndim < 2:
        return None
    dst = _nl.ndarray(expr.sizes, named.get("dtype") or np.int32, buffer=_nl.sbuf)
    pattern = [[scale, size] for scale, size in zip(expr.scales[1:], expr.sizes[1:])]
    return dst, [((pattern,), {"offset": expr.offset, "channel_multiplier": expr.scales[0]})]


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
    if data.kind == "psum":   # GpSimd reads SBUF only: the compiler's copy out of PSUM first
        source = _nl.ndarray(data.shape, data.dtype, buffer=_nl.sbuf)
        _isa.tensor_copy(source, data)
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
    "tensor_tensor_scan": _same_as_data("data0", 0),
    "scalar_tensor_tensor": _same_as_data("data", 0),
    "tensor_scalar_reduce": _same_as_data("data", 0),
    "activation_reduce": _same_as_data("data", 1),
    "reciprocal": _same_as_data("data", 0),
    "bn_stats": _shaped("data", 0, lambda shape: (shape[0], 6), np.float32),
    "bn_aggr": _shaped("data", 0, lambda shape: (shape[0], 2), np.float32),
    "dma_transpose": _shaped("src", 0, lambda shape: shape[::-1]),
    "max8": _shaped("src", 0, lambda shape: (shape[0], 8)),
    "dropout": _same_as_data("data", 0),
    "range_select": _same_as_data("on_true_tile", 0),
    "sequence_bounds": _shaped("segment_ids", 0, lambda shape: (shape[0], 2, shape[-1])),
    "tensor_partition_reduce": _shaped("data", 1, lambda shape: (1, *shape[1:])),
    "nc_find_index8": _shaped("data", 0, lambda shape: (shape[0], 8), np.uint32),
    "local_gather": _local_gather,
    "nc_match_replace8": _same_as_data("data", 0),
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
        if name == "dma_copy" and kwargs.get("dst_rmw_op") is not None:
            return _read_modify_write(args, kwargs)
        args, kwargs = _legal(name, args, kwargs)
        if "mask" in kwargs:
            return _masked_call(name, value, result, args, kwargs)
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


_PERF_MODES = {"double_row_gen3": "double_row"}
"""0.1's nc_matmul perf_mode spellings -> the 0.2+ ones."""


def _legal(name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """0.1's arguments as the 0.2+ call takes them: a gather view (``t[b, idx, i_f]``) as the
    DMA gather or scatter it is (unmasked), a bool predicate tile as the uint8 bytes it is,
    0.1's perf_mode names."""
    def legal(key, value):
        if isinstance(value, GatherView) and "mask" not in kwargs:
            return value.whole()
        if key == "predicate" and isinstance(value, NkiTensor) and value.dtype == np.bool_:
            return value.view(np.uint8)
        if key == "perf_mode" and isinstance(value, str):
            return _PERF_MODES.get(value, value)
        return value
    args = tuple(legal(None, a) for a in args)
    kwargs = {k: legal(k, v) for k, v in kwargs.items()}
    if name == "tensor_tensor":
        args, kwargs = _broadcast_operands(args, kwargs)
    return args, kwargs


def _broadcast_operands(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``tensor_tensor(data1, data2)`` of shapes that differ only where one is 1 (a [P, 1]
    column times a [P, F] tile, 0.1's dequantization): the size-1 dims read again and again
    (a step-0 access pattern, no copy)."""
    named = dict(zip(("data1", "data2"), args))
    rest = args[2:]
    named.update({k: kwargs[k] for k in ("data1", "data2") if k in kwargs})
    a, b = named.get("data1"), named.get("data2")
    if not isinstance(a, NkiTensor) or not isinstance(b, NkiTensor) or a.shape == b.shape:
        return ((a, b) + rest if len(args) >= 2 else args), kwargs
    shape = _nl._free_broadcast(a, b)
    if shape is None:
        return ((a, b) + rest if len(args) >= 2 else args), kwargs
    a, b = _nl._stretched(a, shape), _nl._stretched(b, shape)
    if len(args) >= 2:
        return (a, b) + rest, kwargs
    kwargs = dict(kwargs)
    if len(args) == 1:
        return (a,), dict(kwargs, data2=b)
    return args, dict(kwargs, data1=a, data2=b)


def _masked_call(name: str, value, result, args: tuple, kwargs: dict):
    """A 0.1 ISA call with ``mask=``: the call on the part of its operands the mask keeps.
    The mask is over the grid of the first tile argument (the data); each box of points it
    keeps is one call, on that box of every tile of the data's shape, and on the box's rows
    of every other tile with as many partitions (a [P, 1] scalar column, a bn_stats result).
    A mask that is a plain bool (``mask=(i * 128 < n)``, no index tile) keeps all or none."""
    mask = kwargs.pop("mask")
    if name == "dma_copy":
        return _masked_copy(args, kwargs, mask)
    dst = kwargs.pop("dst", None)
    if dst is None and result is not None:
        made = result(args, dict(kwargs))
        if made is None:
            fail(f"nisa.{name}(mask=...) is not run for these arguments yet: slice the "
                 f"operands to the points the mask keeps", unsupported=True)
        dst, calls = made
    elif dst is not None:
        calls = [(args, kwargs)]
    else:
        fail(f"nisa.{name}(mask=...) without dst= is not run for this call yet: allocate the "
             f"result and pass it as dst=", unsupported=True)
    if isinstance(mask, (bool, np.bool_)):
        if mask:
            for call_args, call_kwargs in calls:
                value(dst, *call_args, **call_kwargs)
        elif isinstance(dst, NkiTensor):   # (assigning the unwritten result writes nothing)
            dst._masked = Mask.nothing(len(dst.shape))
        return dst
    tiles = [a for a in (*args, *kwargs.values()) if isinstance(a, NkiTensor)]
    if not tiles:
        fail(f"nisa.{name}(mask=...) needs a tile argument to apply the mask to",
             unsupported=True)
    shape = tuple(tiles[0].shape)
    boxes = mask_boxes(mask, shape)

    def cut(arg, box):
        if not isinstance(arg, NkiTensor):
            return arg
        if tuple(arg.shape) == shape:
            return arg[box]
        if len(arg.shape) >= 1 and arg.shape[0] == shape[0]:
            return arg[(box[0],) + (slice(None),) * (len(arg.shape) - 1)]
        return arg

    for box in boxes:
        for call_args, call_kwargs in calls:
            value(cut(dst, box), *[cut(a, box) for a in call_args],
                  **{k: cut(v, box) for k, v in call_kwargs.items()})
    if isinstance(dst, NkiTensor) and tuple(dst.shape) == shape:
        dst._masked = mask
    return dst


def _read_modify_write(args: tuple, kwargs: dict) -> None:
    """``dma_copy(dst=, src=, dst_rmw_op=np.add)`` (0.1: dst = dst + src by the DMA engine):
    the destination read into SBUF (a gather, when it is ``t[idx, i_f]``), combined with src
    on the Vector engine, and written back (a scatter). Timed as those three instructions, not
    as one read-modify-write DMA; a scatter naming one row twice stops with a located error
    (the DMA engine would add both)."""
    named = dict(zip(("dst", "src"), args), **kwargs)
    dst, src, op = named.pop("dst"), named.pop("src"), named.pop("dst_rmw_op")
    if named.pop("mask", None) is not None:
        fail("dma_copy(dst_rmw_op=..., mask=...) is not run yet", unsupported=True)
    dst = _whole(dst)
    if not isinstance(src, NkiTensor) or not isinstance(dst, NkiTensor):
        fail("dma_copy(dst_rmw_op=...) takes tensors as dst and src")
    current = _nl.ndarray(src.shape, dst.dtype, buffer=_nl.sbuf)
    _isa.dma_copy(current, dst, **named)
    _isa.tensor_tensor(current, current, src, op=op)
    _isa.dma_copy(dst, current, **named)


def _masked_copy(args: tuple, kwargs: dict, mask) -> None:
    """``dma_copy(dst=, src=, mask=)``: one DMA per box of the points the mask keeps, over the
    destination's grid; either side may reach outside its tensor where the mask cuts it."""
    named = dict(zip(("dst", "src"), args), **kwargs)
    dst, src = named.pop("dst", None), named.pop("src", None)
    if mask_of(mask, len(dst.shape)) is None:   # (mask=True)
        _isa.dma_copy(_whole(dst), _whole(src), **named)
        return
    for box in mask_boxes(mask, tuple(dst.shape)):
        _isa.dma_copy(_part(dst, box), _part(src, box), **named)


def _part(view, box):
    return view.part(box) if isinstance(view, (MaskedView, GatherView)) else view[box]


def _whole(view):
    if isinstance(view, MaskedView):
        view.fail()
    return view.whole() if isinstance(view, GatherView) else view
