"""Run NKI kernels on neuronemu: ``import neuronemu.nki as nki``.

Mirrors the NKI 0.6.0 dialect (``import nki``; ``nki.language`` as ``nl``, ``nki.isa`` as
``nisa``, every ``nisa`` call with its ``dst`` first). A kernel is traced by running it as
Python with proxy tensors (loops unroll, as the NKI compiler's specialisation does), lowered to
neuronemu assembly with the kernel's ``file:line`` on every instruction, assembled and run on
the emulator, which models the timing AWS's own simulator does not.

    import neuronemu.nki as nki
    import neuronemu.nki.language as nl
    import neuronemu.nki.isa as nisa

    out = nki.simulate(kernel)(x, y)          # numpy / ml_dtypes arrays, as nki.simulate
    run = nki.run(kernel, x, y, target="trn2") # .outputs, .result (timing, warnings), .asm

See docs/nki.md for the supported subset.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from neuronemu.errors import REPORTED, Diagnostic, NeuronemuError
from neuronemu.nki import frameworks, isa, isa_constants, language, names, typing
from neuronemu.nki._lockstep import Lockstep, NeedsLockstep
from neuronemu.nki._trace import (
    _CURRENT,
    NKI_VERSION,
    NkiError,
    NKIObject,
    NkiTensor,
    NkiUnsupported,
    Site,
    Tracer,
    assembly_text,
    dtype_name,
    map_error,
    map_location,
    render,
    user_site,
)
from neuronemu.nki._versions import split_versions

names.check_module("isa", isa)
names.check_module("language", language)
isa.constants = isa_constants   # ``nki.isa.constants`` (a module of its own in NKI)
isa.__path__ = []               # so that ``import nki.isa.constants`` may look inside nki.isa
language.__path__ = []          # and ``import nki.language.dtypes`` (the simulator's name)
sys.modules.setdefault("neuronemu.nki.isa.constants", isa_constants)

dtype = np.dtype
"""``nki.dtype``: the type of ``nl.float32``, ``nl.bfloat16``, ... (annotations)."""

__all__ = [
    "NKI_VERSION",
    "GridLaunch",
    "KernelRun",
    "KernelTrace",
    "NKIObject",
    "NkiError",
    "NkiTensor",
    "NkiUnsupported",
    "NkiWarning",
    "cpu_simulate",
    "dtype",
    "isa",
    "jit",
    "language",
    "run",
    "simulate",
    "simulator",
    "trace",
    "typing",
]


@dataclass
class KernelTrace:
    """A traced kernel: the generated assembly and where each of its lines came from."""

    header: str
    """The generated declarations (``.target``, ``.hbm``, ``.sbuf``, ``.psum`` lines)."""
    ops: list
    """The traced instructions (``neuronemu.asm.direct.Op``), assembled as they are."""
    asm_name: str
    source_map: dict[int, Site]
    """Generated line number -> the kernel's Python frame (file, line, function)."""
    target: str
    inputs: dict[str, np.ndarray]
    returned: object = None       # the kernel's return value (NkiTensor(s) / None)
    output_names: list = field(default_factory=list)
    peak_bytes: dict = field(default_factory=dict)
    """Bytes per partition the allocator used: {"sbuf": ..., "psum": ...}."""
    callers: dict = field(default_factory=dict)
    """HBM input name -> the caller's array (numpy, torch, jax) it was made from."""
    unreturned: list = field(default_factory=list)
    """(name, allocating site) of the HBM tensors the kernel used but did not return."""
    prints: list = field(default_factory=list)
    """(prefix, output name) of each ``nl.device_print``: printed when the run ends."""

    @functools.cached_property
    def asm(self) -> str:
        """The generated ``.s`` text; every instruction ends with ``# kernel.py:LINE``."""
        return assembly_text(self.header, self.ops)

    def assemble(self):
        """The neuronemu ``Program`` (errors point at the kernel's Python line). The
        instructions go to the assembler as values, not as text to parse again."""
        from neuronemu.asm.assembler import assemble_ops

        try:
            return assemble_ops(self.header, self.ops, self.asm_name, self.target, render)
        except NeuronemuError as error:
            map_error(error, self.asm_name, self.source_map)
            raise

    def python_site(self, line: int) -> Site | None:
        """The kernel frame that produced generated line ``line``."""
        return self.source_map.get(line)


