"""Values to storage bits, as the engines round them: numpy's and ml_dtypes' casts where they
give the encoder's bits, the jitted encoder (neuronemu.numerics.cast) everywhere else.

Its own module so that the dtype tables (neuronemu.isa.dtypes) stay below the encoder that
reads them: dtypes <- cast <- convert.
"""

from __future__ import annotations

import numpy as np

from neuronemu.isa.dtypes import _uint, format_table, get, numpy_dtype
from neuronemu.numerics.cast import encode_array32, encode_array64


def to_bits(values, name: str) -> np.ndarray:
    """Storage bits (unsigned ints of the dtype's width) of ``values`` rounded to ``name``.

    Floats round to nearest even by the jitted encoder the engines use, so that an input equals
    ``x.astype(<API dtype>)`` bit for bit: float64 inputs to ml_dtypes types are first rounded
    to fp32, as ml_dtypes' own ``astype`` does (a double rounding, see docs/numerics.md), and
    round once to float16 and float32, as numpy does. Integer inputs to integer dtypes are exact and saturate; float inputs to
    integer dtypes round to nearest even from their own precision and saturate.
    """
    d = get(name)
    array = np.asarray(values)
    if array.dtype == numpy_dtype(name) and name != "tfloat32":
        return np.ascontiguousarray(array).view(_uint(d.itemsize)).copy()
    if not d.is_float and array.dtype.kind in "iub":
        wide = np.clip(array.astype(np.int64), int(d.min_finite), int(d.max_finite))
        if d.kind == "bool":
            wide = (wide != 0).astype(np.int64)
        return (wide & (2 ** d.bits - 1)).astype(_uint(d.itemsize))
    flat = np.ascontiguousarray(array).ravel()
    fast = _numpy_cast_bits(flat, name)
    if fast is not None:
        return fast.reshape(array.shape)

    if d.is_float and d.ml_dtypes not in ("float16", "float32"):
        # ml_dtypes' astype from float64 goes through fp32; numpy's float16 rounds once
        with np.errstate(over="ignore"):
            bits = encode_array32(flat.astype(np.float32), d.code, format_table())
    else:
        bits = encode_array64(flat.astype(np.float64), d.code, format_table())
    return bits.astype(_uint(d.itemsize)).reshape(array.shape)


_LARGEST = {"float32": float(np.finfo(np.float32).max), "bfloat16": float.fromhex("0x1.fep127")}
_CANONICAL_NAN = {8: (0x7FFFFFFFFFFFFFFF, 0x7FF8000000000000), 4: (0x7FFFFFFF, 0x7FC00000)}


def _numpy_cast_bits(flat: np.ndarray, name: str) -> np.ndarray | None:
    """The bits of float32 / bfloat16 from float inputs by numpy's and ml_dtypes' own
    round-to-nearest-even casts: ~40x faster than the jitted encoder and nothing to compile.
    For finite values that stay finite both are IEEE rounding, so the bits are the encoder's
    (tests/numerics/test_fast_casts.py checks it); numpy's default NaN (either sign) becomes the
    encoder's quiet NaN; any other NaN, inf and overflow take the encoder."""
    if name not in ("float32", "bfloat16") or flat.dtype.kind != "f" or flat.dtype.itemsize < 4:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        f32 = flat.astype(np.float32)
        # The common case, checked by two reductions (no masks or temporaries: a fresh array
        # costs its page faults): no NaN (min and max would be NaN) and nothing that is or
        # rounds to inf. Values past bf16's largest finite value take the checks below.
        if f32.size and -_LARGEST[name] <= f32.min() and f32.max() <= _LARGEST[name]:
            if name == "float32":
                return f32.view(np.uint32)
            return f32.astype(numpy_dtype("bfloat16")).view(np.uint16)
        nan = np.isnan(f32)
        if nan.any():
            magnitude, canonical = _CANONICAL_NAN[flat.dtype.itemsize]
            source = flat.view(_uint(flat.dtype.itemsize))[nan]
            if not np.all(source & magnitude == canonical):
                return None   # a NaN with a payload: the encoder's rule decides its bits
        if not np.isfinite(f32[~nan]).all():
            return None
        if name == "float32":
            return f32.view(np.uint32).copy()
        bits = f32.astype(numpy_dtype("bfloat16")).view(np.uint16)
        if not np.isfinite(bits.view(numpy_dtype("bfloat16")).astype(np.float32)[~nan]).all():
            return None
    if nan.any():
        bits = bits.copy()
        bits[nan] = 0x7FC0 | (f32.view(np.uint32)[nan] >> 16 & 0x8000)
    return bits


def pack_x4(values, name: str) -> np.ndarray:
    """Raw words of the x4 dtype ``name`` (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4)
    from values [..., 4 C]: word j holds values 4 j .. 4 j + 3, value 4 j + i in bits
    [w i, w (i + 1)) (w = 8 for fp8, 4 for fp4), each rounded to the packed dtype as ``to_bits``
    rounds (``x.astype(ml_dtypes type)``). This is quantize_mx's packing of four consecutive
    values, and the layout the NKI MX tutorial builds on the host (two fp4 per byte, low nibble
    first, viewed as the x4 type)."""
    d = get(name)
    if not d.packs:
        raise ValueError(f"{name} is not an x4 dtype")
    element = get(d.packs)
    array = np.asarray(values)
    if array.shape[-1] % 4:
        raise ValueError(f"the last axis ({array.shape[-1]}) must be a multiple of 4")
    codes = to_bits(array, element.name).astype(np.uint64) & np.uint64(2 ** element.bits - 1)
    codes = codes.reshape(*array.shape[:-1], array.shape[-1] // 4, 4)
    words = np.zeros(codes.shape[:-1], dtype=np.uint64)
    for i in range(4):
        words |= codes[..., i] << np.uint64(element.bits * i)
    return words.astype(_uint(d.itemsize))
