"""Sync mode ``explicit``: replay the run's instruction events with only the ordering the hardware
gives, and check that ordering is enough.

Each track (engine or DMA queue) runs its own events in order. Across tracks the only ordering is
barriers (``sync.barrier``: every track waits for all the others) and semaphores: ``sync.signal T, sem=s`` increments s when track T reaches it, ``sync.wait T, sem=s,
value=v`` holds track T until s >= v. The replay is a discrete-event simulation: repeatedly start
the ready head event with the earliest start time. If heads remain and none is ready, the waits can
never be satisfied: a deadlock, reported with every blocked track's wait.

Races: every track carries a vector clock, a signal publishes the signaller's clock and a wait
joins the clocks of the increments it waited for (happens-before, Lamport / Mattern). Memory is
cut into segments at every byte where a recorded access begins or ends (per space; so a segment
is a byte range every access covers whole or not at all), and every segment of every row
remembers its last write and, per track, its last read; an access that conflicts (write/any or
read/write) with one that does not happen-before it is a race, reported with both source lines
and the bytes the two share. Functional results come from program order, which is one
legal interleaving; when no race is reported every legal interleaving computes the same values.

Pipeline latencies are those of sync mode auto (isa/costs.toml ``latency``): a signal fires and a
barrier passes once the results its track(s) wrote are written, and an instruction waits for the
results of its own Vector / Scalar / GpSimd track that it touches. In a multi-rank run the ranks'
replays run together (``Replayer`` with ``couple``; neuronemu/multichip/spmd.py): a replay stops
at each cc.* event, whose end the driver works out from the other ranks' replayed times.

The replay itself is compiled (``_setup`` and ``_run``); Python only prepares the per-instruction
kinds and the segment tables, and turns the indices a race or deadlock returns into the located
message. The engine rules (PE blocks, result latencies, busy time) are sync mode auto's own
(neuronemu/timing/engines.py); tests/timing/test_explicit_vs_auto.py checks that a kernel whose
semaphores encode its memory dependencies replays to auto's schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuronemu.compiled.jit import jit
from neuronemu.errors import RuntimeFault
from neuronemu.machine import layout as L
from neuronemu.timing.costs import cost_table
from neuronemu.timing.engines import (
    PE_BLOCKS,
    busy_union,
    pe_blocks,
    pe_commit,
    pe_finished,
    pe_ready,
    result_latency,
)
from neuronemu.timing.regions import segments


class SyncError(RuntimeFault):
    """A race or a deadlock under explicit synchronisation."""

    exit_code = 5


@dataclass
class Replay:
    event_times: np.ndarray   # [n, 3] start, end, cycles
    busy: np.ndarray          # ns per track
    track_free: np.ndarray    # when each track finished


# kinds[pc]: what the replay does with an instruction (low bits), and two Tensor flags
K_WORK, K_WAIT, K_SIGNAL, K_BARRIER = 0, 1, 2, 3
KIND_MASK = 3
F_TENSOR_ENGINE = 4   # issues on the PE array (definition.engine == "tensor")
F_TENSOR_OP = 8       # a tensor.* instruction: the track may issue the next one at its start
F_CC = 16             # a cc.* instruction timed by the multi-rank driver (Replayer couple=True)
_SYNC_KINDS = {"wait": K_WAIT, "signal": K_SIGNAL, "barrier": K_BARRIER}   # isa/sync.toml sync

# what _run returns
OK, RACE_WRITE, RACE_READ, DEADLOCK, PAUSED, STALLED = 0, 1, 2, 3, 4, 5
# info[] of a race: the conflicting segment, the access that found it, the earlier one's author
R_SPACE, R_ROW, R_SEGMENT, R_EVENT, R_ARG, R_ACCESS, R_OTHER_SLOT, R_OTHER_STAMP = range(8)
INFO_WIDTH = 8

# A segment's last write is one int64 key: (writer's stamp << WRITER_BITS) | (writer's slot + 1),
# 0 = never written (so the tables can come from calloc). Slots are < NUM_TRACKS <= 31.
WRITER_BITS = 5
_NEVER = np.iinfo(np.int64).max


def replay(program, events: np.ndarray, event_times: np.ndarray, clocks: np.ndarray) -> Replay:
    """Replay one run on its own: a cc.* instruction keeps the duration the run gave it (a
    multi-rank run couples its ranks' replays instead: neuronemu/multichip/spmd.py)."""
    replayer = Replayer(program, events, event_times, clocks)
    status = replayer.advance()
    assert status == OK, status
    return replayer.result()


def replay_cores(program, cores: list, couple=None) -> list[Replay]:
    """The explicit-sync replay of a finished run, the one entry for a single core
    (exec/session.py) and for the ranks of a multi-chip run (multichip/spmd.py): one Replay per
    core, in the order given. ``cores`` hold the run's events (``events``, ``event_times``,
    ``regs``, ``clocks``, ``rank``: exec.core.Core). Each core is replayed on its own, a cc.*
    instruction keeping the duration the run gave it, unless ``couple`` is given: then every
    core's Replayer stops at its cc.* events and ``couple(replayers)`` drives them together
    (the multi-chip driver works out those events' ends from the other ranks' replayed times)."""
    if couple is not None:
        recorded = [_recorded(program, core) for core in cores]
        replayers = [Replayer(program, events, times, core.clocks, couple=True)
                     for core, (events, times) in zip(cores, recorded, strict=True)]
        couple(replayers)
        return [replayer.result() for replayer in replayers]
    out = []
    for core in cores:
        events, times = _recorded(program, core)
        try:
            out.append(replay(program, events, times, core.clocks))
        except RuntimeFault as e:
            if len(cores) > 1:
                e.message = f"rank {core.rank}: {e.message}"
            raise
    return out


def _recorded(program, core) -> tuple[np.ndarray, np.ndarray]:
    """A core's trace events, all of them: the replay needs every instruction."""
    n = int(core.regs[L.REG_EVENTS])
    events, times = core.log.recorded(core.regs)
    if n > len(events):
        from neuronemu.timing.events import EVENT_TIMES_WIDTH, EVENT_WIDTH

        each = 8 * (EVENT_WIDTH + EVENT_TIMES_WIDTH)
        raise RuntimeFault(f"sync mode explicit replays every timed instruction from the "
                           f"trace, but the run executed {n:,} of them and the trace "
                           f"holds {len(events):,}; raise it with --max-trace-events N (API: "
                           f"max_trace_events=; {each} bytes of memory each), or leave it "
                           f"unset: every event is then kept",
                           program.directive_location("sync"))
    return events, times


class Replayer:
    """The replay of one rank's events, which can stop at its cc.* instructions.

    With ``couple`` a cc.* event is not timed from the run's record: when the replay gets to
    it (it is the ready event with the earliest start), ``advance`` returns PAUSED with the
    event in ``paused`` and its start in ``paused_start``; the caller sets its end with
    ``resolve(e, end)`` and advances again, which carries on exactly as if the end had been
    known. ``resolve(e, PENDING)`` lets the replay go on with the event begun but its end not
    known yet (its track holds); ``advance`` then returns STALLED when nothing else can start,
    and ``finish_pending(e, end)`` supplies the end later."""

    def __init__(self, program, events: np.ndarray, event_times: np.ndarray,
                 clocks: np.ndarray, couple: bool = False) -> None:
        self.program = program
        self.events = events = np.ascontiguousarray(events)
        track_col = events[:, 1]
        present = np.zeros(L.NUM_TRACKS, dtype=bool)
        present[track_col] = True
        present[L.ALL_TRACKS] = False   # a barrier sits in every track's stream, it is no track
        self.tracks = np.flatnonzero(present).astype(np.int64)
        assert len(self.tracks) < 1 << WRITER_BITS
        self.event_times = np.ascontiguousarray(event_times)
        self.times = event_times.copy()
        self.busy = np.zeros(L.NUM_TRACKS)
        self.track_free = np.zeros(L.NUM_TRACKS)
        self.info = np.zeros(INFO_WIDTH, dtype=np.int64)
        self.kinds = _kinds(program, couple)
        self.latency = latencies(program, clocks)
        self.rows = np.array([program.target.partitions] * 2 + [1])
        self.breaks = _event_breaks(events, program.instrs, program.ops, self.kinds)
        self.own_dep = _own_deps(events, program.instrs, program.ops, self.kinds,
                                 self.latency, self.breaks, self.rows)
        self.cc_end = np.full(len(events), np.nan)
        self.state = _setup(events, program.instrs, program.ops, self.kinds, self.tracks,
                            self.rows, self.breaks)
        self.paused = -1
        self.paused_start = 0.0

    def advance(self) -> int:
        """Run until the end (OK), a cc.* event whose end is unknown (PAUSED) or, with events
        pending, until nothing can start (STALLED). Races and deadlocks raise SyncError."""
        program = self.program
        status = _run(self.events, self.event_times, program.instrs, program.ops, self.kinds,
                      self.latency, self.own_dep, self.tracks, self.breaks, self.times,
                      self.busy, self.track_free, self.info, self.cc_end, self.state)
        if status == PAUSED:
            self.paused = int(self.state[-1][S_PAUSED])
            self.paused_start = float(self.times[self.paused, 0])
        elif status == DEADLOCK:
            st = self.state
            raise _deadlock(program, self.events, self.tracks, st[ST_HEADS], st[ST_QUEUE],
                            st[ST_QSTART], st[ST_SEMS], st[ST_SEM_COUNT])
        elif status not in (OK, STALLED):
            raise _race_error(program, self.events, self.tracks, self.state[ST_STAMP_OF],
                              status, self.info, self.breaks)
        return status

    def resolve(self, e: int, end: float) -> None:
        """The end of the cc.* event e (PENDING: not known yet, the replay may go on)."""
        self.cc_end[e] = end

    def finish_pending(self, e: int, end: float) -> None:
        """The end of a cc.* event the replay began as pending; its track goes on from there."""
        st = self.state
        slot = int(st[ST_SLOT_OF][self.events[e, 1]])
        track = int(self.events[e, 1])
        self.times[e, 1] = end
        st[ST_FREE][slot] = end
        st[ST_DONE][slot] = max(st[ST_DONE][slot], end)
        self.busy[track] += end - self.times[e, 0]
        st[-1][S_PENDING] -= 1

    def result(self) -> Replay:
        return Replay(self.times, self.busy, self.track_free)


PENDING = np.inf


def latencies(program, clocks: np.ndarray) -> np.ndarray:
    """Per instruction, ns from the end of its issue interval until its result is written (the
    pipeline latency of isa/costs.toml, as sync mode auto charges it): a sync.signal after it
    fires then, and a reader on its own track waits for it. DMA and cc.* complete when their
    data is there (0)."""
    from neuronemu.isa.table import load_isa

    costs = cost_table(load_isa())
    out = np.zeros(max(len(program.instrs), 1))
    for pc, row in enumerate(program.instrs):   # set-up, in Python: no compile
        out[pc] = result_latency.py_func(costs[row[L.I_COST]], clocks[row[L.I_TRACK]])
    return out


def _kinds(program, couple: bool = False) -> np.ndarray:
    kinds = np.zeros(max(len(program.instructions), 1), dtype=np.int64)
    for pc, ins in enumerate(program.instructions):
        d = ins.definition
        kinds[pc] = (_SYNC_KINDS.get(d.sync, K_WORK)
                     | (F_TENSOR_ENGINE if d.engine == "tensor" else 0)
                     | (F_TENSOR_OP if d.name.startswith("tensor.") else 0)
                     | (F_CC if couple and d.driver is not None else 0))
    return kinds


# ------------------------------------------------------------------------------- compiled part
#
# Float times follow the Python version operation for operation: ``max(a, b)`` there keeps a
# unless b > a, so here every max is written that way, and sums run in the same order.

# the replay's state (_setup), by position
(ST_SLOT_OF, ST_W_KEY, ST_R_STAMP, ST_READERS, ST_READER_OF, ST_QSTART, ST_QUEUE, ST_SEMS,
 ST_SEM_OF, ST_INC_BASE, ST_INC_TIME, ST_INC_CLOCK, ST_SEM_COUNT, ST_HEADS, ST_FREE, ST_DONE,
 ST_CLOCK, ST_STAMP_OF, ST_THR, ST_PE_FREE, ST_PEND_END, ST_PEND_EV, ST_SCALARS) = range(23)
# its scalars (the last array)
S_NPEND, S_REMAINING, S_PAUSED, S_PENDING = range(4)


@jit
def _setup(events, instrs, ops, kinds, tracks, rows, breaks):
    """The replay's tables and per-track state, before any event ran."""
    n = events.shape[0]
    ntr = tracks.shape[0]
    slot_of = np.full(L.NUM_TRACKS, -1, dtype=np.int64)
    for i in range(ntr):
        slot_of[tracks[i]] = i
    w_key, r_stamp, readers, reader_of = _tables(events, instrs, ops, kinds, slot_of, ntr, rows,
                                                 breaks)

    # each track's stream: its own events and every barrier, in program order
    qstart = np.zeros(ntr + 1, dtype=np.int64)
    for e in range(n):
        tr = events[e, 1]
        if tr == L.ALL_TRACKS:
            for i in range(ntr):
                qstart[i + 1] += 1
        else:
            qstart[slot_of[tr] + 1] += 1
    for i in range(ntr):
        qstart[i + 1] += qstart[i]
    queue = np.empty(qstart[ntr], dtype=np.int64)
    fill = qstart[:ntr].copy()
    for e in range(n):
        tr = events[e, 1]
        if tr == L.ALL_TRACKS:
            for i in range(ntr):
                queue[fill[i]] = e
                fill[i] += 1
        else:
            i = slot_of[tr]
            queue[fill[i]] = e
            fill[i] += 1

    # semaphores, numbered compactly; each signal appends (time, joined clock) to its list
    nsync = 0
    for e in range(n):
        kind = kinds[events[e, 0]] & KIND_MASK
        if kind == K_WAIT or kind == K_SIGNAL:
            nsync += 1
    named = np.empty(nsync, dtype=np.int64)
    nsync = 0
    for e in range(n):
        kind = kinds[events[e, 0]] & KIND_MASK
        if kind == K_WAIT or kind == K_SIGNAL:
            named[nsync] = events[e, 3]
            nsync += 1
    sems = np.unique(named)
    sem_of = np.full(n, -1, dtype=np.int64)
    inc_base = np.zeros(sems.shape[0] + 1, dtype=np.int64)
    for e in range(n):
        kind = kinds[events[e, 0]] & KIND_MASK
        if kind == K_WAIT or kind == K_SIGNAL:
            s = np.searchsorted(sems, events[e, 3])
            sem_of[e] = s
            if kind == K_SIGNAL:
                inc_base[s + 1] += 1
    for s in range(sems.shape[0]):
        inc_base[s + 1] += inc_base[s]
    inc_time = np.zeros(inc_base[sems.shape[0]])
    inc_clock = np.zeros((inc_base[sems.shape[0]], ntr), dtype=np.int64)
    sem_count = np.zeros(sems.shape[0], dtype=np.int64)

    heads = np.zeros(ntr, dtype=np.int64)
    free = np.zeros(ntr)
    done = np.zeros(ntr)   # when every result a track's instructions wrote so far is written
    clock = np.zeros((ntr, ntr), dtype=np.int64)
    stamp_of = np.zeros(n, dtype=np.int64)
    thr = np.empty(1 << WRITER_BITS, dtype=np.int64)
    pe_free = np.zeros(PE_BLOCKS)
    pend_end = np.empty(n)
    pend_ev = np.empty(n, dtype=np.int64)
    scalars = np.zeros(4, dtype=np.int64)
    scalars[S_REMAINING] = qstart[ntr]
    scalars[S_PAUSED] = -1
    return (slot_of, w_key, r_stamp, readers, reader_of, qstart, queue, sems, sem_of, inc_base,
            inc_time, inc_clock, sem_count, heads, free, done, clock, stamp_of, thr, pe_free,
            pend_end, pend_ev, scalars)


@jit
def _run(events, event_times, instrs, ops, kinds, lat, own_dep, tracks, breaks, times, busy,
         track_free, info, cc_end, st):
    """The discrete-event replay, from the state ``st`` (_setup) on. Fills times / busy /
    track_free; returns OK, PAUSED (at a cc.* event whose ``cc_end`` is NaN: scalars[S_PAUSED],
    its start in times), STALLED (nothing can start while an event is pending), DEADLOCK (the
    state says who waits for what) or a race (``info`` and stamp_of name the two accesses).

    Pipeline latencies (``lat``, ns per instruction) are those of sync mode auto: a signal
    fires, and a barrier passes, once every result its track wrote is written (``done``); an
    instruction that touches what an earlier instruction of its own track wrote
    (``own_dep``) waits for that result. A signal does not hold its track: the engine issues
    on while its last results drain."""
    (slot_of, w_key, r_stamp, readers, reader_of, qstart, queue, _sems, sem_of, inc_base,
     inc_time, inc_clock, sem_count, heads, free, done, clock, stamp_of, thr, pe_free, pend_end,
     pend_ev, scalars) = st
    ntr = tracks.shape[0]
    tensor = slot_of[L.TENSOR_TRACK]   # -1 when the run has no Tensor events
    npend = scalars[S_NPEND]
    while scalars[S_REMAINING] > 0:
        # the ready head with the earliest start (the first track on ties)
        best = -1
        best_start = 0.0
        best_e = -1
        for i in range(ntr):
            if heads[i] >= qstart[i + 1] - qstart[i]:
                continue
            e = queue[qstart[i] + heads[i]]
            tr = events[e, 1]
            kd = kinds[events[e, 0]]
            kind = kd & KIND_MASK
            start = free[i]
            if i == tensor and tr != L.ALL_TRACKS:
                if kd & F_TENSOR_ENGINE:
                    start, npend = _pe_earliest(e, start, instrs, ops, events, pe_free, pend_end,
                                                pend_ev, npend)
                elif kind != K_WAIT:  # a signal reports work that has finished
                    start = _finished(free, i, tensor, pe_free)
            if tr == L.ALL_TRACKS:
                arrived = True
                for u in range(ntr):
                    if heads[u] >= qstart[u + 1] - qstart[u] or queue[qstart[u] + heads[u]] != e:
                        arrived = False
                        break
                if not arrived:
                    continue
                start = _finished(free, 0, tensor, pe_free)
                start = max(start, done[0])
                for u in range(1, ntr):
                    f = _finished(free, u, tensor, pe_free)
                    start = max(start, f)
                    start = max(start, done[u])
            elif kind == K_SIGNAL:
                start = max(start, done[i])
            elif kind == K_WORK and own_dep[e] >= 0:
                f = own_dep[e]
                x = times[f, 1] + lat[events[f, 0]]
                start = max(start, x)
            if kind == K_WAIT:
                s = sem_of[e]
                value = events[e, 4]
                if sem_count[s] < value:
                    continue
                if value > 0:
                    x = inc_time[inc_base[s] + value - 1]
                    start = max(start, x)
            if start == np.inf:
                continue   # behind a pending event
            if best < 0 or start < best_start:
                best, best_start, best_e = i, start, e
        if best < 0:
            scalars[S_NPEND] = npend
            if scalars[S_PENDING] > 0:
                return STALLED
            return DEADLOCK
        i, start, e = best, best_start, best_e
        t = tracks[i]
        kd = kinds[events[e, 0]]
        kind = kd & KIND_MASK
        if (kd & F_CC) != 0 and np.isnan(cc_end[e]):
            times[e, 0] = start
            scalars[S_PAUSED] = e
            scalars[S_NPEND] = npend
            return PAUSED
        if kind == K_BARRIER:
            for j in range(ntr):
                m = clock[0, j]
                for u in range(1, ntr):
                    m = max(m, clock[u, j])
                for u in range(ntr):
                    clock[u, j] = m
            for u in range(ntr):
                free[u] = start
                heads[u] += 1
            times[e, 0] = start
            times[e, 1] = start
            scalars[S_REMAINING] -= ntr
            continue
        issue = free[i]
        if kind == K_WAIT:
            value = events[e, 4]
            if value > 0:
                row = inc_base[sem_of[e]] + value - 1
                for j in range(ntr):
                    clock[i, j] = max(clock[i, j], inc_clock[row, j])
            end = start
        elif kind == K_SIGNAL:
            if i == tensor:
                issue = _finished(free, i, tensor, pe_free)
            s = sem_of[e]
            clock[i, i] += 1
            stamp_of[e] = clock[i, i]
            row = inc_base[s] + sem_count[s]
            for j in range(ntr):
                v = clock[i, j]
                if sem_count[s] > 0 and inc_clock[row - 1, j] > v:
                    v = inc_clock[row - 1, j]
                inc_clock[row, j] = v
            inc_time[row] = start
            sem_count[s] += 1
            end = start
        else:
            clock[i, i] += 1
            stamp = clock[i, i]
            stamp_of[e] = stamp
            if (kd & F_CC) != 0:
                end = cc_end[e]   # from the multi-rank driver; PENDING (inf): not known yet
                if end == np.inf:
                    scalars[S_PENDING] += 1
                else:
                    busy[t] += end - start
            else:
                duration = event_times[e, 1] - event_times[e, 0]
                end = start + duration
                if t == L.TENSOR_TRACK:
                    busy_union(busy, t, start, end, _finished(free, i, tensor, pe_free))
                    npend = _pe_place(e, end, instrs, events, pe_free, pend_end, pend_ev, npend)
                else:
                    busy[t] += duration
                x = end + lat[events[e, 0]]
                done[i] = max(done[i], x)
            # a write by track u stamped s is ordered before us iff s <= our clock[u]
            for u in range(thr.shape[0]):
                thr[u] = _NEVER
            for u in range(ntr):
                if u != i:
                    thr[u + 1] = clock[i, u]
            status = _accesses(e, events, instrs, ops, i, clock[i], thr, stamp, breaks, w_key,
                               r_stamp, readers, reader_of, info)
            if status != OK:
                info[R_EVENT] = e
                scalars[S_NPEND] = npend
                return status
        times[e, 0] = start
        times[e, 1] = end
        if kind == K_SIGNAL:
            free[i] = issue   # the engine issues on while its results drain
        elif t == L.TENSOR_TRACK and (kd & F_TENSOR_OP) != 0:
            free[i] = start   # tensor compute: the track issues on, the PE blocks hold
        else:
            free[i] = end
        heads[i] += 1
        scalars[S_REMAINING] -= 1
    scalars[S_NPEND] = npend
    for i in range(ntr):
        track_free[tracks[i]] = _finished(free, i, tensor, pe_free)
    if scalars[S_PENDING] > 0:
        return STALLED
    return OK


@jit
def _own_deps(events, instrs, ops, kinds, lat, breaks, rows):
    """Per event, the latest earlier event of its own track (Vector, Scalar, GpSimd: engines
    whose pipeline latency delays their own readers, as in sync mode auto) that last wrote, in
    program order, a byte the event reads or writes; -1 if none. Program order is the order
    the values were computed in; in a race-free kernel it orders conflicting accesses.

    One table per such track and memory space, [segment, row]: event + 1 where that track's
    latency-bearing instruction is the last writer, else 0; so a lookup is a max over the
    operand's segments and rows."""
    n = events.shape[0]
    dep = np.full(n, -1, dtype=np.int64)
    slot = np.full(L.NUM_TRACKS, -1, dtype=np.int64)
    nslots = 0
    for e in range(n):
        tr = events[e, 1]
        if (tr != L.ALL_TRACKS and tr != L.TENSOR_TRACK and slot[tr] < 0
                and (kinds[events[e, 0]] & KIND_MASK) == K_WORK and lat[events[e, 0]] > 0.0):
            slot[tr] = nslots
            nslots += 1
    nseg0 = max(breaks[0].shape[0] - 1, 0)
    nseg1 = max(breaks[1].shape[0] - 1, 0)
    nseg2 = max(breaks[2].shape[0] - 1, 0)
    last = (np.zeros((nslots, nseg0, rows[0]), dtype=np.int64),
            np.zeros((nslots, nseg1, rows[1]), dtype=np.int64),
            np.zeros((nslots, nseg2, rows[2]), dtype=np.int64))
    if nslots == 0:
        return dep
    for e in range(n):
        ins = instrs[events[e, 0]]
        mine = slot[events[e, 1]] if events[e, 1] != L.ALL_TRACKS else -1
        if lat[events[e, 0]] <= 0.0:
            mine_writes = -1   # its writes hide earlier ones but delay no reader
        else:
            mine_writes = mine
        best = 0
        for phase in range(2):   # look up, then record the writes
            for k in range(ins[L.I_NARGS]):
                j = _memory_operand(events, e, k, instrs, ops, kinds)
                if j < 0:
                    continue
                writing = (ins[L.I_ACCESS] >> (2 * k)) & L.ACCESS_WRITE
                if (phase == 0 and mine < 0) or (phase == 1 and not writing):
                    continue
                op = ops[j]
                space = op[L.OP_SPACE]
                tables = last[space]
                count = op[L.OP_PCOUNT]
                rowstep = op[L.OP_PROWSTEP]
                contiguous = op[L.OP_PCOLSTEP] == 0 and (rowstep == 1 or count <= 1)
                groups = 1 if contiguous else count
                for p in range(groups):
                    r0 = op[L.OP_PSTART] + p * rowstep
                    r1 = r0 + count if contiguous else r0 + 1
                    b0, b1 = segments(breaks[space], events[e, 2 + k] + p * op[L.OP_PCOLSTEP],
                                      op[L.OP_EXTENT])
                    if phase == 0:
                        table = tables[mine]
                        for b in range(b0, b1):
                            for r in range(r0, r1):
                                best = max(best, table[b, r])
                        continue
                    for q in range(nslots):
                        value = e + 1 if q == mine_writes else 0
                        table = tables[q]
                        for b in range(b0, b1):
                            for r in range(r0, r1):
                                table[b, r] = value
        dep[e] = best - 1
    return dep


@jit
def _finished(free, i, tensor, pe_free):
    """When everything track slot i started has finished."""
    if i == tensor:
        return pe_finished(pe_free, 0, free[i])
    return free[i]


@jit
def _pe_earliest(e, issue, instrs, ops, events, pe_free, pend_end, pend_ev, npend):
    """The Tensor engine issues in order, and an instruction starts once the 32 x 32 PE blocks
    it occupies are free (tiled matmuls on disjoint blocks overlap) and once every in-flight
    instruction that shares bytes with it has finished (the engine's own ordering, which auto
    mode gets from its block table). Returns (start, pending count after pruning)."""
    start = pe_ready(pe_blocks(instrs[events[e, 0]]), pe_free, 0, issue)
    # what ended by the issue time can no longer hold anything back
    k = 0
    for j in range(npend):
        if pend_end[j] > issue:
            pend_end[k] = pend_end[j]
            pend_ev[k] = pend_ev[j]
            k += 1
    for j in range(k):
        if pend_end[j] > start and _shares_bytes(e, pend_ev[j], instrs, ops, events):
            start = pend_end[j]
    return start, k


@jit
def _pe_place(e, end, instrs, events, pe_free, pend_end, pend_ev, npend):
    pe_commit(pe_blocks(instrs[events[e, 0]]), pe_free, 0, end)
    pend_end[npend] = end
    pend_ev[npend] = e
    return npend + 1


@jit
def _shares_bytes(e, f, instrs, ops, events):
    """Whether f writes bytes e touches or reads bytes e writes (an operand with the write bit
    counts as written only, as in the Python version's footprint sets)."""
    ie = instrs[events[e, 0]]
    jf = instrs[events[f, 0]]
    for k in range(ie[L.I_NARGS]):
        if ie[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        wa = (ie[L.I_ACCESS] >> (2 * k)) & L.ACCESS_WRITE
        for j in range(jf[L.I_NARGS]):
            if jf[L.I_ARGS + 2 * j] != L.TAG_OPERAND:
                continue
            wb = (jf[L.I_ACCESS] >> (2 * j)) & L.ACCESS_WRITE
            if (wa or wb) and _overlap(ops[ie[L.I_ARGS + 2 * k + 1]], events[e, 2 + k],
                                       ops[jf[L.I_ARGS + 2 * j + 1]], events[f, 2 + j]):
                return True
    return False


@jit
def _meet(a0, a1, b0, b1):
    return a0 < a1 and b0 < b1 and a0 < b1 and b0 < a1


@jit
def _overlap(a, a_off, b, b_off):
    """Whether two operands (at their dynamic offsets) share a byte of a row."""
    if a[L.OP_SPACE] != b[L.OP_SPACE]:
        return False
    na, nb = a[L.OP_PCOUNT], b[L.OP_PCOUNT]
    ea, eb = a[L.OP_EXTENT], b[L.OP_EXTENT]
    if a[L.OP_PCOLSTEP] == 0 and b[L.OP_PCOLSTEP] == 0:
        # every partition of a tile covers the same bytes
        if not _meet(a_off, a_off + ea, b_off, b_off + eb):
            return False
        if (a[L.OP_PROWSTEP] == 1 or na <= 1) and (b[L.OP_PROWSTEP] == 1 or nb <= 1):
            return _meet(a[L.OP_PSTART], a[L.OP_PSTART] + na, b[L.OP_PSTART],
                         b[L.OP_PSTART] + nb)
    for p in range(na):
        ra = a[L.OP_PSTART] + p * a[L.OP_PROWSTEP]
        ca = a_off + p * a[L.OP_PCOLSTEP]
        for q in range(nb):
            cb = b_off + q * b[L.OP_PCOLSTEP]
            if ra == b[L.OP_PSTART] + q * b[L.OP_PROWSTEP] and _meet(ca, ca + ea, cb, cb + eb):
                return True
    return False


@jit
def _memory_operand(events, e, k, instrs, ops, kinds):
    """The ops row of argument k of event e when it is memory a datapath event touches (not a
    sync event, a barrier or an operand with no rows), else -1."""
    ins = instrs[events[e, 0]]
    if (kinds[events[e, 0]] & KIND_MASK != K_WORK or events[e, 1] == L.ALL_TRACKS
            or ins[L.I_ARGS + 2 * k] != L.TAG_OPERAND):
        return -1
    j = ins[L.I_ARGS + 2 * k + 1]
    if ops[j, L.OP_PCOUNT] <= 0 or ops[j, L.OP_SPACE] > L.SPACE_HBM:
        return -1
    return j


@jit
def _event_breaks(events, instrs, ops, kinds):
    """The cuts of SBUF, PSUM and HBM: every byte where a recorded access's row begins or ends,
    sorted and unique. Segments between consecutive cuts are what the tables track, so two
    accesses share a segment only if they share a byte."""
    count = np.zeros(3, dtype=np.int64)
    points = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64),
              np.empty(0, dtype=np.int64))
    for phase in range(2):   # count, then fill
        if phase == 1:
            points = (np.empty(count[0], dtype=np.int64), np.empty(count[1], dtype=np.int64),
                      np.empty(count[2], dtype=np.int64))
            count[:] = 0
        for e in range(events.shape[0]):
            for k in range(instrs[events[e, 0], L.I_NARGS]):
                j = _memory_operand(events, e, k, instrs, ops, kinds)
                if j < 0:
                    continue
                op = ops[j]
                space = op[L.OP_SPACE]
                rows = 1 if op[L.OP_PCOLSTEP] == 0 else op[L.OP_PCOUNT]
                if phase == 1:
                    for p in range(rows):
                        c = events[e, 2 + k] + p * op[L.OP_PCOLSTEP]
                        points[space][count[space] + 2 * p] = c
                        points[space][count[space] + 2 * p + 1] = c + op[L.OP_EXTENT]
                count[space] += 2 * rows
    return np.unique(points[0]), np.unique(points[1]), np.unique(points[2])


