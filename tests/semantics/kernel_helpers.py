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



def run_on_m_and_b(rng: np.random.Generator, body: str, decls: str, shape: tuple[int, int]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``body`` run between loading random fp32 SBUF tiles ``m`` [shape] and ``b`` [P, 32] (which
    ``decls`` declares, with an HBM output ``out`` like m) and storing m to out: (m, b, out)."""
    m = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal((shape[0], 32)).astype(np.float32)
    result = run_kernel(f"dma.copy m, xm\ndma.copy b, xb\n{body}\ndma.copy out, m",
                        inputs={"xm": m, "xb": b}, decls=decls)
    return m, b, result.outputs["out"]
