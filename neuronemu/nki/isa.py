"""``nki.isa`` (NKI 0.6.0 names and signatures, ``dst`` first) lowered to neuronemu instructions.

Each function appends one instruction (the ``nki =`` field of ``isa/*.toml`` names the pairs)
to the kernel being traced. Shapes, dtypes and memory spaces are checked by neuronemu's
assembler; its errors are reported at the kernel's Python line. Calls this module does not
implement raise ``NkiUnsupported`` at the calling line (see ``__getattr__``)."""

from __future__ import annotations

import sys

from neuronemu.nki._trace import (
    HOOKS,
    NkiTensor,
    fail,
    scalar_text,
    tracer,
    unsupported_name,
)

# ------------------------------------------------------------------------------------------
# config enums (values are neuronemu's spellings)


class engine:
    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    dma = "dma"
    sync = "sync"


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class reduce_cmd:
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class dge_mode:
    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class oob_mode:
    error = "error"
    skip = "skip"


class matmul_perf_mode:
    none = "none"
    double_row = "double_row"


class nc_version:
    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version():
    """The NeuronCore generation of the target being traced (trn1 -> gen2, trn2 -> gen3, ...)."""
    return getattr(nc_version, tracer().target_data.nki_version)   # isa/targets.toml


# ------------------------------------------------------------------------------------------
# operand helpers


def _tile(t, what: str) -> NkiTensor:
    if not isinstance(t, NkiTensor):
        fail(f"{what} must be a tensor (nl.ndarray or a kernel argument), got "
             f"{type(t).__name__}")
    if t._broadcast is not None:
        fail(f"{what}: a partition-broadcast view ([1, N] -> [P, N]) can only be a DMA source; "
             f"compute engines cannot broadcast across partitions", unsupported=True)
    return t


def _onchip(t, what: str) -> str:
    t = _tile(t, what)
    if t.kind == "hbm":
        fail(f"{what} is in HBM; compute instructions read and write SBUF/PSUM tiles (move it "
             f"with nisa.dma_copy / nl.load first)")
    return t.operand(tracer())


def _scalar(v, what: str) -> str:
    if isinstance(v, NkiTensor):
        return _onchip(v, what)
    if isinstance(v, (int, float)) or hasattr(v, "__float__"):
        return scalar_text(v)
    fail(f"{what} must be a number or a [P, 1] tile, got {type(v).__name__}")
    raise AssertionError


def _number(v, what: str) -> str:
    if isinstance(v, NkiTensor):
        fail(f"{what} must be a compile-time number here, not a tile", unsupported=True)
    try:
        return scalar_text(v)
    except (TypeError, ValueError):
        fail(f"{what} must be a number, got {type(v).__name__}")
    raise AssertionError


def _bool(v: bool) -> str:
    return "true" if v else "false"


def alu_name(op, what: str = "op") -> str:
    """neuronemu's alu_op name for an NKI operator (nl.add, np.add, 'add', ...)."""
    name = getattr(op, "_nki_alu", None)
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        name = _NUMPY_ALU.get(getattr(op, "__name__", None))
    if name is None:
        fail(f"{what}={getattr(op, '__name__', op)!r} is not an ALU operator neuronemu has",
             "ALU operators: nl.add, subtract, multiply, divide, maximum, minimum, power, "
             "equal, not_equal, greater(_equal), less(_equal), abs_max, abs_min, logical_*, "
             "bitwise_*, invert, left_shift, right_shift", unsupported=True)
    return name


def reduce_name(op, what: str = "op") -> str:
    """neuronemu's reduce_op name for an NKI reduction operator (nl.add, nl.max, np.max, ...)."""
    names = {"add": "add", "maximum": "maximum", "amax": "maximum", "max": "maximum",
             "minimum": "minimum", "amin": "minimum", "min": "minimum",
             "multiply": "multiply", "average": "average"}
    name = getattr(op, "_nki_reduce", None)
    if name is None:
        key = op if isinstance(op, str) else (getattr(op, "_nki_alu", None)
                                              or getattr(op, "__name__", None))
        name = names.get(key)
    if name is None:
        fail(f"{what}={getattr(op, '__name__', op)!r} is not a reduction neuronemu has "
             f"(nl.add, nl.maximum/nl.max, nl.minimum/nl.min, nl.multiply)", unsupported=True)
    return name


