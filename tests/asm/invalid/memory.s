# Memory spaces, bounds and capacities.
.target trn1
.hbm a float32[128, 512] input
.hbm b float32[256, 512] input
.sbuf t float32[128, 512]
.sbuf small float32[64, 512]
.psum acc float32[128, 512]
#---
vector.tensor_tensor t, a, t, op=add         # CHECK: 25: error: vector.tensor_tensor argument 'data1' must be in SBUF or PSUM, but 'a' is in HBM
tensor.matmul t, t[:, 0:128], t, accumulate=false   # CHECK: 15: error: tensor.matmul argument 'dst' must be in PSUM, but 't' is in SBUF
gpsimd.tensor_copy t, acc                    # CHECK: 23: error: gpsimd.tensor_copy argument 'data' must be in SBUF, but 'acc' is in PSUM
vector.tensor_copy t[0:128, 0:600], t        # CHECK: 29: error: index range 0:600 is out of bounds for dim 1 of 't' (size 512)
vector.tensor_copy t[0:129, :], t            # CHECK: 22: error: index range 0:129 is out of bounds for dim 0 of 't' (size 128)
.sbuf huge float32[128, 49152]               # CHECK: 1: error: SBUF overflow on trn1: 'huge' needs 196608 bytes per partition
.psum big float32[128, 4096]                 # CHECK: 1: error: PSUM overflow on trn1: 'big' needs 16384 bytes per partition
.sbuf wide float32[129, 4]                   # CHECK: 12: error: 129 partitions requested; SBUF has 128
vector.tensor_copy t[r0:r0+128, :], t        # CHECK: 22: error: the partition range must be constant
vector.tensor_copy t[:, r0:r1], t            # CHECK: 25: error: a slice's size must be constant
vector.tensor_copy t[0:128:2, :], small      # CHECK: 28: error: the partition range cannot be strided
vector.tensor_copy t[:, 0:512:0], t          # CHECK: 31: error: a slice step must be a positive integer constant
vector.tensor_copy t[:, 0:512:2], t          # CHECK: 35: error: shape mismatch: data is [128, 512] but dst is [128, 256]
