# Dequantizing fp8 matmul c = (a @ b) * scale[col] in TensorE's fp8 double-row mode, a [M = 512,
# K = 2048] and b [K, N = 512] float8_e4m3, per-column fp32 scales, fp32 accumulation and output
# (trn2 and trn3: NeuronCore-v2 has no double-row mode).
#
# Modelled on the fp8 GEMM with per-channel dequantization scales of the NKI low-precision
# matmul samples (nc_matmul with perf_mode=double_row); written here from the ISA semantics.
#
# Layout and engines:
#   - Double-row mode contracts 2 x 128 rows per matmul: stationary [128, 2, M] and moving
#     [128, 2, N], plane j of partition p holding one K row each. We put K rows 2p and 2p + 1 of
#     each 256-row K tile on partition p, so the operands are declared in their [K/2, 2, cols]
#     view (the same bytes as [K, cols], row-major): one DMA brings a whole K tile with a dense
#     1 KiB row per partition. a is given transposed (aT [K, M], the stationary layout, as the
#     matmul examples take lhsT).
#   - Per 128-row output tile, 8 double-row matmuls (K = 8 x 256) accumulate in fp32 PSUM; two
#     PSUM banks alternate so TensorE runs on while VectorE evacuates the other.
#   - scale [1, N] reaches all 128 partitions with one broadcast DMA; VectorE multiplies the
#     PSUM tile by it on the way out (one PSUM and one SBUF operand: one element per cycle).
.const M = 512
.const K = 2048
.const N = 512
.const KT = K / 256                      # double-row matmuls per output tile
.const MT = M / 128                      # output row tiles

.hbm aT float8_e4m3[K / 2, 2, M] input init=normal(0, 1)   # a^T: row 2i + j of [K, M] at [i, j, :]
.hbm b float8_e4m3[K / 2, 2, N] input init=normal(0, 1)    # b: row 2i + j of [K, N] at [i, j, :]
.hbm scale float32[1, N] input init=uniform(0.001, 0.01)   # per-column dequantization scale
.hbm c float32[M, N] output

.sbuf a_sb float8_e4m3[128, KT, 2, M]    # (p, kt, j, m) = a[m, 256 kt + 2p + j]
.sbuf b_sb float8_e4m3[128, KT, 2, N]    # (p, kt, j, n) = b[256 kt + 2p + j, n]
.sbuf s_sb float32[128, N]               # scale on every partition
.sbuf c_sb float32[128, 2, N]
.psum acc float32[128, 2, N]             # two banks, alternating

    dma.copy s_sb, scale, queue=4        # broadcast: one row to 128 partitions
    ctrl.mov r0, 0
load:                                    # K tile by K tile, a and b on two queues each
    dma.copy a_sb[:, r0, :, :], aT[r0*128 : r0*128 + 128, :, :], queue=0
    dma.copy b_sb[:, r0, :, :], b[r0*128 : r0*128 + 128, :, :], queue=1
    dma.copy a_sb[:, r0 + 1, :, :], aT[r0*128 + 128 : r0*128 + 256, :, :], queue=2
    dma.copy b_sb[:, r0 + 1, :, :], b[r0*128 + 128 : r0*128 + 256, :, :], queue=3
    ctrl.add r0, r0, 2
    ctrl.blt r0, KT, load

    ctrl.mov r0, 0                       # output row tile
row_tile:
    ctrl.mov r1, 0                       # PSUM buffer: two row tiles per iteration
half:
    tensor.matmul acc[:, r1, :], a_sb[:, 0, :, r0*128 : r0*128 + 128], b_sb[:, 0, :, :], accumulate=false, perf_mode=double_row
    ctrl.mov r2, 1
k_tile:
    tensor.matmul acc[:, r1, :], a_sb[:, r2, :, r0*128 : r0*128 + 128], b_sb[:, r2, :, :], accumulate=true, perf_mode=double_row
    ctrl.add r2, r2, 1
    ctrl.blt r2, KT, k_tile
    vector.tensor_tensor c_sb[:, r1, :], acc[:, r1, :], s_sb, op=multiply
    dma.copy c[r0*128 : r0*128 + 128, :], c_sb[:, r1, :], queue=5
    ctrl.add r0, r0, 1
    ctrl.add r1, r1, 1
    ctrl.blt r1, 2, half
    ctrl.blt r0, MT, row_tile
