"""The scans' per-element operator (semantics/alu.py ``binary_scalar``) against numpy's fp32
scalar arithmetic, bit for bit, on ordinary and special values (signed zeros, infinities, NaN,
subnormals), for every arithmetic and compare operator; and against the tile operator
``binary`` that the rest of the Vector engine uses, so a scan and a tile op never disagree."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from neuronemu.isa import codes as C

F = np.float32
VALUES = [F(0.0), F(-0.0), F(1.0), F(-2.5), F(3.0), F(1e-45), F(-7.25e30), F(np.inf),
          F(-np.inf), F(np.nan), F(0.1), F(65504.0)]


def _numpy(op: int, x: np.float32, y: np.float32) -> np.float32:
    with np.errstate(all="ignore"):
        table = {
            C.ALU_ADD: lambda: x + y, C.ALU_SUBTRACT: lambda: x - y,
            C.ALU_MULTIPLY: lambda: x * y, C.ALU_DIVIDE: lambda: x / y,
            # a tie of +0 and -0 gives the first operand (numpy's gives the second)
            C.ALU_MAXIMUM: lambda: x if x == y else np.maximum(x, y),
            C.ALU_MINIMUM: lambda: x if x == y else np.minimum(x, y),
            C.ALU_EQUAL: lambda: F(x == y), C.ALU_NOT_EQUAL: lambda: F(x != y),
            C.ALU_GREATER: lambda: F(x > y), C.ALU_GREATER_EQUAL: lambda: F(x >= y),
            C.ALU_LESS: lambda: F(x < y), C.ALU_LESS_EQUAL: lambda: F(x <= y),
            C.ALU_ABS_MAX: lambda: np.maximum(abs(x), abs(y)),
            C.ALU_ABS_MIN: lambda: np.minimum(abs(x), abs(y)),
            C.ALU_LOGICAL_AND: lambda: F((x != 0) and (y != 0)),
            C.ALU_LOGICAL_OR: lambda: F((x != 0) or (y != 0)),
            C.ALU_LOGICAL_XOR: lambda: F((x != 0) != (y != 0)),
            C.ALU_POWER: lambda: F(np.power(np.float64(x), np.float64(y))),
            C.ALU_BYPASS: lambda: x * F(1.0),
        }
        return F(table[op]())


OPS = [C.ALU_BYPASS, C.ALU_ADD, C.ALU_SUBTRACT, C.ALU_MULTIPLY, C.ALU_DIVIDE, C.ALU_MAXIMUM,
       C.ALU_MINIMUM, C.ALU_EQUAL, C.ALU_NOT_EQUAL, C.ALU_GREATER, C.ALU_GREATER_EQUAL,
       C.ALU_LESS, C.ALU_LESS_EQUAL, C.ALU_ABS_MAX, C.ALU_ABS_MIN, C.ALU_POWER,
       C.ALU_LOGICAL_AND, C.ALU_LOGICAL_OR, C.ALU_LOGICAL_XOR]


def _same(a, b) -> bool:
    a, b = F(a), F(b)
    if np.isnan(a) or np.isnan(b):
        return bool(np.isnan(a) and np.isnan(b))
    return a.view(np.uint32) == b.view(np.uint32)


@pytest.mark.parametrize("op", OPS)
def test_binary_scalar_is_numpys_fp32_operator(op):
    from neuronemu.semantics.alu import arith_rows, binary, binary_rows, binary_scalar

    pairs = list(itertools.product(VALUES, VALUES))
    got = [binary_scalar(op, x, y) for x, y in pairs]
    wrong = [(x, y, g, _numpy(op, x, y)) for (x, y), g in zip(pairs, got, strict=True)
             if not _same(g, _numpy(op, x, y))]
    assert not wrong, wrong[:5]
    a = np.array([[x for x, _ in pairs]], dtype=F)
    b = np.array([[y for _, y in pairs]], dtype=F)
    tile = binary(op, a, b, binary_rows)[0]
    assert all(_same(g, t) for g, t in zip(got, tile, strict=True))
    if op in (C.ALU_ADD, C.ALU_SUBTRACT, C.ALU_MULTIPLY):   # the arithmetic kernels' rows
        tile = binary(op, a, b, arith_rows)[0]
        assert all(_same(g, t) for g, t in zip(got, tile, strict=True))
