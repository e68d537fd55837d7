"""``nki.language`` (NKI 0.6.0 names): dtypes, buffers, tensor creation, loops, and the
convenience layer (``nl.load``/``store``, elementwise math, reductions, ``matmul``), each of
which expands to ``nki.isa`` calls that the tracer records.

Engine policy of the convenience layer (NKI leaves it to the compiler): transcendental and
LUT functions (``exp``, ``rsqrt``, ``square``, ...) run on ScalarE (``scalar.activation``),
binary arithmetic, reductions, ``reciprocal`` and ``negative`` on VectorE; ``nl.matmul`` and
``nl.transpose`` on TensorE. Results of these wrappers are new SBUF tiles (PSUM for
``matmul``/``transpose``) allocated at the calling line."""

from __future__ import annotations

import sys

import numpy as np

from neuronemu.nki import isa as _isa
from neuronemu.nki._control import dynamic_range, fori_loop, while_loop  # noqa: F401 (nl names)
from neuronemu.nki._trace import (
    HOOKS,
    SPACES,
    DynSlice,
    NKIObject,  # noqa: F401 - nl.NKIObject, a base class of kernels
    NkiTensor,
    dtype_name,
    dtype_tables,
    fail,
    numpy_dtype,
    tracer,
    unsupported_name,
    user_site,
)

# ------------------------------------------------------------------------------------------
# dtypes and buffers

_BY_NAME = dtype_tables()[0]
float32 = _BY_NAME["float32"]
bfloat16 = _BY_NAME["bfloat16"]
float16 = _BY_NAME["float16"]
float8_e4m3 = _BY_NAME["float8_e4m3"]
float8_e4m3fn = _BY_NAME["float8_e4m3fn"]
float8_e5m2 = _BY_NAME["float8_e5m2"]
int8 = _BY_NAME["int8"]
uint8 = _BY_NAME["uint8"]
int16 = _BY_NAME["int16"]
uint16 = _BY_NAME["uint16"]
int32 = _BY_NAME["int32"]
uint32 = _BY_NAME["uint32"]
bool_ = _BY_NAME["bool_"]
# MX (trn3) element and scale types. The x4-packed types have no numpy dtype of their own
# (neuronemu stores them as uint32 / uint16 words), so they are passed by neuronemu's name.
float8_e4m3fn_x4 = "float8_e4m3fn_x4"
float8_e5m2_x4 = "float8_e5m2_x4"
float4_e2m1fn_x4 = "float4_e2m1fn_x4"
float8_e8m0fnu = _BY_NAME["float8_e8m0fnu"]

sbuf = SPACES["sbuf"]
psum = SPACES["psum"]
hbm = SPACES["hbm"]
shared_hbm = SPACES["shared_hbm"]
private_hbm = SPACES["private_hbm"]

tensor = NkiTensor
MemoryRegion = type(SPACES["sbuf"])


def is_hbm(buffer) -> bool:
    """Whether ``buffer`` (``nl.shared_hbm``, a tensor's ``.buffer``, ...) is HBM."""
    return _space(buffer).kind == "hbm"


def is_sbuf(buffer) -> bool:
    return _space(buffer).kind == "sbuf"


def is_psum(buffer) -> bool:
    return _space(buffer).kind == "psum"


def is_on_chip(buffer) -> bool:
    return _space(buffer).kind in ("sbuf", "psum")


class finfo:
    """Limits of a float dtype (``nl.finfo(nl.bfloat16).max``), from numpy / ml_dtypes."""

    def __init__(self, dtype) -> None:
        import ml_dtypes

        npd = numpy_dtype(dtype)
        info = ml_dtypes.finfo(npd)
        self.dtype = npd
        self.bits = info.bits
        self.max = float(info.max)
        self.min = float(info.min)
        self.eps = float(info.eps)
        self.tiny = float(info.tiny)
        self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, min={self.min}, max={self.max}, eps={self.eps})"


