"""The CPU-simulator entry points NKI test harnesses call, run on neuronemu.

NKI has three spellings for "run this kernel on the CPU" and harnesses written for each:

- ``nki.simulate(kernel)(*args)`` and ``nki.simulate(kernel[2])(...)`` (NKI 0.3+, in
  ``neuronemu.nki``);
- ``nki.simulator.simulate_kernel(kernel, args, kwargs, lnc)`` (what framework integrations
  such as vllm-neuron call);
- ``nki.cpu_simulate(kernel)[lnc](**kwargs)`` of AWS's stand-alone simulator package
  ``nki_cpu_simulator`` (nki-library's test suite in ``--test-mode simulation``; the drop-in
  switch makes ``import nki_cpu_simulator.nki...`` load neuronemu's modules, see ``dropin``).

All three trace and run the kernel here, so the harness also gets the modelled timing through
the kernel's ``last_run``. ``lnc`` is the logical-core count: 1 runs one program, 2 launches
the kernel as ``kernel[2]`` (two programs, as on an LNC2 Trn2 core pair).
"""

from __future__ import annotations

from collections.abc import Callable


def _launch(kernel, lnc: int | None):
    from neuronemu import nki

    if lnc is None or int(lnc) == 1 or isinstance(kernel, nki.GridLaunch):
        return kernel
    if not isinstance(kernel, nki.JitKernel):
        kernel = nki.JitKernel(kernel)
    return kernel[int(lnc)]


def simulate_kernel(kernel, args=(), kwargs=None, lnc: int | None = None):
    """Run ``kernel(*args, **kwargs)`` on neuronemu with ``lnc`` logical cores; the kernel's
    outputs, as the caller's kind of array."""
    from neuronemu import nki

    return nki.simulate(_launch(kernel, lnc))(*tuple(args), **dict(kwargs or {}))


class CpuSimulate:
    """``nki.cpu_simulate(kernel)``: call it to run with one logical core, or index it with
    the logical-core count first (``[2]``)."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def __getitem__(self, lnc) -> Callable[..., object]:
        from neuronemu import nki

        return nki.simulate(_launch(self.kernel, lnc))

    def __call__(self, *args, **kwargs):
        return simulate_kernel(self.kernel, args, kwargs)


def cpu_simulate(kernel) -> CpuSimulate:
    """``nki.cpu_simulate(kernel)[lnc](...)``, as AWS's ``nki_cpu_simulator`` package spells
    ``nki.simulate``."""
    return CpuSimulate(kernel)
