# Lab 5 starter: y[M, N] = xT[K, M]^T @ w[K, N] with fp32 inputs and an fp32 result.
# Correct, and TensorE is slow at it: fp32 operands take 4 passes through the PE array.
# The grader accepts any result within the bf16 error bound of docs/labs/05-low-precision.md
# (it runs with stochastic rounding on). The grader rewrites M, K, N (keep the .const lines).
.const M = 1024
.const K = 512
.const N = 1024
.const KT = K / 128
.const MT = M / 128
.const NT = N / 512

.hbm xT float32[K, M] input
.hbm w float32[K, N] input
.hbm y float32[M, N] output

.sbuf x_sb float32[128, KT, M]
.sbuf w_sb float32[128, KT, N]
.sbuf out_sb float32[128, 2, 512]
.psum acc float32[128, 2, 512]

    ctrl.mov r1, 0
load:
    dma.copy x_sb[:, r1, :], xT[r1*128 : r1*128 + 128, :], queue=0
    dma.copy w_sb[:, r1, :], w[r1*128 : r1*128 + 128, :], queue=1
    ctrl.add r1, r1, 1
    ctrl.blt r1, KT, load

    ctrl.mov r5, 0                     # PSUM bank in use
    ctrl.mov r0, 0                     # m tile
m_tile:
    ctrl.mov r2, 0                     # n tile
n_tile:
    tensor.matmul acc[:, r5, :], x_sb[:, 0, r0*128 : r0*128 + 128], w_sb[:, 0, r2*512 : r2*512 + 512], accumulate=false
    ctrl.mov r1, 1
k_tile:
    ctrl.bge r1, KT, evacuate
    tensor.matmul acc[:, r5, :], x_sb[:, r1, r0*128 : r0*128 + 128], w_sb[:, r1, r2*512 : r2*512 + 512], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.jmp k_tile
evacuate:
    vector.tensor_copy out_sb[:, r5, :], acc[:, r5, :]
    dma.copy y[r0*128 : r0*128 + 128, r2*512 : r2*512 + 512], out_sb[:, r5, :], queue=2
    ctrl.sub r5, 1, r5
    ctrl.add r2, r2, 1
    ctrl.blt r2, NT, n_tile
    ctrl.add r0, r0, 1
    ctrl.blt r0, MT, m_tile
