# Rotary position embedding y = x * cos + rotate_half(x) * sin of one head's x^T [128, 4096] bf16
# (head dim 128 on partitions, as the attention kernels take q and k) with bf16 cos/sin tables
# [64, 4096], bf16 out.
#
# Modelled on the rotary embedding of the NKI samples / LLaMA (rotate_half convention: the
# first half of the head dim pairs with the second, y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin);
# written for this project. Layout: x is [D, S] (dim d on partition d, tokens along the free
# axis, 512 per tile); cos and sin are [D/2, S], loaded twice, into partitions 0..63 and
# 64..127, since both halves use the same frequencies.
#   TensorE  two exact matmuls per tile into PSUM: identity^T @ x (x itself) and R^T @ x with R
#            the signed half swap, so (R^T x)[d] = -x[d + 64] for d < 64 and x[d - 64] above:
#            rotate_half(x), exact (one +-1 product per sum, the other terms +0)
#   VectorE  t = x * cos, r = rotate_half(x) * sin (in place in PSUM), y = r + t: every
#            instruction has one operand in PSUM, so each streams at one element per cycle
#            (two SBUF operands would share the read port: half rate)
#   GpSimd   builds the identity and R once (affine_select)
#   DMA      x tiles alternate on queues 0 / 1, the tables on 2 / 3, stores on 4 / 5, two
#            slots of every buffer (tile n + 1 loads while tile n computes)
# Every product of two bf16 values is exact in fp32, so the only roundings are the fp32 add and
# the bf16 store.
.const S = 4096
.const D = 128
.const H = D / 2
.const T = 512                               # tokens per tile (one PSUM bank of fp32)
.const TILES = S / T

.hbm x bfloat16[D, S] input init=normal(0, 1)
.hbm cos bfloat16[H, S] input init=uniform(-1, 1)
.hbm sin bfloat16[H, S] input init=uniform(-1, 1)
.hbm y bfloat16[D, S] output

.sbuf ones bfloat16[128, 128]
.sbuf ident bfloat16[128, 128]
.sbuf rot bfloat16[128, 128]                 # rot[k, m]: -1 at (m + 64, m), +1 at (m - 64, m)
.sbuf x_sb bfloat16[128, 2, T]
.sbuf c_sb bfloat16[128, 2, T]
.sbuf s_sb bfloat16[128, 2, T]
.sbuf t_sb float32[128, 2, T]
.sbuf y_sb bfloat16[128, 2, T]
.psum x_ps float32[128, 2, T]
.psum r_ps float32[128, 2, T]

    gpsimd.memset ones, value=1.0
    gpsimd.memset ident, value=0.0
    gpsimd.affine_select ident, ones, cmp_op=equal, on_false_value=0.0, offset=0, channel_multiplier=1, step=-1
    gpsimd.memset rot, value=0.0
    # affine_select's partition index counts from the tile's first partition
    gpsimd.affine_select rot[0:64, 64:128], ones[0:64, 0:64], cmp_op=equal, on_false_value=0.0, offset=0, channel_multiplier=1, step=-1
    gpsimd.memset ones[64:128, :], value=-1.0
    gpsimd.affine_select rot[64:128, 0:64], ones[64:128, 0:64], cmp_op=equal, on_false_value=0.0, offset=0, channel_multiplier=1, step=-1

    ctrl.mov r0, 0                           # tile n
    ctrl.mov r1, 0                           # slot n mod 2
tile:
    ctrl.beq r1, 1, load_odd
    dma.copy x_sb[:, 0, :], x[:, r0*T : r0*T + T], queue=0
    dma.copy c_sb[0:64, 0, :], cos[:, r0*T : r0*T + T], queue=2
    dma.copy c_sb[64:128, 0, :], cos[:, r0*T : r0*T + T], queue=2
    dma.copy s_sb[0:64, 0, :], sin[:, r0*T : r0*T + T], queue=3
    dma.copy s_sb[64:128, 0, :], sin[:, r0*T : r0*T + T], queue=3
    ctrl.jmp compute
load_odd:
    dma.copy x_sb[:, 1, :], x[:, r0*T : r0*T + T], queue=1
    dma.copy c_sb[0:64, 1, :], cos[:, r0*T : r0*T + T], queue=3
    dma.copy c_sb[64:128, 1, :], cos[:, r0*T : r0*T + T], queue=3
    dma.copy s_sb[0:64, 1, :], sin[:, r0*T : r0*T + T], queue=2
    dma.copy s_sb[64:128, 1, :], sin[:, r0*T : r0*T + T], queue=2
compute:
    tensor.matmul x_ps[:, r1, :], ident, x_sb[:, r1, :]
    tensor.matmul r_ps[:, r1, :], rot, x_sb[:, r1, :]
    vector.tensor_tensor t_sb[:, r1, :], x_ps[:, r1, :], c_sb[:, r1, :], op=multiply
    vector.tensor_tensor r_ps[:, r1, :], r_ps[:, r1, :], s_sb[:, r1, :], op=multiply
    vector.tensor_tensor y_sb[:, r1, :], r_ps[:, r1, :], t_sb[:, r1, :], op=add
    ctrl.beq r1, 1, store_odd
    dma.copy y[:, r0*T : r0*T + T], y_sb[:, 0, :], queue=4
    ctrl.jmp next
store_odd:
    dma.copy y[:, r0*T : r0*T + T], y_sb[:, 1, :], queue=5
next:
    ctrl.sub r1, 1, r1
    ctrl.add r0, r0, 1
    ctrl.blt r0, TILES, tile
