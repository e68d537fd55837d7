"""The dtype table (``isa/dtypes.toml``) and numpy-side conversions. No numba here: this module
is imported by the assembler and the CLI, which must stay light.

Jitted code sees dtypes only through two arrays built here: ``format_table()`` (one int64 row of
format parameters per dtype code) and ``decode_table()`` (fp32 value of every bit pattern of every
float dtype of at most 16 bits, computed from the format parameters in float64, not from
ml_dtypes, so that the tests against ml_dtypes are a real check).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from neuronemu.isa.resources import read_table

KINDS = {"float": 0, "int": 1, "uint": 2, "bool": 3}
NAN_ENCODE = {"quiet": 0, "truncate": 1, "all_ones": 2, "flipped_zero": 3}
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
F_SIGNED = 10
F_HAS_ZERO = 11
FORMAT_WIDTH = 12
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
    signed: bool = True       # False: no sign bit (float8_e8m0fnu)
    has_zero: bool = True     # False: exponent field 0 is the binade 2^-bias (float8_e8m0fnu)
    value_bits: int = 0       # bits of one value when narrower than its byte (float4: 4)
    element_only: bool = False  # only the values packed in an x4 dtype, not a storage dtype
    packs: str = ""           # x4 types: the dtype of each of the 4 packed values

    @property
    def bits(self) -> int:
        """Bits of one value: the storage width, or ``value_bits`` for sub-byte formats."""
        return self.value_bits or 8 * self.itemsize

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
            if self.mantissa_bits:
                mantissa -= 1  # S.1111.111 is NaN, so the largest finite has mantissa ...110
            else:
                top -= 1       # E8M0: 0xFF is NaN, the largest finite is 0xFE
        return float((2 ** self.mantissa_bits + mantissa) * 2.0 ** (top - self.bias - self.mantissa_bits))

    @property
    def min_finite(self) -> float:
        """The lowest finite value (ml_dtypes' ``finfo.min``; for unsigned floats the smallest)."""
        if self.kind in ("uint", "bool"):
            return 0.0
        if self.kind == "int":
            return float(-(2 ** (self.bits - 1)))
        if not self.signed:
            return 0.0 if self.has_zero else 2.0 ** -self.bias
        return -self.max_finite


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, DType]:
    raw = read_table("dtypes")
    table = {}
    for name, fields in raw.items():
        table[name] = DType(name=name, **fields)
    codes = [d.code for d in table.values()]
    if len(set(codes)) != len(codes) or max(codes) >= MAX_CODES:
        raise ValueError("isa/dtypes.toml: dtype codes must be unique and below 32")
    return table


def names() -> list[str]:
    """The storage dtypes (names a program may declare); element-only formats are left out."""
    return [name for name, d in _table().items() if not d.element_only]


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
                       OVERFLOW[d.overflow], d.pad_bits, int(d.signed), int(d.has_zero))
    out.flags.writeable = False
    return out


def decode_float_patterns(d: DType) -> np.ndarray:
    """float64 value of every bit pattern of a float dtype of at most 16 bits, from its format.

    NaN patterns come back as NaN; the fp32 NaN bits are chosen in ``decode_table``. Unsigned
    formats have no sign bit; without zero (E8M0) exponent field 0 is an ordinary binade."""
    bits = np.arange(2 ** d.bits, dtype=np.int64)
    if d.signed:
        sign = np.where((bits >> (d.bits - 1)) & 1, -1.0, 1.0)
    else:
        sign = np.ones(bits.shape)
    exponent = (bits >> d.mantissa_bits) & (2 ** d.exponent_bits - 1)
    mantissa = bits & (2 ** d.mantissa_bits - 1)
    top = 2 ** d.exponent_bits - 1
    normal = (2.0 ** d.mantissa_bits + mantissa) * np.exp2(exponent - d.bias - d.mantissa_bits)
    subnormal = mantissa * 2.0 ** (1 - d.bias - d.mantissa_bits)
    if d.has_zero:
        value = sign * np.where(exponent == 0, subnormal, normal)
    else:
        value = sign * normal
    if d.has_inf:
        value = np.where((exponent == top) & (mantissa == 0), sign * np.inf, value)
        value = np.where((exponent == top) & (mantissa != 0), np.nan, value)
    elif d.nan_encode == "all_ones":
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
        sign = (patterns >> (d.bits - 1)) & 1 if d.signed else np.zeros_like(patterns)
        if d.nan_decode == "payload":
            shift = 23 - d.mantissa_bits
            payload = (patterns & (2 ** d.mantissa_bits - 1)) << shift
            row_bits[nan] = ((sign << 31) | 0x7F800000 | payload)[nan]
        else:
            row_bits[nan] = ((sign << 31) | 0x7FC00000)[nan]
        out[d.code, : 2 ** d.bits] = row
    out.flags.writeable = False
    return out


def unpack_x4(words, name: str) -> np.ndarray:
    """The inverse of ``pack_x4``: raw x4 words [..., C] -> the packed values [..., 4 C] as an
    ml_dtypes array of the element dtype (value 4 j + i from bits [w i, w (i + 1)) of word j)."""
    d = get(name)
    if not d.packs:
        raise ValueError(f"{name} is not an x4 dtype")
    element = get(d.packs)
    raw = np.asarray(words).astype(np.uint64)
    mask = np.uint64(2 ** element.bits - 1)
    codes = np.stack([(raw >> np.uint64(element.bits * i)) & mask for i in range(4)], axis=-1)
    codes = codes.reshape(*raw.shape[:-1], raw.shape[-1] * 4)
    return codes.astype(np.uint8).view(numpy_dtype(element.name))


def from_bits(bits: np.ndarray, name: str) -> np.ndarray:
    """API array (numpy / ml_dtypes dtype) from storage bits."""
    d = get(name)
    raw = np.array(bits, dtype=_uint(d.itemsize), order="C")   # one fresh copy, whatever the input
    if name == "tfloat32":
        return raw.view(np.float32)
    return raw.view(numpy_dtype(name))
