# Operand rules of the newer instructions: bitvec operators, x4-packed MX tiles, activate2,
# double-row matmul, stream_shuffle masks, comparison/scan operators, predicate and index dtypes.
.target trn3
.sbuf f float32[64, 32]
.sbuf i int32[64, 32]
.sbuf h bfloat16[64, 32]
.sbuf q float8_e4m3fn_x4[64, 8]
.sbuf s uint8[64, 8]
.sbuf w bfloat16[128, 128]
.sbuf x bfloat16[128, 512]
.psum acc float32[128, 512]
#---
vector.tensor_tensor f, f, f, op=bitwise_xor         # CHECK: 22: error: dst has dtype float32, but bitvec operators (bitwise_and, bitwise_or, bitwise_xor, invert, left_shift, right_shift) need integer tiles
vector.tensor_scalar i, i, op0=left_shift, operand0=3, op1=add, operand1=1 # CHECK: 60: error: vector.tensor_scalar mixes bitvec and arithmetic operators (op0=left_shift, op1=add); both stages must be bitvec or both arithmetic
vector.scalar_tensor_tensor i, i, op0=bitwise_or, operand0=1.0, op1=add, operand1=i # CHECK: 39: error: vector.scalar_tensor_tensor takes arithmetic operators only; bitvec operators are for vector.tensor_tensor and vector.tensor_scalar on integer tiles
vector.tensor_copy f[:, 0:8], q                      # CHECK: 31: error: vector.tensor_copy cannot use 'q' (float8_e4m3fn_x4, four float8_e4m3fn values per element) as 'data': packed tiles are made by vector.quantize_mx (fp8 only) or loaded, read by tensor.matmul_mx, and moved unchanged by cc.all_gather, cc.all_gather_v, cc.all_to_all, cc.all_to_all_v, cc.permute, cc.recv, cc.send, cc.sendrecv, dma.compress, dma.copy, dma.decompress, gpsimd.tensor_copy, vector.tensor_copy (same dtype on both sides), and zero-filled by gpsimd.memset / vector.memset value=0
vector.quantize_mx q, h[0:16, 0:32], dst_scale=s[0:16, :] # CHECK: 23: error: src must span a multiple of 32 partitions (at most 128), not 16
vector.quantize_mx q, h, dst_scale=s[0:8, :]         # CHECK: 36: error: dst_scale must be [64, 8], or [at least 36, 8] starting 0, 4, 8 or 12 partitions into a quadrant (one scale per 8 partitions x 4 values, at row 32q + g), not [8, 8] at partition 0
scalar.activate2 f, f, func=exp, imm0=1.0, imm1=0.0, op0=add, op1=add # CHECK: 67: error: (op0, op1) = (add, add) is not one of activate2's pairs: (multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass), (bypass, bypass)
tensor.matmul acc, w, x, perf_mode=double_row        # CHECK: 20: error: perf_mode=double_row packs fp8 pairs: stationary must be an fp8 tile, not bfloat16
vector.stream_shuffle f, f, mask=[0, 1]              # CHECK: 34: error: vector.stream_shuffle argument 'mask' needs 32 integers, got 2
vector.range_select f, f, comp_op0=add, comp_op1=less, bound0=0.0, bound1=4.0 # CHECK: 36: error: comp_op0 must be a comparison: equal, not_equal, greater, greater_equal, less, less_equal
vector.tensor_scalar_cumulative f, f, op0=add, op1=divide, imm0=1.0 # CHECK: 52: error: op1 must be a scan operator: add, subtract, multiply, maximum, minimum
vector.select_reduce f, f, f, on_false=0.0           # CHECK: 25: error: predicate has dtype float32; vector.select_reduce accepts int8, uint8, int16, uint16
gpsimd.sequence_bounds f[0:1, 0:16], f[0:1, 0:16]    # CHECK: 24: error: dst must have 2 x 16 = 32 elements per partition (2 per element of segment_ids), not 16
gpsimd.n_gather f, f, indices=f                      # CHECK: 31: error: indices has dtype float32; gpsimd.n_gather accepts uint32, int32
vector.rng f                                         # CHECK: 12: error: dst has dtype float32; vector.rng accepts int8, uint8, int16, uint16, int32, uint32
