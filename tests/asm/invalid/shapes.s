# Shape and dtype rules from the instruction tables.
.target trn2
.sbuf t float32[128, 512]
.sbuf half float32[128, 256]
.sbuf small float32[64, 512]
.sbuf bf bfloat16[128, 512]
.sbuf wide bfloat16[128, 1024]
.sbuf stats float32[128, 6]
.sbuf col float32[128, 1]
.sbuf i8 int8[128, 128]
.psum acc float32[128, 512]
.psum acc2 float32[128, 512]
.psum accbf bfloat16[128, 512]
.psum accw float32[128, 1024]
.sbuf e4fn float8_e4m3fn[128, 512]
#---
vector.tensor_tensor t, t, half, op=add      # CHECK: 28: error: shape mismatch: data2 is [128, 256] but dst is [128, 512]
vector.tensor_tensor t, acc, acc2, op=add    # CHECK: 30: error: data1 and data2 are both in PSUM
tensor.matmul acc, bf[:, 0:128], wide, accumulate=false   # CHECK: 34: error: moving has 1024 elements per partition; tensor.matmul allows at most 512 with a float32 dst on trn2
tensor.matmul acc, bf, bf, accumulate=false  # CHECK: 20: error: stationary has 512 elements per partition; tensor.matmul allows at most 128
tensor.matmul acc, bf[0:64, 0:128], bf, accumulate=false   # CHECK: 37: error: partition mismatch: moving spans 128 partitions but stationary spans 64
tensor.matmul acc, t[:, 0:128], bf, accumulate=false   # CHECK: 33: error: stationary is float32 and moving is bfloat16
tensor.matmul accbf, bf[:, 0:128], bf, accumulate=false   # CHECK: 15: error: matmul writes float32 into PSUM on trn2; dst is bfloat16
tensor.matmul acc[:, 0:256], bf[:, 0:128], bf, accumulate=false   # CHECK: 15: error: matmul output must be [M, N] = [128, 512]
tensor.matmul acc, i8[:, 0:128], bf, accumulate=false   # CHECK: 20: error: stationary has dtype int8; tensor.matmul accepts
vector.bn_stats stats, wide                  # CHECK: 24: error: data has 1024 elements per partition; vector.bn_stats allows at most 512
vector.bn_stats col, t                       # CHECK: 17: error: dst must have exactly 6 elements per partition, not 1
vector.bn_aggr col, stats                    # CHECK: 16: error: dst must have exactly 2 elements per partition, not 1
scalar.activation t, t, func=exp, bias=half  # CHECK: 40: error: bias must be an immediate or a [P, 1] column tile, not [128, 256]
vector.tensor_reduce half[:, 0:3], t, op=add   # CHECK: 22: error: dst has 3 elements per partition, which does not divide data's 512
tensor.transpose acc[:, 0:64], t[:, 0:128]   # CHECK: 18: error: dst must be [128, 128] (the transpose of data [128, 128]), not [128, 64]
vector.tensor_copy small, t                  # CHECK: 27: error: shape mismatch: data is [128, 512] but dst is [64, 512]
tensor.matmul accw[:, 256:768], bf[:, 0:128], bf, accumulate=false   # CHECK: 15: error: dst bytes 7168..9215 of each partition cross a PSUM bank boundary
tensor.matmul acc, bf[:, 0:128], e4fn, accumulate=false   # CHECK: 34: error: moving has dtype float8_e4m3fn; tensor.matmul accepts float32, tfloat32, bfloat16, float16, float8_e4m3, float8_e5m2, float8_e3m4 on trn2
