"""Python API: assemble a kernel, run it with numpy inputs, read outputs and statistics.

    import neuronemu
    program = neuronemu.assemble_file("programs/examples/vector_add.s", target="trn2")
    result = neuronemu.run(program, inputs={"a": a, "b": b}, seed=0)
    result.outputs["c"], result.instructions
"""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neuronemu.errors import Diagnostic, InputError, NeuronemuError, RuntimeFault
from neuronemu.faults import fault as fault_of
from neuronemu.program import HbmTensor, Program

if TYPE_CHECKING:
    from neuronemu.timing.report import Timing

DEFAULT_MAX_INSTRUCTIONS = 50_000_000
DEFAULT_MAX_TRACE_EVENTS = 1 << 20


def assemble(text: str, filename: str = "<string>", target: str | None = None) -> Program:
    """Assemble source text (raises ``AsmError`` with a located message)."""
    from neuronemu.asm.assembler import assemble as _assemble

    return _assemble(text, filename, target)


def assemble_file(path: str | Path, target: str | None = None) -> Program:
    """Assemble a ``.s`` file, or load a binary ``.neo`` file (recognised by its magic)."""
    from neuronemu import encoding

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read kernel {path}: {e.strerror}") from None
    if encoding.is_encoded(data):
        # a binary is checked like source: disassemble, then assemble the canonical text
        return assemble(encoding.disassemble(data, str(path)), f"{path} (disassembled)", target)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise InputError(f"kernel {path} is neither UTF-8 assembly nor a .neo binary") from None
    return assemble(text, str(path), target)


@dataclass
class Result:
    """Outputs (name -> array of the declared dtype; bf16/fp8 as ml_dtypes) and run statistics."""

    program: Program
    outputs: dict[str, np.ndarray]
    instructions: dict[str, int]
    steps: int
    wall_seconds: float
    seed: int
    tensors: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    tiles: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    """Final contents of every ``.sbuf`` / ``.psum`` allocation, for unit tests of kernels."""
    timing: Timing | None = field(repr=False, default=None)
    """Modelled time: total, per engine and DMA queue, critical path, trace events."""
    warnings: list[Diagnostic] = field(default_factory=list)
    """Located warnings, e.g. the first read of never-written memory (exact to the byte)."""
    compile_seconds: float = 0.0
    """Time this run spent compiling code numba had not cached yet (not in ``wall_seconds``)."""

    @property
    def target(self) -> str:
        return self.program.target.name


