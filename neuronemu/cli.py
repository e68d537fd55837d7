"""The ``neuronemu`` command line (click). Exit codes are listed in neuronemu/errors.py and the
README: 0 ok, 1 runtime fault or limit, 2 usage, 3 assembly error, 4 bad input/output file,
5 synchronisation error, 6 not enough host memory, 130 interrupted (Ctrl-C)."""

from __future__ import annotations

import difflib
import json
import math
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import click

from neuronemu.errors import AsmError, InputError, Interrupted, NeuronemuError
from neuronemu.multichip.comm import launched_by_mpiexec, partition_number

SCHEMA_VERSION = 1
TARGETS = ("trn1", "trn2", "trn3")
INT64_MAX = 2 ** 63 - 1  # seeds and limits live in int64 registers
DEFAULT_TIMEOUT = 60.0


class _Failure(click.ClickException):
    """Carries a NeuronemuError out of a command with its exit code, rendered once."""

    def __init__(self, error: NeuronemuError, as_json: bool):
        super().__init__(error.message)
        self.error = error
        self.exit_code = error.exit_code
        self.as_json = as_json

    def show(self, file=None) -> None:
        if partition_number() != 0:
            return   # every MPI partition raises the same error; partition 0 reports it
        if self.as_json:
            click.echo(json.dumps(_error_document(self.error), indent=2))
        click.echo(self.error.render(), err=True)


def _error_document(error: NeuronemuError) -> dict:
    """The --json document of a failed command: ``error`` is the first error (as it always
    was). A kernel that does not assemble adds ``errors``, every error reported (the first
    included, in the order they were found, up to 20) and ``errors_truncated``, true when the
    limit stopped the assembler before the end of the file; other failures (one error each)
    keep the document they always had."""
    doc = {"schema_version": SCHEMA_VERSION, "error": error.to_json()}
    if isinstance(error, AsmError):
        doc["errors"] = [e.to_json() for e in error.errors]
        doc["errors_truncated"] = error.truncated
    return doc


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    pairs = {}
    for text in values:
        name, sep, path = text.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"expected NAME=FILE.npy, got {text!r}", param_hint=option)
        if name in pairs:
            raise click.BadParameter(f"'{name}' is given twice ({pairs[name]} and {path})",
                                     param_hint=option)
        pairs[name] = path
    return pairs


class _Seconds(click.ParamType):
    """A wall-clock limit in seconds: a number >= 0; 0 (or inf) means no limit (None)."""

    name = "seconds"

    def convert(self, value, param, ctx):
        if value is None:
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if math.isnan(number) or number < 0:
            self.fail(f"{value!r} is not a number of seconds >= 0 (0: no limit)", param, ctx)
        return None if number == 0 or math.isinf(number) else number


class _JsonUsageError(click.UsageError):
    """A usage error under --json: the error document on stdout too, as for every other error,
    so a caller that parses stdout always gets one JSON document."""

    def __init__(self, error: click.UsageError):
        super().__init__(error.format_message(), error.ctx)
        self.error = error
        self.exit_code = error.exit_code

    def show(self, file=None) -> None:
        doc = {"type": "UsageError", "message": self.error.format_message(),
               "exit_code": self.exit_code}
        param = getattr(self.error, "param", None)
        hint = getattr(self.error, "param_hint", None)
        if param is not None and getattr(param, "opts", None):
            doc["option"] = param.opts[0]
        elif isinstance(hint, str):
            doc["option"] = hint.split("/")[0].strip(" '\"")
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "error": doc}, indent=2))
        self.error.show(file)


