"""``neuronxcc.nki`` under the drop-in switch: the NKI 0.1 dialect, run by the same tracer as
NKI 0.2-0.6 (``neuronemu.nki``).

What 0.1 writes differently and what runs here (docs/nki.md, "The 0.1 dialect"): index tiles
(``nl.arange``, ``nl.mgrid``: ``a[i * 128 + i_p, i_f]``), ``mask=`` on ``nl.load`` and
``nl.store`` (a bound on the index tiles: the tails of ragged tilings), ``acc += nl.matmul(...)``
into PSUM (``NkiTensor.__iadd__``), ISA calls that return their result (``isa.py``),
``nl.par_dim``, and the harness calls ``nki.simulate_kernel(kernel, *args)``,
``nki.baremetal``, ``nki.benchmark`` (the *modelled* latency, in the shape 0.1's tests read)
and ``nki.profile``; ``mask=`` on compute calls (``language._masked``)."""

from __future__ import annotations

import functools

from neuronemu.nki import (  # noqa: F401 (names of neuronxcc.nki)
    JitKernel,
    KernelRun,
    jit,
    run,
    simulate,
)
from neuronemu.nki import typing as typing
from neuronemu.nki.neuronxcc import compiler, isa, language  # noqa: F401


def trace(func=None, **options):
    """``@nki.trace`` (0.1's decorator, before ``nki.jit``): a kernel, run here when called
    (``simulate_kernel(k, a, out)``: an output passed as an argument is written in place)."""
    return jit(func, **options)


def simulate_kernel(kernel, *args, **kwargs):
    """``nki.simulate_kernel(kernel, *args)``: run on neuronemu, return the kernel's outputs
    (``kernel`` as 0.1's tests pass it: a function, ``nki.jit`` / ``nki.baremetal`` kernel, or
    one launched on a grid, ``kernel[2, 4]``)."""
    if isinstance(kernel, (_Launched, _LaunchedGrid)):
        kernel = kernel.kernel
    return simulate(kernel)(*args, **kwargs)


class _Latency:
    """``benchmark_result.nc_latency``: the modelled latency (one run: every percentile)."""

    def __init__(self, us: float) -> None:
        self.us = us

    def get_latency_percentile(self, percentile: int) -> float:
        """In microseconds, as 0.1's ``nc_latency`` gives it."""
        return self.us

    def get_latency_average(self) -> float:
        return self.us


class _BenchmarkResult:
    def __init__(self, done: KernelRun) -> None:
        self.nc_latency = _Latency(done.time_ns / 1e3)


class _Launched:
    """A kernel decorated by ``nki.baremetal`` / ``nki.benchmark`` / ``nki.profile``: calling
    it runs the kernel on neuronemu (the hardware run's options are accepted and ignored);
    ``benchmark_result`` holds the modelled latency of the last call."""

    def __init__(self, func, options: dict) -> None:
        self.kernel = func if isinstance(func, JitKernel) else JitKernel(
            getattr(func, "func", func))
        self.options = options
        self.benchmark_result = None
        functools.update_wrapper(self, self.kernel.func)

    def __call__(self, *args, **kwargs):
        outputs = self.kernel(*args, **kwargs)
        self.benchmark_result = self.ran(self.kernel.last_run)
        return outputs

    def ran(self, done: KernelRun) -> _BenchmarkResult:
        """The result of a run; with ``save_trace_name=`` the modelled timeline is written
        there (Perfetto / chrome://tracing JSON, not the device profiler's NTFF), in
        ``working_directory`` when one is given."""
        name = self.options.get("save_trace_name")
        if name:
            import json
            import os

            folder = self.options.get("working_directory")
            path = os.path.join(folder, name) if folder else name
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(path, "w") as out:
                json.dump(done.chrome_trace(), out)
        return _BenchmarkResult(done)

    def __getitem__(self, grid) -> _LaunchedGrid:
        return _LaunchedGrid(self, grid)


class _LaunchedGrid:
    """``launched[grid]``: calling it runs the kernel on that SPMD grid."""

    def __init__(self, launched: _Launched, grid) -> None:
        self.launched = launched
        self.kernel = launched.kernel[grid]
        self.benchmark_result = None

    def __call__(self, *args, **kwargs):
        outputs = self.kernel(*args, **kwargs)
        self.benchmark_result = self.launched.ran(self.launched.kernel.last_run)
        self.launched.benchmark_result = self.benchmark_result
        return outputs


def _decorator(func=None, **options):
    if func is None:
        return lambda f: _Launched(f, options)
    return _Launched(func, options)


def baremetal(func=None, **options):
    """``@nki.baremetal`` (``save_neff_name=``, ``artifacts_dir=``, ...): runs here."""
    return _decorator(func, **options)


def benchmark(func=None, **options):
    """``@nki.benchmark(warmup=, iters=, ...)``: runs here once; ``benchmark_result.nc_latency``
    is the modelled latency."""
    return _decorator(func, **options)


def profile(func=None, **options):
    """``@nki.profile(...)``: runs here; ``save_trace_name=`` gets the modelled timeline
    (Perfetto JSON), in ``working_directory``; the NEFF is not written."""
    return _decorator(func, **options)
