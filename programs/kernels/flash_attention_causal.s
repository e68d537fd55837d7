# Causal single-head attention O = softmax(Q K^T / sqrt(D) + causal mask) V for Q, K, V of
# 1024 tokens x head dim 128 in bf16, fp32 out, computed flash-attention style without ever
# forming the full 1024 x 1024 score matrix.
#
# Modelled on the NKI flash attention forward sample (flash_fwd: online softmax over KV blocks,
# causal blocks skipped) and the FlashAttention paper (Dao et al. 2022, Algorithm 1); written
# for this project. Layout as the sample takes it: q and k arrive transposed, [D, S] (head dim on
# partitions: D is the contraction of Q K^T), v as [S, D] (keys on partitions: the contraction
# of P V). Per 128-row query tile i and 512-key block j <= i / 4 (blocks above the diagonal are
# skipped; the diagonal block is the last one, its keys past the query are masked):
#   TensorE  s = q_i^T k_j -> PSUM [128, 512] (bf16 x bf16, fp32 accumulation); P^T by PE
#            transposes (128-key chunks); o_blk = P V accumulated over the chunks in PSUM
#            the diagonal block's causal mask, an additive 0 / -3e38 tile (one of four
#            precomputed by GpSimd affine_select, by the query tile's place in the block), is
#            added to its scores in PSUM by one more accumulating matmul, identity^T @ mask
#   VectorE  block row max, the running max, -c m, l = alpha l + rowsum, o = alpha o + o_blk,
#            finally o / l
#   ScalarE  P = exp(c s - c m) to bf16 with its fp32 row sum in the same instruction,
#            alpha = exp(c m_old - c m_new), the P^T copies out of PSUM (c = 1 / sqrt(D))
#   GpSimd   the masks and the identity, and zeroing each query tile's accumulators
#   DMA      the inputs in halves on four queues (the first query tiles start on the first
#            halves), each output tile on queue 4
# Score/P/P^T buffers have two slots (alternating per block) and the loop is software
# pipelined (below), so block j + 1's scores and softmax run while block j's P V does; the
# running statistics have a slot per query tile parity, so tile i + 1 starts while tile i is
# normalised and stored.
.const S = 1024
.const D = 128
.const KB = 512                          # keys per block (one PSUM bank of fp32 scores)
.const QT = S / 128                      # query tiles
.const SCALE = 0.08838834764831845       # 1 / sqrt(D), rounded to fp32 by the assembler
.const MASKED = -3.0e38

.hbm q bfloat16[D, S] input init=normal(0, 1)
.hbm k bfloat16[D, S] input init=normal(0, 1)
.hbm v bfloat16[S, D] input init=normal(0, 1)
.hbm o float32[S, D] output

.sbuf q_sb bfloat16[D, S]
.sbuf k_sb bfloat16[D, S]
.sbuf v_sb bfloat16[128, S / 128, D]     # key tile t on partitions: v[128 t + p, :]
.sbuf zero bfloat16[128, KB]
.sbuf ident bfloat16[128, 128]
.sbuf mask bfloat16[128, 4, KB]          # mask[p, r, c] = 0 if 128 r + p >= c else MASKED
.sbuf p_sb bfloat16[128, 2, KB]          # P = exp(c s - c m), two slots
.sbuf pT_sb bfloat16[128, 2, 4, 128]     # P^T per 128-key chunk, two slots
.sbuf m_run float32[128, 2, 2]           # running max [query parity, old/new]
.sbuf l_run float32[128, 2]              # running row sum [query parity]
.sbuf o_acc float32[128, 2, D]           # running output [query parity]
.sbuf bmax float32[128, 2]               # block row max [block slot]
.sbuf ncm float32[128, 2]                # -c m_new [block slot]
.sbuf lblk float32[128, 2]               # block row sum [block slot]
.sbuf alpha float32[128, 2]              # exp(c m_old - c m_new) [block slot]
.sbuf rinv float32[128, 2]               # 1 / l [query parity]
.sbuf o_sb float32[128, 2, D]            # normalised output tile [query parity]
.psum s_ps float32[128, 2, KB]           # scores, two banks
.psum pT_ps float32[128, 2, 4, 128]      # P^T chunks, two banks
.psum pv_ps float32[128, 2, D]           # P V of one block, two slots

    # inputs: first halves first, so query tiles 0..3 (which need only keys 0..511) start early
    dma.copy q_sb[:, 0:512], q[:, 0:512], queue=0
    dma.copy k_sb[:, 0:512], k[:, 0:512], queue=1
    dma.copy q_sb[:, 512:1024], q[:, 512:1024], queue=0
    dma.copy k_sb[:, 512:1024], k[:, 512:1024], queue=1
    ctrl.mov r0, 0
