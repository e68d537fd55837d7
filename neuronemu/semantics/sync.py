"""Semaphore instructions. They change no data; their effect is on the timeline
(neuronemu/timing/explicit.py), so functionally they are no-ops."""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L


@jit
def signal(ins, ops, imms, mems, regs, fmt, table):
    return L.STATUS_OK


@jit
def wait(ins, ops, imms, mems, regs, fmt, table):
    return L.STATUS_OK


@jit
def barrier(ins, ops, imms, mems, regs, fmt, table):
    return L.STATUS_OK
