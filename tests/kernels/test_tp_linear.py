"""collectives/tp_linear: row-parallel linear layer, y = x @ W with x and W sharded along K over
the ranks, partial matmuls summed by cc.all_reduce (fp32) and replicated on every rank.

Inputs: a full x [T, K] and W [K, N] in bf16 with K = world x 256; rank r gets x[:, 256 r :
256 r + 256] (given as a [world, T, 256] stack) and W's rows 256 r .. 256 r + 255 (a [K, N] array
is split by rows, docs/multichip.md). Oracle: the float64 product of the full matrices.

Error bound: every output is a sum of K exact fp32 products of bf16 values, rounded in fp32 in
some order (each rank's 256-term PSUM chain, then the all-reduce's fp32 partial sums, in the
order of its algorithm). Higham's bound holds for any order of summation (*Accuracy and
Stability of Numerical Algorithms*, 2nd ed., §3.1, gamma_n of Lemma 3.1, u = 2^-24):
|y_c - x @ W| <= gamma_K |x| @ |W|.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronemu.testing import assert_within_bound, matmul_error_bound

T, KR, N = 256, 256, 512
TOPOLOGY = {"trn1": ("trn1.32xlarge", 16), "trn2": ("trn2.48xlarge", 16),
            "trn3": ("trn3-ultraserver-gen1", 64)}


@pytest.mark.neuronemu_targets("trn1", "trn2", "trn3")
def test_tp_linear(neuronemu_run, neuronemu_target) -> None:
    topology, world = TOPOLOGY[neuronemu_target]
    k = world * KR
    rng = np.random.default_rng(15)
    x = rng.normal(size=(T, k)).astype(ml_dtypes.bfloat16)
    w = rng.normal(scale=k**-0.5, size=(k, N)).astype(ml_dtypes.bfloat16)
    shards = np.ascontiguousarray(x.reshape(T, world, KR).transpose(1, 0, 2))
    r = neuronemu_run("collectives/tp_linear", {"x": shards, "w": w}, topology=topology)

    y = r.outputs["y"]
    assert y.shape == (world, T, N)
    a, b = x.astype(np.float64), w.astype(np.float64)
    # an all-reduce leaves the same bits on every rank (each chunk is reduced once, then copied)
    differ = (y.view(np.uint32) != y[0].view(np.uint32)).any(axis=(1, 2))
    assert not differ.any(), f"ranks {np.flatnonzero(differ).tolist()} differ from rank 0"
    assert_within_bound(y[0], a @ b, matmul_error_bound(a, b), label="y (every rank)")
    assert r.warnings == []

    # Design: each token tile's all-reduce is issued on its own queue as soon as its partial is
    # in SBUF, so the two collectives run at the same time rather than one after the other.
    tracks = r.result.ranks[0].timing.tracks
    busy = [tracks[q].busy_ns if q in tracks else 0.0 for q in ("dma.q14", "dma.q15")]
    assert r.result.ranks[0].timing.time_ns < sum(busy), busy
