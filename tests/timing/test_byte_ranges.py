"""Dependencies and races are tracked on exact byte ranges (issue 14, part 1): accesses to
disjoint bytes never wait for or race with each other, accesses to shared bytes always do.

The reproducers of the issue are regression tests; the property tests compare both sync modes
with a brute-force model that keeps a last write and a last read per byte (numpy arrays, one entry
per byte of every row) on random kernels: buffers of random dtypes and odd sizes (so they are
packed at 4-byte, not 64-byte, boundaries), slices at random partitions and columns, with steps.

What "the bytes an operand touches" means, in both the engine and this oracle: in each partition
row, from its first byte to one past its last (a stepped slice covers the gaps between its
elements too; docs/timing.md)."""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neuronemu
from neuronemu.cli import main
from neuronemu.isa.resources import isa_dir
from neuronemu.timing.explicit import SyncError

ISSUE_SBUF = """.sync explicit
.hbm c float32[128, 8] output
.hbm d float32[128, 4096] output
.sbuf s float32[128, 8]          # 32 bytes per partition
.sbuf {pad}t float32[128, 4096]  # starts at byte 32: same 64-byte block as s
    vector.memset t, value=1.0
    sync.signal vector, sem=0
    gpsimd.memset s, value=2.0
    sync.signal gpsimd, sem=1
    sync.wait q0, sem=1, value=1
    dma.copy c, s, queue=0
    sync.wait q1, sem=0, value=1
    dma.copy d, t, queue=1
"""

ISSUE_HBM = """.sync {mode}
.hbm y float32[128, 200] output
.hbm z float32[128, 100] output
.sbuf a float32[128, 128]
.sbuf b float32[128, 128]
    vector.memset a, value=1.0
    sync.signal vector, sem=0
    gpsimd.memset b, value=2.0
    sync.signal gpsimd, sem=1
    sync.wait q0, sem=0, value=1
    dma.copy y[:, 0:100], a[:, 0:100], queue=0
    sync.wait q1, sem=1, value=1
    dma.copy {second}, b[:, 0:100], queue=1
"""


def _run(source: str, **kwargs) -> neuronemu.Result:
    return neuronemu.run(neuronemu.assemble(source, filename="k.s"), **kwargs)


def test_issue_reproducer_sbuf_neighbours_do_not_race(tmp_path) -> None:
    path = tmp_path / "k.s"
    path.write_text(ISSUE_SBUF.format(pad=""))
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 0, result.output
    # no delay: the same times as with t moved to a 64-byte block of its own
    shared = _run(ISSUE_SBUF.format(pad=""))
    apart = _run(ISSUE_SBUF.format(pad="pad float32[128, 8]\n.sbuf "))
    assert shared.program.allocations["t"].offset == 32
    assert apart.program.allocations["t"].offset == 64
    assert np.array_equal(shared.timing.event_times, apart.timing.event_times)
    assert shared.timing.time_ns == apart.timing.time_ns


@pytest.mark.parametrize("mode", ["explicit", "auto"])
def test_issue_reproducer_two_queues_write_halves_of_one_hbm_row(tmp_path, mode: str) -> None:
    path = tmp_path / "k.s"
    path.write_text(ISSUE_HBM.format(mode=mode, second="y[:, 100:200]"))
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 0, result.output
    # no delay: the same times as when the second queue writes a tensor of its own
    halves = _run(ISSUE_HBM.format(mode=mode, second="y[:, 100:200]"))
    apart = _run(ISSUE_HBM.format(mode=mode, second="z"))
    assert np.array_equal(halves.timing.event_times[:, :2], apart.timing.event_times[:, :2])
    assert (halves.outputs["y"][:, :100] == 1.0).all() and (halves.outputs["y"][:, 100:] == 2.0).all()


