# Causal single-head attention O = softmax(Q K^T / sqrt(D) + causal mask) V for 1024 tokens x
# head dim 128 (bf16 in, fp32 out), flash-attention style: an online softmax over key blocks,
# never forming the 1024 x 1024 score matrix.
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
#   GpSimd   the masks and the identity
#   DMA      the inputs in halves on four queues (the first query tiles start on the first
#            halves), each output tile in halves on queues 4 and 5
# The loop is a four-stage software pipeline over interleaved pairs of query tiles (below):
# each engine always has work of an independent block queued while a block waits on its chain
# of latencies (PSUM, ScalarE, PE transposes).
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
.sbuf m_run float32[128, 4, 2]           # running max [i mod 4, block mod 2]
.sbuf l_run float32[128, 4]              # running row sum [i mod 4]
.sbuf o_acc float32[128, 4, D]           # running output [i mod 4]
.sbuf bmax float32[128, 2]               # block row max [block slot]
.sbuf ncm float32[128, 2]                # -c m_new [block slot]
.sbuf lblk float32[128, 2]               # block row sum [block slot]
.sbuf alpha float32[128, 2]              # exp(c m_old - c m_new) [block slot]
.sbuf rinv float32[128, 4]               # 1 / l [i mod 4]
.sbuf o_sb float32[128, 4, D]            # normalised output tile [i mod 4]
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

    # A four-stage software pipeline over a list of (query tile, key block) pairs that
    # interleaves the two tiles of each pair (2p, 2p + 1), which have the same blocks:
    # (0, 0) (1, 0) (2, 0) (3, 0) (4, 0) (5, 0) (4, 1) (5, 1) (6, 0) (7, 0) (6, 1) (7, 1).
    # Stage S of a block: its scores (and mask) on TensorE; A: statistics and P; B: P^T and
    # P V; C: the running sum and output update (and, after a tile's last block, o / l and the
    # store). Each turn of the loop issues S of block b + 3, C of b, B of b + 1 and A of b + 2,
    # so no engine's in-order stream holds work that waits on a chain started in the same turn:
    # TensorE: scores (b + 3), P^T and P V (b + 1); VectorE: C (b), statistics (b + 2);
    # ScalarE: P^T copies (b + 1), exp (b + 2). Consecutive blocks belong to independent
    # tiles, so no stage waits on the block just before it either. A tile's running max, sum
    # and output live in slot i mod 4; per-block buffers alternate between two slots (each is
    # read, in program order, before the block two later writes it again).
    # S: r20 = i, r21 = j, r23 = slot, valid while i < QT
    # A: r60 = i, r61 = j, r63 = slot, valid if r52 = 1
    # B: r40 = i, r41 = j, r43 = slot, valid if r50 = 1
    # C: r0 = i, r1 = j, r3 = slot, valid if r51 = 1
    ctrl.mov r20, 0
    ctrl.mov r21, 0
    ctrl.mov r23, 0
    ctrl.mov r50, 0
    ctrl.mov r51, 0
    ctrl.mov r52, 0
turn:
    # ---- stage S of block (r20, r21): scores ----
    ctrl.bge r20, QT, stage_c
    ctrl.div r22, r20, 4                 # the diagonal block of query tile r20
    ctrl.bne r21, 0, scores
    # a new query tile: running max -inf (its sum and output start at block 0's, in stage C)
    ctrl.rem r26, r20, 4
    vector.memset m_run[:, r26, 1], value=-inf
scores:
    tensor.matmul s_ps[:, r23, :], q_sb[:, r20*128 : r20*128 + 128], k_sb[:, r21*KB : r21*KB + KB]
    ctrl.bne r21, r22, stage_c
    # the diagonal block: TensorE adds the mask into the scores (identity^T @ mask: exact, since
    # 1 x m and 0 x m are exact and so is s + 0) - mask i mod 4, the tile's rows within the block
    ctrl.rem r9, r20, 4
    tensor.matmul s_ps[:, r23, :], ident, mask[:, r9, :], accumulate=true
stage_c:
    # ---- stage C of block (r0, r1): l = alpha l + rowsum, o = alpha o + P V ----
    ctrl.beq r51, 0, stage_b
    ctrl.rem r6, r0, 4
    ctrl.bne r1, 0, rescale
    # block 0 of a tile: l = rowsum, o = P V (alpha is exp(-inf) = 0 and nothing came before)
    vector.tensor_copy l_run[:, r6], lblk[:, r3]
    vector.tensor_copy o_acc[:, r6, :], pv_ps[:, r3, :]
    ctrl.jmp rescaled