@jit
def _tables(events, instrs, ops, kinds, slot_of, ntr, rows, breaks):
    """The segment tables (``breaks``: each space's cuts; only what the run touches), and read
    stamps only for the tracks that read that space (``readers[space, j]`` is the slot of
    reader j, in slot order; ``reader_of`` the inverse). Whole-memory tables would be ~20 MB
    to clear per run, most of the replay's time."""
    reads = np.zeros((3, ntr), dtype=np.bool_)
    for e in range(events.shape[0]):
        ins = instrs[events[e, 0]]
        for k in range(ins[L.I_NARGS]):
            j = _memory_operand(events, e, k, instrs, ops, kinds)
            if j >= 0 and (ins[L.I_ACCESS] >> (2 * k)) & L.ACCESS_READ:
                reads[ops[j, L.OP_SPACE], slot_of[events[e, 1]]] = True
    readers = np.full((3, ntr), -1, dtype=np.int64)
    reader_of = np.full((3, ntr), -1, dtype=np.int64)
    nread = np.zeros(3, dtype=np.int64)
    nseg = np.zeros(3, dtype=np.int64)
    for space in range(3):
        nseg[space] = max(breaks[space].shape[0] - 1, 0)
        for i in range(ntr):
            if reads[space, i]:
                readers[space, nread[space]] = i
                reader_of[space, i] = nread[space]
                nread[space] += 1
    w_key = (np.zeros((nseg[0], rows[0]), dtype=np.int64),
             np.zeros((nseg[1], rows[1]), dtype=np.int64),
             np.zeros((nseg[2], rows[2]), dtype=np.int64))
    r_stamp = (np.zeros((nread[0], nseg[0], rows[0]), dtype=np.int64),
               np.zeros((nread[1], nseg[1], rows[1]), dtype=np.int64),
               np.zeros((nread[2], nseg[2], rows[2]), dtype=np.int64))
    return w_key, r_stamp, readers, reader_of


