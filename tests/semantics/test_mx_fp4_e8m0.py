"""MXFP4 data (float4_e2m1fn_x4) and E8M0 scale tiles (float8_e8m0fnu) in quantize_mx / matmul_mx
on trn3.

Oracles: a float64 numpy reference of the documented MX matmul (value i of partition p's x4
element is logical contraction index p + P i; each value times 2^(code - 127) of its block's
scale at row 32 q + g; fp4 codes decoded from the OCP E2M1 table written here, fp8 bytes by
ml_dtypes), exact where the data are chosen so that every partial sum is an fp32 value;
hand-computed small products; and the uint8-scale runs of the same programs (E8M0 and uint8 scale
tiles hold the same codes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.isa import dtypes as D
from neuronemu.numerics import convert as C

FP4_TABLE = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                      -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
FP8 = {"float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2}


def scale_row(p: int) -> int:
    return (p // 32) * 32 + (p % 32) // 8


def logical(words: np.ndarray, codes: np.ndarray, dtype: str) -> np.ndarray:
    """x4 words [P, C] and a scale tile [P or P/8, C] -> float64 [4P, C], row p + P i."""
    p_count, columns = words.shape
    words = words.astype(np.int64)
    out = np.empty((4 * p_count, columns))
    for p in range(p_count):
        factor = np.ldexp(1.0, codes[scale_row(p)].astype(np.int64) - 127)
        factor = np.where(codes[scale_row(p)] == 255, np.nan, factor)
        for i in range(4):
            if dtype == "float4_e2m1fn_x4":
                values = FP4_TABLE[(words[p] >> (4 * i)) & 0xF]
            else:
                values = (((words[p] >> (8 * i)) & 0xFF).astype(np.uint8).view(FP8[dtype])
                          .astype(np.float64))
            out[i * p_count + p] = values * factor
    return out


MATMUL = """.target trn3
.hbm w {sd}[{p}, {m}] input
.hbm x {md}[{p}, {n}] input
.hbm ws {ssd}[{sp}, {m}] input
.hbm xs {msd}[{sp}, {n}] input
.sbuf sw {sd}[{p}, {m}]
.sbuf sx {md}[{p}, {n}]
.sbuf sws {ssd}[{sp}, {m}]
.sbuf sxs {msd}[{sp}, {n}]
.psum acc float32[{m}, {n}]
dma.copy sw, w
dma.copy sx, x
dma.copy sws, ws
dma.copy sxs, xs
tensor.matmul_mx acc, sw, sx, stationary_scale=sws, moving_scale=sxs
"""


def run_matmul(w, x, ws, xs, sd="float4_e2m1fn_x4", md="float4_e2m1fn_x4",
               ssd="float8_e8m0fnu", msd="float8_e8m0fnu"):
    p, m = w.shape
    n = x.shape[1]
    src = MATMUL.format(p=p, m=m, n=n, sp=ws.shape[0], sd=sd, md=md, ssd=ssd, msd=msd)
    as_scale = {"float8_e8m0fnu": lambda c: c.view(ml_dtypes.float8_e8m0fnu),
                "uint8": lambda c: c}
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={
        "w": w, "x": x, "ws": as_scale[ssd](ws), "xs": as_scale[msd](xs)})
    return result


def random_words(rng, shape, dtype):
    if dtype == "float4_e2m1fn_x4":
        return rng.integers(0, 2**16, size=shape, dtype=np.uint64).astype(np.uint16)
    # fp8: avoid NaN bytes (e4m3fn 0x7F/0xFF, e5m2 exponent 31) by drawing finite values
    values = rng.standard_normal((shape[0], 4 * shape[1])) * 4
    return C.pack_x4(values, dtype)


def test_fp4_matmul_is_exact_when_every_sum_is_an_fp32_value() -> None:
    """fp4 values are multiples of 1/2 up to 6 and the scales are 2^-1 .. 2^1, so every product is
    a multiple of 2^-4 of magnitude <= 144 and any sum of 512 of them fits in 21 bits: the fp32
    result must equal the float64 reference exactly, whatever the summation order. Scale rows that
    hold no scale (28 per quadrant) carry garbage that must not be read."""
    rng = np.random.default_rng(1)
    p, m, n = 128, 64, 96
    w = random_words(rng, (p, m), "float4_e2m1fn_x4")
    x = random_words(rng, (p, n), "float4_e2m1fn_x4")
    ws = rng.integers(0, 256, size=(p, m)).astype(np.uint8)   # garbage everywhere ...
    xs = rng.integers(0, 256, size=(p, n)).astype(np.uint8)
    rows = [scale_row(q) for q in range(0, p, 8)]
    ws[rows] = rng.integers(126, 129, size=(len(rows), m))       # ... but the scale rows
    xs[rows] = rng.integers(126, 129, size=(len(rows), n))
    result = run_matmul(w, x, ws, xs)
    want = logical(w, ws, "float4_e2m1fn_x4").T @ logical(x, xs, "float4_e2m1fn_x4")
    got = result.tiles["acc"]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.astype(np.float64), want)
    assert np.abs(want).max() > 100  # not trivially small
    assert result.timing.tensor_flops == 2 * 4 * p * m * n


@pytest.mark.parametrize("sd, md", [
    ("float4_e2m1fn_x4", "float4_e2m1fn_x4"),
    ("float4_e2m1fn_x4", "float8_e4m3fn_x4"),
    ("float8_e5m2_x4", "float4_e2m1fn_x4"),
])
def test_mixed_fp4_fp8_matmul_against_float64(sd: str, md: str) -> None:
    """Wide scale range (2^-27 .. 2^23): compared with the float64 product within the bound of a
    512-term fp32 sum of exact products."""
    rng = np.random.default_rng(2)
    p, m, n = 128, 32, 80
    w, x = random_words(rng, (p, m), sd), random_words(rng, (p, n), md)
    ws = rng.integers(100, 151, size=(p, m)).astype(np.uint8)
    xs = rng.integers(100, 151, size=(p, n)).astype(np.uint8)
    result = run_matmul(w, x, ws, xs, sd=sd, md=md, ssd="float8_e8m0fnu", msd="uint8")
    a, b = logical(w, ws, sd), logical(x, xs, md)
    exact = a.T @ b
    bound = 4 * p * 2.0**-24 * (np.abs(a).T @ np.abs(b)) * 1.01
    assert np.all(np.abs(result.tiles["acc"] - exact) <= bound)


def test_hand_computed_fp4_times_fp8() -> None:
    """P = 32 (scale tiles [P/8, C]). Partition 0: fp4 [1, -0.5, 6, 0] (word 0x0792) against
    e4m3fn [2, 3, 0.5, 4] (bytes 0x40 0x44 0x30 0x48), scales 2^1 (E8M0 code 128) and 2^-1
    (uint8 code 126): (2 - 1.5 + 3 + 0) * 2 * 0.5 = 3.5. Partition 9 (scale row 1): fp4 1.5 in
    nibble 0 against e4m3fn 4.0 in byte 0, scales 2^0 and 2^2: 1.5 * 4 * 4 = 24. Total 27.5. With
    the nibbles read in the other order partition 0 would give 0*2 + 6*3 - 0.5*0.5 + 1*4 = 21.75
    instead: the fp4 nibble i pairs with fp8 byte i. Stationary column 1 (the free size must be
    even) is all zeros: 0."""
    w = np.zeros((32, 2), np.uint16)
    x = np.zeros((32, 1), np.uint32)
    w[0, 0], w[9, 0] = 0x0792, 0x0003
    x[0, 0], x[9, 0] = 0x48304440, 0x00000048
    assert C.pack_x4([[1.0, -0.5, 6.0, 0.0]], "float4_e2m1fn_x4")[0, 0] == 0x0792
    assert C.pack_x4([[2.0, 3.0, 0.5, 4.0]], "float8_e4m3fn_x4")[0, 0] == 0x48304440
    ws = np.array([[128, 127], [127, 127], [127, 127], [127, 127]], np.uint8)
    xs = np.array([[126], [129], [127], [127]], np.uint8)
    result = run_matmul(w, x, ws, xs, sd="float4_e2m1fn_x4", md="float8_e4m3fn_x4",
                        ssd="float8_e8m0fnu", msd="uint8")
    assert result.tiles["acc"][:, 0].tolist() == [27.5, 0.0]


def test_nan_scale_poisons_only_its_block() -> None:
    rng = np.random.default_rng(3)
    w = random_words(rng, (64, 8), "float4_e2m1fn_x4") | np.uint16(0x2222)  # no zero nibbles
    x = random_words(rng, (64, 16), "float4_e2m1fn_x4")
    ws = np.full((64, 8), 127, np.uint8)
    xs = np.full((64, 16), 127, np.uint8)
    xs[scale_row(40), 5] = 255   # moving block (quadrant 1, group 1, column 5)
    got = run_matmul(w, x, ws, xs).tiles["acc"]
    assert np.all(np.isnan(got[:, 5]))
    assert np.all(np.isfinite(np.delete(got, 5, axis=1)))


QUANT = """.target trn3
.hbm x bfloat16[{p}, {f}] input
.sbuf xs bfloat16[{p}, {f}]
.sbuf q {dst}[{p}, {c}]
.sbuf s {scale}[{p}, {c}]
.sbuf w float4_e2m1fn_x4[{p}, {m}]
.sbuf ws {scale}[{p}, {m}]
.hbm wi float4_e2m1fn_x4[{p}, {m}] input
.hbm wsi {scale}[{p}, {m}] input
.psum acc float32[{m}, {c}]
dma.copy xs, x
dma.copy w, wi
dma.copy ws, wsi
vector.memset s, value=1.0
vector.quantize_mx q, xs, dst_scale=s
tensor.matmul_mx acc, w, q, stationary_scale=ws, moving_scale=s
"""


@pytest.mark.parametrize("dst", ["float8_e4m3fn_x4", "float8_e5m2_x4"])
def test_e8m0_scale_tiles_hold_the_uint8_codes(dst: str) -> None:
    """quantize_mx into a float8_e8m0fnu scale tile writes the same codes as into a uint8 one
    (rows without scales keep the memset's 1.0: E8M0 code 127, uint8 1), the API shows them as
    E8M0 values 2^(c - 127), and matmul_mx (fp4 stationary, fp8 moving) reads them identically."""
    rng = np.random.default_rng(5)
    p, f, m = 64, 64, 16
    x = (rng.standard_normal((p, f)) * 2.0 ** rng.integers(-8, 8, (p, f))).astype(
        ml_dtypes.bfloat16)
    wi = random_words(rng, (p, m), "float4_e2m1fn_x4")
    wsi = rng.integers(120, 135, size=(p, m)).astype(np.uint8)
    runs = {}
    for scale, codes in (("float8_e8m0fnu", wsi.view(ml_dtypes.float8_e8m0fnu)), ("uint8", wsi)):
        src = QUANT.format(p=p, f=f, c=f // 4, m=m, dst=dst, scale=scale)
        runs[scale] = neuronemu.run(neuronemu.assemble(src, "k.s"),
                                    inputs={"x": x, "wi": wi, "wsi": codes})
    e8m0, plain = runs["float8_e8m0fnu"], runs["uint8"]
    assert e8m0.tiles["s"].dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
    rows = [scale_row(q) for q in range(0, p, 8)]
    untouched = np.setdiff1d(np.arange(p), rows)
    np.testing.assert_array_equal(e8m0.tiles["s"].view(np.uint8)[rows], plain.tiles["s"][rows])
    assert np.all(e8m0.tiles["s"].view(np.uint8)[untouched] == 127)
    assert np.all(plain.tiles["s"][untouched] == 1)
    np.testing.assert_array_equal(e8m0.tiles["q"], plain.tiles["q"])
    codes = plain.tiles["s"][rows].astype(np.int64)
    np.testing.assert_array_equal(e8m0.tiles["s"][rows].astype(np.float64),
                                  np.ldexp(1.0, codes - 127))
    np.testing.assert_array_equal(e8m0.tiles["ws"].view(np.uint8), wsi)
    np.testing.assert_array_equal(e8m0.tiles["acc"], plain.tiles["acc"])
    want = logical(wi, wsi, "float4_e2m1fn_x4").T @ logical(plain.tiles["q"], plain.tiles["s"],
                                                             dst)
    a = np.abs(logical(wi, wsi, "float4_e2m1fn_x4"))
    bound = 4 * p * 2.0**-24 * (a.T @ np.abs(logical(plain.tiles["q"], plain.tiles["s"], dst)))
    assert np.all(np.abs(e8m0.tiles["acc"] - want) <= bound * 1.01)


def test_engines_store_and_read_e8m0_like_ml_dtypes() -> None:
    """float8_e8m0fnu is a storage dtype on trn3: a Vector copy from fp32 rounds as ml_dtypes'
    astype (ties up, 0 / negatives / inf / NaN -> 0xFF), a DMA cast does the same through fp32,
    and reading it back gives 2^(c - 127) exactly."""
    rng = np.random.default_rng(6)
    x = np.exp2(rng.uniform(-140, 127.5, size=(32, 64))).astype(np.float32)
    x[0, :8] = [0.0, -0.0, -1.0, np.inf, np.nan, 1.5, 3.0, 2.0**-127]
    src = """.target trn3
.hbm x float32[32, 64] input
.hbm y float8_e8m0fnu[32, 64] output
.hbm yd float8_e8m0fnu[32, 64] output
.hbm z float32[32, 64] output
.sbuf a float32[32, 64]
.sbuf e float8_e8m0fnu[32, 64]
.sbuf b float32[32, 64]
dma.copy a, x
vector.tensor_copy e, a
vector.tensor_copy b, e
dma.copy y, e
dma.copy yd, x
dma.copy z, b
"""
    result = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"x": x})
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(ml_dtypes.float8_e8m0fnu)
    for name in ("y", "yd"):
        assert result.tensors[name].dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
        np.testing.assert_array_equal(result.tensors[name].view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(result.tensors["z"].view(np.uint32),
                                  want.astype(np.float32).view(np.uint32))
    assert list(want.view(np.uint8)[0, :8]) == [255, 255, 255, 255, 255, 128, 129, 0]


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("dtype, word", [("float8_e4m3fn_x4", 0x38383838),
                                         ("float8_e5m2_x4", 0x3C3C3C3C),
                                         ("float4_e2m1fn_x4", 0x2222)])
def test_memset_zero_clears_packed_tiles(engine: str, dtype: str, word: int) -> None:
    """nki.isa.memset: x4 packed tiles take only value=0, which writes all-zero words (+0.0 in
    every packed value). The tile is loaded with nonzero words first."""
    storage = np.uint16 if dtype.startswith("float4") else np.uint32
    src = f""".target trn3
.hbm qi {dtype}[32, 6] input
.hbm out {dtype}[32, 6] output
.sbuf q {dtype}[32, 6]
dma.copy q, qi
{engine}.memset q[:, 1:5], value=0
dma.copy out, q
"""
    words = np.full((32, 6), word, storage)
    out = neuronemu.run(neuronemu.assemble(src, "k.s"), inputs={"qi": words}).outputs["out"]
    expected = words.copy()
    expected[:, 1:5] = 0
    np.testing.assert_array_equal(out, expected)
    assert D.unpack_x4(out, dtype)[:, 4:20].tolist() == np.zeros((32, 16)).tolist()
