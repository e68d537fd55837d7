"""Small kernels for instruction tests: declare HBM inputs/outputs and SBUF tiles from a spec,
run a body, return the outputs. Oracles live in the tests, never in the emulator."""

from __future__ import annotations

import numpy as np

import neuronemu


def run_kernel(body: str, *, inputs: dict[str, np.ndarray] | None = None,
               decls: str = "", target: str = "trn2") -> neuronemu.Result:
    """``inputs`` become fp32 (or their own dtype's) HBM input tensors named as given."""
    lines = [f".target {target}"]
    for name, array in (inputs or {}).items():
        dtype = {"float32": "float32", "bfloat16": "bfloat16", "int32": "int32"}[array.dtype.name]
        shape = ", ".join(map(str, array.shape))
        lines.append(f".hbm {name} {dtype}[{shape}] input")
    lines.append(decls)
    lines.append(body)
    return neuronemu.run(neuronemu.assemble("\n".join(lines) + "\n", filename="t.s"),
                         inputs=inputs)

