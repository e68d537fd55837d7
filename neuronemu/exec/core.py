"""One NeuronCore's run state: memories, registers and timing state, how it runs until the next
cc.* instruction, and how a cc.* instruction is timed and recorded on it.

A single-core run is one ``Core``; a multi-chip run (neuronemu/multichip/spmd.py) holds one per
rank and moves data between them at the cc.* instructions the loop stops at.
"""

from __future__ import annotations

import zlib

import numpy as np

from neuronemu.exec import layout as L
from neuronemu.program import HbmTensor, Program

FINISHED = "finished"
STOPPED = "stopped"   # at a cc.* instruction (pc points at it)


def initial_values(tensor: HbmTensor, seed: int, rank: int | None = None) -> np.ndarray:
    """The default contents of a tensor: float64 values by its ``init``, before the dtype cast.

    Random initialisers draw from PCG64 keyed by (seed, crc32(name)[, rank]), so every tensor
    (and, in a multi-rank run, every rank's copy) gets its own reproducible stream whatever the
    declaration order."""
    kind, *params = tensor.init
    shape = tensor.shape
    key = [seed, zlib.crc32(tensor.name.encode())] + ([rank] if rank is not None else [])
    rng = np.random.default_rng(key)
    if kind == "zeros":
        return np.zeros(shape)
    if kind == "ones":
        return np.ones(shape)
    if kind == "full":
        return np.full(shape, params[0])
    if kind == "arange":
        return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    if kind == "identity":
        return np.eye(shape[0])
    if kind == "normal":
        return rng.normal(params[0], params[1], size=shape)
    if kind == "uniform":
        return rng.uniform(params[0], params[1], size=shape)
    if kind == "relu_normal":  # ReLU-sparse activations or weights: about half are exact zeros
        return np.maximum(rng.normal(params[0], params[1], size=shape), 0.0)
    return np.full(shape, np.nan)


_CONSTANT_INITS = {"nan": lambda t: np.nan, "zeros": lambda t: 0.0, "ones": lambda t: 1.0,
                   "full": lambda t: t.init[1]}


def tensor_bits(tensor: HbmTensor, values: np.ndarray) -> np.ndarray:
    from neuronemu.numerics import dtypes

    dt = dtypes.get(tensor.dtype)
    if dt.kind != "float" and values.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            if np.isnan(values).any():
                return np.full(values.shape, (1 << (8 * dt.itemsize)) - 1, dtype=np.uint64)
    return np.ascontiguousarray(dtypes.to_bits(values, tensor.dtype))


