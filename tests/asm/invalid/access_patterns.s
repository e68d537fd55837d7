# Raw access-pattern operands ap(NAME, [[step, count], ...], offset, dtype): every illegal case.
.hbm a float32[128, 512] input
.hbm w bfloat16[128, 512] input compressed
.hbm o float32[128, 512] output
.sbuf t float32[128, 512]
.sbuf u float32[128, 64]
.sbuf odd bfloat16[128, 3]
.psum p float32[128, 512]
#---
vector.tensor_copy u, ap(t, [[256, 128], [1, 64]])                        # CHECK: 30: error: the partition step of SBUF buffer 't' must be 512 (one partition: its row of 512 float32 elements) or 0 (broadcast, DMA sources only), got 256
vector.tensor_copy u, ap(t, [[0, 128], [1, 64]])                          # CHECK: 30: error: partition step 0 (broadcast) is not allowed for vector.tensor_copy argument 'data': only DMA sources broadcast a row to every partition (docs/dma.md "Partition broadcast")
vector.tensor_copy u, ap(t, [[512, 128], [1, 64]], 500)                   # CHECK: 23: error: the pattern reaches element 563 of a partition of 't', which holds 512 float32 elements per partition (offset 500 starts at element 500 of partition 0)
vector.tensor_copy u, ap(t, [[512, 128], [1, 64]], 512)                   # CHECK: 23: error: the pattern reaches partition 128 of 't', which has 128 (offset 512 starts at partition 1, element 0)
dma.copy t, ap(a, [[512, 128], [1, 512]], 1)                              # CHECK: 13: error: the pattern reaches element 65536 of 'a', which holds 65536 float32 elements (offset 1 + partitions 65024 + free 511)
dma.copy t, ap(a, [[-1, 128], [1, 512]])                                  # CHECK: 21: error: a step must be >= 0 (negative steps are not supported), got -1
dma.copy t, ap(a, [[512, 128], [1, 0]])                                   # CHECK: 36: error: a count must be >= 1, got 0
dma.copy t, ap(a, [[512, 128], [1, 2], [2, 2], [4, 2], [8, 2], [16, 16]]) # CHECK: 19: error: the pattern has 5 free dims; at most 4 (plus the partition pair)
dma.copy t, ap(a[0:128, :], [[512, 128], [1, 512]])                       # CHECK: 16: error: the first argument of ap is a declared buffer's name (the pattern addresses the whole buffer), not a slice; usage: ap(NAME, [[partition_step, partitions], [step, count], ...], offset, dtype)
dma.copy t, ap(b, [[512, 128], [1, 512]])                                 # CHECK: 16: error: unknown tile 'b'
dma.copy t, ap(a, [[512, 128], [1, 512]], 0, float99)                     # CHECK: 46: error: the fourth argument of ap is a dtype (a view of the bytes as that type), e.g. int32; got 'float99'
dma.copy u, ap(odd, [[1, 128], [1, 1]], 0, float32)                       # CHECK: 44: error: a partition of 'odd' holds 6 bytes (bfloat16), not a whole number of float32 elements (4 bytes each)
vector.tensor_copy ap(u, [[64, 128], [1, 8], [4, 8]]), t[:, 0:64]         # CHECK: 26: error: vector.tensor_copy argument 'dst' is written, but its pattern names some elements more than once (steps [1, 4], counts [8, 8]); a destination's elements must be distinct
dma.copy ap(o, [[256, 128], [1, 512]]), t                                 # CHECK: 16: error: dma.copy argument 'dst' is written, but its pattern names some elements more than once (steps [256, 1], counts [128, 512]); a destination's elements must be distinct
dma.decompress t[:, 0:64], ap(w, [[512, 128], [1, 64]])                   # CHECK: 31: error: 'w' is stored compressed: its bytes are blocks, not elements, so it has no access pattern (slice whole blocks instead)
vector.tensor_copy u, ap(a, [[512, 128], [1, 64]])                        # CHECK: 23: error: vector.tensor_copy argument 'data' must be in SBUF or PSUM, but 'a' is in HBM
dma.copy t, ap(a)                                                         # CHECK: 13: error: ap takes 2 to 4 arguments, got 1; usage: ap(NAME, [[partition_step, partitions], [step, count], ...], offset, dtype)
dma.copy t, ap(a, [[512, 128], [1, 512]], 0, float32, 1)                  # CHECK: 13: error: ap takes 2 to 4 arguments, got 5; usage: ap(NAME, [[partition_step, partitions], [step, count], ...], offset, dtype)
dma.copy t, ap(a, 512)                                                    # CHECK: 19: error: the pattern is a list of [step, count] pairs, partitions first, e.g. [[512, 128], [1, 512]]; usage: ap(NAME, [[partition_step, partitions], [step, count], ...], offset, dtype)