@jit
def _accesses(e, events, instrs, ops, me, clk, thr, stamp, breaks, w_key, r_stamp, readers,
              reader_of, info):
    """Check and record every operand of event e, in argument order (an in-place operand's
    write is recorded before its next argument is checked, as before)."""
    ins = instrs[events[e, 0]]
    for k in range(ins[L.I_NARGS]):
        if ins[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
            continue
        access = (ins[L.I_ACCESS] >> (2 * k)) & 3
        op = ops[ins[L.I_ARGS + 2 * k + 1]]
        space = op[L.OP_SPACE]
        status = _access(op, events[e, 2 + k], access, me, clk, thr, stamp, breaks[space],
                         w_key[space], r_stamp[space], readers[space], reader_of[space, me],
                         info)
        if status != OK:
            info[R_ARG] = k
            info[R_ACCESS] = access
            return status
    return OK


@jit
def _access(op, offset, access, me, clk, thr, stamp, cuts, wk, rs, readers, mine, info):
    """One operand against its space's tables (segments between ``cuts``)."""
    writing = (access & L.ACCESS_WRITE) != 0
    reading = (access & L.ACCESS_READ) != 0
    count = op[L.OP_PCOUNT]
    extent = op[L.OP_EXTENT]
    space = op[L.OP_SPACE]
    if op[L.OP_PCOLSTEP] == 0 and (op[L.OP_PROWSTEP] == 1 or count <= 1):
        # on chip: one rectangle of distinct rows; checking it whole before recording it finds
        # the same first race as row by row (a row's record never meets another row's check)
        r0 = op[L.OP_PSTART]
        b0, b1 = segments(cuts, offset, extent)
        if _conflicts(wk, rs, readers, thr, clk, me, r0, r0 + count, b0, b1, writing):
            return _locate(wk, rs, readers, clk, me, space, r0, r0 + count, b0, b1, writing,
                           info)
        _record(wk, rs, mine, stamp, me, r0, r0 + count, b0, b1, writing, reading)
        return OK
    for p in range(count):
        r = op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]
        b0, b1 = segments(cuts, offset + p * op[L.OP_PCOLSTEP], extent)
        if _conflicts(wk, rs, readers, thr, clk, me, r, r + 1, b0, b1, writing):
            return _locate(wk, rs, readers, clk, me, space, r, r + 1, b0, b1, writing, info)
        _record(wk, rs, mine, stamp, me, r, r + 1, b0, b1, writing, reading)
    return OK


