"""Compare neuronemu's TensorE time for GEMMs with SCALE-Sim 3's weight-stationary cycle formula.

Usage: python -m tools.scalesim_compare [--target trn2]   (prints the Markdown table of
docs/timing.md)

For C[M, N] = A[M, K] @ B[K, N] on an R x C = 128 x 128 array, weight stationary: the stationary
operand tiles K (array rows) x M (array columns), the moving operand streams N columns. SCALE-Sim
counts, per fold (one stationary tile), 2R + C + T - 2 cycles with T = N (fill the weights, stream,
drain), folds = ceil(K/R) * ceil(M/C), and no overlap between folds. neuronemu issues each
matmul at its initiation interval max(64, N) (bf16), loads the stationary operand in the
background while the previous matmul streams (charging the first one's LoadStationary, 128 / 4
cycles, because the array idled before it), and makes the result readable R + C - 2 = 254 cycles
after the last issue (isa/costs.toml tensor_matmul). The neuronemu column is the time from the
first matmul's start until a Vector instruction may read the last PSUM result, in TensorE
cycles; "issue only" is the TensorE busy time. The kernels below hold no DMA.

The last column takes SCALE-Sim's count with its folds overlapped: each fold after the first
without its own weight fill and drain (2R + C - 2 = 382 cycles). SCALE-Sim lays the folds one
after the other (scalesim/compute/systolic_compute_ws.py, create_ifmap_demand_mat: every fold's
demand matrix gets arr_row cycles of weight-load prefix and arr_col - 1 of drain suffix, is
skewed by arr_row - 1, and the folds are concatenated); TensorE loads the next stationary tile
in the background while the current one streams ("background LoadStationary", several LS/MM
pairs in flight, T2A / T3; ARCHITECTURE.md §4), so only the first fill and the last drain are
exposed. The ratio against that column isolates what neuronemu models differently inside a
fold: a 32-cycle LoadStationary where SCALE-Sim fills the weights in R = 128 cycles.
"""

from __future__ import annotations

import argparse
import math
import sys

import neuronemu

ROWS = COLS = 128
SHAPES = [(128, 128, 128), (128, 128, 512), (512, 512, 512), (1024, 1024, 512),
          (128, 4096, 512), (4096, 128, 64), (128, 128, 4096), (2048, 2048, 2048),
          (1024, 1024, 4096)]


def folds(m: int, k: int) -> int:
    return math.ceil(k / ROWS) * math.ceil(m / COLS)


def scalesim_cycles(m: int, k: int, n: int) -> int:
    return folds(m, k) * (2 * ROWS + COLS + n - 2) - 1


def scalesim_overlapped(m: int, k: int, n: int) -> int:
    """SCALE-Sim's count less the weight fill and drain of every fold after the first."""
    return scalesim_cycles(m, k, n) - (folds(m, k) - 1) * (2 * ROWS + COLS - 2)


def gemm_kernel(m: int, k: int, n: int, target: str) -> str:
    """Straight-line matmuls: every (m tile, n tile) accumulates K / 128 matmuls into PSUM; a
    Vector copy of the PSUM tile at the end reads the last result."""
    n_tile = min(n, 512)
    lines = [f".target {target}", ".sbuf w bfloat16[128, 128]", f".sbuf x bfloat16[128, {n_tile}]",
             f".psum acc float32[128, {n_tile}]", f".sbuf out float32[128, {n_tile}]",
             "vector.memset w, value=0.0", "vector.memset x, value=0.0"]
    for _mt in range(math.ceil(m / 128)):
        for _nt in range(math.ceil(n / n_tile)):
            for kt in range(math.ceil(k / 128)):
                accumulate = "true" if kt else "false"
                lines.append(f"tensor.matmul acc, w, x, accumulate={accumulate}")
    lines.append("vector.tensor_copy out, acc")
    return "\n".join(lines) + "\n"


def neuronemu_cycles(m: int, k: int, n: int, target: str) -> tuple[float, float]:
    """(TensorE cycles from the first matmul's start until its last result is readable,
    TensorE busy cycles)."""
    program = neuronemu.assemble(gemm_kernel(m, k, n, target), filename="gemm.s")
    timing = neuronemu.run(program).timing
    tensor = timing.tracks["tensor"]
    names = [program.instructions[int(e[0])].definition.name for e in timing.events]
    first = min(t[0] for name, t in zip(names, timing.event_times, strict=True)
                if name == "tensor.matmul")
    reader = [t[0] for name, t in zip(names, timing.event_times, strict=True)
              if name == "vector.tensor_copy"][-1]
    ghz = program.target.clock_ghz["tensor"]
    return (reader - first) * ghz, tensor.busy_cycles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="trn2", choices=["trn1", "trn2", "trn3"])
    args = parser.parse_args()
    print("| M x K x N | kind | matmuls | neuronemu cycles (issue only) | SCALE-Sim cycles | "
          "ratio (issue only) | SCALE-Sim, folds overlapped | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for m, k, n in SHAPES:
        ours, issue = neuronemu_cycles(m, k, n, args.target)
        theirs = scalesim_cycles(m, k, n)
        matmuls = math.ceil(m / 128) * math.ceil(k / 128) * math.ceil(n / 512)
        per_fold = max(1, n // 512)
        kind = "single matmul" if matmuls == 1 else (
            f"{'long' if n >= 2048 else 'short'}: {per_fold} x {min(n, 512)} columns per fold")
        overlapped = scalesim_overlapped(m, k, n)
        print(f"| {m} x {k} x {n} | {kind} | {matmuls} | {ours:,.0f} ({issue:,.0f}) | "
              f"{theirs:,} | {ours / theirs:.2f} ({issue / theirs:.2f}) | {overlapped:,} | "
              f"{ours / overlapped:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
