"""tensor_tensor / tensor_scalar on the other engines NKI lets them run on (engine=gpsimd,
engine=scalar): gpsimd.tensor_tensor, gpsimd.tensor_scalar, scalar.tensor_scalar. Values:
numpy float32 oracles (one rounding per operator, as the fp32 ALU); timing: the cost formulas
of isa/costs.toml by hand over the engine clocks of isa/targets.toml, and overlap with Vector
work on another track; errors: located, naming the operators the engine runs."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

CLOCK = {"trn1": {"vector": 1.12, "scalar": 1.4, "gpsimd": 1.4},
         "trn2": {"vector": 0.96, "scalar": 1.2, "gpsimd": 1.2},
         "trn3": {"vector": 1.2, "scalar": 1.2, "gpsimd": 1.2}}

DECLS = """.hbm x float32[64, 40] input
.hbm z float32[64, 40] input
.hbm s float32[64, 1] input
.hbm y float32[64, 40] output
.sbuf xs float32[64, 40]
.sbuf zs float32[64, 40]
.sbuf ss float32[64, 1]
.sbuf out float32[64, 40]
    dma.copy xs, x
    dma.copy zs, z
    dma.copy ss, s
"""


def run(body: str, target: str = "trn2", **inputs) -> np.ndarray:
    src = f".target {target}\n{DECLS}    {body}\n    dma.copy y, out\n"
    return neuronemu.run(neuronemu.assemble(src, "e.s"), inputs=inputs).outputs["y"]


@pytest.fixture
def data():
    rng = np.random.default_rng(21)
    return {"x": rng.standard_normal((64, 40)).astype(np.float32),
            "z": rng.standard_normal((64, 40)).astype(np.float32),
            "s": rng.standard_normal((64, 1)).astype(np.float32)}


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("op, oracle", [("add", np.add), ("multiply", np.multiply)])
def test_gpsimd_tensor_tensor_values(target, op, oracle, data) -> None:
    y = run(f"gpsimd.tensor_tensor out, xs, zs, op={op}", target, **data)
    np.testing.assert_array_equal(y, oracle(data["x"], data["z"]))


def test_gpsimd_tensor_tensor_power_on_exact_cases() -> None:
    """Small integer powers are exact in fp32: 2^3 = 8, 3^2 = 9, 1.5^2 = 2.25, x^0 = 1."""
    base = np.tile(np.array([2.0, 3.0, 1.5, 7.0], np.float32), (64, 10))
    expo = np.tile(np.array([3.0, 2.0, 2.0, 0.0], np.float32), (64, 10))
    y = run("gpsimd.tensor_tensor out, xs, zs, op=power", x=base, z=expo,
            s=np.zeros((64, 1), np.float32))
    np.testing.assert_array_equal(y, np.tile(np.array([8, 9, 2.25, 1], np.float32), (64, 10)))


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_scalar_tensor_scalar_multiply_add(target, data) -> None:
    y = run("scalar.tensor_scalar out, xs, op0=multiply, operand0=ss, op1=add, operand1=0.75",
            target, **data)
    np.testing.assert_array_equal(y, data["x"] * data["s"] + np.float32(0.75))


def test_scalar_tensor_scalar_reversed_add(data) -> None:
    y = run("scalar.tensor_scalar out, xs, op0=add, operand0=ss, reverse0=true", **data)
    np.testing.assert_array_equal(y, data["s"] + data["x"])


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_gpsimd_tensor_scalar_values(target, data) -> None:
    y = run("gpsimd.tensor_scalar out, xs, op0=add, operand0=ss, op1=multiply, operand1=-2.5",
            target, **data)
    np.testing.assert_array_equal(y, (data["x"] + data["s"]) * np.float32(-2.5))


def test_other_engines_match_vector_bit_for_bit(data) -> None:
    """Same semantics function: the Vector forms give the same bits (both also equal the numpy
    oracle above; this pins that the new entries pass their operands in Vector's order)."""
    pairs = [("gpsimd.tensor_tensor out, xs, zs, op=multiply",
              "vector.tensor_tensor out, xs, zs, op=multiply"),
             ("scalar.tensor_scalar out, xs, op0=multiply, operand0=ss, reverse0=true",
              "vector.tensor_scalar out, xs, op0=multiply, operand0=ss, reverse0=true"),
             (("gpsimd.tensor_scalar out, xs, op0=multiply, operand0=2.0, op1=add, operand1=ss, "
              "reverse1=true"),
              ("vector.tensor_scalar out, xs, op0=multiply, operand0=2.0, op1=add, operand1=ss, "
              "reverse1=true"))]
    for other, vector in pairs:
        a, b = run(other, **data), run(vector, **data)
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32), err_msg=other)