class iinfo:
    """Limits of an integer dtype."""

    def __init__(self, dtype) -> None:
        info = np.iinfo(numpy_dtype(dtype))
        self.dtype, self.bits, self.min, self.max = info.dtype, info.bits, int(info.min), int(
            info.max)


class tile_size:
    """Hardware tile limits (NeuronCore-v3; trn3's larger moving size is not reflected)."""

    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_partition_bytes = 16384
    total_available_sbuf_size = 229376


# ------------------------------------------------------------------------------------------
# loops and indices: the tracer unrolls every static loop (0.2+ specialisation)


def affine_range(*args, **kwargs):
    """``range`` (deprecated alias in NKI 0.3+; the tracer unrolls it)."""
    return range(*args)


def sequential_range(*args, **kwargs):
    return range(*args)


def static_range(*args, **kwargs):
    return range(*args)


def ds(start, size, step: int = 1) -> DynSlice:
    """The slice start:start+size."""
    return DynSlice(start, size, step)


def program_id(axis: int = 0) -> int:
    """Index of the program being traced along ``axis`` of the launch grid (``kernel[g](...)``;
    0 without a grid)."""
    return tracer().program_id(axis)


def num_programs(axes=None) -> int:
    """Programs along ``axes`` (an int or a tuple of axes; None: the whole grid)."""
    return tracer().num_programs(axes)


def program_ndim() -> int:
    """Dimensions of the launch grid (0 without a grid)."""
    return len(tracer().grid)


# ------------------------------------------------------------------------------------------
# creation


def _space(buffer):
    if buffer is None:
        return SPACES["sbuf"]
    if isinstance(buffer, str) and buffer in SPACES:
        return SPACES[buffer]
    if isinstance(buffer, NkiTensor):
        return buffer.buffer
    if buffer in SPACES.values():
        return buffer
    fail(f"buffer={buffer!r} is not one of nl.sbuf, nl.psum, nl.shared_hbm, nl.hbm, "
         f"nl.private_hbm")
    raise AssertionError


