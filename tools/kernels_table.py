"""The table of the kernel library in docs/kernels.md: each kernel's tensors, targets, modelled
time, what bounds it and how busy TensorE and DMA are.

Every program under programs/kernels/ (and the multi-rank library kernels of MULTI_RANK) is
assembled for each target; a target it does not assemble for (MX instructions on trn1/trn2, say)
is not one it supports. Each supported target runs once with the kernel's default inputs (seed 0);
a multi-rank kernel runs on its .topology, or for another target on SYSTEM_OF's system.

    python tools/kernels_table.py            print the table
    python tools/kernels_table.py --write    replace the table in docs/kernels.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "kernels.md"
BEGIN = "<!-- kernels table: tools/kernels_table.py --write -->"
END = "<!-- end of kernels table -->"
TARGETS = ("trn1", "trn2", "trn3")
# library kernels that need a topology (they live beside the other collectives)
MULTI_RANK = ("collectives/tp_linear",)
# the system a multi-rank kernel runs on for a target its own .topology is not made of
SYSTEM_OF = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3-ultraserver-gen1"}


def library() -> dict[str, Path]:
    from neuronemu.programs import bundled_programs

    found = bundled_programs()
    return {name: path for name, path in found.items()
            if name.startswith("kernels/") or name in MULTI_RANK}


def _tensors(program) -> str:
    def show(tensors) -> str:
        return ", ".join(f"{t.name} {t.dtype}[{', '.join(map(str, t.shape))}]" for t in tensors)

    return f"{show(program.inputs())} → {show(program.outputs())}"


def _run(name: str, program):
    """(timing of the slowest rank, ranks) of one run with default inputs."""
    import neuronemu
    from neuronemu.api import run_spmd
    from neuronemu.isa.topologies import load_topologies

    topology = program.topology
    if name in MULTI_RANK or topology:
        target = program.target.name
        if topology is None or load_topologies()[topology].target != target:
            topology = SYSTEM_OF[target]
        result = run_spmd(program, topology)
        slowest = max(result.ranks, key=lambda r: r.timing.time_ns)
        return slowest.timing, result.world
    return neuronemu.run(program).timing, 1


def _us(ns: float) -> str:
    return f"{ns / 1000:.2f} µs"


def _ranks(world: int) -> str:
    return f" ({world} ranks)" if world > 1 else ""


def row(name: str, path: Path) -> str:
    import neuronemu
    from neuronemu.errors import AsmError
    from neuronemu.programs import description

    times, trn2 = {}, None
    for target in TARGETS:
        try:
            program = neuronemu.assemble_file(path, target=target)
        except AsmError:
            continue
        timing, world = _run(name, program)
        times[target] = (timing.time_ns, world)
        if target == "trn2" or trn2 is None:
            trn2 = (target, timing, world)
    target, timing, world = trn2
    tensor = (f"{timing.tensor_peak_fraction:.0%} of peak" if timing.tensor_flops else "—")
    dma = timing.dma
    dma_text = (f"{dma.achieved_gbps:.0f} GB/s, engines {dma.engine_utilisation:.0%}"
                if dma and dma.transfers else "—")
    others = ", ".join(f"{t} {_us(ns)}{_ranks(n)}" for t, (ns, n) in times.items()
                       if t != target) or "—"
    return (f"| `{name}` | {description(path.read_text())} | {_tensors(program)} | "
            f"{', '.join(times)} | {target} {_us(timing.time_ns)}{_ranks(world)} | {others} | "
            f"{timing.bound_by or '—'} | {tensor} | {dma_text} |")


def table() -> str:
    lines = [("| kernel | computes | tensors (in → out) | targets | modelled time | "
              "other targets | bound by | TensorE FLOP/s | DMA |"),
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [row(name, path) for name, path in sorted(library().items())]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in docs/kernels.md")
    args = parser.parse_args()
    text = table()
    if not args.write:
        print(text)
        return 0
    doc = DOC.read_text()
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[end:])
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