def act_name(op) -> str:
    name = getattr(op, "_nki_act", None)
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        name = _NUMPY_ACT.get(getattr(op, "__name__", None))
    if name is None:
        fail(f"op={getattr(op, '__name__', op)!r} is not an activation function neuronemu has",
             "activation functions: nl.copy, exp, log, tanh, sigmoid, relu, gelu, silu, sqrt, "
             "rsqrt, reciprocal, square, abs, sign, softplus, gelu_apprx_tanh, erf, sin, "
             "arctan, mish, ...", unsupported=True)
    return name


_NUMPY_ALU = {"add": "add", "subtract": "subtract", "multiply": "multiply",
              "divide": "divide", "true_divide": "divide", "maximum": "maximum",
              "minimum": "minimum", "power": "power", "equal": "equal",
              "not_equal": "not_equal", "greater": "greater", "greater_equal": "greater_equal",
              "less": "less", "less_equal": "less_equal", "logical_and": "logical_and",
              "logical_or": "logical_or", "logical_xor": "logical_xor",
              "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
              "bitwise_xor": "bitwise_xor", "invert": "invert", "left_shift": "left_shift",
              "right_shift": "right_shift"}
_NUMPY_ACT = {"exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt", "square": "square",
              "abs": "abs", "absolute": "abs", "sign": "sign", "sin": "sin",
              "arctan": "arctan", "reciprocal": "reciprocal"}


def _unused(name: str, value, default, why: str = "") -> None:
    if value is not default and value != default:
        fail(f"{name}={value!r} is not supported by neuronemu.nki{why}", unsupported=True)


# ------------------------------------------------------------------------------------------
# data movement


def dma_copy(dst, src, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown,
             name=None):
    """dst = src by DMA (``dma.copy``; ``dst_rmw_op=nl.add`` -> ``dma.accumulate``, trn3).
    The queue is chosen round-robin (see ``neuronemu.nki.run(dma_queues=...)``). A ``[1, N]``
    source broadcast with ``.broadcast_to((P, N))`` is a DMA partition broadcast."""
    tr = tracer()
    if not isinstance(src, NkiTensor):
        fail(f"src must be a tensor, got {type(src).__name__}")
    d = _tile(dst, "dst")
    if src.kind == "psum" or d.kind == "psum":
        fail("DMA cannot read or write PSUM (NKI 0.4+): copy PSUM to SBUF with "
             "nisa.tensor_copy first")
    if src._broadcast is not None and src._broadcast != d.shape[0]:
        fail(f"src is broadcast to {src._broadcast} partitions but dst has {d.shape[0]}")
    dge = {"unknown": None, "none": None, "swdge": None, "hwdge": "hw"}.get(dge_mode)
    kw = {"queue": tr.next_queue()}
    if dge:
        kw["dge"] = dge
    if dst_rmw_op is None:
        tr.emit("dma.copy", d.operand(tr), src.operand(tr), **kw)
    elif alu_name(dst_rmw_op, "dst_rmw_op") == "add":
        tr.emit("dma.accumulate", d.operand(tr), src.operand(tr), **kw)
    else:
        fail("dst_rmw_op must be nl.add (or None)")


def dma_transpose(dst, src, axes=None, dge_mode=dge_mode.unknown, name=None):
    """dst[j, i] = src[i, j] by DMA (``dma.transpose``; 2-byte dtypes)."""
    tr = tracer()
    _unused("axes", axes, None)
    d, s = _tile(dst, "dst"), _tile(src, "src")
    tr.emit("dma.transpose", d.operand(tr), s.operand(tr), queue=tr.next_queue())


