# TEST KERNEL (lab 2): the starter with its accumulation fixed as the handout's step 2 says;
# correct, single-buffered: docs/labs/02-matmul.md says what it scores.
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
    tensor.matmul acc, lhsT_sb[:, 0, r0*128 : r0*128 + 128], rhs_sb[:, 0, r2*512 : r2*512 + 512], accumulate=false
    ctrl.mov r1, 1                     # k tile
k_tile:
    ctrl.bge r1, KT, done_k
    tensor.matmul acc, lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, r2*512 : r2*512 + 512], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.jmp k_tile
done_k:
    vector.tensor_copy out_sb, acc
    dma.copy result[r0*128 : r0*128 + 128, r2*512 : r2*512 + 512], out_sb, queue=2
    ctrl.add r2, r2, 1
    ctrl.blt r2, NT, n_tile
    ctrl.add r0, r0, 1
    ctrl.blt r0, MT, m_tile
