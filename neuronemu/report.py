"""What a run, a check or a failure reports: the ``--json`` documents (the one definition of the
schema; ``SCHEMA_VERSION`` is its version) and the text lines ``neuronemu`` prints. The CLI and
tools/golden.py build their reports here; nothing in this module prints or writes files."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from neuronemu.errors import Diagnostic, NeuronemuError
    from neuronemu.program import Program
    from neuronemu.results import Result, SpmdResult
    from neuronemu.timing.report import Timing

SCHEMA_VERSION = 1
"""Version of every ``--json`` document; raised when a field changes meaning or goes away."""

SUMMARY_PIECE = 1 << 22
"""Elements summarised at a time (a whole float64 copy of a big output would cost twice it)."""


# --- documents -----------------------------------------------------------------------------

def error_document(error: NeuronemuError, warnings: Iterable[Diagnostic] = ()) -> dict:
    """The --json document of a failed command: ``error`` is the first error. A kernel that does
    not assemble adds ``errors``, every error reported (the first included, in the order they
    were found, up to 20) and ``errors_truncated``, true when the limit stopped the assembler
    before the end of the file. A run that fails after its kernel assembled with warnings adds
    ``warnings`` (an integer division, say, may be the fault's cause)."""
    from neuronemu.errors import AsmError

    doc = {"schema_version": SCHEMA_VERSION, "error": error.to_json()}
    if isinstance(error, AsmError):
        doc["errors"] = [e.to_json() for e in error.errors]
        doc["errors_truncated"] = error.truncated
    warnings = list(warnings)
    if warnings:
        doc["warnings"] = [w.to_json() for w in warnings]
    return doc


def usage_error_document(message: str, exit_code: int, option: str | None) -> dict:
    """A command-line usage error under --json (click's own errors: exit code 2)."""
    error = {"type": "UsageError", "message": message, "exit_code": exit_code}
    if option is not None:
        error["option"] = option
    return {"schema_version": SCHEMA_VERSION, "error": error}


def check_document(kernel: str, program: Program) -> dict:
    counts = program.static_counts()
    return {"schema_version": SCHEMA_VERSION, "kernel": kernel, "target": program.target.name,
            "ok": True, "instructions": {**counts, "total": len(program.instrs)},
            "warnings": [w.to_json() for w in program.warnings]}


def run_document(program: Program, result: Result, *, kernel: str, seed: int,
                 stochastic_rounding: bool, saved: dict[str, str], trace: str | None = None,
                 plot: str | None = None) -> dict:
    """One core's run. ``saved``: output name -> the file it was written to."""
    from neuronemu.files import saved_dtype

    doc = {
        "schema_version": SCHEMA_VERSION,
        "kernel": kernel,
        "target": result.target,
        "seed": seed,
        "rounding": _rounding(stochastic_rounding),
        "sync": program.sync_mode,
        "instructions": {**result.instructions, "total": sum(result.instructions.values())},
        "outputs": {},
        "wall_seconds": round(result.wall_seconds, 6),
        "compile_seconds": round(result.compile_seconds, 3),
        **timing_json(result.timing),
        "warnings": [w.to_json() for w in result.warnings],
    }
    _files(doc, trace, plot)
    for t in program.outputs():
        array = result.outputs[t.name]
        entry = {"shape": list(t.shape), "dtype": t.dtype, **summary(array)}
        if t.name in saved:
            entry["path"] = saved[t.name]
            entry["saved_dtype"] = str(saved_dtype(array.dtype))   # from the dtype: no copy
        doc["outputs"][t.name] = entry
    return doc


def spmd_document(program: Program, result: SpmdResult, *, kernel: str, topology: str,
                  ranks_per_chip: int, seed: int, stochastic_rounding: bool,
                  saved: dict[str, str], trace: str | None = None,
                  plot: str | None = None) -> dict:
    """A run on every rank of a topology; outputs carry a leading world axis."""
    net = result.network
    total: dict[str, int] = {}
    for r in result.ranks:
        for engine, count in r.instructions.items():
            total[engine] = total.get(engine, 0) + count
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kernel": kernel,
        "target": program.target.name,
        "topology": topology,
        "world": result.world,
        "ranks_per_chip": ranks_per_chip,
        "seed": seed,
        "rounding": _rounding(stochastic_rounding),
        "sync": program.sync_mode,
        "time_ns": round(result.time_ns, 3),
        "instructions": {**total, "total": sum(total.values())},
        "outputs": {},
        "wall_seconds": round(result.wall_seconds, 6),
        "compile_seconds": round(result.compile_seconds, 3),
        "network": {"messages": net.messages, "bytes": net.bytes, "link_bytes": net.link_bytes,
                    "links": {name: {"messages": s.messages, "bytes": s.bytes,
                                     "busy_ns": round(s.busy_ns, 3)}
                              for name, s in net.links.items()}},
        "ranks": [{"rank": i, "chip": i // ranks_per_chip, "core": i % ranks_per_chip,
                   "instructions": sum(r.instructions.values()),
                   **timing_json(r.timing)} for i, r in enumerate(result.ranks)],
        "warnings": [w.to_json() for r in result.ranks for w in r.warnings],
    }
    _files(doc, trace, plot)
    for t in program.outputs():
        entry = {"shape": [result.world, *t.shape], "dtype": t.dtype,
                 **summary_of_parts([r.outputs[t.name].reshape(-1) for r in result.ranks])}
        if t.name in saved:
            entry["path"] = saved[t.name]
        doc["outputs"][t.name] = entry
    return doc


