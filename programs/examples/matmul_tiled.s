# Tiled matmul: result[512, 512] = lhsT[512, 512]^T @ rhs[512, 512] in bf16, with K = 512
# contracted as 4 accumulating matmuls of K = 128 into one PSUM bank per 128-row output tile.
# Registers drive the loops: r0 = output row tile (M), r1 = contraction tile (K).
.const K_TILES = 4
.const M_TILES = 4

.hbm lhsT bfloat16[512, 512] input       # A transposed: [K, M]
.hbm rhs bfloat16[512, 512] input        # B: [K, N]
.hbm result float32[512, 512] output

.sbuf lhsT_sb bfloat16[128, 4, 512]      # [K within tile, K tile, M]
.sbuf rhs_sb bfloat16[128, 4, 512]       # [K within tile, K tile, N]
.sbuf out_sb float32[128, 512]
.psum acc float32[128, 512]

    ctrl.mov r1, 0
load:                                     # bring both operands on chip, one K tile at a time
    dma.copy lhsT_sb[:, r1, :], lhsT[r1*128 : r1*128 + 128, :], queue=0
    dma.copy rhs_sb[:, r1, :], rhs[r1*128 : r1*128 + 128, :], queue=1
    ctrl.add r1, r1, 1
    ctrl.blt r1, K_TILES, load

    ctrl.mov r0, 0
m_tile:
    # first K tile overwrites the bank, the others accumulate onto it
    tensor.matmul acc, lhsT_sb[:, 0, r0*128 : r0*128 + 128], rhs_sb[:, 0, :], accumulate=false
    ctrl.mov r1, 1
k_tile:
    tensor.matmul acc, lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, :], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.blt r1, K_TILES, k_tile
    vector.tensor_copy out_sb, acc
    dma.copy result[r0*128 : r0*128 + 128, :], out_sb, queue=2
    ctrl.add r0, r0, 1
    ctrl.blt r0, M_TILES, m_tile