@jit
def _conflicts(wk, rs, readers, thr, clk, me, r0, r1, b0, b1, writing):
    """Whether segments [b0, b1) of rows [r0, r1) hold a write, or (when writing) a read, that
    does not happen-before us. No early exit: the common answer is no, and these loops
    vectorise."""
    hit = False
    for b in range(b0, b1):
        ub = np.uintp(b)
        for r in range(r0, r1):
            key = wk[ub, np.uintp(r)]
            hit |= (key >> WRITER_BITS) > thr[np.uintp(key & ((1 << WRITER_BITS) - 1))]
    if hit or not writing:
        return hit
    for j in range(rs.shape[0]):
        u = readers[j]
        if u == me:
            continue
        cu = clk[u]
        table = rs[j]
        for b in range(b0, b1):
            ub = np.uintp(b)
            for r in range(r0, r1):
                hit |= table[ub, np.uintp(r)] > cu
    return hit


@jit
def _locate(wk, rs, readers, clk, me, space, r0, r1, b0, b1, writing, info):
    """The race the Python version reported first: rows in order; in a row the first segment
    (so the first byte) with an unordered write, else the first (segment, track) with an
    unordered read."""
    for r in range(r0, r1):
        for b in range(b0, b1):
            key = wk[b, r]
            w = key & ((1 << WRITER_BITS) - 1)
            if key != 0 and w != me + 1 and (key >> WRITER_BITS) > clk[w - 1]:
                _fill(info, space, r, b, w - 1, key >> WRITER_BITS)
                return RACE_WRITE
        if writing:
            first_b = b1
            first_j = -1
            for j in range(rs.shape[0]):   # readers in slot order: the first track wins ties
                if readers[j] == me:
                    continue
                for b in range(b0, first_b):
                    if rs[j, b, r] > clk[readers[j]]:
                        first_b, first_j = b, j
                        break
            if first_j >= 0:
                _fill(info, space, r, first_b, readers[first_j], rs[first_j, first_b, r])
                return RACE_READ
    return OK