def make_memories(program: Program, compact: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SBUF and PSUM start as 0xFF bytes (NaN in every float dtype, -1 in ints) so that reading
    never-written memory shows up, as nki.simulate does; HBM holds only the declared tensors.

    ``compact``: SBUF / PSUM hold only the bytes per partition the kernel's allocations reach
    (tiles cannot address past their allocation), so a run of many ranks costs memory in
    proportion to what the kernel uses, not to the size of the chips."""
    target = program.target

    def width(space: str, full: int) -> int:
        if not compact:
            return full
        used = max((a.offset + a.bytes_per_partition for a in program.allocations.values()
                    if a.space == space), default=0)
        return max(-(-used // 64) * 64, 64)

    sbuf = np.full((target.partitions, width("sbuf", target.sbuf_partition_bytes)), 0xFF,
                   dtype=np.uint8)
    psum = np.full((target.partitions, width("psum", target.psum_partition_bytes)), 0xFF,
                   dtype=np.uint8)
    # a multiple of 4 bytes, so the loaders can view it as fp32 words
    hbm = np.full((1, max(-(-program.hbm_bytes // 4) * 4, 4)), 0xFF, dtype=np.uint8)
    return sbuf, psum, hbm


def program_kernels(program: Program, costs: np.ndarray) -> np.ndarray:
    """The kernel address of each of the program's instructions (compiled on first use), kept
    on the program so that the ranks of a multi-chip run share one table."""
    from neuronemu.exec import kernels
    from neuronemu.timing.model import C_FORMULA, F_NETWORK

    addresses = getattr(program, "_kernel_addresses", None)
    if addresses is None:
        yields = costs[program.instrs[:, L.I_COST], C_FORMULA] == F_NETWORK
        addresses = kernels.kernel_addresses(program.instrs, yields)
        program._kernel_addresses = addresses
    return addresses


class Core:
    """The state of one core running ``program``; ``inputs`` maps tensor names to arrays already
    checked against the declarations."""

    def __init__(self, program: Program, inputs: dict[str, np.ndarray], seed: int, *,
                 rank: int = 0, world: int = 1, max_trace_events: int,
                 stochastic_rounding: bool = False, rounding_seed: int | None = None,
                 compact: bool = False):
        from neuronemu.isa.table import load_isa
        from neuronemu.numerics import dtypes
        from neuronemu.timing import model
        from neuronemu.timing.dma import ENGINE_INTERVALS, STATS_WIDTH

        self.program = program
        self.rank = rank
        self.mems = make_memories(program, compact)
        hbm = self.mems[2]
        for tensor in program.tensors.values():
            if tensor.name in inputs:
                bits = tensor_bits(tensor, inputs[tensor.name])
            elif tensor.init[0] in _CONSTANT_INITS:
                # one element's bits, repeated: the same bits as casting the whole array
                one = tensor_bits(tensor, np.full(1, _CONSTANT_INITS[tensor.init[0]](tensor)))
                bits = np.full(tensor.shape, one[0], dtype=one.dtype)
            else:
                bits = tensor_bits(tensor, initial_values(tensor, seed,
                                                          rank if world > 1 else None))
            itemsize = dtypes.get(tensor.dtype).itemsize
            if tensor.compressed:
                from neuronemu.exec.codec import encode_tensor

                raw = encode_tensor(bits.astype(np.int64), itemsize)
            else:
                raw = bits.astype(f"<u{itemsize}").view(np.uint8).ravel()
            hbm[0, tensor.offset: tensor.offset + tensor.nbytes] = raw
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
        self.write_end, self.read_end = model.region_tables(self.mems)
        for tensor in program.tensors.values():
            if tensor.name in inputs or tensor.init[0] != "nan":
                model.mark_written(self.write_end[L.SPACE_HBM], tensor.offset, tensor.nbytes)
        self.track_free = np.zeros(L.TIMING_SLOTS, dtype=np.float64)
        engines = program.target.dma_engines
        self.engine_free = np.zeros((engines, ENGINE_INTERVALS + 1, 2), dtype=np.float64)
        self.engine_busy = np.zeros(engines, dtype=np.float64)
        self.dma_stats = np.zeros((L.NUM_DMA_QUEUES, STATS_WIDTH), dtype=np.float64)
        self.timing_state = (model.cost_table(isa), model.target_params(program.target),
                             self.clocks, self.track_free, self.busy, self.write_end,
                             self.read_end, self.engine_free, self.engine_busy, self.dma_stats)
        from neuronemu.exec.interpreter import EVENT_TIMES_WIDTH, EVENT_WIDTH

        cap = max(max_trace_events, 1)
        self.events = np.zeros((cap, EVENT_WIDTH), dtype=np.int64)
        self.event_times = np.zeros((cap, EVENT_TIMES_WIDTH), dtype=np.float64)
        self.pc = 0
        self.steps = 0
        self.status = L.STATUS_OK
        self.wall = 0.0
        self.compile_seconds = 0.0

    def run(self, max_instructions: int) -> str:
        """Run until the kernel ends (FINISHED) or reaches a cc.* instruction (STOPPED); a fault
        leaves ``status`` set and returns FINISHED."""
        import time

        from neuronemu.exec import compiling, kernels
        from neuronemu.exec.interpreter import run_loop
        from neuronemu.numerics import dtypes

        program = self.program
        before = compiling.seconds()
        addresses = program_kernels(program, self.timing_state[0])
        fmt, table = dtypes.format_table(), dtypes.decode_table()
        dims = kernels.dims_of(program.ops, program.imms, self.mems, self.regs, fmt, table)
        if not compiling.is_cached(run_loop):
            compiling.announce("the interpreter loop")
        loop_before = compiling.seconds()
        start = time.perf_counter()
        status, pc, steps = run_loop(program.instrs, program.ops, program.imms, self.mems,
                                     self.regs, fmt, table,
                                     np.int64(max_instructions), self.counts, self.timing_state,
                                     self.events, self.event_times, np.int64(self.pc),
                                     np.int64(self.steps), addresses, dims)
        # compiling is not running: the loop's own first-call compile is taken out of its time
        self.wall += time.perf_counter() - start - (compiling.seconds() - loop_before)
        self.compile_seconds += compiling.seconds() - before
        self.pc, self.steps = int(pc), int(steps)
        if status == L.STATUS_YIELD:
            return STOPPED
        self.status = int(status)
        return FINISHED

    # --- cc.* instructions, executed by the multi-chip driver -----------------------------

    def _slot(self, name: str) -> tuple[int, int]:
        """(tag, value) of argument ``name`` of the instruction at pc."""
        ins = self.program.instructions[self.pc]
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
        from neuronemu.exec.memory import load_bits

        return load_bits(self.operand(name), self.mems, self.regs)

    def store(self, name: str, bits: np.ndarray) -> None:
        from neuronemu.exec.memory import store_bits

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
                                         access, self.write_end, self.read_end)
            ready = max(ready, float(t))
            if unwritten:
                if self.regs[L.REG_UNWRITTEN_COUNT] == 0:
                    self.regs[L.REG_UNWRITTEN_PC] = self.pc
                    self.regs[L.REG_UNWRITTEN_ARG] = k
                self.regs[L.REG_UNWRITTEN_COUNT] += 1
        return ready

    def complete(self, start: float, end: float, nbytes: int) -> None:
        """Record the instruction at pc as run from start to end on its queue, then step past."""
        from neuronemu.exec.memory import dynamic_offset
        from neuronemu.timing.model import operand_done

        program, pc = self.program, self.pc
        row = program.instrs[pc]
        for k in range(row[L.I_NARGS]):
            if row[L.I_ARGS + 2 * k] == L.TAG_OPERAND:
                access = (row[L.I_ACCESS] >> (2 * k)) & 3
                operand_done(program.ops[row[L.I_ARGS + 2 * k + 1]], self.regs, access, end,
                             self.write_end, self.read_end)
        track = int(row[L.I_TRACK])
        if track >= L.DMA_TRACK0:  # cc.* traffic counts in its queue's DMA statistics
            from neuronemu.timing.dma import S_BYTES, S_TRANSFERS, S_WIRE

            self.dma_stats[track - L.DMA_TRACK0, S_TRANSFERS] += 1
            self.dma_stats[track - L.DMA_TRACK0, S_BYTES] += nbytes
            self.dma_stats[track - L.DMA_TRACK0, S_WIRE] += nbytes
        self.track_free[track] = max(self.track_free[track], end)
        self.busy[track] += end - start
        e = int(self.regs[L.REG_EVENTS])
        if e < len(self.events):
            self.events[e, 0] = pc
            self.events[e, 1] = track
            for k in range(row[L.I_NARGS]):
                tag, value = row[L.I_ARGS + 2 * k], row[L.I_ARGS + 2 * k + 1]
                if tag == L.TAG_OPERAND:
                    self.events[e, 2 + k] = dynamic_offset(program.ops[value], self.regs)
                elif tag == L.TAG_REG:
                    self.events[e, 2 + k] = self.regs[value]
                else:
                    self.events[e, 2 + k] = value
            self.event_times[e] = (start, end, end - start, nbytes, nbytes)
        self.regs[L.REG_EVENTS] = e + 1
        self.counts[pc] += 1
        self.steps += 1
        self.pc += 1
