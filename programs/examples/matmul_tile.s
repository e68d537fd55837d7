# Single-tile matmul: result[128, 512] = lhsT[128, 128]^T @ rhs[128, 512] in bf16, fp32 in PSUM.
# lhsT is A stored transposed ([K, M]): the stationary operand's free axis becomes the output's
# partitions, the moving operand's free axis the output's free axis.
.hbm lhsT bfloat16[128, 128] input
.hbm rhs bfloat16[128, 512] input
.hbm result float32[128, 512] output

.sbuf lhsT_sb bfloat16[128, 128]
.sbuf rhs_sb bfloat16[128, 512]
.sbuf out_sb float32[128, 512]
.psum acc float32[128, 512]             # 512 fp32 = exactly one 2 KiB PSUM bank

    dma.copy lhsT_sb, lhsT, queue=0
    dma.copy rhs_sb, rhs, queue=1
    tensor.matmul acc, lhsT_sb, rhs_sb, accumulate=false
    vector.tensor_copy out_sb, acc       # evacuate PSUM through the Vector engine
    dma.copy result, out_sb, queue=0
