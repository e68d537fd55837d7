"""Helpers shared by the ``test_isa_*`` instruction tests: run a kernel written as source text,
and compare results with oracles computed here in float64 / ml_dtypes.

Nothing here calls into the emulator's numerics: the oracles are numpy float64 math, ml_dtypes
casts, or values worked out by hand in the tests.
"""

from __future__ import annotations

import numpy as np

import neuronemu

U = 2.0**-24  # unit roundoff of fp32 (half an ulp of 1.0)

UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def run(source: str, target: str | None = None, **inputs: np.ndarray) -> neuronemu.Result:
    """Assemble ``source`` and run it with ``inputs`` (HBM tensor name -> array)."""
    program = neuronemu.assemble(source, filename="kernel.s", target=target)
    return neuronemu.run(program, inputs=inputs)


def f32(values) -> np.ndarray:
    """Round float64 values once to fp32 (the oracle of one fp32 operation: for + - * / and sqrt
    a float64 result rounded to fp32 equals the correctly rounded fp32 result, since float64
    carries more than 2 * 24 + 2 significant bits)."""
    with np.errstate(all="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float32)


def f64(values) -> np.ndarray:
    return np.asarray(values).astype(np.float64)


def bits(values: np.ndarray) -> np.ndarray:
    """The storage bits of an array as unsigned integers of the same width."""
    values = np.asarray(values)
    return values.view(UINT_OF_SIZE[values.dtype.itemsize])


def from_bits(pattern, dtype) -> np.ndarray:
    pattern = np.asarray(pattern)
    return pattern.astype(UINT_OF_SIZE[np.dtype(dtype).itemsize]).view(dtype)


def sequential_f32(op, values: np.ndarray, axis: int = -1) -> np.ndarray:
    """op folded left to right in fp32 (numpy's accumulate is strictly sequential, unlike sum,
    which adds pairwise): the documented reduction order."""
    values = np.asarray(values, dtype=np.float32)
    return op.accumulate(values, axis=axis, dtype=np.float32).take(-1, axis=axis)


# float64 formulas of the arithmetic ALU operators: for + - * / the fp32 result is the float64
# result rounded once (float64 carries more than 2p + 2 bits), so these match bit for bit
ALU = {
    "bypass": lambda x, y: x,
    "add": lambda x, y: x + y,
    "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "divide": lambda x, y: x / y,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "equal": lambda x, y: (x == y) * 1.0,
    "not_equal": lambda x, y: (x != y) * 1.0,
    "greater": lambda x, y: (x > y) * 1.0,
    "greater_equal": lambda x, y: (x >= y) * 1.0,
    "less": lambda x, y: (x < y) * 1.0,
    "less_equal": lambda x, y: (x <= y) * 1.0,
    "abs_max": lambda x, y: np.maximum(np.abs(x), np.abs(y)),
    "abs_min": lambda x, y: np.minimum(np.abs(x), np.abs(y)),
    "power": np.power,
    "logical_and": lambda x, y: np.logical_and(x != 0, y != 0) * 1.0,
    "logical_or": lambda x, y: np.logical_or(x != 0, y != 0) * 1.0,
    "logical_xor": lambda x, y: np.logical_xor(x != 0, y != 0) * 1.0,
}
