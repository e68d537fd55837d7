"""Operands of ``nki.isa`` calls as neuronemu assembly text: tiles, scalars, numbers and the
operator names NKI passes (``nl.add``, ``np.exp``, ``'maximum'``) as neuronemu's enum names.
Shared by the hand-written lowerings (``isa.py``) and the table-driven ones (``_emit.py``)."""

from __future__ import annotations

from neuronemu.nki._trace import NkiTensor, fail, scalar_text, tracer


def tile_arg(t, what: str) -> NkiTensor:
    if not isinstance(t, NkiTensor):
        fail(f"{what} must be a tensor (nl.ndarray or a kernel argument), got "
             f"{type(t).__name__}")
    if t._broadcast is not None:
        fail(f"{what}: a partition-broadcast view ([1, N] -> [P, N]) can only be a DMA source; "
             f"compute engines cannot broadcast across partitions", unsupported=True)
    return t


def onchip(t, what: str) -> str:
    t = tile_arg(t, what)
    if t.kind == "hbm":
        fail(f"{what} is in HBM; compute instructions read and write SBUF/PSUM tiles (move it "
             f"with nisa.dma_copy / nl.load first)")
    return t.operand(tracer())


def scalar_operand(v, what: str) -> str:
    if isinstance(v, NkiTensor):
        return onchip(v, what)
    if isinstance(v, (int, float)) or hasattr(v, "__float__"):
        return scalar_text(v)
    fail(f"{what} must be a number or a [P, 1] tile, got {type(v).__name__}")
    raise AssertionError


def number(v, what: str) -> str:
    if isinstance(v, NkiTensor):
        fail(f"{what} must be a compile-time number here, not a tile", unsupported=True)
    try:
        return scalar_text(v)
    except (TypeError, ValueError):
        fail(f"{what} must be a number, got {type(v).__name__}")
    raise AssertionError


def bool_text(v: bool) -> str:
    return "true" if v else "false"


def _operator(op, attribute: str, numpy_names: dict) -> str | None:
    """An NKI operator's neuronemu name: the ``nl`` function's tag, a name given as a string,
    or the numpy function's name looked up in ``numpy_names`` (None: none of these)."""
    name = getattr(op, attribute, None)
    if name is None and isinstance(op, str):
        name = op
    if name is None:
        name = numpy_names.get(getattr(op, "__name__", None))
    return name


def alu_name(op, what: str = "op") -> str:
    """neuronemu's alu_op name for an NKI operator (nl.add, np.add, 'add', ...)."""
    name = _operator(op, "_nki_alu", _NUMPY_ALU)
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
             "multiply": "multiply", "average": "average", "sum": "add"}
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
    name = _operator(op, "_nki_act", _NUMPY_ACT)
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


def unused(name: str, value, default, why: str = "") -> None:
    if value is not default and value != default:
        fail(f"{name}={value!r} is not supported by neuronemu.nki{why}", unsupported=True)


def mark_written(dst) -> None:
    """A non-matmul write to PSUM counts as the first write of that region (auto-accumulate)."""
    if isinstance(dst, NkiTensor) and dst.kind == "psum":
        region = dst.region()
        if region not in dst._buffer.written:
            dst._buffer.written.append(region)
