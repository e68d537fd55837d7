"""The ``neuronemu`` command line (click). Exit codes are listed in neuronemu/errors.py and the
README: 0 ok, 1 runtime fault or limit, 2 usage, 3 assembly error, 4 bad input/output file,
5 synchronisation error, 6 not enough host memory, 130 interrupted (Ctrl-C)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from neuronemu import files, report, runs
from neuronemu.cli_errors import Failure, Group, echo_warnings
from neuronemu.errors import InputError, NeuronemuError
from neuronemu.multichip.comm import launched_by_mpiexec
from neuronemu.multichip.run import agreed_error, end_launch
from neuronemu.programs import check_own_topology, resolve_kernel

TARGETS = ("trn1", "trn2", "trn3")
INT64_MAX = 2 ** 63 - 1  # seeds and limits live in int64 registers
DEFAULT_TIMEOUT = 60.0


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


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--max-trace-events", type=click.IntRange(1, INT64_MAX), default=None,
              metavar="N", help="Keep only the first N timed instructions (per rank) for the "
                                "trace and the critical path, in memory (168 bytes each); "
                                "under .sync explicit every one is replayed, so it bounds the "
                                "run. Default: all of them (past a 42 MiB buffer, in an "
                                "unnamed temporary file, ~120 bytes each).")
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
        max_trace_events, stochastic_rounding, rounding_seed, trace_path, topology, ranks_per_chip, partitions,
        plot_path, as_json):
    """Assemble and run KERNEL (a .s file or a bundled program name); show its outputs."""

    _check_plot(plot_path, as_json)
    input_files = _pairs(inputs, "--input")
    output_files = _pairs(outputs, "--output")
    options = {"seed": seed, "max_instructions": max_instructions, "timeout": timeout,
               "max_trace_events": max_trace_events,
               "stochastic_rounding": stochastic_rounding, "rounding_seed": rounding_seed,
               "partitions": partitions}
    try:
        _run(kernel, target, topology, ranks_per_chip, input_files, output_files, output_dir,
             options, trace_path, plot_path, as_json)
    except Failure as failure:
        raise Failure(agreed_error(failure.error), as_json, failure.warnings) from None
    except click.ClickException:
        raise   # usage errors: every process has the same command line
    except BaseException:
        end_launch()
        raise


def _check_plot(plot_path: Path | None, as_json: bool = False) -> None:
    """--plot: matplotlib (an optional extra) and a directory to write into, checked before
    running (or grading) anything, not after."""
    from neuronemu.plot import MissingMatplotlib, check_destination

    try:
        check_destination(plot_path)
    except MissingMatplotlib as e:
        raise click.BadParameter(str(e), param_hint="--plot") from None
    except InputError as e:
        raise Failure(e, as_json) from None


def _write_plot(program, timing, plot_path: Path | None, title: str, as_json: bool) -> None:
    if plot_path is None:
        return
    from neuronemu.plot import plot_timeline

    try:
        plot_timeline(program, timing, plot_path, title=title)
    except OSError as e:
        raise Failure(InputError(f"--plot: cannot write {plot_path}: {e.strerror}"),
                       as_json) from None


def _run(kernel, target, topology, ranks_per_chip, input_files, output_files, output_dir,
         options, trace_path, plot_path, as_json) -> None:
    """neuronemu.runs does the run (one core, or every rank of ``topology`` or of the kernel's
    own ``.topology``); this reports it."""
    program = None
    try:
        path, program = runs.assemble(kernel, target, topology)
        if not runs.runs_on_ranks(program, topology) and ranks_per_chip not in (None, 1):
            raise click.BadParameter("needs --topology or a .topology directive in the kernel "
                                     "(ranks run on the chips of a topology)",
                                     param_hint="--ranks-per-chip")   # 1: every core's count
        done = runs.run(path, program, topology=topology, ranks_per_chip=ranks_per_chip,
                        input_files=input_files, output_files=output_files,
                        output_dir=output_dir, trace_path=trace_path, plot_path=plot_path,
                        **options)
    except NeuronemuError as e:
        raise Failure(e, as_json, program.warnings if program is not None else ()) from None
    if done is None:
        return   # an MPI partition other than 0: partition 0 reports the run
    result = done.result
    if done.topology is not None:
        slowest = report.slowest_rank(result)
        _write_plot(program, result.ranks[slowest].timing, plot_path,
                    f"{path.name}, rank {slowest} of {result.world}", as_json)
        echo_warnings(w for rank in result.ranks for w in rank.warnings)
        lines = report.spmd_lines(done.document, program, result)
    else:
        _write_plot(program, result.timing, plot_path, path.name, as_json)
        echo_warnings(result.warnings)
        lines = report.run_lines(done.document, program, result)
    click.echo(json.dumps(done.document, indent=2) if as_json else "\n".join(lines))


@main.command()
@click.argument("kernel")
@click.option("--target", type=click.Choice(TARGETS))
@click.option("--json", "as_json", is_flag=True)
def check(kernel, target, as_json):
    """Assemble and validate KERNEL without running it."""
    from neuronemu import api

    try:
        path = resolve_kernel(kernel)
        program = api.assemble_file(path, target=target)
        check_own_topology(program, target)
    except NeuronemuError as e:
        raise Failure(e, as_json) from None
    echo_warnings(program.warnings)
    click.echo(json.dumps(report.check_document(str(path), program), indent=2) if as_json
               else "\n".join(report.check_lines(str(path), program)))


@main.command()
@click.argument("mnemonic", required=False)
@click.option("--json", "as_json", is_flag=True)
def isa(mnemonic, as_json):
    """List the instructions (all, or one ENGINE's), describe one (ENGINE.MNEMONIC or
    MNEMONIC), or show an argument's legal values (an enum such as activation, or one value)."""
    from neuronemu import isa_reference

    try:
        found = isa_reference.lookup(mnemonic)
    except isa_reference.UnknownName as e:
        # a name on the command line, not a file: a usage error (exit 2), as click's own
        raise click.BadParameter(str(e), param_hint="MNEMONIC") from None
    click.echo(json.dumps(report.versioned(isa_reference.render_json(found)), indent=2)
               if as_json else "\n".join(isa_reference.render_text(found)))


