"""The dtype table (``isa/dtypes.toml``) and numpy-side conversions. No numba here: this module
is imported by the assembler and the CLI, which must stay light.

Jitted code sees dtypes only through two arrays built here: ``format_table()`` (one int64 row of
format parameters per dtype code) and ``decode_table()`` (fp32 value of every bit pattern of every
float dtype of at most 16 bits, computed from the format parameters in float64, not from
ml_dtypes, so that the tests against ml_dtypes are a real check).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

import numpy as np

from neuronemu.isa.resources import isa_dir

KINDS = {"float": 0, "int": 1, "uint": 2, "bool": 3}
NAN_ENCODE = {"quiet": 0, "truncate": 1, "all_ones": 2}
NAN_DECODE = {"payload": 0, "quiet": 1}
OVERFLOW = {"inf": 0, "nan": 1, "saturate": 2}

# columns of format_table()
F_KIND = 0
F_ITEMSIZE = 1
F_EXP = 2
F_MANT = 3
F_BIAS = 4
F_HAS_INF = 5
F_NAN_ENCODE = 6
F_NAN_DECODE = 7
F_OVERFLOW = 8
F_PAD = 9
FORMAT_WIDTH = 10
MAX_CODES = 32


@dataclass(frozen=True)
class DType:
    name: str
    code: int
    itemsize: int
    kind: str
    ml_dtypes: str
    summary: str
    exponent_bits: int = 0
    mantissa_bits: int = 0
    bias: int = 0
    has_inf: bool = False
    nan_encode: str = "quiet"
    nan_decode: str = "quiet"
    overflow: str = "inf"
    pad_bits: int = 0
    packs: str = ""           # x4 types: the fp8 dtype of each of the 4 bytes

    @property
    def bits(self) -> int:
        return 8 * self.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def eps(self) -> float:
        """Distance from 1.0 to the next value (0 for integers)."""
        return 2.0 ** -self.mantissa_bits if self.is_float else 0.0

    @property
    def max_finite(self) -> float:
        if self.kind == "bool":
            return 1.0
        if self.kind == "int":
            return float(2 ** (self.bits - 1) - 1)
        if self.kind == "uint":
            return float(2 ** self.bits - 1)
        top = 2 ** self.exponent_bits - 1 - (1 if self.has_inf else 0)
        mantissa = 2 ** self.mantissa_bits - 1
        if self.nan_encode == "all_ones":
            mantissa -= 1  # S.1111.111 is NaN, so the largest finite has mantissa ...110
        return float((2 ** self.mantissa_bits + mantissa) * 2.0 ** (top - self.bias - self.mantissa_bits))

    @property
    def min_finite(self) -> float:
        if self.kind in ("uint", "bool"):
            return 0.0
        if self.kind == "int":
            return float(-(2 ** (self.bits - 1)))
        return -self.max_finite


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, DType]:
    with open(isa_dir() / "dtypes.toml", "rb") as f:
        raw = tomllib.load(f)
    table = {}
    for name, fields in raw.items():
        table[name] = DType(name=name, **fields)
    codes = [d.code for d in table.values()]
    if len(set(codes)) != len(codes) or max(codes) >= MAX_CODES:
        raise ValueError("isa/dtypes.toml: dtype codes must be unique and below 32")
    return table


def names() -> list[str]:
    return list(_table())


def get(name: str) -> DType:
    return _table()[name]


def by_code(code: int) -> DType:
    for d in _table().values():
        if d.code == code:
            return d
    raise KeyError(code)


def numpy_dtype(name: str) -> np.dtype:
    """The numpy (or ml_dtypes) dtype of API arrays of this dtype (tfloat32 is given as float32)."""
    spec = get(name).ml_dtypes
    if spec in ("float32", "float16", "bool") or spec.startswith(("int", "uint")):
        return np.dtype(spec)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, spec))


def _uint(itemsize: int) -> np.dtype:
    return np.dtype(f"<u{itemsize}")


@functools.lru_cache(maxsize=1)
def format_table() -> np.ndarray:
    out = np.zeros((MAX_CODES, FORMAT_WIDTH), dtype=np.int64)
    for d in _table().values():
        out[d.code] = (KINDS[d.kind], d.itemsize, d.exponent_bits, d.mantissa_bits, d.bias,
                       int(d.has_inf), NAN_ENCODE[d.nan_encode], NAN_DECODE[d.nan_decode],
                       OVERFLOW[d.overflow], d.pad_bits)
    out.flags.writeable = False
    return out


def decode_float_patterns(d: DType) -> np.ndarray:
    """float64 value of every bit pattern of a float dtype of at most 16 bits, from its format.

    NaN patterns come back as NaN; the fp32 NaN bits are chosen in ``decode_table``."""
    bits = np.arange(2 ** d.bits, dtype=np.int64)
    sign = np.where((bits >> (d.bits - 1)) & 1, -1.0, 1.0)
    exponent = (bits >> d.mantissa_bits) & (2 ** d.exponent_bits - 1)
    mantissa = bits & (2 ** d.mantissa_bits - 1)
    top = 2 ** d.exponent_bits - 1
    normal = (2.0 ** d.mantissa_bits + mantissa) * np.exp2(exponent - d.bias - d.mantissa_bits)
    subnormal = mantissa * 2.0 ** (1 - d.bias - d.mantissa_bits)
    value = sign * np.where(exponent == 0, subnormal, normal)
    if d.has_inf:
        value = np.where((exponent == top) & (mantissa == 0), sign * np.inf, value)
        value = np.where((exponent == top) & (mantissa != 0), np.nan, value)
    else:
        value = np.where((exponent == top) & (mantissa == 2 ** d.mantissa_bits - 1), np.nan, value)
    return value


@functools.lru_cache(maxsize=1)
def decode_table() -> np.ndarray:
    """fp32 [MAX_CODES, 65536]: row ``code`` maps each stored pattern of a <=16-bit float dtype to
    its fp32 value, with the NaN bits its ``nan_decode`` rule gives."""
    out = np.zeros((MAX_CODES, 65536), dtype=np.float32)
    for d in _table().values():
        if not d.is_float or d.itemsize > 2:
            continue
        values = decode_float_patterns(d)
        row = values.astype(np.float32)  # exact: every such value is an fp32 value
        row_bits = row.view(np.uint32)
        patterns = np.arange(2 ** d.bits, dtype=np.uint32)
        nan = np.isnan(values)
        sign = (patterns >> (d.bits - 1)) & 1
        if d.nan_decode == "payload":
            shift = 23 - d.mantissa_bits
            payload = (patterns & (2 ** d.mantissa_bits - 1)) << shift
            row_bits[nan] = ((sign << 31) | 0x7F800000 | payload)[nan]
        else:
            row_bits[nan] = ((sign << 31) | 0x7FC00000)[nan]
        out[d.code, : 2 ** d.bits] = row
    out.flags.writeable = False
    return out


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
    from neuronemu.numerics.cast import encode_array32, encode_array64

    flat = np.ascontiguousarray(array).ravel()
    if d.is_float and d.ml_dtypes not in ("float16", "float32"):
        # ml_dtypes' astype from float64 goes through fp32; numpy's float16 rounds once
        with np.errstate(over="ignore"):
            bits = encode_array32(flat.astype(np.float32), d.code, format_table())
    else:
        bits = encode_array64(flat.astype(np.float64), d.code, format_table())
    return bits.astype(_uint(d.itemsize)).reshape(array.shape)


def from_bits(bits: np.ndarray, name: str) -> np.ndarray:
    """API array (numpy / ml_dtypes dtype) from storage bits."""
    d = get(name)
    raw = np.ascontiguousarray(bits).astype(_uint(d.itemsize))
    if name == "tfloat32":
        return raw.view(np.float32)
    return raw.view(numpy_dtype(name))
