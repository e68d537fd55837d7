"""tensor.matmul's modes (nki.isa.nc_matmul): fp8 double-row operands [K, 2, F], transpose mode,
the 0/1 operand hints and PE tiling (tile_position / tile_size), plus tensor.matmul_mx's bf16
destination and row tiling. Oracles: float64 matmuls of the operands' exact values, numpy
float32 sums in the documented order, ml_dtypes bit patterns, hand-computed cycle counts."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault

CLOCK_GHZ = {"trn1": 2.8, "trn2": 2.4, "trn3": 2.4}  # TensorE (isa/targets.toml)


def run(src: str, target: str = "trn2", **inputs) -> neuronemu.Result:
    program = neuronemu.assemble(f".target {target}\n{src}", "kernel.s")
    return neuronemu.run(program, inputs=inputs)


def hbm(name: str, array: np.ndarray, role: str = "input") -> str:
    return f".hbm {name} {array.dtype.name}[{', '.join(map(str, array.shape))}] {role}\n"


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint8)


# --- double_row: [K, 2, M] x [K, 2, N] contracts 2K rows --------------------------------------

DOUBLE_ROW = """{decls}.sbuf ws {wd}[{k}, 2, {m}]
.sbuf xs {xd}[{k}, 2, {n}]
.psum acc float32[{m}, {n}]
.sbuf o float32[{m}, {n}]
.hbm out float32[{m}, {n}] output
dma.copy ws, w
dma.copy xs, x
tensor.matmul acc, ws, xs, perf_mode=double_row
vector.tensor_copy o, acc
dma.copy out, o
"""


def double_row(w: np.ndarray, x: np.ndarray, target: str = "trn2") -> np.ndarray:
    k, _, m = w.shape
    n = x.shape[2]
    src = DOUBLE_ROW.format(decls=hbm("w", w) + hbm("x", x), wd=w.dtype.name,
                            xd=x.dtype.name, k=k, m=m, n=n)
    return run(src, target, w=w, x=x).outputs["out"]


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_double_row_is_a_matmul_over_both_halves(target: str) -> None:
    """Small integers: every sum is exact, so the result is the float64 matmul of the 2K x M
    stationary (half 0 then half 1) with the 2K x N moving."""
    rng = np.random.default_rng(1)
    fp8 = ml_dtypes.float8_e4m3
    w = rng.integers(-4, 5, size=(128, 2, 96)).astype(fp8)
    x = rng.integers(-4, 5, size=(128, 2, 200)).astype(fp8)
    expected = (np.concatenate([w[:, 0], w[:, 1]]).astype(np.float64).T
                @ np.concatenate([x[:, 0], x[:, 1]]).astype(np.float64))
    np.testing.assert_array_equal(double_row(w, x, target), expected)


def test_double_row_sums_each_pair_before_the_running_sum() -> None:
    """Random fp8 (mixed e4m3 / e5m2): bit-exact against numpy float32 in the documented order,
    acc += w0 x0 + w1 x1 for k = 0 .. K-1."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 2, 32)).astype(ml_dtypes.float8_e4m3)
    x = (rng.standard_normal((64, 2, 48)) * 8).astype(ml_dtypes.float8_e5m2)
    wf, xf = w.astype(np.float32), x.astype(np.float32)
    acc = np.zeros((32, 48), np.float32)
    for k in range(64):
        pair = (np.multiply.outer(wf[k, 0], xf[k, 0]) + np.multiply.outer(wf[k, 1], xf[k, 1]))
        acc = (acc + pair).astype(np.float32)
    np.testing.assert_array_equal(bits(double_row(w, x)), bits(acc))
    exact = wf[:, 0].astype(np.float64).T @ xf[:, 0] + wf[:, 1].astype(np.float64).T @ xf[:, 1]
    np.testing.assert_allclose(acc, exact, rtol=1e-5, atol=1e-5)


