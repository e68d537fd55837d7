"""MX on trn3: quantize_mx against an oracle written here from the documented scale formula
(ml_dtypes does the fp8 rounding), and matmul_mx against float64 sums of the dequantized
values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15}


def quantize_reference(x: np.ndarray, element: str):
    """x [P, F] float -> (packed uint32 [P, F/4], scale codes uint8 [P/8, F/4])."""
    fp8 = getattr(ml_dtypes, element)
    p, f = x.shape
    codes = np.zeros((p // 8, f // 4), np.uint8)
    data = np.zeros((p, f), np.uint8)
    for b in range(p // 8):
        for j in range(f // 4):
            block = x[8 * b: 8 * b + 8, 4 * j: 4 * j + 4].astype(np.float64)
            amax = np.max(np.abs(block))
            if not np.all(np.isfinite(block)):
                code = 255
            elif amax == 0:
                code = 0
            else:
                code = int(np.clip(np.floor(np.log2(amax)) - (EMAX[element] - 1) + 127, 0, 254))
            codes[b, j] = code
            scale = np.nan if code == 255 else 2.0 ** (code - 127)
            q = (block / scale).astype(np.float32).astype(fp8)
            data[8 * b: 8 * b + 8, 4 * j: 4 * j + 4] = q.view(np.uint8)
    packed = data.reshape(p, f // 4, 4).astype(np.uint32)
    words = packed[..., 0] | packed[..., 1] << 8 | packed[..., 2] << 16 | packed[..., 3] << 24
    return words, codes


def scale_rows(p: int) -> np.ndarray:
    return np.array([(b // 4) * 32 + b % 4 for b in range(p // 8)])


QUANT = """.target trn3
.hbm x {src}[{p}, {f}] input
.sbuf xs {src}[{p}, {f}]
.sbuf q {dst}[{p}, {c}]
.sbuf s uint8[{p}, {c}]
dma.copy xs, x
vector.memset s, value=7
vector.quantize_mx q, xs, dst_scale=s
"""


@pytest.mark.parametrize("element", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("src", ["bfloat16", "float16"])
def test_quantize_mx_matches_the_documented_formula(element: str, src: str) -> None:
    rng = np.random.default_rng(0)
    p, f = 64, 32
    x = (rng.normal(size=(p, f)) * 2.0 ** rng.integers(-10, 10, size=(p, f)))
    x[:8, :4] = 0.0                     # an all-zero block
    x[8, 4] = -0.0
    x[16:24, 8:12] = 1e-30 if src == "bfloat16" else 1e-7  # tiny block
    x = x.astype(ml_dtypes.bfloat16 if src == "bfloat16" else np.float16)
    result = neuronemu.run(neuronemu.assemble(QUANT.format(src=src, dst=element + "_x4", p=p,
                                                           f=f, c=f // 4), "k.s"),
                           inputs={"x": x})
    words, codes = quantize_reference(np.asarray(x, np.float64), element)
    np.testing.assert_array_equal(result.tiles["q"].view(np.uint32), words)
    scales = result.tiles["s"]
    np.testing.assert_array_equal(scales[scale_rows(p)], codes)
    untouched = np.setdiff1d(np.arange(p), scale_rows(p))
    assert np.all(scales[untouched] == 7)  # rows without scales are not written


def test_quantize_mx_nonfinite_block_gets_nan_scale() -> None:
    x = np.ones((32, 8), np.float32)
    x[3, 1] = np.inf
    result = neuronemu.run(neuronemu.assemble(QUANT.format(src="bfloat16",
                                                           dst="float8_e4m3fn_x4", p=32, f=8,
                                                           c=2), "k.s"),
                           inputs={"x": x.astype(ml_dtypes.bfloat16)})
    assert result.tiles["s"][0, 0] == 255 and result.tiles["s"][0, 1] == 127 - 7


def dequantize(words: np.ndarray, codes: np.ndarray, element: str) -> np.ndarray:
    """x4 [P, C] + scales (rows 32q + g) -> float64 [4P, C] in logical k order."""
    fp8 = getattr(ml_dtypes, element)
    p, c = words.shape
    out = np.empty((4 * p, c))
    for part in range(p):
        row = (part // 32) * 32 + (part % 32) // 8
        factor = 2.0 ** (codes[row].astype(np.float64) - 127)
        for i in range(4):
            byte = ((words[part] >> (8 * i)) & 0xFF).astype(np.uint8)
            out[i * p + part] = byte.view(fp8).astype(np.float64) * factor
    return out


def test_matmul_mx_equals_the_dequantized_product() -> None:
    rng = np.random.default_rng(1)
    wf = rng.normal(size=(128, 64 * 4)).astype(ml_dtypes.bfloat16)
    xf = (rng.normal(size=(128, 96 * 4)) * 100).astype(ml_dtypes.bfloat16)
    src = """.target trn3