def ndarray(shape, dtype, buffer=None, name: str = "", address=None) -> NkiTensor:
    """A new tensor: on chip (``nl.sbuf``, the default, or ``nl.psum``; placed by live range
    after the trace, or at ``address=(0, BYTE_OFFSET)``), or in HBM (a kernel output when the
    kernel returns it)."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    space = _space(buffer)
    tr = tracer()
    site = user_site()
    if space.kind == "hbm":
        if space.name == "private_hbm":
            return tr.hbm_tensor(name or "out", dtype_name(dtype), shape, "scratch", site)
        return tr.shared_hbm_tensor(name or "out", dtype_name(dtype), shape, site)
    return tr.onchip(space.kind, dtype_name(dtype), shape, site, name, _address(address))


def _address(address) -> int | None:
    """``address=(partition_offset, byte_offset)`` -> the byte offset (partition 0 only)."""
    if address is None:
        return None
    try:
        p, f = (int(v) for v in address)
    except (TypeError, ValueError):
        fail(f"address= is (partition_offset, byte_offset), got {address!r}")
    if p != 0:
        fail(f"address=({p}, {f}): a tile starting at partition {p} is not supported; tiles "
             f"start at partition 0 (slice the partitions of a larger tile instead)",
             unsupported=True)
    if f < 0 or f % 4:
        fail(f"address=(0, {f}): the byte offset must be a non-negative multiple of 4")
    return f


def _filled(shape, dtype, buffer, value, name):
    t = ndarray(shape, dtype, buffer=buffer, name=name)
    if t.kind == "hbm":
        fail("nl.zeros/ones/full in HBM are not supported (fill an SBUF tile and store it)",
             unsupported=True)
    _isa.memset(t, value)
    return t


def zeros(shape, dtype, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    return _filled(shape, dtype, buffer, 0.0, name)


def ones(shape, dtype, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    return _filled(shape, dtype, buffer, 1.0, name)


def full(shape, fill_value, dtype, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    return _filled(shape, dtype, buffer, fill_value, name)


def zeros_like(a, dtype=None, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def empty_like(a, dtype=None, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def shared_constant(constant, dtype=None, **kwargs) -> NkiTensor:
    """An HBM tensor holding ``constant`` (a numpy array or nested list): an input of the
    run, as NKI embeds it in the binary. ``dtype`` converts it first."""
    for key in kwargs:
        fail(f"shared_constant() got an unexpected keyword argument {key!r}")
    array = np.asarray(constant)
    if dtype is not None:
        array = array.astype(numpy_dtype(dtype))
    if array.ndim == 0:
        array = array.reshape(1, 1)
    tr = tracer()
    t = tr.hbm_tensor("const", dtype_name(array.dtype), array.shape, "input", user_site())
    tr.constants[t._buffer.slot.name] = np.ascontiguousarray(array)
    return t


def shared_identity_matrix(n: int, dtype=uint8, dst=None, **kwargs) -> NkiTensor:
    """An n x n identity matrix in SBUF (``dst``, or a new tile allocated at the calling
    line), loaded by DMA from a constant HBM tensor."""
    for key in kwargs:
        fail(f"shared_identity_matrix() got an unexpected keyword argument {key!r}")
    n = int(n)
    source = shared_constant(np.eye(n, dtype=numpy_dtype(dtype)))
    out = ndarray((n, n), dtype, buffer=sbuf) if dst is None else dst
    _isa.dma_copy(out, source)
    return out


def broadcast_to(x, shape, **kwargs) -> NkiTensor:
    """``x`` with its size-1 dims repeated to ``shape`` (see ``NkiTensor.broadcast_to``): a
    free-dim broadcast is a view any instruction reads; an on-chip partition broadcast is a
    new SBUF tile filled by a DMA."""
    for key in kwargs:
        fail(f"broadcast_to() got an unexpected keyword argument {key!r}")
    if not isinstance(x, NkiTensor):
        fail(f"nl.broadcast_to needs a tensor, got {type(x).__name__}")
    return x.broadcast_to(shape)


def expand_dims(x, axis) -> NkiTensor:
    """``x`` with a new size-1 dim at ``axis`` (a view)."""
    if not isinstance(x, NkiTensor):
        fail(f"nl.expand_dims needs a tensor, got {type(x).__name__}")
    return x.expand_dim(axis)


# ------------------------------------------------------------------------------------------
# data movement


def load(src, dtype=None, **kwargs) -> NkiTensor:
    """A new SBUF tile holding ``src`` (HBM), by DMA."""
    _no_mask(kwargs)
    if not isinstance(src, NkiTensor):
        fail(f"nl.load needs a tensor, got {type(src).__name__}")
    t = ndarray(src.shape, dtype or src.dtype, buffer=sbuf)
    _isa.dma_copy(t, src)
    return t


def store(dst, value, **kwargs) -> None:
    """Write ``value`` (SBUF, or PSUM through an SBUF copy) into ``dst`` (HBM), by DMA."""
    _no_mask(kwargs)
    if not isinstance(value, NkiTensor):
        fail(f"nl.store needs a tile to store, got {type(value).__name__}")
    if value.kind == "psum":
        staged = ndarray(value.shape, dst.dtype, buffer=sbuf)
        _isa.tensor_copy(staged, value)
        value = staged
    _isa.dma_copy(dst, value)


def copy(x, dtype=None, **kwargs) -> NkiTensor:
    """A new SBUF tile holding x (cast to dtype): ``vector.tensor_copy``."""
    _no_mask(kwargs)
    out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
    if x.kind == "hbm":
        _isa.dma_copy(out, x)
    else:
        _isa.tensor_copy(out, x)
    return out


copy._nki_act = "copy"


def _no_mask(kwargs) -> None:
    if "mask" in kwargs:
        fail("mask= (NKI 0.1 predicates) is not supported; slice the tiles instead",
             unsupported=True)
    for key in kwargs:
        fail(f"unexpected keyword argument {key!r}")


# ------------------------------------------------------------------------------------------
# elementwise


def _result_dtype(*values) -> np.dtype:
    tiles = [v for v in values if isinstance(v, NkiTensor)]
    if any(numpy_dtype(t.dtype) == float32 for t in tiles) or any(
            t.kind == "psum" for t in tiles):
        return float32
    return tiles[0].dtype


def _column(t: NkiTensor, other: NkiTensor) -> bool:
    """t is a [P, 1] column that broadcasts along other's free axes."""
    return (t.shape[0] == other.shape[0] and all(s == 1 for s in t.shape[1:])
            and t.shape != other.shape)


def _binary(op: str, x, y, dtype=None, **kwargs) -> NkiTensor:
    _no_mask(kwargs)
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if not xt and not yt:
        fail(f"nl.{op} needs at least one tile operand")
    out_dtype = dtype or _result_dtype(x, y)
    if xt and yt:
        if x.shape == y.shape:
            out = ndarray(x.shape, out_dtype, buffer=sbuf)
            _isa.tensor_tensor(out, x, y, op=op)
            return out
        if _column(y, x):
            out = ndarray(x.shape, out_dtype, buffer=sbuf)
            _isa.tensor_scalar(out, x, op, y)
            return out
        if _column(x, y):
            out = ndarray(y.shape, out_dtype, buffer=sbuf)
            _isa.tensor_scalar(out, y, op, x, reverse0=True)
            return out
        fail(f"nl.{op}: shapes {list(x.shape)} and {list(y.shape)} do not broadcast on chip "
             f"(same shape, or a [P, 1] column; a [1, N] row must be broadcast by DMA: "
             f"nl.load(row.broadcast_to((P, N))))", unsupported=True)
    tile, value, reverse = (x, y, False) if xt else (y, x, True)
    out = ndarray(tile.shape, out_dtype, buffer=sbuf)
    _isa.tensor_scalar(out, tile, op, value, reverse0=reverse)
    return out


def _make_binary(op: str):
    def f(x, y, dtype=None, **kwargs):
        return _binary(op, x, y, dtype, **kwargs)

    f.__name__ = op
    f.__qualname__ = op
    f.__doc__ = f"Elementwise x {op} y (same shape, a [P, 1] column or a scalar)."
    f._nki_alu = op
    return f


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
power = _make_binary("power")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
abs_max = _make_binary("abs_max")
abs_min = _make_binary("abs_min")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
logical_xor = _make_binary("logical_xor")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
left_shift = _make_binary("left_shift")
right_shift = _make_binary("right_shift")
maximum._nki_reduce = "maximum"
minimum._nki_reduce = "minimum"
add._nki_reduce = "add"
multiply._nki_reduce = "multiply"


def bypass(x, *args, **kwargs):
    fail("nl.bypass is an operator name, not a function", unsupported=True)


bypass._nki_alu = "bypass"


def invert(x, dtype=None, **kwargs):
    _no_mask(kwargs)
    out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
    _isa.tensor_tensor(out, x, x, op="invert")
    return out


invert._nki_alu = "invert"


def _make_unary(func: str):
    def f(x, dtype=None, **kwargs):
        _no_mask(kwargs)
        if not isinstance(x, NkiTensor):
            fail(f"nl.{func} needs a tile, got {type(x).__name__}")
        out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
        _isa.activation(out, func, x)
        return out

    f.__name__ = func
    f.__qualname__ = func
    f.__doc__ = f"Elementwise {func}(x) on ScalarE (scalar.activation func={func})."
    f._nki_act = func
    return f


exp = _make_unary("exp")
log = _make_unary("log")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
relu = _make_unary("relu")
gelu = _make_unary("gelu")
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh")
gelu_apprx_sigmoid = _make_unary("gelu_apprx_sigmoid")
gelu_dx = _make_unary("gelu_dx")
silu = _make_unary("silu")
silu_dx = _make_unary("silu_dx")
sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
square = _make_unary("square")
abs = _make_unary("abs")
sign = _make_unary("sign")
softplus = _make_unary("softplus")
erf = _make_unary("erf")
erf_dx = _make_unary("erf_dx")
sin = _make_unary("sin")
arctan = _make_unary("arctan")
mish = _make_unary("mish")