@jit
def _fill(info, space, row, seg, other_slot, other_stamp):
    info[R_SPACE] = space
    info[R_ROW] = row
    info[R_SEGMENT] = seg
    info[R_OTHER_SLOT] = other_slot
    info[R_OTHER_STAMP] = other_stamp


@jit
def _record(wk, rs, mine, stamp, me, r0, r1, b0, b1, writing, reading):
    if writing:
        key = (stamp << WRITER_BITS) | (me + 1)
        for b in range(b0, b1):
            ub = np.uintp(b)
            for r in range(r0, r1):
                wk[ub, np.uintp(r)] = key
    if reading:
        table = rs[mine]
        for b in range(b0, b1):
            ub = np.uintp(b)
            for r in range(r0, r1):
                table[ub, np.uintp(r)] = stamp


# ------------------------------------------------------------------------------------ reports


def _race_error(program, events, tracks, stamp_of, status, info, breaks) -> SyncError:
    """The message for the race _run found. The tables keep only who last touched a segment
    (track and stamp); the event is the one of that track with that stamp, and its argument the
    last one of the conflicting kind that covers the segment (the last the Python version
    recorded there). The bytes reported are those the two accesses share in that row."""
    space, row, seg = int(info[R_SPACE]), int(info[R_ROW]), int(info[R_SEGMENT])
    byte = int(breaks[space][seg])   # the first byte of the conflict
    e, arg, access = int(info[R_EVENT]), int(info[R_ARG]), int(info[R_ACCESS])
    other_track = tracks[int(info[R_OTHER_SLOT])]
    other = int(np.flatnonzero((events[:, 1] == other_track)
                               & (stamp_of == info[R_OTHER_STAMP]))[0])
    need = L.ACCESS_WRITE if status == RACE_WRITE else L.ACCESS_READ
    row_of = program.instrs[int(events[other, 0])]
    other_arg, other_range = -1, None
    for k in range(int(row_of[L.I_NARGS])):
        if row_of[L.I_ARGS + 2 * k] != L.TAG_OPERAND or not (row_of[L.I_ACCESS] >> (2 * k)) & need:
            continue
        found = _range_at(program.ops[row_of[L.I_ARGS + 2 * k + 1]], int(events[other, 2 + k]),
                          space, row, byte)
        if found is not None:
            other_arg, other_range = k, found
    mine = _range_at(program.ops[program.instrs[int(events[e, 0])][L.I_ARGS + 2 * arg + 1]],
                     int(events[e, 2 + arg]), space, row, byte)
    shared = (max(mine[0], other_range[0]), min(mine[1], other_range[1]))
    return _race(program, space, row, shared, int(events[e, 0]), arg, int(events[other, 0]),
                 other_arg, "writes" if access & L.ACCESS_WRITE else "reads",
                 "writes" if status == RACE_WRITE else "reads")