def _rounding(stochastic_rounding: bool) -> str:
    return "stochastic" if stochastic_rounding else "nearest_even"


def _files(doc: dict, trace: str | None, plot: str | None) -> None:
    if trace is not None:
        doc["trace"] = trace
    if plot is not None:
        doc["plot"] = plot


def summary(array: np.ndarray) -> dict:
    """nan count, min, max and mean of the finite values. A big array is summarised piece by
    piece (its float64 copy would cost twice its size); the mean then sums the pieces' sums."""
    import numpy as np

    return summary_of_parts([np.asarray(array).reshape(-1)])


def summary_of_parts(parts: list) -> dict:
    """``summary`` of the concatenation of the flat arrays ``parts``, without making it (a
    multi-rank run's output over every rank: 1.2 GB at 1,152 ranks of 1 MiB): the same pieces
    of SUMMARY_PIECE elements, so the same figures to the bit."""
    import numpy as np

    size = sum(part.size for part in parts)
    if size <= SUMMARY_PIECE:
        values = (np.concatenate(parts) if len(parts) > 1 else parts[0]).astype(np.float64)
        finite = values[np.isfinite(values)]
        doc = {"nan_count": int(np.isnan(values).sum())}
        if finite.size:
            doc.update(min=float(finite.min()), max=float(finite.max()),
                       mean=float(finite.mean()))
        return doc
    nan_count, count, total, low, high = 0, 0, [], math.inf, -math.inf
    for values in _pieces(parts):
        ok = np.isfinite(values)
        if ok.all():   # the usual case: no mask to count NaNs in or to copy the piece through
            finite = values
        else:
            nan_count += int(np.isnan(values).sum())
            finite = values[ok]
        if finite.size:
            count += finite.size
            total.append(float(finite.sum()))
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    doc = {"nan_count": nan_count}
    if count:
        doc.update(min=low, max=high, mean=math.fsum(total) / count)
    return doc


def _pieces(parts: list):
    """The concatenation of ``parts`` as float64 pieces of SUMMARY_PIECE elements (the last
    shorter), each copied from the parts it spans."""
    import numpy as np

    piece: list = []
    held = 0
    for part in parts:
        at = 0
        while at < part.size:
            take = min(SUMMARY_PIECE - held, part.size - at)
            piece.append(part[at: at + take])
            held += take
            at += take
            if held == SUMMARY_PIECE:
                yield (np.concatenate(piece) if len(piece) > 1 else piece[0]).astype(np.float64)
                piece, held = [], 0
    if held:
        yield (np.concatenate(piece) if len(piece) > 1 else piece[0]).astype(np.float64)


def timing_json(timing: Timing) -> dict:
    return {
        "time_ns": round(timing.time_ns, 3),
        "cycles": timing.cycles,
        "engines": {name: {"instructions": t.instructions, "busy_ns": round(t.busy_ns, 3),
                           "utilisation": round(t.utilisation, 6)}
                    for name, t in timing.tracks.items()},
        "tensor": {"flops": timing.tensor_flops,
                   "flops_per_second": round(timing.tensor_flops_per_second),
                   "peak_fraction": round(timing.tensor_peak_fraction, 6)},
        "critical_path": {"bound_by": timing.bound_by,
                          "ns": {k: round(v, 3) for k, v in timing.critical_path.items()}},
        "dma": dma_json(timing.dma),
    }


