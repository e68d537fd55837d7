"""ULP distances and the assertions built on them: ``assert_ulp_close`` and ``assert_bits_equal``.

The distance is measured on the *value line* of a dtype: its finite values in increasing order,
numbered ... -2, -1, 0, 1, 2 ... with 0 for zero (+0.0 and -0.0 share the index 0). A value of
the dtype sits at an integer index; any other real x sits between its two neighbours v_k <= x <
v_{k+1} at the fractional index k + (x - v_k) / (v_{k+1} - v_k). The distance of two values is
the difference of their indices. So:

- two values of the dtype are as many ulps apart as there are steps between them (across
  binade boundaries and through the subnormals and zero: 1 ulp from +0.0 is the smallest
  subnormal, 2 ulps from -min_subnormal to +min_subnormal);
- a distance < 1 to an exact (float64) expected value means the actual value is one of the two
  dtype values around it: a faithfully rounded result; a correctly rounded one is <= 0.5;
- a value beyond the largest finite one is first rounded to the dtype (its own overflow rule:
  infinity, NaN or saturation, as ``astype`` does with ml_dtypes), so a float64 oracle of 1e39
  expects +inf in fp32 and 1e9 expects NaN in float8_e4m3fn;
- NaN matches NaN of any sign or payload and nothing else; an infinity matches the infinity of
  the same sign and nothing else; a mismatch of either kind is an infinite distance.

Integer dtypes measure plain differences. Bits are compared with ``assert_bits_equal``, which
also tells -0.0 from +0.0 and NaN payloads apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuronemu.isa import dtypes
from neuronemu.testing.messages import index_text, table, worst_first

RULES = ("distance = steps between values of {dtype} (-0.0 == +0.0); NaN matches any NaN; "
         "inf matches the same inf; expected values beyond the finite range are rounded to "
         "{dtype} first")


def dtype_name(dtype) -> str:
    """The neuronemu dtype name of a name, a numpy/ml_dtypes dtype or an array's dtype."""
    if isinstance(dtype, str) and dtype in dtypes.names() + ["float4_e2m1fn"]:
        return dtype
    try:
        numpy_name = np.dtype(dtype).name
    except TypeError:
        numpy_name = str(dtype)
    for name in dtypes.names() + ["float4_e2m1fn"]:
        d = dtypes.get(name)
        if d.ml_dtypes == numpy_name and not d.packs and name != "tfloat32":
            return name
    known = ", ".join(dtypes.names())
    raise ValueError(f"unknown dtype {dtype!r}; dtypes: {known}")


