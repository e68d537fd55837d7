# A DMA-bound kernel spread over eight queues: y = 2x over x[2048, 512] fp32 (4 MiB each way).
# Loads go round-robin on queues 0-3 and stores on queues 4-7, so up to eight transfers are in
# flight: their fixed costs (~1.3 us each) overlap while their data phases interleave on the 16
# DMA engines the queues share. Open the timeline (--trace) to see the queues take turns; the
# report's dma line shows the achieved bandwidth against the core's peak.
.hbm x float32[2048, 512] input
.hbm y float32[2048, 512] output
.sbuf buf float32[128, 16, 512]
    ctrl.mov r0, 0
quad:                               # row tiles 4j .. 4j + 3
    dma.copy buf[:, r0, :], x[r0*128 : r0*128 + 128, :], queue=0
    dma.copy buf[:, r0 + 1, :], x[r0*128 + 128 : r0*128 + 256, :], queue=1
    dma.copy buf[:, r0 + 2, :], x[r0*128 + 256 : r0*128 + 384, :], queue=2
    dma.copy buf[:, r0 + 3, :], x[r0*128 + 384 : r0*128 + 512, :], queue=3
    scalar.activation buf[:, r0, :], buf[:, r0, :], func=copy, scale=2.0
    scalar.activation buf[:, r0 + 1, :], buf[:, r0 + 1, :], func=copy, scale=2.0
    scalar.activation buf[:, r0 + 2, :], buf[:, r0 + 2, :], func=copy, scale=2.0
    scalar.activation buf[:, r0 + 3, :], buf[:, r0 + 3, :], func=copy, scale=2.0
    dma.copy y[r0*128 : r0*128 + 128, :], buf[:, r0, :], queue=4
    dma.copy y[r0*128 + 128 : r0*128 + 256, :], buf[:, r0 + 1, :], queue=5
    dma.copy y[r0*128 + 256 : r0*128 + 384, :], buf[:, r0 + 2, :], queue=6
    dma.copy y[r0*128 + 384 : r0*128 + 512, :], buf[:, r0 + 3, :], queue=7
    ctrl.add r0, r0, 4
    ctrl.blt r0, 16, quad
