"""Reference copy of the pure-Python ``.sync explicit`` replay (neuronemu/timing/explicit.py before
it was compiled): the oracle of tests/timing/test_explicit_oracle.py, which compares every result
array bit for bit and every race/deadlock message with the compiled replay. Kept verbatim apart
from this docstring, ``SyncError`` (imported so both raise the same class) and one deliberate
change of behaviour (issue 14): memory is tracked per byte, brute force (a last writer and per
track a last reader for every byte of every row), where it used to be per 64-byte block, and a
race names the bytes the two accesses share; and (issue 14 part 1) pipeline latencies as sync mode
auto charges them: a signal fires and a barrier passes once every result its track(s) wrote is
written (an instruction's end + its cost class's latency), without holding the track, and an
instruction touching bytes that an earlier instruction of its own Vector / Scalar / GpSimd track
last wrote (in program order) waits for that result. Do not "fix" it otherwise: it defines the
expected behaviour."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuronemu.exec.core import on_chip_widths
from neuronemu.isa.table import load_isa
from neuronemu.machine import layout as L
from neuronemu.timing.explicit import SyncError


@dataclass
class Replay:
    event_times: np.ndarray   # [n, 3] start, end, cycles
    busy: np.ndarray          # ns per track
    track_free: np.ndarray    # when each track finished


def replay(program, events: np.ndarray, event_times: np.ndarray, clocks: np.ndarray) -> Replay:
    n = len(events)
    ops = program.ops
    instrs = program.instrs
    definitions = program.instructions
    tracks = sorted({int(t) for t in events[:, 1]} - {L.ALL_TRACKS})
    slot = {t: i for i, t in enumerate(tracks)}
    queues: dict[int, list[int]] = {t: [] for t in tracks}
    for e in range(n):
        track = int(events[e, 1])
        for t in tracks if track == L.ALL_TRACKS else (track,):
            queues[t].append(e)  # a barrier sits in every track's stream
    heads = {t: 0 for t in tracks}
    free = {t: 0.0 for t in tracks}
    busy = np.zeros(L.NUM_TRACKS)
    clock = {t: np.zeros(len(tracks), dtype=np.int64) for t in tracks}
    increments: dict[int, list[tuple[float, np.ndarray]]] = {}
    times = event_times.copy()
    memory = _Accesses(program, len(tracks))
    latency = _latency(program, clocks)
    own = _own_deps(program, events, latency)
    written = {t: 0.0 for t in tracks}   # when every result track t wrote so far is written

    def wait_target(e: int):
        """(semaphore, value) of a wait event, as the run resolved them (registers included)."""
        if definitions[int(events[e, 0])].definition.name != "sync.wait":
            return None
        return int(events[e, 2 + 1]), int(events[e, 2 + 2])

    def head(t: int) -> int | None:
        return queues[t][heads[t]] if heads[t] < len(queues[t]) else None

    pe = _PeArray(program, events)

    def finished(t: int) -> float:
        """When everything track t started has finished."""
        return max(free[t], pe.finished()) if t == L.TENSOR_TRACK else free[t]

    remaining = sum(len(q) for q in queues.values())
    while remaining:
        best = None
        for t in tracks:
            e = head(t)
            if e is None:
                continue
            start = free[t]
            if t == L.TENSOR_TRACK and int(events[e, 1]) != L.ALL_TRACKS:
                kind = definitions[int(events[e, 0])].definition
                if kind.engine == "tensor":
                    start = pe.earliest(e, start)
                elif kind.name != "sync.wait":  # a signal reports work that has finished
                    start = finished(t)
            if int(events[e, 1]) == L.ALL_TRACKS:
                if any(head(u) != e for u in tracks):
                    continue  # not everyone has arrived
                start = max(max(finished(u), written[u]) for u in tracks)
            elif definitions[int(events[e, 0])].definition.name == "sync.signal":
                start = max(start, written[t])
            elif own[e] >= 0:
                f = own[e]
                start = max(start, times[f, 1] + latency[int(events[f, 0])])
            target = wait_target(e)
            if target is not None:
                sem, value = target
                done = increments.get(sem, [])
                if len(done) < value:
                    continue
                if value > 0:
                    start = max(start, done[value - 1][0])
            if best is None or start < best[0]:
                best = (start, t, e)
        if best is None:
            raise _deadlock(program, events, queues, heads, increments, wait_target)
        start, t, e = best
        ins = definitions[int(events[e, 0])]
        name = ins.definition.name
        me = slot[t]
        issue = free[t]
        if name == "sync.barrier":
            joined = np.max(np.stack([clock[u] for u in tracks]), axis=0)
            for u in tracks:
                clock[u] = joined.copy()
                free[u] = start
                heads[u] += 1
            times[e, 0] = times[e, 1] = start
            remaining -= len(tracks)
            continue
        if name == "sync.wait":
            sem, value = wait_target(e)
            if value > 0:
                clock[t] = np.maximum(clock[t], increments[sem][value - 1][1])
            end = start
        elif name == "sync.signal":
            if t == L.TENSOR_TRACK:
                issue = finished(t)
            sem = int(events[e, 2 + 1])
            clock[t][me] += 1
            previous = increments.get(sem, [])
            joined = clock[t].copy() if not previous else np.maximum(previous[-1][1], clock[t])
            increments.setdefault(sem, []).append((start, joined))
            end = start
        else:
            clock[t][me] += 1
            duration = float(event_times[e, 1] - event_times[e, 0])
            end = start + duration
            if t == L.TENSOR_TRACK:
                busy[t] += max(0.0, end - max(start, finished(t)))  # union of overlapping matmuls
                pe.place(e, start, end)
            else:
                busy[t] += duration
            written[t] = max(written[t], end + latency[int(events[e, 0])])
            row = instrs[int(events[e, 0])]
            for k in range(row[L.I_NARGS]):
                if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
                    continue
                access = (row[L.I_ACCESS] >> (2 * k)) & 3
                memory.access(ops[row[L.I_ARGS + 2 * k + 1]], int(events[e, 2 + k]), access,
                              me, clock[t], e, int(events[e, 0]), k, events)
        times[e, 0], times[e, 1] = start, end
        tensor_compute = t == L.TENSOR_TRACK and name.startswith("tensor.")
        free[t] = issue if name == "sync.signal" else start if tensor_compute else end
        heads[t] += 1
        remaining -= 1
    track_free = np.zeros(L.NUM_TRACKS)
    for t in tracks:
        track_free[t] = finished(t)
    return Replay(times, busy, track_free)


def _latency(program, clocks) -> list[float]:
    """ns from an instruction's end until its result is written (0 for DMA, cc.*, control)."""
    costs = load_isa().costs
    by_code = {c.code: c for c in costs.values()}
    out = []
    for row in program.instrs:
        cost = by_code[int(row[L.I_COST])]
        if cost.formula in ("free", "dma", "network"):
            out.append(0.0)
        else:
            out.append(cost.latency / clocks[int(row[L.I_TRACK])])
    return out


