# Raw access-pattern operands ap(NAME, [[step, count], ...], offset, dtype): every illegal case.
.hbm a float32[128, 512] input
.hbm w bfloat16[128, 512] input compressed
.hbm o float32[128, 512] output
.sbuf t float32[128, 512]
.sbuf u float32[128, 64]
.sbuf odd bfloat16[128, 3]
.psum p float32[128, 512]
#---
dma.copy t, ap(a, [[512, 128], [1, 512, 3]])                       # CHECK: 32: error: the pattern is a list of [step, count] pairs, partitions first, e.g. [[512, 128], [1, 512]]; this item is not a [step, count] pair
dma.copy t, ap(a, [[512, 128], [1, 512]], -4)                      # CHECK: 43: error: the ap offset must be >= 0 (an element of 'a'), got -4
dma.copy t, ap(a, [[512, 128], [1, 512]], 0, 4)                    # CHECK: 46: error: the fourth argument of ap is a dtype (a view of the bytes as that type), e.g. int32; got an expression
vector.tensor_copy u, ap(p, [[512, 128], [1, 64]], r1*8 + r2 + r3) # CHECK: 52: error: at most 2 registers may offset one tile
dma.copy t, ap(a, [[0, 128], [1, 512]], 127*512+1)                 # CHECK: 13: error: the pattern reaches element 65536 of 'a', which holds 65536 float32 elements (offset 65025 + partitions 0 + free 511)
dma.copy t, ap(a, [[512, 64], [1, 512]], 65*512)                   # CHECK: 13: error: the pattern reaches element 66047 of 'a', which holds 65536 float32 elements (offset 33280 + partitions 32256 + free 511)