rescale:
    vector.scalar_tensor_tensor l_run[:, r6], l_run[:, r6], op0=multiply, operand0=alpha[:, r3], op1=add, operand1=lblk[:, r3]
    vector.scalar_tensor_tensor o_acc[:, r6, :], o_acc[:, r6, :], op0=multiply, operand0=alpha[:, r3], op1=add, operand1=pv_ps[:, r3, :]
rescaled:
    ctrl.div r2, r0, 4
    ctrl.bne r1, r2, stage_b
    # the query tile's last block: o = o_acc / l, stored
    vector.reciprocal rinv[:, r6], l_run[:, r6]
    vector.tensor_scalar o_sb[:, r6, :], o_acc[:, r6, :], op0=multiply, operand0=rinv[:, r6]
    dma.copy o[r0*128 : r0*128 + 64, :], o_sb[0:64, r6, :], queue=4
    dma.copy o[r0*128 + 64 : r0*128 + 128, :], o_sb[64:128, r6, :], queue=5
stage_b:
    # ---- stage B of block (r40, r41): P V over the chunks that are not wholly masked ----
    ctrl.beq r50, 0, stage_a
    ctrl.div r42, r40, 4
    ctrl.mov r8, 4                       # chunks: 4, or i mod 4 + 1 on the diagonal block
    ctrl.bne r41, r42, transposes
    ctrl.rem r8, r40, 4
    ctrl.add r8, r8, 1
transposes:
    ctrl.mov r7, 0
transpose:
    tensor.transpose pT_ps[:, r43, r7, :], p_sb[:, r43, r7*128 : r7*128 + 128]
    scalar.activation pT_sb[:, r43, r7, :], pT_ps[:, r43, r7, :], func=copy
    ctrl.add r7, r7, 1
    ctrl.blt r7, r8, transpose
    ctrl.mul r10, r41, 4                 # key tile of chunk 0: 4 j
    tensor.matmul pv_ps[:, r43, :], pT_sb[:, r43, 0, :], v_sb[:, r10, :]
    ctrl.mov r7, 1
chunk:
    ctrl.bge r7, r8, stage_a
    ctrl.add r10, r10, 1
    tensor.matmul pv_ps[:, r43, :], pT_sb[:, r43, r7, :], v_sb[:, r10, :], accumulate=true
    ctrl.add r7, r7, 1
    ctrl.jmp chunk
stage_a:
    # ---- stage A of block (r60, r61): statistics and P ----
    ctrl.beq r52, 0, advance
    ctrl.rem r56, r60, 4
    ctrl.rem r5, r61, 2                  # the running max after block j is m_run[:, i mod 4, j mod 2]
    ctrl.sub r4, 1, r5                   # and before it, the other one
    vector.tensor_reduce bmax[:, r63], s_ps[:, r63, :], op=maximum
    vector.tensor_tensor m_run[:, r56, r5], m_run[:, r56, r4], bmax[:, r63], op=maximum
    vector.tensor_scalar ncm[:, r63], m_run[:, r56, r5], op0=multiply, operand0=-SCALE
    scalar.activation p_sb[:, r63, :], s_ps[:, r63, :], func=exp, scale=SCALE, bias=ncm[:, r63], reduce_res=lblk[:, r63]
    scalar.activation alpha[:, r63], m_run[:, r56, r4], func=exp, scale=SCALE, bias=ncm[:, r63]
advance:
    # C <- B <- A <- S, and S <- the block after it: the pair's odd tile at the same block;
    # or the even tile at the next block; or block 0 of the next pair
    ctrl.mov r0, r40
    ctrl.mov r1, r41
    ctrl.mov r3, r43
    ctrl.mov r51, r50
    ctrl.mov r40, r60
    ctrl.mov r41, r61
    ctrl.mov r43, r63
    ctrl.mov r50, r52
    ctrl.mov r52, 0
    ctrl.bge r20, QT, next_turn
    ctrl.mov r60, r20
    ctrl.mov r61, r21
    ctrl.mov r63, r23
    ctrl.mov r52, 1
    ctrl.sub r23, 1, r23
    ctrl.rem r11, r20, 2
    ctrl.bne r11, 0, odd_tile
    ctrl.add r20, r20, 1
    ctrl.jmp next_turn
odd_tile:
    ctrl.add r21, r21, 1
    ctrl.bge r22, r21, even_again
    ctrl.mov r21, 0
    ctrl.add r20, r20, 1
    ctrl.jmp next_turn
even_again:
    ctrl.sub r20, r20, 1
next_turn:
    ctrl.bne r52, 0, turn
    ctrl.bne r50, 0, turn
    ctrl.bne r51, 0, turn