class _Line:
    """The value line of a float dtype: index <-> value through the bit patterns."""

    def __init__(self, name: str):
        self.d = d = dtypes.get(name)
        self.name = name
        self.storage = dtypes.numpy_dtype(name)
        self.uint = np.dtype(f"<u{d.itemsize}")
        self.sign_bit = 1 << (d.bits - 1 - d.pad_bits) if d.signed else 0
        self.max_index = int(self.index_of_values(np.array([d.max_finite]))[0])
        self.min_index = -self.max_index if d.signed else 0

    def bits(self, values: np.ndarray) -> np.ndarray:
        """Bit patterns (int64, pad bits dropped) of values of this dtype."""
        stored = np.ascontiguousarray(values, dtype=self.storage)
        return stored.view(self.uint).astype(np.int64) >> self.d.pad_bits

    def index_of_bits(self, bits: np.ndarray) -> np.ndarray:
        if not self.sign_bit:
            return bits
        magnitude = bits & (self.sign_bit - 1)
        return np.where(bits & self.sign_bit, -magnitude, magnitude)

    def index_of_values(self, values: np.ndarray) -> np.ndarray:
        return self.index_of_bits(self.bits(values))

    def value(self, index: np.ndarray) -> np.ndarray:
        """float64 value at integer indices (one past the largest: a virtual next step, so the
        gap above the largest finite value is the gap below it)."""
        index = np.asarray(index, dtype=np.int64)
        beyond = index > self.max_index
        inside = np.where(beyond, self.max_index, index)
        if self.sign_bit:
            bits = np.where(inside < 0, -inside | self.sign_bit, inside)
        else:
            bits = inside
        raw = (bits << self.d.pad_bits).astype(self.uint)
        values = raw.view(self.storage).astype(np.float64)
        if beyond.any():
            below = self.value(np.maximum(inside - 1, self.min_index))
            values = np.where(beyond, 2 * values - below, values)
        return values

    def rounded(self, x: np.ndarray) -> np.ndarray:
        """x rounded to the dtype (float64 result); only needs to land on a neighbour of x."""
        if self.name == "tfloat32":   # float32, then to nearest even on the 13 pad bits
            with np.errstate(all="ignore"):
                bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
            bits = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
            return bits.astype(np.uint32).view(np.float32).astype(np.float64)
        with np.errstate(all="ignore"):
            return x.astype(self.storage).astype(np.float64)

    def in_range(self, x: np.ndarray) -> np.ndarray:
        return (x >= self.d.min_finite) & (x <= self.d.max_finite)

    def fractional_index(self, x: np.ndarray) -> np.ndarray:
        """The index of in-range float64 values, fractional between two dtype values."""
        first = self.index_of_values(self.rounded(x))
        low = np.where(self.value(first) <= x, first, first - 1)
        v_low, v_high = self.value(low), self.value(low + 1)
        return low + (x - v_low) / (v_high - v_low)


@dataclass
class Comparison:
    """Per-element distances of ``actual`` from ``expected`` (flattened) and why some are
    infinite."""

    dtype: str
    shape: tuple[int, ...]
    actual: np.ndarray       # as compared (unpacked for x4 dtypes), flat
    expected: np.ndarray     # float64, flat
    distance: np.ndarray     # float64 ulps, flat; inf for class mismatches
    reason: np.ndarray       # object array of str ("" where the distance is finite)


def _unpack(array, name: str):
    """x4 (MX) dtypes: raw words (unsigned integers) become the packed element values; values
    (floats) are taken as they are. Other dtypes: unchanged."""
    packs = dtypes.get(name).packs
    array = np.asarray(array)
    if not packs:
        return array, name
    return (dtypes.unpack_x4(array, name) if array.dtype.kind in "ui" else array), packs


def _stored(line: _Line, x: np.ndarray) -> np.ndarray:
    """x where it is in the finite range of the dtype, elsewhere what the dtype stores for it
    (its overflow rule: infinity, NaN or saturation); NaN stays NaN."""
    inside = line.in_range(x)
    out = x.copy()
    if not inside.all():
        out[~inside] = line.rounded(x[~inside])
    out[np.isnan(x)] = np.nan
    return out


