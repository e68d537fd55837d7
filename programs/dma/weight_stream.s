# Weight streaming: y = W^T x for one layer whose weights do not stay on chip. W is 2048 x 1024
# bf16 (4 MiB) and ReLU-sparse (about half its elements are exact zeros); x is a batch of 64
# activation columns. The 16 K tiles of 128 weight rows are loaded on four queues (so their
# fixed costs overlap) into their own SBUF slots; the matmuls of K tile k wait only for
# tile k (sync auto). TensorE needs ~3.4 us, the weights ~12 us of DMA: the kernel is DMA-bound.
# weight_stream_compressed.s is the same kernel with the weights stored compressed.
#   x is laid out K-tile-major: x[p, k, :] holds activation row 128k + p (one dense DMA)
#   y[p, m, :] holds output row 128m + p
.hbm x bfloat16[128, 16, 64] input
.hbm w bfloat16[2048, 1024] input init=relu_normal(0, 0.05)
.hbm y float32[128, 8, 64] output
.sbuf xs bfloat16[128, 16, 64]
.sbuf wt bfloat16[128, 16, 1024]
.psum acc float32[128, 8, 64]
.sbuf ys float32[128, 8, 64]
    dma.copy xs, x, queue=2
    ctrl.mov r0, 0
load:                               # K tile 4j + i on queue i
    dma.copy wt[:, r0, :], w[r0*128 : r0*128 + 128, :], queue=0
    dma.copy wt[:, r0 + 1, :], w[r0*128 + 128 : r0*128 + 256, :], queue=1
    dma.copy wt[:, r0 + 2, :], w[r0*128 + 256 : r0*128 + 384, :], queue=4
    dma.copy wt[:, r0 + 3, :], w[r0*128 + 384 : r0*128 + 512, :], queue=5
    ctrl.add r0, r0, 4
    ctrl.blt r0, 16, load
    ctrl.mov r1, 0
first:                              # K tile 0 starts every accumulation
    tensor.matmul acc[:, r1, :], wt[:, 0, r1*128 : r1*128 + 128], xs[:, 0, :], accumulate=false
    ctrl.add r1, r1, 1
    ctrl.blt r1, 8, first
    ctrl.mov r0, 1
ktile:                              # K tiles 1..15
    ctrl.mov r1, 0
mtile:
    tensor.matmul acc[:, r1, :], wt[:, r0, r1*128 : r1*128 + 128], xs[:, r0, :], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.blt r1, 8, mtile
    ctrl.add r0, r0, 1
    ctrl.blt r0, 16, ktile
    vector.tensor_copy ys, acc
    dma.copy y, ys, queue=3
