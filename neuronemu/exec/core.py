"""One NeuronCore's run state: memories, registers and timing state, how it runs until the next
cc.* instruction, and how a cc.* instruction is timed and recorded on it.

A single-core run is one ``Core``; a multi-chip run (neuronemu/multichip/spmd.py) holds one per
rank and moves data between them at the cc.* instructions the loop stops at.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from neuronemu.hostmem import on_chip_widths
from neuronemu.machine import layout as L
from neuronemu.program import HbmTensor, Program

if TYPE_CHECKING:
    from neuronemu.timing.explicit import Replay

FINISHED = "finished"
STOPPED = "stopped"   # at a cc.* instruction (pc points at it)

# run statuses the Python driver sets (the jitted loop's own are in machine/layout.py, < 100)
STATUS_TIMEOUT = 100
STATUS_INTERRUPTED = 101
TIMEOUT = "timeout"
INTERRUPT = "interrupt"

_loop_ready = False  # the jitted loop has been called once in this process (compiled / loaded)


def notice(message: str) -> None:
    """A line on stderr (never stdout, which ``--json`` owns)."""
    print(message, file=sys.stderr, flush=True)


def _oob_skip(program: Program, core) -> bool:
    """Skip the instruction at pc when it is a dma.copy oob=skip whose tiles are each in bounds
    or wholly outside (exec/oob.py; imported here, not at the top: it imports numba)."""
    from neuronemu.exec import oob

    if not oob.skippable(program, core):
        return False
    oob.skip(core)
    return True


@dataclass
class RunLimits:
    """What ends a run before the kernel does: ``max_instructions`` dynamic instructions (per
    core), ``timeout`` seconds of execution (None: no limit; the clock starts when the first
    instruction is about to run, after compiling) and Ctrl-C (``interrupted``, set by the
    SIGINT handler of ``stop_on_sigint``). ``chunk`` is how many steps the jitted loop runs
    before control returns to Python to look at the clock; it adapts to ~50 ms a chunk.

    A run still going after PROGRESS_AFTER seconds says so through ``progress`` (stderr by
    default; None: quiet), then every PROGRESS_EVERY seconds: how long, how many instructions,
    and the line it is at, so an endless loop is not a silent wait for the wall-clock limit.
    Nothing the run computes depends on it."""

    max_instructions: int
    timeout: float | None = None
    deadline: float | None = None
    interrupted: bool = False
    chunk: int = 1 << 12
    progress: Callable[[str], None] | None = field(default_factory=lambda: notice)
    started: float | None = None
    next_notice: float = math.inf

    MIN_CHUNK = 1
    MAX_CHUNK = 1 << 26
    TARGET_SECONDS = 0.05
    PROGRESS_AFTER = 5.0
    PROGRESS_EVERY = 10.0

    def start(self) -> None:
        if self.started is None:
            self.started = time.perf_counter()
            self.next_notice = self.started + self.PROGRESS_AFTER
        if self.timeout is not None and self.deadline is None:
            self.deadline = time.perf_counter() + self.timeout

    def report_progress(self, core: Core) -> None:
        """Say that the run is still going (at most every PROGRESS_EVERY seconds)."""
        now = time.perf_counter()
        if self.progress is None or now < self.next_notice:
            return
        self.next_notice = now + self.PROGRESS_EVERY
        ins = core.program.instruction(core.pc)
        where = ""
        if ins is not None:
            where = f", at {ins.definition.name}"
            if ins.location is not None:
                where += f" ({ins.location.source.name}:{ins.location.line})"
        rank = f"rank {core.rank}: " if core.world > 1 else ""
        stop = (f"the wall-clock limit stops it at {self.timeout:g} s, Ctrl-C now"
                if self.timeout is not None else "no wall-clock limit: Ctrl-C stops it")
        self.progress(f"neuronemu: still running after {now - self.started:.0f} s: {rank}"
                      f"{core.steps:,} instructions so far{where}; {stop}")

    def chunk_end(self, steps: int) -> int:
        chunk = min(max(self.chunk, self.MIN_CHUNK), self.MAX_CHUNK)
        return min(self.max_instructions, steps + chunk)

    def adapt(self, executed: int, elapsed: float) -> None:
        """Grow the chunk while it runs in well under the target time, shrink it when over."""
        if elapsed < self.TARGET_SECONDS / 2 and executed >= self.chunk:
            self.chunk = min(self.chunk * 2, self.MAX_CHUNK)
        elif elapsed > self.TARGET_SECONDS * 2:
            self.chunk = max(self.chunk // 2, self.MIN_CHUNK)

    def reason(self) -> str | None:
        """Which limit (other than the instruction count) has ended the run, if any."""
        if self.interrupted:
            return INTERRUPT
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return TIMEOUT
        return None


@contextlib.contextmanager
def stop_on_sigint(limits: RunLimits) -> Iterator[None]:
    """While the run lasts, Ctrl-C sets ``limits.interrupted`` instead of raising
    KeyboardInterrupt at whatever Python line happens to run, so the run stops between two
    chunks with its pc and step count known. Only in the main thread (where Python delivers
    signals) and only over the default handler: one the application installed is left alone.
    A second Ctrl-C, or one while the loop is still being compiled, raises KeyboardInterrupt."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def handler(signum, frame) -> None:
        if limits.interrupted or not _loop_ready:
            # compiling (minutes, in Python) or a second Ctrl-C: stop now, location unknown
            raise KeyboardInterrupt
        limits.interrupted = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