@dataclass
class KernelRun:
    """One run of a traced kernel on neuronemu."""

    trace: KernelTrace
    result: object
    """The neuronemu ``Result``: ``.timing`` (modelled time, tracks, critical path),
    ``.warnings`` (located at the kernel's Python lines), ``.outputs``, ``.tiles``."""
    outputs: object
    """What the kernel returned, as numpy / ml_dtypes arrays (a tuple for several)."""

    @property
    def asm(self) -> str:
        return self.trace.asm

    @property
    def time_ns(self) -> float:
        return self.result.timing.time_ns

    def timing_summary(self) -> str:
        """Modelled time and per-track busy time, as ``neuronemu run`` prints it."""
        t = self.result.timing
        head = (f"time {t.time_ns / 1000:.3f} us on {self.trace.target} (modelled); "
                f"critical path bound by {t.bound_by}")
        lines = [head]
        for name, s in t.tracks.items():
            lines.append(f"  {name:<8} {s.instructions:>6} instrs {s.busy_ns / 1000:>9.3f} us "
                         f"busy {s.utilisation:>6.1%}")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """The Perfetto / chrome://tracing timeline; each event's ``source`` is the kernel's
        ``file.py:LINE`` (``asm_source`` keeps the generated line)."""
        from neuronemu.timing.trace import chrome_trace

        doc = chrome_trace(self.result.program, self.result.timing)
        prefix = os.path.basename(self.trace.asm_name) + ":"
        for event in doc["traceEvents"]:
            args = event.get("args", {})
            src = args.get("source")
            if isinstance(src, str) and src.startswith(prefix):
                site = self.trace.source_map.get(int(src[len(prefix):]))
                if site is not None:
                    args["asm_source"] = src
                    args["source"] = site.short()
        return doc


def _split_versions(tr: Tracer) -> None:
    """The 0.1 compiler's renaming of tiles written whole again (``_versions``), under its
    schedule, in kernels without device loops or registers."""
    if tr.schedule == "compiler" and tr.dialect == "0.1" and not tr.control_flow:
        split_versions(tr.instructions, tr.slots)


def _kernel_function(kernel):
    if isinstance(kernel, GridLaunch):
        return kernel.kernel.func
    return kernel.func if isinstance(kernel, JitKernel) else kernel


def _grid_of(kernel, grid):
    if grid is None and isinstance(kernel, GridLaunch):
        return kernel.grid
    return grid


def _normal_grid(grid) -> tuple[int, ...]:
    """``kernel[4]``, ``kernel[2, 3]``, ``kernel[(2, 3)]`` -> (4,), (2, 3), (2, 3)."""
    if grid is None:
        return ()
    items = grid if isinstance(grid, (tuple, list)) else (grid,)
    out = []
    for g in items:
        if isinstance(g, (int, np.integer)) and not isinstance(g, bool) and g >= 1:
            out.append(int(g))
        else:
            raise NkiError(f"a launch grid is positive ints (kernel[4], kernel[2, 2]), got "
                           f"{grid!r}", user_site().location())
    return tuple(out)


_PLATFORMS = {"trn1": "trn1", "inf2": "trn1", "gen2": "trn1", "trn2": "trn2", "gen3": "trn2",
              "trn3": "trn3", "gen4": "trn3"}


def default_target() -> str:
    """The target of a kernel called without ``target=``: as NKI, the environment's
    ``NEURON_PLATFORM_TARGET_OVERRIDE`` (trn1|inf2|gen2, trn2|gen3, trn3|gen4), else the CPU
    simulator's ``NKI_NC_VERSION`` (gen2|gen3|gen4), else a ``--target`` in
    ``NEURON_CC_FLAGS``, else trn2."""
    import re

    for variable in ("NEURON_PLATFORM_TARGET_OVERRIDE", "NKI_NC_VERSION"):
        override = os.environ.get(variable, "").strip().lower()
        if override in _PLATFORMS:
            return _PLATFORMS[override]
    flags = re.search(r"--target[ =]([A-Za-z0-9]+)", os.environ.get("NEURON_CC_FLAGS", ""))
    if flags and flags.group(1).lower() in _PLATFORMS:
        return _PLATFORMS[flags.group(1).lower()]
    return "trn2"


