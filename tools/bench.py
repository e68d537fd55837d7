"""Interpreter speed: instructions per second and wall time against plain numpy doing the same math.

Usage: python tools/bench.py [--repeat N] [--iterations N]

Cases:
  small-tile loop   a register loop of small Vector/Scalar/GpSimd ops on [128, 64] fp32 tiles:
                    measures dispatch overhead (instructions per second)
  bundled kernels   each programs/examples kernel, against numpy computing the same result
                    (numpy float32; matmul through numpy's BLAS, so it is the fast baseline)

Times are the best of --repeat runs of the jitted loop only (``Result.wall_seconds``), after a
warm-up run that fills the numba cache; assembly time is reported separately.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import neuronemu

SMALL_TILE_LOOP = """\
# {iterations} iterations x 6 instructions on [128, 64] tiles
.sbuf a float32[128, 64]
.sbuf b float32[128, 64]
.sbuf c float32[128, 64]
.sbuf col float32[128, 1]
gpsimd.iota a, base=0, channel_multiplier=1, step=1
vector.memset b, value=0.5
ctrl.mov r0, 0
loop:
vector.tensor_tensor c, a, b, op=add
vector.tensor_scalar c, c, op0=multiply, operand0=0.5
scalar.activation c, c, func=relu
vector.tensor_reduce col, c, op=maximum
ctrl.add r0, r0, 1
ctrl.blt r0, {iterations}, loop
"""


def best_run(program, repeat: int, topology: str | None = None):
    """The fastest of ``repeat`` runs; collectives kernels run on every rank of ``topology``."""
    from neuronemu.api import run_spmd

    if topology is None:
        results = [neuronemu.run(program) for _ in range(repeat)]
    else:
        results = [run_spmd(program, topology) for _ in range(repeat)]
    return min(results, key=lambda r: r.wall_seconds)


def steps(result) -> int:
    """Instructions executed (summed over the ranks of a multi-rank run)."""
    ranks = getattr(result, "ranks", None)
    return sum(r.steps for r in ranks) if ranks is not None else result.steps


def numpy_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def numpy_equivalents(tensors: dict[str, np.ndarray]) -> dict[str, callable]:
    f32 = {k: np.asarray(v, dtype=np.float32) for k, v in tensors.items()}

    def softmax():
        x = f32["x"]
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def layernorm():
        x = f32["x"]
        return (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)

    def double():  # the timing/ and dma/queues kernels: y = relu(2x) or 2x over x[2048, 512]
        return np.maximum(2 * f32["x"], 0)

    def weight_stream():
        x = f32["x"].transpose(1, 0, 2).reshape(2048, 64)
        return f32["w"].T @ x

    return {
        "dma/queues": lambda: 2 * f32["x"],
        "dma/weight_stream": weight_stream,
        "dma/weight_stream_compressed": weight_stream,
        "timing/single_buffer": double,
        "timing/double_buffer": double,
        "timing/explicit_sync": double,
        "examples/vector_add": lambda: f32["a"] + f32["b"],
        "examples/matmul_tile": lambda: f32["lhsT"].T @ f32["rhs"],
        "examples/matmul_tiled": lambda: f32["lhsT"].T @ f32["rhs"],
        "examples/softmax": softmax,
        "examples/layernorm": layernorm,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()

    print(f"neuronemu {neuronemu.__version__}, numpy {np.__version__}")
    loop = neuronemu.assemble(SMALL_TILE_LOOP.format(iterations=args.iterations),
                              filename="small_tile_loop.s")
    neuronemu.run(loop)  # warm-up: compiles or loads the numba cache
    result = best_run(loop, args.repeat)
    rate = result.steps / result.wall_seconds
    print(f"small-tile loop: {result.steps} instructions in {result.wall_seconds * 1e3:.1f} ms "
          f"= {rate:,.0f} instructions/s ({result.wall_seconds / result.steps * 1e6:.2f} us each)")

    print(f"\n{'kernel':<42}{'instrs':>8}{'assemble ms':>13}{'run ms':>10}{'numpy ms':>10}"
          f"{'ratio':>8}")
    from neuronemu.programs import bundled_programs

    for name, path in bundled_programs().items():
        start = time.perf_counter()
        program = neuronemu.assemble_file(path)
        assemble_ms = (time.perf_counter() - start) * 1e3
        # the collectives programs are written for the 16 ranks of a trn2.48xlarge
        topology = "trn2.48xlarge" if name.startswith("collectives/") else None
        result = best_run(program, args.repeat, topology)
        run_ms = result.wall_seconds * 1e3
        reference = None if topology else numpy_equivalents(result.tensors).get(name)
        if reference is None:
            label = f"{name} (16 ranks)" if topology else name
            print(f"{label:<42}{steps(result):>8}{assemble_ms:>13.1f}{run_ms:>10.1f}{'-':>10}"
                  f"{'-':>8}")
            continue
        ref_ms = numpy_time(reference, args.repeat) * 1e3
        print(f"{name:<42}{result.steps:>8}{assemble_ms:>13.1f}{run_ms:>10.1f}{ref_ms:>10.2f}"
              f"{run_ms / ref_ms:>8.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
