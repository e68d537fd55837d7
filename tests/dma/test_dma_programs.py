"""The bundled DMA programs: the weight-streaming layer computes W^T x (float64 reference) with
and without compression, compression saves bytes and time, and the queue kernel interleaves
queues on the shared engines."""

from __future__ import annotations

import numpy as np
import pytest

import neuronemu
from neuronemu.programs import bundled_programs

PROGRAMS = bundled_programs()


def run(name: str, target: str = "trn2"):
    return neuronemu.run(neuronemu.assemble_file(PROGRAMS[name], target=target))


@pytest.fixture(scope="module")
def streams():
    return run("dma/weight_stream"), run("dma/weight_stream_compressed")


def test_weight_stream_computes_the_layer(streams) -> None:
    plain, compressed = streams
    x = np.asarray(plain.tensors["x"], dtype=np.float64)          # [128, 16, 64]: row 128k + p
    w = np.asarray(plain.tensors["w"], dtype=np.float64)          # [2048, 1024]
    activations = x.transpose(1, 0, 2).reshape(2048, 64)
    expected = (w.T @ activations).reshape(8, 128, 64).transpose(1, 0, 2)  # y[p, m, :]
    # bf16 inputs are exact in fp32; 2048 fp32 products summed: gamma(2048) * sum |terms|
    bound = 2048 * 2.0**-24 * (np.abs(w).T @ np.abs(activations)).reshape(8, 128, 64) \
        .transpose(1, 0, 2) * 1.01
    assert np.all(np.abs(plain.outputs["y"] - expected) <= bound)
    # the weights are ReLU-sparse: about half exact zeros
    assert 0.4 < np.mean(w == 0) < 0.6
    # same inputs, same math, bit-identical outputs
    np.testing.assert_array_equal(plain.tensors["w"], compressed.tensors["w"])
    np.testing.assert_array_equal(plain.outputs["y"], compressed.outputs["y"])


def test_compression_saves_bytes_and_time(streams) -> None:
    plain, compressed = streams
    assert plain.timing.dma.bytes == compressed.timing.dma.bytes
    assert plain.timing.dma.compressed_bytes == plain.timing.dma.bytes
    w_bits = np.asarray(compressed.tensors["w"]).view(np.uint16)
    blocks = 2048 * 1024 // 64
    weight_wire = blocks * 8 + np.count_nonzero(w_bits) * 2
    other = plain.timing.dma.bytes - 2048 * 1024 * 2  # x in, y out: not compressed
    assert compressed.timing.dma.compressed_bytes == weight_wire + other
    assert compressed.timing.dma.compression_ratio > 1.5
    # fewer wire bytes, but the compressed rows (~1.2 KiB of 2 KiB) fall under the DMA row
    # floor (docs/dma.md): the time saved is what the rows above it save
    assert compressed.timing.time_ns < 0.95 * plain.timing.time_ns


def test_queue_kernel_interleaves_queues() -> None:
    result = run("dma/queues")
    x = np.asarray(result.tensors["x"], dtype=np.float64)
    np.testing.assert_array_equal(result.outputs["y"], (2 * x).astype(np.float32))
    timing = result.timing
    assert set(timing.dma.queues) == {f"q{i}" for i in range(8)}
    # bandwidth-bound: the engines are busy most of the run, above 80% of the core's peak
    assert timing.dma.engine_utilisation > 0.9
    assert timing.dma.achieved_gbps > 0.8 * 368
    # transfers of different queues overlap in time
    dma = [(t[0], t[1], int(e[1])) for e, t in zip(timing.events, timing.event_times,
                                                   strict=True) if e[1] >= 8]
    overlapping = {(a[2], b[2]) for a in dma for b in dma
                   if a[2] != b[2] and a[0] < b[1] and b[0] < a[1]}
    assert len(overlapping) >= 8