def _as_array(name: str, value, tensor: HbmTensor) -> np.ndarray:
    """numpy's view of an input; what numpy cannot read (a buffer whose format and item size
    disagree, a ragged sequence) is an InputError, not numpy's exception."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.VisibleDeprecationWarning)
            return np.asarray(value)
    except (ValueError, TypeError, RuntimeError, OverflowError, BufferError,
            np.exceptions.VisibleDeprecationWarning) as error:
        raise InputError(f"input '{name}' cannot be read as an array ({error})",
                         tensor.location) from None


def _check_input(tensor: HbmTensor, value) -> np.ndarray:
    from neuronemu.isa import dtypes

    array = np.asarray(value)
    if tuple(array.shape) != tensor.shape:
        raise InputError(f"input '{tensor.name}' has shape {tuple(array.shape)}, but the kernel "
                         f"declares {tensor.dtype}{list(tensor.shape)}", tensor.location)
    dt = dtypes.get(tensor.dtype)
    if array.dtype == dtypes.numpy_dtype(tensor.dtype):
        return array
    if array.dtype.kind in "fiub" or array.dtype.name in ("bfloat16",) or "float8" in array.dtype.name:
        if dt.kind != "float" and array.dtype.kind in "fiu":
            _check_integers(tensor, array, int(dt.min_finite), int(dt.max_finite))
        return array
    raise InputError(f"input '{tensor.name}' has dtype {array.dtype}, which cannot be converted to "
                     f"{tensor.dtype}", tensor.location)


def _check_integers(tensor: HbmTensor, array: np.ndarray, low: int, high: int) -> None:
    """Values for an integer tensor must be integers in its range: casting would otherwise
    round or saturate them silently (300 into int8 would become 127). Checked piece by piece,
    so a big input costs no whole-size temporary."""
    flat = array.reshape(-1)
    for start in range(0, flat.size, _CHECK_ELEMENTS):
        piece = flat[start: start + _CHECK_ELEMENTS]
        if array.dtype.kind == "f":
            with np.errstate(invalid="ignore"):
                bad = ~np.isfinite(piece) | (piece != np.round(piece))
            if bad.any():
                raise InputError(f"input '{tensor.name}' holds non-integer values (e.g. "
                                 f"{float(piece[np.argmax(bad)])!r} at flat index "
                                 f"{start + int(np.argmax(bad))}) but the kernel declares "
                                 f"{tensor.dtype}", tensor.location)
        if not piece.size:
            continue
        smallest, largest = piece.min(), piece.max()
        for value in (smallest, largest):
            if not low <= value <= high:
                index = start + int(np.argmax(piece == value))
                raise InputError(f"input '{tensor.name}' holds {_number(value)} (flat index "
                                 f"{index}), outside the range of {tensor.dtype}: {low}..{high}",
                                 tensor.location)


def _number(value) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


_CHECK_ELEMENTS = 1 << 21

INT64_MAX = 2 ** 63 - 1


def _check_run_options(seed: int, rounding_seed: int | None, max_instructions: int,
                       timeout: float | None) -> None:
    """The options the run state holds in int64 registers, and the wall-clock limit."""
    for name, value, low in (("seed", seed, 0), ("rounding_seed", rounding_seed, 0),
                             ("max_instructions", max_instructions, 1)):
        if value is None and name == "rounding_seed":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise InputError(f"{name} must be an integer, not {value!r}")
        if not low <= int(value) <= INT64_MAX:
            raise InputError(f"{name} must be in {low}..{INT64_MAX} (2**63 - 1), not {value}")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer,
                                                                 np.floating)):
            raise InputError(f"timeout must be a number of seconds or None, not {timeout!r}")
        if not float(timeout) > 0:  # also refuses NaN
            raise InputError(f"timeout must be a positive number of seconds (None: no limit), "
                             f"not {timeout}")


def _timeout(timeout: float | None) -> float | None:
    """An infinite timeout is no timeout."""
    return None if timeout is None or np.isinf(timeout) else float(timeout)


def run(program: Program, inputs: dict[str, np.ndarray] | None = None, seed: int = 0,
        max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
        max_trace_events: int = DEFAULT_MAX_TRACE_EVENTS, stochastic_rounding: bool = False,
        rounding_seed: int | None = None, timeout: float | None = None) -> Result:
    """Run an assembled program on one core. ``inputs`` override the declared initialisers by
    tensor name; arrays are cast to the declared dtype with round-to-nearest-even. The first
    ``max_trace_events`` timed instructions are kept for the trace and the critical path.
    ``stochastic_rounding`` makes every fp32 -> bf16/fp16/fp8/tf32 store round stochastically,
    with bits from (``rounding_seed``, default ``seed``; instruction; element). cc.* instructions
    run with a world of one rank (use ``run_spmd`` for several).

    Limits: ``max_instructions`` dynamic instructions and ``timeout`` seconds of execution
    (None: none; compiling does not count) raise ``LimitReached`` (``.limit`` says which);
    Ctrl-C raises ``Interrupted``; both carry the location reached and ``.steps``. A run that
    needs more host memory than is available raises ``ResourceError`` before allocating."""
    from neuronemu.multichip import spmd

    _check_run_options(seed, rounding_seed, max_instructions, timeout)
    inputs = _checked_inputs(program, inputs, 1)
    with _memory_errors():
        cores, _ = spmd.execute(program, None, 1, inputs, seed,
                                max_instructions=max_instructions,
                                max_trace_events=max_trace_events,
                                stochastic_rounding=stochastic_rounding,
                                rounding_seed=rounding_seed, timeout=_timeout(timeout))
        return _finish(program, cores[0], inputs[0], seed, max_instructions, 1)


@contextlib.contextmanager
def _memory_errors():
    """A MemoryError the host-memory estimate did not foresee is a ResourceError (exit 6)."""
    try:
        yield
    except MemoryError as error:
        from neuronemu.hostmem import out_of_memory

        raise out_of_memory(error) from None


@dataclass
class SpmdResult:
    """A run of one kernel on every rank of a topology (``run_spmd``)."""

    program: Program
    topology: str
    ranks_per_chip: int
    ranks: list[Result]
    """Per rank: its outputs, instructions, timing and warnings, as a single-core run reports."""
    network: object
    """Link traffic: neuronemu.multichip.network.NetworkStats."""
    wall_seconds: float
    compile_seconds: float = 0.0
    """Time spent compiling code numba had not cached yet (not in ``wall_seconds``)."""

    @property
    def world(self) -> int:
        return len(self.ranks)

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Every output tensor stacked over ranks: shape (world, *declared shape)."""
        return {name: np.stack([r.outputs[name] for r in self.ranks])
                for name in self.ranks[0].outputs}

    @property
    def time_ns(self) -> float:
        """When the last rank's last track finished."""
        return max(r.timing.time_ns for r in self.ranks)


