"""Partition broadcast by DMA (docs/dma.md, "Partition broadcast"): a one-partition source row
whose free size equals the destination's is read by every destination partition (partition
stride 0 in the source's access pattern).

Oracles: numpy ``broadcast_to`` of the input values (bit-exact for equal dtypes), ml_dtypes'
bfloat16 rounding for a cast on the way, numpy float32 addition for dma.compute; timing from
the documented DMA formula (tests/dma/test_dma_timing.py): 8 rows per engine, each its own
buffer, charged the destination's bytes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu
from neuronemu import encoding
from neuronemu.errors import AsmError
from neuronemu.machine import layout as L
from neuronemu.timing.explicit import SyncError

BW_TRN2 = 368.0
OVERHEAD = 256.0


def run(src: str, target: str = "trn2", **inputs):
    return neuronemu.run(neuronemu.assemble(src, "bcast.s", target=target), inputs=inputs)


def rng_values(shape, seed=1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def src_row(program, pc: int, arg: int = 1) -> np.ndarray:
    ins = program.instrs[pc]
    return program.ops[ins[L.I_ARGS + 2 * arg + 1]]


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_hbm_row_to_all_partitions_bit_exact(target: str) -> None:
    gamma = rng_values((1, 1024))
    r = run(""".hbm gamma float32[1, 1024] input
.hbm y float32[128, 1024] output
.sbuf g float32[128, 1024]
    dma.copy g, gamma
    dma.copy y, g
""", target, gamma=gamma)
    expected = np.broadcast_to(gamma, (128, 1024))
    assert r.outputs["y"].tobytes() == np.ascontiguousarray(expected).tobytes()
    row = src_row(r.program, 0)
    # the access pattern of the source: 128 logical partitions, both partition steps 0
    assert (row[L.OP_PCOUNT], row[L.OP_PROWSTEP], row[L.OP_PCOLSTEP]) == (128, 0, 0)


def test_sbuf_row_integer_index_and_partial_destination() -> None:
    x = rng_values((128, 512), seed=2)
    r = run(""".hbm x float32[128, 512] input
.hbm y float32[128, 512] output
.hbm z float32[64, 512] output
.sbuf t float32[128, 512]
.sbuf g float32[128, 512]
.sbuf h float32[128, 512]
    dma.copy t, x
    dma.copy g, t[5]
    dma.copy y, g
    dma.copy h[64:128, :], t[7:8, :], queue=1
    dma.copy z, h[64:128, :]
""", x=x)
    np.testing.assert_array_equal(r.outputs["y"], np.broadcast_to(x[5], (128, 512)))
    np.testing.assert_array_equal(r.outputs["z"], np.broadcast_to(x[7], (64, 512)))
    row = src_row(r.program, 1)
    assert (row[L.OP_PSTART], row[L.OP_PCOUNT], row[L.OP_PROWSTEP]) == (5, 128, 0)
    row = src_row(r.program, 3)
    assert (row[L.OP_PSTART], row[L.OP_PCOUNT], row[L.OP_PROWSTEP]) == (7, 64, 0)


def test_cast_on_the_fly_fp32_to_bf16() -> None:
    gamma = rng_values((1, 1024), seed=3) * np.float32(3.7)
    r = run(""".hbm gamma float32[1, 1024] input
.hbm y bfloat16[128, 1024] output
.sbuf g bfloat16[128, 1024]
    dma.copy g, gamma
    dma.copy y, g
""", gamma=gamma)
    expected = np.broadcast_to(gamma.astype(ml_dtypes.bfloat16), (128, 1024))
    assert r.outputs["y"].view(np.uint16).tobytes() == \
        np.ascontiguousarray(expected).view(np.uint16).tobytes()


def test_sliced_and_indexed_rows_of_a_2d_tensor() -> None:
    g2 = rng_values((8, 1024), seed=4)
    r = run(""".hbm gamma float32[8, 1024] input
.hbm a float32[128, 128] output
.hbm b float32[128, 1024] output
.hbm c float32[128, 128] output
.hbm d float32[128, 128] output
.hbm e float32[128, 1024] output
.sbuf ta float32[128, 128]
.sbuf tb float32[128, 1024]
.sbuf tc float32[128, 128]
.sbuf td float32[128, 128]
.sbuf te float32[128, 1024]
    dma.copy ta, gamma[3:4, 128:256]
    dma.copy tb, gamma[6], queue=1
    dma.copy tc, gamma[2, 128:256], queue=2
    dma.copy td, gamma[1, 0:256:2], queue=3
    ctrl.mov r1, 5
    dma.copy te, gamma[r1, :], queue=4
    dma.copy a, ta
    dma.copy b, tb
    dma.copy c, tc
    dma.copy d, td
    dma.copy e, te
