"""An exception inside an instruction's compiled kernel (an emulator bug, e.g. an index past an
array under NEURONEMU_BOUNDSCHECK=1) ends the run with a located RuntimeFault. A C callback
cannot raise, and numba would print the error and return 0, which reads as success; the
generated wrappers turn it into STATUS_KERNEL_ERROR instead."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core import sigutils
from numba.core.ccallback import CFunc

import neuronemu
from neuronemu.compiled.jit import jit
from neuronemu.exec import core, kernels
from neuronemu.exec.wrappers import ctrl as ctrl_wrappers
from neuronemu.machine import abi


@jit(cache=False)
def _raises(ins, ops, imms, mems, regs, fmt, table):
    scratch = np.zeros(2, dtype=np.int64)
    return scratch[regs[0] + 5]   # regs[0] = 0: raises under boundscheck=True


def test_a_raising_kernel_is_a_located_fault(monkeypatch):
    program = neuronemu.assemble("ctrl.add r1, r1, 1\nctrl.mov r2, 7\nctrl.add r3, r3, 1\n",
                                 filename="bug.s")
    # the real kernels first: compiled while ctrl.mov is patched, the cached ctrl.mov kernel
    # would call the raising function in every later process (its cache key is the wrapper's)
    addresses = kernels.kernel_addresses(program.instrs, program.ops, np.zeros(3, dtype=bool))
    # the generated wrapper, compiled afresh (no cache) against a ctrl.mov that raises (the
    # wrapper calls the function through its module's inlined copy, _mov)
    monkeypatch.setattr(ctrl_wrappers, "_mov", jit(cache=False, boundscheck=True)(_raises.py_func))
    broken = CFunc(kernels.wrapper("ctrl__mov"), sigutils.normalize_signature(abi.SIGNATURE),
                   locals={}, options={"error_model": "numpy"})
    broken.compile()
    addresses[1] = broken.address
    monkeypatch.setattr(core, "program_kernels", lambda program, costs, local=False: addresses)
    with pytest.raises(neuronemu.RuntimeFault) as info:
        neuronemu.run(program)
    assert "internal error" in info.value.message
    assert "ctrl.mov" in info.value.message
    assert (info.value.location.source.name, info.value.location.line) == ("bug.s", 2)
