"""On-chip placement and aliases (docs/language.md "Placement and aliases"): ``at=BYTES``
places a buffer, ``alias=OTHER`` gives OTHER's bytes another shape and dtype. Oracles: the
offsets computed by hand, numpy ``.view`` of the same bytes for dtype views, and for timing the
same kernel written against the aliased buffer itself (an alias must be tracked exactly as its
bytes) versus against a buffer of its own (which must not wait)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu import encoding
from neuronemu.timing.explicit import SyncError


def _asm(source: str) -> neuronemu.program.Program:
    return neuronemu.assemble(source, filename="k.s")


def test_at_places_and_automatic_placement_steps_over_it() -> None:
    program = _asm("""
.sbuf a float32[128, 16]          # 64 bytes: 0..63
.sbuf p float32[128, 32] at=96    # 96..223
.sbuf b float32[128, 16]          # would be 64..127: overlaps p, so after it: 224
.sbuf c float32[128, 4]           # 288
.psum acc float32[128, 512] at=4096
.psum s float32[128, 8]           # 0
""")
    offsets = {a.name: a.offset for a in program.allocations.values()}
    assert offsets == {"a": 0, "p": 96, "b": 224, "c": 288, "acc": 4096, "s": 0}


def test_alias_shares_bytes_under_another_shape_and_dtype() -> None:
    """An fp32 tile seen as int32 bit patterns and as [128, 2, 64] bf16 halves."""
    rng = np.random.default_rng(3)
    halves = rng.normal(size=(128, 128)).astype(ml_dtypes.bfloat16)
    x = halves.view(np.float32)
    result = neuronemu.run(_asm("""
.hbm x float32[128, 64] input
.hbm bits int32[128, 64] output
.hbm pairs bfloat16[128, 2, 64] output
.hbm back float32[128, 64] output
.sbuf t float32[128, 64]
.sbuf v int32[128, 64] alias=t
.sbuf h bfloat16[128, 2, 64] alias=t
.sbuf w float32[128, 32] alias=t at=128    # the second half of t's row
dma.copy t, x
dma.copy bits, v
dma.copy pairs, h
vector.tensor_copy w, t[:, 0:32]             # writes t[:, 32:64] through w
dma.copy back, t
"""), inputs={"x": x})
    assert result.program.allocations["w"].offset == 128
    np.testing.assert_array_equal(result.outputs["bits"], x.view(np.int32))
    np.testing.assert_array_equal(result.outputs["pairs"].view(np.uint16),
                                  halves.view(np.uint16).reshape(128, 2, 64))
    want = x.copy()
    want[:, 32:] = x[:, :32]
    np.testing.assert_array_equal(result.outputs["back"], want)
    assert not result.warnings   # t's bytes were all written (through x): no unwritten read


RAW = """.sync {mode}
.hbm x float32[128, 2048] input
.hbm y float32[128, 2048] output
.sbuf t float32[128, 2048]
.sbuf {decl}
.sbuf u float32[128, 2048]
    dma.copy t, x, queue=0
    vector.tensor_copy u, {read}
    dma.copy y, u, queue=1
"""


def test_auto_mode_waits_for_a_write_through_the_aliased_bytes() -> None:
    x = np.arange(128 * 2048, dtype=np.float32).reshape(128, 2048)
    alias = neuronemu.run(_asm(RAW.format(mode="auto", decl="v float32[128, 2048] alias=t",
                                          read="v")), inputs={"x": x})
    direct = neuronemu.run(_asm(RAW.format(mode="auto", decl="v float32[128, 2048]",
                                           read="t")), inputs={"x": x})
    apart = neuronemu.run(_asm(RAW.format(mode="auto", decl="v float32[128, 2048]",
                                          read="v")), inputs={"x": x})
    np.testing.assert_array_equal(alias.outputs["y"], x)
    # the read of v waits for the DMA into t exactly as a read of t does
    assert np.array_equal(alias.timing.event_times, direct.timing.event_times)
    assert alias.timing.time_ns == direct.timing.time_ns
    # and a buffer of its own does not wait (so the comparison above can fail)
    assert apart.timing.time_ns < alias.timing.time_ns
    times = alias.timing.event_times
    assert times[1, 0] >= times[0, 1]   # vector starts after the DMA ends


RACE = """.sync explicit
.hbm x float32[128, 2048] input
.sbuf t float32[128, 2048]
.sbuf {decl}
.sbuf u float32[128, 2048]
    dma.copy t, x, queue=0
    vector.tensor_copy u, v
"""


def test_explicit_mode_reports_a_race_through_an_alias() -> None:
    with pytest.raises(SyncError) as info:
        neuronemu.run(_asm(RACE.format(decl="v float32[128, 2048] alias=t")))
    text = info.value.render()
    assert "dma.copy (line 6) writes it as dst and vector.tensor_copy (line 7) reads it" in text
    # the same kernel on a buffer of its own: no race (so the check above can fail)
    neuronemu.run(_asm(RACE.format(decl="v float32[128, 2048]")))


def test_placement_and_aliases_round_trip_through_the_binary_encoding() -> None:
    program = _asm("""
.hbm x float32[128, 64] input
.sbuf t float32[128, 64]
.sbuf p float32[128, 64] at=1024
.sbuf v int32[128, 32] alias=t at=128
.sbuf h bfloat16[64, 64] alias=v
.sbuf q float32[128, 8]
.psum acc float32[128, 512] at=6144
dma.copy t, x
""")
    data = encoding.encode(program)
    text = encoding.disassemble(data)
    assert ".sbuf p float32[128, 64] at=1024\n" in text
    assert ".sbuf v int32[128, 32] at=128 alias=t\n" in text
    assert ".sbuf h bfloat16[64, 64] alias=v\n" in text
    assert ".psum acc float32[128, 512] at=6144\n" in text
    again = _asm(text)
    assert encoding.encode(again) == data
    assert {a.name: a.offset for a in again.allocations.values()} == \
        {"t": 0, "p": 1024, "v": 128, "h": 128, "q": 256, "acc": 6144}


def test_the_language_doc_example_runs() -> None:
    """docs/language.md "Placement and aliases": its example, against numpy views."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "language.md").read_text()
    block = next(b for b in re.findall(r"```asm\n(.*?)```", text, re.DOTALL)
                 if "alias=t at=128" in b)
    x = np.random.default_rng(5).normal(size=(128, 64)).astype(np.float32)
    result = neuronemu.run(_asm(block), inputs={"x": x})
    np.testing.assert_array_equal(result.outputs["bits"], x.view(np.int32))
    np.testing.assert_array_equal(result.outputs["halves"].view(np.uint16),
                                  x.view(np.uint16).reshape(128, 2, 64))
    program = result.program
    assert (program.allocations["pool"].offset, program.allocations["acc"].offset) == (8192, 2048)