def trace(kernel, *args, target: str | None = None, dma_queues=None, grid=None,
          schedule: str | None = None, **kwargs) -> KernelTrace:
    """Trace ``kernel(*args, **kwargs)`` (numpy / ml_dtypes arrays, torch CPU tensors and jax
    arrays become HBM inputs) into neuronemu assembly. ``dma_queues``: the queues DMAs are
    spread over, round-robin in program order (default 0..15). ``grid``: an SPMD launch grid
    (as ``kernel[grid](...)``): the programs are traced one after another, each with its
    ``nl.program_id``, sharing the kernel's ``nl.shared_hbm`` tensors; programs that meet at
    ``nisa.core_barrier`` are traced in lockstep between barriers (neuronemu/nki/_lockstep.py).
    ``schedule``: how the modelled time orders each engine's work: ``"compiler"`` (the
    default; the NKI compiler's reordering, docs/timing.md "The compiler's schedule") or
    ``"program"`` (program order); the environment's ``NEURONEMU_NKI_SCHEDULE`` sets the
    default."""
    from neuronemu.asm.assembler import no_cyclic_collection

    schedule = _schedule(schedule)

    # (8-30% of a large kernel's trace, measured; cycles the kernel itself drops are
    # collected once tracing is over)
    with no_cyclic_collection():
        try:
            return _trace_once(kernel, args, kwargs, target, dma_queues, grid, schedule,
                               lockstep=False)
        except NeedsLockstep:
            return _trace_once(kernel, args, kwargs, target, dma_queues, grid, schedule,
                               lockstep=True)


SCHEDULES = ("compiler", "program")


def _schedule(schedule: str | None) -> str:
    """The schedule asked for, else NEURONEMU_NKI_SCHEDULE's, else the compiler's."""
    chosen = schedule if schedule is not None else os.environ.get("NEURONEMU_NKI_SCHEDULE")
    chosen = "compiler" if chosen in (None, "") else str(chosen).strip().lower()
    if chosen not in SCHEDULES:
        where = "schedule=" if schedule is not None else "NEURONEMU_NKI_SCHEDULE="
        raise NkiError(f"{where}{chosen!r}: the schedules are {', '.join(SCHEDULES)}",
                       user_site().location())
    return chosen


def _dialect(fn) -> str:
    """0.1 for a kernel whose module takes its NKI names from ``neuronxcc.nki``."""
    legacy = "neuronemu.nki.neuronxcc"
    for value in getattr(fn, "__globals__", {}).values():
        name = getattr(value, "__name__", None)
        if isinstance(name, str) and (name == legacy or name.startswith(legacy + ".")):
            return "0.1"
    return NKI_VERSION


