# DMA instructions: queues, descriptors, compressed tensors, transposes, indirect transfers.
.target trn1
.hbm a float32[128, 512] input
.hbm w bfloat16[128, 512] input compressed
.sbuf t float32[128, 512]
.sbuf h bfloat16[128, 512]
.sbuf tt bfloat16[128, 64]
.sbuf idx int32[128, 1]
.sbuf fidx float32[128, 1]
#---
dma.copy t, a, queue=16                      # CHECK: 22: error: dma.copy argument 'queue' must be in the range [0, 15], got 16
dma.copy t, a, dge=hw                        # CHECK: 20: error: dge=hw needs the hardware descriptor generator, which trn1 does not have (trn2 and later); use dge=static
dma.copy t, w                                # CHECK: 13: error: 'w' is stored compressed, so dma.copy cannot use it as 'src'; only dma.decompress reads a compressed tensor and only dma.compress writes one
dma.compress a, t                            # CHECK: 14: error: dma.compress writes compressed data, but 'a' is not declared compressed (add 'compressed' after its role in .hbm); use dma.copy for plain tensors
dma.decompress t, a                          # CHECK: 19: error: dma.decompress reads compressed data, but 'a' is not declared compressed (add 'compressed' after its role in .hbm); use dma.copy for plain tensors
dma.decompress t[:, 0:100], w[:, 0:100]      # CHECK: 34: error: columns 0:100 of compressed 'w' cut a block: a tile covers whole blocks of 64 elements (start a multiple of 64, stop a multiple of 64 or the row end 512)
dma.decompress t[:, 0:64], w[:, 0:128:2]     # CHECK: 33: error: tiles of compressed 'w' take unstrided slices (start:stop) in both dims
dma.decompress t[:, 0:64], w[:, r0:r0+64]    # CHECK: 33: error: the columns of compressed 'w' must be constant (registers may offset its rows)
vector.tensor_copy t, w                      # CHECK: 23: error: 'w' is stored compressed, so vector.tensor_copy cannot use it as 'data'; only dma.decompress reads a compressed tensor and only dma.compress writes one
dma.transpose tt, h[0:64, 0:128]             # CHECK: 1: error: dma.transpose is not available on trn1 (only on trn2, trn3)
dma.gather t, a, index=t                     # CHECK: 24: error: index must be a column [P, 1] (one row number per partition), not [128, 512]
dma.scatter a, t, index=fidx                 # CHECK: 25: error: index has dtype float32; dma.scatter accepts int32, uint32
dma.accumulate t, a                          # CHECK: 1: error: dma.accumulate is not available on trn1 (only on trn3)
.hbm w3 bfloat16[4, 128, 64] input compressed # CHECK: 9: error: a compressed tensor is 2-D [rows, columns]: each row is compressed in blocks of 64 elements
.hbm w4 bfloat16[128, 64] input packed       # CHECK: 33: error: the only flag after the role is 'compressed'; usage: .hbm NAME DTYPE[dims] input|output|scratch [compressed] [init=...]