def reciprocal(x, dtype=None, **kwargs) -> NkiTensor:
    """1 / x on VectorE (``vector.reciprocal``, correctly rounded)."""
    _no_mask(kwargs)
    out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
    _isa.reciprocal(out, x)
    return out


reciprocal._nki_act = "reciprocal"


def negative(x, dtype=None, **kwargs) -> NkiTensor:
    """-x on VectorE (``tensor_scalar`` multiply by -1)."""
    return _binary("multiply", x, -1.0, dtype, **kwargs)


# ------------------------------------------------------------------------------------------
# reductions


def _reduce(op: str, x, axis, dtype=None, keepdims=False, negate=False, **kwargs):
    _no_mask(kwargs)
    if not isinstance(x, NkiTensor):
        fail(f"a reduction needs a tile, got {type(x).__name__}")
    axes = {axis} if isinstance(axis, int) else set(axis)
    ndim = len(x.shape)
    axes = sorted(a % ndim for a in axes)
    kept = [s for i, s in enumerate(x.shape) if i not in axes]
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else tuple(
        kept)
    if len(shape) < 2:
        shape = (x.shape[0], 1)
    out = ndarray(shape, dtype or x.dtype, buffer=sbuf)
    _isa.tensor_reduce(out, op, x, axis=axis, negate=negate, keepdims=keepdims)
    return out


def _make_reduce(op: str, name: str):
    def f(x, axis, dtype=None, keepdims=False, **kwargs):
        return _reduce(op, x, axis, dtype, keepdims, **kwargs)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Reduce the trailing free axes of x with {op} (``vector.tensor_reduce``)."
    f._nki_reduce = op
    return f


sum = _make_reduce("add", "sum")
max = _make_reduce("maximum", "max")
min = _make_reduce("minimum", "min")
prod = _make_reduce("multiply", "prod")
mean = _make_reduce("average", "mean")
max._nki_alu = "maximum"
min._nki_alu = "minimum"


# ------------------------------------------------------------------------------------------
# TensorE


def transpose(x, dtype=None, **kwargs) -> NkiTensor:
    """x[P, F] -> PSUM [F, P] on TensorE (``tensor.transpose``)."""
    _no_mask(kwargs)
    if len(x.shape) != 2:
        fail(f"nl.transpose takes a 2-D tile, got {list(x.shape)}")
    out = ndarray((x.shape[1], x.shape[0]), dtype or x.dtype, buffer=psum)
    _isa.nc_transpose(out, x)
    return out


def matmul(x, y, transpose_x=False, **kwargs) -> NkiTensor:
    """x @ y into a new fp32 PSUM tile (``tensor.matmul``). ``transpose_x=True``: x is given
    as [K, M] (the stationary operand as TensorE takes it); otherwise x [M, K] is transposed
    on TensorE first (``tensor.transpose`` + ``vector.tensor_copy``)."""
    _no_mask(kwargs)
    if transpose_x:
        stationary = x
    else:
        xt = ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=psum)
        _isa.nc_transpose(xt, x)
        stationary = ndarray((x.shape[1], x.shape[0]), x.dtype, buffer=sbuf)
        _isa.tensor_copy(stationary, xt)
    if stationary.shape[0] != y.shape[0]:
        fail(f"nl.matmul: contraction sizes differ: {list(x.shape)} @ {list(y.shape)}")
    out = ndarray((stationary.shape[1], y.shape[1]), float32, buffer=psum)
    _isa.nc_matmul(out, stationary, y, accumulate=False)
    return out


# ------------------------------------------------------------------------------------------
# everything else


HOOKS["nl"] = sys.modules[__name__]
globals()["bool"] = bool_   # ``nl.bool`` (set last: this module's code uses the builtin)


def __getattr__(name: str):
    return unsupported_name("language", name)
