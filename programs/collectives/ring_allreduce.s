# Ring all-reduce written out with cc.send / cc.recv, next to the built-in cc.all_reduce.
# Written for 16 ranks: the .topology below (a trn2.48xlarge) runs it without flags.
.topology trn2.48xlarge
# Every rank holds x (128 x 4096 fp32, 2 MiB) split into 16 chunks of 256 columns. Reduce-scatter:
# in step s rank r sends chunk (r - 1 - s) mod n to its right neighbour and adds the chunk its left
# neighbour sends into its own; after n - 1 steps rank r holds the complete sum of chunk r.
# All-gather: in step s rank r forwards chunk (r - s) mod n, the receiver stores it. 2 (n - 1)
# steps, each moving 1/n of the data: the textbook ring. y holds this result, z the built-in's
# (which walks the topology's ring of neighbours, so its reduction order, and the last bits of
# its sums, can differ).
.target trn2
.hbm x float32[128, 4096] input init=normal(0, 1)
.hbm y float32[128, 4096] output
.hbm z float32[128, 4096] output
.sbuf acc float32[128, 16, 256]
.sbuf incoming float32[128, 256]

    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1            # right neighbour (r + 1) mod n
    ctrl.add r3, r0, r1
    ctrl.sub r3, r3, 1
    ctrl.rem r3, r3, r1            # left neighbour (r - 1) mod n
    ctrl.sub r7, r1, 1             # n - 1 steps per phase
    dma.copy acc, x[:, :], queue=0

    ctrl.mov r4, 0                 # s
reduce_scatter:
    ctrl.bge r4, r7, gather        # (a one-rank world has nothing to exchange)
    ctrl.sub r5, r0, r4
    ctrl.sub r5, r5, 1
    ctrl.rem r5, r5, r1            # chunk sent: (r - 1 - s) mod n
    ctrl.sub r6, r5, 1
    ctrl.rem r6, r6, r1            # chunk received: (r - 2 - s) mod n
    cc.send acc[:, r5, :], peer=r2
    cc.recv incoming, peer=r3
    vector.tensor_tensor acc[:, r6, :], acc[:, r6, :], incoming, op=add
    ctrl.add r4, r4, 1
    ctrl.jmp reduce_scatter

gather:
    ctrl.mov r4, 0
all_gather:
    ctrl.bge r4, r7, done
    ctrl.sub r5, r0, r4
    ctrl.rem r5, r5, r1            # chunk sent: (r - s) mod n
    ctrl.sub r6, r5, 1
    ctrl.rem r6, r6, r1            # chunk received: (r - 1 - s) mod n
    cc.send acc[:, r5, :], peer=r2
    cc.recv acc[:, r6, :], peer=r3
    ctrl.add r4, r4, 1
    ctrl.jmp all_gather

done:
    dma.copy y[:, :], acc, queue=1
    cc.all_reduce z, x, op=add, algorithm=ring