.hbm wf bfloat16[128, 256] input
.hbm xf bfloat16[128, 384] input
.sbuf a bfloat16[128, 256]
.sbuf b bfloat16[128, 384]
.sbuf w float8_e4m3fn_x4[128, 64]
.sbuf x float8_e5m2_x4[128, 96]
.sbuf ws uint8[128, 64]
.sbuf xs uint8[128, 96]
.psum acc float32[64, 96]
dma.copy a, wf
dma.copy b, xf
vector.quantize_mx w, a, dst_scale=ws
vector.quantize_mx x, b, dst_scale=xs
tensor.matmul_mx acc, w, x, stationary_scale=ws, moving_scale=xs
"""
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"wf": wf, "xf": xf})
    a = dequantize(result.tiles["w"].view(np.uint32), result.tiles["ws"], "float8_e4m3fn")
    b = dequantize(result.tiles["x"].view(np.uint32), result.tiles["xs"], "float8_e5m2")
    exact = a.T @ b
    bound = 512 * 2.0**-24 * (np.abs(a).T @ np.abs(b)) * 1.01  # 512-term fp32 sum
    assert np.all(np.abs(result.tiles["acc"] - exact) <= bound)
    # and the quantization itself is close to the bf16 inputs: relative error of fp8
    assert result.timing.tensor_flops == 2 * 512 * 64 * 96


def test_two_tensors_scales_packed_in_one_tile_at_quadrant_offsets_0_and_4() -> None:
    """The Trainium3 guide's scale packing: stationary's scales at rows 32q + g, moving's at
    4 + 32q + g of one tile (a slice starting at partition 4); each quantize_mx writes only
    its rows, and matmul_mx reads each from its slice."""
    rng = np.random.default_rng(2)
    wf = rng.normal(size=(128, 64 * 4)).astype(ml_dtypes.bfloat16)
    xf = (rng.normal(size=(128, 64 * 4)) * 10).astype(ml_dtypes.bfloat16)
    src = """.target trn3
.hbm wf bfloat16[128, 256] input
.hbm xf bfloat16[128, 256] input
.sbuf a bfloat16[128, 256]
.sbuf b bfloat16[128, 256]
.sbuf w float8_e4m3fn_x4[128, 64]
.sbuf x float8_e4m3fn_x4[128, 64]
.sbuf packed uint8[128, 64]
.psum acc float32[64, 64]
dma.copy a, wf
dma.copy b, xf
vector.memset packed, value=9
vector.quantize_mx w, a, dst_scale=packed
vector.quantize_mx x, b, dst_scale=packed[4:, :]
tensor.matmul_mx acc, w, x, stationary_scale=packed, moving_scale=packed[4:, :]
"""
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"wf": wf, "xf": xf})
    packed = result.tiles["packed"]
    rows = scale_rows(128)
    _, w_codes = quantize_reference(wf.astype(np.float32), "float8_e4m3fn")
    _, x_codes = quantize_reference(xf.astype(np.float32), "float8_e4m3fn")
    np.testing.assert_array_equal(packed[rows], w_codes)
    np.testing.assert_array_equal(packed[rows + 4], x_codes)
    untouched = np.setdiff1d(np.arange(128), np.concatenate([rows, rows + 4]))
    assert np.all(packed[untouched] == 9)
    a = dequantize(result.tiles["w"].view(np.uint32), packed, "float8_e4m3fn")
    b = dequantize(result.tiles["x"].view(np.uint32), packed[4:], "float8_e4m3fn")
    exact = a.T @ b
    bound = 512 * 2.0**-24 * (np.abs(a).T @ np.abs(b)) * 1.01  # 512-term fp32 sum
    assert np.all(np.abs(result.tiles["acc"] - exact) <= bound)


@pytest.mark.parametrize("body, message", [
    ("vector.tensor_copy f, q", "cannot use 'q' (float8_e4m3fn_x4"),
    ("vector.quantize_mx q, h[0:32, 0:16], dst_scale=s[0:32, :]", "dst must be [32, 4]"),
    ("vector.quantize_mx q[0:16, :], h[0:16, :], dst_scale=s[0:16, :]",
     "must span a multiple of 32 partitions"),
    ("vector.quantize_mx q, h, dst_scale=s[0:8, :]", "dst_scale must be [64, 8]"),
    ("vector.quantize_mx q, h, dst_scale=s[2:, :]", ("starting 0, 4, 8 or 12 partitions into a "
     "quadrant (one scale per 8 partitions x 4 values, at row 32q + g), not [62, 8] at "
     "partition 2")),
    ("vector.quantize_mx q, h, dst_scale=s[32:, :]", "or [at least 36, 8]"),
])
def test_mx_errors(body: str, message: str) -> None:
    src = (".target trn3\n.sbuf h bfloat16[64, 32]\n.sbuf q float8_e4m3fn_x4[64, 8]\n"
           ".sbuf s uint8[64, 8]\n.sbuf f float32[64, 8]\n" + body + "\n")
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(src, "k.s")
    assert message in info.value.render()


def test_x4_dtypes_are_trn3_only() -> None:
    with pytest.raises(AsmError, match="not available on trn2"):
        neuronemu.assemble(".sbuf q float8_e4m3fn_x4[32, 8]\n", "k.s", target="trn2")
