"""Collective communication. The interpreter loop never calls these: it stops at every cc.*
instruction (cost formula ``network``, status STATUS_YIELD) and the multi-chip driver
(neuronemu/multichip/spmd.py) moves the data between the ranks' memories and times it. The
jitted stubs exist so the generated dispatcher has one function per table entry."""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L


@jit
def _handled_by_driver(ins, ops, imms, mems, regs, fmt, table):
    return L.STATUS_YIELD


send = recv = sendrecv = all_reduce = reduce_scatter = all_gather = all_to_all = permute = barrier = (
    _handled_by_driver)
all_to_all_v = all_gather_v = _handled_by_driver