def test_one_shared_element_is_a_race_and_the_report_names_its_bytes() -> None:
    source = ISSUE_HBM.format(mode="explicit", second="y[:, 99:199]")
    with pytest.raises(SyncError) as info:
        _run(source)
    text = info.value.render()
    assert "race on 'y': dma.copy (line 11) writes it as dst and dma.copy (line 13) writes it " \
           "as dst" in text
    # y[0, 99], float32: bytes 396..399 of y (which is the first HBM tensor, at offset 0)
    assert "overlap: HBM, bytes 396..399 (bytes 396..399 of 'y')" in text


def test_race_report_names_the_buffer_the_bytes_belong_to() -> None:
    source = ISSUE_SBUF.format(pad="").replace("gpsimd.memset s, value=2.0",
                                               "gpsimd.memset t[:, 0:1], value=2.0")
    with pytest.raises(SyncError) as info:
        _run(source)
    text = info.value.render()
    assert "race on 't'" in text
    assert "overlap: SBUF partition 0, bytes 32..35 (bytes 0..3 of 't')" in text


AUTO_COLUMN = """.hbm w float32[128, 512] input
.hbm out float32[128, 1] output
.sbuf {first}
.sbuf {second}
    dma.copy wt, w, queue=0
    vector.memset col, value=0.0
    dma.copy out, col, queue=1
"""


def test_auto_a_statistics_column_next_to_a_weight_buffer_does_not_wait() -> None:
    """col and wt share a 64-byte block of every partition; the column's work does not wait for
    the weight load, as when col lives in a block of its own."""
    col, wt = "col float32[128, 1]", "wt float32[128, 512]"
    source = AUTO_COLUMN
    packed = _run(source.format(first=col, second=wt))
    assert packed.program.allocations["wt"].offset == 4
    apart = _run(source.format(first=col, second="pad float32[128, 15]\n.sbuf " + wt))
    assert apart.program.allocations["wt"].offset == 64
    assert np.array_equal(packed.timing.event_times[:, :2], apart.timing.event_times[:, :2])
    load_end = packed.timing.event_times[0, 1]
    assert packed.timing.event_times[1, 0] == 0.0           # the memset does not wait
    assert packed.timing.event_times[2, 0] < load_end        # its store starts meanwhile


def test_auto_shared_bytes_still_wait() -> None:
    source = """.hbm w float32[128, 512] input
.sbuf col float32[128, 1]
.sbuf wt float32[128, 512]
    dma.copy wt, w, queue=0
    vector.memset wt[:, 0:1], value=0.0
    vector.memset col, value=0.0
"""
    t = _run(source).timing.event_times
    assert t[1, 0] == t[0, 1]   # WAW on wt's first element: after the load
    assert t[2, 0] == t[1, 1]   # col: only after the vector engine is free


# ---------------------------------------------------------------- property tests, both modes

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float8_e4m3": 1}
TRACK_OF = {"vector": "vector", "gpsimd": "gpsimd", "scalar": "scalar"}


