# MX formats on trn3: float4_e2m1fn_x4 data (matmul_mx only; quantize_mx cannot produce it) and
# float8_e8m0fnu or uint8 scale tiles; the fp4 element dtype is not a storage dtype.
.target trn3
.sbuf h bfloat16[64, 32]
.sbuf f float32[64, 8]
.sbuf q4 float4_e2m1fn_x4[64, 8]
.sbuf q8 float8_e4m3fn_x4[64, 8]
.sbuf p8 float8_e4m3fn[64, 32]
.sbuf e float8_e8m0fnu[64, 8]
.sbuf s uint8[64, 8]
.sbuf b bfloat16[64, 8]
.sbuf i int8[64, 8]
.psum acc float32[8, 8]
#---
.sbuf v float4_e2m1fn[64, 32]                                # CHECK: 9: error: unknown dtype 'float4_e2m1fn'; did you mean 'float4_e2m1fn_x4'?
vector.quantize_mx q4, h, dst_scale=e                        # CHECK: 20: error: dst has dtype float4_e2m1fn_x4; vector.quantize_mx accepts float8_e4m3fn_x4, float8_e5m2_x4
vector.quantize_mx q8, h, dst_scale=b                        # CHECK: 37: error: dst_scale has dtype bfloat16; vector.quantize_mx accepts float8_e8m0fnu, uint8
tensor.matmul_mx acc, q4, q8, stationary_scale=e, moving_scale=i # CHECK: 64: error: moving_scale has dtype int8; tensor.matmul_mx accepts float8_e8m0fnu, uint8
tensor.matmul_mx acc, p8[:, 0:8], q4, stationary_scale=e, moving_scale=s # CHECK: 23: error: stationary has dtype float8_e4m3fn; tensor.matmul_mx accepts float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4
vector.tensor_copy f, q4                                     # CHECK: 23: error: vector.tensor_copy cannot use 'q4' (float4_e2m1fn_x4, four float4_e2m1fn values per element) as 'data': packed tiles are made by vector.quantize_mx (fp8 only) or loaded, read by tensor.matmul_mx, and moved unchanged by cc.all_gather, cc.all_gather_v, cc.all_to_all, cc.all_to_all_v, cc.permute, cc.recv, cc.send, cc.sendrecv, dma.compress, dma.copy, dma.decompress, gpsimd.tensor_copy, vector.tensor_copy (same dtype on both sides), and zero-filled by gpsimd.memset / vector.memset value=0
dma.copy q8, q4                                              # CHECK: 10: error: dma.copy cannot use 'q8' (float8_e4m3fn_x4, four float8_e4m3fn values per element) as 'dst': packed tiles are made by vector.quantize_mx (fp8 only) or loaded, read by tensor.matmul_mx, and moved unchanged by cc.all_gather, cc.all_gather_v, cc.all_to_all, cc.all_to_all_v, cc.permute, cc.recv, cc.send, cc.sendrecv, dma.compress, dma.copy, dma.decompress, gpsimd.tensor_copy, vector.tensor_copy (same dtype on both sides), and zero-filled by gpsimd.memset / vector.memset value=0
vector.tensor_copy b, q4                                     # CHECK: 23: error: vector.tensor_copy cannot use 'q4' (float4_e2m1fn_x4, four float4_e2m1fn values per element) as 'data': packed tiles are made by vector.quantize_mx (fp8 only) or loaded, read by tensor.matmul_mx, and moved unchanged by cc.all_gather, cc.all_gather_v, cc.all_to_all, cc.all_to_all_v, cc.permute, cc.recv, cc.send, cc.sendrecv, dma.compress, dma.copy, dma.decompress, gpsimd.tensor_copy, vector.tensor_copy (same dtype on both sides), and zero-filled by gpsimd.memset / vector.memset value=0
tensor.matmul_mx acc, q4, q8, stationary_scale=e[0:8, :], moving_scale=s # CHECK: 48: error: stationary_scale must be [64, 8], or [at least 36, 8] starting 0, 4, 8 or 12 partitions into a quadrant (one scale per 8 partitions of stationary), not [8, 8] at partition 0
vector.memset q8, value=1.0                                  # CHECK: 15: error: vector.memset fills the packed tile 'q8' (float8_e4m3fn_x4) only with value=0 (all bits zero, as nki.isa.memset documents), not 1.0
gpsimd.memset q4, value=-0.0                                 # CHECK: 15: error: gpsimd.memset fills the packed tile 'q4' (float4_e2m1fn_x4) only with value=0 (all bits zero, as nki.isa.memset documents), not -0.0
