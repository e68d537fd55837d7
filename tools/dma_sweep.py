"""Print the modelled DMA efficiency curve: one HBM -> SBUF transfer of [128, chunk] bytes per
target and chunk size, its modelled time and its share of the per-core peak bandwidth.

    python tools/dma_sweep.py            # markdown table for docs/dma.md
"""

from __future__ import annotations

import neuronemu
from neuronemu.isa.table import load_isa

CHUNKS = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 32768]
TARGETS = ["trn1", "trn2", "trn3"]


def transfer_ns(target: str, chunk: int) -> float:
    n = chunk // 4
    src = f".hbm x float32[128, {n}] input\n.sbuf a float32[128, {n}]\ndma.copy a, x\n"
    return neuronemu.run(neuronemu.assemble(src, "sweep.s", target=target)).timing.time_ns


def main() -> None:
    print("| bytes per partition | " + " | ".join(f"{t} ns (GB/s, % of peak)" for t in TARGETS)
          + " | efficiency excl. fixed cost |")
    print("|---:|" + "---:|" * (len(TARGETS) + 1))
    targets = load_isa().targets
    peak = {t: targets[t].dma_bytes_per_ns for t in TARGETS}
    for chunk in CHUNKS:
        cells = []
        for t in TARGETS:
            ns = transfer_ns(t, chunk)
            gbps = 128 * chunk / ns
            cells.append(f"{ns:,.0f} ({gbps:.0f}, {gbps / peak[t]:.0%})")
        print(f"| {chunk} | " + " | ".join(cells) + f" | {chunk / (chunk + 256):.0%} |")


if __name__ == "__main__":
    main()
