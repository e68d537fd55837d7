# Fused conv2d + bias + 2x2 max pool y = maxpool2x2(conv2d(x, w) + bias), valid 3x3 convolution
# with stride 1, x [B = 2, C_IN = 64, 34, 34] bf16, w [C_OUT = 128, C_IN, 3, 3] bf16, bias
# [C_OUT] fp32, y [B, C_OUT, 16, 16] fp32.
#
# Modelled on the fused convolution / max-pool kernel of Stanford CS149's Trainium (NKI)
# assignment (NCHW input, OIHW weights, per-channel bias, pool size 2); written here from the
# math, not from any solution. programs/labs/06-conv-maxpool is the teaching lab on the same idea.
#
# Layout and engines:
#   - Channels lie on partitions, two images side by side: image 0's C_IN = 64 channels on
#     partitions 0-63, image 1's on 64-127. The weights arrive as stored, [C_OUT, C_IN, 9] with
#     C_OUT on partitions, loaded twice into one [C_OUT, 2 x C_IN, 9] tile, so one TensorE
#     transpose per tap gives the [C_IN, C_OUT] stationary operand on both partition halves.
#   - The convolution is 9 accumulating matmuls per block of 16 output rows (16 x 32 = 512 fp32,
#     one PSUM bank): tap (dy, dx) contracts the C_IN partitions of its stationary with the input
#     window shifted by (dy, dx), a strided view of x in SBUF (no copy). K = 64 would leave half
#     the PE rows idle, so each image runs on its own 64-row PE tile (tile_position), and the
#     two images' matmuls run at the same time.
#   - Pooling reads PSUM directly. A Vector instruction may read only one operand from PSUM, so
#     ScalarE copies the odd rows to SBUF, VectorE takes the max of row pairs (even rows from
#     PSUM, at one element per cycle) and then of column pairs (a tensor_reduce over runs of 2).
#     ScalarE adds the bias on the pooled values: a per-channel constant commutes with max, and
#     fp32 rounding is monotonic, so this equals pooling conv + bias, at a quarter of the work.
#     Each image has two PSUM banks that alternate, so TensorE computes the next block while
#     ScalarE and VectorE pool this one.
.const B = 2                             # images: one per half of the partitions
.const C_IN = 64
.const C_OUT = 128
.const H = 34                            # input height and width
.const OH = H - 2                        # convolution output: 32 x 32
.const PH = OH / 2                       # pooled output: 16 x 16
.const RB = 16                           # output rows per matmul block (RB x OH = 512 columns)
.const BLOCKS = OH / RB
.const PB = RB / 2                       # pooled rows per block

.hbm x bfloat16[B, C_IN, H, H] input init=normal(0, 1)
.hbm w bfloat16[C_OUT, C_IN, 3, 3] input init=normal(0, 0.0417)    # ~ 1/sqrt(9 C_IN)
.hbm bias float32[C_OUT] input init=normal(0, 1)
.hbm y float32[B, C_OUT, PH, PH] output

.psum acc0 float32[C_OUT, 2, RB, OH]     # image 0's convolution blocks (two banks, alternating)
.psum acc1 float32[C_OUT, 2, RB, OH]     # image 1's
.psum tp float32[B * C_IN, 2, C_OUT]     # transposed weight taps (two, alternating), fp32 (trn1 PSUM)
.sbuf x_sb bfloat16[B * C_IN, H, H]      # [image x in channel, row, column]
.sbuf w_sb bfloat16[C_OUT, B, C_IN, 9]   # as stored, twice: [out channel, copy, in channel, tap]
.sbuf wT_sb bfloat16[B * C_IN, 9, C_OUT] # per tap t = 3 dy + dx: [copy x in channel, out channel]
.sbuf bias_sb float32[C_OUT, 1]
.sbuf odd float32[C_OUT, B, 2, PB, OH]       # odd conv rows, per image and PSUM buffer
.sbuf rowmax float32[C_OUT, B, 2, PB, OH]    # max of row pairs
.sbuf pooled float32[C_OUT, B, 2, PB, PH]    # then of column pairs
.sbuf y_sb float32[C_OUT, B, PH, PH]

    dma.copy w_sb[:, 0, :, :], w, queue=0
    dma.copy w_sb[:, 1, :, :], w, queue=1
    dma.copy x_sb[0 : C_IN, :, :], x[0], queue=2
    dma.copy x_sb[C_IN : 2 * C_IN, :, :], x[1], queue=3
    dma.copy bias_sb, bias, queue=4

# wT[:, t, :] = w[:, :, t]^T for both copies at once, tap by tap through the PE array
    ctrl.mov r0, 0
