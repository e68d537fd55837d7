# NEGATIVE TEST: VectorE waits for semaphore 0, which only ScalarE signals, after waiting for
# semaphore 1, which only VectorE signals: neither can start.
.sync explicit
.sbuf a float32[128, 512]
.sbuf b float32[128, 512]
    sync.wait vector, sem=0, value=1
    vector.memset a, value=1.0
    sync.signal vector, sem=1
    sync.wait scalar, sem=1, value=1
    scalar.activation b, a, func=exp
    sync.signal scalar, sem=0
