# Lab 3 reference: numerically safe row softmax of x[R, D] fp32 (R a multiple of 128).
# exp(x - max) never overflows (its largest value is exp(0) = 1) and equals exp(x) / exp(max),
# which cancels in the quotient. VectorE finds the row max (negated: it becomes the bias of the
# activation), ScalarE computes exp(x - max) and the row sum in one instruction, VectorE scales
# by 1 / sum. Two buffers per tile let the next tile's load overlap this tile's math, and the
# normalisation runs on ScalarE (activation copy with a per-row scale) so VectorE is free sooner.
.const R = 256
.const D = 512
.const RT = R / 128
.hbm x float32[R, D] input
.hbm y float32[R, D] output

.sbuf x_tile float32[128, 2, D]
.sbuf e_tile float32[128, 2, D]
.sbuf neg_max float32[128, 2]
.sbuf row_sum float32[128, 2]
.sbuf inv_sum float32[128, 2]

    ctrl.mov r0, 0                   # row tile
    ctrl.mov r1, 0                   # buffer
row_tile:
    dma.copy x_tile[:, r1, :], x[r0*128 : r0*128 + 128, :], queue=0
    vector.tensor_reduce neg_max[:, r1], x_tile[:, r1, :], op=maximum, negate=true
    scalar.activation e_tile[:, r1, :], x_tile[:, r1, :], func=exp, bias=neg_max[:, r1], reduce_res=row_sum[:, r1]
    vector.reciprocal inv_sum[:, r1], row_sum[:, r1]
    scalar.activation e_tile[:, r1, :], e_tile[:, r1, :], func=copy, scale=inv_sum[:, r1]
    dma.copy y[r0*128 : r0*128 + 128, :], e_tile[:, r1, :], queue=1
    ctrl.sub r1, 1, r1
    ctrl.add r0, r0, 1
    ctrl.blt r0, RT, row_tile
