"""Python API: assemble a kernel, run it with numpy inputs, read outputs and statistics.

    import neuronemu
    program = neuronemu.assemble_file("programs/examples/vector_add.s", target="trn2")
    result = neuronemu.run(program, inputs={"a": a, "b": b}, seed=0)
    result.outputs["c"], result.instructions
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from neuronemu.errors import InputError, NeuronemuError
from neuronemu.program import HbmTensor, Program
from neuronemu.results import Result, SpmdResult

__all__ = ["Result", "SpmdResult", "assemble", "assemble_file", "default_topology", "run",
           "run_spmd"]

DEFAULT_MAX_INSTRUCTIONS = 50_000_000
DEFAULT_MAX_TRACE_EVENTS: int | None = None   # every event (timing/eventlog.py)


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
    from neuronemu.kernel_text import decode_kernel

    return assemble(decode_kernel(data, str(path)), str(path), target)


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
                       timeout: float | None, max_trace_events: int | None = None) -> None:
    """The options the run state holds in int64 registers, and the wall-clock limit."""
    for name, value, low in (("seed", seed, 0), ("rounding_seed", rounding_seed, 0),
                             ("max_instructions", max_instructions, 1),
                             ("max_trace_events", max_trace_events, 1)):
        if value is None and name in ("rounding_seed", "max_trace_events"):
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
        max_trace_events: int | None = DEFAULT_MAX_TRACE_EVENTS,
        stochastic_rounding: bool = False, rounding_seed: int | None = None,
        timeout: float | None = None) -> Result:
    """Run an assembled program on one core. ``inputs`` override the declared initialisers by
    tensor name; arrays are cast to the declared dtype with round-to-nearest-even. Every timed
    instruction is kept for the trace and the critical path (a long run's past a 42 MiB
    buffer in an unnamed temporary file, about 120 bytes each: docs/timing.md, "Reports");
    ``max_trace_events=N`` keeps only the first N, in memory.
    ``stochastic_rounding`` makes every fp32 -> bf16/fp16/fp8/tf32 store round stochastically,
    with bits from (``rounding_seed``, default ``seed``; instruction; element). cc.* instructions
    run with a world of one rank (use ``run_spmd`` for several).

    Limits: ``max_instructions`` dynamic instructions and ``timeout`` seconds of execution
    (None: none; compiling does not count) raise ``LimitReached`` (``.limit`` says which);
    Ctrl-C raises ``Interrupted`` (a ``KeyboardInterrupt``, so it stops the caller's program
    as Ctrl-C does, not an ``Exception`` a test or loop would catch); both carry the location
    reached and ``.steps``. A run that
    needs more host memory than is available raises ``ResourceError`` before allocating."""
    from neuronemu.exec import session
    from neuronemu.hostmem import memory_errors
    from neuronemu.results import finish

    _check_run_options(seed, rounding_seed, max_instructions, timeout, max_trace_events)
    [checked] = _checked_inputs(program, inputs, 1)
    options = {"max_instructions": max_instructions, "max_trace_events": max_trace_events,
               "stochastic_rounding": stochastic_rounding, "rounding_seed": rounding_seed,
               "timeout": _timeout(timeout)}
    with memory_errors():
        if session.uses_cc(program):
            # cc.* instructions are carried out by the multi-chip driver, here for a world of
            # one (exec/session.py says why there is one driver)
            from neuronemu.multichip import spmd

            cores, _ = spmd.execute(program, None, 1, [checked], seed, **options)
            core = cores[0]
        else:
            core = session.run_core(program, checked, seed, **options)
        return finish(program, core, seed, 1)


def run_spmd(program: Program, topology: str | None = None,
             inputs: dict[str, np.ndarray] | None = None,
             seed: int = 0, ranks_per_chip: int | None = None,
             max_instructions: int = DEFAULT_MAX_INSTRUCTIONS,
             max_trace_events: int | None = DEFAULT_MAX_TRACE_EVENTS,
             stochastic_rounding: bool = False, rounding_seed: int | None = None,
             timeout: float | None = None, partitions: int | None = None
             ) -> SpmdResult | None:
    """Run the kernel on every chip of ``topology`` (``ranks_per_chip`` cores each; rank =
    chip * ranks_per_chip + core). An input array of the declared shape is given to every rank;
    one with an extra leading axis of length world gives rank r its ``[r]``. Tensors without
    inputs use their initialisers, random ones drawn per rank. An array whose first axis is
    world times the declared one is split: rank r gets rows [r * d0, (r + 1) * d0).
    ``max_instructions`` applies to each rank. Every rank keeps every event, as ``run`` does;
    a ``max_trace_events`` given applies to each rank in sync mode explicit (every instruction
    is replayed; unused event buffer pages cost no memory), while in mode auto the trace keeps
    ``max_trace_events // world`` events per rank (at least 1024). ``timeout`` bounds the
    whole run (all ranks), as in ``run``.

    ``topology`` None takes the kernel's ``.topology`` directive (docs/language.md); a
    ``ranks_per_chip`` of None takes the directive's ``ranks_per_chip=`` when the run is on the
    kernel's own topology, else 1.

    ``partitions`` splits the ranks into that many partitions of whole chips (whole servers on
    switched topologies) that exchange only messages (docs/multichip.md, "Partitions"): run in
    this process it starts one thread per partition (the loopback check of determinism: the
    result is the same for every count); under ``mpiexec -n P`` each process is a partition
    (None: the launch's P), and only partition 0 returns the result, the others None. Before
    anything runs, the processes of an MPI launch check that each was given the same kernel,
    inputs and options, and raise the first one's set-up error on every one
    (``comm.check_launch``)."""
    from neuronemu.compiled import compiling
    from neuronemu.multichip.comm import check_launch
    from neuronemu.multichip.run import launch_comm, launch_plan, run_ranks

    comm = launch_comm(partitions)
    split = comm is not None and comm.partitions > 1
    error, plan = None, None
    try:
        _check_run_options(seed, rounding_seed, max_instructions, timeout, max_trace_events)
        topo, ranks_per_chip = spmd_topology(program, topology, ranks_per_chip)
        topology = topo.name
        world = topo.chips * ranks_per_chip
        per_rank = _checked_inputs(program, inputs, world, spmd=True)
        options = {"max_instructions": max_instructions,
                   "max_trace_events": (max_trace_events if max_trace_events is None
                                        or program.sync_mode == "explicit"
                                        else max(1024, max_trace_events // world)),
                   "stochastic_rounding": stochastic_rounding, "rounding_seed": rounding_seed,
                   "timeout": _timeout(timeout)}
        if split:
            plan = launch_plan(program, topology, ranks_per_chip, inputs, seed, options)
    except NeuronemuError as e:
        error = e
    if split:
        check_launch(comm, error, plan)
    elif error is not None:
        raise error
    compiled = compiling.seconds()
    start = time.perf_counter()
    ran = run_ranks(program, topo, ranks_per_chip, per_rank, seed, partitions, comm, options)
    if ran is None:
        return None   # a partition other than 0 of an mpiexec launch
    results, network = ran
    spent = compiling.seconds() - compiled
    return SpmdResult(program, topology, ranks_per_chip, results, network.stats(),
                      time.perf_counter() - start - spent, spent)


def spmd_topology(program: Program, topology: str | None, ranks_per_chip: int | None):
    """(the Topology, ranks per chip) of a run_spmd call, checked against the kernel."""
    from neuronemu.isa.topologies import load_topologies

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
    return topo, ranks_per_chip


def default_topology(program: Program, topology: str | None,
                     ranks_per_chip: int | None) -> tuple[str, int]:
    """(topology, ranks per chip) of a multi-rank run: the ones given win, then the kernel's
    ``.topology NAME [ranks_per_chip=N]``; the directive's ranks per chip applies only on its
    own topology (another system may have fewer cores per chip)."""
    own = program.topology
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


