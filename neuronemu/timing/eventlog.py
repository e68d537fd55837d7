"""Every instruction event of a run, however long, in bounded memory.

The interpreter loop records events (neuronemu.timing.events.record_event) into a fixed buffer
at row ``regs[REG_EVENTS] - regs[REG_EVENT_BASE]``. An ``EventLog`` that keeps every event
(``keep=None``, the default of a run) hands the loop at most as many steps as the buffer has
rows left (each step records at most one event) and, when the buffer is full, appends its rows
to an unnamed temporary file and starts it again; at the end the whole record is read back as
arrays mapped from that file. The process holds one buffer (``STREAM_ROWS`` rows, 42 MiB), the
file's pages are the kernel's page cache, and the file has no name, so nothing is left behind
however the process ends. A run whose events fit the buffer never touches a file.

A spilled event keeps pc, track, the arguments' run-time values up to the program's widest
instruction (so ``Timing.events`` may have fewer columns than a buffer, never fewer than an
instruction's arguments) and the five times: 8 x (7 + arguments) bytes, 120 for a loop whose
widest instruction has 8 arguments. The file holds each column as one block (sparse, grown by
doubling), so a reader of a few columns, as the critical path, maps only their pages. The
first time a process spills, a line on stderr says so, where and at what cost; a temporary
directory that fills up is a ResourceError that says what to do, not a traceback.

``keep=N`` is the older contract, for callers that want the first N events in memory and no
file (the debugger, which restores checkpoints into its buffer): the buffer has N rows and
events past them are counted, not kept."""

from __future__ import annotations

import mmap
import os
import tempfile

import numpy as np

from neuronemu.machine import layout as L
from neuronemu.timing.events import EVENT_TIMES_WIDTH, EVENT_WIDTH

# buffer rows of a run that keeps every event: 42 MiB, so that a run of up to 262,144 timed
# instructions (the bench's small-tile loop has 80,000) needs no file; 2^16 rows made that
# loop 4.5% slower (tools/bench.py), spilling once
STREAM_ROWS = 1 << 18
MIN_STREAM_ROWS = 1024  # per rank of a wide multi-rank run (the buffers add up)
FIRST_CAPACITY = 1 << 20   # rows of the file's column blocks at first; doubled as needed
COPY_ROWS = 1 << 20        # rows copied at a time when the file grows


