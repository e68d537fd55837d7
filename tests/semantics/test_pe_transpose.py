"""tensor.transpose (nki.isa.nc_transpose on the Tensor engine) per generation. NeuronCore-v3+
(trn2, trn3) moves bits; NeuronCore-v2 (trn1) has no transpose mode and multiplies data by an
identity in fp32, which is not bit-accurate for NaN/Inf (and turns -0.0 into +0.0). Oracles:
ml_dtypes / numpy bit patterns, and a numpy float32 sum over k of data[k, f] * identity[k, p]
in k order from +0.0 (the documented order of tensor.matmul)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

TRANSPOSE = """.target {target}
.hbm x {dt}[{p}, {f}] input
.hbm y float32[{f}, {p}] output
.sbuf xs {dt}[{p}, {f}]
.psum tp {ot}[{f}, {p}]
.sbuf ys float32[{f}, {p}]
    dma.copy xs, x
    {op}
    vector.tensor_copy ys, tp
    dma.copy y, ys
"""


def transpose(data: np.ndarray, target: str, out_dtype: str = "float32") -> np.ndarray:
    p, f = data.shape
    src = TRANSPOSE.format(target=target, dt=data.dtype.name, ot=out_dtype, p=p, f=f,
                           op="tensor.transpose tp, xs")
    return neuronemu.run(neuronemu.assemble(src, "t.s"), inputs={"x": data}).outputs["y"]


def is_transpose_matmul(data: np.ndarray, target: str) -> np.ndarray:
    """tensor.matmul is_transpose=true with an identity moving (what nc_transpose says it is)."""
    p, f = data.shape
    src = TRANSPOSE.format(target=target, dt=data.dtype.name, ot="float32", p=p, f=f,
                           op="tensor.matmul tp, xs, ids, is_transpose=true")
    src = src.replace("    dma.copy xs, x\n", f".hbm i {data.dtype.name}[{p}, {p}] input\n"
                      f".sbuf ids {data.dtype.name}[{p}, {p}]\n    dma.copy xs, x\n"
                      "    dma.copy ids, i\n")
    eye = np.eye(p, dtype=data.dtype)
    return neuronemu.run(neuronemu.assemble(src, "t.s"), inputs={"x": data, "i": eye}).outputs["y"]


def identity_matmul_oracle(data: np.ndarray) -> np.ndarray:
    """out[f, p] = sum over k of data[k, f] * (k == p), in numpy float32, k order, from +0.0."""
    d = data.astype(np.float32)
    p_size, f_size = d.shape
    out = np.empty((f_size, p_size), np.float32)
    with np.errstate(invalid="ignore"):
        for f in range(f_size):
            for p in range(p_size):
                total = np.float32(0.0)
                for k in range(p_size):
                    total = np.float32(total + d[k, f] * np.float32(1.0 if k == p else 0.0))
                out[f, p] = total
    return out


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def test_trn1_nan_spreads_over_its_dst_row_as_the_issue_reproducer_shows() -> None:
    """The reproducer of the gap: zeros with one NaN at [1, 2]. trn1 fills dst row 2 with NaN;
    trn2 and trn3 move the one NaN to [2, 1]."""
    src = """.target {target}
.hbm x float32[4, 4] input init=zeros
.hbm y float32[4, 4] output
.sbuf xs float32[4, 4]
.psum tp float32[4, 4]
.sbuf ys float32[4, 4]
    dma.copy xs, x
    vector.memset xs[1:2, 2:3], value=nan
    tensor.transpose tp, xs
    vector.tensor_copy ys, tp
    dma.copy y, ys