SLAB_ELEMENTS = 1 << 21
"""Elements per piece when a tensor is generated or copied into HBM: the float64 and bit
temporaries of one piece (16 MiB each) instead of several copies of the whole tensor."""


def initial_slabs(tensor: HbmTensor, seed: int, rank: int | None = None
                  ) -> Iterator[np.ndarray]:
    """The default contents of a tensor, in C order, as flat float64 pieces of at
    most SLAB_ELEMENTS (before the dtype cast).

    Random initialisers draw from PCG64 keyed by (seed, crc32(name)[, rank]), so every tensor
    (and, in a multi-rank run, every rank's copy) gets its own reproducible stream whatever the
    declaration order. numpy's Generator draws element after element, so drawing the pieces in
    order gives the same values as one draw of the whole shape (tests/robustness checks it)."""
    from neuronemu.numerics import draw  # rng.normal's values, computed faster

    kind, *params = tensor.init
    rng = _generator(tensor, seed, rank)
    size = math.prod(tensor.shape)
    columns = tensor.shape[-1] if tensor.shape else 1
    for start in range(0, size, SLAB_ELEMENTS):
        count = min(SLAB_ELEMENTS, size - start)
        if kind == "arange":
            yield np.arange(start, start + count, dtype=np.float64)
        elif kind == "identity":
            index = np.arange(start, start + count, dtype=np.int64)
            yield (index // columns == index % columns).astype(np.float64)
        elif kind == "normal":
            yield draw.normal(rng, params[0], params[1], count)
        elif kind == "uniform":
            yield rng.uniform(params[0], params[1], size=count)
        elif kind == "relu_normal":  # ReLU-sparse activations or weights: about half are zeros
            yield np.maximum(draw.normal(rng, params[0], params[1], count), 0.0)
        else:
            yield np.full(count, _CONSTANT_INITS.get(kind, _CONSTANT_INITS["nan"])(tensor))


def _generator(tensor: HbmTensor, seed: int, rank: int | None) -> np.random.Generator:
    """The tensor's own PCG64 stream, keyed by (seed, crc32(name)[, rank])."""
    key = [seed, zlib.crc32(tensor.name.encode())] + ([rank] if rank is not None else [])
    return np.random.default_rng(key)


def _draw_bits(hbm: np.ndarray, tensor: HbmTensor, seed: int, rank: int | None) -> bool:
    """Write a float32 / bfloat16 tensor's ``normal`` initial values straight into its HBM
    bits, drawn and rounded in one compiled loop: the bits initial_slabs and _write_tensor
    give, without their float64 and float32 temporaries (draw.normal_bits). False (the
    tensor is not written) where that does not apply: the caller takes the general way."""
    if (tensor.init[0] != "normal" or tensor.compressed
            or tensor.dtype not in ("float32", "bfloat16")):
        return False
    from neuronemu.numerics import draw

    itemsize = 4 if tensor.dtype == "float32" else 2
    words = hbm[0, tensor.offset: tensor.offset + tensor.nbytes].view(f"<u{itemsize}")
    return draw.normal_bits(_generator(tensor, seed, rank), tensor.init[1], tensor.init[2],
                            words)


def initial_values(tensor: HbmTensor, seed: int, rank: int | None = None) -> np.ndarray:
    """The default contents of a tensor as one float64 array of its shape (see initial_slabs)."""
    pieces = list(initial_slabs(tensor, seed, rank))
    flat = np.concatenate(pieces) if pieces else np.zeros(0)
    return flat.reshape(tensor.shape)


_CONSTANT_INITS = {"nan": lambda t: np.nan, "zeros": lambda t: 0.0, "ones": lambda t: 1.0,
                   "full": lambda t: t.init[1]}


def tensor_bits(tensor: HbmTensor, values: np.ndarray) -> np.ndarray:
    from neuronemu.isa import dtypes
    from neuronemu.numerics import convert

    dt = dtypes.get(tensor.dtype)
    if dt.kind != "float" and values.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            if np.isnan(values).any():
                return np.full(values.shape, (1 << (8 * dt.itemsize)) - 1, dtype=np.uint64)
    return np.ascontiguousarray(convert.to_bits(values, tensor.dtype))


def make_memories(program: Program, compact: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SBUF and PSUM start as 0xFF bytes (NaN in every float dtype, -1 in ints) so that reading
    never-written memory shows up, as nki.simulate does; HBM holds only the declared tensors.
    ``compact``: see on_chip_widths."""
    sbuf_width, psum_width = on_chip_widths(program, compact)
    sbuf = np.full((program.target.partitions, sbuf_width), 0xFF, dtype=np.uint8)
    psum = np.full((program.target.partitions, psum_width), 0xFF, dtype=np.uint8)
    # a multiple of 4 bytes, so the loaders can view it as fp32 words. np.zeros is calloc'ed:
    # the OS maps pages only when a tensor is written, so HBM costs its size once, not more.
    # Every tensor is written before the run; only the padding after each keeps the 0xFF.
    hbm = np.zeros((1, max(-(-program.hbm_bytes // 4) * 4, 4)), dtype=np.uint8)
    end = 0
    for tensor in sorted(program.tensors.values(), key=lambda t: t.offset):
        hbm[0, end: tensor.offset] = 0xFF
        end = max(end, tensor.offset + tensor.nbytes)
    hbm[0, end:] = 0xFF
    return sbuf, psum, hbm


def compile_ahead(program: Program, costs: np.ndarray, loop_args: tuple | None,
                  local: bool = False) -> None:
    """Compile the program's cold instruction kernels, and the interpreter loop when
    ``loop_args`` (its arguments) are given, in worker processes at once, when there are two or
    more such units and cores for them (neuronemu/exec/compile_jobs.py); the run then loads
    them from the cache. Otherwise they compile here, one by one, as before."""
    import numba

    from neuronemu import notices
    from neuronemu.compiled import compiling
    from neuronemu.exec import compile_jobs, kernels

    cold = kernels.cold_entries(program.instrs, program.ops, _yields(program, costs, local))
    if len(cold) + (loop_args is not None) < 2 or compile_jobs.workers() < 2:
        return
    jobs = [compile_jobs.kernel_job(entry) for entry in cold]
    if loop_args is not None:   # the loop first: with tensor_tensor, the longest units
        jobs.insert(0, compile_jobs.loop_job(tuple(numba.typeof(a) for a in loop_args)))
    parallel = min(compile_jobs.workers(), len(jobs))
    compiling.announce(", ".join(job.label for job in jobs)
                       + f" in {parallel} processes at once")
    start = time.perf_counter()
    compile_jobs.run_jobs(jobs, lambda line: notices.notify(f"neuronemu: {line}"), parallel)
    compiling.add_seconds(time.perf_counter() - start)


LOCAL_COLLECTIVES = True
"""Whether a world of one rank carries out its collectives in the loop (semantics/cc.py);
tests turn it off to compare with the driver."""


def _yields(program: Program, costs: np.ndarray, local: bool = False) -> np.ndarray:
    """Per instruction, whether the interpreter hands it to a driver (a network transfer,
    without a kernel). ``local``: none is; each cc.* kernel copies a collective of a world of
    one rank itself and yields the rest."""
    from neuronemu.timing.costs import C_FORMULA, F_NETWORK

    network = costs[program.instrs[:, L.I_COST], C_FORMULA] == F_NETWORK
    return network & (not local)


def local_collectives(program: Program, world: int) -> bool:
    """Whether the loop carries out a world's collectives itself: one rank, in sync mode auto
    (the explicit replay re-times the collectives the driver logged)."""
    return LOCAL_COLLECTIVES and world == 1 and program.sync_mode == "auto"


def program_kernels(program: Program, costs: np.ndarray, local: bool = False) -> np.ndarray:
    """The kernel address of each of the program's instructions (compiled on first use;
    neuronemu/exec/kernels.py ``kernel_addresses``); the
    ranks of a multi-chip run share one table (exec/kernels.py keeps the recent ones).
    ``local``: cc.* instructions get their kernels too (``_yields``)."""
    from neuronemu.exec import kernels

    return kernels.program_addresses(program.instrs, program.ops,
                                     _yields(program, costs, local))


def _write_tensor(hbm: np.ndarray, tensor: HbmTensor, pieces) -> None:
    """Store ``pieces`` (flat value arrays, in C order, covering the tensor) into its HBM bytes,
    one piece at a time, so no temporary holds the whole tensor."""
    from neuronemu.isa import dtypes

    itemsize = dtypes.get(tensor.dtype).itemsize
    if tensor.compressed:  # the block codec needs whole rows: encode the whole tensor at once
        from neuronemu.machine.codec import encode_tensor

        values = np.concatenate(list(pieces)).reshape(tensor.shape)
        raw = encode_tensor(tensor_bits(tensor, values).astype(np.int64), itemsize)
        hbm[0, tensor.offset: tensor.offset + tensor.nbytes] = raw
        return
    words = hbm[0, tensor.offset: tensor.offset + tensor.nbytes].view(f"<u{itemsize}")
    start = 0
    for piece in pieces:
        bits = tensor_bits(tensor, piece)
        words[start: start + bits.size] = bits
        start += bits.size


def _input_slabs(array: np.ndarray) -> Iterator[np.ndarray]:
    """A checked input array as flat pieces in C order (views when it is C-contiguous)."""
    flat = np.asarray(array).reshape(-1)
    for start in range(0, flat.size, SLAB_ELEMENTS):
        yield flat[start: start + SLAB_ELEMENTS]


class Core:
    """The state of one core running ``program``; ``inputs`` maps tensor names to arrays already
    checked against the declarations."""

    def __init__(self, program: Program, inputs: dict[str, np.ndarray], seed: int, *,
                 rank: int = 0, world: int = 1, max_trace_events: int | None,
                 stochastic_rounding: bool = False, rounding_seed: int | None = None,
                 compact: bool = False):
        from neuronemu.isa import dtypes
        from neuronemu.isa.table import load_isa
        from neuronemu.timing import model
        from neuronemu.timing.costs import cost_table
        from neuronemu.timing.dma import STATS_WIDTH

        self.program = program
        self.rank = rank
        self.world = world
        self.mems = make_memories(program, compact)
        hbm = self.mems[2]
        for tensor in program.tensors.values():
            if tensor.name in inputs:
                _write_tensor(hbm, tensor, _input_slabs(inputs[tensor.name]))
            elif tensor.init[0] in _CONSTANT_INITS and not tensor.compressed:
                # one element's bits, repeated: the same bits as casting the whole array
                one = tensor_bits(tensor, np.full(1, _CONSTANT_INITS[tensor.init[0]](tensor)))
                itemsize = dtypes.get(tensor.dtype).itemsize
                hbm[0, tensor.offset: tensor.offset + tensor.nbytes].view(
                    f"<u{itemsize}")[:] = one[0]
            elif not _draw_bits(hbm, tensor, seed, rank if world > 1 else None):
                _write_tensor(hbm, tensor, initial_slabs(tensor, seed,
                                                         rank if world > 1 else None))
        regs = np.zeros(L.REG_COUNT, dtype=np.int64)
        regs[L.REG_SR_ON] = int(bool(stochastic_rounding))
        regs[L.REG_SR_SEED] = seed if rounding_seed is None else rounding_seed
        regs[L.REG_RNG_SEED] = seed  # until the kernel's set_rng_seed
        regs[L.REG_RANK] = rank
        regs[L.REG_WORLD] = world
        self.regs = regs
        self.counts = np.zeros(len(program.instrs), dtype=np.int64)
        isa = load_isa()
        self.clocks = model.track_clocks(program.target)
        self.busy = np.zeros(L.NUM_TRACKS, dtype=np.float64)
        from neuronemu.timing.regions import program_breaks

        self.breaks = program_breaks(program, tuple(int(m.shape[1]) for m in self.mems))
        self.write_end, self.read_end = model.region_tables(self.mems, self.breaks)
        for tensor in program.tensors.values():
            if tensor.name in inputs or tensor.init[0] != "nan":
                model.mark_written(self.write_end[L.SPACE_HBM], self.breaks[L.SPACE_HBM],
                                   tensor.offset, tensor.nbytes)
        self.track_free = np.zeros(L.TIMING_SLOTS, dtype=np.float64)
        engines = program.target.dma_engines
        self.engine_free = model.interval_rings(program.target)
        self.engine_busy = np.zeros(engines, dtype=np.float64)
        self.dma_stats = np.zeros((L.NUM_DMA_QUEUES, STATS_WIDTH), dtype=np.float64)
        self.timing_state = (cost_table(isa), model.target_params(program.target, program.schedule),
                             self.clocks, self.track_free, self.busy, self.breaks,
                             self.write_end, self.read_end, self.engine_free, self.engine_busy,
                             self.dma_stats)
        from neuronemu.timing.eventlog import EventLog, spilled_width, stream_rows

        # None: every event, through a buffer emptied into a file; N: the first N, in memory
        self.log = EventLog(stream_rows(world), max_trace_events, spilled_width(program))
        self.events, self.event_times = self.log.events, self.log.event_times
        self.pc = 0
        self.steps = 0
        self.status = L.STATUS_OK
        self.wall = 0.0
        self.compile_seconds = 0.0
        self.kernels: np.ndarray | None = None   # kernel address per pc, on the first run
        self.replay: Replay | None = None   # .sync explicit: the replayed times (set after the run)

    def run(self, limits: RunLimits | int) -> str:
        """Run until the kernel ends (FINISHED) or reaches a cc.* instruction (STOPPED); a fault
        or a limit (instructions, wall clock, Ctrl-C) leaves ``status`` set and returns
        FINISHED, with pc on the instruction that did not run.

        The jitted loop runs in chunks of steps so the clock and Ctrl-C are looked at every
        ~50 ms; all the loop's state is in pc, steps and the arrays it updates in place, so the
        results are bit-identical to one call (tests/robustness/test_limits.py). An int is
        an instruction limit alone."""
        from neuronemu.compiled import compiling
        from neuronemu.exec.interpreter import run_loop
        from neuronemu.isa import dtypes
        from neuronemu.machine import abi

        if not isinstance(limits, RunLimits):
            limits = RunLimits(int(limits))
        program = self.program
        before = compiling.seconds()
        fmt, table = dtypes.format_table(), dtypes.decode_table()
        dims = abi.dims_of(program.ops, program.imms, self.mems, self.regs, fmt, table)
        global _loop_ready
        if self.kernels is None:
            loop_args = None   # the loop's arguments (their types) when it is to compile too
            if not _loop_ready and not compiling.is_cached(run_loop):
                loop_args = (program.instrs, program.ops, program.imms, self.mems, self.regs,
                             fmt, table, np.int64(0), self.counts, self.timing_state,
                             self.events, self.event_times, np.int64(0), np.int64(0),
                             np.zeros(len(program.instrs), dtype=np.int64), dims)
            local = local_collectives(program, self.world)
            compile_ahead(program, self.timing_state[0], loop_args, local)
            self.kernels = program_kernels(program, self.timing_state[0], local)
        addresses = self.kernels
        if not _loop_ready:
            # a zero-step call compiles the loop (or loads it from numba's cache), so that
            # compile time counts neither as run time nor against the wall-clock limit
            if not compiling.is_cached(run_loop):
                compiling.announce("the interpreter loop")
            run_loop(program.instrs, program.ops, program.imms, self.mems, self.regs, fmt, table,
                     np.int64(self.steps), self.counts, self.timing_state, self.events,
                     self.event_times, np.int64(self.pc), np.int64(self.steps), addresses, dims)
            _loop_ready = True
        self.compile_seconds += compiling.seconds() - before
        limits.start()
        while True:
            budget = limits.chunk_end(self.steps)
            # a step records at most one event: no more steps than the buffer has rows left
            self.log.make_room(self.regs)
            room = self.log.room(self.regs)
            if room is not None:
                budget = min(budget, self.steps + room)
            start = time.perf_counter()
            status, pc, steps = run_loop(program.instrs, program.ops, program.imms, self.mems,
                                         self.regs, fmt, table, np.int64(budget), self.counts,
                                         self.timing_state, self.events, self.event_times,
                                         np.int64(self.pc), np.int64(self.steps), addresses,
                                         dims)
            elapsed = time.perf_counter() - start
            self.wall += elapsed
            chunk_full = status == L.STATUS_LIMIT and int(steps) == budget
            if chunk_full:
                limits.adapt(int(steps) - self.steps, elapsed)
            self.pc, self.steps = int(pc), int(steps)
            limits.report_progress(self)
            reason = limits.reason()
            if reason is not None and (status in (L.STATUS_LIMIT, L.STATUS_YIELD)
                                       or (status == L.STATUS_OK and reason == INTERRUPT)):
                self.status = STATUS_TIMEOUT if reason == TIMEOUT else STATUS_INTERRUPTED
                return FINISHED
            if chunk_full and self.steps < limits.max_instructions:
                continue
            if status == L.STATUS_YIELD:
                return STOPPED
            if status == L.STATUS_OUT_OF_BOUNDS and _oob_skip(program, self):
                # dma.copy oob=skip with a tile wholly outside (exec/oob.py): counted as run
                if self.steps < limits.max_instructions:
                    continue
                status = L.STATUS_LIMIT
            self.status = int(status)
            return FINISHED

    # --- cc.* instructions, executed by the multi-chip driver -----------------------------

    def _slot(self, name: str) -> tuple[int, int]:
        """(tag, value) of argument ``name`` of the instruction at pc."""
        ins = self.program.instruction(self.pc)
        k = [a.name for a in ins.definition.args].index(name)
        row = self.program.instrs[self.pc]
        return int(row[L.I_ARGS + 2 * k]), int(row[L.I_ARGS + 2 * k + 1])

    def operand(self, name: str) -> np.ndarray:
        """The lowered operand row of argument ``name`` of the instruction at pc."""
        return self.program.ops[self._slot(name)[1]]

    def int_arg(self, name: str) -> int:
        """An integer / register argument of the instruction at pc, registers resolved."""
        tag, value = self._slot(name)
        return int(self.regs[value]) if tag == L.TAG_REG else value

    def load(self, name: str) -> np.ndarray:
        """Storage bits of tile argument ``name``, int64 [P, N]."""
        from neuronemu.machine.memory import load_bits

        return load_bits(self.operand(name), self.mems, self.regs)

    def dense_bytes(self, name: str) -> np.ndarray | None:
        """The bytes of tile argument ``name`` as one view of HBM (writable), when they are one
        run in element order: a dense, uncompressed HBM tile whose partitions follow each
        other. None otherwise (``load`` / ``store`` take any tile)."""
        from neuronemu.machine.memory import dynamic_offset

        op = self.operand(name)
        if op[L.OP_SPACE] != L.SPACE_HBM or not op[L.OP_DENSE] or op[L.OP_BLOCK]:
            return None
        row = int(op[L.OP_SIZE] * op[L.OP_ITEMSIZE])
        if op[L.OP_PCOUNT] > 1 and op[L.OP_PCOLSTEP] != row:
            return None
        start = int(dynamic_offset(op, self.regs))
        return self.mems[L.SPACE_HBM][0, start: start + row * int(op[L.OP_PCOUNT])]

    def store(self, name: str, bits: np.ndarray) -> None:
        from neuronemu.machine.memory import store_bits

        store_bits(self.operand(name), self.mems, self.regs, np.ascontiguousarray(bits,
                                                                                  dtype=np.int64))

    def ready_ns(self) -> float:
        """When the instruction at pc may start: its queue is free and its tiles are ready."""
        from neuronemu.timing.model import operand_ready

        row = self.program.instrs[self.pc]
        ready = float(self.track_free[row[L.I_TRACK]])
        for k in range(row[L.I_NARGS]):
            if row[L.I_ARGS + 2 * k] != L.TAG_OPERAND:
                continue
            access = (row[L.I_ACCESS] >> (2 * k)) & 3
            t, unwritten = operand_ready(self.program.ops[row[L.I_ARGS + 2 * k + 1]], self.regs,
                                         access, self.breaks, self.write_end,
                                         self.read_end)
            ready = max(ready, float(t))
            if unwritten:
                if self.regs[L.REG_UNWRITTEN_COUNT] == 0:
                    self.regs[L.REG_UNWRITTEN_PC] = self.pc
                    self.regs[L.REG_UNWRITTEN_ARG] = k
                self.regs[L.REG_UNWRITTEN_COUNT] += 1
        return ready

    def complete(self, start: float, end: float, nbytes: int) -> None:
        """Record the instruction at pc as run from start to end on its queue, then step past.
        Its accesses and its event are recorded by the interpreter loop's own functions (run
        here as Python: a cc.* instruction is rare, and this compiles nothing)."""
        from neuronemu.timing.events import record_event
        from neuronemu.timing.model import record_accesses

        program, pc = self.program, self.pc
        row = program.instrs[pc]
        # a transfer's results are there at its end: no pipeline latency (result_latency 0)
        record_accesses.py_func(row, program.ops, self.regs, end, end, self.breaks,
                                self.write_end, self.read_end)
        track = int(row[L.I_TRACK])
        if track >= L.DMA_TRACK0:  # cc.* traffic counts in its queue's DMA statistics
            from neuronemu.timing.dma import S_BYTES, S_TRANSFERS, S_WIRE

            self.dma_stats[track - L.DMA_TRACK0, S_TRANSFERS] += 1
            self.dma_stats[track - L.DMA_TRACK0, S_BYTES] += nbytes
            self.dma_stats[track - L.DMA_TRACK0, S_WIRE] += nbytes
        self.track_free[track] = max(self.track_free[track], end)
        self.busy[track] += end - start
        self.log.make_room(self.regs)
        record_event.py_func(self.events, self.event_times, row, program.ops, self.regs, pc,
                             start, end, end - start, nbytes, nbytes)
        self.counts[pc] += 1
        self.steps += 1
        self.pc += 1
