# 3 x 3 average pooling at stride 2 (no padding) of a [4, 128, 64, 64] bf16 batch (NCHW), fp32 out
# [4, 128, 31, 31]: y[b, c, i, j] = the mean of x[b, c, 2i : 2i+3, 2j : 2j+3].
#
# Modelled on the NKI average-pool-2D tutorial (channels on partitions, the windows read through
# strided access patterns, the sum scaled by 1 / window size) and the pooling stage of the CS149
# NKI convolution assignment (a max pool there); written for this project, with overlapping
# 3 x 3 windows instead of the tutorial's disjoint ones. Layout: one image per step, channel c on
# partition c, the 64 x 64 image along its free axis. The overlapping windows are separable:
#   VectorE  column sums v[i, :] = (x[2i] + x[2i+1]) + x[2i+2] (rows picked by stepped slices,
#            whole 64-wide rows), then window sums s[i, j] = (v[i, 2j] + v[i, 2j+1]) + v[i, 2j+2]
#            (stepped column slices): 4 adds, fp32
#   ScalarE  y = s * (1/9) (an activation copy with scale), off the Vector engine
#   DMA      image b + 1 loads (queues 0 / 1) while b pools, b - 1 stores (queues 2 / 3)
# The kernel is bound by VectorE's four stepped adds; kernels/avg_pool2d_pe computes the same
# pooling on the PE array after DMA transposes (trn2 / trn3), bound by those transposes instead.
.const B = 4
.const C = 128
.const H = 64
.const W = 64
.const OH = (H - 3) / 2 + 1              # 31
.const OW = (W - 3) / 2 + 1

.hbm x bfloat16[B, C, H, W] input init=normal(0, 1)
.hbm y float32[B, C, OH, OW] output

.sbuf x_sb bfloat16[C, 2, H, W]
.sbuf v_sb float32[C, OH, W]             # partial column sums, then full ones
.sbuf s_sb float32[C, OH, OW]            # partial window sums, then full ones
.sbuf y_sb float32[C, 2, OH, OW]

    ctrl.mov r0, 0                       # image b
    ctrl.mov r1, 0                       # slot b mod 2
image:
    ctrl.beq r1, 1, load_odd
    dma.copy x_sb[:, 0, :, :], x[r0, :, :, :], queue=0
    ctrl.jmp pool
load_odd:
    dma.copy x_sb[:, 1, :, :], x[r0, :, :, :], queue=1
pool:
    vector.tensor_tensor v_sb, x_sb[:, r1, 0 : 2*OH - 1 : 2, :], x_sb[:, r1, 1 : 2*OH : 2, :], op=add
    vector.tensor_tensor v_sb, v_sb, x_sb[:, r1, 2 : 2*OH + 1 : 2, :], op=add
    vector.tensor_tensor s_sb, v_sb[:, :, 0 : 2*OW - 1 : 2], v_sb[:, :, 1 : 2*OW : 2], op=add
    vector.tensor_tensor s_sb, s_sb, v_sb[:, :, 2 : 2*OW + 1 : 2], op=add
    scalar.activation y_sb[:, r1, :, :], s_sb, func=copy, scale=1.0/9
    ctrl.beq r1, 1, store_odd
    dma.copy y[r0, :, :, :], y_sb[:, 0, :, :], queue=2
    ctrl.jmp next
store_odd:
    dma.copy y[r0, :, :, :], y_sb[:, 1, :, :], queue=3
next:
    ctrl.sub r1, 1, r1
    ctrl.add r0, r0, 1
    ctrl.blt r0, B, image