@st.composite
def kernels(draw):
    """(declarations, instructions, buffers): random buffers and 3-9 random instructions, each
    (track, text, [(buffer, access, partition start, partitions, first column, step, count)])."""
    dtypes = st.sampled_from(sorted(ITEMSIZE))
    buffers = {}
    for name in ("a", "b", "c"):
        buffers[name] = ("sbuf", draw(dtypes), 128, draw(st.integers(1, 23)))
    for name in ("x", "y"):
        buffers[name] = ("hbm", draw(dtypes), draw(st.integers(4, 24)), draw(st.integers(1, 23)))
    decls = "".join(f".sbuf {n} {d}[{r}, {w}]\n" if s == "sbuf" else
                    f".hbm {n} {d}[{r}, {w}] input\n" for n, (s, d, r, w) in buffers.items())

    def region(names, parts, count, access):
        name = draw(st.sampled_from([n for n in names if buffers[n][2] >= parts
                                     and buffers[n][3] >= count]))
        _, _, rows, width = buffers[name]
        p0 = draw(st.integers(0, rows - parts))
        step = draw(st.integers(1, max(1, (width - 1) // max(count - 1, 1))))
        c0 = draw(st.integers(0, width - 1 - (count - 1) * step))
        text = f"{name}[{p0}:{p0 + parts}, {c0}:{c0 + (count - 1) * step + 1}:{step}]"
        return text, (name, access, p0, parts, c0, step, count)

    program = []
    for i in range(draw(st.integers(3, 9))):
        parts = draw(st.integers(1, 4))
        count = draw(st.integers(1, 23))
        if not any(b[2] >= parts and b[3] >= count for b in buffers.values() if b[0] == "sbuf"):
            count = 1
        kind = draw(st.sampled_from(["memset", "copy", "activation", "load", "store"]))
        sbuf = ("a", "b", "c")
        if kind in ("load", "store") and not any(
                b[2] >= parts and b[3] >= count for b in buffers.values() if b[0] == "hbm"):
            kind = "copy"
        if kind == "memset":
            engine = draw(st.sampled_from(["vector", "gpsimd"]))
            dst, d = region(sbuf, parts, count, "w")
            program.append((engine, f"{engine}.memset {dst}, value={i}.0", [d]))
        elif kind in ("copy", "activation"):
            dst, d = region(sbuf, parts, count, "w")
            src, s = region(sbuf, parts, count, "r")
            if kind == "copy":
                engine = draw(st.sampled_from(["vector", "gpsimd"]))
                program.append((engine, f"{engine}.tensor_copy {dst}, {src}", [d, s]))
            else:
                program.append(("scalar", f"scalar.activation {dst}, {src}, func=copy", [d, s]))
        else:
            queue = draw(st.integers(0, 2))
            hbm, h = region(("x", "y"), parts, count, "r" if kind == "load" else "w")
            chip, c = region(sbuf, parts, count, "w" if kind == "load" else "r")
            dst, src = (chip, hbm) if kind == "load" else (hbm, chip)
            program.append((f"q{queue}", f"dma.copy {dst}, {src}, queue={queue}",
                            [c, h] if kind == "load" else [h, c]))
    return decls, program, buffers


def _footprint(program, buffers, operand) -> list[tuple[int, int, int, int]]:
    """(space, row, first byte, end byte) of each partition row of an operand, worked out from
    the declarations (and where the assembler placed each buffer) alone."""
    name, _, p0, parts, c0, step, count = operand
    space, dtype, _, width = buffers[name]
    size = ITEMSIZE[dtype]
    hull = ((count - 1) * step + 1) * size
    if space == "sbuf":
        base = program.allocations[name].offset + c0 * size
        return [(0, p0 + p, base, base + hull) for p in range(parts)]
    base = program.tensors[name].offset + c0 * size
    return [(2, 0, base + (p0 + p) * width * size, base + (p0 + p) * width * size + hull)
            for p in range(parts)]


def _tables(program):
    sbuf = max(a.offset + a.bytes_per_partition for a in program.allocations.values())
    return {0: np.zeros((128, sbuf)), 2: np.zeros((1, program.hbm_bytes))}


_COSTS = tomllib.loads((isa_dir() / "costs.toml").read_text())
_TARGETS = tomllib.loads((isa_dir() / "targets.toml").read_text())


def _latency_ns(program, instruction) -> float:
    """When an engine instruction's result is readable after it ends: its cost class's latency
    (engine cycles) at the target's clock of that engine; DMA transfers have none."""
    engine = instruction.definition.engine
    if engine == "dma":
        return 0.0
    cycles = _COSTS[instruction.definition.cost_class].get("latency", 0)
    return cycles / _TARGETS[program.target.name]["clock_ghz"][engine]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_auto_mode_waits_exactly_for_shared_bytes(kernel) -> None:
    """Every instruction starts when its track is free and the last write (and, for what it
    writes, the last read) of each byte it touches has ended, a write being readable only after
    its engine's pipeline latency: the per-byte model, fed the run's own end times and the
    latencies of isa/costs.toml, predicts every start time exactly."""
    decls, instrs, buffers = kernel
    source = decls + "".join(f"    {text}\n" for _, text, _ in instrs)
    result = _run(source)
    program = result.program
    times = result.timing.event_times
    assert len(times) == len(instrs)
    writes, reads = _tables(program), _tables(program)
    track_free: dict[str, float] = {}
    for i, (track, _, operands) in enumerate(instrs):
        ready = track_free.get(track, 0.0)
        for operand in operands:
            for space, row, lo, hi in _footprint(program, buffers, operand):
                ready = max(ready, writes[space][row, lo:hi].max())
                if operand[1] == "w":
                    ready = max(ready, reads[space][row, lo:hi].max())
        assert times[i, 0] == ready, f"instruction {i}: {instrs[i][1]}\n{source}"
        end = times[i, 1]
        readable = end + _latency_ns(program, program.instructions[i])
        for operand in operands:
            for space, row, lo, hi in _footprint(program, buffers, operand):
                if operand[1] == "w":
                    writes[space][row, lo:hi] = readable
                else:
                    reads[space][row, lo:hi] = np.maximum(reads[space][row, lo:hi], end)
        track_free[track] = end


def _conflicts(program, buffers, a, b) -> set[tuple[int, int, int]]:
    """The bytes (space, row, byte) two instructions both touch, one of them writing them."""
    found = set()
    for x in a:
        for y in b:
            if "w" not in (x[1], y[1]):
                continue
            for s, r, lo, hi in _footprint(program, buffers, x):
                for t, q, lo2, hi2 in _footprint(program, buffers, y):
                    if s == t and r == q:
                        found.update((s, r, c) for c in range(max(lo, lo2), min(hi, hi2)))
    return found


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels())
def test_explicit_mode_races_exactly_on_shared_bytes(kernel) -> None:
    """With no semaphores every two instructions on different tracks are unordered: the replay
    reports a race if and only if two of them share a byte one writes; the race it reports is
    such a pair, and the bytes it names are bytes both touch."""
    decls, instrs, buffers = kernel
    source = ".sync explicit\n" + decls + "".join(f"    {text}\n" for _, text, _ in instrs)
    program = neuronemu.assemble(source, filename="k.s")
    try:
        neuronemu.run(program)
        error = None
    except SyncError as e:
        error = e
    racing = {(i, j) for i in range(len(instrs)) for j in range(i + 1, len(instrs))
              if instrs[i][0] != instrs[j][0]
              and _conflicts(program, buffers, instrs[i][2], instrs[j][2])}
    if error is None:
        assert not racing, source
        return
    text = error.render()
    assert racing, text
    lines = sorted(int(n) for n in re.findall(r"\(line (\d+)\)", text.splitlines()[0]))
    first = program.instructions[0].location.line
    pair = (lines[0] - first, lines[1] - first)
    assert pair in racing, text
    where, lo, hi = re.search(r"overlap: (HBM|SBUF partition \d+), bytes (\d+)\.\.(\d+)",
                              text).groups()
    space, row = (2, 0) if where == "HBM" else (0, int(where.split()[-1]))
    shared = _conflicts(program, buffers, instrs[pair[0]][2], instrs[pair[1]][2])
    assert {(space, row, c) for c in range(int(lo), int(hi) + 1)} <= shared, text


def test_blocked_windows_give_the_blocks_of_each_window_listed_once():
    """The 64-byte blocks of register-offset operands too dense to list place by place: merged
    windows give exactly the points each window gives alone (a brute-force union), so a kernel
    with several such operands over one large tensor sorts its blocks once."""
    from neuronemu.timing.regions import FALLBACK_BYTES, _block_points, _sorted_unique

    rng = np.random.default_rng(14)
    for _ in range(500):
        windows = []
        for _ in range(int(rng.integers(1, 6))):
            lo = int(rng.integers(0, 5000))
            windows.append((lo, lo + int(rng.integers(0, 3000))))
        union = set()
        for lo, hi in windows:
            union |= {lo, hi}
            union |= set(range(lo - lo % FALLBACK_BYTES, hi + FALLBACK_BYTES, FALLBACK_BYTES))
        got = _sorted_unique(np.concatenate(_block_points(windows)))
        assert got.tolist() == sorted(union)

