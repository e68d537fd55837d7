# Four attention heads of head_dim 32 on trn2: scores_h = q_h^T k_h, q_h = q[32h : 32h + 32, :]
# (32 contraction rows, 128 queries) and k_h the same rows of k (512 keys). A K = 32 matmul uses
# a quarter of the 128-row PE array, so each head is placed on its own 32-row tile
# (tile_position / tile_size, nc_matmul's tiling mode): the four matmuls run at the same time.
# Delete the tile_position / tile_size arguments and the Tensor engine takes four times as long
# (tests/timing/test_pe_tiles.py measures both).
.target trn2
.hbm q bfloat16[128, 128] input
.hbm k bfloat16[128, 512] input
.hbm scores float32[4, 128, 512] output
.sbuf qs bfloat16[128, 128]
.sbuf ks bfloat16[128, 512]
.psum s0 float32[128, 512]
.psum s1 float32[128, 512]
.psum s2 float32[128, 512]
.psum s3 float32[128, 512]
.sbuf out float32[128, 512]
    dma.copy qs, q, queue=0
    dma.copy ks, k, queue=1
    tensor.matmul s0, qs[0:32, :], ks[0:32, :], tile_position=[0, 0], tile_size=[32, 128]
    tensor.matmul s1, qs[32:64, :], ks[32:64, :], tile_position=[32, 0], tile_size=[32, 128]
    tensor.matmul s2, qs[64:96, :], ks[64:96, :], tile_position=[64, 0], tile_size=[32, 128]
    tensor.matmul s3, qs[96:128, :], ks[96:128, :], tile_position=[96, 0], tile_size=[32, 128]
    vector.tensor_copy out, s0
    dma.copy scores[0, :, :], out
    vector.tensor_copy out, s1
    dma.copy scores[1, :, :], out
    vector.tensor_copy out, s2
    dma.copy scores[2, :, :], out
    vector.tensor_copy out, s3
    dma.copy scores[3, :, :], out