def run_spmd(program: Program, topology: str | None = None,
             inputs: dict[str, np.ndarray] | None = None,
             seed: int = 0, ranks_per_chip: int | None = None,
             max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
             max_trace_events: int = DEFAULT_MAX_TRACE_EVENTS,
             stochastic_rounding: bool = False, rounding_seed: int | None = None,
             timeout: float | None = None, partitions: int | None = None
             ) -> SpmdResult | None:
    """Run the kernel on every chip of ``topology`` (``ranks_per_chip`` cores each; rank =
    chip * ranks_per_chip + core). An input array of the declared shape is given to every rank;
    one with an extra leading axis of length world gives rank r its ``[r]``. Tensors without
    inputs use their initialisers, random ones drawn per rank. An array whose first axis is
    world times the declared one is split: rank r gets rows [r * d0, (r + 1) * d0).
    ``max_instructions`` applies to each rank; so does ``max_trace_events`` in sync mode
    explicit (every instruction is replayed; unused event buffer pages cost no memory), while
    in mode auto the trace keeps ``max_trace_events // world`` events per rank (at least
    1024). ``timeout`` bounds the whole run (all ranks), as in ``run``.

    ``topology`` None takes the kernel's ``.topology`` directive (docs/language.md); a
    ``ranks_per_chip`` of None takes the directive's ``ranks_per_chip=`` when the run is on the
    kernel's own topology, else 1.

    ``partitions`` splits the ranks into that many partitions of whole chips (whole servers on
    switched topologies) that exchange only messages (docs/multichip.md, "Partitions"): run in
    this process it starts one thread per partition (the loopback check of determinism: the
    result is the same for every count); under ``mpiexec -n P`` each process is a partition
    (None: the launch's P), and only partition 0 returns the result, the others None."""
    from neuronemu.isa.topologies import load_topologies

    _check_run_options(seed, rounding_seed, max_instructions, timeout)
    topology, ranks_per_chip = default_topology(program, topology, ranks_per_chip)
    topologies = load_topologies()
    if topology not in topologies:
        raise InputError(f"unknown topology '{topology}' (topologies: "
                         f"{', '.join(topologies)})")
    topo = topologies[topology]
    if topo.target != program.target.name:
        raise InputError(f"topology {topology} is made of {topo.target} chips but the kernel "
                         f"is assembled for {program.target.name} (assemble with "
                         f"target={topo.target!r})")
    if not 1 <= ranks_per_chip <= topo.cores_per_chip:
        raise InputError(f"ranks_per_chip must be 1..{topo.cores_per_chip} on {topology} "
                         f"({topo.cores_per_chip} cores per chip), not {ranks_per_chip}")
    from neuronemu.compiled import compiling

    world = topo.chips * ranks_per_chip
    per_rank = _checked_inputs(program, inputs, world, spmd=True)
    options = {"max_instructions": max_instructions,
               "max_trace_events": (max_trace_events if program.sync_mode == "explicit"
                                    else max(1024, max_trace_events // world)),
               "stochastic_rounding": stochastic_rounding, "rounding_seed": rounding_seed,
               "timeout": _timeout(timeout)}
    compiled = compiling.seconds()
    start = time.perf_counter()
    comm = _comm(partitions)
    if comm is None and partitions is not None and partitions > 1:
        from neuronemu.exec.core import RunLimits, stop_on_sigint
        from neuronemu.multichip.comm import run_loopback

        limits = RunLimits(max_instructions, options["timeout"])
        with stop_on_sigint(limits), _memory_errors():
            parts = run_loopback(partitions, lambda c: _run_partition(
                program, topo, ranks_per_chip, per_rank, seed, c, options, limits))
        results, network = parts[0]
    else:
        results, network = _run_partition(program, topo, ranks_per_chip, per_rank, seed,
                                           comm, options)
        if results is None:
            return None
    spent = compiling.seconds() - compiled
    return SpmdResult(program, topology, ranks_per_chip, results, network.stats(),
                      time.perf_counter() - start - spent, spent)


def _comm(partitions: int | None):
    """The MPI partition of this process when mpiexec started several, else None (the run is
    in this process: one partition, or ``partitions`` loopback threads)."""
    from neuronemu.multichip.comm import launched_by_mpiexec, mpi_comm

    if not launched_by_mpiexec():
        if partitions is not None and partitions < 1:
            raise InputError(f"partitions must be at least 1, not {partitions}")
        return None
    comm = mpi_comm()
    if partitions is not None and partitions != comm.partitions:
        raise InputError(f"partitions={partitions}, but mpiexec started {comm.partitions} "
                         f"processes: under mpiexec each process is one partition")
    return comm


def _run_partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits=None):
    """Run the ranks one partition owns and report them: partition 0 returns every rank's
    Result (gathered) and the links' state; the others return (None, network). An error on
    any partition (a fault, a deadlock, a finish that fails) is raised on every partition."""
    try:
        return _partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits)
    except NeuronemuError:
        raise
    except BaseException:
        if hasattr(comm, "abort"):
            comm.abort()
        raise


