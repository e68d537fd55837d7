# LayerNorm with gain and bias, y[i, :] = (x[i, :] - mean_i) / sqrt(var_i + eps) * gamma + beta,
# of a [1000, 1024] bf16 activation (fp32 gamma and beta [1, 1024], bf16 out, eps = 1e-5).
#
# Modelled on the NKI LayerNorm tutorial (bn_stats / bn_aggr for the row statistics, then the
# affine transform with the broadcast weights); written for this project. Layout: 128 rows per
# tile on the partitions, a row's 1024 columns along the free axis. 1000 rows are 7 full tiles,
# run by a register loop, and a partial last tile of 104 rows on partitions 0..103: the same
# instructions with the partition range cut to the rows that exist (no padding, nothing
# computed or stored for rows past the end).
# The work is spread over three engines, each taking one pass over the tile:
#   VectorE  bn_stats on two 512-element chunks (its limit), bn_aggr -> (mean, var), then
#            t = (x - mean) * gamma in one scalar_tensor_tensor
#   ScalarE  rstd = rsqrt(var + eps), then u = t * rstd (activation copy, per-row scale)
#   DMA      y = u + beta by dma.compute on the way out (the fp32 add and the bf16 rounding happen
#            in the DMA engines, so the store is the last pass); gamma and beta reach all 128
#            partitions once by partition broadcast ([1, D] -> [128, D], queues 2 and 3); x tiles
#            load on queue 0 and results store on queue 1, into two slots (tile t in slot
#            t mod 2), so tile t + 1 loads and tile t - 1 stores while tile t computes
# All arithmetic is fp32; only the final store rounds to bf16.
.const ROWS = 1000
.const D = 1024
.const FULL = 7                          # full tiles: 7 * 128 = 896 rows
.const TAIL = ROWS - 128 * FULL          # 104 rows in the partial last tile
.const EPS = 1e-5
.hbm x bfloat16[ROWS, D] input init=normal(1, 3)
.hbm gamma float32[1, D] input init=normal(1, 0.5)
.hbm beta float32[1, D] input init=normal(0, 0.5)
.hbm y bfloat16[ROWS, D] output

.sbuf g_sb float32[128, D]               # gamma on every partition
.sbuf b_sb float32[128, D]               # beta on every partition
.sbuf x_sb bfloat16[128, 2, D]           # two slots
.sbuf t_sb float32[128, 2, D]            # (x - mean) * gamma
.sbuf u_sb float32[128, 2, D]            # t * rstd
.sbuf stats float32[128, 2, 12]          # two bn_stats results side by side, per slot
.sbuf mean_var float32[128, 2, 2]
.sbuf rstd float32[128, 2]

    dma.copy g_sb, gamma, queue=2        # partition broadcast
    dma.copy b_sb, beta, queue=3
    ctrl.mov r0, 0                       # tile index t
full_tile:
    ctrl.rem r1, r0, 2                   # its slot
    dma.copy x_sb[:, r1, :], x[r0*128 : r0*128 + 128, :], queue=0
    vector.bn_stats stats[:, r1, 0:6], x_sb[:, r1, 0:512]
    vector.bn_stats stats[:, r1, 6:12], x_sb[:, r1, 512:1024]
    vector.bn_aggr mean_var[:, r1, :], stats[:, r1, :]
    scalar.activation rstd[:, r1], mean_var[:, r1, 1], func=rsqrt, bias=EPS
    vector.scalar_tensor_tensor t_sb[:, r1, :], x_sb[:, r1, :], op0=subtract, operand0=mean_var[:, r1, 0], op1=multiply, operand1=g_sb
    scalar.activation u_sb[:, r1, :], t_sb[:, r1, :], func=copy, scale=rstd[:, r1]
    dma.compute y[r0*128 : r0*128 + 128, :], u_sb[:, r1, :], b_sb, queue=1
    ctrl.add r0, r0, 1
    ctrl.blt r0, FULL, full_tile
    # the partial last tile: rows 896..999 on partitions 0..TAIL-1 of slot FULL mod 2
    ctrl.rem r1, r0, 2
    dma.copy x_sb[0:TAIL, r1, :], x[FULL*128 : ROWS, :], queue=0
    vector.bn_stats stats[0:TAIL, r1, 0:6], x_sb[0:TAIL, r1, 0:512]
    vector.bn_stats stats[0:TAIL, r1, 6:12], x_sb[0:TAIL, r1, 512:1024]
    vector.bn_aggr mean_var[0:TAIL, r1, :], stats[0:TAIL, r1, :]
    scalar.activation rstd[0:TAIL, r1], mean_var[0:TAIL, r1, 1], func=rsqrt, bias=EPS
    vector.scalar_tensor_tensor t_sb[0:TAIL, r1, :], x_sb[0:TAIL, r1, :], op0=subtract, operand0=mean_var[0:TAIL, r1, 0], op1=multiply, operand1=g_sb[0:TAIL, :]
    scalar.activation u_sb[0:TAIL, r1, :], t_sb[0:TAIL, r1, :], func=copy, scale=rstd[0:TAIL, r1]
    dma.compute y[FULL*128 : ROWS, :], u_sb[0:TAIL, r1, :], b_sb[0:TAIL, :], queue=1
