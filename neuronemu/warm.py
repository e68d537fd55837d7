"""Compile everything ahead: every instruction kernel, the interpreter loop and the helpers the
bundled programs reach (``neuronemu warm``, tools/warm_cache.py). After it, no run of this
version on this machine compiles anything."""

from __future__ import annotations

import time
from collections.abc import Callable


def warm(echo: Callable[[str], None] = print) -> float:
    """Compile (or load) all compiled code; returns the seconds it took."""
    import neuronemu
    from neuronemu.api import run_spmd
    from neuronemu.compiled.cache import cache_dir
    from neuronemu.exec import kernels
    from neuronemu.numerics import convert
    from neuronemu.programs import bundled_programs

    start = time.perf_counter()
    echo(f"compiling into {cache_dir()}")
    entries = kernels.all_entries()
    for i, entry in enumerate(entries, 1):
        began = time.perf_counter()
        kernels.ensure_compiled([entry])
        echo(f"[{i}/{len(entries)}] {entry.replace('__', '.')}  {time.perf_counter() - began:.1f} s")
    for name, path in bundled_programs().items():
        program = neuronemu.assemble_file(path)
        if program.topology is not None:
            run_spmd(program)  # on the system it names (.topology), e.g. 16 ranks
        else:
            neuronemu.run(program)
        echo(f"ran {name}")
    convert.to_bits([1.0], "bfloat16")
    return time.perf_counter() - start