load_v:
    dma.copy v_sb[:, r0, :], v[r0*128 : r0*128 + 128, :], queue=2
    ctrl.add r0, r0, 1
    dma.copy v_sb[:, r0, :], v[r0*128 : r0*128 + 128, :], queue=3
    ctrl.add r0, r0, 1
    ctrl.blt r0, S / 128, load_v
    # the four diagonal masks: query tile i sits at rows 128 (i mod 4) .. of its diagonal block
    gpsimd.memset zero, value=0.0
    gpsimd.memset ident, value=1.0
    gpsimd.affine_select ident, ident, cmp_op=equal, on_false_value=0.0, offset=0, channel_multiplier=1, step=-1
    gpsimd.affine_select mask[:, 0, :], zero, cmp_op=greater_equal, on_false_value=MASKED, offset=0, channel_multiplier=1, step=-1
    gpsimd.affine_select mask[:, 1, :], zero, cmp_op=greater_equal, on_false_value=MASKED, offset=128, channel_multiplier=1, step=-1
    gpsimd.affine_select mask[:, 2, :], zero, cmp_op=greater_equal, on_false_value=MASKED, offset=256, channel_multiplier=1, step=-1
    gpsimd.affine_select mask[:, 3, :], zero, cmp_op=greater_equal, on_false_value=MASKED, offset=384, channel_multiplier=1, step=-1

    # Software pipeline over the flattened list of (query tile, key block) pairs: each turn of
    # the loop issues stage A (scores, statistics, P) of the next block before stage B (P V and
    # the output update) of the current one, so every engine's in-order stream has the next
    # block's work queued while the current block waits on its chain of latencies.
    # next block: r20 = i, r21 = j, r23 = block slot, r26 = query parity
    # current block: r0 = i, r1 = j, r3 = block slot, r6 = query parity; r30 = 1: none yet
    ctrl.mov r20, 0
    ctrl.mov r21, 0
    ctrl.mov r23, 0
    ctrl.mov r26, 0
    ctrl.mov r30, 1
pipeline:
    ctrl.bge r20, QT, stage_b
    # ---- stage A of block (r20, r21) ----
    ctrl.div r22, r20, 4                 # the diagonal block of query tile r20
    ctrl.bne r21, 0, stage_a
    # a new query tile: running max -inf, sum 0, output 0 (in its parity's slots)
    ctrl.mov r4, 0                       # m_run[:, r26, r4] holds the running max
    vector.memset m_run[:, r26, 0], value=-inf
    gpsimd.memset l_run[:, r26], value=0.0
    gpsimd.memset o_acc[:, r26, :], value=0.0
stage_a:
    ctrl.sub r5, 1, r4                   # slot of the new running max
    tensor.matmul s_ps[:, r23, :], q_sb[:, r20*128 : r20*128 + 128], k_sb[:, r21*KB : r21*KB + KB]
    ctrl.bne r21, r22, softmax
    # the diagonal block: TensorE adds the mask into the scores (identity^T @ mask: exact, since
    # 1 x m and 0 x m are exact and so is s + 0) - mask i mod 4, the tile's rows within the block
    ctrl.rem r9, r20, 4
    tensor.matmul s_ps[:, r23, :], ident, mask[:, r9, :], accumulate=true
softmax:
    vector.tensor_reduce bmax[:, r23], s_ps[:, r23, :], op=maximum
    vector.tensor_tensor m_run[:, r26, r5], m_run[:, r26, r4], bmax[:, r23], op=maximum
    vector.tensor_scalar ncm[:, r23], m_run[:, r26, r5], op0=multiply, operand0=-SCALE
    scalar.activation p_sb[:, r23, :], s_ps[:, r23, :], func=exp, scale=SCALE, bias=ncm[:, r23], reduce_res=lblk[:, r23]
rescale:
    scalar.activation alpha[:, r23], m_run[:, r26, r4], func=exp, scale=SCALE, bias=ncm[:, r23]
    vector.scalar_tensor_tensor l_run[:, r26], l_run[:, r26], op0=multiply, operand0=alpha[:, r23], op1=add, operand1=lblk[:, r23]
    ctrl.mov r4, r5
stage_b:
    ctrl.bne r30, 0, advance
    # ---- stage B of block (r0, r1): P V over the chunks that are not wholly masked ----
    ctrl.div r2, r0, 4
    ctrl.mov r8, 4                       # chunks: 4, or i mod 4 + 1 on the diagonal block
    ctrl.bne r1, r2, transposes
    ctrl.rem r8, r0, 4
    ctrl.add r8, r8, 1
transposes:
    ctrl.mov r7, 0
transpose:
    tensor.transpose pT_ps[:, r3, r7, :], p_sb[:, r3, r7*128 : r7*128 + 128]
    scalar.activation pT_sb[:, r3, r7, :], pT_ps[:, r3, r7, :], func=copy
    ctrl.add r7, r7, 1
    ctrl.blt r7, r8, transpose
    ctrl.mul r10, r1, 4                  # key tile of chunk 0: 4 j
    tensor.matmul pv_ps[:, r3, :], pT_sb[:, r3, 0, :], v_sb[:, r10, :]
    ctrl.mov r7, 1
chunk:
    ctrl.bge r7, r8, chunks_done
    ctrl.add r10, r10, 1
    tensor.matmul pv_ps[:, r3, :], pT_sb[:, r3, r7, :], v_sb[:, r10, :], accumulate=true
    ctrl.add r7, r7, 1
    ctrl.jmp chunk
chunks_done:
    vector.scalar_tensor_tensor o_acc[:, r6, :], o_acc[:, r6, :], op0=multiply, operand0=alpha[:, r3], op1=add, operand1=pv_ps[:, r3, :]
    ctrl.bne r1, r2, advance
    # the query tile's last block: o = o_acc / l, stored
    vector.reciprocal rinv[:, r6], l_run[:, r6]
    vector.tensor_scalar o_sb[:, r6, :], o_acc[:, r6, :], op0=multiply, operand0=rinv[:, r6]
    dma.copy o[r0*128 : r0*128 + 128, :], o_sb[:, r6, :], queue=4
advance:
    ctrl.bge r20, QT, done
    ctrl.mov r0, r20
    ctrl.mov r1, r21
    ctrl.mov r3, r23
    ctrl.mov r6, r26
    ctrl.mov r30, 0
    # the block after it: the next key block, or key block 0 of the next query tile
    ctrl.add r21, r21, 1
    ctrl.sub r23, 1, r23
    ctrl.bge r22, r21, pipeline
    ctrl.mov r21, 0
    ctrl.add r20, r20, 1
    ctrl.sub r26, 1, r26
    ctrl.jmp pipeline
done:
