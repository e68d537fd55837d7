"""The compiler's schedule for traced NKI kernels (docs/timing.md, "The compiler's schedule"):
on by default, ``schedule="program"`` / NEURONEMU_NKI_SCHEDULE=program for program order;
``nl.no_reorder()`` keeps a block in order; groups of tiles are double-buffered. Kernels
written here from the math; values against numpy (they never depend on the schedule), times
against the engines' cost formulas."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl
from neuronemu import nki
from neuronemu.machine import layout as L

BF16 = ml_dtypes.bfloat16


def blocked_matmul(lhsT, rhs):
    """out[M, N] = lhsT.T @ rhs with K in blocks of 4 x 128: each block's four lhsT tiles and
    four rhs tiles are loaded, then multiplied into one PSUM accumulator."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for kb in nl.sequential_range(K // 512):
        lts, rts = [], []
        for i in range(4):
            rows = slice(kb * 512 + i * 128, kb * 512 + (i + 1) * 128)
            lt = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=lt, src=lhsT[rows, :])
            rt = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=rt, src=rhs[rows, :])
            lts.append(lt)
            rts.append(rt)
        for i in range(4):
            nisa.nc_matmul(dst=acc, stationary=lts[i], moving=rts[i])
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def _inputs():
    rng = np.random.default_rng(3)
    return (rng.normal(size=(4096, 128)).astype(BF16), rng.normal(size=(4096, 512)).astype(BF16))


def test_groups_are_double_buffered_and_values_do_not_change() -> None:
    lhsT, rhs = _inputs()
    program = nki.run(blocked_matmul, lhsT, rhs, schedule="program")
    compiler = nki.run(blocked_matmul, lhsT, rhs)   # the default
    exact = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    for run in (program, compiler):
        # bf16 products are exact in fp32; 4096 fp32 sums
        bound = 4096 * 2.0**-24 * (np.abs(lhsT.astype(np.float64)).T
                                   @ np.abs(rhs.astype(np.float64))) * 1.01
        assert np.all(np.abs(run.outputs - exact) <= bound)
    np.testing.assert_array_equal(program.outputs, compiler.outputs)
    assert ".schedule compiler" in compiler.asm and ".schedule" not in program.asm
    # program reading: a site reuses its home as soon as the last group's tiles are dead, so
    # each block's loads wait for the last block's matmuls; the compiler's: eight homes a site
    decls = [line for line in compiler.asm.splitlines() if line.startswith(".sbuf")]
    assert len(decls) > len([line for line in program.asm.splitlines()
                             if line.startswith(".sbuf")])
    assert compiler.time_ns <= program.time_ns
    for run, overlaps in ((program, False), (compiler, True)):
        t = run.result.timing
        events = t.events[: t.events_recorded]
        dma = [i for i in range(len(events)) if events[i, 1] >= L.DMA_TRACK0]
        matmuls = [i for i in range(len(events)) if events[i, 1] == L.TENSOR_TRACK]
        block1_load = float(t.event_times[dma[8], 0])      # block 1's first load
        block0_first_read = float(t.event_times[matmuls[0], 1])
        block0_last_read = float(t.event_times[matmuls[3], 1])
        if overlaps:   # its own bytes: it loads while block 0 is still multiplied
            assert block1_load < block0_last_read
        else:          # block 0's bytes: it waits for the matmul reading them (WAR)
            assert block1_load >= block0_first_read


def test_the_environment_chooses_the_default(monkeypatch) -> None:
    lhsT, rhs = _inputs()
    monkeypatch.setenv("NEURONEMU_NKI_SCHEDULE", "program")
    assert ".schedule" not in nki.run(blocked_matmul, lhsT, rhs).asm
    monkeypatch.setenv("NEURONEMU_NKI_SCHEDULE", "greedy")
    with pytest.raises(nki.NkiError) as info:
        nki.run(blocked_matmul, lhsT, rhs)
    # located at the caller's line, as every NKI error
    assert f"{__file__}:" in info.value.render()
    assert "NEURONEMU_NKI_SCHEDULE='greedy': the schedules are compiler, program" in \
        info.value.render()


def waits_then_free(x, y, big, ordered):
    """One Vector add that waits for a long load, then an independent Vector multiply."""
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    slab = nl.ndarray(big.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    nisa.dma_copy(dst=slab, src=big)
    c = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    d = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    if ordered:
        with nl.no_reorder():
            nisa.tensor_tensor(dst=c, data1=slab[:, 0:512], data2=a, op=nl.add)
            nisa.tensor_tensor(dst=d, data1=a, data2=b, op=nl.multiply)
    else:
        nisa.tensor_tensor(dst=c, data1=slab[:, 0:512], data2=a, op=nl.add)
        nisa.tensor_tensor(dst=d, data1=a, data2=b, op=nl.multiply)
    nisa.dma_copy(dst=out, src=c)
    nisa.dma_copy(dst=out2, src=d)
    return out, out2


def _vector_spans(run):
    t = run.result.timing
    n = t.events_recorded
    vector = [i for i in range(n) if t.events[i, 1] == 5]   # engine code of vector
    return [tuple(t.event_times[i, :2]) for i in vector]


def test_no_reorder_keeps_the_block_in_program_order() -> None:
    rng = np.random.default_rng(4)
    x, y = (rng.normal(size=(128, 512)).astype(np.float32) for _ in range(2))
    big = rng.normal(size=(128, 16384)).astype(np.float32)
    free = nki.run(waits_then_free, x, y, big, False)
    kept = nki.run(waits_then_free, x, y, big, True)
    (add_f, mul_f), (add_k, mul_k) = _vector_spans(free), _vector_spans(kept)
    assert mul_f[1] <= add_f[0]           # moved into the gap before the waiting add
    assert mul_k[0] == pytest.approx(add_k[1])   # kept behind it
    flags = kept.result.program.instrs[:, L.I_FLAGS]
    assert int(np.count_nonzero(flags & L.ORDERED)) == 2   # the block's two instructions
    for run in (free, kept):
        np.testing.assert_array_equal(run.outputs[0], (x.astype(np.float64)
                                                       + big[:, :512]).astype(np.float32))
        np.testing.assert_array_equal(run.outputs[1], x * y)


def copies(a, n):
    """A PSUM matmul result copied out by nisa.tensor_copy without an engine (the compiler's
    choice), and an int32 tile copied the same way."""
    out = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nout = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=t, moving=t)
    res = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    ni = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ni, src=n)
    nc = nl.ndarray((128, 64), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=nc, src=ni)
    nisa.dma_copy(dst=nout, src=nc)
    return out, nout


def test_a_float_copy_left_to_the_compiler_may_run_on_scalar_an_integer_one_does_not() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, size=(128, 128)).astype(np.float32).astype(BF16)
    n = rng.integers(-2**31, 2**31 - 1, size=(128, 64), dtype=np.int64).astype(np.int32)
    compiler = nki.run(copies, a, n)
    program = nki.run(copies, a, n, schedule="program")
    float_copy = [line for line in compiler.asm.splitlines() if "vector.tensor_copy" in line]
    assert "compiler_engine=true" in float_copy[0] and "compiler_engine" not in float_copy[1]
    assert "compiler_engine" not in program.asm
    exact = a.astype(np.float64).T @ a.astype(np.float64)   # small integers: exact in fp32
    for run in (compiler, program):
        np.testing.assert_array_equal(run.outputs[0].astype(np.float64), exact.astype(BF16))
        np.testing.assert_array_equal(run.outputs[1], n)   # every bit of every int32
    # both engines idle: ScalarE's faster clock takes the PSUM copy
    assert "scalar" in compiler.result.timing.tracks
    assert "scalar" not in program.result.timing.tracks
