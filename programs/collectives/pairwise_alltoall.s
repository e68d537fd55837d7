# All-to-all as n - 1 pairwise exchanges with cc.send / cc.recv, next to the built-in
# cc.all_to_all, on the 16 ranks of a trn2.48xlarge (the .topology below; --topology overrides).
.topology trn2.48xlarge
# x (128 x 16*64 fp32) holds one 64-column block per destination rank. In round k rank r sends
# its block for rank (r + k) mod n and receives rank (r - k) mod n's block for it, so every pair
# exchanges exactly once and no rank waits on two senders at a time. Block j of y on rank r is
# block r of x on rank j; z is the built-in's result, bit for bit the same.
.target trn2
.hbm x float32[128, 1024] input init=normal(0, 1)
.hbm y float32[128, 1024] output
.hbm z float32[128, 1024] output

    ctrl.rank r0
    ctrl.world r1
    dma.copy y[:, r0*64 : r0*64 + 64], x[:, r0*64 : r0*64 + 64], queue=0   # own block

    ctrl.mov r4, 1                 # k
round:
    ctrl.bge r4, r1, done
    ctrl.add r2, r0, r4
    ctrl.rem r2, r2, r1            # send to (r + k) mod n
    ctrl.sub r3, r0, r4
    ctrl.rem r3, r3, r1            # receive from (r - k) mod n
    cc.send x[:, r2*64 : r2*64 + 64], peer=r2
    cc.recv y[:, r3*64 : r3*64 + 64], peer=r3
    ctrl.add r4, r4, 1
    ctrl.jmp round

done:
    cc.all_to_all z, x, dim=1
