"""programs/kernels/flash_attention_causal.s: causal attention of one head, S = 1024, D = 128,
bf16 Q/K/V, fp32 O, with an online (flash) softmax over 512-key blocks.

Oracle: float64 O = softmax(Q K^T / sqrt(D) + causal mask) V from the bf16 inputs.

Error bound (u = 2^-24, u_bf = 2^-8, gamma_k = k u / (1 - k u); Higham, *Accuracy and Stability
of Numerical Algorithms*, 2nd ed., Lemma 3.1 and 3.3, and eq. (3.5) for inner products). For
query row i, keys t <= i, exact scores s_t = q_i . k_t, c0 = 1 / sqrt(D), W_t = exp(c0 (s_t - M))
for any shift M, the exact output is O = N / L with N = sum W_t v_t, L = sum W_t.

1. Exponents. TensorE sums the 128 exact bf16 products in fp32: |s^_t - s_t| <= E_t =
   gamma_128 sum_d |q_id| |k_td|. The kernel's P of block j is exp(fl(fl(s^ c) + fl(-c m_j)))
   with c = fl32(c0), and each later block multiplies the running sums by
   alpha = exp(fl(fl(m_old c) + fl(-c m_new))). In exact arithmetic the alphas telescope, so
   every key's weight is exp(c0 (s_t - m_last)) up to the exponent error: c0 E_t, plus per
   exponent evaluated c0 (x - m) (1 + e) with |e| <= 6 u (1 + u)^2 in the terms of magnitude
   <= R = max_t |s_t| + E (which bounds |s^| and |m|): the rounding of c itself (it scales both
   x and m: 2 u), of the product (u), of -c m (u), and of the add (u, on an operand up to 2R).
   A row whose query tile visits nb blocks has at most nb such exponents on any key's path
   (its P and nb - 1 alphas): |Delta_t| <= c0 E_t + 6 nb u c0 R (1+u)^2 =: Delta.
   The effective weights are W_t exp(delta_t) (1 + rounding), |delta_t| <= Delta.
2. Denominator: fp32 exp (u); the row sum of 512 fp32 values (gamma_511); per later block l alpha
   and + (2 u) and alpha's own rounding (u) (block 0 copies its sum and P V unscaled): L^ = sum W_t (1 + w_t) with
   1 + |w_t| <= e^Delta (1 + gamma_(512 + 3 nb + 1)).
3. Numerator: the same exps, then P rounded to bf16 (u_bf: the rounding the bound is mostly
   made of), P V summed in fp32 over the block's up to 512 keys (gamma_512 of sum |P v|),
   o alpha and + (2 u) and alpha (u) per block: N^ = sum W_t v_t (1 + n_t) with
   1 + |n_t| <= e^Delta (1 + u_bf) (1 + gamma_(512 + 3 nb + 1)).
4. o = N^ * fl(1 / L^): two more roundings.
So with A = sum W_t |v_t| / L (per column of v), |n| <= nu, |w| <= omega:
  |o - O| <= ((nu A + omega |O|) / (1 - omega)) (1 + gamma_2) + gamma_2 |O|.
Masked keys contribute exactly 0 (exp(-2.6e37) underflows to +0, in fp32 and in bf16).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, gamma, unit_roundoff

KERNEL = "kernels/flash_attention_causal"
TARGETS = ("trn1", "trn2", "trn3")
U = unit_roundoff("float32")
U_BF = unit_roundoff("bfloat16")
KB = 512


def attention_oracle(q_t: np.ndarray, k_t: np.ndarray, v: np.ndarray):
    """float64 causal attention of the bf16 inputs (q, k given [D, S]) and the bound above."""
    q = q_t.astype(np.float64).T            # [S, D]
    k = k_t.astype(np.float64).T
    v = v.astype(np.float64)
    s_len, d = q.shape
    c0 = 1 / np.sqrt(d)
    scores = q @ k.T
    e_acc = gamma(d) * (np.abs(q) @ np.abs(k).T)          # |s^ - s| <= E
    causal = np.tril(np.ones((s_len, s_len), dtype=bool))
    scores_m = np.where(causal, scores, -np.inf)
    w = np.exp(c0 * (scores_m - scores_m.max(axis=1, keepdims=True)))   # 0 where masked
    big_l = w.sum(axis=1, keepdims=True)
    out = (w @ v) / big_l
    a = (w @ np.abs(v)) / big_l
    nb = (np.arange(s_len) // 128) // (KB // 128) + 1                    # blocks per row
    r = np.where(causal, np.abs(scores), 0).max(axis=1) + np.where(causal, e_acc, 0).max(axis=1)
    delta = (c0 * np.where(causal, e_acc, 0).max(axis=1)
             + 6 * nb * U * c0 * r * (1 + U) ** 2)[:, None]
    g = np.array([gamma(KB + 3 * n + 1) for n in nb])[:, None]
    omega = np.exp(delta) * (1 + g) - 1
    nu = np.exp(delta) * (1 + U_BF) * (1 + g) - 1
    bound = (nu * a + omega * np.abs(out)) / (1 - omega) * (1 + gamma(2)) + gamma(2) * np.abs(out)
    # the derivation's premises (omega < 1, finite terms) hold; assert_within_bound would pass
    # any error against a negative bound
    assert np.all(np.isfinite(bound)) and np.all(bound >= 0) and np.all(omega < 1)
    return out, bound


@pytest.mark.neuronemu_targets(*TARGETS)
def test_flash_attention_matches_float64(neuronemu_run, neuronemu_target):
    r = neuronemu_run(KERNEL)
    assert r.target == neuronemu_target and r.warnings == []
    out, bound = attention_oracle(r.inputs["q"], r.inputs["k"], r.inputs["v"])
    assert_within_bound(r.outputs["o"], out, bound)
    # row 0 attends only to key 0: P = 1 exactly, so o[0] = v[0] bit for bit
    assert np.array_equal(r.outputs["o"][0], r.inputs["v"][0].astype(np.float32))


@pytest.mark.neuronemu_targets("trn1", "trn2")
def test_flash_attention_large_scores_need_the_running_max(neuronemu_run):
    """q scaled by 32 (exact in bf16) gives scores of several hundred after the 1/sqrt(D) scale:
    exp overflows fp32 unless every block subtracts the running max, and the later key block
    of a query often holds a larger max than the earlier one, so the alpha rescaling of l and o
    is exercised in both directions."""
    rng = np.random.default_rng(2)
    q = (32 * rng.normal(size=(128, 1024))).astype(ml_dtypes.bfloat16)
    k = rng.normal(size=(128, 1024)).astype(ml_dtypes.bfloat16)
    v = rng.normal(size=(1024, 128)).astype(ml_dtypes.bfloat16)
    r = neuronemu_run(KERNEL, {"q": q, "k": k, "v": v})
    out, bound = attention_oracle(r.inputs["q"], r.inputs["k"], r.inputs["v"])
    assert_within_bound(r.outputs["o"], out, bound)


def test_flash_attention_skips_blocks_above_the_diagonal(neuronemu_run):
    """Query tile i visits key blocks 0..i/4 only: 12 score matmuls (a dense kernel: 16), 8 mask
    matmuls (one per diagonal block), and 4 + (i mod 4 + 1) P^T chunks per tile in the second
    half, i mod 4 + 1 in the first: 36 transposes and 36 P V matmuls (dense: 64 each). The
    software pipeline overlaps the engines: the run is well under the sum of busy times (0.37
    of it; issuing each block's stages in order, without the pipeline, gave 0.59)."""
    r = neuronemu_run(KERNEL, target="trn2")
    assert r.result.instructions["tensor"] == 12 + 8 + 36 + 36
    assert r.timing.tensor_flops == 2 * 128 * 128 * (512 * (12 + 8) + 128 * 36)
    serial = sum(t.busy_ns for t in r.timing.tracks.values())
    assert r.time_ns < 0.5 * serial, (r.time_ns, serial)
