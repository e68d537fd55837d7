"""Check that `neuronemu warm` is complete: after it, nothing a user runs compiles (issue 29).

    python -m tools.warm_check        # exit 0, or 1 listing the units that compiled

Runs a tour in a child process with ``NEURONEMU_COMPILE_LOG`` set (neuronemu/compiled/
compiling.py): every target's dtypes with every initialiser, with and without stochastic
rounding; the CLI's run path with --json and --trace on a bundled kernel, a `.sync explicit`
kernel and a collective; an NKI kernel in fp32 and bf16. Anything compiled into this version's
cache during the tour is a unit `neuronemu warm` should have compiled.

CI runs it right after `neuronemu warm` (.ci/run), before any test can fill the cache with
what warm missed; tests/test_warm_check.py checks that it catches a unit warm did not make.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

_TOUR = r'''
import os, sys, tempfile
import numpy as np
import neuronemu
from neuronemu.cli import main
from neuronemu.isa.table import load_isa

INITS = ["zeros", "ones", "arange", "identity", "full(2.5)", "normal(0, 1)", "uniform(-1, 1)",
         "nan"]
isa = load_isa()
for target in sorted(isa.targets):
    lines = [f".target {target}"]
    for name in isa.targets[target].dtypes:
        lines += [f".hbm x_{name}_{i} {name}[8, 8] input init={init}"
                  for i, init in enumerate(INITS)]
    lines += [".hbm o float32[8, 8] output", "dma.copy o, x_float32_2, queue=0"]
    program = neuronemu.assemble("\n".join(lines) + "\n")
    for stochastic in (False, True):
        neuronemu.run(program, stochastic_rounding=stochastic)

out = tempfile.mkdtemp()
for argv in (["run", "examples/vector_add", "--json", "--trace", f"{out}/t.json"],
             ["run", "timing/explicit_sync", "--json"],
             ["run", "collectives/ring_allreduce", "--json", "--trace", f"{out}/c.json"]):
    try:
        main(argv, standalone_mode=False)
    except SystemExit:
        pass
'''

# run under `python -m neuronemu.nki`, the switch that makes `import nki` load neuronemu's
_NKI_TOUR = r'''
import ml_dtypes
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def scale_add(a, b):
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_sb = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_sb, src=a)
    nisa.dma_copy(dst=b_sb, src=b)
    s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=s, data1=a_sb, data2=b_sb, op=nl.add)
    y_sb = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.activation(dst=y_sb, op=nl.exp, data=s)
    nisa.dma_copy(dst=y, src=y_sb)
    return y

for dtype in (np.float32, ml_dtypes.bfloat16):
    a = np.linspace(-1, 1, 128 * 64).reshape(128, 64).astype(dtype)
    scale_add(a, a)
'''


def compiled_during_tour(env: dict | None = None) -> list[str]:
    """The units the tour compiled into this version's cache (empty when warm is complete)."""
    env = {**os.environ, **(env or {})}
    with tempfile.TemporaryDirectory(prefix="neuronemu-warm-check-") as tmp:
        log = Path(tmp) / "compiled.log"
        env["NEURONEMU_COMPILE_LOG"] = str(log)
        nki_tour = Path(tmp) / "nki_tour.py"
        nki_tour.write_text(_NKI_TOUR)
        for argv in (["-c", _TOUR], ["-m", "neuronemu.nki", str(nki_tour)]):
            subprocess.run([sys.executable, *argv], env=env, check=True, cwd=tmp,
                           stdout=subprocess.DEVNULL)
        lines = log.read_text().splitlines() if log.exists() else []
    where = str(_cache_dir_in(env))
    return sorted({line.split("\t")[0] for line in lines if line.split("\t")[1:2] == [where]})


def _cache_dir_in(env: dict) -> Path:
    """``cache_dir()`` as the tour's environment sees it (NUMBA_CACHE_DIR, XDG_CACHE_HOME and
    the bounds-check flag all move it)."""
    code = "from neuronemu.compiled.cache import cache_dir; print(cache_dir())"
    return Path(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                               capture_output=True, text=True).stdout.strip())


def main() -> int:
    compiled = compiled_during_tour()
    if compiled:
        print("neuronemu warm is incomplete: after it, the tour compiled", file=sys.stderr)
        for unit in compiled:
            print(f"  {unit}", file=sys.stderr)
        return 1
    print("neuronemu warm is complete: the tour compiled nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
