"""dma.copy oob=skip (NKI's oob_mode.skip): a register-offset tile wholly outside its tensor is
not moved (no data, no modelled time), one partly outside still faults, and without oob=skip
any outside tile faults. Expected memory contents are written out by hand."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.encoding import disassemble, encode
from neuronemu.errors import RuntimeFault

KERNEL = """\
.target trn2
.hbm out float32[64, 8] output
.sbuf t float32[32, 8]
.sbuf z float32[64, 8]
    vector.memset z, value=0.0
    dma.copy out, z, queue=0
    vector.memset t, value=5.0
    ctrl.mov r0, {first}
    dma.copy out[r0*{step} : r0*{step} + 32, :], t, queue=1{oob}
    ctrl.mov r0, {second}
    dma.copy out[r0*{step} : r0*{step} + 32, :], t, queue=1{oob}
"""


def _run(first, second, step=32, oob=", oob=skip"):
    src = KERNEL.format(first=first, second=second, step=step, oob=oob)
    return neuronemu.run(neuronemu.assemble(src, "oob.s"))


@pytest.mark.parametrize("outside", [2, -1, -5, 1 << 40])
def test_a_tile_wholly_outside_is_skipped(outside):
    result = _run(1, outside)
    expected = np.zeros((64, 8), np.float32)
    expected[32:64] = 5.0
    np.testing.assert_array_equal(result.outputs["out"], expected)
    # both copies on queue 1 ran as instructions; only the one inside was timed (pc 4: the
    # second copy, pc 6, has no event on the timeline)
    assert result.instructions["dma"] == 3
    pcs = list(result.timing.events[:, 0])
    assert pcs.count(4) == 1 and pcs.count(6) == 0


def test_a_tile_partly_outside_still_faults_and_says_why():
    with pytest.raises(RuntimeFault, match=r"leaves 'out' at run time \(r0 = 3\)") as e:
        _run(0, 3, step=16)          # rows 48..79 of 64
    assert "wholly outside" in e.value.render()


def test_without_oob_skip_a_tile_outside_faults():
    with pytest.raises(RuntimeFault, match=r"leaves 'out' at run time \(r0 = 2\)"):
        _run(1, 2, oob="")


def test_oob_skip_on_chip_and_in_the_binary():
    src = """\
.target trn2
.hbm out float32[4, 16] output
.sbuf a float32[4, 16]
.sbuf b float32[4, 16]
    vector.memset a, value=1.0
    vector.memset b, value=2.0
    ctrl.mov r1, 3
    dma.copy a[:, r1*8 : r1*8 + 8], b[:, 0:8], oob=skip
    ctrl.mov r1, 1
    dma.copy a[:, r1*8 : r1*8 + 8], b[:, 0:8], oob=skip
    dma.copy out, a
"""
    program = neuronemu.assemble(src, "chip.s")
    expected = np.ones((4, 16), np.float32)
    expected[:, 8:16] = 2.0
    np.testing.assert_array_equal(neuronemu.run(program).outputs["out"], expected)
    text = disassemble(encode(program))
    assert text.count("oob=skip") == 2
    again = neuronemu.assemble(text, "again.s")
    np.testing.assert_array_equal(neuronemu.run(again).outputs["out"], expected)


def test_under_the_debugger_a_skipped_copy_stops_at_its_breakpoint_and_is_skipped():
    from neuronemu.debug.expr import Text
    from neuronemu.debug.session import Debugger

    program = neuronemu.assemble(KERNEL.format(first=1, second=2, step=32, oob=", oob=skip"),
                                 "oob.s")
    d = Debugger(program)
    d.break_at(Text("11"))                   # the second copy: wholly outside, skipped
    assert d.cont().doc["reason"] == "breakpoint" and d.pc == 6
    assert d.cont().doc["reason"] == "finished" and d.steps == 7
    expected = np.zeros((64, 8), np.float32)
    expected[32:64] = 5.0
    np.testing.assert_array_equal(d.evaluate(Text("out")), expected)


INDEXED = """\
.target trn2
.hbm table float32[16, 4] input
.hbm ids int32[8, 1] input
.hbm rows_out float32[8, 4] output
.hbm scattered float32[16, 4] output init=zeros
.sbuf idx int32[8, 1]
.sbuf rows float32[8, 4]
    vector.memset rows, value=-1.0
    dma.copy idx, ids
    dma.gather rows, table, index=idx, queue=5, oob=skip
    dma.copy rows_out, rows
    dma.scatter scattered, rows, index=idx, queue=6, oob=skip
"""


def test_gather_and_scatter_skip_the_partitions_whose_row_is_outside():
    """oob=skip on an indexed transfer: partition p moves only if index[p] names a row;
    two partitions outside the table do not count as writing the same row."""
    table = np.arange(64, dtype=np.float32).reshape(16, 4)
    ids = np.array([[3], [16], [0], [-1], [15], [1 << 30], [7], [2]], np.int32)
    result = neuronemu.run(neuronemu.assemble(INDEXED, "indexed.s"),
                           inputs={"table": table, "ids": ids})
    rows = np.full((8, 4), -1.0, np.float32)
    scattered = np.zeros((16, 4), np.float32)
    for p, r in enumerate(ids[:, 0]):
        if 0 <= r < 16:
            rows[p] = table[r]
            scattered[r] = table[r]
    np.testing.assert_array_equal(result.outputs["rows_out"], rows)
    np.testing.assert_array_equal(result.outputs["scattered"], scattered)
    again = neuronemu.assemble(disassemble(encode(neuronemu.assemble(INDEXED, "i.s"))), "d.s")
    assert encode(again) == encode(neuronemu.assemble(INDEXED, "i.s"))


def test_without_oob_skip_an_index_outside_still_faults():
    ids = np.array([[3], [16], [0], [1], [2], [4], [7], [5]], np.int32)
    with pytest.raises(RuntimeFault, match=r"idx\[1\] = 16"):
        neuronemu.run(neuronemu.assemble(INDEXED.replace(", oob=skip", ""), "indexed.s"),
                      inputs={"table": np.zeros((16, 4), np.float32), "ids": ids})