class _Group(click.Group):
    """Turns click's usage errors into _JsonUsageError when the command line asks for --json."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = args[:args.index("--")] if "--" in args else args
        ctx.meta["neuronemu.json"] = "--json" in options
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            if ctx.meta.get("neuronemu.json") and not isinstance(e, _JsonUsageError):
                raise _JsonUsageError(e) from None
            raise


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


def _load_inputs(pairs: dict[str, str]) -> dict:
    return {name: _load_npy(name, path) for name, path in pairs.items()}


def _load_npy(name: str, path: str):
    """One --input file. The header is read first and the data size checked against the file, so
    a header that claims terabytes is an error, not an allocation; the data is memory-mapped
    (read-only), so a big input is read straight into the HBM image, not copied first."""
    import numpy as np
    from numpy.lib import format as npy

    label = f"--input {name}"
    try:
        size = os.path.getsize(path)
        if os.path.isdir(path):
            raise InputError(f"{label}: {path} is a directory, not a .npy file")
        if size == 0:
            raise InputError(f"{label}: {path} is empty (0 bytes), not a .npy file")
        with open(path, "rb") as f:
            version = npy.read_magic(f)
            header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, _, dtype = header(f)
            data_start = f.tell()
    except FileNotFoundError:
        raise InputError(f"{label}: no such file {path}") from None
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{label}: cannot read {path} as .npy ({e})") from None
    need = math.prod(shape) * dtype.itemsize  # Python ints: exact for any claimed shape
    have = size - data_start
    if not dtype.hasobject and need > have:
        from neuronemu.hostmem import human

        raise InputError(f"{label}: {path} is truncated or corrupt: its header declares "
                         f"{dtype}{list(shape)} = {need} bytes ({human(need)}) of data, but "
                         f"only {have} bytes follow")
    try:
        if need and not dtype.hasobject:
            try:
                return np.load(path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError):
                pass  # not mappable (a pipe, a special file): read it
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{label}: cannot read {path} as .npy ({e})") from None


_SUMMARY_PIECE = 1 << 22


def _compiled_note(seconds: float) -> str:
    """The one-time compile, apart from the run time it used to be counted in."""
    return f"; plus {seconds:.1f} s compiling, once" if seconds >= 0.05 else ""


def _summary(array) -> dict:
    """nan count, min, max and mean of the finite values. A big array is summarised piece by
    piece (its float64 copy would cost twice its size); the mean then sums the pieces' sums."""
    import numpy as np

    flat = np.asarray(array).reshape(-1)
    if flat.size <= _SUMMARY_PIECE:
        values = flat.astype(np.float64)
        finite = values[np.isfinite(values)]
        doc = {"nan_count": int(np.isnan(values).sum())}
        if finite.size:
            doc.update(min=float(finite.min()), max=float(finite.max()),
                       mean=float(finite.mean()))
        return doc
    nan_count, count, total, low, high = 0, 0, [], math.inf, -math.inf
    for start in range(0, flat.size, _SUMMARY_PIECE):
        values = flat[start: start + _SUMMARY_PIECE].astype(np.float64)
        nan_count += int(np.isnan(values).sum())
        finite = values[np.isfinite(values)]
        if finite.size:
            count += finite.size
            total.append(float(finite.sum()))
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    doc = {"nan_count": nan_count}
    if count:
        doc.update(min=low, max=high, mean=math.fsum(total) / count)
    return doc


def _savable(array):
    """numpy cannot round-trip ml_dtypes through .npy, so bf16/fp8 are saved widened to float32
    (exact); native numpy dtypes are saved as they are."""
    import numpy as np

    if array.dtype.name in ("bfloat16",) or array.dtype.name.startswith("float8"):
        return array.astype(np.float32)
    return array


Writer = Callable  # writes a file's bytes to a binary file object


def _save_all(files: dict[str, tuple[str, Writer]], directory: Path | None = None
              ) -> dict[str, str]:
    """Write every ``label -> (path, write(binary file))`` or none: each goes to a new hidden
    temporary file in its destination's directory and is renamed into place only when all of
    them were written; ``directory`` (--output-dir) is created first if missing. On any failure
    (or Ctrl-C) the temporaries and the directories made are removed, and existing files are
    left as they were. (The renames themselves, all
    within directories already written to, are the one step that is not all-or-none.)"""
    staged: list[tuple[Path, Path]] = []
    made: list[Path] = []
    done = False
    try:
        if directory is not None:
            try:
                made += _make_directories(directory)
            except OSError as e:
                raise InputError(f"--output-dir: cannot create {directory}: "
                                 f"{e.strerror or e}") from None
        for label, (dest, write) in files.items():
            final = Path(dest)
            try:
                temporary, fd = _create_temporary(final)
                staged.append((temporary, final))
                with os.fdopen(fd, "wb") as f:
                    write(f)
            except OSError as e:
                raise InputError(f"{label}: cannot write {dest}: {e.strerror or e}") from None
        for (temporary, final), label in zip(staged, files, strict=True):
            try:
                os.replace(temporary, final)
            except OSError as e:
                raise InputError(f"{label}: cannot write {final}: {e.strerror or e}") from None
        done = True
    finally:
        for temporary, _ in staged:
            if not done and temporary.exists():
                temporary.unlink()
        if not done:
            for created in reversed(made):
                try:
                    created.rmdir()
                except OSError:
                    pass
    return {label: dest for label, (dest, _) in files.items()}