def _partition(program, topo, ranks_per_chip, per_rank, seed, comm, options, limits):
    from neuronemu.multichip import spmd
    from neuronemu.multichip.comm import agree

    split = comm is not None and comm.partitions > 1
    # split: a MemoryError one partition alone meets stays one (the caller aborts an MPI
    # launch on it, a loopback run re-raises it as a ResourceError in the caller); only the
    # agreement points (set-up in spmd.execute, the reports below) turn it into an error
    # every partition raises alike
    with _memory_errors() if not split else contextlib.nullcontext():
        cores, network = spmd.execute(program, topo, ranks_per_chip, per_rank, seed,
                                      comm=comm, limits=limits, **options)
        world = len(per_rank)
        if comm is None or comm.partitions == 1:
            return [_finish(program, cores[r], per_rank[r], seed, options["max_instructions"],
                            world) for r in range(world)], network
        results, error = {}, None
        for r in sorted(cores):
            try:
                results[r] = _finish(program, cores[r], per_rank[r], seed,
                                     options["max_instructions"], world)
            except NeuronemuError as e:
                error = e
                break
            except MemoryError as e:
                from neuronemu.hostmem import out_of_memory

                error = out_of_memory(e)
                break
        del cores
        agree(comm, error)
        for result in results.values():
            result.program = None   # every partition has it: not sent along
        parts = comm.gather(results)
        if parts is None:
            return None, network
        merged = {r: result for part in parts for r, result in part.items()}
        for result in merged.values():
            result.program = program
        return [merged[r] for r in range(world)], network


def default_topology(program: Program, topology: str | None,
                     ranks_per_chip: int | None) -> tuple[str, int]:
    """(topology, ranks per chip) of a multi-rank run: the ones given win, then the kernel's
    ``.topology NAME [ranks_per_chip=N]``; the directive's ranks per chip applies only on its
    own topology (another system may have fewer cores per chip)."""
    own = getattr(program, "topology", None)
    if topology is None:
        if own is None:
            raise InputError("no topology: pass one (--topology NAME, run_spmd(program, NAME)) "
                             "or declare the kernel's own with `.topology NAME`")
        topology = own
    if ranks_per_chip is None:
        ranks_per_chip = program.ranks_per_chip if topology == own else 1
    return topology, ranks_per_chip


