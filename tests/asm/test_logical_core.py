"""`.target NAME cores=N`: a logical core of N cores' SBUF and PSUM side by side (the NKI front
end places SPMD programs that each fill a core in one), one core's engines and limits."""

from __future__ import annotations

import numpy as np
import pytest

from neuronemu import api, encoding
from neuronemu.errors import AsmError

TWO_PSUMS = """\
.target trn2 cores=2
.psum p uint8[128, 32768] at=0
.psum hi float32[128, 512] alias=p at=30720
.sbuf s float32[128, 512]
.hbm out float32[128, 512] output
vector.memset s, value=2.5
vector.tensor_copy hi, s
vector.tensor_copy s, hi
dma.copy out, s
"""


def test_two_cores_psum_holds_a_tile_past_one_cores_bytes():
    program = api.assemble(TWO_PSUMS)
    assert (program.target.psum_partition_bytes, program.target.cores) == (32768, 2)
    assert program.target.sbuf_partition_bytes == 2 * 229376
    np.testing.assert_array_equal(api.run(program).outputs["out"],
                                  np.full((128, 512), 2.5, np.float32))


def test_one_core_is_the_target_itself():
    with pytest.raises(AsmError, match="PSUM has 16384 bytes per partition"):
        api.assemble(TWO_PSUMS.replace(" cores=2", ""))
    with pytest.raises(AsmError, match="PSUM has 16384 bytes per partition"):
        api.assemble(TWO_PSUMS.replace(" cores=2", " cores=1"))


@pytest.mark.parametrize("option, message", [
    ("cores=9", "cores=9: a logical core joins 1 to 8 cores' on-chip memories"),
    ("cores=0", "cores=0: a logical core joins 1 to 8"),
    ("lanes=2", "unknown option 'lanes' for .target"),
])
def test_a_bad_cores_option_is_located(option, message):
    with pytest.raises(AsmError, match=message) as e:
        api.assemble(TWO_PSUMS.replace("cores=2", option))
    assert e.value.location.line == 1


def test_the_binary_encoding_keeps_the_cores():
    program = api.assemble(TWO_PSUMS)
    text = encoding.disassemble(encoding.encode(program))
    assert ".target trn2 cores=2" in text
    assert api.assemble(text).target.cores == 2


def test_a_matmul_keeps_one_cores_psum_limit():
    """Per-instruction limits stay one core's: a trn3 matmul may not write more PSUM than one
    core has because the logical core has two."""
    src = """\
.target trn3 cores=2
.sbuf a bfloat16[128, 128]
.sbuf b bfloat16[128, 8192]
.psum d float32[128, 8192]
vector.memset a, value=0
vector.memset b, value=0
tensor.matmul d, a, b
"""
    with pytest.raises(AsmError, match="allows at most 4096"):
        api.assemble(src)
