"""The labs of programs/labs/: each one's interface, shapes, input distribution and float64 oracle.

Error bounds follow docs/numerics.md and Higham (Accuracy and Stability of Numerical Algorithms,
2nd ed., sec. 3.1): engines compute in fp32 with round-to-nearest-even (unit roundoff
u = 2**-24), a sum of n terms in any order is within gamma(n) * sum |terms| of the exact sum,
gamma(n) = n u / (1 - n u). Inputs are drawn here, rounded to their declared dtype, and the
oracle works from those rounded values, so input rounding is never counted as an error."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

from neuronemu.grade.spec import Lab, Params, Variant

U32 = 2.0 ** -24
TINY = 1e-37          # fp32 results that underflow to zero (exp of a very negative number)


def gamma(n) -> float:
    return n * U32 / (1.0 - n * U32)


def _f32(rng: np.random.Generator, shape, std: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(np.float32)


def _bf16(rng: np.random.Generator, shape, std: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(ml_dtypes.bfloat16)


def _f64(array: np.ndarray) -> np.ndarray:
    return np.asarray(array).astype(np.float64)


# ---- 01 vector add: tiles and DMA, tiling past SBUF ------------------------------------------

def _vadd_interface(p: Params):
    shape = (128, p["N"])
    return {"a": ("float32", shape, "input"), "b": ("float32", shape, "input"),
            "c": ("float32", shape, "output")}


def _vadd_oracle(inputs, p: Params):
    exact = _f64(inputs["a"]) + _f64(inputs["b"])
    return {"c": (exact.astype(np.float32).astype(np.float64), 0.0)}   # one fp32 rounding


VECTOR_ADD = Lab(
    name="01-vector-add", title="Engines, tiles and DMA: vector add past SBUF",
    params=("N",),
    variants=(Variant("shown", {"N": 4096}, shown=True),
              Variant("ragged", {"N": 4160}),
              Variant("past-sbuf", {"N": 32768}, timed=True)),
    interface=_vadd_interface,
    inputs=lambda rng, p: {"a": _f32(rng, (128, p["N"])), "b": _f32(rng, (128, p["N"]))},
    oracle=_vadd_oracle)


# ---- 02 tiled matmul: the systolic array and PSUM accumulation -------------------------------

def _matmul_interface(p: Params):
    return {"lhsT": ("bfloat16", (p["K"], p["M"]), "input"),
            "rhs": ("bfloat16", (p["K"], p["N"]), "input"),
            "result": ("float32", (p["M"], p["N"]), "output")}


def _matmul_oracle(a_t: np.ndarray, b: np.ndarray, extra: float = 0.0):
    """lhsT^T @ rhs in float64 and its bound: bf16 x bf16 products are exact in fp32, the K-term
    fp32 sum is within gamma(K) sum |products|; ``extra`` adds a relative error per product."""
    a64, b64 = _f64(a_t), _f64(b)
    magnitude = np.abs(a64).T @ np.abs(b64)
    bound = (gamma(a64.shape[0] + 1) * (1 + extra) + extra) * magnitude
    return a64.T @ b64, bound


MATMUL = Lab(
    name="02-matmul", title="The systolic array and PSUM: tiled matmul with K accumulation",
    params=("M", "K", "N"),
    variants=(Variant("shown", {"M": 256, "K": 256, "N": 512}, shown=True, timed=True),
              Variant("deep", {"M": 128, "K": 1024, "N": 512}),
              Variant("wide", {"M": 384, "K": 512, "N": 1024}, timed=True)),
    interface=_matmul_interface,
    inputs=lambda rng, p: {"lhsT": _bf16(rng, (p["K"], p["M"])),
                           "rhs": _bf16(rng, (p["K"], p["N"]))},
    oracle=lambda x, p: {"result": _matmul_oracle(x["lhsT"], x["rhs"])})


# ---- 03 softmax: reductions and numerics on Vector/Scalar ------------------------------------

def _softmax_oracle(inputs, p: Params):
    x = _f64(inputs["x"])
    shifted = x - x.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    y = e / e.sum(axis=1, keepdims=True)
    # x - max in fp32 costs |x - max| u in the exponent; exp, reciprocal, multiply one u each;
    # the row sum gamma(D)
    rel = (np.abs(shifted) + 1.0) * 2 * U32 + gamma(p["D"] + 4)
    return {"y": (y, y * rel + TINY)}


SOFTMAX = Lab(
    name="03-softmax", title="Softmax on Vector and Scalar: reductions and overflow",
    params=("R", "D"),
    variants=(Variant("shown", {"R": 256, "D": 512}, shown=True, timed=True),
              Variant("odd-width", {"R": 384, "D": 1000}),
              Variant("long-rows", {"R": 128, "D": 4096}, timed=True)),
    interface=lambda p: {"x": ("float32", (p["R"], p["D"]), "input"),
                         "y": ("float32", (p["R"], p["D"]), "output")},
    inputs=lambda rng, p: {"x": _f32(rng, (p["R"], p["D"]), std=30.0)},
    oracle=_softmax_oracle)


# ---- 04 double buffering with explicit semaphores --------------------------------------------

def _relu2_oracle(inputs, p: Params):
    x = _f64(inputs["x"])
    return {"y": (np.maximum(2.0 * x, 0.0), 0.0)}   # 2x and relu are exact in fp32


OVERLAP = Lab(
    name="04-double-buffer", title="Overlap: double buffering and explicit semaphores",
    params=("R",),
    variants=(Variant("shown", {"R": 2048}, shown=True, timed=True),
              Variant("short", {"R": 512}),
              Variant("long", {"R": 4096}, timed=True)),
    interface=lambda p: {"x": ("float32", (p["R"], 512), "input"),
                         "y": ("float32", (p["R"], 512), "output")},
    inputs=lambda rng, p: {"x": _f32(rng, (p["R"], 512))},
    oracle=_relu2_oracle, sync="explicit")


# ---- 05 low precision: bf16 operands, stochastic rounding, an error bound --------------------

# With stochastic rounding an fp32 -> bf16 cast is off by less than one bf16 ulp (2**-7
# relative), not half of one: each product of two cast operands is within 2 * 2**-7 + 2**-14.
BF16_SR_PRODUCT = 2 * 2.0 ** -7 + 2.0 ** -14

LOW_PRECISION = Lab(
    name="05-low-precision", title="Low precision: bf16 matmul under an error bound",
    params=("M", "K", "N"),
    variants=(Variant("shown", {"M": 1024, "K": 512, "N": 1024}, shown=True, timed=True),
              Variant("deep", {"M": 128, "K": 1024, "N": 512}),
              Variant("wide", {"M": 256, "K": 128, "N": 1024})),
    interface=lambda p: {"xT": ("float32", (p["K"], p["M"]), "input"),
                         "w": ("float32", (p["K"], p["N"]), "input"),
                         "y": ("float32", (p["M"], p["N"]), "output")},
    inputs=lambda rng, p: {"xT": _f32(rng, (p["K"], p["M"])), "w": _f32(rng, (p["K"], p["N"]))},
    oracle=lambda x, p: {"y": _matmul_oracle(x["xT"], x["w"], BF16_SR_PRODUCT)},
    stochastic_rounding=True)


# ---- 06 fused conv2d + maxpool ---------------------------------------------------------------

def _conv_interface(p: Params):
    return {"x": ("bfloat16", (p["C_IN"], p["H"] + 2, p["W"] + 2), "input"),
            "w": ("bfloat16", (p["C_IN"], 9, p["C_OUT"]), "input"),
            "y": ("float32", (p["C_OUT"], p["H"] // 2, p["W"] // 2), "output")}


def _conv_oracle(inputs, p: Params):
    x, w = _f64(inputs["x"]), _f64(inputs["w"])
    h, wd = p["H"], p["W"]
    conv = np.zeros((p["C_OUT"], h, wd))
    magnitude = np.zeros_like(conv)
    for tap in range(9):
        dy, dx = divmod(tap, 3)
        window = x[:, dy:dy + h, dx:dx + wd]
        conv += np.einsum("chw,co->ohw", window, w[:, tap, :])
        magnitude += np.einsum("chw,co->ohw", np.abs(window), np.abs(w[:, tap, :]))
    bound = gamma(9 * p["C_IN"] + 1) * magnitude

    def pool(a):
        return a.reshape(p["C_OUT"], h // 2, 2, wd // 2, 2).max(axis=(2, 4))

    # max is 1-Lipschitz in the largest error of its arguments
    return {"y": (pool(conv), pool(bound))}


CONV = Lab(
    name="06-conv-maxpool", title="Fused conv2d + maxpool under a cycle budget",
    params=("C_IN", "C_OUT", "H", "W"),
    variants=(Variant("shown", {"C_IN": 64, "C_OUT": 64, "H": 16, "W": 16}, shown=True),
              Variant("rgb", {"C_IN": 3, "C_OUT": 16, "H": 8, "W": 8}),
              Variant("layer", {"C_IN": 128, "C_OUT": 128, "H": 32, "W": 32}, timed=True)),
    interface=_conv_interface,
    inputs=lambda rng, p: {"x": _padded(rng, p), "w": _bf16(rng, (p["C_IN"], 9, p["C_OUT"]),
                                                           std=1.0 / np.sqrt(9 * p["C_IN"]))},
    oracle=_conv_oracle)


def _padded(rng: np.random.Generator, p: Params) -> np.ndarray:
    x = np.zeros((p["C_IN"], p["H"] + 2, p["W"] + 2), dtype=ml_dtypes.bfloat16)
    x[:, 1:-1, 1:-1] = _bf16(rng, (p["C_IN"], p["H"], p["W"]))
    return x


# ---- 07 ring all-reduce on a 4 x 4 torus -----------------------------------------------------

RING_RANKS = 16   # trn2.48xlarge: 16 chips in a 4 x 4 torus, one rank per chip


def _allreduce_oracle(inputs, p: Params):
    x = _f64(inputs["x"])                     # (ranks, 128, COLS)
    total = x.sum(axis=0)
    bound = gamma(RING_RANKS) * np.abs(x).sum(axis=0)
    return {"y": (np.broadcast_to(total, x.shape), np.broadcast_to(bound, x.shape))}


ALL_REDUCE = Lab(
    name="07-ring-allreduce", title="Collectives: a ring all-reduce on a 4 x 4 torus",
    params=("COLS",),
    variants=(Variant("shown", {"COLS": 4096}, shown=True, timed=True),
              Variant("small", {"COLS": 256}),
              Variant("medium", {"COLS": 1024})),
    interface=lambda p: {"x": ("float32", (128, p["COLS"]), "input"),
                         "y": ("float32", (128, p["COLS"]), "output")},
    inputs=lambda rng, p: {"x": _f32(rng, (RING_RANKS, 128, p["COLS"]))},
    oracle=_allreduce_oracle, topology="trn2.48xlarge",
    forbidden=("cc.all_reduce", "cc.reduce_scatter", "cc.all_gather"))


LABS: dict[str, Lab] = {lab.name: lab for lab in (VECTOR_ADD, MATMUL, SOFTMAX, OVERLAP,
                                                  LOW_PRECISION, CONV, ALL_REDUCE)}


def labs_root() -> Path:
    from neuronemu.errors import InputError
    from neuronemu.programs import programs_dir

    root = programs_dir()
    if root is None or not (root / "labs").is_dir():
        raise InputError("the lab folders (programs/labs) are not installed")
    return root / "labs"


def lab_dir(name: str) -> Path:
    return labs_root() / name


def find_lab(name: str) -> Lab:
    """A lab by folder name (``01-vector-add``), or by its number (``01``, ``1``)."""
    from neuronemu.errors import InputError

    if name in LABS:
        return LABS[name]
    matches = [lab for key, lab in LABS.items()
               if name.isdigit() and key.split("-", 1)[0] == f"{int(name):02d}"]
    if len(matches) == 1:
        return matches[0]
    raise InputError(f"no lab '{name}' (labs: {', '.join(LABS)})")
