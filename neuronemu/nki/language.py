"""``nki.language`` (NKI 0.6.0 names): dtypes, buffers, tensor creation, loops, and the
convenience layer (``nl.load``/``store``, elementwise math, reductions, ``matmul``), each of
which expands to ``nki.isa`` calls that the tracer records.

Engine policy of the convenience layer (NKI leaves it to the compiler): transcendental and
LUT functions (``exp``, ``rsqrt``, ``square``, ...) run on ScalarE (``scalar.activation``),
binary arithmetic, reductions, ``reciprocal`` and ``negative`` on VectorE; ``nl.matmul`` and
``nl.transpose`` on TensorE. Results of these wrappers are new SBUF tiles (PSUM for
``matmul``/``transpose``) allocated at the calling line."""

from __future__ import annotations

import builtins
import os
import sys

import numpy as np

from neuronemu.nki import isa as _isa
from neuronemu.nki._control import dynamic_range, fori_loop, while_loop  # noqa: F401 (nl names)
from neuronemu.nki._trace import (
    _CURRENT,
    HOOKS,
    SPACES,
    DynSlice,
    NKIObject,  # noqa: F401 - nl.NKIObject, a base class of kernels
    NkiTensor,
    Space,
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
tfloat32 = "tfloat32"     # no numpy dtype: a 32-bit word with 13 low zero bits (isa/dtypes.toml)
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
    if type(buffer) is Space:
        return buffer
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
    else:
        shape = tuple(map(int, shape))
    space = _space(buffer)
    tr = tracer()
    site = user_site()
    dtype = dtype_name(dtype)
    if space.kind == "hbm":
        if space.name == "private_hbm":
            t = tr.hbm_tensor(name or "scratch", dtype, shape, "scratch", site)
            t._buffer.slot.private = True
            return t
        return tr.shared_hbm_tensor(name or "out", dtype, shape, site)
    return tr.onchip(space.kind, dtype, shape, site, name,
                     None if address is None else _address(address, dtype))


def _address(address, dtype: str) -> int | None:
    """``address=(partition_offset, byte_offset)`` -> the byte offset (partition 0 only), a
    multiple of the dtype's size."""
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
    from neuronemu.isa import dtypes

    item = dtypes.get(dtype).itemsize
    if f < 0 or f % item:
        fail(f"address=(0, {f}): the byte offset must be a non-negative multiple of {item} "
             f"(the size of one {dtype})")
    return f


def _filled(shape, dtype, buffer, value, name):
    t = ndarray(shape, dtype, buffer=buffer, name=name)
    if t.kind == "hbm":
        fail("nl.zeros/ones/full in HBM are not supported (fill an SBUF tile and store it)",
             unsupported=True)
    if t.kind == "psum" and value == 0.0 and tracer().schedule == "compiler":
        # the compiler folds a PSUM zero-fill into the first matmul accumulating there (its
        # accumulate flag off): emitted only if something else uses the tile first
        t._buffer.pending_zero = t
        return t
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
    """An HBM tensor holding ``constant`` (a numpy array, a nested list, or the path of a
    ``.npy`` file, as NKI 0.6 takes): an input of the run, as NKI embeds it in the binary.
    ``dtype`` converts it first."""
    for key in kwargs:
        fail(f"shared_constant() got an unexpected keyword argument {key!r}")
    if isinstance(constant, (str, os.PathLike)):
        constant = _load_npy(constant)
    array = np.asarray(constant)
    if array.dtype.kind in "USO":
        fail(f"shared_constant() takes a numeric array or the path of a .npy file, not an "
             f"array of {array.dtype}")
    if dtype is not None:
        array = array.astype(numpy_dtype(dtype))
    if array.ndim == 0:
        array = array.reshape(1, 1)
    tr = tracer()
    t = tr.hbm_tensor("const", dtype_name(array.dtype), array.shape, "input", user_site())
    tr.constants[t._buffer.slot.name] = np.ascontiguousarray(array)
    return t


def _load_npy(path) -> np.ndarray:
    """The array of a ``.npy`` file given to shared_constant (no pickled objects)."""
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        fail(f"shared_constant(): no file {os.fspath(path)!r}")
    except (OSError, ValueError) as error:
        fail(f"shared_constant(): {os.fspath(path)!r} is not a .npy array file ({error})")


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
        fail("mask= (NKI 0.1 predicates) is taken by nl.load and nl.store of the 0.1 dialect "
             "(import neuronxcc.nki.language), not here; slice the tiles instead",
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
    return (t.shape[0] == other.shape[0] and builtins.all(s == 1 for s in t.shape[1:])
            and t.shape != other.shape)


def _free_broadcast(x: NkiTensor, y: NkiTensor) -> tuple[int, ...] | None:
    """The shape x and y broadcast to along their free dims (same partitions and number of
    dims, each free dim equal or 1 in one of them), else None."""
    if len(x.shape) != len(y.shape) or x.shape[0] != y.shape[0]:
        return None
    shape = [x.shape[0]]
    for a, b in zip(x.shape[1:], y.shape[1:]):
        if a != b and 1 not in (a, b):
            return None
        shape.append(builtins.max(a, b))
    return tuple(shape)


def _stretched(t: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """t read as ``shape``: its size-1 free dims repeated (step 0), no copy."""
    if t.shape == shape:
        return t
    pairs, offset, dtype = t._pattern()
    if len(pairs) != len(shape):
        fail(f"a [{', '.join(map(str, t.shape))}] view cannot be broadcast to {list(shape)}",
             unsupported=True)
    return t._with_pattern([(st, c) if c == n else (0, n) for (st, c), n in zip(pairs, shape)],
                           offset, dtype)


def _binary(op: str, x, y, dtype=None, **kwargs) -> NkiTensor:
    _no_mask(kwargs)
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if not xt and not yt:
        fail(f"nl.{op} needs at least one tile operand")
    out_dtype = dtype or _result_dtype(x, y)
    if op == "divide" and dtype is None and np.issubdtype(np.dtype(out_dtype), np.integer):
        out_dtype = float32   # (a true division, as numpy's: nl.floor(i / w) is a row number)
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
        if (len(x.shape) == len(y.shape) and 1 in (x.shape[0], y.shape[0])
                and x.shape[0] != y.shape[0] and tracer().dialect == "0.1"):
            # NKI 0.1: a one-partition operand broadcasts over the partitions (the compiler's
            # DMA partition broadcast into a new tile, as t.broadcast_to makes it)
            if x.shape[0] == 1:
                x = x.broadcast_to((y.shape[0], *x.shape[1:]))
            else:
                y = y.broadcast_to((x.shape[0], *y.shape[1:]))
            return _binary(op, x, y, dtype=dtype, **kwargs)
        shape = _free_broadcast(x, y)
        if shape is not None:   # size-1 free dims read again and again (a step-0 pattern)
            out = ndarray(shape, out_dtype, buffer=sbuf)
            _isa.tensor_tensor(out, _stretched(x, shape), _stretched(y, shape), op=op)
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
    if axes and 0 not in axes and axes != list(range(axes[0], ndim)):
        # axes in the middle (nl.sum(t[i0, 2*i1+i2, 2*i3+i4], axis=[2, 4])): the same elements
        # read with them last (a permuted access pattern, no copy), as the compiler may
        x = x.permute([a for a in range(ndim) if a not in axes] + axes)
        axis = list(range(ndim - len(axes), ndim))
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
    # TensorE reads SBUF only: a PSUM operand (a transpose's result) is copied out first, as
    # the compiler does for this call
    x, y = (_in_sbuf(t) for t in (x, y))
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
# NKI 0.3+ convenience wrappers built from several instructions. NKI leaves their lowering to
# its compiler; these use the instructions above, each result rounded as that instruction
# rounds, and say how in their docstrings (docs/nki.md lists the accuracy).


def _in_sbuf(t):
    if not isinstance(t, NkiTensor) or t.kind != "psum":
        return t
    copy = ndarray(t.shape, t.dtype, buffer=sbuf)
    _isa.tensor_copy(copy, t)
    return copy


def _tile_of(value, like: NkiTensor, dtype) -> NkiTensor:
    """``value`` as a tile shaped like ``like``: itself, or a new tile filled with a number."""
    if isinstance(value, NkiTensor):
        return value
    if not isinstance(value, (int, float, np.integer, np.floating)):
        fail(f"expected a tile or a number, got {type(value).__name__}")
    t = ndarray(like.shape, dtype, buffer=sbuf)
    _isa.memset(t, float(value))
    return t


def _over_free_axes(x: NkiTensor, axis, what: str) -> list[int]:
    """The reduced axes of ``x`` (the last free ones, as NKI requires)."""
    if not isinstance(x, NkiTensor):
        fail(f"nl.{what} needs a tile, got {type(x).__name__}")
    ndim = len(x.shape)
    axes = sorted(a % ndim for a in ({axis} if isinstance(axis, int) else set(axis)))
    if not axes or 0 in axes or axes != list(range(axes[0], ndim)):
        fail(f"nl.{what}: axis={axis!r} must be the last free axes of the tile (ending at axis "
             f"{ndim - 1}; axis 0 is the partition axis)")
    return axes


def _spread(column: NkiTensor, x: NkiTensor) -> NkiTensor:
    """A keepdims reduction result read at every element of ``x`` (a free-axis broadcast
    view; a [P, 1] column is used as it is)."""
    return column if _column(column, x) else column.broadcast_to(x.shape)


def _round_down(x: NkiTensor) -> NkiTensor:
    """floor(x) in float32, exact: x rounded to the nearest integer by a float -> int32 -> float
    copy (round to nearest even), minus 1 where that rounded up. Elements with |x| >= 2^23
    (integers already), infinities, NaN and zeros (their sign kept) are x itself."""
    x32 = x if numpy_dtype(x.dtype) == float32 else copy(x, float32)
    small = _binary("less", abs(x32), float(2 ** 23), uint8)
    nonzero = _binary("not_equal", x32, 0.0, uint8)
    keep = _binary("logical_and", small, nonzero, uint8)
    as_int = copy(x32, int32)
    rounded = copy(as_int, float32)
    up = _binary("greater", rounded, x32, float32)
    floor_small = _binary("subtract", rounded, up, float32)
    out = copy(x32, float32)
    _isa.tensor_copy_predicated(dst=out, src=floor_small, predicate=keep)
    return out


def _cast(t: NkiTensor, dtype) -> NkiTensor:
    return t if dtype is None or numpy_dtype(dtype) == numpy_dtype(t.dtype) else copy(t, dtype)


def floor(x, dtype=None, **kwargs) -> NkiTensor:
    """Largest integer <= x, elementwise (exact; see ``_round_down``)."""
    _no_mask(kwargs)
    return _cast(_round_down(x), dtype or x.dtype)


def ceil(x, dtype=None, **kwargs) -> NkiTensor:
    """Smallest integer >= x, elementwise: -floor(-x) (exact; ceil(-0.5) is -0.0)."""
    _no_mask(kwargs)
    return _cast(negative(_round_down(negative(x, float32))), dtype or x.dtype)


def trunc(x, dtype=None, **kwargs) -> NkiTensor:
    """x with its fraction dropped (toward zero), elementwise: floor(|x|) with x's sign
    (exact; a zero keeps its sign)."""
    _no_mask(kwargs)
    x32 = x if numpy_dtype(x.dtype) == float32 else copy(x, float32)
    magnitude = _round_down(abs(x32))
    out = copy(magnitude, float32)
    _isa.tensor_copy_predicated(dst=out, src=negative(magnitude, float32),
                                predicate=_binary("less", x32, 0.0, uint8))
    _isa.tensor_copy_predicated(dst=out, src=x32, predicate=_binary("equal", x32, 0.0, uint8))
    return _cast(out, dtype or x.dtype)


def _remainder(x, y, dtype, floor_division: bool) -> NkiTensor:
    xt, yt = isinstance(x, NkiTensor), isinstance(y, NkiTensor)
    if not xt and not yt:
        fail("nl.fmod / nl.mod need at least one tile operand")
    like = x if xt else y
    x = _tile_of(x, like, float32)
    y = _tile_of(y, like, float32) if yt or not xt else y
    quotient = _binary("divide", x, y, float32)
    whole = _round_down(quotient) if floor_division else trunc(quotient, float32)
    return _cast(_binary("subtract", x, _binary("multiply", whole, y, float32), float32),
                 dtype or like.dtype)


def fmod(x, y, dtype=None, **kwargs) -> NkiTensor:
    """x - trunc(x / y) * y, elementwise (the sign of x, as numpy.fmod), each step rounded to
    float32: exact when x / y is an exact float32 integer and the product is exact; near a
    multiple of y the rounded quotient can differ from numpy's exact remainder by one y."""
    _no_mask(kwargs)
    return _remainder(x, y, dtype, floor_division=False)


def mod(x, y, dtype=None, **kwargs) -> NkiTensor:
    """x - floor(x / y) * y, elementwise (the sign of y, as numpy.mod / Python's %), each step
    rounded to float32 (the same caveat as ``fmod``)."""
    _no_mask(kwargs)
    return _remainder(x, y, dtype, floor_division=True)


def logical_not(x, dtype=None, **kwargs) -> NkiTensor:
    """1 - x for 0/1 inputs: logical_xor with 1, as NKI does (nonzero counts as true)."""
    return _binary("logical_xor", x, 1.0, dtype, **kwargs)


def cos(x, dtype=None, **kwargs) -> NkiTensor:
    """cos(x) = sin(x + pi/2) on ScalarE (one activation with a bias; the argument is rounded
    to float32 first, an error of half an ulp of x + pi/2)."""
    _no_mask(kwargs)
    out = ndarray(x.shape, dtype or x.dtype, buffer=sbuf)
    _isa.activation(out, "sin", x, bias=float(np.float32(np.pi / 2)))
    return out


def tan(x, dtype=None, **kwargs) -> NkiTensor:
    """sin(x) / cos(x): two ScalarE activations and a VectorE divide."""
    _no_mask(kwargs)
    return _cast(_binary("divide", sin(x, float32), cos(x, float32), float32), dtype or x.dtype)


gelu_apprx_sigmoid_dx = _make_unary("gelu_apprx_sigmoid_dx")
prelu = "prelu"           # an activation function name (nisa.activation(op=nl.prelu))
average = "average"       # a reduction operator name (nisa.tensor_reduce(op=nl.average))
DType = str               # NKI's annotation type for dtypes


def var(x, axis, dtype=None, keepdims=False, **kwargs) -> NkiTensor:
    """Population variance over the last free axes: mean((x - mean(x))^2), the shape with the
    reduced axes kept (as NKI: ``keepdims`` is ignored)."""
    _no_mask(kwargs)
    _over_free_axes(x, axis, "var")
    m = _reduce("average", x, axis, float32, keepdims=True)
    d = _binary("subtract", x, _spread(m, x), float32)
    return _reduce("average", _binary("multiply", d, d, float32), axis, dtype or x.dtype,
                   keepdims=True)


def _all(x, axis, dtype=None, **kwargs) -> NkiTensor:
    """1 where every element along the last free axes is nonzero, else 0 (a minimum reduce of
    x != 0)."""
    _no_mask(kwargs)
    _over_free_axes(x, axis, "all")
    return _reduce("minimum", _binary("not_equal", x, 0.0, float32), axis, dtype or x.dtype)


def softmax(x, axis=-1, dtype=None, **kwargs) -> NkiTensor:
    """exp(x - max) / sum(exp(x - max)) over the last free axes: a max reduce, exp on ScalarE,
    a sum reduce, a reciprocal and a multiply (float32 in between)."""
    _no_mask(kwargs)
    _over_free_axes(x, axis, "softmax")
    top = _reduce("maximum", x, axis, float32, keepdims=True)
    e = exp(_binary("subtract", x, _spread(top, x), float32), float32)
    total = _reduce("add", e, axis, float32, keepdims=True)
    return _binary("multiply", e, _spread(reciprocal(total, float32), e), dtype or x.dtype)


def rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None, **kwargs):
    """x / sqrt(sum(x^2) / n + epsilon) * w over the last free axes (float32 in between;
    ``compute_dtype`` other than float32 is not modelled)."""
    _no_mask(kwargs)
    _over_free_axes(x, axis, "rms_norm")
    total = _reduce("add", _binary("multiply", x, x, float32), axis, float32, keepdims=True)
    mean_square = _binary("add", _binary("multiply", total, 1.0 / float(n), float32),
                          float(epsilon), float32)
    scaled = _binary("multiply", x, _spread(rsqrt(mean_square, float32), x), float32)
    return _binary("multiply", scaled, w, dtype or x.dtype)


def where(condition, x, y, dtype=None, **kwargs) -> NkiTensor:
    """x where condition is nonzero, else y (x, y tiles or numbers): y's values, then a
    predicated copy of x's (``vector.tensor_copy_predicated``; bits copied, NaN kept)."""
    _no_mask(kwargs)
    if not isinstance(condition, NkiTensor):
        fail(f"nl.where needs a condition tile, got {type(condition).__name__}")
    out_dtype = dtype or next((v.dtype for v in (x, y) if isinstance(v, NkiTensor)),
                              condition.dtype)
    predicate = _binary("not_equal", condition, 0.0, uint8)
    out = ndarray(condition.shape, out_dtype, buffer=sbuf)
    if isinstance(y, NkiTensor):
        _isa.tensor_copy(out, y)
    else:
        _isa.memset(out, float(y))
    chosen = _tile_of(x, condition, out_dtype)
    _isa.tensor_copy_predicated(dst=out, src=_cast(chosen, out_dtype), predicate=predicate)
    return out


def dropout(x, rate, dtype=None, **kwargs) -> NkiTensor:
    """Each element zeroed with probability ``rate`` (a number or a [P, 1] column), no
    rescaling: ``nisa.dropout``, drawing from the run's seeded random stream."""
    _no_mask(kwargs)
    out = ndarray(x.shape, x.dtype, buffer=sbuf)
    _isa.dropout(dst=out, data=x, prob=rate)
    return _cast(out, dtype)


def random_seed(seed) -> None:
    """Restart the random stream of ``rand``/``dropout`` from a [1, 1] int32/uint32 tile."""
    _isa.set_rng_seed(seed)


def rand(shape, dtype, buffer=None, name: str = "", **kwargs) -> NkiTensor:
    """Uniform values on the 2^24 equally spaced points of [0, 1): 32 random bits per element
    (``vector.rng``), the top 24 kept, times 2^-24 (exact in float32)."""
    for key in kwargs:
        fail(f"rand() got an unexpected keyword argument {key!r}")
    bits = ndarray(shape, uint32, buffer=sbuf)
    _isa.rng(dst=bits)
    top = _binary("right_shift", bits, 8, uint32)
    out = ndarray(shape, dtype, buffer=buffer, name=name)
    _isa.tensor_copy(out, _binary("multiply", copy(top, float32), 2.0 ** -24, float32))
    return out


class no_reorder:
    """``with nl.no_reorder():`` keeps the block in program order: under the compiler's
    schedule (docs/timing.md) its instructions are not moved into earlier idle gaps of their
    engine, and nothing later is moved before them. Values never depend on it."""

    def __enter__(self):
        if _CURRENT:
            _CURRENT[-1].no_reorder += 1
        return self

    def __exit__(self, *exc) -> bool:
        if _CURRENT:
            _CURRENT[-1].no_reorder -= 1
        return False


def load_transpose2d(src, dtype=None, **kwargs) -> NkiTensor:
    """A new SBUF tile holding the 2-D HBM tensor ``src`` transposed: one DMA transpose for
    2-byte dtypes (the DMA engines transpose those only), else a load and a TensorE transpose
    through PSUM (bits unchanged)."""
    _no_mask(kwargs)
    if not isinstance(src, NkiTensor) or len(src.shape) != 2:
        fail("nl.load_transpose2d takes a 2-D HBM tensor")
    out = ndarray((src.shape[1], src.shape[0]), src.dtype, buffer=sbuf)
    if numpy_dtype(src.dtype).itemsize == 2:
        _isa.dma_transpose(out, src)
    else:
        _isa.tensor_copy(out, transpose(load(src)))
    return _cast(out, dtype)


def gather_flattened(data, indices, axis=0, dtype=None, **kwargs) -> NkiTensor:
    """out[p, j] = data[p, indices[p, j]] over each partition's flattened free elements
    (``gpsimd.n_gather``; an index out of range stops the run with a located error)."""
    _no_mask(kwargs)
    if axis not in (0, None):
        fail(f"nl.gather_flattened: axis={axis!r}; the gather runs along each partition's "
             f"flattened free elements (axis=0)", unsupported=True)
    out = ndarray(indices.shape, data.dtype, buffer=sbuf)
    _isa.nc_n_gather(dst=out, data=data, indices=indices)
    return _cast(out, dtype)


def device_print(print_prefix, tensor) -> None:
    """Print ``print_prefix`` and the tensor's values as they are at this point of the
    kernel: copied here (one DMA) into an HBM tensor of the run, printed to stdout when the
    run ends (in a device loop: the last iteration's values)."""
    if not isinstance(tensor, NkiTensor):
        fail(f"nl.device_print needs a tensor, got {type(tensor).__name__}")
    tr = tracer()
    kept = tr.hbm_tensor("printed", dtype_name(tensor.dtype), tensor.shape, "output",
                         user_site())
    if tensor.kind == "psum":
        tensor = copy(tensor)
    _isa.dma_copy(kept, tensor)
    tr.prints.append((str(print_prefix), kept._buffer.slot.name))


# ------------------------------------------------------------------------------------------
# everything else


HOOKS["nl"] = sys.modules[__name__]
# ``nl.bool`` and ``nl.all`` (code in this module says builtins.all)
globals()["bool"] = bool_
_all.__name__ = _all.__qualname__ = "all"
globals()["all"] = _all


def __getattr__(name: str):
    return unsupported_name("language", name)
