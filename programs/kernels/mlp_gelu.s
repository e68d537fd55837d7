# Transformer MLP block y = gelu(x @ W1) @ W2 with exact (erf) GELU, tokens T = 256, d_model D =
# 256, d_ff F = 1024, bf16 activations and weights, fp32 accumulation in PSUM, bf16 output.
#
# Modelled on the feed-forward layer of the NKI tutorials (the fused MLP of the LLM samples);
# written here from the math, not from their code.
#
# Layout and engines:
#   - x arrives token-major [T, D]; TensorE transposes it (tensor.transpose, 128 x 128 blocks) to
#     xT [D, T] so that the contraction dim d lies on partitions.
#   - Layer 1 produces h transposed, hT [F, T]: for each 128-row tile of F, 2 matmuls over the D
#     tiles (stationary W1[d, f-tile], moving xT[d, :]) accumulate in fp32 PSUM; ScalarE applies
#     GELU while it evacuates PSUM into bf16 SBUF. Two PSUM buffers alternate, so TensorE fills
#     one while ScalarE drains the other.
#   - Layer 2 contracts over F, which hT already holds on partitions: for each 128-token tile,
#     8 matmuls (stationary hT[f-tile, t-tile], moving W2[f-tile, :]) accumulate y[t-tile, D] in
#     PSUM; VectorE rounds it to bf16 and DMA stores it, token-major as y is declared.
#   - The weights come in on their own DMA queues while x is transposed; W2 (needed last) on two
#     queues of its own.
.const T = 256
.const D = 256
.const F = 1024
.const TT = T / 128                      # token tiles
.const DT = D / 128                      # d_model tiles (layer 1 contraction)
.const FT = F / 128                      # d_ff tiles (layer 2 contraction)

.hbm x bfloat16[T, D] input init=normal(0, 1)
.hbm w1 bfloat16[D, F] input init=normal(0, 0.0625)      # ~ 1/sqrt(D)
.hbm w2 bfloat16[F, D] input init=normal(0, 0.03125)     # ~ 1/sqrt(F)
.hbm y bfloat16[T, D] output

.sbuf x_sb bfloat16[128, TT, D]          # [token within tile, token tile, d]
.sbuf xT_sb bfloat16[128, DT, T]         # [d within tile, d tile, token]
.sbuf w1_sb bfloat16[128, DT, F]         # [d within tile, d tile, f]
.sbuf w2_sb bfloat16[128, FT, D]         # [f within tile, f tile, d]
.sbuf hT_sb bfloat16[128, FT, T]         # gelu(x @ W1) transposed: [f within tile, f tile, token]
.sbuf y_sb bfloat16[128, TT, D]          # [token within tile, token tile, d]
.psum tp float32[128, 2, 128]            # transposed x blocks (two, alternating), fp32 (trn1 PSUM)
.psum h_ps float32[128, 2, T]            # layer 1 accumulators (two, alternating)
.psum y_ps float32[128, TT, D]           # layer 2 accumulators

    ctrl.mov r0, 0
load:
    dma.copy x_sb[:, r0, :], x[r0*128 : r0*128 + 128, :], queue=0
    dma.copy w1_sb[:, r0, :], w1[r0*128 : r0*128 + 128, :], queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, DT, load
    ctrl.mov r0, 0
load_w2:                                 # 8 row tiles of W2, alternating two queues
    dma.copy w2_sb[:, r0, :], w2[r0*128 : r0*128 + 128, :], queue=2
    dma.copy w2_sb[:, r0 + 1, :], w2[r0*128 + 128 : r0*128 + 256, :], queue=3
    ctrl.add r0, r0, 2
    ctrl.blt r0, FT, load_w2

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

# layer 1: hT[f, t] = gelu(sum_d W1[d, f] x[t, d]), two f tiles per iteration (PSUM ping-pong)
    ctrl.mov r0, 0                       # f tile
layer1:
    tensor.matmul h_ps[:, 0, :], w1_sb[:, 0, r0*128 : r0*128 + 128], xT_sb[:, 0, :], accumulate=false
    tensor.matmul h_ps[:, 0, :], w1_sb[:, 1, r0*128 : r0*128 + 128], xT_sb[:, 1, :], accumulate=true
    scalar.activation hT_sb[:, r0, :], h_ps[:, 0, :], func=gelu
    tensor.matmul h_ps[:, 1, :], w1_sb[:, 0, r0*128 + 128 : r0*128 + 256], xT_sb[:, 0, :], accumulate=false
    tensor.matmul h_ps[:, 1, :], w1_sb[:, 1, r0*128 + 128 : r0*128 + 256], xT_sb[:, 1, :], accumulate=true
    scalar.activation hT_sb[:, r0 + 1, :], h_ps[:, 1, :], func=gelu
    ctrl.add r0, r0, 2
    ctrl.blt r0, FT, layer1

# layer 2: y[t, d] = sum_f hT[f, t] W2[f, d], accumulated over the 8 f tiles per token tile
    ctrl.mov r0, 0                       # token tile
layer2:
    tensor.matmul y_ps[:, r0, :], hT_sb[:, 0, r0*128 : r0*128 + 128], w2_sb[:, 0, :], accumulate=false
    ctrl.mov r1, 1                       # f tile
layer2_k:
    tensor.matmul y_ps[:, r0, :], hT_sb[:, r1, r0*128 : r0*128 + 128], w2_sb[:, r1, :], accumulate=true
    ctrl.add r1, r1, 1
    ctrl.blt r1, FT, layer2_k
    vector.tensor_copy y_sb[:, r0, :], y_ps[:, r0, :]
    dma.copy y[r0*128 : r0*128 + 128, :], y_sb[:, r0, :], queue=4
    ctrl.add r0, r0, 1
    ctrl.blt r0, TT, layer2