def _checked_inputs(program: Program, inputs, world: int,
                    spmd: bool = False) -> list[dict[str, np.ndarray]]:
    """Inputs per rank: an array of the declared shape goes to every rank; one with a leading
    axis of length ``world`` gives rank r its ``[r]``; one whose first axis is ``world`` times
    the declared one is split into ``world`` consecutive blocks of rows."""
    inputs = dict(inputs or {})
    for name in inputs:
        if name not in program.tensors:
            known = ", ".join(t.name for t in program.inputs()) or "none"
            raise InputError(f"kernel has no tensor '{name}' (inputs: {known})")
    per_rank: list[dict[str, np.ndarray]] = [{} for _ in range(world)]
    for name, value in inputs.items():
        tensor = program.tensors[name]
        array = _as_array(name, value, tensor)
        if spmd and array.ndim == len(tensor.shape) + 1 and array.shape[0] == world:
            for r in range(world):
                per_rank[r][name] = _check_input(tensor, array[r])
        elif (world > 1 and array.ndim == len(tensor.shape) and array.ndim
              and array.shape[0] == world * tensor.shape[0]
              and array.shape[1:] == tensor.shape[1:]):
            # split: rank r gets the r-th block of rows
            for r, block in enumerate(np.split(array, world)):
                per_rank[r][name] = _check_input(tensor, block)
        else:
            if spmd and array.ndim == len(tensor.shape) + 1:
                raise InputError(f"input '{name}' has shape {tuple(array.shape)}: a per-rank "
                                 f"input needs a leading axis of length {world} (the world), "
                                 f"then {tensor.dtype}{list(tensor.shape)}", tensor.location)
            checked = _check_input(tensor, array)
            for r in range(world):
                per_rank[r][name] = checked
    return per_rank


def _finish(program: Program, core, inputs: dict, seed: int, max_instructions: int,
            world: int) -> Result:
    from neuronemu.isa import dtypes
    from neuronemu.isa.table import load_isa
    from neuronemu.machine import layout as L
    from neuronemu.timing import report

    regs = core.regs
    if core.status != L.STATUS_OK:
        from neuronemu.exec.core import RunLimits

        fault = fault_of(program, core.status, core.pc, regs, RunLimits(max_instructions),
                         core.steps)
        if world > 1:
            fault.message = f"rank {core.rank}: {fault.message}"
        raise fault
    isa = load_isa()
    counts = core.counts
    per_engine = np.zeros(L.NUM_TRACKS, dtype=np.int64)
    np.add.at(per_engine, program.instrs[:, L.I_ENGINE], counts)
    engine_names = isa.enums["engine"]
    instructions = {engine_names.name_of(i): int(c) for i, c in enumerate(per_engine) if c}
    n_events = int(regs[L.REG_EVENTS])
    events, event_times = core.events, core.event_times
    busy, track_free = core.busy, core.track_free
    replayed = getattr(core, "replayed", None)   # ranks replayed together (multichip/spmd.py)
    if replayed is not None:
        busy, track_free = replayed.busy, replayed.track_free
        event_times = replayed.event_times
    elif program.sync_mode == "explicit":
        from neuronemu.timing import explicit

        if n_events > len(events):
            raise RuntimeFault(f"sync mode explicit replays every instruction, but the run "
                               f"executed {n_events} and max_trace_events is {len(events)}")
        try:
            replayed = explicit.replay(program, events[:n_events], event_times[:n_events],
                                       core.clocks)
        except RuntimeFault as e:
            if world > 1:
                e.message = f"rank {core.rank}: {e.message}"
            raise
        busy, track_free = replayed.busy, replayed.track_free
        event_times = replayed.event_times
    timing = report.build(program, counts, busy, track_free, core.clocks, events, event_times,
                          n_events, core.dma_stats, core.engine_busy)
    hbm = core.mems[2]
    tensors = {}
    for tensor in program.tensors.values():
        dt = dtypes.get(tensor.dtype)
        raw = hbm[0, tensor.offset: tensor.offset + tensor.nbytes]
        if tensor.compressed:
            from neuronemu.machine.codec import decode_tensor

            bits = decode_tensor(raw.copy(), tensor.shape[0], tensor.shape[1], dt.itemsize)
            tensors[tensor.name] = dtypes.from_bits(
                bits.astype(f"<u{dt.itemsize}").reshape(tensor.shape), tensor.dtype)
        else:
            # a view of the HBM image, which nothing uses after the run: no copy of any tensor
            tensors[tensor.name] = raw.view(_api_view_dtype(tensor.dtype)).reshape(tensor.shape)
    outputs = {t.name: tensors[t.name] for t in program.outputs()}
    sbuf, psum = core.mems[0], core.mems[1]
    tiles = {a.name: _allocation_values(a, sbuf if a.space == "sbuf" else psum)
             for a in program.allocations.values()}
    warnings = _unwritten_warning(program, regs) + _range_warning(program, regs)
    if world > 1:
        for w in warnings:
            w.message = f"rank {core.rank}: {w.message}"
    if world == 1 or core.rank == 0:   # the assembler's warnings, once per run
        warnings = list(program.warnings) + warnings
    return Result(program, outputs, instructions, core.steps, core.wall, seed, tensors, tiles,
                  timing, warnings, core.compile_seconds)


