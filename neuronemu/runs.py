"""One ``neuronemu run`` as a library call: assemble a kernel, check where its files go before
running, run it on one core or on every rank of a topology, save the outputs all-or-none and
build the ``--json`` document. The CLI prints what this returns; tools/golden.py records it, so
the golden corpus checks the very path users run (issue 27: the CLI no longer does the library's
job, and the orchestration is written once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuronemu import files, report
from neuronemu.errors import InputError
from neuronemu.isa.topologies import topology_named
from neuronemu.multichip.comm import launched_by_mpiexec
from neuronemu.programs import resolve_kernel

if TYPE_CHECKING:
    from neuronemu.program import Program


@dataclass
class Run:
    """A finished run of ``program``: its result (one core's, or every rank's), where each
    output was saved and the ``--json`` document."""

    path: Path
    program: Program
    result: Any                  # api.Result, or api.SpmdResult when ``topology`` is set
    topology: str | None         # None: one core
    ranks_per_chip: int | None
    saved: dict[str, str]
    document: dict


class _Stacked(Mapping):
    """A multi-rank run's outputs by name, each stacked over the ranks when it is read."""

    def __init__(self, result) -> None:
        self._result = result

    def __getitem__(self, name: str):
        import numpy as np

        return np.stack([r.outputs[name] for r in self._result.ranks])

    def __iter__(self):
        return iter(self._result.ranks[0].outputs)

    def __len__(self) -> int:
        return len(self._result.ranks[0].outputs)


def assemble(kernel: str, target: str | None = None,
             topology: str | None = None) -> tuple[Path, Program]:
    """The kernel's file (a path or a bundled program's name) and its assembled program; the
    target defaults to the topology's chip, then to the kernel's own ``.target``."""
    from neuronemu import api

    if topology is not None:
        target = target or topology_named(topology, "--topology").target
    path = resolve_kernel(kernel)
    return path, api.assemble_file(path, target=target)


def runs_on_ranks(program: Program, topology: str | None) -> bool:
    """Whether ``program`` runs on the ranks of a topology (given, or its own ``.topology``)."""
    return topology is not None or program.topology is not None


def run(path: Path, program: Program, *, topology: str | None = None,
        ranks_per_chip: int | None = None, input_files: dict[str, str] | None = None,
        output_files: dict[str, str] | None = None, output_dir: Path | None = None,
        trace_path: Path | None = None, plot_path: Path | None = None,
        **options) -> Run | None:
    """Run ``program`` as ``neuronemu run`` does. ``options`` go to ``api.run`` or
    ``api.run_spmd`` as given (seed, limits, rounding; ``partitions`` only on ranks). None on an
    MPI partition other than 0: partition 0 reports the run. Raises NeuronemuError."""
    from neuronemu import api
    from neuronemu.timing.trace import trace_writer

    spmd = runs_on_ranks(program, topology)
    if spmd:
        topology, ranks_per_chip = api.default_topology(program, topology, ranks_per_chip)
    elif options.pop("partitions", None) is not None or launched_by_mpiexec():
        raise InputError("partitions (--partitions, mpiexec -n P) split the ranks of a "
                         "multi-rank run, but this kernel runs on one core: give "
                         "--topology NAME or a .topology directive")
    destinations = files.destinations(program, output_files or {}, output_dir, trace_path)
    inputs = files.load_inputs(input_files or {})
    result = (api.run_spmd(program, topology, inputs, ranks_per_chip=ranks_per_chip, **options)
              if spmd else api.run(program, inputs, **options))
    if result is None:
        return None
    # a multi-rank run's outputs are stacked over the ranks only when saved (1.2 GB at 1,152
    # ranks of 1 MiB); the report summarises them rank by rank
    outputs = _Stacked(result) if spmd else result.outputs
    saved = files.save_outputs(destinations, outputs, output_dir,
                               lambda: trace_writer(program, result, spmd))
    common = {"kernel": str(path), "seed": options.get("seed", 0), "saved": saved,
              "stochastic_rounding": options.get("stochastic_rounding", False),
              "trace": trace_path and str(trace_path), "plot": plot_path and str(plot_path)}
    document = (report.spmd_document(program, result, topology=topology,
                                     ranks_per_chip=ranks_per_chip, **common) if spmd else
                report.run_document(program, result, **common))
    return Run(path, program, result, topology if spmd else None, ranks_per_chip, saved,
               document)