def dma_json(dma) -> dict:
    if dma is None:
        return {"transfers": 0, "bytes": 0, "compressed_bytes": 0, "compression_ratio": 1.0,
                "achieved_gbps": 0.0, "engine_utilisation": 0.0, "queues": {}}
    return {"transfers": dma.transfers, "bytes": dma.bytes,
            "compressed_bytes": dma.compressed_bytes,
            "compression_ratio": round(dma.compression_ratio, 6),
            "achieved_gbps": round(dma.achieved_gbps, 3),
            "engine_utilisation": round(dma.engine_utilisation, 6),
            "queues": {name: {"transfers": q.transfers, "bytes": q.bytes,
                              "compressed_bytes": q.compressed_bytes,
                              "busy_ns": round(q.busy_ns, 3), "occupancy": round(q.occupancy, 6)}
                       for name, q in dma.queues.items()}}


def topology_document(t) -> dict:
    return {"target": t.target, "layout": t.layout, "chips": t.chips,
            "cores_per_chip": t.cores_per_chip, "shape": list(t.shape), "switches": t.switches,
            "links": len(t.links), "link_gb_s": sorted({link.gb_s for link in t.links.values()}),
            "hop_ns": t.hop_ns, "diameter": t.diameter,
            "ring_allreduce_1mib_ns": round(t.ring_allreduce_ns(1 << 20), 3)}


# --- text ----------------------------------------------------------------------------------

def check_lines(kernel: str, program: Program) -> list[str]:
    counts = program.static_counts()
    per_engine = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    # (the counts from the lowered rows: checking builds no Instruction objects, asm/direct)
    return [(f"{kernel}: ok ({program.target.name}): {len(program.instrs)} instructions "
            f"({per_engine})")]


def run_lines(doc: dict, program: Program, result: Result) -> list[str]:
    """The text of a one-core run, from its document."""
    lines = [(f"kernel   {doc['kernel']}  (target {result.target}, {program.target.core}, seed "
             f"{doc['seed']})")]
    per_engine = "  ".join(f"{k} {v}" for k, v in sorted(result.instructions.items()))
    lines.append(f"executed {doc['instructions']['total']} instructions: {per_engine}  "
                 f"({result.wall_seconds:.3f} s{compiled_note(result.compile_seconds)})")
    lines += _output_lines(doc, show_nan=True)
    lines += timing_lines(result.timing, program.target.name, program.sync_mode)
    if "trace" in doc:
        lines.append(f"trace    {doc['trace']}  (open in https://ui.perfetto.dev)")
    if "plot" in doc:
        lines.append(f"plot     {doc['plot']}")
    return lines


def spmd_lines(doc: dict, program: Program, result: SpmdResult) -> list[str]:
    """The text of a run on a topology, from its document."""
    times = [r.timing.time_ns for r in result.ranks]
    slowest = slowest_rank(result)
    lines = [(f"kernel   {doc['kernel']}  (topology {doc['topology']}: {result.world} ranks on "
             f"{result.world // doc['ranks_per_chip']} {program.target.name} chips, seed "
             f"{doc['seed']})"),
             (f"executed {doc['instructions']['total']} instructions over all ranks  "
             f"({result.wall_seconds:.3f} s{compiled_note(result.compile_seconds)})")]
    lines += _output_lines(doc, show_nan=False)
    lines.append(f"time     {result.time_ns / 1000:.3f} us (modelled; ranks finish between "
                 f"{min(times) / 1000:.3f} and {max(times) / 1000:.3f} us, last: rank "
                 f"{slowest})")
    net = result.network
    if net.messages:
        busiest = max(net.links.items(), key=lambda kv: kv[1].busy_ns, default=None)
        line = (f"network  {net.messages} messages, {net.bytes / 1e6:.3f} MB "
                f"({net.link_bytes / 1e6:.3f} MB over links)")
        if busiest is not None:
            line += f"; busiest link {busiest[0]} {busiest[1].busy_ns / 1000:.3f} us"
        lines.append(line)
    if "trace" in doc:
        lines.append(f"trace    {doc['trace']}  (open in https://ui.perfetto.dev; one process "
                     f"per rank)")
    if "plot" in doc:
        lines.append(f"plot     {doc['plot']}")
    return lines


def slowest_rank(result: SpmdResult) -> int:
    """The rank that finished last (the first of equals)."""
    times = [r.timing.time_ns for r in result.ranks]
    return int(max(range(len(times)), key=times.__getitem__))


