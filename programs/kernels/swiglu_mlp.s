# SwiGLU feed-forward block y = (silu(x @ Wg) * (x @ Wu)) @ Wd, tokens T = 256, d_model D = 256,
# d_ff F = 768, bf16 activations and weights, fp32 accumulation in PSUM, bf16 output.
#
# Modelled on the gated MLP of the NKI LLM samples (Llama-style SwiGLU); written here from the
# math, not from their code.
#
# Layout and engines:
#   - x arrives token-major [T, D]; TensorE transposes it (128 x 128 blocks) to xT [D, T] so the
#     contraction dim d lies on partitions.
#   - For each 128-row tile of F, TensorE computes the gate and up projections transposed,
#     gT = Wg^T x^T and uT = Wu^T x^T [f-tile, T], each as 2 matmuls accumulating over the D
#     tiles in its own PSUM buffer. ScalarE evacuates the gate through silu into fp32 SBUF, then
#     VectorE multiplies it by the up projection straight from PSUM and stores hT in bf16. Gate
#     and up PSUM buffers come in pairs that alternate, so TensorE runs ahead of Scalar/Vector.
#   - Layer 2 contracts over F, which hT holds on partitions: per 128-token tile, 6 matmuls
#     (stationary hT[f-tile, t-tile], moving Wd[f-tile, :]) accumulate y[t-tile, D] in PSUM;
#     VectorE rounds it to bf16 and DMA stores it token-major.
#   - x, Wg and Wu arrive on a queue each; Wd, needed last, on two more.
.const T = 256
.const D = 256
.const F = 768
.const TT = T / 128                      # token tiles
.const DT = D / 128                      # d_model tiles (layer 1 contraction)
.const FT = F / 128                      # d_ff tiles (layer 2 contraction)

.hbm x bfloat16[T, D] input init=normal(0, 1)
.hbm wg bfloat16[D, F] input init=normal(0, 0.0625)      # ~ 1/sqrt(D)
.hbm wu bfloat16[D, F] input init=normal(0, 0.0625)
.hbm wd bfloat16[F, D] input init=normal(0, 0.036)       # ~ 1/sqrt(F)
.hbm y bfloat16[T, D] output

.sbuf x_sb bfloat16[128, TT, D]          # [token within tile, token tile, d]
.sbuf xT_sb bfloat16[128, DT, T]         # [d within tile, d tile, token]
.sbuf wg_sb bfloat16[128, DT, F]         # [d within tile, d tile, f]
.sbuf wu_sb bfloat16[128, DT, F]
.sbuf wd_sb bfloat16[128, FT, D]         # [f within tile, f tile, d]
.sbuf sg_sb float32[128, 2, T]           # silu of the gate, one per PSUM pair
.sbuf hT_sb bfloat16[128, FT, T]         # silu(gate) * up, transposed: [f within tile, f tile, token]
.sbuf y_sb bfloat16[128, TT, D]
.psum tp float32[128, 2, 128]            # transposed x blocks (two, alternating), fp32 (trn1 PSUM)
.psum g_ps float32[128, 2, T]            # gate accumulators (two, alternating)
.psum u_ps float32[128, 2, T]            # up accumulators (two, alternating)
.psum y_ps float32[128, TT, D]           # layer 2 accumulators

    ctrl.mov r0, 0
load:
    dma.copy x_sb[:, r0, :], x[r0*128 : r0*128 + 128, :], queue=0
    dma.copy wg_sb[:, r0, :], wg[r0*128 : r0*128 + 128, :], queue=1
    dma.copy wu_sb[:, r0, :], wu[r0*128 : r0*128 + 128, :], queue=2
    ctrl.add r0, r0, 1
    ctrl.blt r0, DT, load
    ctrl.mov r0, 0
load_wd:                                 # row tiles of Wd, alternating two queues
    dma.copy wd_sb[:, r0, :], wd[r0*128 : r0*128 + 128, :], queue=3
    dma.copy wd_sb[:, r0 + 1, :], wd[r0*128 + 128 : r0*128 + 256, :], queue=4
    ctrl.add r0, r0, 2
    ctrl.blt r0, FT, load_wd

# xT[d, t] = x[t, d], one 128 x 128 block at a time through the PE array
    ctrl.mov r0, 0                       # token tile
transpose_t:
    ctrl.mov r1, 0                       # d tile
transpose_d:
    tensor.transpose tp[:, 0, :], x_sb[:, r0, r1*128 : r1*128 + 128]
    vector.tensor_copy xT_sb[:, r1, r0*128 : r0*128 + 128], tp[:, 0, :]
    tensor.transpose tp[:, 1, :], x_sb[:, r0, r1*128 + 128 : r1*128 + 256]
    vector.tensor_copy xT_sb[:, r1 + 1, r0*128 : r0*128 + 128], tp[:, 1, :]
    ctrl.add r1, r1, 2
    ctrl.blt r1, DT, transpose_d
    ctrl.add r0, r0, 1
    ctrl.blt r0, TT, transpose_t

# layer 1: hT[f, t] = silu(sum_d Wg[d, f] x[t, d]) * sum_d Wu[d, f] x[t, d], two f tiles per
# iteration (PSUM ping-pong)
    ctrl.mov r0, 0                       # f tile
layer1:
    ctrl.mov r1, 0                       # which buffer of each pair
layer1_half:
    tensor.matmul g_ps[:, r1, :], wg_sb[:, 0, r0*128 : r0*128 + 128], xT_sb[:, 0, :], accumulate=false
    tensor.matmul g_ps[:, r1, :], wg_sb[:, 1, r0*128 : r0*128 + 128], xT_sb[:, 1, :], accumulate=true
    tensor.matmul u_ps[:, r1, :], wu_sb[:, 0, r0*128 : r0*128 + 128], xT_sb[:, 0, :], accumulate=false
    tensor.matmul u_ps[:, r1, :], wu_sb[:, 1, r0*128 : r0*128 + 128], xT_sb[:, 1, :], accumulate=true
    scalar.activation sg_sb[:, r1, :], g_ps[:, r1, :], func=silu
    vector.tensor_tensor hT_sb[:, r0, :], sg_sb[:, r1, :], u_ps[:, r1, :], op=multiply
    ctrl.add r0, r0, 1
    ctrl.add r1, r1, 1
    ctrl.blt r1, 2, layer1_half
    ctrl.blt r0, FT, layer1

# layer 2: y[t, d] = sum_f hT[f, t] Wd[f, d], accumulated over the f tiles per token tile
    ctrl.mov r0, 0                       # token tile
layer2:
    tensor.matmul y_ps[:, r0, :], hT_sb[:, 0, r0*128 : r0*128 + 128], wd_sb[:, 0, :], accumulate=false
    ctrl.mov r1, 1                       # f tile
layer2_k:
    tensor.matmul y_ps[:, r0, :], hT_sb[:, r1, r0*128 : r0*128 + 128], wd_sb[:, r1, :], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.blt r1, FT, layer2_k
    vector.tensor_copy y_sb[:, r0, :], y_ps[:, r0, :]
    dma.copy y[r0*128 : r0*128 + 128, :], y_sb[:, r0, :], queue=5
    ctrl.add r0, r0, 1
    ctrl.blt r0, TT, layer2
