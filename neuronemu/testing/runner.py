"""Assemble and run a kernel in one call, for unit tests: ``run_kernel``.

A kernel is a path to a ``.s`` / ``.neo`` file, a bundled program name ("examples/softmax"),
or assembly source text (any string holding a newline). Inputs are numpy / ml_dtypes arrays by
tensor name; inputs not given take the kernel's declared initialisers (random ones are drawn
from ``seed``), and ``KernelRun.inputs`` holds the values the kernel actually read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from neuronemu.api import Result, SpmdResult
    from neuronemu.program import Program
    from neuronemu.timing.report import Timing


def load_kernel(kernel, target: str | None = None, base: Path | None = None) -> Program:
    """Assemble ``kernel`` (a Program is returned unchanged; its target must then match).
    Relative paths are looked up in ``base`` first (the test file's folder, for the fixture),
    then in the working directory, then among the bundled programs."""
    from neuronemu import api
    from neuronemu.errors import InputError
    from neuronemu.program import Program
    from neuronemu.programs import resolve_kernel

    if isinstance(kernel, Program):
        if target is not None and kernel.target.name != target:
            raise InputError(f"the program is assembled for {kernel.target.name}, not {target}")
        return kernel
    if isinstance(kernel, str) and "\n" in kernel:
        return api.assemble(kernel, filename="<kernel>", target=target)
    return api.assemble_file(resolve_kernel(kernel, base), target=target)


@dataclass
class KernelRun:
    """What a test looks at after a run: values, tiles, timing and warnings, by name."""

    result: Result | SpmdResult
    """The API's result (``neuronemu.Result``; ``SpmdResult`` for a multi-rank run)."""
    inputs: dict[str, np.ndarray]
    """Every input tensor in its declared dtype, given or drawn from its initialiser, as HBM
    holds it after the run (a kernel that writes an input shows the written values);
    multi-rank runs: rank 0's."""

    @property
    def program(self) -> Program:
        return self.result.program

    @property
    def target(self) -> str:
        return self.result.program.target.name

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Output tensors in their declared dtype (multi-rank: stacked over ranks)."""
        return self.result.outputs

    @property
    def tiles(self) -> dict[str, np.ndarray]:
        """Final contents of every ``.sbuf`` / ``.psum`` allocation (single-core runs)."""
        return self._single().tiles

    @property
    def timing(self) -> Timing:
        return self._single().timing

    @property
    def time_ns(self) -> float:
        """Modelled time of the run (multi-rank: of the last rank to finish)."""
        result = self.result
        return result.time_ns if hasattr(result, "ranks") else result.timing.time_ns

    @property
    def warnings(self) -> list:
        """Located warnings (``neuronemu.errors.Diagnostic``; ``str()`` renders one with its
        source line); multi-rank runs: every rank's."""
        return [w for r in getattr(self.result, "ranks", [self.result]) for w in r.warnings]

    def _single(self) -> Result:
        if hasattr(self.result, "ranks"):
            raise AttributeError("a multi-rank run has tiles and timing per rank: use "
                                 ".result.ranks[r].tiles / .timing")
        return self.result


def run_kernel(kernel, inputs: dict[str, np.ndarray] | None = None, *, target: str | None = None,
               seed: int = 0, topology: str | None = None, base: Path | None = None,
               **options) -> KernelRun:
    """Assemble ``kernel`` for ``target`` (default: its ``.target``) and run it with ``inputs``
    and ``seed``; ``topology`` runs it on every rank (``neuronemu.api.run_spmd``), as does the
    kernel's own ``.topology`` directive when ``topology`` is None. Other
    keyword options go to ``neuronemu.run`` (``max_instructions``, ``stochastic_rounding``,
    ``timeout``, ...). Faults and assembly errors raise as the API raises them."""
    from neuronemu import api

    program = load_kernel(kernel, target, base)
    if topology is None and program.topology is None:
        result = api.run(program, inputs, seed=seed, **options)
        tensors = result.tensors
    else:
        result = api.run_spmd(program, topology, inputs, seed=seed, **options)
        tensors = result.ranks[0].tensors
    read = {t.name: np.array(tensors[t.name]) for t in program.inputs()}
    return KernelRun(result, read)
