"""neuronemu.testing beyond ULPs: the run helper, the accumulation bounds, the timing
assertion and the hypothesis strategies."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from neuronemu.errors import InputError
from neuronemu.testing import (
    assert_timing,
    assert_within_bound,
    gamma,
    matmul_error_bound,
    run_kernel,
    sum_error_bound,
    unit_roundoff,
    utilisation,
)
from neuronemu.testing import strategies as nst

SCALE = """\
.hbm x float32[128, 64] input
.hbm y float32[128, 64] output
.sbuf t float32[128, 64]
    dma.copy t, x
    vector.tensor_scalar t, t, op0=multiply, operand0=3.0
    dma.copy y, t
"""


def test_run_kernel_from_text_gives_outputs_inputs_tiles_timing():
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    run = run_kernel(SCALE, {"x": x}, target="trn1")
    assert run.target == "trn1"
    np.testing.assert_array_equal(run.outputs["y"], 3 * x)
    np.testing.assert_array_equal(run.inputs["x"], x)
    np.testing.assert_array_equal(run.tiles["t"], 3 * x)
    assert run.time_ns == run.timing.time_ns > 0
    assert run.warnings == []


def test_run_kernel_draws_inputs_from_initialisers_and_reports_warnings(tmp_path):
    kernel = tmp_path / "k.s"
    kernel.write_text(SCALE.replace("input", "input init=normal(0, 1)").replace(
        "    dma.copy t, x\n", ""))            # reads t before anything wrote it
    run = run_kernel(kernel, seed=3)
    assert run.inputs["x"].std() > 0.5                         # drawn, not the NaN default
    assert len(run.warnings) == 1 and "nothing wrote before" in str(run.warnings[0])
    again = run_kernel(kernel.name, seed=3, base=tmp_path)     # relative to base
    np.testing.assert_array_equal(again.inputs["x"], run.inputs["x"])


def test_run_kernel_finds_bundled_programs_and_refuses_unknown_names():
    assert run_kernel("examples/vector_add").outputs["c"].shape == (128, 512)
    with pytest.raises(InputError, match="no such kernel file: nope.s"):
        run_kernel("nope.s")


def test_gamma_and_unit_roundoff_by_hand():
    assert unit_roundoff("float32") == 2.0 ** -24
    assert unit_roundoff("bfloat16") == 2.0 ** -8
    assert gamma(128, "float32") == 128 * 2.0 ** -24 / (1 - 128 * 2.0 ** -24)
    with pytest.raises(ValueError, match="undefined"):
        gamma(256, "bfloat16")


def _sequential_f32_matmul(a, b):
    """fp32 dot products summed left to right: a computation the bound must cover."""
    out = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        out += a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)
    return out


def test_matmul_bound_covers_fp32_accumulation_and_catches_a_wrong_result():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(16, 512)).astype(ml_dtypes.bfloat16)
    b = rng.normal(size=(512, 8)).astype(ml_dtypes.bfloat16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = matmul_error_bound(a, b)
    computed = _sequential_f32_matmul(a, b)
    assert_within_bound(computed, exact, bound)
    wrong = computed.copy()
    wrong[3, 4] += 3 * bound[3, 4]
    with pytest.raises(AssertionError, match=r"1 of 128 elements .* exceed their error bound "
                                             r"\(worst: 3(\.\d*)? x the bound\)"):
        assert_within_bound(wrong, exact, bound)
    # stored to bf16, half a bf16 ulp more
    narrow = computed.astype(ml_dtypes.bfloat16)
    assert_within_bound(narrow, exact, matmul_error_bound(a, b, output="bfloat16"))
    with pytest.raises(AssertionError):
        assert_within_bound(narrow, exact, bound)


def test_sum_bound_uses_n_minus_one_additions():
    x = np.ones((2, 5))
    np.testing.assert_array_equal(sum_error_bound(x), gamma(4) * 5)


def test_timing_assertion_passes_within_budget_and_prints_the_critical_path():
    run = run_kernel("examples/softmax", target="trn2")
    assert_timing(run, max_ns=run.time_ns, min_utilisation={"vector": 0.01})
    with pytest.raises(AssertionError) as failure:
        assert_timing(run, max_ns=run.time_ns / 2, max_cycles=10, min_utilisation={"tensor": 0.5})
    message = str(failure.value)
    first = message.splitlines()[0]
    assert "> budget" in first and "tensor cycles > budget 10" in first
    assert "tensor utilisation 0.0% < 50.0%" in first
    assert f"critical path: bound by {run.timing.bound_by}" in message
    assert "softmax.s:" in message                      # the busiest source lines
    with pytest.raises(ValueError, match="no track 'tensr'"):
        utilisation(run.timing, "tensr")


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(nst.FLOAT_DTYPES), st.sampled_from(["trn1", "trn2", "trn3"]),
       st.integers(1, 4), st.data())
def test_tile_shapes_fit_one_sbuf_partition(dtype, target, tiles, data):
    from neuronemu.isa.table import load_isa

    t = load_isa().targets[target]
    partitions, free = data.draw(nst.tile_shapes(dtype, target, tiles=tiles, max_free=10 ** 9))
    assert 1 <= partitions <= t.partitions
    assert tiles * free * np.dtype(nst.dtypes.numpy_dtype(dtype)).itemsize \
        <= t.sbuf_partition_bytes


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float8_e4m3", "float8_e4m3fn",
                                  "float8_e5m2"])
def test_special_values_are_the_documented_ones(name):
    dtype = np.dtype(np.float16) if name == "float16" else np.dtype(getattr(ml_dtypes, name))
    info = ml_dtypes.finfo(dtype)
    bits = np.array(nst.special_bits(name), dtype=f"<u{dtype.itemsize}")
    with np.errstate(invalid="ignore"):
        values = bits.view(dtype).astype(np.float64)
    finite = values[np.isfinite(values)]
    for want in (0.0, float(info.smallest_subnormal), float(info.smallest_normal),
                 float(info.max), -float(info.max), 1.0):
        assert want in finite
    assert np.signbit(finite[finite == 0]).any()                      # -0.0
    assert np.isnan(values).sum() >= 2                                # NaNs of both signs
    assert np.isinf(values).sum() == (0 if name == "float8_e4m3fn" else 2)
    if name not in ("float8_e4m3fn",):
        assert len({int(b) for b, v in zip(bits, values, strict=True) if np.isnan(v)}) >= 4


@settings(max_examples=30, deadline=None)
@given(nst.rounding_ties("bfloat16"))
def test_rounding_ties_are_exact_midpoints(tie):
    value = np.float32(tie)
    low = value.astype(ml_dtypes.bfloat16).astype(np.float64)
    step = np.nextafter(ml_dtypes.bfloat16(low), ml_dtypes.bfloat16(np.inf))
    high_or_low = [low, float(step), float(np.nextafter(ml_dtypes.bfloat16(low),
                                                          ml_dtypes.bfloat16(-np.inf)))]
    assert any(abs(float(value) - (low + other) / 2) == 0 for other in high_or_low[1:])
    assert float(value) != low


@settings(max_examples=15, deadline=None)
@given(nst.tiles("bfloat16", shape=st.tuples(st.integers(1, 8), st.integers(1, 16)),
                 max_specials=8))
def test_tiles_have_the_dtype_and_shape(x):
    assert x.dtype == ml_dtypes.bfloat16
    assert 1 <= x.shape[0] <= 8 and 1 <= x.shape[1] <= 16


def test_run_kernel_on_every_rank_of_a_topology():
    run = run_kernel("collectives/all_reduce", target="trn1", topology="trn1.2xlarge",
                     ranks_per_chip=2)
    ranks = run.result.ranks
    assert len(ranks) == 2 and run.outputs["y"].shape == (2, 256, 1024)
    inputs = [r.tensors["x"].astype(np.float64) for r in ranks]
    np.testing.assert_array_equal(run.inputs["x"], ranks[0].tensors["x"])
    bound = sum_error_bound(np.stack(inputs), axis=0)
    for r in range(2):
        assert_within_bound(run.outputs["y"][r], inputs[0] + inputs[1], bound)
    assert run.time_ns == run.result.time_ns
    with pytest.raises(AttributeError, match="per rank"):
        run.tiles  # noqa: B018


def test_fp32_tiles_can_hold_the_ties_of_a_narrower_dtype():
    ties = set(nst.tie_values("float8_e4m3"))
    found = find(nst.tiles("float32", shape=(4, 64), ties_of="float8_e4m3"),
                 lambda x: any(float(v) in ties for v in x.flat if abs(v) > 0.01),
                 settings=settings(max_examples=200, deadline=None))
    assert found.dtype == np.float32


def test_tie_values_by_hand():
    # float8_e4m3 around 1.0: 1, 1.125, 1.25 (3 mantissa bits) -> ties 1.0625 and 1.1875
    ties = nst.tie_values("float8_e4m3", 1.0, 1.25)
    assert ties == [1.0625, 1.1875]


@pytest.mark.parametrize("bound", [-0.5, np.nan, np.array([1.0, -1e-9])])
def test_a_negative_or_nan_bound_is_refused_not_passed(bound):
    # |2 - 1| / -0.5 < 0 would count as "within" if the bound were not checked first
    with pytest.raises(ValueError, match="negative or NaN"):
        assert_within_bound(np.array([2.0, 1.0]), np.array([1.0, 1.0]), bound)
