"""tensor_copy_dynamic_src / tensor_copy_dynamic_dst (Vector, GpSimd): copies whose source or
destination sits at a run-time offset within each partition, the offset read from SBUF. Oracles:
numpy slicing, the documented cost max(MIN_II_DYNAMIC ~ 600, N)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError, RuntimeFault

CLOCK_GHZ = {"vector": 0.96, "gpsimd": 1.2}  # trn2 (isa/targets.toml)

GATHER = """.target trn2
.hbm x float32[32, 512] input
.hbm offsets int32[1, 8] input
.hbm out float32[32, 512] output
.sbuf xs float32[32, 512]
.sbuf os int32[1, 8]
.sbuf y float32[32, 512]
dma.copy xs, x
dma.copy os, offsets
ctrl.mov r2, 0
loop:
ctrl.load r1, os[:, r2:r2 + 1]
{engine}.tensor_copy_dynamic_src y[:, r2*64 : r2*64 + 64], xs[:, r1*64 : r1*64 + 64]
ctrl.add r2, r2, 1
ctrl.blt r2, 8, loop
dma.copy out, y
"""


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
def test_dynamic_src_gathers_blocks_named_by_sbuf_offsets(engine: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 512)).astype(np.float32)
    offsets = rng.permutation(8).astype(np.int32).reshape(1, 8)
    program = neuronemu.assemble(GATHER.format(engine=engine), "k.s")
    out = neuronemu.run(program, inputs={"x": x, "offsets": offsets}).outputs["out"]
    blocks = x.reshape(32, 8, 64)
    np.testing.assert_array_equal(out, blocks[:, offsets[0], :].reshape(32, 512))


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
def test_dynamic_dst_scatters_blocks(engine: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 512)).astype(np.float32)
    offsets = rng.permutation(8).astype(np.int32).reshape(1, 8)
    src = GATHER.format(engine=engine).replace(
        f"{engine}.tensor_copy_dynamic_src y[:, r2*64 : r2*64 + 64], xs[:, r1*64 : r1*64 + 64]",
        f"{engine}.tensor_copy_dynamic_dst y[:, r1*64 : r1*64 + 64], xs[:, r2*64 : r2*64 + 64]")
    out = neuronemu.run(neuronemu.assemble(src, "k.s"),
                        inputs={"x": x, "offsets": offsets}).outputs["out"]
    expected = np.empty((32, 8, 64), np.float32)
    expected[:, offsets[0], :] = x.reshape(32, 8, 64)
    np.testing.assert_array_equal(out, expected.reshape(32, 512))


@pytest.mark.parametrize("engine", ["vector", "gpsimd"])
@pytest.mark.parametrize("width, cycles", [(64, 600), (1024, 1024)])
def test_cost_is_max_of_600_and_n(engine: str, width: int, cycles: int) -> None:
    src = f""".target trn2
.sbuf x float32[128, 2048]
.sbuf y float32[128, {width}]
ctrl.mov r1, 1
{engine}.tensor_copy_dynamic_src y, x[:, r1*{width} : r1*{width} + {width}]
"""
    timing = neuronemu.run(neuronemu.assemble(src, "k.s")).timing
    assert timing.tracks[engine].busy_ns == pytest.approx(cycles / CLOCK_GHZ[engine])


@pytest.mark.parametrize("line, message", [
    ("vector.tensor_copy_dynamic_src y, x[:, 0:64]",
     ("data of vector.tensor_copy_dynamic_src needs a register offset in a free dim "
      r"\(e.g. x\[:, r1\*64 : r1\*64 \+ 64\]\); for a static slice use vector.tensor_copy")),
    ("gpsimd.tensor_copy_dynamic_dst x[:, 0:64], y",
     "dst of gpsimd.tensor_copy_dynamic_dst needs a register offset"),
    ("gpsimd.tensor_copy_dynamic_src acc, x[:, r1*64 : r1*64 + 64]", "must be in SBUF, but 'acc' is in PSUM"),
])
def test_static_slices_and_psum_on_gpsimd_are_refused(line: str, message: str) -> None:
    src = (".sbuf x float32[128, 512]\n.sbuf y float32[128, 64]\n.psum acc float32[128, 64]\n"
           f"{line}\n")
    with pytest.raises(AsmError, match=message):
        neuronemu.assemble(src, "k.s")


def test_an_offset_past_the_buffer_is_a_located_fault() -> None:
    src = """.sbuf x float32[128, 512]
.sbuf y float32[128, 64]
ctrl.mov r1, 8
vector.tensor_copy_dynamic_src y, x[:, r1*64 : r1*64 + 64]
"""
    with pytest.raises(RuntimeFault, match=r"leaves 'x' at run time \(r1 = 8\)"):
        neuronemu.run(neuronemu.assemble(src, "k.s"))
