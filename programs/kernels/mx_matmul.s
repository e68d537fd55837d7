# MXFP8 matmul c = mx(x) @ mx(w) on trn3, x [T = 256, K = 1024] and w [K, N = 512] bf16
# quantized on chip to MXFP8 (float8_e4m3fn values, one E8M0 scale per block of 32 K indices),
# fp32 accumulation and output.
#
# Modelled on the NKI MX (microscaling) matmul tutorial (quantize_mx + nc_matmul_mx on
# NeuronCore-v4); written here from the ISA semantics, not from the tutorial's code.
#
# Layout and engines:
#   - matmul_mx contracts 4 x 128 = 512 logical rows per instruction: value i of the x4 element
#     on partition p is contraction index p + 128 i. We map K index kt*512 + 128 i + p there, so
#     each operand is gathered into a bf16 [128, columns, 4] tile whose element (p, j, i) holds
#     that K index. Both operands use the same map (they must agree); a scale block (8
#     partitions x 4 values) is then K indices {kt*512 + 128 i + 8g + r : i < 4, r < 8}, a set of
#     32 of the same size as OCP's 32 consecutive ones (any partition of K into blocks is a valid
#     microscaling; this one needs no strided HBM access).
#   - w already has K on partitions: each 128-row slab comes in by a dense DMA and GpSimd and
#     ScalarE (half the columns each) interleave it into value slot i. x is token-major: TensorE transposes 128 x 128 blocks and
#     ScalarE / VectorE (alternating) write them from PSUM straight into slot i.
#   - VectorE quantizes each [128, 4 x columns] tile (quantize_mx: 4 consecutive values per x4
#     element, one scale per 8 partitions x 4 values).
#   - TensorE runs, per 128-token tile, 2 accumulating MX matmuls (K = 2 x 512) into one fp32
#     PSUM bank; ScalarE evacuates PSUM and DMA stores each token tile.
.target trn3
.const T = 256
.const K = 1024
.const N = 512
.const KT = K / 512                      # MX matmuls per output tile (512 contraction rows each)
.const TT = T / 128                      # token tiles (stationary columns <= 128)

.hbm x bfloat16[T, K] input init=normal(0, 1)
.hbm w bfloat16[K, N] input init=normal(0, 0.03125)      # ~ 1/sqrt(K)
.hbm c float32[T, N] output

.sbuf x_sb bfloat16[128, TT, K]          # token-major tiles of x
.sbuf w_raw bfloat16[128, KT, 4, N]      # (p, kt, i, n) = w[kt*512 + 128 i + p, n], as loaded
.sbuf xs bfloat16[128, KT, T, 4]         # (p, kt, t, i) = x[t, kt*512 + 128 i + p]
.sbuf ws bfloat16[128, KT, N, 4]         # (p, kt, n, i) = w[kt*512 + 128 i + p, n]
.sbuf xq float8_e4m3fn_x4[128, KT, T]    # MXFP8 stationary, per K tile
.sbuf xscale float8_e8m0fnu[128, KT, T]  # its scales (rows 32q + g, g < 4, used)
.sbuf wq float8_e4m3fn_x4[128, KT, N]    # MXFP8 moving, per K tile
.sbuf wscale float8_e8m0fnu[128, KT, N]
.sbuf c_sb float32[128, TT, N]
.psum acc float32[128, TT, N]            # one bank per token tile
.psum tp bfloat16[128, TT, 128]          # transposed x blocks

    dma.copy x_sb[:, 0, :], x[0 : 128, :], queue=0
    dma.copy x_sb[:, 1, :], x[128 : 256, :], queue=1
    ctrl.mov r0, 0
load_w:                                  # the four 128-row slabs of each K tile on four queues
    dma.copy w_raw[:, r0, 0, :], w[r0*512 : r0*512 + 128, :], queue=2
    dma.copy w_raw[:, r0, 1, :], w[r0*512 + 128 : r0*512 + 256, :], queue=3
    dma.copy w_raw[:, r0, 2, :], w[r0*512 + 256 : r0*512 + 384, :], queue=4
    dma.copy w_raw[:, r0, 3, :], w[r0*512 + 384 : r0*512 + 512, :], queue=5
    ctrl.add r0, r0, 1
    ctrl.blt r0, KT, load_w

    ctrl.mov r0, 0                       # K tile
gather:
    ctrl.mov r1, 0                       # value slot i: K rows kt*512 + 128 i .. + 128
gather_i:
    gpsimd.tensor_copy ws[:, r0, 0 : N/2, r1], w_raw[:, r0, r1, 0 : N/2]
    scalar.activation ws[:, r0, N/2 : N, r1], w_raw[:, r0, r1, N/2 : N], func=copy
    tensor.transpose tp[:, 0, :], x_sb[:, 0, r0*512 + r1*128 : r0*512 + r1*128 + 128]
    scalar.activation xs[:, r0, 0 : 128, r1], tp[:, 0, :], func=copy
    tensor.transpose tp[:, 1, :], x_sb[:, 1, r0*512 + r1*128 : r0*512 + r1*128 + 128]
    vector.tensor_copy xs[:, r0, 128 : 256, r1], tp[:, 1, :]
    ctrl.add r1, r1, 1
    ctrl.blt r1, 4, gather_i
    vector.quantize_mx xq[:, r0, :], xs[:, r0, :, :], dst_scale=xscale[:, r0, :]
    vector.quantize_mx wq[:, r0, :], ws[:, r0, :, :], dst_scale=wscale[:, r0, :]
    ctrl.add r0, r0, 1
    ctrl.blt r0, KT, gather

    ctrl.mov r0, 0                       # token tile
tile:
    tensor.matmul_mx acc[:, r0, :], xq[:, 0, r0*128 : r0*128 + 128], wq[:, 0, :], stationary_scale=xscale[:, 0, r0*128 : r0*128 + 128], moving_scale=wscale[:, 0, :], accumulate=false
    ctrl.mov r1, 1
tile_k:
    tensor.matmul_mx acc[:, r0, :], xq[:, r1, r0*128 : r0*128 + 128], wq[:, r1, :], stationary_scale=xscale[:, r1, r0*128 : r0*128 + 128], moving_scale=wscale[:, r1, :], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.blt r1, KT, tile_k
    scalar.activation c_sb[:, r0, :], acc[:, r0, :], func=copy
    dma.copy c[r0*128 : r0*128 + 128, :], c_sb[:, r0, :], queue=6
    ctrl.add r0, r0, 1
    ctrl.blt r0, TT, tile
