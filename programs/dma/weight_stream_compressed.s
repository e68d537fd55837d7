# weight_stream.s with the weights stored compressed in HBM (block zero-value compression,
# docs/dma.md) and read with dma.decompress: same math, same outputs. Half the bf16 weights are
# zeros, so a 64-element block of 128 bytes shrinks to ~8 + 64 bytes: the DMA moves ~1.7x fewer
# bytes and the kernel, DMA-bound, gets faster by about that much. Compare the "dma:" lines of
#   neuronemu run programs/dma/weight_stream.s
#   neuronemu run programs/dma/weight_stream_compressed.s
#   x is laid out K-tile-major: x[p, k, :] holds activation row 128k + p (one dense DMA)
#   y[p, m, :] holds output row 128m + p
.hbm x bfloat16[128, 16, 64] input
.hbm w bfloat16[2048, 1024] input compressed init=relu_normal(0, 0.05)
.hbm y float32[128, 8, 64] output
.sbuf xs bfloat16[128, 16, 64]
.sbuf wt bfloat16[128, 16, 1024]
.psum acc float32[128, 8, 64]
.sbuf ys float32[128, 8, 64]
    dma.copy xs, x, queue=2
    ctrl.mov r0, 0
load:                               # K tile 4j + i on queue i
    dma.decompress wt[:, r0, :], w[r0*128 : r0*128 + 128, :], queue=0
    dma.decompress wt[:, r0 + 1, :], w[r0*128 + 128 : r0*128 + 256, :], queue=1
    dma.decompress wt[:, r0 + 2, :], w[r0*128 + 256 : r0*128 + 384, :], queue=4
    dma.decompress wt[:, r0 + 3, :], w[r0*128 + 384 : r0*128 + 512, :], queue=5
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
