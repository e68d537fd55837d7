"""Tile versions (neuronemu/nki/_versions.py): under the compiler's schedule a 0.1 kernel's
tile written whole again gets bytes of its own, so the next write need not wait for the last
read. Values against numpy and against a brute-force interpreter of the instructions with
and without the renaming; times against the program-order reading."""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

import neuronemu.nki.neuronxcc.isa as nisa
import neuronemu.nki.neuronxcc.language as nl
from neuronemu import nki as nki_api
from neuronemu.asm.direct import Op
from neuronemu.machine import layout as L
from neuronemu.nki._alloc import Live
from neuronemu.nki._trace import Site, Slot, TileRef
from neuronemu.nki._versions import split_versions


def window_sums(a):
    """out[p, j] = sum of a[p, 4j:4j+4] for 32 windows: one block tile (nl.zeros with a block
    dim) is loaded whole for every window and reduced, as adaptive pooling does."""
    out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    window = nl.zeros((1, nl.par_dim(128), 4), dtype=nl.float32, buffer=nl.sbuf)
    sums = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.static_range(32):
        nisa.dma_copy(src=a[0:128, 4 * j:4 * j + 4], dst=window[0, :, 0:4])
        sums[:, j:j + 1] = nl.sum(window[0], axis=[1])
    nl.store(out, value=sums)
    return out


def _events(run, track_test):
    t = run.result.timing
    events = t.events[: t.events_recorded]
    return [(float(t.event_times[i, 0]), float(t.event_times[i, 1]))
            for i in range(len(events)) if track_test(int(events[i, 1]))]


def test_a_block_written_whole_for_every_window_overlaps_its_loads() -> None:
    a = np.random.default_rng(5).standard_normal((128, 128)).astype(np.float32)
    expect = a.astype(np.float64).reshape(128, 32, 4).sum(axis=2)
    program = nki_api.run(window_sums, a, schedule="program")
    compiler = nki_api.run(window_sums, a)
    for run in (program, compiler):
        np.testing.assert_allclose(run.outputs, expect, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(program.outputs, compiler.outputs)
    # program order: one window buffer; the compiler's: versions on homes of their own
    def windows(run):
        return sum(line.startswith(".sbuf") and "float32[128, 4]" in line
                   for line in run.asm.splitlines())
    assert windows(program) == 1 and windows(compiler) >= 2
    loads = _events(compiler, lambda track: track >= L.DMA_TRACK0)[:32]
    # renamed, window j + 1's load starts before window j's has even finished
    assert loads[2][0] < loads[1][1]
    assert compiler.time_ns < 0.6 * program.time_ns
    # one buffer: each load waits for the reduction that read the last window (WAR)
    p_loads = _events(program, lambda track: track >= L.DMA_TRACK0)[:32]
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(p_loads))

def in_place_chain(a):
    """t = a; t = t * 2 (in place, whole); t written whole again from a; t += 1 by parts."""
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(src=a, dst=t)
    t[...] = nl.multiply(t, 2.0)
    acc[...] = nl.copy(t)
    nisa.dma_copy(src=a, dst=t)
    t[:, 0:32] = nl.add(t[:, 0:32], 1.0)
    acc[...] = nl.add(acc, t)
    nl.store(out, value=acc)
    return out


def test_values_do_not_depend_on_the_versions() -> None:
    a = np.random.default_rng(6).standard_normal((128, 64)).astype(np.float32)
    second = a.copy()
    second[:, 0:32] += np.float32(1.0)
    expect = a * np.float32(2.0) + second   # (float32 throughout, as the engines round)
    for schedule in ("program", "compiler"):
        got = nki_api.run(in_place_chain, a, schedule=schedule).outputs
        np.testing.assert_array_equal(got, expect)


TWICE_02 = """
import neuronemu.nki.isa as nisa
import neuronemu.nki.language as nl

def twice(a):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_copy(dst=s, src=t)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_tensor(dst=s, data1=s, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=s)
    return out
"""


