# Row-parallel (tensor-parallel) linear layer y = x @ W over 16 ranks, x [T = 256, K = 4096] and
# W [K, N = 512] bf16 sharded along K (each rank holds x[:, 256 r : 256 r + 256] as x and the
# matching 256 rows of W as w), y [T, N] fp32 summed with an all-reduce and replicated.
#
# Modelled on the row-parallel linear layer of Megatron-style tensor parallelism as the NKI
# collectives docs and samples use it (partial matmuls, then nki.collectives.all_reduce); written
# here from the math. `neuronemu run collectives/tp_linear` runs the 16 ranks of a trn2.48xlarge
# (the .topology below; any other system with --topology: K grows with the ranks).
#
# Layout and engines (per rank):
#   - The x shard is token-major [T, KR]; TensorE transposes it in 128 x 128 blocks so the
#     contraction dim k lies on partitions; VectorE copies the blocks out of PSUM.
#   - Per 128-token tile, 2 matmuls (stationary xT[k-tile, t-tile], moving w[k-tile, :])
#     accumulate the rank's partial y in one fp32 PSUM bank; ScalarE evacuates it to SBUF.
#   - cc.all_reduce (op=add, fp32) sums each token tile's partials over the ranks straight into
#     y in HBM, on its own DMA queue per tile, so the first tile's all-reduce overlaps the second
#     tile's matmuls.
.topology trn2.48xlarge
.const T = 256
.const KR = 256                          # K rows per rank (K = 16 x 256 on trn2.48xlarge)
.const N = 512
.const TT = T / 128
.const KT = KR / 128

.hbm x bfloat16[T, KR] input init=normal(0, 1)           # this rank's K-shard of x
.hbm w bfloat16[KR, N] input init=normal(0, 0.015625)    # this rank's K rows of W (~ 1/sqrt(K))
.hbm y float32[T, N] output                              # the full x @ W, on every rank

.sbuf x_sb bfloat16[128, TT, KR]         # [token within tile, token tile, k]
.sbuf xT_sb bfloat16[128, KT, T]         # [k within tile, k tile, token]
.sbuf w_sb bfloat16[128, KT, N]          # [k within tile, k tile, n]
.sbuf part float32[128, TT, N]           # this rank's partial y, per token tile
.psum tp float32[128, 2, 128]            # transposed x blocks (two, alternating), fp32 (trn1 PSUM)
.psum acc float32[128, TT, N]            # one bank per token tile

    ctrl.mov r0, 0
load:
    dma.copy x_sb[:, r0, :], x[r0*128 : r0*128 + 128, :], queue=0
    dma.copy w_sb[:, r0, :], w[r0*128 : r0*128 + 128, :], queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, KT, load

# xT[k, t] = x[t, k], one 128 x 128 block at a time through the PE array
    ctrl.mov r0, 0                       # token tile
transpose_t:
    tensor.transpose tp[:, 0, :], x_sb[:, r0, 0 : 128]
    vector.tensor_copy xT_sb[:, 0, r0*128 : r0*128 + 128], tp[:, 0, :]
    tensor.transpose tp[:, 1, :], x_sb[:, r0, 128 : 256]
    vector.tensor_copy xT_sb[:, 1, r0*128 : r0*128 + 128], tp[:, 1, :]
    ctrl.add r0, r0, 1
    ctrl.blt r0, TT, transpose_t

# partial y per token tile, then its all-reduce over the ranks
    tensor.matmul acc[:, 0, :], xT_sb[:, 0, 0 : 128], w_sb[:, 0, :], accumulate=false
    tensor.matmul acc[:, 0, :], xT_sb[:, 1, 0 : 128], w_sb[:, 1, :], accumulate=true
    scalar.activation part[:, 0, :], acc[:, 0, :], func=copy
    cc.all_reduce y[0 : 128, :], part[:, 0, :], op=add, queue=14
    tensor.matmul acc[:, 1, :], xT_sb[:, 0, 128 : 256], w_sb[:, 0, :], accumulate=false
    tensor.matmul acc[:, 1, :], xT_sb[:, 1, 128 : 256], w_sb[:, 1, :], accumulate=true
    scalar.activation part[:, 1, :], acc[:, 1, :], func=copy
    cc.all_reduce y[128 : 256, :], part[:, 1, :], op=add, queue=15
