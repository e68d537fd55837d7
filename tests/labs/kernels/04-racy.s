# NEGATIVE TEST (lab 4): double buffering without waiting for a buffer to be stored before
# loading the next tile into it: queue 0 overwrites buf k while queue 1 may still be reading it.
#   sem k      "tile loaded into buf k"      signalled by queue 0 after each load
#   sem 2 + k  "buf k computed"              signalled by ScalarE
#   sem 4 + k  "buf k stored (free again)"   signalled by queue 1 after each store
# Counts grow by one per loop iteration, so the waits compare against registers.
.sync explicit
.const R = 2048
.const PAIRS = R / 256
.hbm x float32[R, 512] input
.hbm y float32[R, 512] output
.sbuf buf float32[128, 2, 512]
    ctrl.mov r0, 0              # pair index
    ctrl.mov r1, 1              # r0 + 1: the count each semaphore reaches in this iteration
pair:
    dma.copy buf[:, 0, :], x[r0*256 : r0*256 + 128, :], queue=0
    sync.signal q0, sem=0
    dma.copy buf[:, 1, :], x[r0*256 + 128 : r0*256 + 256, :], queue=0
    sync.signal q0, sem=1
    sync.wait scalar, sem=0, value=r1
    scalar.activation buf[:, 0, :], buf[:, 0, :], func=relu, scale=2.0
    sync.signal scalar, sem=2
    sync.wait scalar, sem=1, value=r1
    scalar.activation buf[:, 1, :], buf[:, 1, :], func=relu, scale=2.0
    sync.signal scalar, sem=3
    sync.wait q1, sem=2, value=r1
    dma.copy y[r0*256 : r0*256 + 128, :], buf[:, 0, :], queue=1
    sync.signal q1, sem=4
    sync.wait q1, sem=3, value=r1
    dma.copy y[r0*256 + 128 : r0*256 + 256, :], buf[:, 1, :], queue=1
    sync.signal q1, sem=5
    ctrl.add r0, r0, 1
    ctrl.add r1, r1, 1
    ctrl.blt r0, PAIRS, pair
