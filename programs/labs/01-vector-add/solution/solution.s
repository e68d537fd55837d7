# Lab 1 reference: c = a + b for fp32 [128, N], N >= TILE, any N (not only multiples of TILE).
# Tiles of TILE columns (4 KiB per partition, near the top of the DMA efficiency curve) go
# through two SBUF buffer pairs, so the loads of tile i + 1 overlap the add and store of tile i;
# loads and stores use different DMA queues. A ragged end is covered by one last tile that ends
# at column N and overlaps the previous one: recomputing a few columns of an elementwise op is
# harmless, and every slice keeps its constant size.
.const N = 4096
.const TILE = 1024
.const FULL = N / TILE                 # whole tiles
.hbm a float32[128, N] input
.hbm b float32[128, N] input
.hbm c float32[128, N] output

.sbuf a_tile float32[128, 2, TILE]     # [partition, buffer, column]
.sbuf b_tile float32[128, 2, TILE]

    ctrl.mov r0, 0                     # tile index
    ctrl.mov r1, 0                     # its first column
    ctrl.mov r2, 0                     # buffer (0, 1)
tile:
    dma.copy a_tile[:, r2, :], a[:, r1 : r1 + TILE], queue=0
    dma.copy b_tile[:, r2, :], b[:, r1 : r1 + TILE], queue=1
    vector.tensor_tensor a_tile[:, r2, :], a_tile[:, r2, :], b_tile[:, r2, :], op=add
    dma.copy c[:, r1 : r1 + TILE], a_tile[:, r2, :], queue=2
    ctrl.add r0, r0, 1
    ctrl.mul r1, r0, TILE
    ctrl.sub r2, 1, r2
    ctrl.blt r0, FULL, tile
    ctrl.beq r1, N, done               # N a multiple of TILE: nothing left
    ctrl.mov r1, N - TILE              # the ragged end: one tile ending at column N
    ctrl.mov r3, FULL + 1
    ctrl.blt r0, r3, tile
done:
