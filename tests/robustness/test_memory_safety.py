"""Memory safety: sizes are exact Python ints bounded before any array exists, and the compiled
loop refuses any operand outside its memory, whatever a register holds.

The reproducers are the A-family files of the 2026-11 fuzzing campaign: each once wrapped an int64
size to 0 or a negative number, passed the capacity checks and wrote outside the memory (A1
segfaulted on ``run``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronemu import AsmError, RuntimeFault, assemble, run

# (kernel text, line, column, words the message must contain)
REPRODUCERS = {
    "A1_sbuf_wrap_segv": ((".sbuf t float32[128, 4294967296, 4294967296]\n"
                           "    vector.memset t[:, 3, 0:4], value=1.0\n"),
                          1, 1, ["SBUF overflow", str(4294967296 * 4294967296 * 4)]),
    "A2_sbuf_wrap_run": (".sbuf t float32[128, 4294967296, 4294967296]\n",
                         1, 1, ["SBUF overflow", str(4294967296 * 4294967296 * 4)]),
    "A3_hbm_wrap": (".hbm x float32[4294967296, 4294967296] input\n",
                    1, 1, ["does not fit", str(4294967296 * 4294967296 * 4)]),
    "A4_sbuf_wrap_neg": ((".sbuf big float32[128, 3, 6148914691236517200]\n"
                          ".sbuf v float32[128, 16]\n    vector.memset v, value=2.0\n"),
                         1, 27, ["dimension size 6148914691236517200 is too large"]),
    "A5_free_size": (".sbuf s int32[1, 6018427387904, 4967296]\n    gpsimd.rand_get_state s\n",
                     1, 18, ["dimension size 6018427387904 is too large"]),
    "A6_lower_ops": ((".hbm x float32[128, 4611686018427387904] input\n"
                      ".hbm y float32[128, 512] output\n"
                      "    cc.send x[0:128, 0:512], peer=0\n    cc.recv y[0:128, 0:512], peer=0\n"),
                     1, 21, ["too large"]),
}


@pytest.mark.parametrize("name", sorted(REPRODUCERS))
def test_size_overflow_reproducers_are_located_errors(name):
    text, line, column, words = REPRODUCERS[name]
    with pytest.raises(AsmError) as info:
        assemble(text, filename=f"{name}.s")
    error = info.value
    assert (error.location.line, error.location.column) == (line, column), error.render()
    for word in words:
        assert word in error.message, error.render()


def test_the_segfaulting_reproducer_exits_3_on_run(tmp_path):
    kernel = tmp_path / "a1.s"
    kernel.write_text(REPRODUCERS["A1_sbuf_wrap_segv"][0])
    result = subprocess.run([sys.executable, "-m", "neuronemu", "run", str(kernel)],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 3, result.stderr
    assert "a1.s:1:1: error: SBUF overflow" in result.stderr


@pytest.mark.parametrize("dims, space", [
    ((128, 1 << 32, 1 << 32), "sbuf"),          # 2**64 elements: wrapped to 0 in int64
    ((128, 3, 1 << 62 // 3), "sbuf"),
    ((128, 1 << 21, 1 << 21), "psum"),
    ((1 << 20, 1 << 20, 1 << 20), "hbm"),
])
def test_sizes_are_exact(dims, space):
    """The size in the message is the exact product (a brute-force Python-int reference), so no
    int64 wrap can make a huge tensor look small."""
    shape = ", ".join(map(str, dims))
    role = " input" if space == "hbm" else ""
    with pytest.raises(AsmError) as info:
        assemble(f".{space} t float32[{shape}]{role}\n")
    message = info.value.message
    exact = 4
    for d in (dims if space == "hbm" else dims[1:]):
        exact *= d
    assert str(exact) in message or "too large" in message, message


def test_dimension_bound_is_exact():
    """2**40 passes the dimension bound and meets the HBM capacity check with its exact size;
    one more is refused as a dimension."""
    with pytest.raises(AsmError, match="HBM tensor 'x' \\(1099511627776 bytes\\) does not fit"):
        assemble(".hbm x int8[1, 1099511627776] scratch\n")
    with pytest.raises(AsmError, match="dimension size 1099511627777 is too large"):
        assemble(".hbm x int8[1, 1099511627777] scratch\n")
    program = assemble(".hbm x int8[1, 1073741824] scratch\n")  # 1 GiB: declared, fits
    assert program.tensors["x"].nbytes == 1 << 30


SHIFTED = """
.hbm out float32[128, 64] output init=zeros
.sbuf t float32[128, 64]
    ctrl.mov r0, {value}
    vector.memset t, value=1.0
    vector.memset t[:, r0*4 : r0*4 + 4], value=2.0
    dma.copy out, t, queue=0
"""


@pytest.mark.parametrize("value", [
    16,                       # just past the allocation
    -1,
    1 << 61,                  # r0 * 16 bytes wraps int64 to 0: once passed the window check
    (1 << 62) + (1 << 60),
    -(1 << 63),
    (1 << 63) - 1,
])
def test_register_offsets_never_wrap_into_memory(value):
    program = assemble(SHIFTED.format(value=value), filename="shifted.s")
    with pytest.raises(RuntimeFault) as info:
        run(program)
    assert "leaves 't' at run time" in info.value.message
    assert f"r0 = {value}" in info.value.message
    assert info.value.location.line == 6


def test_register_offset_inside_runs():
    result = run(assemble(SHIFTED.format(value=15)))
    expected = np.ones((128, 64), np.float32)
    expected[:, 60:64] = 2.0
    np.testing.assert_array_equal(result.outputs["out"], expected)


def test_a1_reproducer_file_matches_this_suite():
    """The suite's copy of A1 is the campaign's file (when shared/ is beside the checkout)."""
    path = (Path(__file__).resolve().parents[3] / "shared" / "research"
            / "robustness-repro-2026-11" / "A1_sbuf_wrap_segv.s")
    if not path.exists():
        pytest.skip("shared/ research files are not beside this checkout")
    assert path.read_text() == REPRODUCERS["A1_sbuf_wrap_segv"][0]