def _output_lines(doc: dict, show_nan: bool) -> list[str]:
    lines = []
    for name, entry in doc["outputs"].items():
        stats = (f"min {entry['min']:.6g}  max {entry['max']:.6g}  mean {entry['mean']:.6g}"
                 if "min" in entry else "no finite values")
        nan = f"  nan {entry['nan_count']}" if show_nan and entry["nan_count"] else ""
        dest = f"  -> {entry['path']}" if "path" in entry else ""
        shape = ", ".join(map(str, entry["shape"]))
        lines.append(f"output   {name}  {entry['dtype']}[{shape}]  {stats}{nan}{dest}")
    return lines


def compiled_note(seconds: float) -> str:
    """The one-time compile, apart from the run time it used to be counted in."""
    return f"; plus {seconds:.1f} s compiling, once" if seconds >= 0.05 else ""


def timing_lines(timing: Timing, target: str, sync_mode: str) -> list[str]:
    if timing.time_ns == 0:
        return ["time     0 ns (no timed instructions)"]
    path_ns = sum(timing.critical_path.values())
    bound = timing.bound_by
    share = timing.critical_path.get(bound, 0.0) / path_ns if path_ns else 0.0
    lines = [(f"time     {timing.time_ns / 1000:.3f} us on {target} (modelled, sync {sync_mode}); "
             f"critical path bound by {bound} ({share:.0%})"),
             f"         {'track':<8} {'instrs':>7} {'busy us':>9} {'util':>6}"]
    for name, t in timing.tracks.items():
        lines.append(f"         {name:<8} {t.instructions:>7} {t.busy_ns / 1000:>9.3f} "
                     f"{t.utilisation:>6.1%}")
    if timing.tensor_flops:
        lines.append(f"         tensor: {timing.tensor_flops / 1e6:.1f} MFLOP at "
                     f"{timing.tensor_flops_per_second / 1e12:.2f} TFLOP/s = "
                     f"{timing.tensor_peak_fraction:.1%} of the "
                     f"{timing.tensor_peak_flops_per_ns / 1e3:.1f} TFLOP/s bf16 peak")
    dma = timing.dma
    if dma is not None:
        ratio = (f"; compressed to {dma.compressed_bytes / 1e6:.3f} MB (ratio "
                 f"{dma.compression_ratio:.2f})" if dma.compressed_bytes != dma.bytes else "")
        lines.append(f"         dma: {dma.transfers} transfers, {dma.bytes / 1e6:.3f} MB{ratio}, "
                     f"{dma.achieved_gbps:.1f} GB/s achieved, engines "
                     f"{dma.engine_utilisation:.1%} busy")
    return lines


def versioned(doc: dict) -> dict:
    """A document of another module (``neuronemu isa --json``: isa_reference) with the schema
    version every document carries."""
    return {"schema_version": SCHEMA_VERSION, **doc}


def topology_listing(topologies: dict) -> list[str]:
    """``neuronemu topology``: one line per system."""
    return [f"{n:<24} {t.chips:>4} chips x {t.cores_per_chip} cores  {t.layout}"
            for n, t in topologies.items()]


def topology_lines(name: str, t) -> list[str]:
    """``neuronemu topology NAME``: chips, layout, links, latency and a ring all-reduce."""
    lines = [(f"{name}: {t.chips} {t.target} chips x {t.cores_per_chip} cores "
             f"= {t.chips * t.cores_per_chip} NeuronCores")]
    if t.layout == "torus":
        dims = " x ".join(str(s) for s in t.shape)
        lines.append(f"  layout     {dims} torus, {len(t.chip_neighbours(0))} neighbours per chip")
    elif t.layout == "switched":
        lines.append(f"  layout     {t.servers} servers x {t.chips_per_server} chips, a switch "
                     f"per server, {t.spines} spine switch(es)")
    else:
        lines.append("  layout     one chip")
    if t.links:
        speeds = sorted({link.gb_s for link in t.links.values()})
        lines += [(f"  links      {len(t.links)} ({', '.join(f'{s:g}' for s in speeds)} GB/s "
                  f"each way), {t.chip_gb_s:g} GB/s out of each chip"),
                  f"  latency    {t.hop_ns:g} ns per hop, diameter {t.diameter} hops",
                  (f"  all-reduce ring, 1 MiB per chip: "
                  f"{t.ring_allreduce_ns(1 << 20) / 1000:.1f} us (analytic: 2(n-1)/n x size / "
                  f"bandwidth + 2(n-1) x step latency)")]
    lines.append(f"  source     {t.source}")
    return lines
