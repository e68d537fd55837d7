"""NKI-style kernels written for this project (from the math, not copied from AWS's samples),
in the NKI 0.6.0 dialect. Only the import lines name neuronemu: with ``import nki``,
``import nki.language as nl`` and ``import nki.isa as nisa`` they are ordinary NKI kernels.

Stage 1 (``nisa`` core): tensor_add, matmul_tiled, softmax_isa, rmsnorm_isa.
Stage 2 (``nl`` layer and more ``nisa``): softmax_nl, layernorm_bn, cumsum_scan, rope_halves,
transpose_blocks, causal_attention, mlp_relu_nl.
"""

import math

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki

P = 128


@nki.jit
def tensor_add(a, b):
    """c = a + b, 128 rows per tile."""
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // P):
        rs = nl.ds(t * P, P)
        a_tile = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((P, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile, src=a[rs, :])
        nisa.dma_copy(dst=b_tile, src=b[rs, :])
        c_tile = nl.ndarray((P, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
        nisa.dma_copy(dst=out[rs, :], src=c_tile)
    return out


def matmul_tiled(lhsT, rhs):
    """result[M, N] = lhsT[K, M]^T @ rhs[K, N]: K in 128-row tiles accumulated in one PSUM bank
    per 128-row block of the result (N <= 512)."""
    k_dim, m_dim = lhsT.shape
    _, n_dim = rhs.shape
    kt = k_dim // P
    result = nl.ndarray((m_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)
    lhs_sb = nl.ndarray((P, kt, m_dim), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((P, kt, n_dim), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(kt):
        nisa.dma_copy(dst=lhs_sb[:, k, :], src=lhsT[k * P:(k + 1) * P, :])
        nisa.dma_copy(dst=rhs_sb[:, k, :], src=rhs[k * P:(k + 1) * P, :])
    for m in nl.affine_range(m_dim // P):
        acc = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(kt):
            # the first matmul into the bank overwrites, the later ones accumulate
            nisa.nc_matmul(dst=acc, stationary=lhs_sb[:, k, m * P:(m + 1) * P],
                           moving=rhs_sb[:, k, :])
        res = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=result[m * P:(m + 1) * P, :], src=res)
    return result


def softmax_isa(x):
    """Row softmax with the nisa core: -max by tensor_reduce, exp(x - max) with its row sum
    from one activation, 1 / sum, scale. fp32 arithmetic, output in x's dtype."""
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // P):
        x_sb = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb, src=x[t * P:(t + 1) * P, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.max, data=x_sb, axis=1, negate=True)
        e = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=x_sb, bias=neg_max, reduce_op=nl.add,
                        reduce_res=row_sum)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=row_sum)
        y_sb = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y_sb, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[t * P:(t + 1) * P, :], src=y_sb)
    return y


def rmsnorm_isa(x, gamma, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * gamma; gamma [1, D] reaches every partition by a DMA
    partition broadcast."""
    rows, d = x.shape
    y = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    g_sb = nl.ndarray((P, d), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_sb, src=gamma.broadcast_to((P, d)))
    for t in range(rows // P):
        x_sb = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb, src=x[t * P:(t + 1) * P, :])
        sq = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        ssum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=x_sb, reduce_op=nl.add, reduce_res=ssum)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        eps_col = nl.full((P, 1), eps, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=ssum, scale=1.0 / d, bias=eps_col)
        y_sb = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=y_sb, data=x_sb, op0=nl.multiply, operand0=rstd,
                                  op1=nl.multiply, operand1=g_sb)
        nisa.dma_copy(dst=y[t * P:(t + 1) * P, :], src=y_sb)
    return y


# ------------------------------------------------------------------------------------------
# stage 2


def softmax_nl(x):
    """Row softmax with the nl convenience layer only."""
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // P):
        tile = nl.load(x[t * P:(t + 1) * P, :], dtype=nl.float32)
        row_max = nl.max(tile, axis=1, keepdims=True)
        e = nl.exp(tile - row_max)
        total = nl.sum(e, axis=1, keepdims=True)
        nl.store(y[t * P:(t + 1) * P, :], e / total)
    return y


def layernorm_bn(x, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) per row: bn_stats on 512-element chunks, bn_aggr."""
    rows, d = x.shape
    chunks = d // 512
    y = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // P):
        x_sb = nl.load(x[t * P:(t + 1) * P, :])
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in range(chunks):
            nisa.bn_stats(dst=stats[:, 6 * c:6 * (c + 1)], data=x_sb[:, 512 * c:512 * (c + 1)])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=mv[:, 1:2], op0=nl.add, operand0=eps,
                           op1=nl.power, operand1=-0.5)
        y_sb = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y_sb, data=x_sb, op0=nl.subtract, operand0=mv[:, 0:1],
                           op1=nl.multiply, operand1=rstd)
        nl.store(y[t * P:(t + 1) * P, :], y_sb)
    return y


def cumsum_scan(x, chunk=1024):
    """Inclusive prefix sum along each row: y[j] = 1 * y[j-1] + x[j], chunk after chunk, each
    chunk's scan starting from the last prefix of the chunk before it."""
    rows, cols = x.shape
    y = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    ones = nl.ones((P, chunk), dtype=nl.float32, buffer=nl.sbuf)
    for t in range(rows // P):
        prev = None
        for c in range(cols // chunk):
            x_sb = nl.load(x[t * P:(t + 1) * P, c * chunk:(c + 1) * chunk])
            y_sb = nl.ndarray((P, chunk), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=y_sb, data0=ones, data1=x_sb,
                                    initial=0.0 if prev is None else prev[:, chunk - 1:chunk],
                                    op0=nl.multiply, op1=nl.add)
            nl.store(y[t * P:(t + 1) * P, c * chunk:(c + 1) * chunk], y_sb)
            prev = y_sb
    return y


def rope_halves(x, cos, sin, tokens=512):
    """Rotary embedding of x[D, S] (head dim on partitions), rotate-half convention:
    y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, with cos/sin [D/2, S]."""
    d, s = x.shape
    h = d // 2
    y = nl.ndarray((d, s), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(s // tokens):
        cols = nl.ds(t * tokens, tokens)
        x1 = nl.load(x[0:h, cols])
        x2 = nl.load(x[h:d, cols])
        c = nl.load(cos[:, cols])
        sn = nl.load(sin[:, cols])
        y1 = nl.subtract(nl.multiply(x1, c, dtype=nl.float32),
                         nl.multiply(x2, sn, dtype=nl.float32), dtype=x.dtype)
        y2 = nl.add(nl.multiply(x2, c, dtype=nl.float32),
                    nl.multiply(x1, sn, dtype=nl.float32), dtype=x.dtype)
        nl.store(y[0:h, cols], y1)
        nl.store(y[h:d, cols], y2)
    return y


def transpose_blocks(x):
    """y = x^T through the PE array in 128 x 128 blocks, one PSUM bank per output row tile."""
    r, c = x.shape
    y = nl.ndarray((c, r), dtype=x.dtype, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((P, r // P, c), dtype=x.dtype, buffer=nl.sbuf)
    for a in range(r // P):
        nisa.dma_copy(dst=x_sb[:, a, :], src=x[a * P:(a + 1) * P, :])
    for b in range(c // P):
        t_ps = nl.ndarray((P, r), dtype=x.dtype, buffer=nl.psum)
        for a in range(r // P):
            nisa.nc_transpose(dst=t_ps[:, a * P:(a + 1) * P], data=x_sb[:, a, b * P:(b + 1) * P])
        y_sb = nl.ndarray((P, r), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=y_sb, src=t_ps)
        nisa.dma_copy(dst=y[b * P:(b + 1) * P, :], src=y_sb)
    return y


def causal_attention(qT, kT, v):
    """O = softmax(Q K^T / sqrt(D) + causal mask) V for one head: q and k as [D, S], v [S, D].
    Per 128-query tile, scores against the keys up to the tile's last query (512 per matmul),
    the mask by affine_select, softmax, then P V with P^T by PE transposes, accumulated in PSUM."""
    d, s = qT.shape
    scale = 1.0 / math.sqrt(d)
    out = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(qT)
    k_sb = nl.load(kT)
    v_sb = nl.ndarray((P, s // P, d), dtype=v.dtype, buffer=nl.sbuf)
    for j in range(s // P):
        nisa.dma_copy(dst=v_sb[:, j, :], src=v[j * P:(j + 1) * P, :])
    for i in range(s // P):
        nk = (i + 1) * P                       # keys 0 .. the tile's last query
        scores = nl.ndarray((P, s), dtype=nl.float32, buffer=nl.psum)
        for kb in range(0, nk, 512):
            w = min(512, nk - kb)
            nisa.nc_matmul(dst=scores[:, kb:kb + w], stationary=q_sb[:, i * P:(i + 1) * P],
                           moving=k_sb[:, kb:kb + w])
        s_sb = nl.ndarray((P, s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=s_sb[:, 0:nk], op=nl.copy, data=scores[:, 0:nk], scale=scale)
        # keep key j for query i*P + p when i*P + p - j >= 0
        masked = nl.ndarray((P, s), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(dst=masked[:, 0:nk], pattern=[[-1, nk]], offset=i * P,
                           channel_multiplier=1, on_true_tile=s_sb[:, 0:nk],
                           on_false_value=-3.0e38, cmp_op=nl.greater_equal)
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.max, data=masked[:, 0:nk], axis=1, negate=True)
        probs = nl.ndarray((P, s), dtype=v.dtype, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=probs[:, 0:nk], op=nl.exp, data=masked[:, 0:nk], bias=neg_max,
                        reduce_op=nl.add, reduce_res=row_sum)
        o_ps = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
        for j in range(i + 1):
            pT_ps = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=pT_ps, data=probs[:, j * P:(j + 1) * P])
            pT = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=pT, src=pT_ps)
            nisa.nc_matmul(dst=o_ps, stationary=pT, moving=v_sb[:, j, :])
        inv = nl.reciprocal(row_sum)
        o_sb = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o_sb, data=o_ps, op0=nl.multiply, operand0=inv)
        nl.store(out[i * P:(i + 1) * P, :], o_sb)
    return out


def mlp_relu_nl(xT, w):
    """y = relu(x @ w) with the nl layer: x given as [K, M] (transpose_x=True), w [K, N]."""
    _, m = xT.shape
    _, n = w.shape
    y = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    w_sb = nl.load(w)
    for t in nl.affine_range(m // P):
        x_sb = nl.load(xT[:, t * P:(t + 1) * P])
        h = nl.matmul(x_sb, w_sb, transpose_x=True)
        nl.store(y[t * P:(t + 1) * P, :], nl.relu(h, dtype=nl.float32))
    return y


def layernorm_affine(x, gamma, beta, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta per row, gamma and beta [1, D] broadcast
    to the partitions by DMA; a last tile of fewer than 128 rows uses partitions 0..n-1 only."""
    rows, d = x.shape
    chunks = d // 512
    y = nl.ndarray((rows, d), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma.broadcast_to((P, d)))
    b = nl.load(beta.broadcast_to((P, d)))
    for t in range((rows + P - 1) // P):
        n = min(P, rows - t * P)
        x_sb = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb[0:n], src=x[t * P:t * P + n])
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in range(chunks):
            nisa.bn_stats(dst=stats[0:n, 6 * c:6 * (c + 1)],
                          data=x_sb[0:n, 512 * c:512 * (c + 1)])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv[0:n], data=stats[0:n])
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[0:n], data=mv[0:n, 1:2], op0=nl.add, operand0=eps,
                           op1=nl.power, operand1=-0.5)
        centred = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=centred[0:n], data=x_sb[0:n], op0=nl.subtract,
                                  operand0=mv[0:n, 0:1], op1=nl.multiply, operand1=g[0:n])
        y_sb = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=y_sb[0:n], data=centred[0:n], op0=nl.multiply,
                                  operand0=rstd[0:n], op1=nl.add, operand1=b[0:n])
        nisa.dma_copy(dst=y[t * P:t * P + n], src=y_sb[0:n])
    return y


def two_outputs(x):
    """(x + 1, x * 2): a kernel returning a tuple of outputs."""
    plus = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="plus")
    twice = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="twice")
    t = nl.load(x)
    nl.store(plus, t + 1.0)
    nl.store(twice, 2.0 * t)
    return plus, twice
