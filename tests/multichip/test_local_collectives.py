"""Collectives of a world of one rank run in the interpreter loop (semantics/cc.py,
timing/model.py ``local_collective``) instead of returning to the multi-chip driver. They must
give what the driver gives, bit for bit: outputs, modelled times, every timeline event, the
report and the warnings; and each must be a copy of its source (numpy's view of the input).
What the loop leaves to the driver (reductions over dtypes the driver carries through float64,
groups larger than the world) must still reach it, with its errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import neuronemu
from neuronemu import api, report
from neuronemu.errors import NeuronemuError
from neuronemu.exec import core as core_module
from neuronemu.multichip import spmd
from neuronemu.timing.trace import chrome_trace

KERNEL = """
.hbm x {dt}[128, 96] input
.hbm y {dt}[128, 96] output
.hbm z {dt}[128, 96] output
.hbm u {dt}[64, 96] output
.sbuf s {dt}[128, 96]
.sbuf t {dt}[128, 192]
dma.copy s, x
cc.all_reduce y, s, op={op}
cc.all_gather z[0:128, 0:48], x[0:128, 48:96], dim=1
cc.permute t[0:128, 0:192:2], s, shift=5
cc.all_to_all u, t[0:64, 0:192:2], dim=0
cc.reduce_scatter z[0:128, 48:96], t[0:128, 96:144], op=add, dim=1
cc.all_reduce t[0:128, 96:192], y, op=minimum, group_size=1, group_stride=1
dma.copy z[0:128, 0:8], t[0:128, 3:11]
"""


_DRIVERS_COLLECTIVE = spmd.Driver._collective


def _run(program, local: bool, monkeypatch) -> tuple:
    """The run, and how many collectives the driver carried out."""
    calls = []

    def counted(self):
        calls.append(self.stops[0].name)
        return _DRIVERS_COLLECTIVE(self)

    monkeypatch.setattr(core_module, "LOCAL_COLLECTIVES", local)
    monkeypatch.setattr(spmd.Driver, "_collective", counted)
    return api.run(program, seed=7), calls


def _bits(array) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint8)


@pytest.mark.parametrize(("dt", "op", "driven"), [
    ("float32", "maximum", 0), ("int32", "add", 0), ("uint8", "minimum", 0),
    # bfloat16 reductions go through the driver (float64 values there); its copies do not
    ("bfloat16", "add", 3)])
def test_a_world_of_one_runs_its_collectives_in_the_loop_as_the_driver_would(
        monkeypatch, dt: str, op: str, driven: int) -> None:
    program = neuronemu.assemble(KERNEL.format(dt=dt, op=op), "k.s", target="trn2")
    here, here_calls = _run(program, True, monkeypatch)
    there, there_calls = _run(program, False, monkeypatch)
    assert len(there_calls) == 6 and len(here_calls) == driven
    for name in ("y", "z", "u"):
        assert np.array_equal(_bits(here.outputs[name]), _bits(there.outputs[name])), name
    assert json.dumps(report.timing_json(here.timing)) == json.dumps(
        report.timing_json(there.timing))
    assert json.dumps(chrome_trace(program, here.timing)) == json.dumps(
        chrome_trace(program, there.timing))
    assert here.instructions == there.instructions and here.steps == there.steps
    assert [str(w) for w in here.warnings] == [str(w) for w in there.warnings]
    # and each is the copy it should be, against the input and SBUF's never-written 0xFF
    x = _bits(here.tensors["x"]).reshape(128, 96, -1)
    t = np.full((128, 192, x.shape[2]), 0xFF, dtype=np.uint8)
    t[:, 0:192:2] = x                                # permute of one rank: t's even columns
    y = _bits(here.outputs["y"]).reshape(128, 96, -1)
    z = _bits(here.outputs["z"]).reshape(128, 96, -1)
    u = _bits(here.outputs["u"]).reshape(64, 96, -1)
    assert np.array_equal(y, x)                      # all_reduce
    assert np.array_equal(z[:, 8:48], x[:, 56:96])   # all_gather
    assert np.array_equal(u, x[:64])                 # all_to_all of t's even columns
    # reduce_scatter, on the columns written (the driver carries bfloat16 through float64,
    # which quiets the never-written NaN between them: both paths do so for bfloat16)
    assert np.array_equal(z[:, 48:96:2], x[:, 48:72])
    assert np.array_equal(z[:, 0:8], t[:, 3:11])


def test_a_time_that_reads_unwritten_memory_is_reported_alike(monkeypatch) -> None:
    """The loop's timing of a local collective counts never-written reads as the driver does
    (the first one's instruction and argument)."""
    src = ".sbuf s float32[128, 64]\n.hbm y float32[128, 64] output\ncc.all_gather y, s\n"
    program = neuronemu.assemble(src, "k.s", target="trn2")
    here, _ = _run(program, True, monkeypatch)
    there, _ = _run(program, False, monkeypatch)
    assert here.warnings and [str(w) for w in here.warnings] == [str(w) for w in there.warnings]


def test_a_group_larger_than_the_world_is_still_the_drivers_error(monkeypatch) -> None:
    src = (".hbm x float32[128, 64] input\n.hbm y float32[128, 64] output\n"
           "cc.all_reduce y, x, group_size=2\n")
    program = neuronemu.assemble(src, "k.s", target="trn2")
    messages = []
    for local in (True, False):
        with pytest.raises(NeuronemuError) as caught:
            _run(program, local, monkeypatch)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "group" in messages[0]


def test_no_dma_or_collective_is_free() -> None:
    """The loop times a free instruction before running it (exec/interpreter.py), while a DMA
    and a local collective must run first (their data decides their bytes): so neither may be
    in a cost class of formula ``free``."""
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    free = {name for name, cost in isa.costs.items() if cost.formula == "free"}
    assert free and not [name for name, d in isa.instructions.items()
                         if d.cost_class in free and d.engine in ("dma", "cc")]
