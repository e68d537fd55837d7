"""The error for a run that stopped with a fault status: what the interpreter's status codes
and fault registers mean, in words and at the instruction's location. Used by the single-core
API and the multi-chip driver alike (so neither imports the other)."""

from __future__ import annotations

import numpy as np

from neuronemu.errors import Interrupted, LimitReached, RuntimeFault
from neuronemu.program import Program


def fault(program: Program, status: int, pc: int, regs, limits, steps: int) -> RuntimeFault:
    """The error for a run that ended with ``status`` at ``pc`` after ``steps`` instructions
    (``limits``: the RunLimits it ran under)."""
    from neuronemu.exec import core as C
    from neuronemu.machine import layout as L
    from neuronemu.program import Tile

    ins = program.instruction(pc)
    location = ins.location if ins else None
    at = f" at {ins.definition.name}" if ins else " as the kernel ended"
    if status == L.STATUS_LIMIT:
        return LimitReached(f"instruction limit of {limits.max_instructions} reached{at} (an "
                            f"endless loop?); raise it with --max-instructions (API: "
                            f"max_instructions=)", location, limit="instructions", steps=steps)
    if status == C.STATUS_TIMEOUT:
        return LimitReached(f"wall-clock limit of {limits.timeout:g} s reached{at} after {steps} "
                            f"instructions (an endless loop?); raise it with --timeout SECONDS "
                            f"(0: no limit; API: timeout=)", location, limit="timeout",
                            steps=steps)
    if status == C.STATUS_INTERRUPTED:
        return Interrupted(f"interrupted (Ctrl-C){at} after {steps} instructions", location,
                           limit="interrupt", steps=steps)
    if status == L.STATUS_OUT_OF_BOUNDS and ins is not None:
        arg = ins.definition.args[int(regs[L.REG_FAULT_ARG])]
        tile = ins.args[arg.name]
        if isinstance(tile, Tile):
            values = ", ".join(f"r{r} = {int(regs[r])}" for r, _ in tile.regs)
            notes = ()
            if program.instrs[pc, L.I_FLAGS] & L.DMA_OOB_SKIP:
                partly = ("oob=skip skips a transfer whose tile lies wholly outside its tensor; "
                          "this one is partly inside")
                notes = (partly,)
            return RuntimeFault(f"{ins.definition.name} argument '{arg.name}' leaves "
                                f"'{tile.symbol}' at run time ({values}); the instruction was not "
                                f"executed", tile.location, notes=notes)
    if status == L.STATUS_BAD_INDEX and ins is not None and "indices" in ins.args:
        p, value, limit, j = (int(v) for v in regs[L.REG_FAULT_INFO: L.REG_FAULT_INFO + 4])
        index = ins.args["indices"]
        data = ins.args["data"] if "data" in ins.args else ins.args["dst"]   # gather / scatter
        return RuntimeFault(f"{ins.definition.name}: {index.symbol}[{p}, {j}] = {value} is not an "
                            f"element of '{data.symbol}' (0..{limit - 1} per partition); nothing "
                            f"was written", index.location)
    if status in (L.STATUS_BAD_INDEX, L.STATUS_OVERLAP) and ins is not None:
        a, b, c = (int(v) for v in regs[L.REG_FAULT_INFO: L.REG_FAULT_INFO + 3])
        table = next(t for t in ins.args.values() if isinstance(t, Tile) and t.space == "hbm")
        index = ins.args["index"]
        if status == L.STATUS_BAD_INDEX:
            return RuntimeFault(f"{ins.definition.name}: {index.symbol}[{a}] = {b} is not a row of "
                                f"'{table.symbol}' (rows 0..{c - 1}); nothing was written",
                                index.location)
        return RuntimeFault(f"{ins.definition.name}: partitions {a} and {b} of '{index.symbol}' both "
                            f"name row {c} of '{table.symbol}', so one transfer would write it "
                            f"twice (overlapping destination writes); nothing was written",
                            index.location)
    if status == L.STATUS_KERNEL_ERROR and ins is not None:
        return RuntimeFault(f"internal error: the emulator's {ins.definition.name} failed on this "
                            f"instruction (an emulator bug, please report it with the kernel); "
                            f"nothing after it ran", location)
    if status == L.STATUS_MATMUL_VALUE and ins is not None:
        arg, p, j, bits = (int(v) for v in regs[L.REG_FAULT_INFO: L.REG_FAULT_INFO + 4])
        name = ins.definition.args[arg].name
        tile = ins.args[name]
        value = float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
        if name == "moving" and ins.args.get("is_transpose"):
            promise = ("is_transpose=true needs every column of moving to hold one 1.0 and "
                       "zeros (columns of an identity or permutation matrix)")
        else:
            promise = f"is_{name}_onezero=true promises only 0.0 and 1.0 in {name}"
        what = (f"a second nonzero in column {j}" if name == "moving" and value == 1.0
                and ins.args.get("is_transpose") else repr(value))
        declared = program.allocations.get(tile.symbol) or program.tensors.get(tile.symbol)
        written = tile.free_dims_as_written(declared.shape) if declared is not None else ()
        index = np.unravel_index(j, written) if written and int(np.prod(written)) > j else (j,)
        element = ", ".join(str(int(i)) for i in (p, *index))
        return RuntimeFault(f"{ins.definition.name}: {promise}, but element [{element}] of the "
                            f"{name} tile (partition {tile.partition_start + p} of "
                            f"'{tile.symbol}') is {what}; nothing was written", tile.location)
    if status == L.STATUS_DIV_ZERO and ins is not None:
        return RuntimeFault(f"{ins.definition.name}: division by zero (b = 0)", ins.location)
    return RuntimeFault(f"execution fault (status {status})", location)