def tensor_copy(dst, src, engine=engine.unknown, name=None):
    """dst = src on chip (``vector.tensor_copy``; gpsimd/scalar when asked)."""
    tr = tracer()
    d, s = _onchip(dst, "dst"), _onchip(src, "src")
    if engine == "scalar":
        tr.emit("scalar.activation", d, s, func="copy")
    elif engine == "gpsimd" and dst.kind == "sbuf" and src.kind == "sbuf":
        tr.emit("gpsimd.tensor_copy", d, s)
    else:
        tr.emit("vector.tensor_copy", d, s)


def memset(dst, value, engine=engine.unknown, name=None):
    """Fill dst with a constant (``vector.memset``; ``gpsimd.memset`` when asked)."""
    tr = tracer()
    d = _onchip(dst, "dst")
    mnemonic = "gpsimd.memset" if engine == "gpsimd" and dst.kind == "sbuf" else "vector.memset"
    tr.emit(mnemonic, d, value=_number(value, "value"))
    _mark_written(dst)


# ------------------------------------------------------------------------------------------
# vector / scalar / gpsimd


def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None):
    """dst = data1 op data2 elementwise (``vector.tensor_tensor``; engine=gpsimd runs on
    VectorE too: neuronemu's GpSimd has no tensor_tensor)."""
    tr = tracer()
    tr.emit("vector.tensor_tensor", _onchip(dst, "dst"), _onchip(data1, "data1"),
            _onchip(data2, "data2"), op=alu_name(op))
    _mark_written(dst)


def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None,
                  reverse1=False, engine=engine.unknown, name=None):
    """dst = (data op0 operand0) op1 operand1 with immediate or [P, 1] operands
    (``vector.tensor_scalar``)."""
    tr = tracer()
    kw = {"op0": alu_name(op0, "op0"), "operand0": _scalar(operand0, "operand0")}
    if reverse0:
        kw["reverse0"] = "true"
    if op1 is not None:
        if operand1 is None:
            fail("op1 is given without operand1")
        kw.update(op1=alu_name(op1, "op1"), operand1=_scalar(operand1, "operand1"))
        if reverse1:
            kw["reverse1"] = "true"
    tr.emit("vector.tensor_scalar", _onchip(dst, "dst"), _onchip(data, "data"), **kw)
    _mark_written(dst)


def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False,
                         reverse1=False, reduce_cmd=reduce_cmd.reset_reduce, reduce_op=None,
                         reduce_res=None, name=None):
    """dst = (data op0 operand0) op1 operand1 (``vector.scalar_tensor_tensor``)."""
    tr = tracer()
    if reduce_res is not None:
        fail("scalar_tensor_tensor with reduce_res is not supported", unsupported=True)
    kw = {"op0": alu_name(op0, "op0"), "operand0": _scalar(operand0, "operand0"),
          "op1": alu_name(op1, "op1"), "operand1": _onchip(operand1, "operand1")}
    if reverse0:
        kw["reverse0"] = "true"
    if reverse1:
        kw["reverse1"] = "true"
    tr.emit("vector.scalar_tensor_tensor", _onchip(dst, "dst"), _onchip(data, "data"), **kw)
    _mark_written(dst)


def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, name=None):
    """dst = op(data * scale + bias) on ScalarE (``scalar.activation``); with ``reduce_res``
    the add-reduction of dst along the free axes goes to reduce_res[P, 1]."""
    tr = tracer()
    kw = {"func": act_name(op)}
    if not (isinstance(scale, (int, float)) and float(scale) == 1.0):
        kw["scale"] = _scalar(scale, "scale")
    if bias is not None:
        kw["bias"] = _scalar(bias, "bias")
    if reduce_res is not None:
        if reduce_op is not None and reduce_name(reduce_op, "reduce_op") != "add":
            fail("reduce_op must be nl.add: ScalarE's reduction registers only sum")
        if reduce_cmd not in ("idle", "reset_reduce"):
            fail(f"reduce_cmd={reduce_cmd!r} (accumulating across instructions) is not "
                 f"supported", unsupported=True)
        kw["reduce_res"] = _onchip(reduce_res, "reduce_res")
    elif reduce_cmd not in ("idle",):
        fail(f"reduce_cmd={reduce_cmd!r} without reduce_res is not supported", unsupported=True)
    tr.emit("scalar.activation", _onchip(dst, "dst"), _onchip(data, "data"), **kw)
    _mark_written(dst)