def test_versions_are_made_only_for_the_0_1_dialect_and_the_compilers_schedule(tmp_path) -> None:
    import neuronemu.nki as package

    path = tmp_path / "twice_02.py"   # a module of the 0.2+ dialect
    path.write_text(TWICE_02)
    spec = importlib.util.spec_from_file_location("twice_02", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a = np.ones((128, 64), np.float32)
    made = []
    real = package.split_versions
    package.split_versions = lambda ops, slots: made.append(1) or real(ops, slots)
    try:
        run = nki_api.run(module.twice, a)
        nki_api.run(in_place_chain, a, schedule="program")
        assert made == []
        nki_api.run(in_place_chain, a)
        assert made == [1]
    finally:
        package.split_versions = real
    np.testing.assert_array_equal(run.outputs, 2 * a)


# ------------------------------------------------------------------ brute force
# Straight-line programs over three tiles of 4 elements: whole writes, part writes, in-place
# updates and accumulations, read into an output. Interpreted with one buffer per tile (the
# program as written) and with one buffer per version (after split_versions): every
# instruction must read the same values.

def _interpret(ops):
    """Run ops (mnemonic, operands, keywords) on buffers named by slot; returns what every
    reading instruction read, in order."""
    mem: dict[int, np.ndarray] = {}
    seen = []

    def view(ref):
        buf = mem.setdefault(id(ref.slot), np.zeros(4))
        return buf if ref.index is None else buf[ref.index[0][0]:ref.index[0][0] + ref.index[0][1]]

    for op in ops:
        dst, *srcs = op.operands
        values = [view(s).copy() for s in srcs if type(s) is TileRef]
        if op.mnemonic == "vector.memset":
            view(dst)[:] = op.keywords["value"]
        elif op.mnemonic == "vector.tensor_copy":
            view(dst)[:] = values[0]
        elif op.mnemonic == "vector.tensor_tensor":
            view(dst)[:] = values[0] + values[1]
        elif op.mnemonic == "tensor.matmul":   # accumulate=true adds onto dst
            view(dst)[:] = (view(dst) if op.keywords.get("accumulate") else 0) + values[0]
        seen.append([v.tolist() for v in values] + [view(dst).tolist()])
    return seen


def _random_program(rng, slots):
    site = Site("k.py", 1, "k")
    ops = []
    for _ in range(rng.integers(4, 14)):
        kind = rng.integers(0, 5)
        d = slots[rng.integers(0, 3)]
        s = slots[rng.integers(0, 3)]
        part = (((int(rng.integers(0, 2)) * 2, 2, 1),) if rng.integers(0, 3) == 0 else None)
        dst = TileRef(d, part, None)
        if kind == 0:
            op = Op("vector.memset", (dst,), {"value": float(rng.integers(1, 9))}, site)
        elif kind == 1:
            op = Op("vector.tensor_copy", (dst, TileRef(s, part, None)), {}, site)
        elif kind == 2:
            op = Op("vector.tensor_tensor", (dst, TileRef(s, part, None), TileRef(d, part, None)),
                    {}, site)
        else:
            op = Op("tensor.matmul", (dst, TileRef(s, part, None)),
                    {"accumulate": bool(kind == 4)}, site)
        ops.append(op)
    return ops


@pytest.mark.parametrize("seed", range(40))
def test_renamed_programs_read_what_the_written_ones_read(seed) -> None:
    rng = np.random.default_rng(seed)
    site = Site("k.py", 1, "k")
    slots = []
    for _ in range(3):
        slot = Slot("", "sbuf", "float32", (1, 4), site)
        slot.live = Live(slot, 0, size=16)
        slots.append(slot)
    ops = _random_program(rng, slots)
    before = _interpret(ops)
    all_slots = list(slots)
    made = split_versions(ops, all_slots)
    assert len(all_slots) == 3 + made
    assert _interpret(ops) == before
    # each version's live range covers exactly the instructions naming it
    for slot in all_slots:
        uses = [i for i, op in enumerate(ops)
                if any(type(r) is TileRef and r.slot is slot for r in op.operands)]
        if uses and all(slot is not s for s in slots):
            assert slot.live.start == uses[0] and slot.live.end == uses[-1]
            first = ops[uses[0]]
            assert first.operands[0].slot is slot and first.operands[0].index is None


def fragmenting(a, b, c):
    """t (70.3 KiB a partition) loaded and summed, loaded again (a second version, on bytes
    of its own), then u (97.7 KiB) loaded while that version is still to be read: the two
    versions leave no 97.7 KiB gap in trn2's 224 KiB of SBUF, one buffer for t does."""
    out = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 18000), dtype=nl.float32, buffer=nl.sbuf)
    s = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(src=a, dst=t)
    s[:, 0:1] = nl.sum(t, axis=[1])
    nisa.dma_copy(src=b, dst=t)
    u = nl.ndarray((128, 25000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(src=c, dst=u)
    s[:, 1:2] = nl.sum(t, axis=[1])
    s[:, 2:3] = nl.sum(u, axis=[1])
    nl.store(out, value=s)
    return out


def test_a_kernel_that_fits_only_without_versions_runs_without_them() -> None:
    rng = np.random.default_rng(8)
    a, b = (rng.integers(-4, 5, size=(128, 18000)).astype(np.float32) for _ in range(2))
    c = rng.integers(-4, 5, size=(128, 25000)).astype(np.float32)
    run = nki_api.run(fragmenting, a, b, c, target="trn2")   # (small ints: sums exact)
    np.testing.assert_array_equal(run.outputs, np.stack([a.sum(1), b.sum(1), c.sum(1)], 1))
    assert sum(line.startswith(".sbuf") and "float32[128, 18000]" in line
               for line in run.asm.splitlines()) == 1


def three_then_big(a, c):
    """Three 58.6 KiB tiles of one call site, the last still to be read when a 146.5 KiB tile
    is loaded: on three homes of their own (the compiler's deeper SBUF rings) the live one
    leaves no 146.5 KiB gap in trn2's 224 KiB; on two, it reuses the first's bytes."""
    out = nl.ndarray((128, 5), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 5), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.static_range(3):
        t = nl.ndarray((128, 15000), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(src=a[i], dst=t)
        s[:, i:i + 1] = nl.sum(t, axis=[1])
    big = nl.ndarray((128, 37500), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(src=c, dst=big)
    s[:, 3:4] = nl.sum(t, axis=[1])
    s[:, 4:5] = nl.sum(big, axis=[1])
    nl.store(out, value=s)
    return out


def test_a_kernel_that_fits_only_on_shallower_rings_runs_on_them() -> None:
    rng = np.random.default_rng(9)
    a = rng.integers(-4, 5, size=(3, 128, 15000)).astype(np.float32)
    c = rng.integers(-4, 5, size=(128, 37500)).astype(np.float32)
    run = nki_api.run(three_then_big, a, c, target="trn2")
    sums = [a[0].sum(1), a[1].sum(1), a[2].sum(1), a[2].sum(1), c.sum(1)]
    np.testing.assert_array_equal(run.outputs, np.stack(sums, axis=1))
    assert sum(line.startswith(".sbuf") and "float32[128, 15000]" in line
               for line in run.asm.splitlines()) == 2