def _on_chip_returned(value):
    """NKI 0.1 returns an on-chip tile's values too (its simulator does): each such tile is
    stored into a new HBM tensor, returned instead (one DMA at the return)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not any(isinstance(t, NkiTensor) and t.kind != "hbm" for t in items):
        return value
    from neuronemu.nki import isa, language

    out = []
    for t in items:
        if isinstance(t, NkiTensor) and t.kind != "hbm":
            hbm = language.ndarray(t.shape, t.dtype, buffer=language.shared_hbm)
            isa.dma_copy(hbm, t)
            t = hbm
        out.append(t)
    return type(value)(out) if isinstance(value, (tuple, list)) else out[0]


def _trace_once(kernel, args, kwargs, target, dma_queues, grid, schedule: str,
                lockstep: bool) -> KernelTrace:
    grid = _normal_grid(_grid_of(kernel, grid))
    target = _PLATFORMS.get(str(target).lower(), target) if target else default_target()
    fn = _kernel_function(kernel)
    if not callable(fn):
        raise TypeError(f"a kernel function is needed, got {type(kernel).__name__}")
    code = fn.__code__
    kernel_site = Site(code.co_filename, code.co_firstlineno, fn.__name__)
    tr = Tracer(target=target, grid=grid, dialect=_dialect(fn), schedule=schedule)
    if dma_queues is not None:
        tr.dma_queues = tuple(int(q) for q in dma_queues)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as error:
        raise NkiError(f"{fn.__name__}(): {error}", user_site().location()) from None
    inputs: dict[str, np.ndarray] = {}
    callers: dict[str, object] = {}
    for pname, value in list(bound.arguments.items()):
        array = frameworks.to_numpy(value)
        if array is None:
            continue
        t = tr.hbm_tensor(pname, dtype_name(array.dtype), array.shape, "input", kernel_site)
        inputs[t._buffer.slot.name] = array
        callers[t._buffer.slot.name] = value
        bound.arguments[pname] = t
    programs = list(np.ndindex(*grid)) if grid else [()]
    returned = None

    def run_program(program):
        tr.start_program(program)
        value = fn(*bound.args, **bound.kwargs)
        if tr.dialect == "0.1":
            value = _on_chip_returned(value)
        return value

    _CURRENT.append(tr)
    try:
        if lockstep:
            together = Lockstep(tr, programs, run_program)
            returned = together.run()[0]
            _check_same_barriers(together, grid)
            _split_versions(tr)
        else:
            starts = []
            for program in programs:
                starts.append(len(tr.instructions))
                value = run_program(program)
                if program == programs[0]:
                    returned = value
            _split_versions(tr)
            tr.interleave_programs(starts + [len(tr.instructions)])
    finally:
        _CURRENT.pop()
    items = returned if isinstance(returned, (tuple, list)) else (
        () if returned is None else (returned,))
    names = []
    for item in items:
        if not isinstance(item, NkiTensor) or item.kind != "hbm" or not item._is_whole():
            raise NkiError(f"{fn.__name__} must return HBM tensors (nl.ndarray(..., "
                           f"buffer=nl.shared_hbm) or an argument it wrote), got {item!r}",
                           kernel_site.location())
        slot = item._buffer.slot
        if slot.role != "input":
            slot.role = "output"
        if slot.used_shape is None:
            slot.used_shape = item._base_shape
        names.append((slot.name, item.shape))
    for name, array in tr.constants.items():
        inputs[name] = array
    for slot in tr.hbm:   # inputs used through a reshaped view are declared in that shape
        if slot.role == "input" and slot.used_shape is not None:
            inputs[slot.name] = np.asarray(inputs[slot.name]).reshape(slot.used_shape)
    asm_name = f"{fn.__name__}.nki.s"
    header, ops, source_map = tr.assembly(asm_name, kernel_site)
    unreturned = [(slot.name, slot.site) for slot in tr.hbm
                  if slot.role == "scratch" and slot.used_shape is not None
                  and not slot.private]
    return KernelTrace(header, ops, asm_name, source_map, target, inputs, returned, names,
                       dict(tr.peak), callers, unreturned, list(tr.prints))


def _check_same_barriers(together: Lockstep, grid) -> None:
    """LNC2's identical control flow: every program reached the same core_barriers."""
    parted = together.diverging()
    if parted is None:
        return
    k, reached, site, missed = parted
    programs = together.programs
    raise NkiError(f"the programs of kernel{list(grid)} part at core_barrier #{k}: program "
                   f"{list(programs[reached])} reaches it, program {list(programs[missed])} "
                   f"ends without reaching it", site.location(),
                   (("LNC2 programs must keep identical control flow: every program reaches "
                     "every core_barrier, in the same order (move the call out of the branch "
                     "on nl.program_id)"),))


TRACE_HOOKS: list[Callable[[KernelTrace], None]] = []
"""Called with every trace ``run`` is about to run (``neuronemu debug kernel.py`` stops the
script there and debugs that kernel)."""


def run(kernel, *args, target: str | None = None, dma_queues=None, seed: int = 0, grid=None,
        schedule: str | None = None, **kwargs) -> KernelRun:
    """Trace and run ``kernel(*args)`` on neuronemu: outputs, the ``Result`` and the assembly.
    Errors (assembler checks, run-time faults) and warnings point at the kernel's Python line.
    An argument the kernel wrote is updated in place for the caller (numpy arrays, torch
    tensors); a ``nl.shared_hbm`` tensor the kernel wrote but did not return is a located
    warning, as is a written argument that cannot be updated (a jax array)."""
    from neuronemu import api

    tr = trace(kernel, *args, target=target, dma_queues=dma_queues, grid=grid,
               schedule=schedule, **kwargs)
    for hook in TRACE_HOOKS:
        hook(tr)
    program = tr.assemble()
    try:
        result = api.run(program, inputs=tr.inputs, seed=seed)
    except REPORTED as error:   # Ctrl-C too: it stops the program, at the kernel's line
        map_error(error, tr.asm_name, tr.source_map)
        raise
    for warning in result.warnings:
        loc, note = map_location(warning.location, tr.asm_name, tr.source_map)
        if loc is not None:
            warning.location = loc
            warning.notes = tuple(warning.notes) + (note,)
    _write_back(tr, result)
    for prefix, name in tr.prints:
        print(prefix, result.outputs[name])
    arrays = [_final(result, name).reshape(shape) for name, shape in tr.output_names]
    if tr.callers:   # the caller's kind of array (torch / jax), as NKI returns it
        like = next(iter(tr.callers.values()))
        arrays = [frameworks.like(a, like) for a in arrays]
    if tr.returned is None:
        outputs = None
    elif isinstance(tr.returned, (tuple, list)):
        outputs = type(tr.returned)(arrays)
    else:
        outputs = arrays[0]
    return KernelRun(tr, result, outputs)