def _api_view_dtype(name: str) -> np.dtype:
    """The API dtype of ``name``, which views its storage bits unchanged (dtypes.from_bits)."""
    from neuronemu.isa import dtypes

    return np.dtype(np.float32) if name == "tfloat32" else dtypes.numpy_dtype(name)


def _unwritten_warning(program: Program, regs) -> list[Diagnostic]:
    from neuronemu.machine import layout as L
    from neuronemu.program import Tile

    count = int(regs[L.REG_UNWRITTEN_COUNT])
    if not count:
        return []
    ins = program.instructions[int(regs[L.REG_UNWRITTEN_PC])]
    arg = ins.definition.args[int(regs[L.REG_UNWRITTEN_ARG])]
    tile = ins.args[arg.name]
    location = tile.location if isinstance(tile, Tile) else ins.location
    more = f" ({count - 1} more dynamic instructions do too)" if count > 1 else ""
    return [Diagnostic(f"{ins.definition.name} reads '{tile.symbol}' ({arg.name}), which nothing "
                       f"wrote before; it holds NaN / -1 bytes{more}", location)]


def _range_warning(program: Program, regs) -> list[Diagnostic]:
    """Activation inputs outside the documented range of their function (the hardware's result
    is not specified there; neuronemu computes the float64 function anyway)."""
    from neuronemu.machine import layout as L
    from neuronemu.semantics.scalar import INPUT_RANGES

    count = int(regs[L.REG_RANGE_COUNT])
    if not count:
        return []
    ins = program.instructions[int(regs[L.REG_RANGE_PC])]
    value = float(np.array([regs[L.REG_RANGE_BITS]], dtype=np.uint32).view(np.float32)[0])
    from neuronemu.isa.table import load_isa

    func = load_isa().enums["activation"].name_of(ins.args["func"])
    low, high, kind = INPUT_RANGES[func]
    where = f"|x| in [{low:.6g}, {high:.6g}]" if kind == "magnitude" else f"[{low:.6g}, {high:.6g}]"
    more = f" ({count - 1} more dynamic instructions do too)" if count > 1 else ""
    return [Diagnostic(f"{ins.definition.name} func={func} gets input {value:.9g} (data * scale + "
                       f"bias), outside its documented range {where}; the hardware's result "
                       f"there is not specified{more}", ins.location)]


def _allocation_values(allocation, memory: np.ndarray) -> np.ndarray:
    from neuronemu.isa import dtypes

    itemsize = dtypes.get(allocation.dtype).itemsize
    partitions = allocation.shape[0]
    raw = memory[:partitions, allocation.offset: allocation.offset
                 + allocation.bytes_per_partition]   # from_bits makes the one copy
    bits = raw.view(f"<u{itemsize}").reshape(allocation.shape)
    return dtypes.from_bits(bits, allocation.dtype)
