# Lab 6 reference: y = maxpool2x2(conv3x3(x, w)), fused: the convolution never leaves the chip.
# x is [C_IN, H + 2, W + 2] bf16, already zero-padded by one pixel; w is [C_IN, 9, C_OUT] bf16
# (tap t = 3 dy + dx); y is [C_OUT, H / 2, W / 2] fp32. Channels are partitions: C_IN is the
# contraction (rows of the PE array), C_OUT the output partitions.
# A convolution is 9 accumulating matmuls: tap (dy, dx) multiplies w[:, t, :] (stationary) with
# the input window shifted by (dy, dx) (moving: a strided [C_IN, RB, W] view, no copy). RB rows
# of output fill one PSUM bank (RB * W <= 512 fp32); two banks alternate so TensorE computes
# block b + 1 while block b is pooled out of PSUM: ScalarE copies the even columns to SBUF (a
# Vector instruction may read only one operand from PSUM), VectorE takes the max with the odd
# columns, then the max over row pairs.
.const C_IN = 64
.const C_OUT = 64
.const H = 16
.const W = 16
.const BANKS = (H * W + 511) / 512     # PSUM banks one image needs
.const RB = H / BANKS                  # output rows per bank
.const BLOCKS = H / RB

.hbm x bfloat16[C_IN, H + 2, W + 2] input
.hbm w bfloat16[C_IN, 9, C_OUT] input
.hbm y float32[C_OUT, H / 2, W / 2] output

.sbuf x_sb bfloat16[C_IN, H + 2, W + 2]
.sbuf w_sb bfloat16[C_IN, 9, C_OUT]
.psum acc float32[C_OUT, 2, RB, W]
.sbuf even float32[C_OUT, 2, RB, W / 2]
.sbuf colmax float32[C_OUT, 2, RB, W / 2]
.sbuf y_sb float32[C_OUT, H / 2, W / 2]

    dma.copy w_sb, w, queue=0
    dma.copy x_sb, x, queue=1
    ctrl.mov r0, 0                     # output row block
    ctrl.mov r1, 0                     # its first output row
    ctrl.mov r5, 0                     # PSUM bank
block:
    tensor.matmul acc[:, r5, :, :], w_sb[:, 0, :], x_sb[:, r1 : r1 + RB, 0 : W], accumulate=false
    tensor.matmul acc[:, r5, :, :], w_sb[:, 1, :], x_sb[:, r1 : r1 + RB, 1 : W + 1], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 2, :], x_sb[:, r1 : r1 + RB, 2 : W + 2], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 3, :], x_sb[:, r1 + 1 : r1 + RB + 1, 0 : W], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 4, :], x_sb[:, r1 + 1 : r1 + RB + 1, 1 : W + 1], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 5, :], x_sb[:, r1 + 1 : r1 + RB + 1, 2 : W + 2], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 6, :], x_sb[:, r1 + 2 : r1 + RB + 2, 0 : W], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 7, :], x_sb[:, r1 + 2 : r1 + RB + 2, 1 : W + 1], accumulate=true
    tensor.matmul acc[:, r5, :, :], w_sb[:, 8, :], x_sb[:, r1 + 2 : r1 + RB + 2, 2 : W + 2], accumulate=true
    scalar.activation even[:, r5, :, :], acc[:, r5, :, 0 : W : 2], func=copy
    vector.tensor_tensor colmax[:, r5, :, :], even[:, r5, :, :], acc[:, r5, :, 1 : W : 2], op=maximum
    vector.tensor_tensor y_sb[:, r0*(RB/2) : r0*(RB/2) + RB/2, :], colmax[:, r5, 0 : RB : 2, :], colmax[:, r5, 1 : RB : 2, :], op=maximum
    ctrl.sub r5, 1, r5
    ctrl.add r1, r1, RB
    ctrl.add r0, r0, 1
    ctrl.blt r0, BLOCKS, block
    dma.copy y, y_sb, queue=2
