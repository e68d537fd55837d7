# The MX dtypes exist on trn3 (NeuronCore-v4) only.
.target trn2
.sbuf h bfloat16[64, 32]
#---
.sbuf q4 float4_e2m1fn_x4[64, 8]                             # CHECK: 10: error: dtype float4_e2m1fn_x4 is not available on trn2 (NeuronCore-v3)
.sbuf e float8_e8m0fnu[64, 8]                                # CHECK: 9: error: dtype float8_e8m0fnu is not available on trn2 (NeuronCore-v3)
.hbm w float4_e2m1fn_x4[128, 128] input                      # CHECK: 8: error: dtype float4_e2m1fn_x4 is not available on trn2 (NeuronCore-v3)
