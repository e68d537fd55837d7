# Lab 1 starter: c = a + b for fp32 [128, N]. It loads both inputs whole, adds, stores.
# Correct for N = 4096 -- but the grader also tries N it did not show you, and one of them does
# not fit in SBUF. Read docs/labs/01-vector-add.md, then make it tile.
# The grader rewrites the value of N (keep the line `.const N = ...`).
.const N = 4096
.hbm a float32[128, N] input
.hbm b float32[128, N] input
.hbm c float32[128, N] output

.sbuf a_tile float32[128, N]
.sbuf b_tile float32[128, N]

    dma.copy a_tile, a, queue=0
    dma.copy b_tile, b, queue=1
    vector.tensor_tensor a_tile, a_tile, b_tile, op=add
    dma.copy c, a_tile, queue=2
