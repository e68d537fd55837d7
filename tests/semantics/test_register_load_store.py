"""ctrl.load / ctrl.store (nki.isa.register_load / register_store): a loop whose bound is read
from an input tensor, and registers written back with the dtype's wrap-around."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.errors import AsmError

LOOP = """
.hbm n int32[1, 1] input
.hbm count int32[1, 1] output
.hbm last int8[1, 1] output
    ctrl.load r1, n[0:1, 0:1]
    ctrl.mov r0, 0
    ctrl.mov r2, 0
loop:
    ctrl.bge r0, r1, end
    ctrl.add r2, r2, 3
    ctrl.add r0, r0, 1
    ctrl.jmp loop
end:
    ctrl.store count[0:1, 0:1], r2
    ctrl.mul r3, r2, 10
    ctrl.store last[0:1, 0:1], r3
"""


@pytest.mark.parametrize("n", [0, 1, 7, 50])
def test_loop_bound_from_a_tensor(n) -> None:
    result = neuronemu.run(neuronemu.assemble(LOOP, "k.s"),
                           inputs={"n": np.array([[n]], dtype=np.int32)})
    assert int(result.outputs["count"][0, 0]) == 3 * n
    # 30 n wrapped to int8 (two's complement), computed by hand with numpy
    assert int(result.outputs["last"][0, 0]) == int(np.array(30 * n).astype(np.int8))
    assert result.instructions["ctrl"] == 6 + 4 * n + 1


def test_negative_values_are_sign_extended() -> None:
    text = (".hbm v int16[1, 1] input\n.hbm out int32[1, 1] output\n"
            "    ctrl.load r0, v[0:1, 0:1]\n    ctrl.sub r0, r0, 1\n"
            "    ctrl.store out[0:1, 0:1], r0\n")
    result = neuronemu.run(neuronemu.assemble(text, "k.s"),
                           inputs={"v": np.array([[-300]], dtype=np.int16)})
    assert int(result.outputs["out"][0, 0]) == -301


@pytest.mark.parametrize("decl, message", [
    (".hbm n int32[1, 2] input", "exactly 1 elements per partition"),
    (".hbm n float32[1, 1] input", "int32"),
])
def test_misuse_is_a_located_error(decl, message) -> None:
    with pytest.raises(AsmError) as err:
        neuronemu.assemble(f"{decl}\n    ctrl.load r1, n\n", "k.s")
    assert message in err.value.message
    assert err.value.location.line == 2