# ---- timing ---------------------------------------------------------------------------------

TIMING_DECLS = """
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
.sbuf c float32[128, 512]
.sbuf d float32[128, 512]
.sbuf e float32[128, 512]
"""


def timing(body: str, target: str = "trn2"):
    program = neuronemu.assemble(f".target {target}\n{TIMING_DECLS}{body}\n", "t.s")
    return neuronemu.run(program).timing


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("line, engine, cycles", [
    ("gpsimd.tensor_tensor c, a, b, op=add", "gpsimd", 150 + 512),     # GPSIMD_START + N
    ("scalar.tensor_scalar c, a, op0=multiply, operand0=2.0", "scalar", 512),   # max(64, N)
    ("gpsimd.tensor_scalar c, a, op0=add, operand0=1.0", "gpsimd", 150 + 512),
])
def test_cost_on_the_other_engine(target, line, engine, cycles) -> None:
    if target == "trn1" and line.startswith("gpsimd.tensor_scalar"):
        pytest.skip("gpsimd.tensor_scalar is NeuronCore-v3+")
    t = timing(line, target)
    assert set(t.tracks) == {engine}
    assert t.tracks[engine].instructions == 1
    assert t.tracks[engine].busy_ns == pytest.approx(cycles / CLOCK[target][engine], rel=1e-12)


@pytest.mark.parametrize("other, engine, cycles", [
    ("gpsimd.tensor_tensor e, c, d, op=multiply", "gpsimd", 150 + 512),
    ("scalar.tensor_scalar e, c, op0=multiply, operand0=3.0, op1=add, operand1=1.0", "scalar",
     512),
    ("gpsimd.tensor_scalar e, c, op0=multiply, operand0=3.0", "gpsimd", 150 + 512),
])
def test_overlaps_independent_vector_work(other, engine, cycles) -> None:
    """vector.tensor_tensor a = a + b (fp32 SBUF: 2N = 1024 Vector cycles) and an independent
    op on the other engine run at the same time: the run lasts as long as the longer one, not
    the sum; the same op on Vector would queue behind it."""
    vector_ns = 1024 / CLOCK["trn2"]["vector"]
    other_ns = cycles / CLOCK["trn2"][engine]
    t = timing(f"vector.tensor_tensor a, a, b, op=add\n{other}")
    assert t.tracks["vector"].instructions == 1 and t.tracks[engine].instructions == 1
    assert t.time_ns == pytest.approx(max(vector_ns, other_ns))
    serial = timing("vector.tensor_tensor a, a, b, op=add\n"
                    + other.replace(f"{engine}.", "vector.", 1))
    assert serial.time_ns > t.time_ns + 0.4 * min(vector_ns, other_ns)


# ---- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("target, line, message, at", [
    ("trn2", "gpsimd.tensor_tensor c, a, b, op=subtract",
     "op=subtract: gpsimd.tensor_tensor runs add, multiply, power on the GpSimd engine",
     "subtract"),
    ("trn2", "gpsimd.tensor_tensor c, a, p, op=add", "data2", "p,"),
    ("trn2", "scalar.tensor_scalar c, a, op0=multiply, operand0=2.0, op1=maximum, operand1=1.0",
     ("scalar.tensor_scalar runs the operator pairs the Scalar engine has: (multiply, add), "
      "(multiply, bypass), (add, bypass); got op0=multiply, op1=maximum"), "maximum"),
    ("trn2", "scalar.tensor_scalar c, a, op0=subtract, operand0=2.0",
     "got op0=subtract, op1=bypass", "subtract"),
    ("trn2", "gpsimd.tensor_scalar c, a, op0=add, operand0=1.0, op1=divide, operand1=2.0",
     "op1=divide: gpsimd.tensor_scalar runs add, multiply (op1 also bypass)", "divide"),
    ("trn2", "gpsimd.tensor_scalar c, a, op0=add, operand0=col", "operand0", "col"),
    ("trn1", "gpsimd.tensor_scalar c, a, op0=add, operand0=1.0",
     "gpsimd.tensor_scalar is not available on trn1 (only on trn2, trn3)", "gpsimd"),
])
def test_engine_errors_are_located(target, line, message, at) -> None:
    src = (f".target {target}\n.sbuf a float32[128, 64]\n.sbuf b float32[128, 64]\n"
           ".sbuf c float32[128, 64]\n.psum p float32[128, 64]\n.psum col float32[128, 1]\n"
           f"{line}\n")
    with pytest.raises(AsmError) as err:
        neuronemu.assemble(src, "k.s")
    text = str(err.value)
    assert f"k.s:7:{line.index(at) + 1}: error: " in text and message in text, text
    assert line in text and "^" in text
