"""Compare neuronemu's TensorE time for GEMMs with SCALE-Sim 3's weight-stationary cycle formula.

Usage: python tools/scalesim_compare.py [--target trn2]   (prints the Markdown table of
docs/timing.md)

For C[M, N] = A[M, K] @ B[K, N] on an R x C = 128 x 128 array, weight stationary: the stationary
operand tiles K (array rows) x M (array columns), the moving operand streams N columns. SCALE-Sim
counts, per fold (one stationary tile), 2R + C + T - 2 cycles with T = N (fill the weights, stream,
drain), folds = ceil(K/R) * ceil(M/C), and no overlap between folds. neuronemu charges each
matmul its initiation interval max(64, N) (bf16) and assumes the weight load runs in the
background, as TensorE's double-buffered LoadStationary does. Only TensorE time is compared: the
kernels below hold no DMA.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import neuronemu

ROWS = COLS = 128
SHAPES = [(128, 128, 128), (128, 128, 512), (512, 512, 512), (1024, 1024, 512),
          (128, 4096, 512), (4096, 128, 64), (2048, 2048, 2048)]


def scalesim_cycles(m: int, k: int, n: int) -> int:
    folds = math.ceil(k / ROWS) * math.ceil(m / COLS)
    return folds * (2 * ROWS + COLS + n - 2) - 1


def gemm_kernel(m: int, k: int, n: int, target: str) -> str:
    """Straight-line matmuls: every (m tile, n tile) accumulates K / 128 matmuls into PSUM."""
    n_tile = min(n, 512)
    lines = [f".target {target}", ".sbuf w bfloat16[128, 128]", f".sbuf x bfloat16[128, {n_tile}]",
             f".psum acc float32[128, {n_tile}]", "vector.memset w, value=0.0",
             "vector.memset x, value=0.0"]
    for _mt in range(math.ceil(m / 128)):
        for _nt in range(math.ceil(n / n_tile)):
            for kt in range(math.ceil(k / 128)):
                accumulate = "true" if kt else "false"
                lines.append(f"tensor.matmul acc, w, x, accumulate={accumulate}")
    return "\n".join(lines) + "\n"


def neuronemu_cycles(m: int, k: int, n: int, target: str) -> tuple[int, float]:
    program = neuronemu.assemble(gemm_kernel(m, k, n, target), filename="gemm.s")
    timing = neuronemu.run(program, max_trace_events=0).timing
    tensor = timing.tracks["tensor"]
    return tensor.busy_cycles, tensor.busy_ns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="trn2", choices=["trn1", "trn2", "trn3"])
    args = parser.parse_args()
    print("| M x K x N | matmuls | neuronemu cycles | SCALE-Sim cycles | ratio |")
    print("|---|---|---|---|---|")
    for m, k, n in SHAPES:
        ours, _ = neuronemu_cycles(m, k, n, args.target)
        theirs = scalesim_cycles(m, k, n)
        matmuls = math.ceil(m / 128) * math.ceil(k / 128) * math.ceil(n / 512)
        print(f"| {m} x {k} x {n} | {matmuls} | {ours:,} | {theirs:,} | {ours / theirs:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