def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None):
    """``activation`` with ``reduce_res`` (kept for backward compatibility in NKI)."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
               reduce_res=reduce_res, reduce_cmd=reduce_cmd.reset_reduce)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None):
    """Reduce the trailing free axes of data (``vector.tensor_reduce``)."""
    tr = tracer()
    d = _tile(data, "data")
    axes = sorted({axis} if isinstance(axis, int) else set(axis))
    ndim = len(d.shape)
    axes = sorted(a % ndim for a in axes)
    if not axes or 0 in axes or axes != list(range(axes[0], ndim)):
        fail(f"axis={axis!r}: the reduced axes must be the last free axes of the tile "
             f"(ending at axis {ndim - 1}; axis 0 is the partition axis)")
    kept = 1
    for s in d.shape[1:axes[0]]:
        kept *= s
    out = _tile(dst, "dst")
    out_free = 1
    for s in out.shape[1:]:
        out_free *= s
    if out_free != kept:
        fail(f"dst has {out_free} elements per partition; reducing axes {axes} of "
             f"{list(d.shape)} leaves {kept}")
    kw = {"op": reduce_name(op)}
    if negate:
        kw["negate"] = "true"
    tr.emit("vector.tensor_reduce", _onchip(dst, "dst"), _onchip(data, "data"), **kw)
    _mark_written(dst)


def reciprocal(dst, data, name=None):
    """dst = 1 / data (``vector.reciprocal``)."""
    tr = tracer()
    tr.emit("vector.reciprocal", _onchip(dst, "dst"), _onchip(data, "data"))
    _mark_written(dst)


def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False,
                       name=None):
    """dst[i] = (data0[i] op0 dst[i-1]) op1 data1[i] per partition (``vector.tensor_tensor_scan``)."""
    tr = tracer()
    kw = {"initial": _scalar(initial, "initial"), "op0": alu_name(op0, "op0"),
          "op1": alu_name(op1, "op1")}
    if reverse0:
        kw["reverse0"] = "true"
    if reverse1:
        kw["reverse1"] = "true"
    tr.emit("vector.tensor_tensor_scan", _onchip(dst, "dst"), _onchip(data0, "data0"),
            _onchip(data1, "data1"), **kw)


def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False,
                         reduce_cmd=reduce_cmd.idle, reduce_init=None, reduce_res_negate=False,
                         name=None):
    """dst = data op0 operand0 and reduce_res[P, 1] = reduce_op over dst's fp32 values
    (``vector.tensor_scalar_reduce``)."""
    tr = tracer()
    if reverse0:
        fail("tensor_scalar_reduce(reverse0=True) is not supported", unsupported=True)
    if reduce_cmd not in ("idle", "reset_reduce") or reduce_init is not None:
        fail("tensor_scalar_reduce accumulating across instructions (reduce_cmd, reduce_init) "
             "is not supported", unsupported=True)
    if reduce_res_negate:
        fail("tensor_scalar_reduce(reduce_res_negate=True) is not supported", unsupported=True)
    tr.emit("vector.tensor_scalar_reduce", _onchip(dst, "dst"), _onchip(data, "data"),
            op0=alu_name(op0, "op0"), operand0=_scalar(operand0, "operand0"),
            reduce_op=reduce_name(reduce_op, "reduce_op"),
            reduce_res=_onchip(reduce_res, "reduce_res"))
    _mark_written(dst)


def tensor_partition_reduce(dst, op, data, name=None):
    """dst[0, ...] = op over the partitions of data (``gpsimd.partition_reduce``)."""
    tracer().emit("gpsimd.partition_reduce", _onchip(dst, "dst"), _onchip(data, "data"),
                  op=reduce_name(op))


def bn_stats(dst, data, name=None):
    """(count, mean, var*count) of even and odd elements (``vector.bn_stats``)."""
    tracer().emit("vector.bn_stats", _onchip(dst, "dst"), _onchip(data, "data"))


def bn_aggr(dst, data, name=None):
    """(mean, variance) from bn_stats triples (``vector.bn_aggr``)."""
    tracer().emit("vector.bn_aggr", _onchip(dst, "dst"), _onchip(data, "data"))


def _affine_step(pattern, dst) -> int:
    """The flattened-index step of an NKI ``pattern`` [[step, num], ...] that neuronemu's
    iota / affine_select can express (value = offset + p * cm + i * step)."""
    dims = [(int(s), int(n)) for s, n in pattern]
    total = 1
    for _, n in dims:
        total *= n
    free = 1
    for s in dst.shape[1:]:
        free *= s
    if total != free:
        fail(f"pattern covers {total} elements per partition, dst has {free}")
    step = None
    inner = 1
    for s, n in reversed(dims):
        if n == 1:
            continue
        if step is None:
            step = s
        elif s != step * inner:
            fail(f"pattern {pattern!r} is not affine in the flattened free index; neuronemu's "
                 f"iota/affine_select take one step", unsupported=True)
        inner *= n
    return step if step is not None else 0


def iota(dst, pattern, offset, channel_multiplier=0, name=None):
    """dst[p, i] = offset + p * channel_multiplier + pattern(i) (``gpsimd.iota``)."""
    tr = tracer()
    d = _tile(dst, "dst")
    step = _affine_step(pattern, d)
    tr.emit("gpsimd.iota", _onchip(dst, "dst"), base=int(offset),
            channel_multiplier=int(channel_multiplier), step=step)


def affine_select(dst, pattern, offset, channel_multiplier, on_true_tile, on_false_value,
                  cmp_op=None, name=None):
    """dst = on_true_tile where cmp_op(offset + p * cm + pattern(i), 0) else on_false_value
    (``gpsimd.affine_select``; cmp_op defaults to nl.equal as in NKI)."""
    tr = tracer()
    d = _tile(dst, "dst")
    step = _affine_step(pattern, d)
    cmp = alu_name(cmp_op, "cmp_op") if cmp_op is not None else "equal"
    tr.emit("gpsimd.affine_select", _onchip(dst, "dst"), _onchip(on_true_tile, "on_true_tile"),
            cmp_op=cmp, on_false_value=_number(on_false_value, "on_false_value"),
            offset=int(offset), channel_multiplier=int(channel_multiplier), step=step)


# ------------------------------------------------------------------------------------------
# TensorE


def _mark_written(dst) -> None:
    """A non-matmul write to PSUM counts as the first write of that region (auto-accumulate)."""
    if isinstance(dst, NkiTensor) and dst.kind == "psum":
        region = dst.region()
        if region not in dst._buffer.written:
            dst._buffer.written.append(region)


def _psum_accumulate(dst: NkiTensor) -> bool:
    """NKI 0.3+ accumulate=None: the first write to a PSUM location overwrites, later ones
    accumulate. Regions are boxes; a write that partly overlaps an earlier one is refused."""
    region = dst.region()
    for old in dst._buffer.written:
        inside = all(o0 <= r0 and r1 <= o1 for (r0, r1), (o0, o1) in zip(region, old))
        if inside:
            return True
        overlap = all(r0 < o1 and o0 < r1 for (r0, r1), (o0, o1) in zip(region, old))
        if overlap:
            fail("this matmul's PSUM region partly overlaps one written before; neuronemu.nki "
                 "cannot tell overwrite from accumulate: pass accumulate=True/False",
                 unsupported=True)
    dst._buffer.written.append(region)
    return False


def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, accumulate=None, tile_position=(), tile_size=(),
              perf_mode=matmul_perf_mode.none, name=None):
    """dst (+)= stationary.T @ moving on TensorE (``tensor.matmul``); ``accumulate=None``
    overwrites on the first write to a PSUM region and accumulates on the later ones."""
    tr = tracer()
    d = _tile(dst, "dst")
    if d.kind != "psum":
        fail("nc_matmul writes PSUM: dst must be an nl.psum tile")
    if accumulate is None:
        acc = _psum_accumulate(d)
    else:
        acc = bool(accumulate)
        _mark_written(d)
    kw = {"accumulate": _bool(acc)}
    if is_transpose:
        kw["is_transpose"] = "true"
    if is_stationary_onezero:
        kw["is_stationary_onezero"] = "true"
    if is_moving_onezero:
        kw["is_moving_onezero"] = "true"
    if perf_mode not in (None, "none"):
        kw["perf_mode"] = str(perf_mode)
    if tile_position:
        kw["tile_position"] = "[" + ", ".join(str(int(v)) for v in tile_position) + "]"
    if tile_size:
        kw["tile_size"] = "[" + ", ".join(str(int(v)) for v in tile_size) + "]"
    tr.emit("tensor.matmul", d.operand(tr), _onchip(stationary, "stationary"),
            _onchip(moving, "moving"), **kw)


def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None, name=None):
    """dst (+)= dequantized MX matmul of x4-packed MXFP8 stationary [P, M] and moving [P, N]
    (4P contraction rows) with their E8M0 scale tiles (``tensor.matmul_mx``, trn3 only).
    PSUM accumulation follows ``nc_matmul``: the first write to a region overwrites, later
    ones accumulate (``accumulate=`` forces either; not an NKI 0.6 argument)."""
    tr = tracer()
    d = _tile(dst, "dst")
    if d.kind != "psum":
        fail("nc_matmul_mx writes PSUM: dst must be an nl.psum tile")
    if accumulate is None:
        acc = _psum_accumulate(d)
    else:
        acc = bool(accumulate)
        _mark_written(d)
    kw = {"stationary_scale": _onchip(stationary_scale, "stationary_scale"),
          "moving_scale": _onchip(moving_scale, "moving_scale"), "accumulate": _bool(acc)}
    if tile_position:
        kw["tile_position"] = "[" + ", ".join(str(int(v)) for v in tile_position) + "]"
    if tile_size:
        kw["tile_size"] = "[" + ", ".join(str(int(v)) for v in tile_size) + "]"
    tr.emit("tensor.matmul_mx", d.operand(tr), _onchip(stationary, "stationary"),
            _onchip(moving, "moving"), **kw)


def quantize_mx(dst, src, dst_scale, name=None):
    """Quantize bf16/fp16 src [P, 4F] to MXFP8 dst [P, F] (x4-packed) and one E8M0 scale per
    block of 8 partitions x 4 values in dst_scale (``vector.quantize_mx``, trn3 only)."""
    tracer().emit("vector.quantize_mx", _onchip(dst, "dst"), _onchip(src, "src"),
                  dst_scale=_onchip(dst_scale, "dst_scale"))


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """dst[F, P] = data[P, F]: TensorE (``tensor.transpose``, dst in PSUM) or VectorE
    (``vector.transpose``, up to 32x32)."""
    tr = tracer()
    d = _tile(dst, "dst")
    use_vector = engine == "vector" or (engine != "tensor" and d.kind != "psum")
    if engine == "tensor" and d.kind != "psum":
        fail("nc_transpose on TensorE writes PSUM: dst must be an nl.psum tile")
    tr.emit("vector.transpose" if use_vector else "tensor.transpose",
            _onchip(dst, "dst"), _onchip(data, "data"))
    _mark_written(dst)


# ------------------------------------------------------------------------------------------
# everything else


HOOKS["nisa"] = sys.modules[__name__]


def __getattr__(name: str):
    return unsupported_name("isa", name)
