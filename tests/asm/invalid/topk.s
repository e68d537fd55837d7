# gpsimd.topk: bf16 source and values, uint32 indices, whole aligned 16-partition cores, the
# range of n, the snake columns n needs and K <= n.
.target trn2
.sbuf x bfloat16[128, 64]
.sbuf xf float32[128, 64]
.sbuf v bfloat16[128, 64]
.sbuf i uint32[128, 64]
.sbuf i32 int32[128, 64]
#---
gpsimd.topk v, i, xf, n=64                      # CHECK: 19: error: src has dtype float32; gpsimd.topk accepts bfloat16
gpsimd.topk v, i32, x, n=64                     # CHECK: 16: error: idx_dst has dtype int32; gpsimd.topk accepts uint32
gpsimd.topk v, i, x, n=7                        # CHECK: 24: error: gpsimd.topk argument 'n' must be in the range [8, 65535], got 7
gpsimd.topk v[0:24], i[0:24], x[0:24], n=64     # CHECK: 31: error: src spans partitions 0..23; gpsimd.topk works on whole GpSimd cores of 16 partitions (a multiple of 16, starting on a multiple of 16)
gpsimd.topk v[0:16], i[16:32], x[16:32], n=64   # CHECK: 13: error: val_dst spans partitions 0..15 but src spans 16..31; each GpSimd core writes its results to its own 16 partitions
gpsimd.topk v, i, x[:, 0:62], n=1000            # CHECK: 19: error: src has 62 elements per partition; n=1000 needs ceil(1000 / 16) = 63 (the columns of each core's snake)
gpsimd.topk v, i, x, n=40                       # CHECK: 13: error: val_dst asks for the 64 largest (its elements per partition) of n=40 elements; K must be at most n
