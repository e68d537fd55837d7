"""programs/timing/pe_row_tiles.s: four K = 32 heads on four 32-row PE tiles run concurrently.
Oracles: numpy float64 matmuls of the bf16 inputs the run used (bf16 products are exact in fp32
and K = 32 sums round at most 31 times), and the matmul cost max(64, N) = 512 TensorE cycles (+ 32 for an exposed LoadStationary)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.programs import find_program

TENSOR_GHZ = 2.4  # trn2


def run(text: str) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(text, "pe_row_tiles.s"))


def test_scores_match_numpy_per_head() -> None:
    result = run(find_program("timing/pe_row_tiles").read_text())
    q = result.tensors["q"].astype(np.float64)
    k = result.tensors["k"].astype(np.float64)
    for h in range(4):
        rows = slice(32 * h, 32 * h + 32)
        exact = q[rows].T @ k[rows]
        bound = 31 * 2.0**-24 * (np.abs(q[rows]).T @ np.abs(k[rows])) * 1.01
        assert np.all(np.abs(result.outputs["scores"][h] - exact) <= bound)


def test_four_tiles_take_the_time_of_one_matmul() -> None:
    text = find_program("timing/pe_row_tiles").read_text()
    tiled = run(text).timing.tracks["tensor"].busy_ns
    untiled_text = "\n".join(line.split(", tile_position")[0] for line in text.splitlines())
    matmuls = [line for line in untiled_text.splitlines() if "tensor.matmul" in line
               and not line.startswith("#")]
    assert len(matmuls) == 4 and not any("tile_" in line for line in matmuls)
    untiled = run(untiled_text).timing.tracks["tensor"].busy_ns
    # each matmul waits for the loads, so the first on each PE tile pays its LoadStationary
    # (128 stationary columns / 4 = 32 cycles); untiled, the other three load theirs while the
    # one before streams
    assert tiled == pytest.approx((32 + 512) / TENSOR_GHZ)
    assert untiled == pytest.approx((32 + 4 * 512) / TENSOR_GHZ)