taps:
    tensor.transpose tp[:, 0, :], w_sb[:, :, :, r0]
    vector.tensor_copy wT_sb[:, r0, :], tp[:, 0, :]
    tensor.transpose tp[:, 1, :], w_sb[:, :, :, r0 + 1]
    vector.tensor_copy wT_sb[:, r0 + 1, :], tp[:, 1, :]
    ctrl.add r0, r0, 2
    ctrl.blt r0, 8, taps
    tensor.transpose tp[:, 0, :], w_sb[:, :, :, 8]
    vector.tensor_copy wT_sb[:, 8, :], tp[:, 0, :]

    ctrl.mov r1, 0                       # row block = PSUM buffer
block:
    # tap (dy, dx) for image 0 on PE rows 0-63 and image 1 on rows 64-127, interleaved
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 0, :], x_sb[0:64, r1*RB : r1*RB + RB, 0 : OH], accumulate=false, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 0, :], x_sb[64:128, r1*RB : r1*RB + RB, 0 : OH], accumulate=false, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 1, :], x_sb[0:64, r1*RB : r1*RB + RB, 1 : OH + 1], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 1, :], x_sb[64:128, r1*RB : r1*RB + RB, 1 : OH + 1], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 2, :], x_sb[0:64, r1*RB : r1*RB + RB, 2 : OH + 2], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 2, :], x_sb[64:128, r1*RB : r1*RB + RB, 2 : OH + 2], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 3, :], x_sb[0:64, r1*RB + 1 : r1*RB + RB + 1, 0 : OH], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 3, :], x_sb[64:128, r1*RB + 1 : r1*RB + RB + 1, 0 : OH], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 4, :], x_sb[0:64, r1*RB + 1 : r1*RB + RB + 1, 1 : OH + 1], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 4, :], x_sb[64:128, r1*RB + 1 : r1*RB + RB + 1, 1 : OH + 1], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 5, :], x_sb[0:64, r1*RB + 1 : r1*RB + RB + 1, 2 : OH + 2], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 5, :], x_sb[64:128, r1*RB + 1 : r1*RB + RB + 1, 2 : OH + 2], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 6, :], x_sb[0:64, r1*RB + 2 : r1*RB + RB + 2, 0 : OH], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 6, :], x_sb[64:128, r1*RB + 2 : r1*RB + RB + 2, 0 : OH], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 7, :], x_sb[0:64, r1*RB + 2 : r1*RB + RB + 2, 1 : OH + 1], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 7, :], x_sb[64:128, r1*RB + 2 : r1*RB + RB + 2, 1 : OH + 1], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    tensor.matmul acc0[:, r1, :, :], wT_sb[0:64, 8, :], x_sb[0:64, r1*RB + 2 : r1*RB + RB + 2, 2 : OH + 2], accumulate=true, tile_position=[0, 0], tile_size=[64, 128]
    tensor.matmul acc1[:, r1, :, :], wT_sb[64:128, 8, :], x_sb[64:128, r1*RB + 2 : r1*RB + RB + 2, 2 : OH + 2], accumulate=true, tile_position=[64, 0], tile_size=[64, 128]
    # pool each image's block out of PSUM, then add the bias to the pooled values
    scalar.activation odd[:, 0, r1, :, :], acc0[:, r1, 1 : RB : 2, :], func=copy
    vector.tensor_tensor rowmax[:, 0, r1, :, :], acc0[:, r1, 0 : RB : 2, :], odd[:, 0, r1, :, :], op=maximum
    vector.tensor_reduce pooled[:, 0, r1, :, :], rowmax[:, 0, r1, :, :], op=maximum
    scalar.activation odd[:, 1, r1, :, :], acc1[:, r1, 1 : RB : 2, :], func=copy
    vector.tensor_tensor rowmax[:, 1, r1, :, :], acc1[:, r1, 0 : RB : 2, :], odd[:, 1, r1, :, :], op=maximum
    vector.tensor_reduce pooled[:, 1, r1, :, :], rowmax[:, 1, r1, :, :], op=maximum
    scalar.activation y_sb[:, 0, r1*PB : r1*PB + PB, :], pooled[:, 0, r1, :, :], func=copy, bias=bias_sb
    scalar.activation y_sb[:, 1, r1*PB : r1*PB + PB, :], pooled[:, 1, r1, :, :], func=copy, bias=bias_sb
    ctrl.add r1, r1, 1
    ctrl.blt r1, BLOCKS, block
    dma.copy y[0], y_sb[:, 0, :, :], queue=5
    dma.copy y[1], y_sb[:, 1, :, :], queue=6
