# gpsimd.local_gather: whole aligned 16-partition cores, index dtype, num_elem_per_idx,
# num_valid_indices and the dst shape they imply.
.target trn2
.sbuf x float32[128, 64]
.sbuf i16 uint16[128, 4]
.sbuf i32 int32[128, 4]
.sbuf o float32[128, 64]
#---
gpsimd.local_gather o[0:24], x[0:24], indices=i16[0:24]  # CHECK: 30: error: data spans partitions 0..23; gpsimd.local_gather works on whole GpSimd cores of 16 partitions (a multiple of 16, starting on a multiple of 16)
gpsimd.local_gather o[0:16], x[0:16], indices=i16[16:32] # CHECK: 47: error: indices spans partitions 16..31 but data spans 0..15; each GpSimd core reads and writes only its own 16 partitions
gpsimd.local_gather o, x, indices=i32                    # CHECK: 35: error: indices has dtype int32; gpsimd.local_gather accepts uint16
gpsimd.local_gather o, x, indices=i16, num_elem_per_idx=3 # CHECK: 57: error: num_elem_per_idx must be 1, 2, 4, 8, 16 or 32, not 3
gpsimd.local_gather o, x, indices=i16, num_valid_indices=65 # CHECK: 58: error: num_valid_indices=65 exceeds the 64 indices of each core (16 partitions x 4 elements of indices)
gpsimd.local_gather o, x, indices=i16, num_elem_per_idx=2 # CHECK: 21: error: dst must have 64 x 2 = 128 elements per partition (num_valid_indices x num_elem_per_idx), not 64
