"""The Python API: assemble, run with numpy inputs, results, errors."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import neuronemu

SCALE_BF16 = """
.hbm x bfloat16[128, 64] input
.hbm y float32[128, 64] output
.hbm counts int32[128, 64] output
.sbuf t float32[128, 64]
.sbuf k int32[128, 64]
dma.copy t, x
vector.tensor_scalar t, t, op0=multiply, operand0=3.0
dma.copy y, t
gpsimd.iota k, base=-5, channel_multiplier=64, step=1
dma.copy counts, k
"""


def test_assemble_string_and_run_with_float64_inputs() -> None:
    x = np.random.default_rng(0).standard_normal((128, 64))
    program = neuronemu.assemble(SCALE_BF16, filename="scale.s", target="trn3")
    result = neuronemu.run(program, inputs={"x": x})
    assert result.target == "trn3"
    # float64 inputs load as x.astype(bfloat16), bit for bit
    loaded = result.tensors["x"]
    assert loaded.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(loaded.view(np.uint16),
                                  x.astype(ml_dtypes.bfloat16).view(np.uint16))
    # 3 * bf16 value is computed in fp32: oracle is float64 math rounded to fp32
    expected = (loaded.astype(np.float64) * 3.0).astype(np.float32)
    np.testing.assert_array_equal(result.outputs["y"], expected)
    np.testing.assert_array_equal(result.outputs["counts"],
                                  np.arange(128 * 64, dtype=np.int32).reshape(128, 64) - 5)
    assert result.outputs["counts"].dtype == np.int32
    assert result.instructions == {"dma": 3, "vector": 1, "gpsimd": 1}
    assert result.steps == 5 and result.wall_seconds >= 0


def test_ml_dtypes_inputs_are_taken_as_they_are() -> None:
    bits = np.arange(128 * 64, dtype=np.uint16).reshape(128, 64) | 0x3F00  # assorted bf16 values
    x = bits.view(ml_dtypes.bfloat16)
    result = neuronemu.run(neuronemu.assemble(SCALE_BF16), inputs={"x": x})
    np.testing.assert_array_equal(result.tensors["x"].view(np.uint16), bits)


def test_assemble_file(tmp_path: Path) -> None:
    path = tmp_path / "k.s"
    path.write_text(SCALE_BF16)
    program = neuronemu.assemble_file(path)
    assert program.target.name == "trn2"
    assert [t.name for t in program.inputs()] == ["x"]
    assert [t.name for t in program.outputs()] == ["y", "counts"]


def test_input_errors_are_input_errors() -> None:
    program = neuronemu.assemble(SCALE_BF16, filename="scale.s")
    with pytest.raises(neuronemu.InputError, match=r"input 'x' has shape \(64, 64\)"):
        neuronemu.run(program, inputs={"x": np.zeros((64, 64))})
    with pytest.raises(neuronemu.InputError, match="kernel has no tensor 'z'"):
        neuronemu.run(program, inputs={"z": np.zeros((128, 64))})
    with pytest.raises(neuronemu.InputError) as info:
        neuronemu.run(program, inputs={"x": np.zeros((1, 1))})
    assert info.value.location is not None and info.value.location.line == 2
    assert info.value.exit_code == 4


def test_integer_tensors_refuse_fractional_floats() -> None:
    program = neuronemu.assemble(".hbm n int32[4, 4] input\n.hbm o int32[4, 4] output\n")
    with pytest.raises(neuronemu.InputError, match="non-integer values"):
        neuronemu.run(program, inputs={"n": np.full((4, 4), 0.5)})
    result = neuronemu.run(program, inputs={"n": np.full((4, 4), 7.0)})
    np.testing.assert_array_equal(result.tensors["n"], np.full((4, 4), 7, np.int32))


def test_assembly_errors_carry_location_and_render() -> None:
    with pytest.raises(neuronemu.AsmError) as info:
        neuronemu.assemble(".sbuf t float32[128, 8]\nvector.memset t, value=zz\n", filename="m.s")
    error = info.value
    assert (error.location.line, error.location.column) == (2, 24)
    assert error.render().splitlines()[0] == "m.s:2:24: error: unknown name 'zz' in expression"
    assert isinstance(error, neuronemu.NeuronemuError) and error.exit_code == 3


def test_default_initialisers() -> None:
    program = neuronemu.assemble("""
.hbm z float32[2, 3] input init=zeros
.hbm r float32[2, 3] input init=arange
.hbm u float32[1000, 1] input init=uniform(2, 3)
.hbm y float32[2, 3] output
""")
    result = neuronemu.run(program, seed=5)
    np.testing.assert_array_equal(result.tensors["z"], np.zeros((2, 3)))
    np.testing.assert_array_equal(result.tensors["r"], np.arange(6).reshape(2, 3))
    u = result.tensors["u"]
    assert u.min() >= 2 and u.max() < 3 and abs(u.mean() - 2.5) < 0.05
    # an output nobody wrote reads as NaN, so a missing store shows
    assert np.isnan(result.outputs["y"]).all()
