# NEGATIVE TEST: ScalarE reads `a` while DMA queue 0 may still be writing it (no sync.wait).
.sync explicit
.hbm x float32[128, 512] input
.hbm y float32[128, 512] output
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
    dma.copy a, x, queue=0
    sync.signal q0, sem=0
    scalar.activation b, a, func=exp
    sync.signal scalar, sem=1
    sync.wait q1, sem=1, value=1
    dma.copy y, b, queue=1