def _create_temporary(final: Path) -> tuple[Path, int]:
    """A new file next to ``final`` (same directory, so the rename is atomic), with the
    permissions a new file gets (0o666 less the umask); a unique name, so two runs writing the
    same destination never share a temporary."""
    while True:
        temporary = final.with_name(f".{final.name}.{secrets.token_hex(4)}.partial")
        try:
            return temporary, os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _make_directories(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return those created, outermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
    return list(reversed(missing))


def _destinations(program, output_files: dict[str, str], output_dir: Path | None,
                  trace_path: Path | None) -> dict[str, str]:
    """``label -> path`` of every file the run will write: --output, then DIR/NAME.npy for the
    outputs --output did not name, then --trace; checked before the kernel runs (so a long run is
    not wasted): no two the same file, none an existing directory, every directory writable."""
    for name in output_files:
        if name not in program.tensors or program.tensors[name].role != "output":
            names = ", ".join(t.name for t in program.outputs()) or "none"
            raise InputError(f"--output {name}: the kernel has no output '{name}' "
                             f"(outputs: {names})")
    files = {f"--output {name}": path for name, path in output_files.items()}
    if output_dir is not None:
        for t in program.outputs():
            if t.name not in output_files:
                files[f"--output-dir {t.name}"] = str(output_dir / f"{t.name}.npy")
    if trace_path is not None:
        files["--trace"] = str(trace_path)
    seen: dict[str, str] = {}
    for label, path in files.items():
        key = os.path.normcase(os.path.realpath(path))
        if key in seen:
            raise InputError(f"{seen[key]} and {label} both write {path}: give each its own file")
        seen[key] = label
        _check_destination(label, Path(path), output_dir)
    return files


def _check_destination(label: str, path: Path, output_dir: Path | None) -> None:
    """``path`` can be written: not a directory, and its directory exists (or is --output-dir,
    which is created when the outputs are written) and takes new files."""
    if path.is_dir():
        raise InputError(f"{label}: cannot write {path}: it is a directory")
    directory = path.parent
    while not directory.exists():  # --output-dir is created when the outputs are written
        if directory.parent == directory:
            break
        directory = directory.parent
    if not directory.is_dir():
        raise InputError(f"{label}: cannot write {path}: {directory} is not a directory")
    will_exist = output_dir is not None and (os.path.realpath(path.parent)
                                             == os.path.realpath(output_dir))
    if directory != path.parent and not will_exist:
        raise InputError(f"{label}: cannot write {path}: no such directory {path.parent}")
    try:  # the only sure test of writability (root, ACLs, read-only mounts): try it
        temporary, fd = _create_temporary(directory / path.name)
        os.close(fd)
        temporary.unlink()
    except OSError as e:
        raise InputError(f"{label}: cannot write {path}: {e.strerror or e} ({directory})"
                         ) from None


def _npy_writer(array):
    import numpy as np

    return lambda f: np.save(f, array, allow_pickle=False)


def _json_writer(doc):
    return lambda f: f.write(json.dumps(doc).encode())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--seed", type=click.IntRange(0, INT64_MAX), default=0, show_default=True,
              help="Seed of the random initialisers (0 .. 2**63-1).")
@click.option("--max-instructions", type=click.IntRange(1, INT64_MAX), default=50_000_000,
              show_default=True, help="Stop with an error after this many dynamic instructions "
                                      "(per rank).")
@click.option("--timeout", type=_Seconds(), default=DEFAULT_TIMEOUT, show_default=True,
              metavar="SECONDS", help="Stop with an error after this many seconds of execution "
                                      "(compiling does not count); 0 for no limit.")
@click.option("--stochastic-rounding", is_flag=True,
              help="Round fp32 -> bf16/fp16/fp8/tf32 stores stochastically (unbiased).")
@click.option("--rounding-seed", type=click.IntRange(0, INT64_MAX), default=None,
              help="Seed of the stochastic-rounding bits (default: --seed).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the timeline as Chrome/Perfetto trace JSON (open in ui.perfetto.dev).")
