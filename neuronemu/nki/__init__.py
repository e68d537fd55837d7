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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from neuronemu.errors import REPORTED, NeuronemuError
from neuronemu.nki import isa, language
from neuronemu.nki._trace import (
    _CURRENT,
    NKI_VERSION,
    NkiError,
    NkiTensor,
    NkiUnsupported,
    Site,
    Tracer,
    dtype_name,
    map_error,
    map_location,
)

__all__ = ["NKI_VERSION", "KernelRun", "KernelTrace", "NkiError", "NkiTensor",
           "NkiUnsupported", "isa", "jit", "language", "run", "simulate", "trace"]


@dataclass
class KernelTrace:
    """A traced kernel: the generated assembly and where each of its lines came from."""

    asm: str
    """The generated ``.s`` text; every instruction ends with ``# kernel.py:LINE``."""
    asm_name: str
    source_map: dict[int, Site]
    """Generated line number -> the kernel's Python frame (file, line, function)."""
    target: str
    inputs: dict[str, np.ndarray]
    returned: object = None       # the kernel's return value (NkiTensor(s) / None)
    output_names: list = field(default_factory=list)
    peak_bytes: dict = field(default_factory=dict)
    """Bytes per partition the allocator used: {"sbuf": ..., "psum": ...}."""

    def assemble(self):
        """The neuronemu ``Program`` (errors point at the kernel's Python line)."""
        from neuronemu import api

        try:
            return api.assemble(self.asm, filename=self.asm_name, target=self.target)
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
        from neuronemu.timing.report import chrome_trace

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


def _kernel_function(kernel):
    return kernel.func if isinstance(kernel, JitKernel) else kernel


def trace(kernel, *args, target: str = "trn2", dma_queues=None, **kwargs) -> KernelTrace:
    """Trace ``kernel(*args, **kwargs)`` (numpy / ml_dtypes arrays become HBM inputs) into
    neuronemu assembly. ``dma_queues``: the queues DMAs are spread over, round-robin in program
    order (default 0..15)."""
    fn = _kernel_function(kernel)
    if not callable(fn):
        raise TypeError(f"a kernel function is needed, got {type(kernel).__name__}")
    code = fn.__code__
    kernel_site = Site(code.co_filename, code.co_firstlineno, fn.__name__)
    tr = Tracer(target=target)
    if dma_queues is not None:
        tr.dma_queues = tuple(int(q) for q in dma_queues)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    inputs: dict[str, np.ndarray] = {}
    for pname, value in list(bound.arguments.items()):
        if isinstance(value, np.ndarray):
            t = tr.hbm_tensor(pname, dtype_name(value.dtype), value.shape, "input", kernel_site)
            inputs[t._buffer.slot.name] = value
            bound.arguments[pname] = t
        elif hasattr(value, "__array__") and hasattr(value, "shape") and hasattr(value, "dtype"):
            raise TypeError(f"kernel argument {pname!r}: pass numpy arrays (got "
                            f"{type(value).__name__}; convert with .numpy())")
    _CURRENT.append(tr)
    try:
        returned = fn(*bound.args, **bound.kwargs)
    finally:
        _CURRENT.pop()
    items = returned if isinstance(returned, (tuple, list)) else (
        () if returned is None else (returned,))
    names = []
    for item in items:
        if not isinstance(item, NkiTensor) or item.kind != "hbm" or not item._is_whole():
            raise NkiError(f"{fn.__name__} must return HBM tensors (nl.ndarray(..., "
                           f"buffer=nl.shared_hbm)), got {item!r}", kernel_site.location())
        slot = item._buffer.slot
        if slot.role == "input":
            raise NkiError(f"{fn.__name__} returns its input '{slot.name}'; outputs are new "
                           f"nl.shared_hbm tensors", kernel_site.location())
        slot.role = "output"
        if slot.used_shape is None:
            slot.used_shape = item._base_shape
        names.append((slot.name, item.shape))
    for slot in tr.hbm:   # inputs used through a reshaped view are declared in that shape
        if slot.role == "input" and slot.used_shape is not None:
            inputs[slot.name] = np.asarray(inputs[slot.name]).reshape(slot.used_shape)
    asm_name = f"{fn.__name__}.nki.s"
    text, source_map = tr.assembly(asm_name, kernel_site)
    return KernelTrace(text, asm_name, source_map, target, inputs, returned, names,
                       dict(tr.peak))


TRACE_HOOKS: list[Callable[[KernelTrace], None]] = []
"""Called with every trace ``run`` is about to run (``neuronemu debug kernel.py`` stops the
script there and debugs that kernel)."""


def run(kernel, *args, target: str = "trn2", dma_queues=None, seed: int = 0,
        **kwargs) -> KernelRun:
    """Trace and run ``kernel(*args)`` on neuronemu: outputs, the ``Result`` and the assembly.
    Errors (assembler checks, run-time faults) and warnings point at the kernel's Python line."""
    from neuronemu import api

    tr = trace(kernel, *args, target=target, dma_queues=dma_queues, **kwargs)
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
    arrays = [result.outputs[name].reshape(shape) for name, shape in tr.output_names]
    if tr.returned is None:
        outputs = None
    elif isinstance(tr.returned, (tuple, list)):
        outputs = type(tr.returned)(arrays)
    else:
        outputs = arrays[0]
    return KernelRun(tr, result, outputs)


class JitKernel:
    """What ``@nki.jit`` makes: calling it traces and runs the kernel on neuronemu and returns
    its outputs; ``last_run`` keeps the last ``KernelRun`` (timing, assembly)."""

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

    def __getitem__(self, grid):
        raise NkiUnsupported("SPMD launch kernel[grid] is not supported by neuronemu.nki "
                             "(stage 4); call the kernel directly")


_JIT_IGNORED = {"mode", "show_compiler_tb", "debug_kernel",
                "additional_compile_opt", "experimental_flags", "enable_out_of_bound_check"}


def jit(func=None, **options) -> JitKernel | Callable[[Callable], JitKernel]:
    """``@nki.jit`` / ``@nki.jit(...)``. NKI's compiler options are accepted and ignored;
    neuronemu options (``target``, ``dma_queues``, ``seed``) are honoured
    (``platform_target='trn3'`` selects the target too)."""
    platform = options.pop("platform_target", None)
    ours = {k: v for k, v in options.items() if k not in _JIT_IGNORED}
    if platform is not None and "target" not in ours:
        ours["target"] = str(platform)
    if func is None:
        return lambda f: JitKernel(f, **ours)
    return JitKernel(func, **ours)


def simulate(kernel, **options) -> Callable[..., object]:
    """``nki.simulate(kernel)(*args)``: run on neuronemu and return the kernel's outputs as
    numpy / ml_dtypes arrays. ``options``: ``target``, ``dma_queues``, ``seed``."""
    fn = _kernel_function(kernel)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return run(fn, *args, **options, **kwargs).outputs

    return call
