"""Unit tests of kernels: run a kernel in one call and check its values and time.

    from neuronemu.testing import run_kernel, assert_ulp_close
    run = run_kernel("examples/softmax", target="trn2")
    assert_ulp_close(run.outputs["y"], softmax64(run.inputs["x"]), ulps=4)

- ``run_kernel`` / ``KernelRun``: assemble and run (file, bundled name or source text);
  outputs, inputs, tiles, timing, warnings.
- ``assert_ulp_close``, ``ulp_distance``, ``assert_bits_equal``: values in ulps of fp32, bf16,
  fp16, fp8 and the MX element types (rules in neuronemu.testing.ulp).
- ``gamma``, ``matmul_error_bound``, ``sum_error_bound``, ``assert_within_bound``: K-dependent
  bounds for accumulations (Higham; neuronemu.testing.bounds).
- ``assert_timing``, ``timing_report``: time, cycles and utilisation budgets with the critical
  path in the message.
- ``neuronemu.testing.strategies`` (needs hypothesis): tile shapes, dtypes, special values.

The pytest plugin (neuronemu.pytest_plugin, loaded automatically once neuronemu is installed)
adds the ``neuronemu_run`` fixture, ``--neuronemu-target`` and the ``neuronemu_targets`` marker.
See docs/testing.md.
"""

from neuronemu.testing.bounds import (
    assert_within_bound,
    gamma,
    matmul_error_bound,
    sum_error_bound,
    unit_roundoff,
)
from neuronemu.testing.runner import KernelRun, load_kernel, run_kernel
from neuronemu.testing.timing import assert_timing, timing_report, utilisation
from neuronemu.testing.ulp import assert_bits_equal, assert_ulp_close, ulp_distance

__all__ = ["KernelRun", "assert_bits_equal", "assert_timing", "assert_ulp_close",
           "assert_within_bound", "gamma", "load_kernel", "matmul_error_bound", "run_kernel",
           "sum_error_bound", "timing_report", "ulp_distance", "unit_roundoff", "utilisation"]