def test_double_row_accepts_slices_of_a_wider_buffer() -> None:
    """The NKI samples pass w[:, 2j:2j+2, :] of a [K, KT, M] buffer."""
    fp8 = ml_dtypes.float8_e4m3
    w = np.arange(128 * 4 * 8).reshape(128, 4, 8) % 5
    x = np.arange(128 * 4 * 16).reshape(128, 4, 16) % 3
    src = (hbm("w", w.astype(fp8)) + hbm("x", x.astype(fp8)) +
           """.sbuf ws float8_e4m3[128, 4, 8]
.sbuf xs float8_e4m3[128, 4, 16]
.psum acc float32[8, 16]
.sbuf o float32[8, 16]
.hbm out float32[8, 16] output
dma.copy ws, w
dma.copy xs, x
tensor.matmul acc, ws[:, 2:4, :], xs[:, 2:4, :], perf_mode=double_row
vector.tensor_copy o, acc
dma.copy out, o
""")
    out = run(src, w=w.astype(fp8), x=x.astype(fp8)).outputs["out"]
    expected = w[:, 2].T.astype(np.float64) @ x[:, 2] + w[:, 3].T.astype(np.float64) @ x[:, 3]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("decl, message", [
    ("ws float8_e4m3[128, 2, 64]\n.sbuf xs float8_e4m3[128, 513]",
     r"moving is \[128, 513\] \(513 elements per partition\), not \[K, 2, F\]"),
    ("ws float8_e4m3[128, 2, 130]\n.sbuf xs float8_e4m3[128, 2, 64]",
     "stationary has 130 elements per partition per half; tensor.matmul allows at most 128"),
    ("ws float8_e4m3[128, 2, 64]\n.sbuf xs float8_e4m3[128, 2, 600]",
     "moving has 600 elements per partition per half; tensor.matmul allows at most 512"),
    ("ws float8_e4m3[128, 4, 16]\n.sbuf xs float8_e4m3[128, 2, 256]",
     r"stationary is \[128, 4, 16\] \(64 elements per partition\), not \[K, 2, F\]"),
    ("ws float8_e4m3[128, 1, 64]\n.sbuf xs float8_e4m3[128, 2, 256]",
     r"stationary is \[128, 1, 64\]"),
])
@pytest.mark.parametrize("operand", ["ws", "ws[0:128]", "ws[:, :]"])
def test_double_row_shape_errors(decl: str, message: str, operand: str) -> None:
    """Dims the operand leaves unsliced count as written (ws[0:128] is still [128, 4, 16])."""
    if operand == "ws[:, :]" and decl.count(",") > 3:
        operand = "ws[:, :, :]"
    src = (f".sbuf {decl}\n.psum acc float32[64, 512]\n"
           f"tensor.matmul acc, {operand}, xs, perf_mode=double_row\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


def test_double_row_dst_shape_error_shows_the_operand_layout() -> None:
    src = (".sbuf ws float8_e4m3[128, 2, 64]\n.sbuf xs float8_e4m3[128, 2, 256]\n"
           ".psum acc float32[128, 512]\ntensor.matmul acc, ws, xs, perf_mode=double_row\n")
    with pytest.raises(AsmError, match=r"must be \[M, N\] = \[64, 256\] \(\[128, 2, 64\] x "
                                       r"\[128, 2, 256\]\), but dst is \[128, 512\]"):
        neuronemu.assemble(src, "k.s")


# --- transpose mode ------------------------------------------------------------------------

TRANSPOSE = """.hbm d {dt}[{p}, {f}] input
.hbm i {it}[{p}, {n}] input
.sbuf ds {dt}[{p}, {f}]
.sbuf ids {it}[{p}, {n}]
.psum acc {ot}[{f}, {n}]
.sbuf o {ot}[{f}, {n}]
.hbm out {ot}[{f}, {n}] output
dma.copy ds, d
dma.copy ids, i
tensor.matmul acc, ds, ids, is_transpose=true
vector.tensor_copy o, acc
dma.copy out, o
"""


def transpose_mode(data: np.ndarray, moving: np.ndarray, out_dtype: str,
                   target: str = "trn2") -> np.ndarray:
    p, f = data.shape
    src = TRANSPOSE.format(dt=data.dtype.name, it=moving.dtype.name, ot=out_dtype, p=p, f=f,
                           n=moving.shape[1])
    return run(src, target, d=data, i=moving).outputs["out"]


def special_bf16(rng, shape) -> np.ndarray:
    """Random bf16 with NaNs (payloads), infinities, -0.0 and subnormals sprinkled in."""
    words = rng.integers(0, 1 << 16, size=shape, dtype=np.uint32).astype(np.uint16)
    words.flat[:6] = [0x7FC1, 0xFF80, 0x7F80, 0x8000, 0x0001, 0xFFFF]
    return words.view(ml_dtypes.bfloat16)


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_transpose_mode_moves_bits_through_the_identity(target: str) -> None:
    rng = np.random.default_rng(3)
    data = special_bf16(rng, (96, 80))
    out = transpose_mode(data, np.eye(96, dtype=ml_dtypes.bfloat16), "bfloat16", target)
    np.testing.assert_array_equal(bits(out), bits(np.ascontiguousarray(data.T)))


def test_transpose_mode_with_a_permutation_and_empty_columns() -> None:
    """Column n of moving picks row k_n of data (dst[:, n] = data[k_n, :]); an all-zero column
    writes zeros."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((32, 16)).astype(np.float32)
    perm = rng.permutation(32)
    moving = np.zeros((32, 40), np.float32)
    for n in range(32):
        moving[perm[n], n] = 1.0
    out = transpose_mode(data, moving, "float32")
    expected = np.zeros((16, 40), np.float32)
    expected[:, :32] = data[perm].T
    np.testing.assert_array_equal(bits(out), bits(expected))


def test_transpose_mode_fp32_dst_from_bf16_data_holds_the_values() -> None:
    data = (np.arange(64 * 8).reshape(64, 8) / 7).astype(ml_dtypes.bfloat16)
    out = transpose_mode(data, np.eye(64, dtype=ml_dtypes.bfloat16), "float32")
    np.testing.assert_array_equal(out, data.T.astype(np.float32))


def test_trn1_is_transpose_is_an_ordinary_matmul_that_smears_nan() -> None:
    """NeuronCore-v2 has no transpose mode (the flag only labels the matmul): a NaN in data row
    k, column m multiplies the zeros of the identity too, so all of dst row m is NaN."""
    data = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    data[5, 3] = np.nan
    trn1 = transpose_mode(data, np.eye(16, dtype=np.float32), "float32", "trn1")
    trn2 = transpose_mode(data, np.eye(16, dtype=np.float32), "float32", "trn2")
    assert np.isnan(trn1[3]).all()
    np.testing.assert_array_equal(np.delete(trn1, 3, axis=0), np.delete(data.T, 3, axis=0))
    assert np.isnan(trn2[3, 5]) and np.isnan(trn2).sum() == 1


@pytest.mark.parametrize("change, message", [
    (lambda m: m.__setitem__((4, 2), 0.5),
     (r"every column of moving to hold one 1.0 and zeros .*, but element \[4, 2\] of the "
     r"moving tile \(partition 4 of 'ids'\) is 0.5;")),
    (lambda m: m.__setitem__((7, 2), 1.0),
     (r"but element \[7, 2\] of the moving tile \(partition 7 of 'ids'\) is a second "
     r"nonzero in column 2; nothing was written")),
])
def test_transpose_mode_needs_a_one_hot_moving(change, message: str) -> None:
    moving = np.eye(16, dtype=np.float32)
    change(moving)
    with pytest.raises(RuntimeFault, match=message):
        transpose_mode(np.ones((16, 8), np.float32), moving, "float32")


@pytest.mark.parametrize("target, line, message", [
    ("trn1", "tensor.matmul accb, d, i, is_transpose=true",
     "matmul writes float32 into PSUM on trn1; dst is bfloat16"),
    ("trn2", "tensor.matmul acc, d, i, is_transpose=true, accumulate=true",
     "is_transpose=true writes a transposed tile; it cannot accumulate"),
    ("trn2", "tensor.matmul acc, d8, i8, is_transpose=true, perf_mode=double_row",
     "perf_mode=double_row cannot be combined with is_transpose=true"),
    ("trn2", "tensor.matmul acch, d, i, is_transpose=true",
     "matmul writes float32 or bfloat16 into PSUM on trn2 in transpose mode; dst is float16"),
])
def test_transpose_mode_assembly_errors(target: str, line: str, message: str) -> None:
    src = (f".target {target}\n.sbuf d bfloat16[16, 8]\n.sbuf i bfloat16[16, 16]\n"
           ".sbuf d8 float8_e4m3[16, 2, 8]\n.sbuf i8 float8_e4m3[16, 2, 16]\n"
           ".psum acc float32[8, 16]\n.psum accb bfloat16[8, 16]\n.psum acch float16[8, 16]\n"
           f"{line}\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


# --- 0/1 hints -------------------------------------------------------------------------------

ONEZERO = """.hbm w float32[128, 64] input
.hbm x float32[128, 256] input
.sbuf ws float32[128, 64]
.sbuf xs float32[128, 256]
.psum acc float32[64, 256]
.sbuf o float32[64, 256]
.hbm out float32[64, 256] output
dma.copy ws, w
dma.copy xs, x
tensor.matmul acc, ws, xs{hints}
vector.tensor_copy o, acc
dma.copy out, o
"""


def test_onezero_hints_keep_the_values() -> None:
    rng = np.random.default_rng(5)
    w = rng.integers(0, 2, size=(128, 64)).astype(np.float32)
    x = rng.standard_normal((128, 256)).astype(np.float32)
    plain = run(ONEZERO.format(hints=""), w=w, x=x)
    hinted = run(ONEZERO.format(hints=", is_stationary_onezero=true"), w=w, x=x)
    np.testing.assert_array_equal(bits(plain.outputs["out"]), bits(hinted.outputs["out"]))
    np.testing.assert_allclose(hinted.outputs["out"], w.astype(np.float64).T @ x, rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("hint, arg, where", [
    ("is_stationary_onezero", "stationary", r"element \[3, 7\] .* of 'ws'\) is 0.25"),
    ("is_moving_onezero", "moving", r"element \[0, 0\] .* of 'xs'\) is -1.0"),
])
def test_a_broken_onezero_promise_is_a_located_fault(hint: str, arg: str, where: str) -> None:
    w = np.zeros((128, 64), np.float32)
    w[3, 7] = 0.25
    x = -np.ones((128, 256), np.float32)
    with pytest.raises(RuntimeFault) as info:
        run(ONEZERO.format(hints=f", {hint}=true"), w=w, x=x)
    text = str(info.value)
    assert f"{hint}=true promises only 0.0 and 1.0 in {arg}" in text
    assert re.search(where, text) and "kernel.s:" in text


def tensor_ns(src: str, target: str = "trn2", sync: str = "") -> tuple[float, float]:
    """(Tensor engine busy ns, time of the whole run)."""
    result = run(sync + src, target)
    return result.timing.tracks["tensor"].busy_ns, result.timing.time_ns


FP32_MATMUL = """.sbuf w float32[128, 128]
.sbuf x float32[128, 512]
.psum acc float32[128, 512]
vector.memset w, value=1.0
vector.memset x, value=1.0
tensor.matmul acc, w, x{flags}
"""


@pytest.mark.parametrize("target, flags, cycles", [
    ("trn2", "", 4 * 512),
    ("trn2", ", is_stationary_onezero=true", 2 * 512),
    ("trn2", ", is_moving_onezero=true", 2 * 512),
    ("trn2", ", is_transpose=true", 2 * 512),
    ("trn1", ", is_transpose=true", 4 * 512),  # v2: no transpose mode, no speed-up
    ("trn1", ", is_moving_onezero=true", 2 * 512),
])
def test_fp32_matmul_cost_with_hints_and_transpose_mode(target: str, flags: str,
                                                        cycles: int) -> None:
    src = FP32_MATMUL.format(flags=flags)
    if "is_transpose" in flags:  # moving: a 128 x 128 identity (p - j == 0)
        src = src.replace("float32[128, 512]", "float32[128, 128]").replace(
            "vector.memset x, value=1.0", "gpsimd.iota x, base=0, channel_multiplier=1, step=-1\n"
            "vector.tensor_scalar x, x, op0=equal, operand0=0.0")
        cycles = cycles // 4  # N = 128 columns instead of 512
    busy, _ = tensor_ns(src, target)
    # + the exposed LoadStationary of 128 stationary columns / 4 (the array idled before)
    assert busy == pytest.approx((cycles + 32) / CLOCK_GHZ[target])


# --- PE tiling -------------------------------------------------------------------------------

TILED = """.sbuf w bfloat16[128, 128]
.sbuf x bfloat16[128, 512]
.psum a0 float32[64, 512]
.psum a1 float32[64, 512]
.psum a2 float32[64, 512]
.psum a3 float32[64, 512]
vector.memset w, value=1.0
vector.memset x, value=1.0
{body}"""

ROWS_64 = [
    "tensor.matmul a0, w[0:64, 0:64], x[0:64, :], tile_position=[0, 0], tile_size=[64, 128]",
    "tensor.matmul a1, w[64:128, 0:64], x[64:128, :], tile_position=[64, 0], tile_size=[64, 128]",
]


@pytest.mark.parametrize("sync", ["", ".sync explicit\n"])
def test_matmuls_on_disjoint_row_tiles_overlap(sync: str) -> None:
    # each matmul's stationary is 64 columns: an exposed LoadStationary of 16 cycles when the
    # array idled before it, hidden behind the previous matmul back to back
    ls = 16 / CLOCK_GHZ["trn2"]
    one = 512 / CLOCK_GHZ["trn2"] + ls
    barrier = ["sync.barrier"] if sync else []  # explicit mode: order the memsets first
    tiled, _ = tensor_ns(TILED.format(body="\n".join(barrier + ROWS_64)), sync=sync)
    untiled = [line.split(", tile_position")[0] for line in ROWS_64]
    serial, _ = tensor_ns(TILED.format(body="\n".join(barrier + untiled)), sync=sync)
    assert tiled == pytest.approx(one)
    assert serial == pytest.approx(2 * one - ls)


def test_four_32_row_tiles_and_a_2x2_grid_overlap_on_trn2() -> None:
    # + the exposed LoadStationary: 32 stationary columns / 4 = 8 cycles, 64 / 4 = 16 on the grid
    one = (512 + 8) / CLOCK_GHZ["trn2"]
    rows = "\n".join(
        f"tensor.matmul a{q}[0:32, :], w[{32 * q}:{32 * q + 32}, 0:32], x[{32 * q}:{32 * q + 32}, :],"
        f" tile_position=[{32 * q}, 0], tile_size=[32, 32]" for q in range(4))
    busy, _ = tensor_ns(TILED.format(body=rows))
    assert busy == pytest.approx(one)
    grid = "\n".join(
        f"tensor.matmul a{2 * r + c}, w[{64 * r}:{64 * r + 64}, 0:64], x[{64 * r}:{64 * r + 64}, :],"
        f" tile_position=[{64 * r}, {64 * c}], tile_size=[64, 64]" for r in range(2) for c in range(2))
    busy, _ = tensor_ns(TILED.format(body=grid))
    assert busy == pytest.approx((512 + 16) / CLOCK_GHZ["trn2"])


def test_tiles_that_share_pe_blocks_run_one_after_the_other() -> None:
    # the first pays its exposed LoadStationary (64 columns / 4 = 16 cycles), the second loads
    # behind it
    one = 512 / CLOCK_GHZ["trn2"]
    ls = 16 / CLOCK_GHZ["trn2"]
    same = "\n".join([ROWS_64[0], ROWS_64[0].replace("a0", "a1")])
    busy, _ = tensor_ns(TILED.format(body=same))
    assert busy == pytest.approx(2 * one + ls)
    # an untiled matmul needs the whole array: it waits for both tiles
    body = "\n".join(ROWS_64 + ["tensor.matmul a2, w[:, 0:64], x"])
    busy, _ = tensor_ns(TILED.format(body=body))
    assert busy == pytest.approx(2 * one + ls)


def test_tiling_does_not_change_values() -> None:
    rng = np.random.default_rng(6)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    src = (hbm("w", w) + hbm("x", x) + """.sbuf ws float32[64, 64]
.sbuf xs float32[64, 100]
.psum acc float32[64, 100]
.sbuf o float32[64, 100]
.hbm out float32[64, 100] output
dma.copy ws, w
dma.copy xs, x
tensor.matmul acc, ws, xs{tile}
vector.tensor_copy o, acc
dma.copy out, o
""")
    plain = run(src.format(tile=""), w=w, x=x).outputs["out"]
    tiled = run(src.format(tile=", tile_position=[64, 64], tile_size=[64, 64]"), w=w,
                x=x).outputs["out"]
    np.testing.assert_array_equal(bits(plain), bits(tiled))
    np.testing.assert_allclose(tiled, w.astype(np.float64).T @ x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target, options, message", [
    ("trn2", "tile_position=[0, 0]", "tile_position needs tile_size too"),
    ("trn2", "tile_size=[64, 128]", "tile_size needs tile_position too"),
    ("trn1", "tile_position=[0, 0], tile_size=[32, 128]",
     "tile_size row_size = 32; trn1 allows 128, 64"),
    ("trn2", "tile_position=[0, 0], tile_size=[48, 128]",
     "tile_size row_size = 48; trn2 allows 128, 64, 32"),
    ("trn2", "tile_position=[32, 0], tile_size=[64, 128]",
     "tile_position start_row = 32 must be a multiple of 64 .*: 0, 64"),
    ("trn2", "tile_position=[0, 96], tile_size=[32, 64]",
     "tile_position start_column = 96 must be a multiple of 64"),
    ("trn2", "tile_position=[0, 0], tile_size=[32, 128]",
     "stationary spans 64 partitions but the PE tile has 32 rows"),
    ("trn2", "tile_position=[0, 0], tile_size=[64, 32]",
     "stationary has 64 columns but the PE tile has 32"),
])
def test_tiling_errors(target: str, options: str, message: str) -> None:
    src = (f".target {target}\n.sbuf w bfloat16[64, 64]\n.sbuf x bfloat16[64, 512]\n"
           f".psum acc float32[64, 512]\ntensor.matmul acc, w, x, {options}\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


def test_double_row_cannot_use_column_tiling() -> None:
    src = (".sbuf w float8_e4m3[64, 2, 64]\n.sbuf x float8_e4m3[64, 2, 512]\n"
           ".psum acc float32[64, 512]\ntensor.matmul acc, w, x, perf_mode=double_row, "
           "tile_position=[0, 0], tile_size=[64, {cols}]\n")
    neuronemu.assemble(src.format(cols=128), "k.s")
    with pytest.raises(AsmError, match="double_row cannot be combined with column tiling"):
        neuronemu.assemble(src.format(cols=64), "k.s")


def test_tiled_flops_and_double_row_flops_count_the_real_work() -> None:
    body = "\n".join(ROWS_64)
    result = run(TILED.format(body=body))
    assert result.timing.tensor_flops == 2 * (2 * 64 * 64 * 512)
    src = (".sbuf w float8_e4m3[128, 2, 128]\n.sbuf x float8_e4m3[128, 2, 512]\n"
           ".psum acc float32[128, 512]\nvector.memset w, value=1.0\nvector.memset x, value=1.0\n"
           "tensor.matmul acc, w, x, perf_mode=double_row\n")
    timing = run(src).timing
    assert timing.tensor_flops == 2 * 256 * 128 * 512
    # K = 256 in the time of a K = 128 matmul: 2x throughput; its LoadStationary too (T2):
    # 128 columns / 4 = 32 exposed cycles
    assert timing.tracks["tensor"].busy_ns == pytest.approx((512 + 32) / CLOCK_GHZ["trn2"])


# --- matmul_mx: bf16 dst, PSUM-wide moving, row tiling -----------------------------------------

MX = """.sbuf w float8_e4m3fn_x4[{p}, {m}]
.sbuf x float8_e4m3fn_x4[{p}, {n}]
.sbuf ws float8_e8m0fnu[{p}, {m}]
.sbuf xs float8_e8m0fnu[{p}, {n}]
.psum acc {dt}[{m}, {n}]
vector.memset ws, value=1.0
vector.memset xs, value=1.0
{body}"""


def test_matmul_mx_bf16_dst_rounds_the_fp32_sum_once() -> None:
    """All values 1.0 x scale 1.0 over 4 x 32 = 128 indices, plus 0.5 from x's first byte
    set to 1.5: the exact fp32 sum 128.5 rounds to bf16 128.0 (ties to even)."""
    src = (".target trn3\n.sbuf wf bfloat16[32, 8]\n.sbuf xf bfloat16[32, 32]\n"
           + MX.format(p=32, m=2, n=8, dt="bfloat16", body="")
           + """.sbuf o bfloat16[2, 8]
.hbm out bfloat16[2, 8] output
vector.memset wf, value=1.0
vector.memset xf, value=1.0
vector.memset xf[0:1, 0:1], value=1.5
vector.quantize_mx w, wf, dst_scale=ws
vector.quantize_mx x, xf, dst_scale=xs
tensor.matmul_mx acc, w, x, stationary_scale=ws, moving_scale=xs
vector.tensor_copy o, acc
dma.copy out, o
""")
    out = neuronemu.run(neuronemu.assemble(src, "k.s")).outputs["out"]
    expected = np.full((2, 8), 128.0, np.float32)
    expected[:, 0] = 128.5
    np.testing.assert_array_equal(bits(out), bits(expected.astype(ml_dtypes.bfloat16)))
    assert out[0, 0] == 128.0


@pytest.mark.parametrize("dt, n, ok", [("float32", 4096, True), ("float32", 4097, False),
                                       ("bfloat16", 8192, True), ("bfloat16", 8193, False)])
def test_matmul_mx_moving_may_fill_psum(dt: str, n: int, ok: bool) -> None:
    src = ".target trn3\n" + MX.format(
        p=32, m=2, n=n, dt=dt, body="tensor.matmul_mx acc, w, x, stationary_scale=ws, "
                                    "moving_scale=xs\n")
    fits = 16384 // (4 if dt == "float32" else 2)  # PSUM bytes per partition
    src = src.replace(f".psum acc {dt}[2, {n}]", f".psum acc {dt}[2, {min(n, fits)}]")
    if ok:
        neuronemu.assemble(src, "k.s")
    else:
        with pytest.raises(AsmError, match=f"moving has {n} elements per partition"):
            neuronemu.assemble(src, "k.s")


@pytest.mark.parametrize("options, message", [
    ("", "stationary must have an even number of elements per partition, not 3"),
    (", tile_position=[0, 0], tile_size=[32, 64]", "tiles rows only: column_size must be 128"),
    (", tile_position=[0, 32], tile_size=[32, 128]", "tiles rows only: start_column must be 0"),
])
def test_matmul_mx_errors(options: str, message: str) -> None:
    m = 3 if not options else 2
    src = ".target trn3\n" + MX.format(
        p=32, m=m, n=8, dt="float32",
        body=f"tensor.matmul_mx acc, w, x, stationary_scale=ws, moving_scale=xs{options}\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


def test_matmul_mx_row_tiles_overlap() -> None:
    body = "\n".join(
        f"tensor.matmul_mx acc{q}, w[{32 * q}:{32 * q + 32}, :], x[{32 * q}:{32 * q + 32}, :], "
        f"stationary_scale=ws[{32 * q}:{32 * q + 32}, :], moving_scale=xs[{32 * q}:{32 * q + 32}, :]"
        f"{{tile{q}}}" for q in range(2))
    src = ".target trn3\n" + MX.format(p=64, m=4, n=512, dt="float32", body=body).replace(
        ".psum acc float32[4, 512]", ".psum acc0 float32[4, 512]\n.psum acc1 float32[4, 512]")
    tiled = body.format(tile0=", tile_position=[0, 0], tile_size=[32, 128]",
                        tile1=", tile_position=[32, 0], tile_size=[32, 128]")
    serial = body.format(tile0="", tile1="")
    one = 512 / CLOCK_GHZ["trn3"]
    ls = 4 * 0.25 / CLOCK_GHZ["trn3"]  # exposed LoadStationary of the 4 stationary columns
    busy = [neuronemu.run(neuronemu.assemble(src.replace(body, b), "k.s")).timing
            .tracks["tensor"].busy_ns for b in (tiled, serial)]
    assert busy == pytest.approx([one + ls, 2 * one + ls])


def test_trn1_is_transpose_may_accumulate_like_any_matmul() -> None:
    src = (".target trn1\n.sbuf d bfloat16[16, 8]\n.sbuf i bfloat16[16, 16]\n"
           ".psum acc float32[8, 16]\ntensor.matmul acc, d, i, is_transpose=true, accumulate=true\n")
    neuronemu.assemble(src, "k.s")


@pytest.mark.parametrize("dst, n, ok", [("float8_e4m3", 8192, True), ("float8_e4m3", 8193, False),
                                        ("bfloat16", 8192, True)])
def test_trn3_transpose_mode_dst_counts_fp8_as_16_bits(dst: str, n: int, ok: bool) -> None:
    src = (f".target trn3\n.sbuf d {dst}[2, 8]\n.sbuf i {dst}[2, {n}]\n"
           f".psum acc {dst}[8, 8]\ntensor.matmul acc, d, i, is_transpose=true\n")
    if ok:
        with pytest.raises(AsmError, match=r"dst is \[8, 8\]"):  # only the shape is wrong
            neuronemu.assemble(src, "k.s")
    else:
        with pytest.raises(AsmError, match=f"moving has {n} elements per partition; "
                                           "tensor.matmul allows at most 8192"):
            neuronemu.assemble(src, "k.s")


def test_fault_names_the_element_of_a_sliced_3d_operand() -> None:
    """The hint is checked in the tile as written: element [3, 1, 5] of ws[:, 0:2, :] is
    partition 3 of ws; a slice starting at partition 64 reports partition 67."""
    w = np.zeros((128, 4, 8), np.float32)
    w[67, 1, 5] = 0.5
    src = (hbm("w", w) + """.sbuf ws float32[128, 4, 8]
.sbuf xs float32[64, 16]
.psum acc float32[16, 16]
dma.copy ws, w
vector.memset xs, value=1.0
tensor.matmul acc, ws[64:128, 0:2, :], xs, is_stationary_onezero=true
""")
    with pytest.raises(RuntimeFault, match=r"element \[3, 1, 5\] of the stationary tile "
                                           r"\(partition 67 of 'ws'\) is 0.5"):
        run(src, w=w)


@pytest.mark.parametrize("operand, element, partition", [
    ("ws[64:128]", "3, 1, 5", 67),
    ("ws[64:128, 0:2]", "3, 1, 5", 67),
])
def test_fault_coordinates_follow_the_dims_as_written(operand: str, element: str,
                                                      partition: int) -> None:
    w = np.zeros((128, 2, 8), np.float32)
    w[67, 1, 5] = 0.5
    src = (hbm("w", w) + f""".sbuf ws float32[128, 2, 8]
.sbuf xs float32[64, 16]
.psum acc float32[16, 16]
dma.copy ws, w
vector.memset xs, value=1.0
tensor.matmul acc, {operand}, xs, is_stationary_onezero=true
""")
    with pytest.raises(RuntimeFault, match=rf"element \[{element}\] of the stationary tile "
                                           rf"\(partition {partition} of 'ws'\) is 0.5"):
        run(src, w=w)


def test_transpose_mode_still_checks_onezero_hints() -> None:
    data = np.ones((16, 8), np.float32)
    data[2, 3] = 0.5
    src = TRANSPOSE.format(dt="float32", it="float32", ot="float32", p=16, f=8, n=16).replace(
        "is_transpose=true", "is_transpose=true, is_stationary_onezero=true")
    with pytest.raises(RuntimeFault, match=r"is_stationary_onezero=true promises .* is 0.5"):
        run(src, d=data, i=np.eye(16, dtype=np.float32))


@pytest.mark.parametrize("sync", ["", ".sync explicit\n"])
def test_tiles_accumulating_into_one_psum_tile_do_not_overlap(sync: str) -> None:
    """Disjoint PE tiles, but both write a0: the second waits for the first (WAW), in auto mode
    through the block table and in explicit mode through the engine's own ordering."""
    one = 512 / CLOCK_GHZ["trn2"]
    body = "\n".join(["sync.barrier", ROWS_64[0],
                      ROWS_64[1].replace("tensor.matmul a1,", "tensor.matmul a0,")
                      + ", accumulate=true"])
    busy, _ = tensor_ns(TILED.format(body=body), sync=sync)
    # each pays its LoadStationary (64 columns / 4 = 16 cycles): the second's PE tile idled
    assert busy == pytest.approx(2 * one + 2 * 16 / CLOCK_GHZ["trn2"])


def test_explicit_wait_on_the_tensor_track_does_not_drain_the_pe_array() -> None:
    one = 512 / CLOCK_GHZ["trn2"]
    body = "\n".join(["sync.barrier", ROWS_64[0], "sync.wait tensor, sem=0, value=0",
                      ROWS_64[1]])
    busy, _ = tensor_ns(TILED.format(body=body), sync=".sync explicit\n")
    assert busy == pytest.approx(one + 16 / CLOCK_GHZ["trn2"])  # + exposed LoadStationary


def test_trace_puts_each_pe_tile_on_its_own_thread() -> None:
    from neuronemu.timing.trace import chrome_trace

    result = run(TILED.format(body="\n".join(ROWS_64)))
    trace = chrome_trace(result.program, result.timing)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    matmuls = [e for e in trace if e["name"] == "tensor.matmul"]
    assert sorted(names[e["tid"]] for e in matmuls) == [
        "tensor PE rows 0-63, cols 0-127", "tensor PE rows 64-127, cols 0-127"]
    assert matmuls[0]["ts"] == matmuls[1]["ts"]  # they overlap, on separate threads
    order = {e["tid"]: e["args"]["sort_index"] for e in trace if e["name"] == "thread_sort_index"}
    tile_tids = {e["tid"] for e in matmuls}
    vector_tid = next(t for t, n in names.items() if n == "vector")
    assert max(order[t] for t in tile_tids) < order[vector_tid]  # tiles sit with the tensor track
