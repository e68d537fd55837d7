# Lab 7 starter: all-reduce y = sum over the 16 ranks of x (128 x COLS fp32 per rank), on the 16
# chips of a trn2.48xlarge (a 4 x 4 torus), with cc.send / cc.recv. Correct, and slow: every step
# moves the whole buffer one hop round the ring, 15 times. docs/labs/07-ring-allreduce.md shows
# the bandwidth-optimal ring. The grader rewrites COLS (a multiple of 16) and runs 16 ranks:
#     neuronemu run programs/labs/07-ring-allreduce/starter.s --topology trn2.48xlarge
.target trn2
.const COLS = 4096
.hbm x float32[128, COLS] input
.hbm y float32[128, COLS] output
.sbuf acc float32[128, COLS]           # the running sum
.sbuf passing float32[128, 2, COLS]    # what travels round the ring: sent from one, received in the other

    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1                # right neighbour (r + 1) mod n
    ctrl.add r3, r0, r1
    ctrl.sub r3, r3, 1
    ctrl.rem r3, r3, r1                # left neighbour (r - 1) mod n
    ctrl.sub r7, r1, 1                 # n - 1 steps
    dma.copy acc, x, queue=0
    dma.copy passing[:, 0, :], x, queue=1
    ctrl.mov r4, 0                     # step
    ctrl.mov r5, 0                     # buffer being sent
step:
    ctrl.bge r4, r7, done
    ctrl.sub r6, 1, r5                 # buffer being received
    cc.send passing[:, r5, :], peer=r2
    cc.recv passing[:, r6, :], peer=r3
    vector.tensor_tensor acc, acc, passing[:, r6, :], op=add
    ctrl.mov r5, r6
    ctrl.add r4, r4, 1
    ctrl.jmp step
done:
    dma.copy y, acc, queue=0