def _final(result, name: str) -> np.ndarray:
    if name in result.outputs:
        return result.outputs[name]
    return result.tensors[name]


def _write_back(tr: KernelTrace, result) -> None:
    """Arguments the kernel wrote are in/out: copy their final contents into the caller's
    arrays. Written ``shared_hbm`` tensors that were not returned would be lost: warn."""
    import warnings

    for name, caller in tr.callers.items():
        final = result.tensors.get(name)
        before = tr.inputs[name]
        if final is None or _same_bits(final, before):
            continue
        if not frameworks.update(caller, final.reshape(np.shape(caller))):
            site = tr.source_map and next(iter(tr.source_map.values()))
            warning = Diagnostic(f"the kernel wrote its argument '{name}' but the caller's "
                                 f"array cannot be updated in place ({type(caller).__name__}); "
                                 f"return it from the kernel to receive its new contents",
                                 site.location() if site else None)
            result.warnings.append(warning)
            warnings.warn(NkiWarning(warning.render()), stacklevel=4)
    returned = {n for n, _ in tr.output_names}
    for name, site in tr.unreturned:
        final = result.tensors.get(name)
        if name in returned or final is None or not _written(final):
            continue
        warning = Diagnostic(f"the kernel wrote the nl.shared_hbm tensor '{name}' but does not "
                             f"return it, so its contents are lost; return it (return {name}, "
                             f"or a tuple of outputs)", site.location())
        result.warnings.append(warning)
        warnings.warn(NkiWarning(warning.render()), stacklevel=4)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.nbytes == b.nbytes and a.tobytes() == b.tobytes()


def _written(array: np.ndarray) -> bool:
    """Whether an HBM tensor holds anything but its initial NaN fill (floats) or zeros."""
    a = np.asarray(array)
    if a.dtype.kind == "f" or a.dtype.kind == "V" or str(a.dtype) in _ML_FLOATS:
        return bool(np.any(~np.isnan(a.astype(np.float32))))
    return bool(np.any(a != 0))


_ML_FLOATS = {"bfloat16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"}


class NkiWarning(UserWarning):
    """A located warning about a kernel (printed by Python's warnings machinery)."""


class JitKernel:
    """What ``@nki.jit`` makes: calling it traces and runs the kernel on neuronemu and returns
    its outputs; ``last_run`` keeps the last ``KernelRun`` (timing, assembly)."""

    # a kernel named test_* in a test module is not a test (pytest would unwrap it to the
    # kernel function and call it with fixtures; NKI's own kernel objects are not collected)
    __test__ = False

    def __init__(self, func: Callable, **options) -> None:
        self.func = func
        self.options = options
        self.last_run: KernelRun | None = None
        functools.update_wrapper(self, func)

    def __call__(self, *args, **kwargs):
        if _CURRENT:   # a jitted helper called from a kernel being traced: inline it
            return self.func(*args, **kwargs)
        self.last_run = run(self.func, *args, **self.options, **kwargs)
        return self.last_run.outputs

    def __getitem__(self, grid) -> GridLaunch:
        """``kernel[grid](...)``: an SPMD launch (see ``trace``)."""
        return GridLaunch(self, grid)


