# Ring all-gather written out with cc.send / cc.recv, next to the built-in cc.all_gather.
# Written for 16 ranks: the .topology below (a trn2.48xlarge) runs it without flags.
.topology trn2.48xlarge
# Rank r contributes x (128 x 256 fp32) as block r of y (128 x 16*256). In step s it forwards
# block (r - s) mod n to its right neighbour and stores block (r - 1 - s) mod n from its left one:
# n - 1 steps of 1/n of the result each. z holds the built-in's result; both equal x of every
# rank side by side, bit for bit.
.target trn2
.hbm x float32[128, 256] input init=normal(0, 1)
.hbm y float32[128, 4096] output
.hbm z float32[128, 4096] output
.sbuf blocks float32[128, 16, 256]

    ctrl.rank r0
    ctrl.world r1
    ctrl.add r2, r0, 1
    ctrl.rem r2, r2, r1            # right neighbour
    ctrl.add r3, r0, r1
    ctrl.sub r3, r3, 1
    ctrl.rem r3, r3, r1            # left neighbour
    ctrl.sub r7, r1, 1
    dma.copy blocks[:, r0, :], x[:, :], queue=0

    ctrl.mov r4, 0                 # s
step:
    ctrl.bge r4, r7, done
    ctrl.sub r5, r0, r4
    ctrl.rem r5, r5, r1            # block sent: (r - s) mod n
    ctrl.sub r6, r5, 1
    ctrl.rem r6, r6, r1            # block received: (r - 1 - s) mod n
    cc.send blocks[:, r5, :], peer=r2
    cc.recv blocks[:, r6, :], peer=r3
    ctrl.add r4, r4, 1
    ctrl.jmp step

done:
    dma.copy y[:, :], blocks, queue=1
    cc.all_gather z, x, dim=1, algorithm=ring
