"""NKI-style kernels written for this project (from the math, not copied from AWS's samples),
in the NKI 0.6.0 dialect. Only the import lines name neuronemu: with ``import nki``,
``import nki.language as nl`` and ``import nki.isa as nisa`` they are ordinary NKI kernels.

Stage 1 (``nisa`` core): tensor_add, matmul_tiled, softmax_isa, rmsnorm_isa.
Stage 2 (``nl`` layer and more ``nisa``): softmax_nl, layernorm_bn, cumsum_scan, rope_halves,
transpose_blocks, causal_attention, mlp_relu_nl, layernorm_affine, flash_attention_causal,
fp8_matmul_double_row, mx_matmul (trn3), conv2d_maxpool, avg_pool2d.
"""

import math

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki

P = 128


def sbuf_copy(x):
    """A new SBUF tile holding the HBM tensor ``x`` (one DMA): the tests' way in."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def hbm_copy(t):
    """A new shared HBM tensor holding the tile ``t`` (one DMA): the tests' way out."""
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


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


# ------------------------------------------------------------------------------------------
# stage 2, continued: flash attention, fp8 double-row and MX matmuls, conv2d, avg_pool2d


def flash_attention_causal(qT, kT, v, kv_block=512):
    """Causal O = softmax(Q K^T / sqrt(D) + mask) V for one head, flash style: per 128-query
    tile, an online softmax over key blocks of kv_block keys (q, k as [D, S], v [S, D]).

    Blocks entirely above the diagonal are never issued; the block holding the diagonal stops
    at the tile's last query and is masked by affine_select. Per block: the block row max
    updates the running max m (kept negated and scaled: -c m), alpha = exp(m_old - m_new)
    rescales the running sum l and output o, and P V of the block (P^T by PE transposes, 128
    keys a chunk) is added in. Off the diagonal the scores are read straight from PSUM (the
    scale c folded into the exp).

    Software pipeline (trace-time Python): each block is a generator of five stages (scores;
    max; exp; P V; update) and the blocks, in block-major order, advance one stage per round
    (the newest first), a new block entering every round, so every engine queue holds
    independent work of several blocks instead of waiting on one block's chain. A block reads
    its tile's running state in the stage in which the tile's previous block, at least one
    round older, wrote it (checked at trace time)."""
    d, s = qT.shape
    scale = 1.0 / math.sqrt(d)
    n_qt = s // P
    out = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.ndarray((d, s), dtype=qT.dtype, buffer=nl.sbuf)
    k_sb = nl.ndarray((d, s), dtype=kT.dtype, buffer=nl.sbuf)
    half = s // 2
    for h in range(2):
        nisa.dma_copy(dst=q_sb[:, h * half:(h + 1) * half], src=qT[:, h * half:(h + 1) * half])
        nisa.dma_copy(dst=k_sb[:, h * half:(h + 1) * half], src=kT[:, h * half:(h + 1) * half])
    v_sb = nl.ndarray((P, s // P, d), dtype=v.dtype, buffer=nl.sbuf)
    for j in range(s // P):
        nisa.dma_copy(dst=v_sb[:, j, :], src=v[j * P:(j + 1) * P, :])
    n_blocks = [-(-(i + 1) * P // kv_block) for i in range(n_qt)]
    neg_m_run = [None] * n_qt                       # -c m, the running max
    l_run = [None] * n_qt                           # running row sums
    o_run = [None] * n_qt                           # running (unnormalised) outputs
    version = [[-1, -1] for _ in range(n_qt)]       # block that last wrote (m, l and o)

    def block(i, jb):
        kb = jb * kv_block
        w = min(kv_block, (i + 1) * P - kb)         # keys past the tile's last query: none
        s_ps = nl.ndarray((P, kv_block), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=s_ps[:, 0:w], stationary=q_sb[:, i * P:(i + 1) * P],
                       moving=k_sb[:, kb:kb + w])
        yield
        if kb + w > i * P:
            # the diagonal block: c s to SBUF, then keep key kb + c for query i*P + p when
            # i*P + p - kb - c >= 0
            s_sb = nl.ndarray((P, kv_block), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s_sb[:, 0:w], op=nl.copy, data=s_ps[:, 0:w], scale=scale)
            nisa.affine_select(dst=s_sb[:, 0:w], pattern=[[-1, w]], offset=i * P - kb,
                               channel_multiplier=1, on_true_tile=s_sb[:, 0:w],
                               on_false_value=-3.0e38, cmp_op=nl.greater_equal)
            scores, c = s_sb[:, 0:w], 1.0
        else:
            scores, c = s_ps[:, 0:w], scale
        neg_b = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_b, op=nl.max, data=scores, axis=1, negate=True)
        neg_m = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        assert version[i][0] == jb - 1, "pipeline order: the running max is not ready"
        neg_m_old = neg_m_run[i]
        if jb == 0:
            nisa.tensor_scalar(dst=neg_m, data=neg_b, op0=nl.multiply, operand0=c)
        else:
            nisa.tensor_scalar(dst=neg_m, data=neg_b, op0=nl.multiply, operand0=c,
                               op1=nl.minimum, operand1=neg_m_old)
        neg_m_run[i], version[i][0] = neg_m, jb
        yield
        p_sb = nl.ndarray((P, kv_block), dtype=v.dtype, buffer=nl.sbuf)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=p_sb[:, 0:w], op=nl.exp, data=scores, scale=c, bias=neg_m,
                        reduce_op=nl.add, reduce_res=row_sum)
        del scores, s_ps
        if jb > 0:
            alpha = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            # exp(m_old - m_new) = exp(-1 * (-c m_old) + (-c m_new))
            nisa.activation(dst=alpha, op=nl.exp, data=neg_m_old, scale=-1.0, bias=neg_m)
        yield
        o_ps = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.psum)
        for ch in range(w // P):
            pT_ps = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=pT_ps, data=p_sb[:, ch * P:(ch + 1) * P])
            pT = nl.ndarray((P, P), dtype=v.dtype, buffer=nl.sbuf)
            # PSUM -> SBUF copies alternate between ScalarE and VectorE
            nisa.tensor_copy(dst=pT, src=pT_ps,
                             engine=nisa.vector_engine if ch % 2 else nisa.scalar_engine)
            nisa.nc_matmul(dst=o_ps, stationary=pT, moving=v_sb[:, kb // P + ch, :])
        yield
        assert version[i][1] == jb - 1, "pipeline order: the running sums are not ready"
        o_new = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        if jb == 0:
            l_run[i] = row_sum
            nisa.tensor_copy(dst=o_new, src=o_ps, engine=nisa.scalar_engine)
        else:
            l_new = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.scalar_tensor_tensor(dst=l_new, data=l_run[i], op0=nl.multiply,
                                      operand0=alpha, op1=nl.add, operand1=row_sum)
            nisa.scalar_tensor_tensor(dst=o_new, data=o_run[i], op0=nl.multiply,
                                      operand0=alpha, op1=nl.add, operand1=o_ps)
            l_run[i] = l_new
        o_run[i], version[i][1] = o_new, jb
        if jb == n_blocks[i] - 1:                   # the tile's last block: normalise, store
            inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.reciprocal(dst=inv, data=l_run[i])
            o_sb = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=o_sb, op=nl.copy, data=o_run[i], scale=inv)
            nisa.dma_copy(dst=out[i * P:(i + 1) * P, :], src=o_sb)
            neg_m_run[i] = l_run[i] = o_run[i] = None

    order = [(i, jb) for jb in range(max(n_blocks)) for i in range(n_qt) if jb < n_blocks[i]]
    live = []
    while order or live:
        if order:
            live.append(block(*order.pop(0)))
        for gen in list(reversed(live)):            # newest first
            if next(gen, StopIteration) is StopIteration:
                live.remove(gen)
    return out


def fp8_matmul_double_row(aT, b, col_scale):
    """c = (a @ b) * col_scale[None, :] with fp8 aT [K, M], b [K, N] in TensorE's double-row
    mode: K rows 2p and 2p + 1 of each 256-row K tile lie on partition p (the [K/2, 2, cols]
    view of the row-major operand), so one matmul contracts 256 rows. fp32 PSUM accumulation,
    the per-column scale (a [1, N] row broadcast to all partitions by DMA) applied on the way
    out of PSUM."""
    k_dim, m_dim = aT.shape
    _, n_dim = b.shape
    kt = k_dim // (2 * P)
    a2 = aT.reshape((k_dim // 2, 2, m_dim))
    b2 = b.reshape((k_dim // 2, 2, n_dim))
    c = nl.ndarray((m_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)
    a_sb = nl.ndarray((P, kt, 2, m_dim), dtype=aT.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray((P, kt, 2, n_dim), dtype=b.dtype, buffer=nl.sbuf)
    for k in range(kt):
        nisa.dma_copy(dst=a_sb[:, k, :, :], src=a2[k * P:(k + 1) * P, :, :])
        nisa.dma_copy(dst=b_sb[:, k, :, :], src=b2[k * P:(k + 1) * P, :, :])
    s_sb = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s_sb, src=col_scale.broadcast_to((P, n_dim)))
    for m in range(m_dim // P):
        acc = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.psum)
        for k in range(kt):
            nisa.nc_matmul(dst=acc, stationary=a_sb[:, k, :, m * P:(m + 1) * P],
                           moving=b_sb[:, k, :, :], perf_mode=nisa.matmul_perf_mode.double_row)
        c_sb = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c_sb, data1=acc, data2=s_sb, op=nl.multiply)
        nisa.dma_copy(dst=c[m * P:(m + 1) * P, :], src=c_sb)
    return c


def mx_matmul(x, w):
    """c = mx(x) @ mx(w) on trn3: x [T, K] and w [K, N] bf16 quantized on chip to MXFP8
    (float8_e4m3fn, E8M0 scales per 8 partitions x 4 values), fp32 accumulation.
    An MX matmul contracts 512 rows: value i of partition p's x4 element is K index
    512 kt + 128 i + p, for both operands. w's 128-row slabs are interleaved into value slot i by
    copies (GpSimd and ScalarE, half the columns each); x is token-major, so TensorE transposes
    its 128 x 128 blocks and ScalarE / VectorE (alternating) copy them into slot i."""
    t_dim, k_dim = x.shape
    _, n_dim = w.shape
    kt, tt = k_dim // 512, t_dim // P
    c = nl.ndarray((t_dim, n_dim), dtype=nl.float32, buffer=nl.shared_hbm)
    x_sb = nl.ndarray((P, tt, k_dim), dtype=x.dtype, buffer=nl.sbuf)
    for t in range(tt):
        nisa.dma_copy(dst=x_sb[:, t, :], src=x[t * P:(t + 1) * P, :])
    xq = nl.ndarray((P, kt, t_dim), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    xs = nl.ndarray((P, kt, t_dim), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    wq = nl.ndarray((P, kt, n_dim), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    ws = nl.ndarray((P, kt, n_dim), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    for k in range(kt):
        w_raw = nl.ndarray((P, 4, n_dim), dtype=w.dtype, buffer=nl.sbuf)
        for i in range(4):
            r0 = k * 512 + i * P
            nisa.dma_copy(dst=w_raw[:, i, :], src=w[r0:r0 + P, :])
        w_il = nl.ndarray((P, n_dim, 4), dtype=w.dtype, buffer=nl.sbuf)
        x_il = nl.ndarray((P, t_dim, 4), dtype=x.dtype, buffer=nl.sbuf)
        for i in range(4):
            r0 = k * 512 + i * P
            # the interleaving copies are spread over GpSimd, ScalarE and VectorE
            hn = n_dim // 2
            nisa.tensor_copy(dst=w_il[:, 0:hn, i], src=w_raw[:, i, 0:hn],
                             engine=nisa.gpsimd_engine)
            nisa.tensor_copy(dst=w_il[:, hn:n_dim, i], src=w_raw[:, i, hn:n_dim],
                             engine=nisa.scalar_engine)
            for t in range(tt):
                tp = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=tp, data=x_sb[:, t, r0:r0 + P])
                nisa.tensor_copy(dst=x_il[:, t * P:(t + 1) * P, i], src=tp,
                                 engine=nisa.vector_engine if t % 2 else nisa.scalar_engine)
        nisa.quantize_mx(dst=xq[:, k, :], src=x_il, dst_scale=xs[:, k, :])
        nisa.quantize_mx(dst=wq[:, k, :], src=w_il, dst_scale=ws[:, k, :])
    for t in range(tt):
        acc = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.psum)
        for k in range(kt):
            nisa.nc_matmul_mx(dst=acc, stationary=xq[:, k, t * P:(t + 1) * P],
                              moving=wq[:, k, :], stationary_scale=xs[:, k, t * P:(t + 1) * P],
                              moving_scale=ws[:, k, :])
        c_sb = nl.ndarray((P, n_dim), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=c_sb, op=nl.copy, data=acc)
        nisa.dma_copy(dst=c[t * P:(t + 1) * P, :], src=c_sb)
    return c


def conv2d_maxpool(x, w, bias, rows_per_block=16):
    """y = maxpool2x2(conv2d(x, w) + bias): valid 3 x 3 convolution, stride 1, NCHW x
    [B, C_in, H, W] bf16, OIHW w [C_out, C_in, 3, 3], bias [C_out, 1] fp32, y fp32.

    Channels on partitions. With C_in <= 64 two images share the partitions (image 2g + h on
    partitions 64 h ..) and each runs on its own 64-row PE tile (tile_position), so their
    matmuls overlap. The convolution of a block of output rows is 9 accumulating matmuls in
    one PSUM bank, tap (dy, dx) contracting C_in with the input window shifted by (dy, dx) (a
    strided view of the image in SBUF). The weights arrive as stored ([C_out, C_in, 9], C_out
    on partitions), loaded once per partition half; one PE transpose per tap gives its
    [C_in, C_out] stationary on both halves. Pooling reads PSUM: ScalarE copies the odd rows
    out, VectorE takes the max of row pairs, then of column pairs, and ScalarE adds the bias to
    the pooled values (a per-channel constant commutes with max; fp32 rounding is monotonic)."""
    n_img, c_in, h, wd = x.shape
    c_out = w.shape[0]
    oh, ow = h - 2, wd - 2
    rb = rows_per_block
    pair = 2 if 2 * c_in <= P and n_img % 2 == 0 else 1
    y = nl.ndarray((n_img, c_out, oh // 2, ow // 2), dtype=nl.float32, buffer=nl.shared_hbm)
    w_sb = nl.ndarray((c_out, pair, c_in, 9), dtype=w.dtype, buffer=nl.sbuf)
    for hh in range(pair):
        nisa.dma_copy(dst=w_sb[:, hh, :, :], src=w.reshape((c_out, c_in, 9)))
    bias_sb = nl.ndarray((c_out, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=bias_sb, src=bias)
    wT = nl.ndarray((pair * c_in, 9, c_out), dtype=w.dtype, buffer=nl.sbuf)
    for tap in range(9):
        tp = nl.ndarray((pair * c_in, c_out), dtype=w.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=tp, data=w_sb[:, :, :, tap])
        nisa.tensor_copy(dst=wT[:, tap, :], src=tp)
    for b0 in range(0, n_img, pair):
        x_sb = nl.ndarray((pair * c_in, h, wd), dtype=x.dtype, buffer=nl.sbuf)
        for hh in range(pair):
            nisa.dma_copy(dst=x_sb[hh * c_in:(hh + 1) * c_in, :, :], src=x[b0 + hh, :, :, :])
        y_sb = nl.ndarray((c_out, pair, oh // 2, ow // 2), dtype=nl.float32, buffer=nl.sbuf)
        for r0 in range(0, oh, rb):
            accs = [nl.ndarray((c_out, rb, ow), dtype=nl.float32, buffer=nl.psum)
                    for _ in range(pair)]
            for dy in range(3):
                for dx in range(3):
                    for hh in range(pair):
                        parts = slice(hh * c_in, (hh + 1) * c_in)
                        tiles = ({"tile_position": (hh * 64, 0), "tile_size": (64, 128)}
                                 if pair == 2 else {})
                        nisa.nc_matmul(dst=accs[hh], stationary=wT[parts, 3 * dy + dx, :],
                                       moving=x_sb[parts, r0 + dy:r0 + dy + rb, dx:dx + ow],
                                       **tiles)
            for hh in range(pair):
                odd = nl.ndarray((c_out, rb // 2, ow), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=odd, op=nl.copy, data=accs[hh][:, 1:rb:2, :])
                rows = nl.ndarray((c_out, rb // 2, ow), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=rows, data1=accs[hh][:, 0:rb:2, :], data2=odd,
                                   op=nl.maximum)
                pooled = nl.ndarray((c_out, rb // 2, ow // 2), dtype=nl.float32,
                                    buffer=nl.sbuf)
                nisa.tensor_tensor(dst=pooled, data1=rows[:, :, 0:ow:2],
                                   data2=rows[:, :, 1:ow:2], op=nl.maximum)
                nisa.activation(dst=y_sb[:, hh, r0 // 2:(r0 + rb) // 2, :], op=nl.copy,
                                data=pooled, bias=bias_sb)
        for hh in range(pair):
            nisa.dma_copy(dst=y[b0 + hh, :, :, :], src=y_sb[:, hh, :, :])
    return y


def avg_pool2d(x, size=3, stride=2):
    """y[b, c, i, j] = mean of x[b, c, s i : s i + k, s j : s j + k] (k = size, s = stride, no
    padding), NCHW, channels on partitions, one image per step. The window sum is separable:
    rows first (k - 1 adds of stepped row views), then columns (k - 1 adds of stepped column
    views), fp32; ScalarE scales by 1 / k^2."""
    n_img, ch, h, wd = x.shape
    oh, ow = (h - size) // stride + 1, (wd - size) // stride + 1
    y = nl.ndarray((n_img, ch, oh, ow), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in range(n_img):
        x_sb = nl.ndarray((ch, h, wd), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb, src=x[b, :, :, :])
        rows = nl.ndarray((ch, oh, wd), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=rows, data1=x_sb[:, 0:stride * (oh - 1) + 1:stride, :],
                           data2=x_sb[:, 1:stride * (oh - 1) + 2:stride, :], op=nl.add)
        for dy in range(2, size):
            nisa.tensor_tensor(dst=rows, data1=rows,
                               data2=x_sb[:, dy:stride * (oh - 1) + dy + 1:stride, :],
                               op=nl.add)
        sums = nl.ndarray((ch, oh, ow), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sums, data1=rows[:, :, 0:stride * (ow - 1) + 1:stride],
                           data2=rows[:, :, 1:stride * (ow - 1) + 2:stride], op=nl.add)
        for dx in range(2, size):
            nisa.tensor_tensor(dst=sums, data1=sums,
                               data2=rows[:, :, dx:stride * (ow - 1) + dx + 1:stride],
                               op=nl.add)
        y_sb = nl.ndarray((ch, oh, ow), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=y_sb, op=nl.copy, data=sums, scale=1.0 / (size * size))
        nisa.dma_copy(dst=y[b, :, :, :], src=y_sb)
    return y
