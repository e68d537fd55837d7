"""Emulated all-reduce time per topology, size and algorithm, next to the textbook ring formula
(the table in docs/multichip.md).

Each cell runs `cc.all_reduce` on every chip of the topology (one rank per chip, fp32 data) and
reports the modelled time in us; `analytic` is Topology.ring_allreduce_ns with the target's DMA
reduce rate (the textbook ring plus its n - 1 additions of a chunk). Also prints the wall
time of each run.

Usage: python tools/collective_table.py [--sizes 65536,1048576] [--topologies a,b]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import neuronemu
from neuronemu.api import run_spmd
from neuronemu.isa.topologies import load_topologies

ALGORITHMS = ("ring", "mesh", "rdh", "auto")


def _targets():
    from neuronemu.isa.table import load_isa

    return load_isa().targets


def kernel(nbytes: int, algorithm: str) -> str:
    columns = nbytes // 4 // 128
    return (f".hbm x float32[128, {columns}] input init=uniform(-1, 1)\n"
            f".hbm y float32[128, {columns}] output\n"
            f"    cc.all_reduce y, x, op=add, algorithm={algorithm}\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="65536,1048576")
    parser.add_argument("--topologies", default=",".join(load_topologies()))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    topologies = load_topologies()
    print("| topology | bytes per chip | ring | mesh | rdh | auto (picks) | analytic ring | "
          "wall s (auto) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.topologies.split(","):
        topo = topologies[name]
        for nbytes in sizes:
            cells = []
            wall = 0.0
            for algorithm in ALGORITHMS:
                world = topo.chips
                if algorithm == "rdh" and world & (world - 1):
                    cells.append("-")
                    continue
                program = neuronemu.assemble(kernel(nbytes, algorithm), "all_reduce.s",
                                             target=topo.target)
                start = time.perf_counter()
                result = run_spmd(program, name)
                wall = time.perf_counter() - start
                cell = f"{result.time_ns / 1000:,.1f}"
                if algorithm == "auto":
                    from neuronemu.multichip.collectives import choose

                    cell += f" ({choose('auto', nbytes, world) if world > 1 else 'local'})"
                cells.append(cell)
            target = _targets()[topo.target]
            reduce_gb_s = target.dma_bytes_per_ns * target.dma_reduce_efficiency
            analytic = topo.ring_allreduce_ns(nbytes, reduce_gb_s) / 1000
            print(f"| `{name}` | {nbytes:,} | {' | '.join(cells)} | {analytic:,.1f} | "
                  f"{wall:.2f} |", flush=True)


if __name__ == "__main__":
    main()
