"""Compile (and cache) every jitted entry point once by running each bundled example.

CI runs this before pytest so the first test does not pay numba's cold compile; developers can
run it after a fresh install too. Prints the time it took.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    start = time.perf_counter()
    import neuronemu
    from neuronemu.api import run_spmd
    from neuronemu.programs import bundled_programs

    for name, path in bundled_programs().items():
        program = neuronemu.assemble_file(path)
        if name.startswith("collectives/"):
            run_spmd(program, "trn2.48xlarge")  # written for 16 ranks
        else:
            neuronemu.run(program)
        print(f"warmed {name}")
    from neuronemu.numerics import dtypes

    dtypes.to_bits([1.0], "bfloat16")
    print(f"numba cache warm in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
