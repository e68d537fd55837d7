# 2-D transpose y = x^T of a [512, 384] fp32 matrix (several tiles each way) through the PE
# array, bit-exact. Every target; on trn1 bit-exact for finite values only (NeuronCore-v2's PE
# transpose is an identity matmul, which the NKI docs say is not bit-accurate for NaN / Inf).
#
# Modelled on the NKI transpose tutorial / sample (nc_transpose on 128 x 128 blocks, the PSUM
# result copied out to SBUF); written for this project. Layout: x arrives as 4 row tiles of 128
# rows (rows on partitions); block (a, b) of x, rows 128 a.., columns 128 b.., becomes block
# (b, a) of y. Each output row tile b gathers its 4 blocks in one PSUM bank ([128, 512] fp32).
#   DMA      the 4 input row tiles on queues 0..3 (whole rows: 1.5 KiB per partition and
#            transfer; loading 128 x 128 blocks instead, column block first, measured 2% slower
#            on trn2: each output tile needs a block of every row tile anyway), the 3 output
#            row tiles on queues 4..6
#   TensorE  12 transposes of 128 x 128 blocks (same dtype in and out: bits move unchanged)
#   VectorE  copies each finished bank to SBUF (tensor_copy between equal dtypes moves bits;
#            a ScalarE copy would compute x * 1 + 0 and turn -0.0 into +0.0)
# For 2-byte dtypes on trn2/trn3 the DMA engines transpose directly: kernels/transpose_2d_dma.
.const R = 512
.const C = 384
.const RT = R / 128                       # input row tiles = output column blocks
.const CT = C / 128                       # input column blocks = output row tiles

.hbm x float32[R, C] input init=normal(0, 1)
.hbm y float32[C, R] output

.sbuf x_sb float32[128, RT, C]
.sbuf y_sb float32[128, CT, R]
.psum t_ps float32[128, CT, R]            # one bank per output row tile

    dma.copy x_sb[:, 0, :], x[0:128, :], queue=0
    dma.copy x_sb[:, 1, :], x[128:256, :], queue=1
    dma.copy x_sb[:, 2, :], x[256:384, :], queue=2
    dma.copy x_sb[:, 3, :], x[384:512, :], queue=3
    ctrl.mov r1, 0                        # output row tile b
out_tile:
    ctrl.mov r0, 0                        # input row tile a
block:
    tensor.transpose t_ps[:, r1, r0*128 : r0*128 + 128], x_sb[:, r0, r1*128 : r1*128 + 128]
    ctrl.add r0, r0, 1
    ctrl.blt r0, RT, block
    vector.tensor_copy y_sb[:, r1, :], t_ps[:, r1, :]
    ctrl.beq r1, 1, store_q5
    ctrl.beq r1, 2, store_q6
    dma.copy y[r1*128 : r1*128 + 128, :], y_sb[:, r1, :], queue=4
    ctrl.jmp next
store_q5:
    dma.copy y[r1*128 : r1*128 + 128, :], y_sb[:, r1, :], queue=5
    ctrl.jmp next
store_q6:
    dma.copy y[r1*128 : r1*128 + 128, :], y_sb[:, r1, :], queue=6
next:
    ctrl.add r1, r1, 1
    ctrl.blt r1, CT, out_tile
