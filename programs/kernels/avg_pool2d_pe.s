# 3 x 3 average pooling at stride 2 of a [4, 128, 64 x 64] bf16 batch (NCHW, the image flattened),
# fp32 out [4, 128, 31, 31], computed on the PE array after DMA transposes; trn2 and trn3.
#
# The same pooling as kernels/avg_pool2d (which follows the NKI average-pool-2D tutorial on the
# Vector engine), restructured for TensorE; written for this project. A 3 x 3 window sum is
# linear in the pixels, so with the pixels on the partitions it is a matmul against a constant
# 0/1 pooling matrix. Layout: the DMA engines transpose each image, two rows (128 pixels,
# p = 64 r + w) at a time, into xT_k [128 pixels, 128 channels] (chunk k = rows 2k, 2k + 1);
# output row i needs rows 2i, 2i + 1 (chunk i) and 2i + 2 (the top row of chunk i + 1):
#   TensorE  sum[c, i, :] = xT_i^T @ A + xT_(i+1)^T @ B (accumulated in PSUM), with the
#            stationary xT chunk [128 pixels, 128 channels] and moving A, B [128 pixels, 31]:
#            A[64 r + w, j] = 1 for w in 2j..2j+2 (both rows), B the same for r = 0 only.
#            The output comes out channel-major, [128 channels, 31] per row, as NCHW wants.
#   ScalarE  y = sum * (1/9) out of PSUM
#   GpSimd   builds A and B once (affine_select)
#   DMA      32 transposes per image over queues 0..3 (two slots: image b + 1 loads while b
#            pools), the output on queues 4 / 5
# No Vector instruction: VectorE stays free, and the kernel is bound by the DMA transposes.
.target trn2
.const B = 4
.const C = 128
.const H = 64
.const W = 64
.const OH = (H - 3) / 2 + 1              # 31
.const OW = (W - 3) / 2 + 1
.const CHUNKS = H / 2                    # 128-pixel chunks of two rows
.const TOP = 16                          # output rows in the first PSUM bank (16 x 31 fp32 fit)

.hbm x bfloat16[B, C, H * W] input init=normal(0, 1)
.hbm y float32[B, C, OH, OW] output

.sbuf pool_a bfloat16[128, OW]
.sbuf pool_b bfloat16[128, OW]
.sbuf xT bfloat16[128, 2, CHUNKS, C]     # [pixel, slot, chunk, channel]
.sbuf y_sb float32[C, 2, OH, OW]
.psum sum_top float32[C, TOP, OW]        # output rows 0..15, one bank
.psum sum_bot float32[C, OH - TOP, OW]   # rows 16..30, the next

    # A: pixel p = 64 r + w of a chunk is in window j when 0 <= w - 2j <= 2 (affine_select's
    # partition index counts from the slice's first partition, so each row half is one slice)
    gpsimd.memset pool_a, value=1.0
    gpsimd.affine_select pool_a[0:64, :], pool_a[0:64, :], cmp_op=greater_equal, on_false_value=0.0, offset=0, channel_multiplier=1, step=-2
    gpsimd.affine_select pool_a[0:64, :], pool_a[0:64, :], cmp_op=greater_equal, on_false_value=0.0, offset=2, channel_multiplier=-1, step=2
    gpsimd.tensor_copy pool_a[64:128, :], pool_a[0:64, :]
    # B: the top row only
    gpsimd.memset pool_b, value=0.0
    gpsimd.tensor_copy pool_b[0:64, :], pool_a[0:64, :]

    ctrl.mov r0, 0                       # image b
    ctrl.mov r1, 0                       # slot b mod 2
image:
    # the image's 32 chunks, transposed by the DMA engines on four queues
    ctrl.mov r2, 0
load:
    dma.transpose xT[:, r1, r2, :], x[r0, :, r2*128 : r2*128 + 128], queue=0
    dma.transpose xT[:, r1, r2 + 1, :], x[r0, :, r2*128 + 128 : r2*128 + 256], queue=1
    dma.transpose xT[:, r1, r2 + 2, :], x[r0, :, r2*128 + 256 : r2*128 + 384], queue=2
    dma.transpose xT[:, r1, r2 + 3, :], x[r0, :, r2*128 + 384 : r2*128 + 512], queue=3
    ctrl.add r2, r2, 4
    ctrl.blt r2, CHUNKS, load
    # window sums, one output row per pair of accumulating matmuls
    ctrl.mov r3, 0                       # output row i
rows_top:
    tensor.matmul sum_top[:, r3, :], xT[:, r1, r3, :], pool_a
    tensor.matmul sum_top[:, r3, :], xT[:, r1, r3 + 1, :], pool_b, accumulate=true
    ctrl.add r3, r3, 1
    ctrl.blt r3, TOP, rows_top
    scalar.activation y_sb[:, r1, 0:TOP, :], sum_top, func=copy, scale=1.0/9
rows_bottom:
    tensor.matmul sum_bot[:, r3 - TOP, :], xT[:, r1, r3, :], pool_a
    tensor.matmul sum_bot[:, r3 - TOP, :], xT[:, r1, r3 + 1, :], pool_b, accumulate=true
    ctrl.add r3, r3, 1
    ctrl.blt r3, OH, rows_bottom
    scalar.activation y_sb[:, r1, TOP:OH, :], sum_bot, func=copy, scale=1.0/9
    ctrl.beq r1, 1, store_odd
    dma.copy y[r0, :, :, :], y_sb[:, 0, :, :], queue=4
    ctrl.jmp next
store_odd:
    dma.copy y[r0, :, :, :], y_sb[:, 1, :, :], queue=5
next:
    ctrl.sub r1, 1, r1
    ctrl.add r0, r0, 1
    ctrl.blt r0, B, image
