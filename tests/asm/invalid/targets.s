# Dtypes and instruction operands a target does not have.
.target trn3
.sbuf t float32[128, 512]
#---
.sbuf e3 float8_e3m4[128, 512]               # CHECK: 10: error: dtype float8_e3m4 is not available on trn3 (NeuronCore-v4)