def _own_deps(program, events, latency) -> list[int]:
    """Per event, the latest event of its own Vector / Scalar / GpSimd track that last wrote
    (in program order) a byte it reads or writes, else -1: brute force, per byte."""
    target = program.target
    sbuf, psum = on_chip_widths(program, compact=True)
    last = [np.full((target.partitions, sbuf), -1, dtype=np.int64),
            np.full((target.partitions, psum), -1, dtype=np.int64),
            np.full((1, max(program.hbm_bytes, 4)), -1, dtype=np.int64)]
    deps = []
    for e in range(len(events)):
        track = int(events[e, 1])
        ins = program.instructions[int(events[e, 0])]
        row = program.instrs[int(events[e, 0])]
        best = -1
        ranges = []
        work = ins.definition.name not in ("sync.wait", "sync.signal", "sync.barrier")
        for k in range(int(row[L.I_NARGS])) if work and track != L.ALL_TRACKS else ():
            if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
                continue
            op = program.ops[row[L.I_ARGS + 2 * k + 1]]
            if op[L.OP_PCOUNT] <= 0 or op[L.OP_SPACE] > L.SPACE_HBM:
                continue
            writes = (int(row[L.I_ACCESS]) >> (2 * k)) & L.ACCESS_WRITE
            for space, r, c0, c1 in _row_ranges(op, int(events[e, 2 + k])):
                ranges.append((space, r, c0, c1, writes))
                for f in np.unique(last[space][r, c0:c1]):
                    f = int(f)
                    if (f > best and int(events[f, 1]) == track and track != L.TENSOR_TRACK
                            and latency[int(events[f, 0])] > 0.0):
                        best = f
        for space, r, c0, c1, writes in ranges:
            if writes:
                last[space][r, c0:c1] = e
        deps.append(best)
    return deps


class _Accesses:
    """Last write and per-track last reads of every byte, with their vector-clock stamps,
    instruction indices and events, for the race check."""

    def __init__(self, program, ntracks: int) -> None:
        target = program.target
        hbm_bytes = max(program.hbm_bytes, 4)
        sbuf, psum = on_chip_widths(program, compact=True)   # tiles stay in their buffers
        shapes = [(target.partitions, sbuf), (target.partitions, psum), (1, hbm_bytes)]
        self.program = program
        self.write_track, self.write_stamp, self.write_pc, self.write_arg = [], [], [], []
        self.read_stamp, self.read_pc, self.read_arg = [], [], []
        self.write_event, self.read_event = [], []
        for rows, nbytes in shapes:
            self.write_track.append(np.full((rows, nbytes), -1, dtype=np.int64))
            self.write_stamp.append(np.zeros((rows, nbytes), dtype=np.int64))
            self.write_pc.append(np.zeros((rows, nbytes), dtype=np.int64))
            self.write_arg.append(np.zeros((rows, nbytes), dtype=np.int64))
            self.write_event.append(np.zeros((rows, nbytes), dtype=np.int64))
            self.read_stamp.append(np.zeros((rows, nbytes, ntracks), dtype=np.int64))
            self.read_pc.append(np.zeros((rows, nbytes, ntracks), dtype=np.int64))
            self.read_arg.append(np.zeros((rows, nbytes, ntracks), dtype=np.int64))
            self.read_event.append(np.zeros((rows, nbytes, ntracks), dtype=np.int64))

    def access(self, op, offset, access, me, clock, event, pc, arg, events) -> None:
        for space, r, c0, c1 in _row_ranges(op, offset):
            self._check(space, r, c0, c1, access, me, clock, pc, arg, op, offset, events)
            if access & L.ACCESS_WRITE:
                self.write_track[space][r, c0:c1] = me
                self.write_stamp[space][r, c0:c1] = clock[me]
                self.write_pc[space][r, c0:c1] = pc
                self.write_arg[space][r, c0:c1] = arg
                self.write_event[space][r, c0:c1] = event
            if access & L.ACCESS_READ:
                self.read_stamp[space][r, c0:c1, me] = clock[me]
                self.read_pc[space][r, c0:c1, me] = pc
                self.read_arg[space][r, c0:c1, me] = arg
                self.read_event[space][r, c0:c1, me] = event

    def _check(self, space, r, c0, c1, access, me, clock, pc, arg, op, offset, events) -> None:
        writer = self.write_track[space][r, c0:c1]
        stamp = self.write_stamp[space][r, c0:c1]
        other = (writer >= 0) & (writer != me)
        unordered = other & (stamp > clock[np.maximum(writer, 0)])
        if unordered.any():
            b = c0 + int(np.argmax(unordered))
            other_pc, other_arg = int(self.write_pc[space][r, b]), int(self.write_arg[space][r, b])
            theirs = self._range(other_pc, other_arg, int(self.write_event[space][r, b]), events,
                                 space, r, b)
            raise self._race(space, r, (max(c0, theirs[0]), min(c1, theirs[1])), pc, arg,
                             other_pc, other_arg, "writes" if access & L.ACCESS_WRITE else
                             "reads", "writes")
        if access & L.ACCESS_WRITE:
            reads = self.read_stamp[space][r, c0:c1]  # [bytes, tracks]
            late = reads > clock[None, :]
            late[:, me] = False
            if late.any():
                bi, t = np.unravel_index(int(np.argmax(late)), late.shape)
                b = c0 + int(bi)
                other_pc, other_arg = int(self.read_pc[space][r, b, t]), int(
                    self.read_arg[space][r, b, t])
                theirs = self._range(other_pc, other_arg, int(self.read_event[space][r, b, t]),
                                     events, space, r, b)
                raise self._race(space, r, (max(c0, theirs[0]), min(c1, theirs[1])), pc, arg,
                                 other_pc, other_arg, "writes", "reads")

    def _range(self, pc, arg, event, events, space, row, byte) -> tuple[int, int]:
        """The bytes of row ``row`` an earlier access (pc's argument arg in that event) covers
        around ``byte``."""
        row_of = self.program.instrs[pc]
        op = self.program.ops[row_of[L.I_ARGS + 2 * arg + 1]]
        for s, r, c0, c1 in _row_ranges(op, int(events[event, 2 + arg])):
            if s == space and r == row and c0 <= byte < c1:
                return c0, c1
        raise AssertionError("the recorded access does not cover the byte")

    def _race(self, space, row, shared, pc, arg, other_pc, other_arg, verb, other_verb):
        ins = self.program.instructions[pc]
        other = self.program.instructions[other_pc]
        a = ins.definition.args[arg].name
        b = other.definition.args[other_arg].name
        symbol = ins.args[a].symbol
        where = ("HBM" if space == L.SPACE_HBM else
                 f"{('SBUF', 'PSUM')[space]} partition {row}")
        lo, hi = shared
        declared = self.program.allocations.get(symbol) or self.program.tensors[symbol]
        base = declared.offset
        line = other.location
        overlap = (f"overlap: {where}, bytes {lo}..{hi - 1} (bytes {lo - base}..{hi - 1 - base} "
                   f"of '{symbol}')")
        first, second = sorted([(other.location.line, other, b, other_verb),
                                (ins.location.line, ins, a, verb)], key=lambda x: x[0])
        return SyncError(
            f"race on '{symbol}': {first[1].definition.name} (line {first[0]}) {first[3]} it as "
            f"{first[2]} and {second[1].definition.name} (line {second[0]}) {second[3]} it as "
            f"{second[2]}, and no semaphore orders the two (add sync.signal / sync.wait)",
            ins.args[a].location,
            (overlap, f"other access: {line}: {line.source.line(line.line).strip()}"))


