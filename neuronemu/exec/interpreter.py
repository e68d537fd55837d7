"""Run a lowered program: the jitted fetch/dispatch loop.

The loop executes instructions in program order (control flow included) and counts the dynamic
instructions per engine. Before an instruction runs, every tile operand is bounds-checked, so a
faulting instruction writes nothing. The loop does not contain any instruction's semantics: it
calls each instruction's kernel through ``kernels[pc]``, an address from
``neuronemu.exec.kernels``, so compiling the loop does not compile the instruction set.
"""

from __future__ import annotations

from neuronemu.compiled.jit import jit
from neuronemu.machine import layout as L
from neuronemu.machine.abi import DIMS_WIDTH, borrowed, call_kernel
from neuronemu.machine.memory import in_bounds
from neuronemu.timing.costs import C_FORMULA, F_FREE, F_NETWORK
from neuronemu.timing.dma import S_BYTES, S_TRANSFERS, S_WIRE
from neuronemu.timing.events import record_event
from neuronemu.timing.model import local_collective, schedule

ENGINE_DMA = 4   # isa/enums.toml
ENGINE_CTRL = 7


@jit
def run_loop(instrs, ops, imms, mems, regs, fmt, table, max_steps, counts, timing, events,
             event_times, start_pc, start_steps, kernels, dims):
    """Returns (status, pc, steps), starting at ``start_pc`` with ``start_steps`` already run.
    ``counts[pc]`` counts executions of each static instruction.

    A cc.* instruction (cost formula network) returns STATUS_YIELD with pc on it, unexecuted and
    uncounted: the multi-chip driver executes and times it, then resumes at the next pc. The
    exception is a collective the core gave a kernel (a world of one rank, exec/core.py
    ``_yields``) whose kernel does not yield: it runs here and is timed as the driver would.

    ``timing`` = (costs, params, clocks, track_free, busy, breaks, write_end, read_end,
    engine_free, engine_busy, dma_stats): the state of the timing model (neuronemu.timing.model
    and .dma), updated in place; ``dma_stats`` [queues, STATS_WIDTH] sums transfers and bytes per
    queue. Each non-control instruction is recorded in ``events`` / ``event_times``
    (neuronemu.timing.events.record_event), which the explicit-sync scheduler replays.

    ``kernels`` [n] holds each instruction's kernel address (neuronemu.exec.kernels) and
    ``dims`` the sizes of the arrays the kernels receive as pointers."""
    (costs, params, clocks, track_free, busy, breaks, write_end, read_end, engine_free,
     engine_busy, dma_stats) = timing
    # every array the loop (and schedule) indexes, borrowed: a row or view of a borrowed array
    # is not reference counted (an atomic increment and decrement per view otherwise, the
    # largest fixed cost per instruction); the caller's arrays own the memory throughout
    instrs, ops, regs, counts = borrowed(instrs), borrowed(ops), borrowed(regs), borrowed(counts)
    events, event_times, kernels = borrowed(events), borrowed(event_times), borrowed(kernels)
    mems = (borrowed(mems[0]), borrowed(mems[1]), borrowed(mems[2]))
    costs, params, clocks = borrowed(costs), borrowed(params), borrowed(clocks)
    track_free, busy, dma_stats = borrowed(track_free), borrowed(busy), borrowed(dma_stats)
    engine_free, engine_busy = borrowed(engine_free), borrowed(engine_busy)
    breaks = (borrowed(breaks[0]), borrowed(breaks[1]), borrowed(breaks[2]))
    write_end = (borrowed(write_end[0]), borrowed(write_end[1]), borrowed(write_end[2]))
    read_end = (borrowed(read_end[0]), borrowed(read_end[1]), borrowed(read_end[2]))
    pc = start_pc
    steps = start_steps
    n = instrs.shape[0]
    if dims.shape[0] != DIMS_WIDTH or kernels.shape[0] != n:
        return L.STATUS_BAD_OPCODE, pc, steps
    # the kernels take raw pointers: the arrays stay alive (and unmoved) for this whole call
    row_bytes = instrs.shape[1] * 8
    ins_base = instrs.ctypes.data
    ops_p, imms_p, regs_p = ops.ctypes.data, imms.ctypes.data, regs.ctypes.data
    sbuf_p, psum_p, hbm_p = mems[0].ctypes.data, mems[1].ctypes.data, mems[2].ctypes.data
    fmt_p, table_p, dims_p = fmt.ctypes.data, table.ctypes.data, dims.ctypes.data
    while pc < n:
        if steps >= max_steps:
            return L.STATUS_LIMIT, pc, steps
        ins = instrs[pc]
        for k in range(ins[L.I_NARGS]):
            if (ins[L.I_ARGS + 2 * k] == L.TAG_OPERAND
                    and not in_bounds(ops[ins[L.I_ARGS + 2 * k + 1]], regs, mems)):
                regs[L.REG_FAULT_ARG] = k
                return L.STATUS_OUT_OF_BOUNDS, pc, steps
        formula = costs[ins[L.I_COST], C_FORMULA]
        kernel = kernels[pc]
        if kernel == 0:
            if formula == F_NETWORK:
                return L.STATUS_YIELD, pc, steps
            return L.STATUS_BAD_OPCODE, pc, steps
        regs[L.REG_PC] = pc + 1
        regs[L.REG_STEP] = steps
        regs[L.REG_SR_STORE] = 0
        is_dma = ins[L.I_ENGINE] == ENGINE_DMA
        status = L.STATUS_OK
        ran = False   # the kernel has run (a DMA or a collective: before its timing)
        # timing reads register offsets before a branch may change them; a free instruction
        # (ctrl) takes no time and touches no memory: what schedule would return, without the
        # call (which costs more than the instruction)
        if formula == F_FREE:
            start = end = track_free[ins[L.I_TRACK]]
            cycles, unwritten, nbytes, wire = 0.0, -1, 0.0, 0.0
        else:
            if is_dma or formula == F_NETWORK:
                # a DMA runs first: compressed transfers learn their wire bytes from the data.
                # A collective of a world of one rank is a copy (semantics/cc.py); anything
                # else it returns STATUS_YIELD for, unwritten, and the driver carries it out
                regs[L.REG_DMA_WIRE] = -1
                status = call_kernel(kernel, ins_base + pc * row_bytes, ops_p, imms_p, sbuf_p,
                                     psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
                if status != L.STATUS_OK:
                    return status, pc, steps
                ran = True
            if formula == F_NETWORK:
                start, end, nbytes = local_collective(ins, ops, regs, pc, params, track_free,
                                                      busy, breaks, write_end, read_end,
                                                      dma_stats)
                cycles, unwritten, wire = end - start, -1, nbytes
            else:
                start, end, cycles, unwritten, nbytes, wire = schedule(
                    ins, ops, regs, costs, params, clocks, track_free, busy, breaks, write_end,
                    read_end, (engine_free, engine_busy))
        if is_dma:
            q = ins[L.I_TRACK] - L.DMA_TRACK0
            dma_stats[q, S_TRANSFERS] += 1
            dma_stats[q, S_BYTES] += nbytes
            dma_stats[q, S_WIRE] += wire
        if unwritten >= 0:
            if regs[L.REG_UNWRITTEN_COUNT] == 0:
                regs[L.REG_UNWRITTEN_PC] = pc
                regs[L.REG_UNWRITTEN_ARG] = unwritten
            regs[L.REG_UNWRITTEN_COUNT] += 1
        if ins[L.I_ENGINE] != ENGINE_CTRL:
            record_event(events, event_times, ins, ops, regs, pc, start, end, cycles, nbytes,
                         wire)
        if not ran:
            status = call_kernel(kernel, ins_base + pc * row_bytes, ops_p, imms_p, sbuf_p,
                                 psum_p, hbm_p, regs_p, fmt_p, table_p, dims_p)
        counts[pc] += 1
        steps += 1
        if status != L.STATUS_OK:
            return status, pc, steps
        pc = regs[L.REG_PC]
    return L.STATUS_OK, pc, steps