def compare(actual, expected, dtype=None, *, signed_zeros: bool = False) -> Comparison:
    """Distances in ulps of ``dtype`` (default: the dtype of ``actual``) of every element."""
    __tracebackhide__ = True   # pytest shows the message, not this frame
    actual_array = np.asarray(actual)
    declared = dtype_name(dtype if dtype is not None else actual_array.dtype)
    actual_array, name = _unpack(actual_array, declared)
    expected_array, _ = _unpack(expected, declared)
    if actual_array.shape != expected_array.shape:
        raise AssertionError(f"shapes differ: actual {actual_array.shape}, expected "
                             f"{expected_array.shape}")
    a = actual_array.astype(np.float64).reshape(-1)   # ml_dtypes values convert exactly
    e = expected_array.astype(np.float64).reshape(-1)
    d = dtypes.get(name)
    reason = np.full(a.shape, "", dtype=object)
    distance = np.zeros(a.shape)
    if not d.is_float:
        with np.errstate(invalid="ignore"):
            distance = np.abs(a - e)
        nan = np.isnan(distance)
        reason[nan] = "NaN"
        distance[nan] = np.inf
        return Comparison(name, actual_array.shape, actual_array.reshape(-1), e, distance,
                          reason)
    line = _Line(name)
    a_eff, e_eff = _stored(line, a), _stored(line, e)
    finite = np.isfinite(a_eff) & np.isfinite(e_eff)
    distance[finite] = np.abs(line.fractional_index(a_eff[finite])
                              - line.fractional_index(e_eff[finite]))
    a_nan, e_nan = np.isnan(a_eff), np.isnan(e_eff)
    a_inf, e_inf = np.isinf(a_eff), np.isinf(e_eff)
    for mask, why in (
            (a_nan & ~e_nan, "NaN, expected a number"),
            (e_nan & ~a_nan, "expected NaN"),
            (~a_nan & ~e_nan & (a_inf | e_inf) & (a_eff != e_eff),
             "infinity mismatch"),
    ):
        reason[mask] = why
        distance[mask] = np.inf
    if signed_zeros:
        zero_sign = (a_eff == 0) & (e_eff == 0) & (np.signbit(a_eff) != np.signbit(e_eff))
        reason[zero_sign] = "sign of zero"
        distance[zero_sign] = np.inf
    return Comparison(name, actual_array.shape, actual_array.reshape(-1), e, distance, reason)


def ulp_distance(actual, expected, dtype=None) -> np.ndarray:
    """Distance of each element of ``actual`` from ``expected`` in ulps of ``dtype`` (default:
    the dtype of ``actual``), shaped like ``actual`` (x4 dtypes: like the unpacked values). See
    the module docstring for the rules; inf marks a NaN or infinity mismatch."""
    c = compare(actual, expected, dtype)
    return c.distance.reshape(c.shape)


def _value_text(value, name: str) -> str:
    d = dtypes.get(name)
    number = float(value)
    if d.is_float:
        bits = int(_Line(name).bits(np.array([value]))[0])
        return f"{number!r} (0x{bits:0{max(1, d.bits // 4)}x})"
    return str(int(number)) if np.isfinite(number) else repr(number)


def _distance_text(distance: float, reason: str) -> str:
    if reason:
        return reason
    return _ulps_text(distance)


def _ulps_text(distance: float) -> str:
    return f"{distance:.0f}" if distance >= 100 else f"{distance:.3g}"


def _histogram(distance: np.ndarray, ulps: float) -> str:
    finite = distance[np.isfinite(distance)]
    edges = [ulps, 2 * ulps if ulps else 1, 16 * max(ulps, 1), 1024 * max(ulps, 1)]
    parts, low = [], None
    for edge in edges:
        n = int(np.count_nonzero((finite <= edge) if low is None else
                                 ((finite > low) & (finite <= edge))))
        label = f"<= {edge:g}" if low is None else f"({low:g}, {edge:g}]"
        parts.append(f"{label}: {n}")
        low = edge
    parts.append(f"> {low:g}: {int(np.count_nonzero(finite > low))}")
    parts.append(f"NaN/inf mismatches: {int(np.count_nonzero(~np.isfinite(distance)))}")
    return ", ".join(parts)


def assert_ulp_close(actual, expected, ulps: float = 1.0, dtype=None, *, show: int = 10,
                     signed_zeros: bool = False, label: str = "") -> None:
    """Fail unless every element of ``actual`` is within ``ulps`` ulps of ``expected`` in
    ``dtype`` (default: the dtype of ``actual``; a name such as "bfloat16" or "float8_e4m3",
    or a numpy / ml_dtypes dtype). ``expected`` is best a float64 oracle; ``ulps=0.5`` asks for
    correct rounding, ``ulps=1`` (less than 1 in fact) for faithful rounding. x4 (MX) dtypes
    compare the packed element values (raw words or values as ``expected``).
    ``signed_zeros=True`` also fails -0.0 against +0.0.

    The message gives the count of failing elements, a distance histogram and the ``show``
    worst elements with their index, both values (with bits) and distance."""
    __tracebackhide__ = True   # pytest shows the message, not this frame
    c = compare(actual, expected, dtype, signed_zeros=signed_zeros)
    bad = c.distance > ulps
    if not bad.any():
        return
    n_bad, total = int(bad.sum()), c.distance.size
    finite = c.distance[np.isfinite(c.distance)]
    worst_finite = float(finite.max()) if finite.size else 0.0
    rows = []
    for i in worst_first(c.distance, bad, show):
        rows.append((index_text(i, c.shape), _value_text(c.actual[i], c.dtype),
                     f"{float(c.expected[i])!r}", _distance_text(float(c.distance[i]),
                                                                   c.reason[i])))
    what = f"{label}: " if label else ""
    lines = [(f"{what}{n_bad} of {total} elements ({n_bad / total:.2%}) are more than {ulps:g} "
             f"ulp of {c.dtype} from expected (largest finite distance {_ulps_text(worst_finite)} ulp)"),
             f"  distances: {_histogram(c.distance, ulps)}",
             f"  worst {len(rows)} (largest distance first):"]
    lines += table(rows, ("index", f"actual ({c.dtype}, bits)", "expected", "ulp"))
    if n_bad > len(rows):
        lines.append(f"  ... and {n_bad - len(rows)} more")
    lines.append("  rules: " + RULES.format(dtype=c.dtype))
    raise AssertionError("\n".join(lines))


def assert_bits_equal(actual, expected, dtype=None, *, any_nan: bool = False, show: int = 10,
                      label: str = "") -> None:
    """Fail unless ``actual`` and ``expected`` hold the same bit patterns in ``dtype`` (default:
    the dtype of ``actual``). An ``expected`` of another dtype (a float64 oracle) is first cast
    to ``dtype`` with ``astype`` (round to nearest even; ml_dtypes' rules). -0.0 differs from
    +0.0, and NaNs must match to the payload, unless ``any_nan`` (for operations whose NaN
    payload is not specified): then a NaN matches any NaN, and only a NaN."""
    __tracebackhide__ = True   # pytest shows the message, not this frame
    actual_array = np.asarray(actual)
    name = dtype_name(dtype if dtype is not None else actual_array.dtype)
    storage = dtypes.numpy_dtype(name)
    expected_array = np.asarray(expected)
    if actual_array.shape != expected_array.shape:
        raise AssertionError(f"shapes differ: actual {actual_array.shape}, expected "
                             f"{expected_array.shape}")
    with np.errstate(all="ignore"):
        a = actual_array.astype(storage).reshape(-1)
        e = expected_array.astype(storage).reshape(-1)
    uint = np.dtype(f"<u{storage.itemsize}")
    a_bits, e_bits = a.view(uint), e.view(uint)
    bad = a_bits != e_bits
    if any_nan and dtypes.get(name).is_float:
        with np.errstate(invalid="ignore"):
            a_nan, e_nan = np.isnan(a.astype(np.float64)), np.isnan(e.astype(np.float64))
        bad = np.where(a_nan | e_nan, a_nan != e_nan, bad)
    if not bad.any():
        return
    n_bad, total = int(bad.sum()), bad.size
    rows = [(index_text(int(i), actual_array.shape), _value_text(a[i], name),
             _value_text(e[i], name))
            for i in np.flatnonzero(bad)[:show]]
    what = f"{label}: " if label else ""
    lines = [(f"{what}{n_bad} of {total} elements ({n_bad / total:.2%}) differ in their "
             f"{name} bits"), f"  first {len(rows)}:"]
    lines += table(rows, ("index", "actual (bits)", "expected (bits)"))
    if n_bad > len(rows):
        lines.append(f"  ... and {n_bad - len(rows)} more")
    raise AssertionError("\n".join(lines))