@click.option("--topology", metavar="NAME",
              help="Run the kernel on every chip of a multi-chip system (SPMD; `neuronemu "
                   "topology` lists them; default: the kernel's .topology directive, if any). "
                   "Inputs of the declared shape go to every rank, with a leading world axis one "
                   "per rank; outputs gain that axis.")
@click.option("--ranks-per-chip", type=click.IntRange(1, INT64_MAX), default=None,
              help="With a topology: cores of each chip that run the kernel (default: the "
                   "kernel's .topology ranks_per_chip= on its own topology, else 1).")
@click.option("--partitions", type=click.IntRange(1, INT64_MAX), default=None, metavar="P",
              help="With a topology: split the ranks into P partitions of whole chips (whole "
                   "servers on switched topologies) that exchange only messages, run as threads "
                   "of this process; the result is the same for every P (docs/multichip.md). "
                   "Under `mpiexec -n P` each process is a partition without this option.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Draw the per-engine/queue timeline with utilisation to FILE.png (needs "
                   "matplotlib: pip install 'neuronemu[plot]'; with --topology: the slowest "
                   "rank).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def run(kernel, target, inputs, outputs, output_dir, seed, max_instructions, timeout,
        stochastic_rounding, rounding_seed, trace_path, topology, ranks_per_chip, partitions,
        plot_path, as_json):
    """Assemble and run KERNEL (a .s file or a bundled program name); show its outputs."""

    _check_plot(plot_path)
    input_files = _pairs(inputs, "--input")
    output_files = _pairs(outputs, "--output")
    options = {"seed": seed, "max_instructions": max_instructions, "timeout": timeout,
               "stochastic_rounding": stochastic_rounding, "rounding_seed": rounding_seed,
               "partitions": partitions}
    try:
        if topology is not None:
            _run_spmd(kernel, target, input_files, output_files, output_dir, options,
                      trace_path, topology, ranks_per_chip, as_json, plot_path)
        else:
            _run_one(kernel, target, input_files, output_files, output_dir, options,
                     trace_path, as_json, plot_path, ranks_per_chip)
    except KeyboardInterrupt:
        # Ctrl-C outside the instruction loop (assembling, compiling, writing): nothing written
        raise _Failure(Interrupted("interrupted (Ctrl-C); nothing was written",
                                   limit="interrupt"), as_json) from None


def _check_plot(plot_path: Path | None) -> None:
    """--plot needs matplotlib (an optional extra): say so before running anything."""
    if plot_path is None:
        return
    from neuronemu.plot import MissingMatplotlib, require_matplotlib

    try:
        require_matplotlib()
    except MissingMatplotlib as e:
        raise click.BadParameter(str(e), param_hint="--plot") from None


def _write_plot(program, timing, plot_path: Path | None, title: str, as_json: bool) -> None:
    if plot_path is None:
        return
    from neuronemu.plot import plot_timeline

    try:
        plot_timeline(program, timing, plot_path, title=title)
    except OSError as e:
        raise _Failure(InputError(f"--plot: cannot write {plot_path}: {e.strerror}"),
                       as_json) from None


def _run_one(kernel, target, input_files, output_files, output_dir, options, trace_path,
             as_json, plot_path=None, ranks_per_chip=None) -> None:
    from neuronemu import api

    try:
        path = _bundled(kernel)
        program = api.assemble_file(path, target=target)
        if program.topology is not None:
            # the kernel names its own system (.topology): run it there, as --topology would
            _run_spmd(kernel, target, input_files, output_files, output_dir, options,
                      trace_path, None, ranks_per_chip, as_json, plot_path, program)
            return
        if options.pop("partitions") is not None or launched_by_mpiexec():
            raise InputError("partitions (--partitions, mpiexec -n P) split the ranks of a "
                             "multi-rank run, but this kernel runs on one core: give "
                             "--topology NAME or a .topology directive")
        if ranks_per_chip not in (None, 1):   # 1 is every single-core run's count
            raise click.BadParameter("needs --topology or a .topology directive in the kernel "
                                     "(ranks run on the chips of a topology)",
                                     param_hint="--ranks-per-chip")
        destinations = _destinations(program, output_files, output_dir, trace_path)
        result = api.run(program, _load_inputs(input_files), **options)
        files = {label: (dest, _npy_writer(_savable(result.outputs[label.split()[1]])))
                 for label, dest in destinations.items() if label != "--trace"}
        if trace_path is not None:
            from neuronemu.timing.report import chrome_trace

            files["--trace"] = (str(trace_path), _json_writer(chrome_trace(program,
                                                                           result.timing)))
        saved = _save_all(files, output_dir)
        written = {label.split()[1]: dest for label, dest in saved.items()
                   if label != "--trace"}
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    _write_plot(program, result.timing, plot_path, Path(str(path)).name, as_json)
    seed, stochastic_rounding = options["seed"], options["stochastic_rounding"]
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
    if plot_path is not None:
        doc["plot"] = str(plot_path)
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
    if plot_path is not None:
        click.echo(f"plot     {plot_path}")