""", gamma=g2)
    out = r.outputs
    np.testing.assert_array_equal(out["a"], np.broadcast_to(g2[3, 128:256], (128, 128)))
    np.testing.assert_array_equal(out["b"], np.broadcast_to(g2[6], (128, 1024)))
    np.testing.assert_array_equal(out["c"], np.broadcast_to(g2[2, 128:256], (128, 128)))
    np.testing.assert_array_equal(out["d"], np.broadcast_to(g2[1, 0:256:2], (128, 128)))
    np.testing.assert_array_equal(out["e"], np.broadcast_to(g2[5], (128, 1024)))


def test_same_shape_is_never_a_broadcast() -> None:
    # a [P, 1] column copy stays a column copy; a one-row destination takes a plain row
    x = rng_values((128, 4), seed=5)
    r = run(""".hbm x float32[128, 4] input
.hbm y float32[128, 1] output
.hbm z float32[1, 4] output
.sbuf col float32[128, 1]
.sbuf one float32[1, 4]
    dma.copy col, x[:, 2]
    dma.copy y, col
    dma.copy one, x[9:10, :], queue=1
    dma.copy z, one, queue=1
""", x=x)
    np.testing.assert_array_equal(r.outputs["y"][:, 0], x[:, 2])
    np.testing.assert_array_equal(r.outputs["z"], x[9:10])
    assert not any(v.broadcast for ins in r.program.instructions for v in ins.args.values()
                   if isinstance(v, neuronemu.program.Tile))


def test_dma_compute_adds_a_broadcast_row() -> None:
    x, b = rng_values((128, 256), seed=6), rng_values((1, 256), seed=7)
    r = run(""".hbm x float32[128, 256] input
.hbm b float32[1, 256] input
.hbm y float32[128, 256] output
.sbuf s float32[128, 256]
    dma.compute s, x, b
    dma.copy y, s
""", x=x, b=b)
    np.testing.assert_array_equal(r.outputs["y"], x + b)  # one fp32 add, rounded once


def test_decompress_broadcasts_a_compressed_row() -> None:
    w = rng_values((1, 512), seed=8)
    w[0, ::3] = 0.0
    r = run(""".hbm w float32[1, 512] input compressed
.hbm y float32[128, 512] output
.sbuf t float32[128, 512]
    dma.decompress t, w
    dma.copy y, t
""", w=w)
    np.testing.assert_array_equal(r.outputs["y"], np.broadcast_to(w, (128, 512)))


def _error(src: str) -> AsmError:
    with pytest.raises(AsmError) as info:
        neuronemu.assemble(src, "bad.s")
    return info.value


def test_two_partition_source_is_refused_with_the_rule() -> None:
    e = _error(""".hbm gamma float32[2, 1024] input
.sbuf g float32[128, 1024]
    dma.copy g, gamma
""")
    text = str(e)
    assert "bad.s:3:17: error: shape mismatch: src is [2, 1024] but dst is [128, 1024]" in text
    assert "spans 2 partitions" in text and "broadcast to all 128 partitions" in text


def test_free_size_mismatch_is_refused_with_the_rule() -> None:
    e = _error(""".hbm gamma float32[1, 1024] input
.sbuf g float32[128, 512]
    dma.copy g, gamma
""")
    text = str(e)
    assert "bad.s:3:17: error: shape mismatch: src is [1, 1024] but dst is [128, 512]" in text
    assert "has 1024 elements per partition, not 512" in text


def test_compute_engines_do_not_broadcast_across_partitions() -> None:
    e = _error(""".sbuf t float32[128, 512]
.sbuf g float32[128, 512]
    vector.tensor_copy g, t[0:1, :]
""")
    assert "bad.s:3:27: error: shape mismatch" in str(e)
    assert "broadcast" not in str(e)  # no DMA rule to point at


def test_transpose_and_gather_take_no_broadcast() -> None:
    from neuronemu.isa.table import load_isa

    isa = load_isa()
    broadcasting = {d.name for d in isa.instructions.values()
                    if any(a.broadcast for a in d.args)}
    assert broadcasting == {"dma.copy", "dma.compress", "dma.decompress", "dma.compute",
                            "dma.accumulate"}


def test_encoding_round_trip_keeps_the_broadcast() -> None:
    src = """.hbm gamma float32[8, 1024] input
.hbm y float32[128, 1024] output
.sbuf g float32[128, 1024]
.sbuf h bfloat16[128, 128]
    dma.copy g, gamma[3:4, :]
    dma.copy h, gamma[2, 128:256], queue=1
    dma.copy g[0:64, :], g[100], queue=2
    dma.copy y, g
"""
    program = neuronemu.assemble(src, "bcast.s")
    data = encoding.encode(program)
    text = encoding.disassemble(data)
    again = neuronemu.assemble(text, "disassembled.s")
    assert encoding.encode(again) == data
    np.testing.assert_array_equal(again.ops, program.ops)
    # the binary holds each operand as written; the broadcast follows from the shapes again
    assert "dma.copy g, gamma[3:4, 0:1024]" in text
    assert "dma.copy h, gamma[2, 128:256]" in text
    assert "dma.copy g[0:64, 0:1024], g[100]" in text
    assert [ins.args["src"].broadcast for ins in again.instructions] == [True, True, True, False]


def test_timing_charges_the_destination_bytes() -> None:
    r = run(""".hbm gamma float32[1, 1024] input
