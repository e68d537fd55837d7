# y = relu(2x) over x[2048, 512] fp32, 16 row tiles through ONE SBUF buffer. Each load must wait
# until the previous tile's store has read the buffer (WAR), so DMA-in, ScalarE and DMA-out
# take turns: compare `neuronemu run` times with double_buffer.s, which does the same math.
.hbm x float32[2048, 512] input
.hbm y float32[2048, 512] output
.sbuf buf float32[128, 512]
    ctrl.mov r0, 0
tile:
    dma.copy buf, x[r0*128 : r0*128 + 128, :], queue=0
    scalar.activation buf, buf, func=relu, scale=2.0
    dma.copy y[r0*128 : r0*128 + 128, :], buf, queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, 16, tile