class EventLog:
    """A core's event buffer (``events``, ``event_times``, which the loop writes) and, when it
    keeps every event, the file its full buffers went to."""

    def __init__(self, rows: int, keep: int | None, width: int) -> None:
        self.keep = keep
        rows = max(1, rows if keep is None else keep)
        self.events = _lazy_zeros((rows, EVENT_WIDTH), np.int64)
        self.event_times = _lazy_zeros((rows, EVENT_TIMES_WIDTH), np.float64)
        self.width = width     # event columns kept in the file: pc, track and `width - 2` args
        self.spilled = 0       # rows in the file
        self._columns = width + EVENT_TIMES_WIDTH
        self._capacity = 0     # rows of each column's block in the file
        self._file = None

    @property
    def streams(self) -> bool:
        return self.keep is None

    def room(self, regs: np.ndarray) -> int | None:
        """Events the loop may record before the buffer must be emptied (None: no bound; a
        capped log counts what does not fit)."""
        if not self.streams:
            return None
        return len(self.events) - int(regs[L.REG_EVENTS] - regs[L.REG_EVENT_BASE])

    def make_room(self, regs: np.ndarray) -> None:
        """Empty a full buffer into the file, so the next event has a row."""
        if self.streams and self.room(regs) <= 0:
            self._spill(regs)

    def _spill(self, regs: np.ndarray) -> None:
        rows = int(regs[L.REG_EVENTS] - regs[L.REG_EVENT_BASE])
        if rows <= 0:
            return
        columns = [self.events[:rows, c] for c in range(self.width)] + \
                  [self.event_times[:rows, c].view(np.int64) for c in range(EVENT_TIMES_WIDTH)]
        try:
            if self.spilled + rows > self._capacity:
                self._grow(self.spilled + rows)
            fd = self._file.fileno()
            for c, column in enumerate(columns):
                os.pwrite(fd, np.ascontiguousarray(column).tobytes(),
                          (c * self._capacity + self.spilled) * 8)
        except OSError as e:
            from neuronemu.errors import ResourceError

            raise ResourceError(
                f"the run's timeline events ({self.spilled + rows:,} so far, "
                f"{8 * len(columns)} bytes each) no longer fit in the temporary directory "
                f"{tempfile.gettempdir()} ({e.strerror or e}); set TMPDIR to a directory with "
                f"room, or keep only the first N events with --max-trace-events N (API: "
                f"max_trace_events=N)") from None
        # an instruction writes only its own argument columns: a row used again must not
        # show the last event's (a run kept in memory has zeros there)
        self.events[:rows, 2:self.width] = 0
        self.spilled += rows
        regs[L.REG_EVENT_BASE] += rows

    def _grow(self, rows: int) -> None:
        """A file of column-major blocks of at least ``rows`` rows (sparse: its holes take no
        disk), the rows so far copied from the last one."""
        capacity = max(FIRST_CAPACITY, 2 * self._capacity, rows)
        new = tempfile.TemporaryFile(prefix="neuronemu-events-")  # noqa: SIM115 (the log's)
        os.ftruncate(new.fileno(), self._columns * capacity * 8)
        if self._file is None:
            _announce(self._columns)
        else:
            old = self._file.fileno()
            for c in range(self._columns):
                for at in range(0, self.spilled, COPY_ROWS):
                    n = min(COPY_ROWS, self.spilled - at)
                    data = os.pread(old, n * 8, (c * self._capacity + at) * 8)
                    os.pwrite(new.fileno(), data, (c * capacity + at) * 8)
            self._file.close()
        self._file, self._capacity = new, capacity

    def recorded(self, regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(events [n, 2 + args], event_times [n, 5]) of every event kept: views of the buffer,
        or, once the log has spilled, of the file (mapped copy-on-write; the buffer's last rows
        are moved there first; each column is contiguous in the file, so a reader of a few
        columns, as the critical path, maps only their pages). Events a capped log did not
        keep are not in them."""
        n = int(regs[L.REG_EVENTS])
        if self._file is None:
            if n >= len(self.events):
                return self.events, self.event_times
            # a part is copied, so what the run reports does not keep the whole buffer alive
            # (its written pages stay resident while a view holds it: ~1.2 MiB per rank of a
            # 144-rank run); a full one is kept as it is (a copy costs ~0.4 us per event)
            return self.events[:n].copy(), self.event_times[:n].copy()
        self._spill(regs)
        # copy-on-write, not read-only: the compiled readers (critical path, explicit replay)
        # then see the types of a buffer's arrays and need no second compile (nothing writes)
        mapped = np.asarray(np.memmap(self._file, dtype=np.int64, mode="c",
                                      shape=(self._columns, self._capacity)))
        events = mapped[:self.width, :self.spilled].T
        return events, mapped[self.width:, :self.spilled].T.view(np.float64)


def _lazy_zeros(shape: tuple[int, int], dtype) -> np.ndarray:
    """Zeros whose pages are mapped only as events are written: an anonymous mapping of its
    own. np.zeros of a few MiB may come from the heap once glibc has raised its mmap
    threshold, and calloc then clears it all: 0.7 ms a run for an 11 MiB buffer, measured."""
    count = shape[0] * shape[1]
    # private: a shared anonymous mapping is tmpfs memory, whose page faults cost more
    region = mmap.mmap(-1, max(count * np.dtype(dtype).itemsize, 1), flags=mmap.MAP_PRIVATE)
    return np.frombuffer(region, dtype=dtype, count=count).reshape(shape)


def spilled_width(program) -> int:
    """Event columns a streaming log keeps: pc and track, and as many argument values as the
    program's widest instruction has (the explicit replay and the autograder's chain of last
    writers read them; the columns past an instruction's own arguments are zero)."""
    return 2 + (int(program.instrs[:, L.I_NARGS].max()) if len(program.instrs) else 0)


_announced = False


def _announce(columns: int) -> None:
    """Once a process: a long run's events go to a file, and what that costs."""
    global _announced
    if _announced:
        return
    _announced = True
    from neuronemu.notices import notify

    notify(f"neuronemu: the run's timeline events fill their buffer: every event from here is "
           f"kept in an unnamed file in {tempfile.gettempdir()}, "
           f"{8 * columns} bytes each (--max-trace-events N keeps the "
           f"first N only, in memory)")


def stream_rows(world: int) -> int:
    """Buffer rows per rank of a run that keeps every event: STREAM_ROWS (42 MiB) for one rank;
    2^20 rows (168 MiB) shared by the ranks of a wide run, at least MIN_STREAM_ROWS each."""
    return max(MIN_STREAM_ROWS, min(STREAM_ROWS, (1 << 20) // max(world, 1)))

