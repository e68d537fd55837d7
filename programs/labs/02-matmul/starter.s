# Lab 2 starter: result[M, N] = lhsT[K, M]^T @ rhs[K, N], bf16 operands, fp32 result.
# It runs, and it is wrong: the grader shows you which element and which line wrote it.
# Read docs/labs/02-matmul.md. The grader rewrites M, K and N (keep the .const lines).
.const M = 256
.const K = 256
.const N = 512
.const KT = K / 128
.const MT = M / 128
.const NT = N / 512

.hbm lhsT bfloat16[K, M] input
.hbm rhs bfloat16[K, N] input
.hbm result float32[M, N] output

.sbuf lhsT_sb bfloat16[128, KT, M]     # [k within tile, k tile, m]
.sbuf rhs_sb bfloat16[128, KT, N]      # [k within tile, k tile, n]
.sbuf out_sb float32[128, 512]
.psum acc float32[128, 512]

    ctrl.mov r1, 0
load:
    dma.copy lhsT_sb[:, r1, :], lhsT[r1*128 : r1*128 + 128, :], queue=0
    dma.copy rhs_sb[:, r1, :], rhs[r1*128 : r1*128 + 128, :], queue=1
    ctrl.add r1, r1, 1
    ctrl.blt r1, KT, load

    ctrl.mov r0, 0                     # m tile
m_tile:
    ctrl.mov r2, 0                     # n tile
n_tile:
    ctrl.mov r1, 0                     # k tile
k_tile:
    tensor.matmul acc, lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, r2*512 : r2*512 + 512], accumulate=false
    ctrl.add r1, r1, 1
    ctrl.blt r1, KT, k_tile
    vector.tensor_copy out_sb, acc
    dma.copy result[r0*128 : r0*128 + 128, r2*512 : r2*512 + 512], out_sb, queue=2
    ctrl.add r2, r2, 1
    ctrl.blt r2, NT, n_tile
    ctrl.add r0, r0, 1
    ctrl.blt r0, MT, m_tile