.sbuf g float32[128, 1024]
    dma.copy g, gamma
""")
    # 16 engines x 8 rows of 4 KiB, one buffer per row (each row its own descriptor), no wait
    expected = 8 * (4096 + OVERHEAD) / (BW_TRN2 / 16)
    assert r.timing.time_ns == pytest.approx(expected)
    assert r.timing.dma.bytes == 128 * 4096
    full = run(""".hbm x float32[128, 1024] input
.sbuf g float32[128, 1024]
    dma.copy g, x
""")
    assert r.timing.time_ns == pytest.approx(full.timing.time_ns)


def _times(result, pc: int) -> tuple[float, float]:
    rows = [i for i, row in enumerate(result.timing.events) if int(row[0]) == pc]
    start, end = result.timing.event_times[rows[0]][:2]
    return float(start), float(end)


def test_auto_sync_orders_a_write_after_the_broadcast_read_of_its_row() -> None:
    r = run(""".hbm x float32[4, 1024] input
.sbuf s float32[4, 1024]
.sbuf g float32[128, 1024]
    dma.copy s, x
    dma.copy g, s[2], queue=1
    vector.memset s[2:3, :], value=7.0
    gpsimd.memset s[3:4, :], value=8.0
""")
    _, read_end = _times(r, 1)
    write_start, _ = _times(r, 2)
    other_start, _ = _times(r, 3)
    assert write_start >= read_end          # WAR on the source row
    assert other_start < read_end           # a neighbouring row (another engine) does not wait
    # and the broadcast read waited for the write of its row (RAW)
    _, load_end = _times(r, 0)
    read_start, _ = _times(r, 1)
    assert read_start >= load_end
    np.testing.assert_array_equal(r.tiles["g"], np.broadcast_to(r.tensors["x"][2], (128, 1024)))


def test_unwritten_read_sees_only_the_source_row() -> None:
    written = run(""".hbm x float32[1, 256] input
.sbuf s float32[4, 256]
.sbuf g float32[128, 256]
    dma.copy s[1:2, :], x
    dma.copy g, s[1], queue=1
""")
    assert not written.warnings
    unwritten = run(""".hbm x float32[1, 256] input
.sbuf s float32[4, 256]
.sbuf g float32[128, 256]
    dma.copy s[1:2, :], x
    dma.copy g, s[2], queue=1
""")
    assert any("reads 's'" in str(w.message) for w in unwritten.warnings)


def test_explicit_sync_reports_a_race_on_the_source_row() -> None:
    src = """.sync explicit
.hbm x float32[1, 256] input
.sbuf s float32[4, 256]
.sbuf g float32[128, 256]
    dma.copy s[1:2, :], x
    sync.signal q0, sem=0
    sync.wait q1, sem=0, value=1
    dma.copy g, s[1], queue=1
    vector.memset s[1:2, :], value=1.0
"""
    with pytest.raises(SyncError) as info:
        run(src)
    assert "race" in str(info.value)
    # the read touches only row 1: writing row 3 unsynchronised is no race
    r = run(src.replace("vector.memset s[1:2, :]", "vector.memset s[3:4, :]"))
    np.testing.assert_array_equal(r.tiles["g"], np.broadcast_to(r.tensors["x"][0], (128, 256)))


def test_trace_labels_the_broadcast() -> None:
    from neuronemu.timing.trace import chrome_trace

    r = run(""".hbm gamma float32[1, 64] input
.sbuf g float32[128, 64]
    dma.copy g, gamma
""")
    events = [e for e in chrome_trace(r.program, r.timing)["traceEvents"] if e["ph"] == "X"]
    assert events[0]["args"]["broadcast"] == "gamma: 1 row -> 128 partitions"


def test_accumulate_adds_a_broadcast_row_on_trn3() -> None:
    x, b = rng_values((128, 256), seed=9), rng_values((1, 256), seed=10)
    r = run(""".hbm x float32[128, 256] input
.hbm b float32[1, 256] input
.hbm y float32[128, 256] output
.sbuf s float32[128, 256]
    dma.copy s, x
    dma.accumulate s, b, queue=1
    dma.copy y, s
""", "trn3", x=x, b=b)
    np.testing.assert_array_equal(r.outputs["y"], x + b)


def test_compress_writes_a_broadcast_row_into_every_row() -> None:
    row = rng_values((1, 512), seed=12)
    row[0, 1::4] = 0.0
    r = run(""".hbm w float32[64, 512] output compressed
.hbm row float32[1, 512] input
.sbuf t float32[1, 512]
    dma.copy t, row
    dma.compress w, t, queue=1
""", row=row)
    np.testing.assert_array_equal(r.outputs["w"], np.broadcast_to(row, (64, 512)))