def _run_spmd(kernel, target, input_files, output_files, output_dir, options, trace_path,
              topology, ranks_per_chip, as_json, plot_path=None, program=None) -> None:
    """Run on every rank of ``topology`` (None: the kernel's .topology; ``program`` is then
    the kernel already assembled)."""
    from neuronemu import api
    from neuronemu.isa.topologies import load_topologies

    try:
        topologies = load_topologies()
        if topology is not None and topology not in topologies:
            close = difflib.get_close_matches(topology, topologies, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise InputError(f"--topology: unknown topology '{topology}' (topologies: "
                             f"{', '.join(topologies)}){hint}")
        path = _bundled(kernel)
        if program is None:
            program = api.assemble_file(path, target=target or topologies[topology].target)
        topology, ranks_per_chip = api.default_topology(program, topology, ranks_per_chip)
        destinations = _destinations(program, output_files, output_dir, trace_path)
        result = api.run_spmd(program, topology, _load_inputs(input_files),
                              ranks_per_chip=ranks_per_chip, **options)
        if result is None:
            return   # an MPI partition other than 0: partition 0 reports the run
        outputs = result.outputs
        files = {label: (dest, _npy_writer(_savable(outputs[label.split()[1]])))
                 for label, dest in destinations.items() if label != "--trace"}
        if trace_path is not None:
            from neuronemu.timing.report import chrome_trace_ranks

            files["--trace"] = (str(trace_path), _json_writer(chrome_trace_ranks(result)))
        saved = {label.split()[1]: dest for label, dest in _save_all(files, output_dir).items()
                 if label != "--trace"}
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    times = [r.timing.time_ns for r in result.ranks]
    slowest = int(max(range(len(times)), key=times.__getitem__))
    _write_plot(program, result.ranks[slowest].timing, plot_path,
                f"{Path(str(path)).name}, rank {slowest} of {result.world}", as_json)
    seed, stochastic_rounding = options["seed"], options["stochastic_rounding"]
    for rank in result.ranks:
        for warning in rank.warnings:
            click.echo(warning.render(), err=True)
    net = result.network
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
    if plot_path is not None:
        doc["plot"] = str(plot_path)
    for t in program.outputs():
        entry = {"shape": [result.world, *t.shape], "dtype": t.dtype,
                 **_summary(outputs[t.name])}
        if t.name in saved:
            entry["path"] = saved[t.name]
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
    if plot_path is not None:
        click.echo(f"plot     {plot_path}")


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
    for warning in program.warnings:
        click.echo(warning.render(), err=True)
    if as_json:
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "kernel": str(path),
                               "target": program.target.name, "ok": True,
                               "instructions": {**counts, "total": len(program.instrs)},
                               "warnings": [w.to_json() for w in program.warnings]},
                              indent=2))
        return
    per_engine = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    # (the counts from the lowered rows: checking builds no Instruction objects, asm/fastresolve)
    click.echo(f"{path}: ok ({program.target.name}): {len(program.instrs)} instructions "
               f"({per_engine})")


