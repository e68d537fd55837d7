"""The compiled ``.sync explicit`` replay against its pure-Python predecessor (explicit_reference.py,
kept verbatim): on random small kernels and on every bundled explicit kernel, both replay the same
run's events, and every result array must be equal bit for bit, or both must raise a SyncError
with the same rendered message (same race or deadlock, same lines, same bytes).

The random kernels mix four engines, three DMA queues, the Tensor engine (tiled and untiled
matmuls sharing a PSUM tile), SBUF / PSUM / HBM tiles at partition offsets and any element's
column offset (so tiles meet and miss each other by a few bytes), semaphore signals and waits (some for counts reached only later,
some never) and barriers: races, deadlocks and clean runs all occur (the test checks it does).
"""

from __future__ import annotations

import random
from pathlib import Path

import explicit_reference
import numpy as np
import pytest

import neuronemu
from neuronemu.exec.interpreter import EVENT_TIMES_WIDTH, EVENT_WIDTH
from neuronemu.machine import layout as L
from neuronemu.timing import explicit
from neuronemu.timing.explicit import SyncError

ROOT = Path(__file__).resolve().parents[2]

HEADER = """.sync explicit
.hbm x float32[64, 64] input
.hbm y float32[64, 64] output
.sbuf a float32[64, 64]
.sbuf b float32[64, 64]
.sbuf c float32[64, 64]
.sbuf ws bfloat16[64, 64]
.sbuf wm bfloat16[64, 64]
.psum p float32[64, 64]
"""
SBUF = ("a", "b", "c")
TRACKS = {"vector": "vector", "scalar": "scalar", "gpsimd": "gpsimd", "tensor": "tensor",
          "q0": "dma", "q1": "dma", "q2": "dma"}


def _region(rng: random.Random, rows: int, cols: int, height: int = 64) -> str:
    """A [rows, cols] window of a [height, 64] tile at a random partition and column offset."""
    r = rng.randrange(0, height - rows + 1, 16)
    col = rng.randrange(0, 64 - cols + 1)
    return f"{r}:{r + rows}, {col}:{col + cols}"


def _work(rng: random.Random) -> tuple[str, str]:
    """(track, instruction) of one random datapath instruction."""
    rows, cols = rng.choice((16, 32, 64)), rng.choice((8, 16, 32, 64))
    t = lambda: f"{rng.choice(SBUF)}[{_region(rng, rows, cols)}]"
    kind = rng.randrange(9)
    if kind == 0:
        return "vector", f"vector.memset {t()}, value=1.0"
    if kind == 1:
        return "gpsimd", f"gpsimd.memset {t()}, value=2.0"
    if kind == 2:   # sometimes in place, or one tile read twice (two arguments on one block)
        src = t()
        other, dst = rng.choice((t(), src)), rng.choice((t(), src))
        return "vector", f"vector.tensor_tensor {dst}, {src}, {other}, op=add"
    if kind == 3:
        src = t()
        return "scalar", f"scalar.activation {rng.choice((t(), src))}, {src}, func=relu"
    if kind == 4:
        q = rng.choice(("q0", "q1", "q2"))
        return q, f"dma.copy {t()}, x[{_region(rng, rows, cols)}], queue={q[1]}"
    if kind == 5:
        q = rng.choice(("q0", "q1", "q2"))
        src = rng.choice((t(), f"x[{_region(rng, rows, cols)}]"))
        return q, f"dma.copy y[{_region(rng, rows, cols)}], {src}, queue={q[1]}"
    if kind == 6:
        engine = rng.choice(("vector", "gpsimd"))
        dst = rng.choice(("ws", "wm"))
        return engine, f"{engine}.tensor_copy {dst}[0:32, :], {rng.choice(SBUF)}[32:64, :]"
    if kind == 7:
        dst = rng.choice(SBUF)   # only VectorE reads PSUM
        return "vector", f"vector.tensor_copy {dst}[{_region(rng, 64, cols)}], p[:, 0:{cols}]"
    tile = rng.randrange(3)
    if tile == 0:
        return "tensor", "tensor.matmul p, ws, wm"
    half = rng.randrange(2) * 32
    return "tensor", (f"tensor.matmul p[:, {half}:{half + 32}], ws[{half}:{half + 32}, :], "
                      f"wm[{half}:{half + 32}, {half}:{half + 32}], tile_position=[{half}, "
                      f"{2 * half}], tile_size=[32, 64]")


def random_kernel(seed: int) -> str:
    """Each track signals its own semaphore after an instruction; before one, a track waits for
    the latest signal of other tracks. How careful a kernel is (how often it signals and waits)
    varies, from fully ordered (no race) to barely; a few waits are for counts reached only
    later or never (deadlocks), a few instructions are barriers."""
    rng = random.Random(seed)
    names = list(TRACKS)
    counts = [0] * len(names)      # signals of each track's semaphore so far, in program order
    careful = rng.choice((1.0, 1.0, 0.9, 0.7, rng.random()))
    lines = []
    for _ in range(rng.randrange(4, 24)):
        if rng.random() < 0.04:
            lines.append("sync.barrier")
            continue
        track, ins = _work(rng)
        for sem, other in enumerate(names):
            if other != track and counts[sem] and rng.random() < careful:
                lines.append(f"sync.wait {track}, sem={sem}, value={counts[sem]}")
        if rng.random() < 0.04:
            sem = rng.randrange(len(names))
            later = counts[sem] + rng.choice((1, 1, 9))   # 9: never, a deadlock
            lines.append(f"sync.wait {track}, sem={sem}, value={later}")
        lines.append(ins)
        if rng.random() < careful:
            sem = names.index(track)
            counts[sem] += 1
            lines.append(f"sync.signal {track}, sem={sem}")
    return HEADER + "".join(f"    {line}\n" for line in lines)


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except SyncError as error:
        return "error", error.render(), error.exit_code
    return "ok", [(a.dtype.str, a.shape, a.tobytes())
                  for a in (r.event_times, r.busy, r.track_free)]


class _Both:
    """Stands in for explicit.replay during a run: replays the events with both versions,
    records both outcomes, and hands the run the compiled one's."""

    def __init__(self, compiled) -> None:
        self.compiled = compiled
        self.pairs: list[tuple] = []

    def __call__(self, program, events, event_times, clocks):
        args = (program, events.copy(), event_times.copy(), clocks)
        want = _outcome(explicit_reference.replay, *args)
        got = _outcome(self.compiled, *args)
        self.pairs.append((want, got))
        return self.compiled(program, events, event_times, clocks)


def _run_both(monkeypatch, program) -> list[tuple]:
    both = _Both(explicit.replay)
    monkeypatch.setattr(explicit, "replay", both)
    try:
        neuronemu.run(program)
    except SyncError:
        pass
    monkeypatch.undo()
    assert len(both.pairs) == 1
    return both.pairs


def test_random_kernels_replay_as_before(monkeypatch) -> None:
    kinds = {"ok": 0, "race": 0, "deadlock": 0}
    for seed in range(240):
        program = neuronemu.assemble(random_kernel(seed), filename=f"random{seed}.s")
        for want, got in _run_both(monkeypatch, program):
            assert got == want, f"seed {seed}:\n{random_kernel(seed)}\n{want[:2]}\n{got[:2]}"
            kind = "ok" if want[0] == "ok" else "race" if "race on" in want[1] else "deadlock"
            kinds[kind] += 1
    # the generator must keep producing all three outcomes (or this test stops testing them)
    assert min(kinds.values()) >= 40, kinds


@pytest.mark.parametrize("path", sorted(
    p for p in [*(ROOT / "programs").rglob("*.s"), *(ROOT / "tests" / "programs").glob("*.s")]
    if ".sync explicit" in p.read_text()), ids=lambda p: p.stem)
def test_bundled_explicit_kernels_replay_as_before(monkeypatch, path: Path) -> None:
    program = neuronemu.assemble_file(path)
    (want, got), = _run_both(monkeypatch, program)
    assert got == want


def test_no_events() -> None:
    program = neuronemu.assemble(".sync explicit\n.sbuf a float32[4, 4]\n    ctrl.mov r0, 0\n")
    events = np.zeros((0, EVENT_WIDTH), dtype=np.int64)
    times = np.zeros((0, EVENT_TIMES_WIDTH))
    clocks = np.ones(L.NUM_TRACKS)
    assert _outcome(explicit.replay, program, events, times, clocks) == _outcome(
        explicit_reference.replay, program, events, times, clocks)