def _race(program, space, row, shared, pc, arg, other_pc, other_arg, verb, other_verb):
    ins = program.instructions[pc]
    other = program.instructions[other_pc]
    a = ins.definition.args[arg].name
    b = other.definition.args[other_arg].name
    symbol = ins.args[a].symbol
    where = ("HBM" if space == L.SPACE_HBM else
             f"{('SBUF', 'PSUM')[space]} partition {row}")
    lo, hi = shared
    base = symbol_offset(program, symbol)
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


def symbol_offset(program, symbol: str) -> int:
    """Where a buffer's bytes start: in each partition row (on chip) or in HBM."""
    if symbol in program.allocations:
        return program.allocations[symbol].offset
    return program.tensors[symbol].offset


def _deadlock(program, events, tracks, heads, queue, qstart, sems, sem_count) -> SyncError:
    from neuronemu.timing.report import track_names

    names = track_names()
    blocked = []
    first = None
    for i, t in enumerate(tracks):
        if heads[i] >= qstart[i + 1] - qstart[i]:
            continue
        e = int(queue[qstart[i] + heads[i]])
        ins = program.instructions[int(events[e, 0])]
        if ins.definition.name != "sync.wait":  # a barrier some other track never reaches
            blocked.append(f"{names[t]} waits at the barrier on line {ins.location.line}")
        else:
            sem, value = int(events[e, 2 + 1]), int(events[e, 2 + 2])
            have = int(sem_count[np.searchsorted(sems, sem)])
            blocked.append(f"{names[t]} waits at line {ins.location.line} for semaphore {sem} "
                           f">= {value} (it reached {have}, and nothing left can signal it)")
        first = first or ins.location
    return SyncError("deadlock: no track can proceed", first, tuple(blocked))


def _range_at(op, offset: int, space: int, row: int, byte: int) -> tuple[int, int] | None:
    """The bytes [c0, c1) an operand (at its dynamic offset) touches in memory row ``row`` of
    ``space`` around ``byte``, or None if it does not touch that byte."""
    if int(op[L.OP_SPACE]) != space:
        return None
    for p in range(int(op[L.OP_PCOUNT])):
        c = offset + p * int(op[L.OP_PCOLSTEP])
        if (int(op[L.OP_PSTART] + p * op[L.OP_PROWSTEP]) == row
                and c <= byte < c + int(op[L.OP_EXTENT])):
            return c, c + int(op[L.OP_EXTENT])
    return None