@main.command()
@click.argument("mnemonic", required=False)
@click.option("--json", "as_json", is_flag=True)
def isa(mnemonic, as_json):
    """List the instructions (all, or one ENGINE's), or describe one (ENGINE.MNEMONIC or
    MNEMONIC)."""
    import difflib

    from neuronemu.isa.table import load_isa

    table = load_isa().instructions
    entries = list(table.values())
    engines = {d.engine for d in entries}
    listing = not mnemonic or mnemonic in engines   # `isa vector`: that engine's instructions
    if mnemonic:
        entries = [d for d in entries if mnemonic in (d.name, d.mnemonic, d.engine)]
        if not entries:
            close = difflib.get_close_matches(mnemonic, list(table) + sorted(engines) +
                                              [d.mnemonic for d in table.values()], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            # a name on the command line, not a file: a usage error (exit 2), as click's own
            raise click.BadParameter(f"unknown instruction or engine '{mnemonic}'{hint}",
                                     param_hint="MNEMONIC")
    if as_json:
        docs = [{"mnemonic": d.name, "engine": d.engine, "opcode": d.opcode,
                 "targets": list(d.targets or TARGETS), "nki": d.nki, "summary": d.summary,
                 "syntax": d.syntax, "cost_class": d.cost_class,
                 "args": [{"name": a.name, "kind": a.kind, "spaces": list(a.spaces),
                           "keyword": a.keyword, "default": a.default} for a in d.args]}
                for d in entries]
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "instructions": docs}, indent=2))
        return
    if listing:
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


@main.group("nki")
def nki_group() -> None:
    """Run NKI kernels (Python) on neuronemu."""


@nki_group.command("run", context_settings={"ignore_unknown_options": True,
                                            "allow_interspersed_args": False})
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def nki_run(script, args):
    """Run SCRIPT (an unmodified NKI kernel file or its test script) with ARGS; `import nki`,
    `nki.language`, `nki.isa`, `nki.typing` and `nki.collectives` resolve to neuronemu.nki."""
    from neuronemu.nki.dropin import run_script

    sys.exit(run_script(script, list(args)))


@main.command("grade")
@click.argument("lab", required=False)
@click.argument("kernel", required=False)
@click.option("--gradescope", "gradescope_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write Gradescope's results.json to FILE.")
@click.option("--seeds", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Random inputs per shape.")
@click.option("--seed-base", type=click.IntRange(0, INT64_MAX), default=0, show_default=True,
              help="First seed (instructors: a value students do not know).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Draw the timeline of the first timed shape to FILE.png (needs matplotlib).")
@click.option("--list", "list_labs", is_flag=True, help="List the labs.")
@click.option("--json", "as_json", is_flag=True, help="Print the results.json document on stdout.")
def grade_command(lab, kernel, gradescope_path, seeds, seed_base, plot_path, list_labs, as_json):
    """Grade KERNEL.s for LAB (a folder of programs/labs, or its number): correctness on seeded
    random inputs and unseen shapes, then modelled time against the reference's."""
    from neuronemu.grade.labs import LABS, find_lab

    if list_labs:
        for name, spec in LABS.items():
            click.echo(f"{name:22s} {spec.title}")
        return
    if lab is None or kernel is None:
        raise click.UsageError("give LAB and KERNEL.s (or --list)")
    _check_plot(plot_path)
    from neuronemu.grade import gradescope
    from neuronemu.grade.grader import grade, note

    try:
        spec = find_lab(lab)
        path = Path(kernel)
        if not path.is_file():
            raise InputError(f"no such kernel file: {kernel}")
        report = grade(spec, path, seeds=seeds, seed_base=seed_base, plot=plot_path,
                       progress=note)
        doc = gradescope.results(report)
        if gradescope_path is not None:
            _save_all({"--gradescope": (str(gradescope_path), _json_writer(doc))})
    except NeuronemuError as e:
        raise _Failure(e, as_json) from None
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(report.text())
        if plot_path is not None:
            click.echo(f"plot     {plot_path}" if report.plots else
                       "plot     none drawn: no timed shape produced correct outputs")


@main.command()
def programs():
    """List the bundled example programs."""
    import shutil
    import textwrap

    from neuronemu.programs import bundled_programs, description

    found = bundled_programs()
    width = max(len(name) for name in found) + 2
    columns = max(shutil.get_terminal_size((100, 24)).columns, width + 30)
    for name, path in found.items():
        click.echo(textwrap.fill(description(path.read_text()), columns,
                                 initial_indent=f"{name:<{width}}",
                                 subsequent_indent=" " * width))


@main.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def topology(name, as_json):
    """Describe a multi-chip system (isa/topologies.toml), or list them all."""
    from neuronemu.isa.topologies import load_topologies

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