"""
    for target in ("trn1", "trn2", "trn3"):
        y = neuronemu.run(neuronemu.assemble(src.format(target=target), "r.s")).outputs["y"]
        expected_nan = np.zeros((4, 4), bool)
        if target == "trn1":
            expected_nan[2, :] = True
        else:
            expected_nan[2, 1] = True
        np.testing.assert_array_equal(np.isnan(y), expected_nan, err_msg=target)
        assert (y[~expected_nan] == 0).all()


def test_trn1_inf_alone_in_its_column_stays_inf_and_the_row_turns_nan() -> None:
    data = np.arange(1, 8 * 6 + 1, dtype=np.float32).reshape(8, 6)
    data[3, 1] = np.inf     # alone in column 1: dst[1, 3] = inf, the rest of row 1 NaN
    data[5, 4] = -np.inf    # column 4 holds -inf and NaN: all of row 4 NaN
    data[6, 4] = np.nan
    y = transpose(data, "trn1")
    assert y[1, 3] == np.inf
    assert np.isnan(np.delete(y[1], 3)).all()
    assert np.isnan(y[4]).all()
    # of two NaNs met in a sum the later product's stays: data[6, 4]'s (k = 6 after the
    # -inf x 0 of k = 5) in every column, whatever order LLVM gives the additions' operands
    assert (bits(y[4]) == 0x7FC00000).all()
    finite_rows = [0, 2, 3, 5]
    np.testing.assert_array_equal(bits(y[finite_rows]), bits(data.T[finite_rows]))
    oracle = identity_matmul_oracle(data)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(oracle))
    np.testing.assert_array_equal(bits(y[~np.isnan(y)]), bits(oracle[~np.isnan(oracle)]))


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_trn1_negative_zero_becomes_positive_zero(dt: str) -> None:
    """The fp32 sum starts at +0.0 and +0.0 + -0.0 = +0.0; v3+ moves the sign bit."""
    data = np.array([[-0.0, 1.5], [2.0, -0.0], [-0.0, -3.0]], np.float32).astype(
        ml_dtypes.bfloat16 if dt == "bfloat16" else np.float32)
    trn1 = transpose(data, "trn1")
    np.testing.assert_array_equal(bits(trn1), bits(data.astype(np.float32).T + np.float32(0)))
    assert not np.signbit(trn1[trn1 == 0]).any()
    for target in ("trn2", "trn3"):
        np.testing.assert_array_equal(bits(transpose(data, target)),
                                      bits(data.astype(np.float32).T), err_msg=target)


@pytest.mark.parametrize("dt", ["float32", "bfloat16", "float8_e4m3"])
@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_finite_values_are_exact_on_every_target(dt: str, target: str) -> None:
    if target == "trn3" and dt == "float8_e4m3":
        dt = "float8_e4m3fn"
    rng = np.random.default_rng(11)
    data = (rng.standard_normal((128, 96)) * 4).astype(getattr(ml_dtypes, dt, np.float32))
    data[data == 0] = 1  # no zeros: -0.0 is the one finite value trn1 changes
    np.testing.assert_array_equal(bits(transpose(data, target)),
                                  bits(data.astype(np.float32).T))


def test_trn1_transpose_matches_the_oracle_and_is_transpose_on_special_values() -> None:
    """Random fp32 bit patterns with NaNs, infinities and signed zeros sprinkled in: the k-order
    oracle, and tensor.matmul is_transpose=true with an identity (the same matmul on trn1)."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((32, 24)).astype(np.float32)
    for k, f, v in [(0, 0, np.nan), (7, 3, np.inf), (9, 5, -np.inf), (9, 6, -0.0),
                    (31, 23, np.nan), (4, 10, np.inf), (5, 10, np.inf), (2, 11, 0.0)]:
        data[k, f] = v
    y = transpose(data, "trn1")
    oracle = identity_matmul_oracle(data)
    nan = np.isnan(oracle)
    assert nan[[0, 10, 23]].all() and not nan[[1, 6, 11]].any()
    assert nan[3].sum() == nan[5].sum() == 31 and y[3, 7] == np.inf and y[5, 9] == -np.inf
    np.testing.assert_array_equal(np.isnan(y), nan)
    np.testing.assert_array_equal(bits(y[~nan]), bits(oracle[~nan]))
    via_matmul = is_transpose_matmul(data, "trn1")
    np.testing.assert_array_equal(np.isnan(via_matmul), nan)
    np.testing.assert_array_equal(bits(via_matmul[~nan]), bits(oracle[~nan]))


@pytest.mark.parametrize("target, decls, message, column", [
    ("trn1", ".sbuf d bfloat16[16, 8]\n.psum t bfloat16[8, 16]",
     ("tensor.transpose is a matmul with an identity on trn1 and writes float32 into PSUM, like "
     "tensor.matmul; dst is bfloat16"), 18),
    ("trn1", ".sbuf d int32[16, 8]\n.psum t float32[8, 16]",
     ("data has dtype int32; tensor.transpose is a matmul with an identity on trn1 and accepts "
     "float32, tfloat32, bfloat16"), 21),
    ("trn2", ".sbuf d bfloat16[16, 8]\n.psum t float16[8, 16]",
     "dst has dtype float16; it must be float32 or data's dtype bfloat16", 18),
])
def test_transpose_dtype_errors_are_located(target, decls, message, column) -> None:
    src = f".target {target}\n{decls}\ntensor.transpose t, d\n"
    with pytest.raises(AsmError) as err:
        neuronemu.assemble(src, "k.s")
    text = str(err.value)
    assert f"k.s:4:{column}: error: {message}" in text
    assert "tensor.transpose t, d" in text and "^" in text


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_v3_keeps_a_16_bit_dst_in_data_dtype(target: str) -> None:
    src = (f".target {target}\n.sbuf d bfloat16[16, 8]\n.psum t bfloat16[8, 16]\n"
           "tensor.transpose t, d\n")
    neuronemu.assemble(src, "k.s")
