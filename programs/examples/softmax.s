# Row softmax: y[i, :] = exp(x[i, :] - max_i) / sum(exp(x[i, :] - max_i)) for x[256, 512] fp32,
# two 128-row tiles in a register loop. The exp and the row sum come from one ScalarE
# activation (bias = -max, reduce_res = the add-reduction of the outputs).
.hbm x float32[256, 512] input init=normal(0, 4)
.hbm y float32[256, 512] output

.sbuf x_tile float32[128, 512]
.sbuf e_tile float32[128, 512]
.sbuf neg_max float32[128, 1]
.sbuf row_sum float32[128, 1]
.sbuf inv_sum float32[128, 1]

    ctrl.mov r0, 0
row_tile:
    dma.copy x_tile, x[r0*128 : r0*128 + 128, :], queue=0
    vector.tensor_reduce neg_max, x_tile, op=maximum, negate=true
    scalar.activation e_tile, x_tile, func=exp, bias=neg_max, reduce_res=row_sum
    vector.reciprocal inv_sum, row_sum
    vector.tensor_scalar e_tile, e_tile, op0=multiply, operand0=inv_sum
    dma.copy y[r0*128 : r0*128 + 128, :], e_tile, queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, 2, row_tile