def _deadlock(program, events, queues, heads, increments, wait_target) -> SyncError:
    from neuronemu.timing.report import track_names

    names = track_names()
    blocked = []
    first = None
    for t, queue in queues.items():
        if heads[t] >= len(queue):
            continue
        e = queue[heads[t]]
        ins = program.instructions[int(events[e, 0])]
        target = wait_target(e)
        if target is None:  # a barrier some other track never reaches
            blocked.append(f"{names[t]} waits at the barrier on line {ins.location.line}")
        else:
            sem, value = target
            have = len(increments.get(sem, []))
            blocked.append(f"{names[t]} waits at line {ins.location.line} for semaphore {sem} "
                           f">= {value} (it reached {have}, and nothing left can signal it)")
        first = first or ins.location
    return SyncError("deadlock: no track can proceed", first, tuple(blocked))


def _row_ranges(op, offset: int):
    """(space, memory row, first byte, end byte) of each partition an operand touches, its
    dynamic byte offset resolved (the event's)."""
    space = int(op[L.OP_SPACE])
    for p in range(int(op[L.OP_PCOUNT])):
        r = int(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP])
        c = offset + p * int(op[L.OP_PCOLSTEP])
        yield space, r, c, c + int(op[L.OP_EXTENT])


class _PeArray:
    """The Tensor engine in the replay: it issues in order, and an instruction starts once the
    32 x 32 PE blocks it occupies are free (tiled matmuls on disjoint blocks overlap) and once
    every in-flight instruction that shares bytes with it has finished (the engine's own
    ordering, which auto mode gets from its block table)."""

    def __init__(self, program, events: np.ndarray) -> None:
        self.instrs = program.instrs
        self.ops = program.ops
        self.events = events
        self.free = np.zeros(16)
        self.pending: list[tuple[float, int]] = []   # (end, event) still possibly in flight
        self.footprints: dict[int, tuple[set, set]] = {}

    def blocks(self, e: int) -> np.ndarray:
        mask = (int(self.instrs[int(self.events[e, 0])][L.I_FLAGS]) >> L.PE_BLOCKS_SHIFT) & 0xFFFF
        return np.array([mask == 0 or (mask >> b) & 1 for b in range(16)], dtype=bool)

    def footprint(self, e: int) -> tuple[list, list]:
        """(read, written) byte ranges of event e: (space, row, first, end); kept while e may
        still be in flight."""
        if e in self.footprints:
            return self.footprints[e]
        row = self.instrs[int(self.events[e, 0])]
        reads: list = []
        writes: list = []
        for k in range(int(row[L.I_NARGS])):
            if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
                continue
            access = (int(row[L.I_ACCESS]) >> (2 * k)) & 3
            blocks = writes if access & L.ACCESS_WRITE else reads
            blocks.extend(_row_ranges(self.ops[row[L.I_ARGS + 2 * k + 1]],
                                      int(self.events[e, 2 + k])))
        self.footprints[e] = reads, writes
        return reads, writes

    def earliest(self, e: int, issue: float) -> float:
        start = max(issue, float(self.free[self.blocks(e)].max()))
        self.pending = [(end, other) for end, other in self.pending if end > issue]
        self.footprints = {other: self.footprints[other] for _, other in self.pending
                           if other in self.footprints}
        if self.pending:
            reads, writes = self.footprint(e)
            for end, other in self.pending:
                if end > start:
                    r, w = self.footprint(other)
                    if _meets(w, reads + writes) or _meets(r, writes):
                        start = end
        return start

    def place(self, e: int, start: float, end: float) -> None:
        self.free[self.blocks(e)] = end
        self.pending.append((end, e))

    def finished(self) -> float:
        return float(self.free.max())


def _meets(a: list, b: list) -> bool:
    """Whether two lists of (space, row, first, end) byte ranges share a byte."""
    return any(s == t and r == q and c0 < d1 and d0 < c1
               for s, r, c0, c1 in a for t, q, d0, d1 in b)