@main.command("asm")
@click.argument("kernel")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the binary (default: KERNEL with suffix .neo).")
@click.option("--target", type=click.Choice(TARGETS))
def asm_command(kernel, output, target):
    """Assemble KERNEL into the binary encoding (docs/encoding.md)."""
    from neuronemu import api, encoding

    try:
        path = resolve_kernel(kernel)
        program = api.assemble_file(path, target=target)
        check_own_topology(program, target)
        data = encoding.encode(program)
        dest = output or Path(path.name).with_suffix(".neo")
        files.save_all({"--output": (str(dest), lambda f: f.write(data))})
    except NeuronemuError as e:
        raise Failure(e, False) from None
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
            files.save_all({"--output": (str(output), lambda f: f.write(text.encode()))})
            return
    except NeuronemuError as e:
        raise Failure(e, False) from None
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
    from neuronemu.grade.labs import LABS

    if list_labs:
        for name, spec in LABS.items():
            click.echo(f"{name:22s} {spec.title}")
        return
    if lab is None or kernel is None:
        raise click.UsageError("give LAB and KERNEL.s (or --list)")
    from neuronemu.grade.command import grade_file

    try:
        if not launched_by_mpiexec():   # (grade_file refuses that first)
            _check_plot(plot_path, as_json)
        graded, doc = grade_file(lab, kernel, seeds=seeds, seed_base=seed_base, plot=plot_path,
                                 gradescope_path=gradescope_path)
    except NeuronemuError as e:
        raise Failure(e, as_json) from None
    click.echo(json.dumps(doc, indent=2) if as_json else graded.text(plot_path))


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("kernel")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("-x", "scripts", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE", help="Run the debugger commands in FILE first (repeatable).")
@click.option("--batch", is_flag=True, help="Exit after the -x files (no prompt).")
@click.option("--target", type=click.Choice(TARGETS))
@click.option("--input", "inputs", multiple=True, metavar="NAME=FILE.npy")
@click.option("--seed", type=click.IntRange(0, INT64_MAX), default=0, show_default=True)
@click.option("--max-instructions", type=click.IntRange(1, INT64_MAX), default=50_000_000)
@click.option("--kernel", "kernel_name", metavar="NAME",
              help="For a .py script: debug the NKI kernel of this name (default: the first run).")
@click.option("--topology", metavar="NAME",
              help="Debug every rank of this topology, as `run --topology` runs them (default: "
                   "the kernel's .topology directive, if any).")
@click.option("--ranks-per-chip", type=click.IntRange(1, INT64_MAX), default=None,
              help="With a topology: cores of each chip that run the kernel.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document per command.")
def debug(kernel, script_args, scripts, batch, target, inputs, seed, max_instructions,
          kernel_name, topology, ranks_per_chip, as_json):
    """Debug KERNEL (.s, or a .py script that runs an NKI kernel; arguments after it go to the
    script): breakpoints, watches, steps forward and back, tiles, who wrote an element.
    docs/debugging.md."""
    from neuronemu.debug import repl

    try:
        debugger = repl.load(resolve_kernel(kernel), target=target,
                             inputs=files.load_inputs(_pairs(inputs, "--input")), seed=seed,
                             max_instructions=max_instructions, argv=list(script_args),
                             kernel_name=kernel_name, topology=topology,
                             ranks_per_chip=ranks_per_chip)
    except NeuronemuError as e:
        raise Failure(e, as_json) from None
    sys.exit(repl.main(debugger, list(scripts), batch, as_json))


@main.command()
def dap():
    """Serve the Debug Adapter Protocol on stdin / stdout (for VS Code and other editors;
    docs/debugging.md)."""
    from neuronemu.debug import dap as server

    sys.exit(server.serve(sys.stdin.buffer, sys.stdout.buffer))


@main.command()
def programs():
    """List the bundled example programs."""
    import shutil

    from neuronemu.programs import listing

    click.echo("\n".join(listing(shutil.get_terminal_size((100, 24)).columns)))


@main.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True)
def topology(name, as_json):
    """Describe a multi-chip system (isa/topologies.toml), or list them all."""
    from neuronemu.isa.topologies import load_topologies, topology_named

    if name is None:
        topologies = load_topologies()
        click.echo(json.dumps({n: report.topology_document(t) for n, t in topologies.items()})
                   if as_json else "\n".join(report.topology_listing(topologies)))
        return
    try:
        found = topology_named(name, None)
    except InputError as e:   # a name on the command line, not a file: a usage error (exit 2)
        raise click.BadParameter(e.message, param_hint="NAME") from None
    click.echo(json.dumps(report.topology_document(found)) if as_json
               else "\n".join(report.topology_lines(name, found)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
