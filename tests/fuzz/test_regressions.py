"""Failures the fuzz suite found outside the known families, each fixed with a located error."""

from __future__ import annotations

import pytest

import neuronemu
from neuronemu.errors import AsmError

# found by tools/fuzz.py --seed 3: a corrupt .neo decoded to this slice; `run` died of SIGSEGV
# because the run-time bounds check of a register-offset tile computed its span in int64
HUGE_STEP = """\
.hbm y float32[256, 512] output
.sbuf buf float32[128, 512]
    vector.memset buf, value=1.0
    dma.copy y[r0 + 128 : r0 + 8936830510563584 : 70368744177665, :], buf
"""


def test_a_register_offset_tile_larger_than_its_tensor_is_an_assembly_error():
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(HUGE_STEP, "k.s")
    error = info.value
    # the assembler's slice check (column 16) now refuses it before the Tile's span check
    # (column 14) would; either is a located refusal
    assert error.location.line == 4 and error.location.column in (14, 16)
    assert ("spans 18302628885633957888 bytes but 'y' holds 524288" in error.message
            or "cannot fit dim 0 of 'y' (size 256)" in error.message)


@pytest.mark.parametrize("operand, fits", [
    ("y[r0 : r0 + 128, :]", True),                  # fits for some r0: checked at run time
    ("y[r0 : r0 + 512 : 4, :]", False),             # 128 rows 4 apart: 1 MiB of a 512 KiB tensor
    ("y[0:128, r0 : r0 + 4 : 2]", True),
    (f"y[0:128, r0 : r0 + {2**40} : {2**39}]", False),  # two columns 2**39 apart
])
def test_register_offset_tiles_must_fit_whatever_the_registers_hold(operand, fits):
    src = "buf" if "0:128," not in operand else "col"
    source = (".hbm y float32[256, 512] output\n.sbuf buf float32[128, 512]\n"
              f".sbuf col float32[128, 2]\n    dma.copy {operand}, {src}\n")
    if fits:
        neuronemu.assemble(source, "k.s")
    else:
        with pytest.raises(AsmError, match="no register value keeps it in bounds|cannot fit dim"):
            neuronemu.assemble(source, "k.s")