class GridLaunch:
    """``kernel[grid]``: calling it runs every program of the grid."""

    def __init__(self, kernel: JitKernel, grid) -> None:
        self.kernel = kernel
        self.grid = _normal_grid(grid)

    def __call__(self, *args, **kwargs):
        if _CURRENT:
            raise NkiError("an SPMD launch kernel[grid](...) inside a kernel being traced is "
                           "not supported; call the helper directly", user_site().location())
        self.kernel.last_run = run(self.kernel.func, *args, grid=self.grid,
                                   **self.kernel.options, **kwargs)
        return self.kernel.last_run.outputs

    @property
    def last_run(self):
        return self.kernel.last_run


_JIT_IGNORED = {"mode", "show_compiler_tb", "debug_kernel",
                "additional_compile_opt", "experimental_flags", "enable_out_of_bound_check"}


def jit(func=None, **options) -> JitKernel | Callable[[Callable], JitKernel]:
    """``@nki.jit`` / ``@nki.jit(...)``. NKI's compiler options are accepted and ignored;
    neuronemu options (``target``, ``dma_queues``, ``seed``, ``schedule``) are honoured
    (``platform_target='trn3'`` selects the target too)."""
    platform = options.pop("platform_target", None)
    ours = {k: v for k, v in options.items() if k not in _JIT_IGNORED}
    if platform is not None and "target" not in ours:
        ours["target"] = str(platform)
    if func is None:
        return lambda f: JitKernel(f, **ours)
    return JitKernel(func, **ours)


def simulate(kernel, **options) -> Callable[..., object]:
    """``nki.simulate(kernel)(*args)`` (also ``nki.simulate(kernel[2])``): run on neuronemu and
    return the kernel's outputs as the caller's kind of array (numpy / ml_dtypes, torch,
    jax). ``options``: ``target``, ``dma_queues``, ``seed``, ``schedule``."""
    fn = _kernel_function(kernel)
    grid = _grid_of(kernel, None)
    base = kernel.kernel if isinstance(kernel, GridLaunch) else kernel
    opts = dict(base.options) if isinstance(base, JitKernel) else {}
    opts.update(options)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        done = run(fn, *args, grid=grid, **opts, **kwargs)
        if isinstance(base, JitKernel):
            base.last_run = done
        return done.outputs

    return call



# -- the CPU simulator's spellings ------------------------------------------------------------
# NKI has three ways to say "run this kernel on the CPU", with harnesses written for each:
# ``nki.simulate`` (above), ``nki.simulator.simulate_kernel(kernel, args, kwargs, lnc)``
# (framework integrations such as vllm-neuron) and ``nki.cpu_simulate(kernel)[lnc](...)`` of
# AWS's stand-alone package ``nki_cpu_simulator`` (nki-library's --test-mode simulation; the
# drop-in switch makes that package neuronemu too). All run the kernel here, so the harness
# also gets the modelled timing through the kernel's ``last_run``. ``lnc`` is the
# logical-core count: 2 launches ``kernel[2]``.


def _launch(kernel, lnc: int | None):
    if lnc is None or int(lnc) == 1 or isinstance(kernel, GridLaunch):
        return kernel
    if not isinstance(kernel, JitKernel):
        kernel = JitKernel(kernel)
    return kernel[int(lnc)]


def simulate_kernel(kernel, args=(), kwargs=None, lnc: int | None = None):
    """Run ``kernel(*args, **kwargs)`` with ``lnc`` logical cores; the kernel's outputs, as
    the caller's kind of array (``nki.simulator.simulate_kernel``)."""
    return simulate(_launch(kernel, lnc))(*tuple(args), **dict(kwargs or {}))


class CpuSimulate:
    """``nki.cpu_simulate(kernel)``: call it to run with one logical core, or index it with
    the logical-core count first (``[2]``)."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def __getitem__(self, lnc) -> Callable[..., object]:
        return simulate(_launch(self.kernel, lnc))

    def __call__(self, *args, **kwargs):
        return simulate_kernel(self.kernel, args, kwargs)


def cpu_simulate(kernel) -> CpuSimulate:
    """``nki.cpu_simulate(kernel)[lnc](...)``, as AWS's ``nki_cpu_simulator`` spells
    ``nki.simulate``."""
    return CpuSimulate(kernel)


simulator = types.ModuleType("neuronemu.nki.simulator",
                             "``nki.simulator``: ``simulate_kernel(kernel, args, kwargs, lnc)``")
simulator.simulate_kernel = simulate_kernel
sys.modules.setdefault("neuronemu.nki.simulator", simulator)
