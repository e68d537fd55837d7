"""The ``neuronemu`` command line (click). Exit codes are listed in neuronemu/errors.py and the
README: 0 ok, 1 runtime fault, 2 usage, 3 assembly error, 4 bad input/output file."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import click

from neuronemu.errors import InputError, NeuronemuError

SCHEMA_VERSION = 1
TARGETS = ("trn1", "trn2", "trn3")


class _Failure(click.ClickException):
    """Carries a NeuronemuError out of a command with its exit code, rendered once."""

    def __init__(self, error: NeuronemuError, as_json: bool):
        super().__init__(error.message)
        self.error = error
        self.exit_code = error.exit_code
        self.as_json = as_json

    def show(self, file=None) -> None:
        if self.as_json:
            doc = {"schema_version": SCHEMA_VERSION, "error": self.error.to_json()}
            click.echo(json.dumps(doc, indent=2))
        click.echo(self.error.render(), err=True)


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    pairs = {}
    for text in values:
        name, sep, path = text.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FILE.npy, got {text!r}", param_hint=option)
        pairs[name] = path
    return pairs


def _bundled(kernel: str) -> Path:
    """A kernel path, or the name of a bundled program (``vector_add`` / ``examples/vector_add``)."""
    path = Path(kernel)
    if path.exists():
        return path
    from neuronemu.programs import find_program

    found = find_program(kernel)
    if found is None:
        raise InputError(f"no such kernel file: {kernel} (bundled programs: "
                         f"`neuronemu programs` lists them)")
    return found


def _load_inputs(pairs: dict[str, str]):
    import numpy as np

    arrays = {}
    for name, path in pairs.items():
        try:
            arrays[name] = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise InputError(f"--input {name}: no such file {path}") from None
        except (OSError, ValueError) as e:
            raise InputError(f"--input {name}: cannot read {path} as .npy ({e})") from None
    return arrays


def _compiled_note(seconds: float) -> str:
    """The one-time compile, apart from the run time it used to be counted in."""
    return f"; plus {seconds:.1f} s compiling, once" if seconds >= 0.05 else ""


def _summary(array) -> dict:
    import numpy as np

    values = np.asarray(array).astype(np.float64)
    finite = values[np.isfinite(values)]
    doc = {"nan_count": int(np.isnan(values).sum())}
    if finite.size:
        doc.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
    return doc


def _savable(array):
    """numpy cannot round-trip ml_dtypes through .npy, so bf16/fp8 are saved widened to float32
    (exact); native numpy dtypes are saved as they are."""
    import numpy as np

    if array.dtype.name in ("bfloat16",) or array.dtype.name.startswith("float8"):
        return array.astype(np.float32)
    return array


def _save_all(files: dict) -> dict[str, str]:
    """Write every ``label -> (path, write(binary file))`` or none: each goes to a hidden
    temporary file next to its destination and is renamed into place only when all of them
    were written."""
    import os

    staged = []
    try:
        for label, (dest, write) in files.items():
            final = Path(dest)
            temporary = final.with_name(f".{final.name}.partial")
            try:
                with open(temporary, "wb") as f:
                    write(f)
            except OSError as e:
                raise InputError(f"{label}: cannot write {dest}: {e.strerror}") from None
            staged.append((temporary, final))
        for temporary, final in staged:
            os.replace(temporary, final)
    finally:
        for temporary, _ in staged:
            if temporary.exists():
                temporary.unlink()
    return {label: dest for label, (dest, _) in files.items()}


def _npy_writer(array):
    import numpy as np

    return lambda f: np.save(f, array, allow_pickle=False)


def _json_writer(doc):
    return lambda f: f.write(json.dumps(doc).encode())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="neuronemu")
def main() -> None:
    """Emulate AWS NeuronCore (Trainium) kernels written in NeuronCore assembly."""


@main.command()
@click.argument("kernel")
@click.option("--target", type=click.Choice(TARGETS), help="Target chip (default: the kernel's "
              ".target directive, else trn2).")
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE.npy",
              help="Initial contents of an HBM tensor (repeatable).")
@click.option("--output", "outputs", multiple=True, metavar="NAME=FILE.npy",
              help="Write one output tensor to a .npy file (repeatable).")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write every output tensor to DIR/NAME.npy.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the random initialisers.")
@click.option("--max-instructions", type=click.IntRange(min=1), default=50_000_000,
              show_default=True, help="Stop with an error after this many dynamic instructions.")
@click.option("--stochastic-rounding", is_flag=True,
              help="Round fp32 -> bf16/fp16/fp8/tf32 stores stochastically (unbiased).")
@click.option("--rounding-seed", type=int, default=None,
              help="Seed of the stochastic-rounding bits (default: --seed).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the timeline as Chrome/Perfetto trace JSON (open in ui.perfetto.dev).")
@click.option("--topology", metavar="NAME",
              help="Run the kernel on every chip of a multi-chip system (SPMD; `neuronemu "
                   "topology` lists them). Inputs of the declared shape go to every rank, with a "
                   "leading world axis one per rank; outputs gain that axis.")
@click.option("--ranks-per-chip", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --topology: cores of each chip that run the kernel.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def run(kernel, target, inputs, outputs, output_dir, seed, max_instructions, stochastic_rounding,
        rounding_seed, trace_path, topology, ranks_per_chip, as_json):
    """Assemble and run KERNEL (a .s file or a bundled program name); show its outputs."""

    from neuronemu import api

    input_files = _pairs(inputs, "--input")
    output_files = _pairs(outputs, "--output")
    if topology is None and ranks_per_chip != 1:
        raise click.BadParameter("needs --topology (ranks run on the chips of a topology)",
                                 param_hint="--ranks-per-chip")
    if topology is not None:
        _run_spmd(kernel, target, input_files, output_files, output_dir, seed, max_instructions,
                  stochastic_rounding, rounding_seed, trace_path, topology, ranks_per_chip,
                  as_json)
        return
    try:
        path = _bundled(kernel)
        program = api.assemble_file(path, target=target)
        for name in output_files:
            if name not in program.tensors or program.tensors[name].role != "output":
                names = ", ".join(t.name for t in program.outputs()) or "none"
                raise InputError(f"--output {name}: the kernel has no output '{name}' "
                                 f"(outputs: {names})")
        result = api.run(program, _load_inputs(input_files), seed=seed,
                         max_instructions=max_instructions,
                         stochastic_rounding=stochastic_rounding, rounding_seed=rounding_seed)
        destinations = dict(output_files)
        if output_dir is not None:
            output_dir.mkdir(parents=True, exist_ok=True)
            for t in program.outputs():
                destinations.setdefault(t.name, str(output_dir / f"{t.name}.npy"))
        files = {f"--output {name}": (dest, _npy_writer(_savable(result.outputs[name])))
                 for name, dest in destinations.items()}
        if trace_path is not None:
            from neuronemu.timing.report import chrome_trace

            files["--trace"] = (str(trace_path), _json_writer(chrome_trace(program,
                                                                           result.timing)))
        saved = _save_all(files)
        written = {label.removeprefix("--output "): dest for label, dest in saved.items()
                   if label.startswith("--output ")}
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    for warning in result.warnings:
        click.echo(warning.render(), err=True)
    total = sum(result.instructions.values())
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kernel": str(path),
        "target": result.target,
        "seed": seed,
        "rounding": "stochastic" if stochastic_rounding else "nearest_even",
        "sync": program.sync_mode,
        "instructions": {**result.instructions, "total": total},
        "outputs": {},
        "wall_seconds": round(result.wall_seconds, 6),
        "compile_seconds": round(result.compile_seconds, 3),
        **_timing_json(result.timing),
        "warnings": [w.to_json() for w in result.warnings],
    }
    if trace_path is not None:
        doc["trace"] = str(trace_path)
    for t in program.outputs():
        entry = {"shape": list(t.shape), "dtype": t.dtype, **_summary(result.outputs[t.name])}
        if t.name in written:
            entry["path"] = written[t.name]
            entry["saved_dtype"] = str(_savable(result.outputs[t.name]).dtype)
        doc["outputs"][t.name] = entry
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"kernel   {path}  (target {result.target}, {program.target.core}, seed {seed})")
    per_engine = "  ".join(f"{k} {v}" for k, v in sorted(result.instructions.items()))
    click.echo(f"executed {total} instructions: {per_engine}  ({result.wall_seconds:.3f} s"
               f"{_compiled_note(result.compile_seconds)})")
    for name, entry in doc["outputs"].items():
        stats = (f"min {entry['min']:.6g}  max {entry['max']:.6g}  mean {entry['mean']:.6g}"
                 if "min" in entry else "no finite values")
        nan = f"  nan {entry['nan_count']}" if entry["nan_count"] else ""
        dest = f"  -> {entry['path']}" if "path" in entry else ""
        shape = ", ".join(map(str, entry["shape"]))
        click.echo(f"output   {name}  {entry['dtype']}[{shape}]  {stats}{nan}{dest}")
    _print_timing(result.timing, program.target.name, program.sync_mode)
    if trace_path is not None:
        click.echo(f"trace    {trace_path}  (open in https://ui.perfetto.dev)")


def _run_spmd(kernel, target, input_files, output_files, output_dir, seed, max_instructions,
              stochastic_rounding, rounding_seed, trace_path, topology, ranks_per_chip,
              as_json) -> None:
    from neuronemu import api
    from neuronemu.multichip.topology import load_topologies

    try:
        topologies = load_topologies()
        if topology not in topologies:
            close = difflib.get_close_matches(topology, topologies, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise InputError(f"--topology: unknown topology '{topology}' (topologies: "
                             f"{', '.join(topologies)}){hint}")
        path = _bundled(kernel)
        program = api.assemble_file(path, target=target or topologies[topology].target)
        for name in output_files:
            if name not in program.tensors or program.tensors[name].role != "output":
                names = ", ".join(t.name for t in program.outputs()) or "none"
                raise InputError(f"--output {name}: the kernel has no output '{name}' "
                                 f"(outputs: {names})")
        result = api.run_spmd(program, topology, _load_inputs(input_files), seed=seed,
                              ranks_per_chip=ranks_per_chip, max_instructions=max_instructions,
                              stochastic_rounding=stochastic_rounding,
                              rounding_seed=rounding_seed)
        outputs = result.outputs
        destinations = dict(output_files)
        if output_dir is not None:
            output_dir.mkdir(parents=True, exist_ok=True)
            for t in program.outputs():
                destinations.setdefault(t.name, str(output_dir / f"{t.name}.npy"))
        files = {f"--output {name}": (dest, _npy_writer(_savable(outputs[name])))
                 for name, dest in destinations.items()}
        if trace_path is not None:
            from neuronemu.timing.report import chrome_trace_ranks

            files["--trace"] = (str(trace_path), _json_writer(chrome_trace_ranks(result)))
        saved = _save_all(files)
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    for rank in result.ranks:
        for warning in rank.warnings:
            click.echo(warning.render(), err=True)
    net = result.network
    times = [r.timing.time_ns for r in result.ranks]
    total = {}
    for r in result.ranks:
        for engine, count in r.instructions.items():
            total[engine] = total.get(engine, 0) + count
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kernel": str(path),
        "target": program.target.name,
        "topology": topology,
        "world": result.world,
        "ranks_per_chip": ranks_per_chip,
        "seed": seed,
        "rounding": "stochastic" if stochastic_rounding else "nearest_even",
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
                   **_timing_json(r.timing)} for i, r in enumerate(result.ranks)],
        "warnings": [w.to_json() for r in result.ranks for w in r.warnings],
    }
    if trace_path is not None:
        doc["trace"] = str(trace_path)
    for t in program.outputs():
        entry = {"shape": [result.world, *t.shape], "dtype": t.dtype,
                 **_summary(outputs[t.name])}
        if f"--output {t.name}" in saved:
            entry["path"] = saved[f"--output {t.name}"]
        doc["outputs"][t.name] = entry
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"kernel   {path}  (topology {topology}: {result.world} ranks on "
               f"{result.world // ranks_per_chip} {program.target.name} chips, seed {seed})")
    click.echo(f"executed {doc['instructions']['total']} instructions over all ranks  "
               f"({result.wall_seconds:.3f} s{_compiled_note(result.compile_seconds)})")
    for name, entry in doc["outputs"].items():
        stats = (f"min {entry['min']:.6g}  max {entry['max']:.6g}  mean {entry['mean']:.6g}"
                 if "min" in entry else "no finite values")
        dest = f"  -> {entry['path']}" if "path" in entry else ""
        shape = ", ".join(map(str, entry["shape"]))
        click.echo(f"output   {name}  {entry['dtype']}[{shape}]  {stats}{dest}")
    slowest = int(max(range(len(times)), key=times.__getitem__))
    click.echo(f"time     {result.time_ns / 1000:.3f} us (modelled; ranks finish between "
               f"{min(times) / 1000:.3f} and {max(times) / 1000:.3f} us, last: rank {slowest})")
    if net.messages:
        busiest = max(net.links.items(), key=lambda kv: kv[1].busy_ns, default=None)
        line = (f"network  {net.messages} messages, {net.bytes / 1e6:.3f} MB "
                f"({net.link_bytes / 1e6:.3f} MB over links)")
        if busiest is not None:
            line += f"; busiest link {busiest[0]} {busiest[1].busy_ns / 1000:.3f} us"
        click.echo(line)
    if trace_path is not None:
        click.echo(f"trace    {trace_path}  (open in https://ui.perfetto.dev; one process per "
                   f"rank)")


def _timing_json(timing) -> dict:
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
        "dma": _dma_json(timing.dma),
    }


def _dma_json(dma) -> dict:
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


def _print_timing(timing, target: str, sync_mode: str) -> None:
    if timing.time_ns == 0:
        click.echo("time     0 ns (no timed instructions)")
        return
    path_ns = sum(timing.critical_path.values())
    bound = timing.bound_by
    share = timing.critical_path.get(bound, 0.0) / path_ns if path_ns else 0.0
    click.echo(f"time     {timing.time_ns / 1000:.3f} us on {target} (modelled, sync {sync_mode}); "
               f"critical path bound by {bound} ({share:.0%})")
    click.echo(f"         {'track':<8} {'instrs':>7} {'busy us':>9} {'util':>6}")
    for name, t in timing.tracks.items():
        click.echo(f"         {name:<8} {t.instructions:>7} {t.busy_ns / 1000:>9.3f} "
                   f"{t.utilisation:>6.1%}")
    if timing.tensor_flops:
        click.echo(f"         tensor: {timing.tensor_flops / 1e6:.1f} MFLOP at "
                   f"{timing.tensor_flops_per_second / 1e12:.2f} TFLOP/s = "
                   f"{timing.tensor_peak_fraction:.1%} of the "
                   f"{timing.tensor_peak_flops_per_ns / 1e3:.1f} TFLOP/s bf16 peak")
    dma = timing.dma
    if dma is not None:
        ratio = (f"; compressed to {dma.compressed_bytes / 1e6:.3f} MB (ratio "
                 f"{dma.compression_ratio:.2f})" if dma.compressed_bytes != dma.bytes else "")
        click.echo(f"         dma: {dma.transfers} transfers, {dma.bytes / 1e6:.3f} MB{ratio}, "
                   f"{dma.achieved_gbps:.1f} GB/s achieved, engines {dma.engine_utilisation:.1%} "
                   f"busy")


@main.command()
@click.argument("kernel")
@click.option("--target", type=click.Choice(TARGETS))
@click.option("--json", "as_json", is_flag=True)
def check(kernel, target, as_json):
    """Assemble and validate KERNEL without running it."""
    from neuronemu import api

    try:
        path = _bundled(kernel)
        program = api.assemble_file(path, target=target)
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    counts = program.static_counts()
    if as_json:
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "kernel": str(path),
                               "target": program.target.name, "ok": True,
                               "instructions": {**counts, "total": len(program.instructions)}},
                              indent=2))
        return
    per_engine = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    click.echo(f"{path}: ok ({program.target.name}): {len(program.instructions)} instructions "
               f"({per_engine})")


@main.command()
@click.argument("mnemonic", required=False)
@click.option("--json", "as_json", is_flag=True)
def isa(mnemonic, as_json):
    """List the instructions, or describe one (ENGINE.MNEMONIC or MNEMONIC)."""
    import difflib

    from neuronemu.isa.table import load_isa

    table = load_isa().instructions
    entries = list(table.values())
    if mnemonic:
        entries = [d for d in entries if mnemonic in (d.name, d.mnemonic)]
        if not entries:
            close = difflib.get_close_matches(mnemonic, list(table) + [d.mnemonic for d in
                                                                      table.values()], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise _Failure(InputError(f"unknown instruction '{mnemonic}'{hint}"), as_json)
    if as_json:
        docs = [{"mnemonic": d.name, "engine": d.engine, "opcode": d.opcode,
                 "targets": list(d.targets or TARGETS), "nki": d.nki, "summary": d.summary,
                 "syntax": d.syntax, "cost_class": d.cost_class,
                 "args": [{"name": a.name, "kind": a.kind, "spaces": list(a.spaces),
                           "keyword": a.keyword, "default": a.default} for a in d.args]}
                for d in entries]
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "instructions": docs}, indent=2))
        return
    if not mnemonic:
        width = max(len(d.name) for d in entries)
        for d in sorted(entries, key=lambda d: (d.engine, d.opcode)):
            click.echo(f"{d.name:<{width}}  {d.summary}")
        return
    for d in entries:
        click.echo(f"{d.name}  ({d.nki or 'sequencer control'})\n  {d.summary}\n"
                   f"  syntax:  {d.syntax}\n  example: {d.example}")
        width = max((len(a.name) for a in d.args), default=0)
        for a in d.args:
            kind = f"enum {a.enum}" if a.kind == "enum" else a.kind
            where = f" in {'/'.join(a.spaces)}" if a.spaces else ""
            default = f" (default {a.default})" if a.default is not None else ""
            click.echo(f"    {a.name:<{width}}  {kind}{where}{default} {a.doc}".rstrip())


@main.command("asm")
@click.argument("kernel")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the binary (default: KERNEL with suffix .neo).")
@click.option("--target", type=click.Choice(TARGETS))
def asm_command(kernel, output, target):
    """Assemble KERNEL into the binary encoding (docs/encoding.md)."""
    from neuronemu import api, encoding

    try:
        path = _bundled(kernel)
        program = api.assemble_file(path, target=target)
        data = encoding.encode(program)
        dest = output or Path(path.name).with_suffix(".neo")
        _save_all({"--output": (str(dest), lambda f: f.write(data))})
    except NeuronemuError as e:
        raise _Failure(e, False) from None
    click.echo(f"{dest}: {len(program.instructions)} instructions, {len(data)} bytes")


@main.command("disasm")
@click.argument("binary", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the source there instead of stdout.")
def disasm_command(binary, output):
    """Print the assembly source of a .neo binary (it re-assembles to the same bytes)."""
    from neuronemu import encoding

    try:
        try:
            data = binary.read_bytes()
        except OSError as e:
            raise InputError(f"cannot read {binary}: {e.strerror}") from None
        text = encoding.disassemble(data, str(binary))
        if output is not None:
            _save_all({"--output": (str(output), lambda f: f.write(text.encode()))})
            return
    except NeuronemuError as e:
        raise _Failure(e, False) from None
    click.echo(text, nl=False)


@main.command()
def warm():
    """Compile every instruction kernel now (otherwise each compiles on first use; cached)."""
    from neuronemu.warm import warm as warm_all

    seconds = warm_all(lambda line: click.echo(line, err=True))
    click.echo(f"compiled code is ready ({seconds:.1f} s)")


@main.command()
def programs():
    """List the bundled example programs."""
    from neuronemu.programs import bundled_programs

    for name, path in bundled_programs().items():
        first = path.read_text().splitlines()[0].lstrip("# ").strip()
        click.echo(f"{name:<28} {first}")


@main.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def topology(name, as_json):
    """Describe a multi-chip system (isa/topologies.toml), or list them all."""
    from neuronemu.multichip.topology import load_topologies

    topologies = load_topologies()
    if name is None:
        if as_json:
            click.echo(json.dumps({n: _topology_json(t) for n, t in topologies.items()}))
            return
        for n, t in topologies.items():
            click.echo(f"{n:<24} {t.chips:>4} chips x {t.cores_per_chip} cores  {t.layout}")
        return
    if name not in topologies:
        close = difflib.get_close_matches(name, list(topologies), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise click.BadParameter(f"unknown topology '{name}'{hint} (topologies: "
                                 f"{', '.join(topologies)})", param_hint="NAME")
    t = topologies[name]
    if as_json:
        click.echo(json.dumps(_topology_json(t)))
        return
    click.echo(f"{name}: {t.chips} {t.target} chips x {t.cores_per_chip} cores "
               f"= {t.chips * t.cores_per_chip} NeuronCores")
    if t.layout == "torus":
        dims = " x ".join(str(s) for s in t.shape)
        click.echo(f"  layout     {dims} torus, {len(t.chip_neighbours(0))} neighbours per chip")
    elif t.layout == "switched":
        click.echo(f"  layout     {t.servers} servers x {t.chips_per_server} chips, a switch per "
                   f"server, {t.spines} spine switch(es)")
    else:
        click.echo("  layout     one chip")
    if t.links:
        speeds = sorted({link.gb_s for link in t.links.values()})
        click.echo(f"  links      {len(t.links)} ({', '.join(f'{s:g}' for s in speeds)} GB/s "
                   f"each way), {t.chip_gb_s:g} GB/s out of each chip")
        click.echo(f"  latency    {t.hop_ns:g} ns per hop, diameter {t.diameter} hops")
        click.echo(f"  all-reduce ring, 1 MiB per chip: {t.ring_allreduce_ns(1 << 20) / 1000:.1f} us "
                   f"(analytic: 2(n-1)/n x size / bandwidth + 2(n-1) x step latency)")
    click.echo(f"  source     {t.source}")


def _topology_json(t) -> dict:
    return {"target": t.target, "layout": t.layout, "chips": t.chips,
            "cores_per_chip": t.cores_per_chip, "shape": list(t.shape), "switches": t.switches,
            "links": len(t.links), "link_gb_s": sorted({link.gb_s for link in t.links.values()}),
            "hop_ns": t.hop_ns, "diameter": t.diameter,
            "ring_allreduce_1mib_ns": round(t.ring_allreduce_ns(1 << 20), 3)}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
