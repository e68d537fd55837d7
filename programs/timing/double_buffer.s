# y = relu(2x) over x[2048, 512] fp32 with TWO SBUF buffers: the loop body handles a pair of row
# tiles, so the load of one tile overlaps the compute and store of the other (sync mode auto
# orders only the accesses that really conflict). Same math and the same DMA queues (0 in, 1 out)
# as single_buffer.s, less time.
.hbm x float32[2048, 512] input
.hbm y float32[2048, 512] output
.sbuf buf float32[128, 2, 512]
    ctrl.mov r0, 0
pair:
    dma.copy buf[:, 0, :], x[r0*256 : r0*256 + 128, :], queue=0
    dma.copy buf[:, 1, :], x[r0*256 + 128 : r0*256 + 256, :], queue=0
    scalar.activation buf[:, 0, :], buf[:, 0, :], func=relu, scale=2.0
    dma.copy y[r0*256 : r0*256 + 128, :], buf[:, 0, :], queue=1
    scalar.activation buf[:, 1, :], buf[:, 1, :], func=relu, scale=2.0
    dma.copy y[r0*256 + 128 : r0*256 + 256, :], buf[:, 1, :], queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, 8, pair
