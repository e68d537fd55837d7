# Inclusive cumulative sum along the free dim (y[i, j] = the sum of x[i, 0:j+1], added strictly
# left to right in fp32) of a [256, 4096] fp32 tensor, fp32 out.
#
# Modelled on the NKI docs' tensor_tensor_scan (the running-recurrence instruction of the
# Vector engine) and the prefix-sum exercises of parallel-programming courses (CS149); written
# for this project. Layout: 128 rows per tile on the partitions, each row along the free axis
# of its partition, so every scan is independent per partition. A row is scanned in 4 chunks
# of 1024 columns so that loads, scans and stores of neighbouring chunks overlap; each chunk's
# scan starts from the last prefix of the chunk before it (the `initial=` column), so the
# whole row is one sequential recurrence:
#   y[j] = fl32(1 * y[j - 1] + x[j]),  y[-1] = 0
# (tensor_tensor_scan with data0 = ones, op0 = multiply, op1 = add: the multiply by 1 is exact,
# so each prefix is the previous one plus the next element, rounded once to fp32). The order is
# exactly numpy's float32 cumsum except that y[0] = 0 + x[0] (so a -0.0 first element gives +0).
#   VectorE  the scans (the only engine with a scan)
#   GpSimd   the ones tile
#   DMA      loads alternate between queues 0 and 1, stores between 2 and 3, two slots each
.const ROWS = 256
.const COLS = 4096
.const CH = 1024                         # columns per chunk
.const CHUNKS = COLS / CH

.hbm x float32[ROWS, COLS] input init=normal(0, 1)
.hbm y float32[ROWS, COLS] output

.sbuf ones float32[128, CH]
.sbuf x_sb float32[128, 2, CH]
.sbuf y_sb float32[128, 2, CH]

    gpsimd.memset ones, value=1.0
    ctrl.mov r0, 0                       # row tile
    ctrl.mov r2, 0                       # slot (alternates every chunk)
row_tile:
    ctrl.mov r1, 0                       # chunk
chunk:
    ctrl.beq r2, 1, odd
    dma.copy x_sb[:, 0, :], x[r0*128 : r0*128 + 128, r1*CH : r1*CH + CH], queue=0
    ctrl.bne r1, 0, continue_even
    vector.tensor_tensor_scan y_sb[:, 0, :], ones, x_sb[:, 0, :], initial=0.0, op0=multiply, op1=add
    ctrl.jmp store_even
continue_even:
    vector.tensor_tensor_scan y_sb[:, 0, :], ones, x_sb[:, 0, :], initial=y_sb[:, 1, CH - 1], op0=multiply, op1=add
store_even:
    dma.copy y[r0*128 : r0*128 + 128, r1*CH : r1*CH + CH], y_sb[:, 0, :], queue=2
    ctrl.jmp next
odd:
    dma.copy x_sb[:, 1, :], x[r0*128 : r0*128 + 128, r1*CH : r1*CH + CH], queue=1
    ctrl.bne r1, 0, continue_odd
    vector.tensor_tensor_scan y_sb[:, 1, :], ones, x_sb[:, 1, :], initial=0.0, op0=multiply, op1=add
    ctrl.jmp store_odd
continue_odd:
    vector.tensor_tensor_scan y_sb[:, 1, :], ones, x_sb[:, 1, :], initial=y_sb[:, 0, CH - 1], op0=multiply, op1=add
store_odd:
    dma.copy y[r0*128 : r0*128 + 128, r1*CH : r1*CH + CH], y_sb[:, 1, :], queue=3
next:
    ctrl.sub r2, 1, r2
    ctrl.add r1, r1, 1
    ctrl.blt r1, CHUNKS, chunk
    ctrl.add r0, r0, 1
    ctrl.blt r0, ROWS / 128, row_tile
