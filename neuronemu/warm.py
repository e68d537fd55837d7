"""Compile everything ahead: every instruction kernel, the interpreter loop and the helpers the
bundled programs reach (``neuronemu warm``; CI runs it before the tests). After it, no run of this
version on this machine compiles anything (``python -m tools.warm_check`` checks it; CI runs
it right after warm)."""

from __future__ import annotations

import time
from collections.abc import Callable

# The units measured longest to compile (issue 29's study; 10 to 30 s each), started first so
# the workers do not end on one long unit while the others sit idle.
_LONGEST_FIRST = ("elementwise__tensor_scalar", "scalar__activation", "elementwise__tensor_tensor",
                  "tensor__matmul", "cumulative__range_select", "cumulative__exponential",
                  "scalar__activate2", "dma__copy")


def longest_first(entries: list[str]) -> list[str]:
    """``entries`` with the units known to compile longest first, the others after in order."""
    known = [e for e in _LONGEST_FIRST if e in entries]
    return known + [e for e in entries if e not in _LONGEST_FIRST]


def cold_kernels() -> tuple[list[str], list[str]]:
    """Every instruction kernel, and those neither loaded nor in the cache, longest first."""
    from neuronemu.exec import kernels

    entries = kernels.all_entries()
    return entries, longest_first([e for e in entries if not kernels.is_ready(e)])


def warm(echo: Callable[[str], None] = print) -> float:
    """Compile (or load) all compiled code; returns the seconds it took. Instruction kernels
    compile in worker processes, as many at once as there are cores (exec/compile_jobs.py)."""
    import neuronemu
    from neuronemu.api import run_spmd
    from neuronemu.compiled.cache import write_dir
    from neuronemu.exec import compile_jobs, kernels
    from neuronemu.numerics import convert
    from neuronemu.programs import bundled_programs

    start = time.perf_counter()
    entries, cold = cold_kernels()
    parallel = min(compile_jobs.workers(), len(cold))
    echo(f"compiling into {write_dir()}: {len(cold)} of {len(entries)} instruction kernels to "
         f"compile" + (f", {parallel} at once" if parallel > 1 else ""))
    if parallel > 1:
        compile_jobs.run_jobs([compile_jobs.kernel_job(e) for e in cold], echo, parallel)
    for i, entry in enumerate(entries, 1):   # loads what the workers compiled; compiles the rest
        began = time.perf_counter()
        kernels.ensure_compiled([entry])
        if entry in cold and parallel <= 1:
            echo(f"[{i}/{len(entries)}] {entry.replace('__', '.')}  "
                 f"{time.perf_counter() - began:.1f} s")
    for name, path in bundled_programs().items():
        began = time.perf_counter()
        program = neuronemu.assemble_file(path)
        if program.topology is not None:
            run_spmd(program)  # on the system it names (.topology), e.g. 16 ranks
        else:
            neuronemu.run(program)
        echo(f"ran {name}  {time.perf_counter() - began:.1f} s")
    _host_conversions(convert)
    return time.perf_counter() - start


def _host_conversions(convert) -> None:
    """The roundings inputs take on the host (numerics.convert.to_bits) down each of its paths:
    numpy's casts, the fp32 encoder (ml_dtypes types), the fp64 encoder (float16, float32 with
    NaNs or overflow, integer dtypes from floats: `init=arange` on an int32 input), integers, and
    the x4 packing. One call per path compiles it for every dtype (the dtype is an argument)."""
    import numpy as np

    values = np.array([0.0, -1.5, 3.0, np.nan, np.inf, 1e30])
    with np.errstate(all="ignore"):
        for name in ("float32", "bfloat16", "float8_e4m3", "float16", "int32"):
            for sample in (values, values.astype(np.float32), np.arange(4)):
                convert.to_bits(sample, name)
        convert.pack_x4(np.zeros((1, 4)), "float8_e4m3fn_x4")
