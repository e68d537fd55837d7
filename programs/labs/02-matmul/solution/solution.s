# Lab 2 reference: result[M, N] = lhsT[K, M]^T @ rhs[K, N], bf16 operands, fp32 result.
# M and K are multiples of 128 (the PE array's rows and columns), N a multiple of 512 (one PSUM
# bank holds 512 fp32 per partition). Both operands are loaded once, a K tile at a time, on four
# DMA queues. Each [128, 512] output tile is K/128 matmuls into one PSUM bank: the first
# overwrites (accumulate=false), the rest add (accumulate=true). Two banks alternate, so TensorE
# fills one while VectorE evacuates the other and DMA stores it.
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
.sbuf out_sb float32[128, 2, 512]
.psum acc float32[128, 2, 512]         # two banks

    ctrl.mov r1, 0
load:
    dma.copy lhsT_sb[:, r1, :], lhsT[r1*128 : r1*128 + 128, :], queue=0
    dma.copy rhs_sb[:, r1, :], rhs[r1*128 : r1*128 + 128, :], queue=1
    ctrl.add r1, r1, 1
    ctrl.bge r1, KT, loaded
    dma.copy lhsT_sb[:, r1, :], lhsT[r1*128 : r1*128 + 128, :], queue=2
    dma.copy rhs_sb[:, r1, :], rhs[r1*128 : r1*128 + 128, :], queue=3
    ctrl.add r1, r1, 1
    ctrl.blt r1, KT, load
loaded:

    ctrl.mov r5, 0                     # PSUM bank / output buffer in use (0, 1)
    ctrl.mov r0, 0                     # m tile
m_tile:
    ctrl.mov r2, 0                     # n tile
n_tile:
    tensor.matmul acc[:, r5, :], lhsT_sb[:, 0, r0*128 : r0*128 + 128], rhs_sb[:, 0, r2*512 : r2*512 + 512], accumulate=false
    ctrl.mov r1, 1
k_tile:
    ctrl.bge r1, KT, evacuate
    tensor.matmul acc[:, r5, :], lhsT_sb[:, r1, r0*128 : r0*128 + 128], rhs_sb[:, r1, r2*512 : r2*512 + 512], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.jmp k_tile
evacuate:
    vector.tensor_copy out_sb[:, r5, :], acc[:, r5, :]
    ctrl.bne r5, 0, store1             # alternate store queues with the banks
    dma.copy result[r0*128 : r0*128 + 128, r2*512 : r2*512 + 512], out_sb[:, 0, :], queue=4
    ctrl.jmp stored
store1:
    dma.copy result[r0*128 : r0*128 + 128, r2*512 : r2*512 + 512], out_sb[:, 1, :], queue=5
stored:
    ctrl.sub r5, 1, r5
    ctrl.add r2, r2, 1
    ctrl.blt r2, NT, n_tile
    ctrl.add r0, r0, 1
    ctrl.blt r0, MT, m_tile
