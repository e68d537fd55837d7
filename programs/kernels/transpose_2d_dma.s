# 2-D transpose y = x^T of a [512, 384] bf16 matrix by the DMA engines (DMA transpose from HBM
# into SBUF), bit-exact; trn2 and trn3 (NeuronCore-v2 has no DMA transpose).
#
# Modelled on nki.isa.dma_transpose as the NKI docs describe it (2-byte dtypes, HBM or SBUF
# source, SBUF destination); written for this project. Each output row tile b (128 rows of y =
# columns 128 b.. of x) is one DMA transpose of the [512, 128] column block of x straight into
# SBUF, then a plain store; no compute engine is involved. Column blocks alternate between
# queues 0, 1, 2 and the stores use queues 3, 4, 5, so the transposes run in parallel.
# For fp32 (or trn1) the PE array transposes instead: kernels/transpose_2d.
.target trn2
.const R = 512
.const C = 384
.const CT = C / 128

.hbm x bfloat16[R, C] input init=normal(0, 1)
.hbm y bfloat16[C, R] output

.sbuf y_sb bfloat16[128, CT, R]

    dma.transpose y_sb[:, 0, :], x[:, 0:128], queue=0
    dma.transpose y_sb[:, 1, :], x[:, 128:256], queue=1
    dma.transpose y_sb[:, 2, :], x[:, 256:384], queue=2
    dma.copy y[0:128, :], y_sb[:, 0, :], queue=3
    dma.copy y[128:256, :], y_sb[:, 1, :], queue=4
    dma.copy y[256:384, :], y_sb[:, 2, :], queue=5
