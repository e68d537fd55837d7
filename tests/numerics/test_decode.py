"""bf16 tiles decode to fp32 by a shift (neuronemu.machine.memory.load_f32): the same bits as the
decode table's rule for every one of the 65,536 patterns, NaN payloads and -0.0 included.
Oracle: the integer pattern << 16 (bf16 is the top half of an fp32 word)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import neuronemu
from neuronemu.isa import dtypes

PATTERNS = np.arange(1 << 16, dtype=np.uint32)


def test_the_decode_table_row_is_the_shift() -> None:
    row = dtypes.decode_table()[dtypes.get("bfloat16").code]
    np.testing.assert_array_equal(row.view(np.uint32), PATTERNS << 16)


def test_every_bf16_pattern_reaches_an_fp32_tile_unchanged() -> None:
    src = """.hbm x bfloat16[128, 512] input
.hbm out float32[128, 512] output
.sbuf xb bfloat16[128, 512]
.sbuf xf float32[128, 512]
dma.copy xb, x
vector.tensor_copy xf, xb
dma.copy out, xf
"""
    x = PATTERNS.astype(np.uint16).view(ml_dtypes.bfloat16).reshape(128, 512)
    out = neuronemu.run(neuronemu.assemble(src, "kernel.s"), inputs={"x": x}).outputs["out"]
    np.testing.assert_array_equal(out.view(np.uint32).ravel(), PATTERNS << 16)
