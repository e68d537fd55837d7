"""Cost per instruction: every instruction kind against a numpy floor, the table of issue 29.

Each case is one instruction with fixed operands, at free size N = 512 and 64 on 128 partitions
([128, 512] and [128, 64]), or at the instruction's own fixed shape; fp32, bf16 and fp8 where the
ISA allows. Per case and size:

  emu_us   CPU time (time.process_time) of a whole in-process neuronemu.run() of a kernel that
           runs the instruction U times per loop iteration (8; ctrl and sync 32 or 16; cc 4),
           for two iteration counts i1 < i2 (i2 sized for --target-seconds of CPU):
           (T(i2) - T(i1)) / ((i2 - i1) U), less the loop's own ctrl.add + ctrl.blt per
           iteration (measured once, on a ctrl-only loop). Fixed costs (set-up, inputs, report)
           cancel; the timing model, the trace event and the critical-path pass of the
           instruction are included: what a user's run pays per instruction. Min of --reps.
  loop_us  the same difference on Result.wall_seconds (the compiled loop alone; wall clock, so
           inflated by machine load). In --json only.
  np_us    the same math in numpy on arrays of the same shapes and dtypes: one BLAS thread,
           preallocated outputs (out=) wherever numpy allows, casts by ml_dtypes' astype (round
           to nearest even). Min over --reps batches of ~20 ms each, CPU time.
  np64_us  activations only: the function computed in float64 and rounded once, as neuronemu
           does (numpy's fp32 SIMD functions are faster and not correctly rounded).
  ratio    emu_us / np_us; none where there is no floor (ctrl, sync: nothing to compute).

Inputs are seeded normal(0, 1) tensors (positive ones where the function needs them) DMA'd into
their tiles before the loop. The emulator and numpy are measured one right after the other for
each case, so a change in the machine's load hits both. CPU time, not wall time, so a busy
machine inflates the figures less; it still does (caches, frequency): compare runs made on one
machine at one load.

    python -m tools.inst_table                      measure every case, print the table
    python -m tools.inst_table --only tensor_tensor,dma.copy --sizes 512 --reps 1
    python -m tools.inst_table --json raw.json      also keep the raw rows (one JSON document)
    python -m tools.inst_table --from-json raw.json --write-docs
                                                    table of a saved run into docs/engine.md

A full run takes 2.5 minutes on a 2-core machine with a warm compiled-code cache (`neuronemu
warm`), 6 with a cold one: a case's first run loads or compiles its kernels, and is not counted.
docs/engine.md, "Cost per instruction", says how to read the table.
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    # numpy's floor runs BLAS on one thread, and numba's on one; both libraries read these once,
    # when first imported, so they are set before anything imports them. Only when run as the
    # tool: a test importing this module leaves its process's environment alone.
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse
import json
import math
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

import neuronemu

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "engine.md"
BEGIN = "<!-- inst-table:begin -->"
END = "<!-- inst-table:end -->"
SCHEMA_VERSION = 1
GOAL = 3.0            # issue 29: every instruction kind within 3x of its numpy floor at [128, 512]
TARGET_S = 0.12       # CPU seconds of the longer of the two runs of a case
FLOOR_BATCH_S = 0.02  # CPU seconds of one batch of numpy floor calls
SIZES = (512, 64)     # the free sizes of a tile case; a fixed-shape case gives its own

BF16 = ml_dtypes.bfloat16
F8 = ml_dtypes.float8_e4m3
F8FN = ml_dtypes.float8_e4m3fn
F32 = np.float32
RNG = np.random.default_rng(0)
P = 128

NPDT = {"float32": F32, "bfloat16": BF16, "float8_e4m3": F8, "float8_e4m3fn": F8FN,
        "int32": np.int32, "uint32": np.uint32, "uint16": np.uint16, "uint8": np.uint8}
ABBR = {"float32": "f32", "bfloat16": "bf16", "float8_e4m3": "fp8", "float8_e4m3fn": "fp8fn",
        "int32": "i32", "uint32": "u32", "uint8": "u8", "uint16": "u16"}

Floor = Callable[[], object]


def note(message: str) -> None:
    """Progress on stderr, so stdout stays the table."""
    print(f"inst_table: {message}", file=sys.stderr, flush=True)


def arr(shape: tuple[int, ...], dtype: str, kind: str = "normal") -> np.ndarray:
    """A seeded numpy input of ``dtype`` (a neuronemu dtype name) for a floor."""
    if kind == "normal":
        x = RNG.standard_normal(shape)
    elif kind == "pos":
        x = np.abs(RNG.standard_normal(shape)) + 0.5
    elif kind == "mask":
        x = RNG.integers(0, 2, shape)
    elif kind == "arange":
        x = np.arange(math.prod(shape)).reshape(shape) % 64
    else:
        raise ValueError(kind)
    return x.astype(NPDT[dtype])


# ---------------------------------------------------------------------------- kernels and cases

class Kernel:
    """Declarations and set-up lines of one case's kernel; ``text`` adds the measured loop."""

    def __init__(self, target: str = "trn2") -> None:
        self.target = target
        self.decl: list[str] = []
        self.setup: list[str] = []

    def inp(self, name: str, dtype: str, shape: list[int], init: str = "normal(0, 1)",
            space: str = "sbuf") -> Kernel:
        """An on-chip tile filled by DMA from a seeded HBM input."""
        s = ", ".join(map(str, shape))
        self.decl.append(f".hbm h_{name} {dtype}[{s}] input init={init}")
        self.decl.append(f".{space} {name} {dtype}[{s}]")
        if space == "psum":  # DMA cannot write PSUM: stage through SBUF
            self.decl.append(f".sbuf st_{name} {dtype}[{s}]")
            self.setup.append(f"dma.copy st_{name}, h_{name}")
            self.setup.append(f"vector.tensor_copy {name}, st_{name}")
        else:
            self.setup.append(f"dma.copy {name}, h_{name}")
        return self

    def out(self, name: str, dtype: str, shape: list[int], space: str = "sbuf") -> Kernel:
        self.decl.append(f".{space} {name} {dtype}[{', '.join(map(str, shape))}]")
        return self

    def hbm(self, name: str, dtype: str, shape: list[int], role: str = "input",
            init: str | None = None, extra: str = "") -> Kernel:
        i = f" init={init}" if init else ""
        self.decl.append(f".hbm {name} {dtype}[{', '.join(map(str, shape))}] {role}{i}{extra}")
        return self

    def line(self, text: str) -> Kernel:
        self.setup.append(text)
        return self

    def text(self, body: str, unroll: int, iters: int) -> str:
        """The kernel: set-up, then ``iters`` iterations of ``unroll`` copies of ``body``."""
        lines = [f".target {self.target}", *self.decl, *self.setup, "ctrl.mov r0, 0", "loop:"]
        lines += [body] * unroll
        lines += ["ctrl.add r0, r0, 1", f"ctrl.blt r0, {iters}, loop"]
        return "\n".join(lines) + "\n"


@dataclass
class Case:
    """One row of the table. ``build(N)`` gives the kernel's declarations and set-up,
    ``body(N)`` the measured instruction text (``per`` instructions), ``floor(N)`` a zero-argument
    numpy callable doing one instruction's math (``floor64``: in float64, rounded once)."""

    family: str
    name: str
    build: Callable[[int], Kernel]
    body: Callable[[int], str]
    floor: Callable[[int], Floor]
    sizes: tuple[int, ...] = SIZES
    unroll: int = 8
    note: str = ""
    per: int = 1
    floor64: Callable[[int], Floor] | None = None

    @property
    def label(self) -> str:
        return f"{self.family} {self.name}"


CASES: list[Case] = []


def case(family: str, name: str, build: Callable[[int], Kernel], body: Callable[[int], str],
         floor: Callable[[int], Floor], **options: Any) -> None:
    CASES.append(Case(family, name, build, body, floor, **options))


def same(text: str) -> Callable[[int], str]:
    """A body that does not depend on N."""
    return lambda n: text


def no_floor(n: int) -> Floor:
    """ctrl and sync compute nothing numpy could do: no floor, no ratio."""
    return lambda: None


def fill_floor(shape: tuple[int, ...], dtype: Any, value: float) -> Floor:
    o = np.empty(shape, dtype)
    return lambda: o.fill(value)


def copy_floor(shape: tuple[int, ...], dtype: Any) -> Floor:
    o = np.empty(shape, dtype)
    return lambda: o.copy()


# ---------------------------------------------------------------------------- Vector: tensor_tensor

def _tt(dt_in: str, dt_out: str, npop: Callable, kind: str = "normal"):
    init_b = "uniform(0.5, 2)" if kind == "pos" else "normal(0, 1)"

    def build(n):
        return (Kernel().inp("a", dt_in, [P, n]).inp("b", dt_in, [P, n], init=init_b)
                .out("c", dt_out, [P, n]))

    def floor(n):
        a, b = arr((P, n), dt_in), arr((P, n), dt_in, kind)
        c32 = np.empty((P, n), F32)
        if dt_in == "float32" and dt_out == "float32":
            return lambda: npop(a, b, out=c32)
        out_np = NPDT[dt_out]

        def f():
            npop(a.astype(F32), b.astype(F32), out=c32)
            return c32.astype(out_np) if out_np is not F32 else c32
        return f
    return build, floor


for dt_in, dt_out in (("float32", "float32"), ("float32", "bfloat16"), ("bfloat16", "bfloat16"),
                      ("float8_e4m3", "bfloat16")):
    b, f = _tt(dt_in, dt_out, np.add)
    case("vector.tensor_tensor", f"add {ABBR[dt_in]}->{ABBR[dt_out]}", b,
         same("vector.tensor_tensor c, a, b, op=add"), f)
for op, npop, kind in (("multiply", np.multiply, "normal"), ("maximum", np.maximum, "normal"),
                       ("divide", np.divide, "pos"), ("greater_equal", np.greater_equal, "normal")):
    b, f = _tt("float32", "float32", npop, kind)
    case("vector.tensor_tensor", f"{op} f32->f32", b,
         same(f"vector.tensor_tensor c, a, b, op={op}"), f)


def _and_floor(n):
    a, c = arr((P, n), "int32", "arange"), np.empty((P, n), np.int32)
    return lambda: np.bitwise_and(a, a, out=c)


case("vector.tensor_tensor", "bitwise_and i32->i32",
     lambda n: (Kernel().inp("a", "int32", [P, n], init="arange")
                .inp("b", "int32", [P, n], init="arange").out("c", "int32", [P, n])),
     same("vector.tensor_tensor c, a, b, op=bitwise_and"), _and_floor)

# ---------------------------------------------------------------------------- Vector: tensor_scalar


def _ts(dt_in: str, dt_out: str, column: bool, engine: str = "vector",
        ops_pair: tuple[str, str] = ("subtract", "multiply")):
    def build(n):
        k = Kernel().inp("x", dt_in, [P, n]).out("y", dt_out, [P, n])
        if column:
            k.inp("m", "float32", [P, 1]).inp("s", "float32", [P, 1], init="uniform(0.5, 2)")
        return k
    ops = (f"op0={ops_pair[0]}, operand0=m, op1={ops_pair[1]}, operand1=s" if column
           else "op0=multiply, operand0=0.5, op1=add, operand1=0.25")
    npops = {"subtract": np.subtract, "multiply": np.multiply, "add": np.add}

    def floor(n):
        x = arr((P, n), dt_in)
        m = arr((P, 1), "float32")
        s = np.abs(arr((P, 1), "float32")) + 0.5
        t = np.empty((P, n), F32)
        out_np = NPDT[dt_out]

        def f():
            xx = x if dt_in == "float32" else x.astype(F32)
            if column:
                npops[ops_pair[0]](xx, m, out=t)
                npops[ops_pair[1]](t, s, out=t)
            else:
                np.multiply(xx, F32(0.5), out=t)
                np.add(t, F32(0.25), out=t)
            return t if out_np is F32 else t.astype(out_np)
        return f
    return build, same(f"{engine}.tensor_scalar y, x, {ops}"), floor


for dt_in, dt_out, column in (("float32", "float32", False), ("float32", "float32", True),
                              ("float32", "bfloat16", True), ("bfloat16", "bfloat16", False),
                              ("bfloat16", "float32", False),
                              ("float8_e4m3", "bfloat16", False)):
    b, body, f = _ts(dt_in, dt_out, column)
    case("vector.tensor_scalar", f"{'col' if column else 'imm'} {ABBR[dt_in]}->{ABBR[dt_out]}",
         b, body, f)

# ---------------------------------------------------------------------------- Vector: the others


def _reduce(op: str, dt: str):
    npf = {"maximum": np.max, "add": np.sum}[op]

    def floor(n):
        x = arr((P, n), dt)
        o = np.empty((P,), F32)
        if dt == "float32":
            return lambda: npf(x, axis=1, out=o)
        return lambda: npf(x.astype(F32), axis=1, out=o)
    return (lambda n: Kernel().inp("x", dt, [P, n]).out("r", "float32", [P, 1]),
            same(f"vector.tensor_reduce r, x, op={op}"), floor)


for op, dt in (("maximum", "float32"), ("add", "float32"), ("maximum", "bfloat16")):
    b, body, f = _reduce(op, dt)
    case("vector.tensor_reduce", f"{op} {ABBR[dt]}->f32[P,1]", b, body, f)


def _copy(dt_in: str, dt_out: str, src_space: str = "sbuf", engine: str = "vector"):
    def floor(n):
        x = arr((P, n), dt_in)
        if dt_in == dt_out:
            o = np.empty_like(x)
            return lambda: np.copyto(o, x)
        return lambda: x.astype(NPDT[dt_out])
    return (lambda n: Kernel().inp("x", dt_in, [P, n], space=src_space).out("y", dt_out, [P, n]),
            same(f"{engine}.tensor_copy y, x"), floor)


for dt_in, dt_out, sp in (("float32", "float32", "sbuf"), ("float32", "bfloat16", "psum"),
                          ("bfloat16", "bfloat16", "sbuf"), ("bfloat16", "float32", "sbuf"),
                          ("float8_e4m3", "bfloat16", "sbuf")):
    b, body, f = _copy(dt_in, dt_out, sp)
    case("vector.tensor_copy", f"{sp} {ABBR[dt_in]}->{ABBR[dt_out]}", b, body, f)


def _memset(dt: str):
    return (lambda n: Kernel().out("t", dt, [P, n]), same("vector.memset t, value=1.5"),
            lambda n: fill_floor((P, n), NPDT[dt], 1.5))


for dt in ("float32", "bfloat16"):
    case("vector.memset", ABBR[dt], *_memset(dt))


def _reciprocal_floor(n):
    x, o = arr((P, n), "float32", "pos"), np.empty((P, n), F32)
    return lambda: np.reciprocal(x, out=o)


case("vector.reciprocal", "f32->f32",
     lambda n: (Kernel().inp("x", "float32", [P, n], init="uniform(0.5, 2)")
                .out("y", "float32", [P, n])),
     same("vector.reciprocal y, x"), _reciprocal_floor)


def _bn_floor(n):
    x = arr((P, n), "float32")

    def f():
        ev, od = x[:, 0::2], x[:, 1::2]
        return ev.mean(1), ev.var(1), od.mean(1), od.var(1)
    return f


def _bn_aggr_floor(n):
    x = arr((P, 6), "float32", "pos")
    return lambda: (x[:, 1::3].mean(1), x[:, 2::3].sum(1))


def _transpose32_floor(n):
    x, o = arr((32, 32), "float32"), np.empty((32, 32), F32)
    return lambda: np.copyto(o, x.T)


case("vector.bn_stats", "f32 -> [P,6]",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("st", "float32", [P, 6]),
     same("vector.bn_stats st, x"), _bn_floor)
case("vector.bn_aggr", "f32 [P,6]->[P,2]",
     lambda n: (Kernel().inp("x", "float32", [P, 6], init="uniform(1, 2)")
                .out("mv", "float32", [P, 2])),
     same("vector.bn_aggr mv, x"), _bn_aggr_floor, sizes=(6,))
case("vector.transpose", "f32 [32,32]",
     lambda n: Kernel().inp("x", "float32", [32, 32]).out("y", "float32", [32, 32]),
     same("vector.transpose y, x"), _transpose32_floor, sizes=(32,))


def _stt(dt: str):
    def floor(n):
        x, r = arr((P, n), dt), arr((P, n), dt)
        t = np.empty((P, n), F32)

        def f():
            np.multiply(x.astype(F32) if dt != "float32" else x, F32(0.5), out=t)
            np.add(t, r.astype(F32) if dt != "float32" else r, out=t)
            return t if dt == "float32" else t.astype(NPDT[dt])
        return f
    return (lambda n: Kernel().inp("x", dt, [P, n]).inp("r", dt, [P, n]).out("y", dt, [P, n]),
            same("vector.scalar_tensor_tensor y, x, op0=multiply, operand0=0.5, op1=add, "
                 "operand1=r"),
            floor)


for dt in ("float32", "bfloat16"):
    b, body, f = _stt(dt)
    case("vector.scalar_tensor_tensor", f"mult,add {ABBR[dt]}", b, body, f)


def _scan_floor(n):
    # a linear recurrence y[i] = d[i]*y[i-1] + x[i] has no vectorised numpy form; the floor is
    # a column loop over i (vectorised over the 128 partitions), the best plain numpy can do
    d, x = arr((P, n), "float32"), arr((P, n), "float32")
    y = np.empty((P, n), F32)

    def f():
        prev = np.zeros(P, F32)
        for i in range(n):
            prev = d[:, i] * prev + x[:, i]
            y[:, i] = prev
    return f


case("vector.tensor_tensor_scan", "mult,add f32",
     lambda n: (Kernel().inp("d", "float32", [P, n]).inp("x", "float32", [P, n])
                .out("y", "float32", [P, n])),
     same("vector.tensor_tensor_scan y, d, x, initial=0.0, op0=multiply, op1=add"), _scan_floor)


def _cum_floor(n):
    x = arr((P, n), "float32")
    o = np.empty((P, n), F32)
    return lambda: np.cumsum(np.multiply(x, F32(2.0)), axis=1, out=o)


case("vector.tensor_scalar_cumulative", "mult,add(cumsum) f32",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("y", "float32", [P, n]),
     same("vector.tensor_scalar_cumulative y, x, op0=multiply, op1=add, imm0=2.0"), _cum_floor)


def _tsr_floor(n):
    x = arr((P, n), "float32")
    t = np.empty((P, n), F32)
    s = np.empty((P,), F32)

    def f():
        np.multiply(x, F32(2.0), out=t)
        np.sum(t, axis=1, out=s)
    return f


case("vector.tensor_scalar_reduce", "mult + add-reduce f32",
     lambda n: (Kernel().inp("x", "float32", [P, n]).out("y", "float32", [P, n])
                .out("s", "float32", [P, 1])),
     same("vector.tensor_scalar_reduce y, x, op0=multiply, operand0=2.0, reduce_op=add, "
          "reduce_res=s"),
     _tsr_floor)


def _pred_floor(n):
    x, y = arr((P, n), "float32"), arr((P, n), "float32")
    m = arr((P, n), "uint8", "mask").astype(bool)
    return lambda: np.copyto(y, x, where=m)


case("vector.tensor_copy_predicated", "f32, u8 mask",
     lambda n: (Kernel().inp("x", "float32", [P, n]).inp("y", "float32", [P, n])
                .inp("m", "uint8", [P, n], init="uniform(0, 2)")),
     same("vector.tensor_copy_predicated y, x, m"), _pred_floor)


def _max8_floor(n):
    x = arr((P, n), "float32")
    if n <= 64:
        return lambda: -np.sort(-x, axis=1)[:, :8]
    return lambda: np.partition(x, n - 8, axis=1)[:, -8:]


case("vector.max8", "f32",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("t", "float32", [P, 8]),
     same("vector.max8 t, x"), _max8_floor)


def _fi8_floor(n):
    x = arr((P, n), "float32")
    v = x[:, :8].copy()
    return lambda: np.argmax(x[:, None, :] == v[:, :, None], axis=2)


case("vector.find_index8", "f32",
     lambda n: (Kernel().inp("x", "float32", [P, n]).out("t", "float32", [P, 8])
                .out("w", "uint32", [P, 8]).line("vector.max8 t, x")),
     same("vector.find_index8 w, x, t"), _fi8_floor)


def _mr8_floor(n):
    x = arr((P, n), "float32")
    v = x[:, :8].copy()
    o = np.empty_like(x)

    def f():
        hit = (x[:, None, :] == v[:, :, None]).any(axis=1)
        np.copyto(o, x)
        o[hit] = F32(-1e30)
    return f


case("vector.match_replace8", "f32",
     lambda n: (Kernel().inp("x", "float32", [P, n]).out("t", "float32", [P, 8])
                .out("o", "float32", [P, n]).out("w", "uint32", [P, 8])
                .line("vector.max8 t, x")),
     same("vector.match_replace8 o, x, t, imm=-1.0e30, dst_idx=w"), _mr8_floor)


def _selred_floor(n):
    x = arr((P, n), "float32")
    m = arr((P, n), "uint8", "mask").astype(bool)
    o = np.empty_like(x)

    def f():
        np.copyto(o, F32(-1.0))
        np.copyto(o, x, where=m)
        return o.max(axis=1)
    return f


case("vector.select_reduce", "f32, u8 mask",
     lambda n: (Kernel().inp("x", "float32", [P, n]).inp("m", "uint8", [P, n], init="uniform(0, 2)")
                .out("o", "float32", [P, n]).out("b", "float32", [P, 1])),
     same("vector.select_reduce o, m, x, on_false=-1.0, reduce_res=b"), _selred_floor)


def _range_floor(n):
    x = arr((P, n), "float32")
    lo, hi = np.full((P, 1), -0.5, F32), np.full((P, 1), 0.5, F32)
    o = np.empty_like(x)

    def f():
        keep = (x >= lo) & (x < hi)
        np.copyto(o, F32(-3e38))
        np.copyto(o, x, where=keep)
        return o.max(axis=1)
    return f


case("vector.range_select", "f32",
     lambda n: (Kernel().inp("x", "float32", [P, n]).out("o", "float32", [P, n])
                .out("b", "float32", [P, 1]).out("lo", "float32", [P, 1])
                .out("hi", "float32", [P, 1])
                .line("vector.memset lo, value=-0.5").line("vector.memset hi, value=0.5")),
     same("vector.range_select o, x, comp_op0=greater_equal, comp_op1=less, bound0=lo, "
          "bound1=hi, reduce_res=b"),
     _range_floor)


def _exp3_floor(n):
    x = arr((P, n), "float32")
    m = x.max(axis=1, keepdims=True)
    o = np.empty_like(x)

    def f():
        np.subtract(x, m, out=o)
        np.exp(o, out=o)
        return o.sum(axis=1)
    return f


case("vector.exponential", "f32 (trn3)",
     lambda n: (Kernel("trn3").inp("x", "float32", [P, n]).out("m", "float32", [P, 1])
                .out("e", "float32", [P, n]).out("s", "float32", [P, 1])
                .line("vector.tensor_reduce m, x, op=maximum")),
     same("vector.exponential e, x, max_value=m, reduce_res=s, reduce_cmd=reset_reduce"),
     _exp3_floor)


def _rng_floor(n):
    g = np.random.Generator(np.random.Philox(0))
    return lambda: g.integers(0, 2**32, size=(P, n), dtype=np.uint32)


def _seed_floor(n):
    return lambda: np.random.Philox(1234)


case("vector.rng", "u32", lambda n: Kernel().out("bits", "uint32", [P, n]),
     same("vector.rng bits"), _rng_floor)
case("vector.set_rng_seed", "[1,1]",
     lambda n: (Kernel().out("seed", "uint32", [1, 1])
                .line("gpsimd.iota seed, base=1234, channel_multiplier=0, step=0")),
     same("vector.set_rng_seed seed"), _seed_floor, sizes=(1,))


def _rand2_floor(n):
    g = np.random.default_rng(0)
    o = np.empty((P, n), np.float32)
    return lambda: g.random(out=o, dtype=np.float32)


case("vector.rand2", "f32 (trn3)", lambda n: Kernel("trn3").out("o", "float32", [P, n]),
     same("vector.rand2 o, min=-1.0, max=1.0"), _rand2_floor)


def _dropout_floor(n):
    g = np.random.default_rng(0)
    x = arr((P, n), "float32")
    r = np.empty((P, n), np.float32)
    o = np.empty((P, n), np.float32)

    def f():
        g.random(out=r, dtype=np.float32)
        np.multiply(x, r >= F32(0.25), out=o)
    return f


case("vector.dropout", "f32",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("o", "float32", [P, n]),
     same("vector.dropout o, x, prob=0.25"), _dropout_floor)


def _qmx_floor(n):
    # per 8x4 block (8 partitions x 4 elements): shared e8m0 scale = max exponent, values / scale
    # cast to fp8 e4m3fn. n = bf16 free size (128); q is [64, 32] x4 -> 64 x 128 values
    x = arr((64, 128), "bfloat16").astype(F32)

    def f():
        blk = np.abs(x).reshape(8, 8, 32, 4).max(axis=(1, 3))
        e = np.floor(np.log2(np.maximum(blk, 1e-30))) - 8
        s = np.exp2(e).repeat(8, 0).repeat(4, 1)
        return (x / s).astype(F8FN)
    return f


case("vector.quantize_mx", "bf16 [64,128] -> fp8x4 (trn3)",
     lambda n: (Kernel("trn3").inp("x", "bfloat16", [64, 128])
                .out("q", "float8_e4m3fn_x4", [64, 32]).out("s", "float8_e8m0fnu", [64, 32])),
     same("vector.quantize_mx q, x, dst_scale=s"), _qmx_floor, sizes=(128,))

MASK = "[" + ", ".join(str(31 - i) for i in range(32)) + "]"


def _shuf_floor(n):
    x = arr((32, n), "float32")
    o = np.empty_like(x)
    idx = np.arange(31, -1, -1)
    return lambda: np.take(x, idx, axis=0, out=o)


case("vector.stream_shuffle", "f32 [32,N] reverse partitions",
     lambda n: Kernel().inp("x", "float32", [32, n]).out("y", "float32", [32, n]),
     same(f"vector.stream_shuffle y, x, mask={MASK}"), _shuf_floor)
case("vector.rand_get_state", "u32 [128,24] (trn3)",
     lambda n: Kernel("trn3").out("st", "uint32", [P, 24]),
     same("vector.rand_get_state st"), lambda n: fill_floor((P, 24), np.uint32, 1), sizes=(24,))
case("vector.rand_set_state", "u32 [128,24] (trn3)",
     lambda n: Kernel("trn3").out("st", "uint32", [P, 24]).line("vector.rand_get_state st"),
     same("vector.rand_set_state st"), lambda n: copy_floor((P, 24), np.uint32), sizes=(24,))


def _dyn(engine: str, which: str):
    def build(n):
        if which == "dst":
            return (Kernel().inp("x", "float32", [P, n]).out("y", "float32", [P, 8 * n])
                    .line("ctrl.mov r1, 3"))
        return (Kernel().inp("x", "float32", [P, 8 * n]).out("y", "float32", [P, n])
                .line("ctrl.mov r1, 3"))
    body = (f"{engine}.tensor_copy_dynamic_src y, x[:, r1*{{n}} : r1*{{n}} + {{n}}]"
            if which == "src"
            else f"{engine}.tensor_copy_dynamic_dst y[:, r1*{{n}} : r1*{{n}} + {{n}}], x")

    def floor(n):
        x = arr((P, 8 * n), "float32")
        o = np.empty((P, n), F32)
        r = 3
        return lambda: np.copyto(o, x[:, r * n:(r + 1) * n])
    return build, (lambda n: body.format(n=n)), floor


for eng in ("vector", "gpsimd"):
    for which in ("src", "dst"):
        b, body, f = _dyn(eng, which)
        case(f"{eng}.tensor_copy_dynamic_{which}", "f32", b, body, f)

# ---------------------------------------------------------------------------- Scalar

FUNCS_F64: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda v: v, "relu": lambda v: np.maximum(v, 0), "exp": np.exp, "tanh": np.tanh,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "silu": lambda v: v / (1 + np.exp(-v)),
    "gelu_apprx_tanh": (lambda v: v / (1 + np.exp(-2 * 0.7978845608028654
                                                   * (v + 0.044715 * (v * v * v))))),
    "rsqrt": lambda v: 1 / np.sqrt(v), "sqrt": np.sqrt, "square": np.square,
    "softplus": lambda v: np.logaddexp(0, v), "reciprocal": lambda v: 1 / v,
}
# numpy has no erf: gelu's floors are the tanh form (what a numpy simulator would write)
FUNCS_F64["gelu"] = FUNCS_F64["gelu_apprx_tanh"]


def _gelu_tanh_f32(v, o):
    return np.multiply(np.multiply(v, F32(0.5), out=o),
                       np.add(np.tanh(np.multiply(v, F32(0.7978845608028654), out=o), out=o),
                              F32(1), out=o),
                       out=o)


FUNCS_F32: dict[str, Callable[[np.ndarray, np.ndarray], object]] = {
    "copy": lambda v, o: np.copyto(o, v), "relu": lambda v, o: np.maximum(v, F32(0), out=o),
    "exp": lambda v, o: np.exp(v, out=o), "tanh": lambda v, o: np.tanh(v, out=o),
    "sigmoid": lambda v, o: np.reciprocal(np.add(np.exp(np.negative(v, out=o), out=o), F32(1),
                                                 out=o), out=o),
    "silu": lambda v, o: np.divide(v, np.add(np.exp(np.negative(v, out=o), out=o), F32(1),
                                             out=o), out=o),
    "gelu": _gelu_tanh_f32, "gelu_apprx_tanh": _gelu_tanh_f32,
    "rsqrt": lambda v, o: np.reciprocal(np.sqrt(v, out=o), out=o),
    "sqrt": lambda v, o: np.sqrt(v, out=o),
    "square": lambda v, o: np.square(v, out=o),
    "softplus": lambda v, o: np.logaddexp(F32(0), v, out=o),
    "reciprocal": lambda v, o: np.reciprocal(v, out=o),
}
POS_FUNCS = {"rsqrt", "sqrt", "reciprocal"}


def _act(func: str, dt_in: str, dt_out: str):
    init = "uniform(0.5, 2)" if func in POS_FUNCS else "normal(0, 1)"
    kind = "pos" if func in POS_FUNCS else "normal"

    def build(n):
        return Kernel().inp("x", dt_in, [P, n], init=init).out("y", dt_out, [P, n])

    def floor(n):
        x = arr((P, n), dt_in, kind)
        o = np.empty((P, n), F32)
        g = FUNCS_F32[func]
        out_np = NPDT[dt_out]

        def f():
            v = x if dt_in == "float32" else x.astype(F32)
            np.multiply(v, F32(1.0), out=o)     # scale
            np.add(o, F32(0.0), out=o)          # bias
            g(o, o)
            return o if out_np is F32 else o.astype(out_np)
        return f

    def floor64(n):
        x = arr((P, n), dt_in, kind)
        g = FUNCS_F64[func]
        out_np = NPDT[dt_out]
        return lambda: g(x.astype(np.float64)).astype(F32).astype(out_np)
    return build, same(f"scalar.activation y, x, func={func}, scale=1.0, bias=0.0"), floor, floor64


for func in ("copy", "relu", "exp", "tanh", "sigmoid", "silu", "gelu", "gelu_apprx_tanh",
             "rsqrt", "sqrt", "square", "softplus", "reciprocal"):
    for dt_in, dt_out in (("float32", "float32"), ("float32", "bfloat16")):
        if (func not in ("copy", "relu", "exp", "gelu", "silu", "tanh", "rsqrt")
                and dt_out != "float32"):
            continue
        b, body, f, f64 = _act(func, dt_in, dt_out)
        case("scalar.activation", f"{func} {ABBR[dt_in]}->{ABBR[dt_out]}", b, body, f,
             floor64=f64)
for func in ("exp", "relu"):
    b, body, f, f64 = _act(func, "bfloat16", "bfloat16")
    case("scalar.activation", f"{func} bf16->bf16", b, body, f, floor64=f64)


def _act_softmax_floor(n):
    x = arr((P, n), "float32")
    nb = -x.max(axis=1, keepdims=True)
    o = np.empty((P, n), F32)
    s = np.empty((P,), F32)

    def f():
        np.add(x, nb, out=o)
        np.exp(o, out=o)
        np.sum(o, axis=1, out=s)
        return o.astype(BF16)
    return f


def _softmax_kernel(n):
    return (Kernel().inp("x", "float32", [P, n]).out("y", "bfloat16", [P, n])
            .out("nb", "float32", [P, 1]).out("s", "float32", [P, 1])
            .line("vector.tensor_reduce nb, x, op=maximum, negate=true"))


case("scalar.activation", "exp+bias col+reduce_res f32->bf16 (softmax)", _softmax_kernel,
     same("scalar.activation y, x, func=exp, scale=1.0, bias=nb, reduce_res=s"),
     _act_softmax_floor)
case("scalar.activation_reduce", "exp add f32->bf16", _softmax_kernel,
     same("scalar.activation_reduce y, x, func=exp, reduce_op=add, reduce_res=s, bias=nb"),
     _act_softmax_floor)


def _act2_floor(n):
    x = arr((P, n), "float32")
    m = x.max(axis=1, keepdims=True)
    o = np.empty((P, n), F32)

    def f():
        np.subtract(x, m, out=o)
        np.exp(o, out=o)
        return o.sum(axis=1)
    return f


case("scalar.activate2", "exp(x-m)+reduce f32 (trn3)",
     lambda n: (Kernel("trn3").inp("x", "float32", [P, n]).out("m", "float32", [P, 1])
                .out("y", "float32", [P, n]).out("t", "float32", [P, 1])
                .line("vector.tensor_reduce m, x, op=maximum")),
     same("scalar.activate2 y, x, func=exp, imm0=m, imm1=0.0, op0=subtract, op1=bypass, "
          "reduce_res=t, reduce_op=add, reduce_cmd=reset_reduce"),
     _act2_floor)
for dt_in, dt_out, col in (("float32", "float32", True), ("float32", "bfloat16", True)):
    b, body, f = _ts(dt_in, dt_out, col, engine="scalar", ops_pair=("multiply", "add"))
    case("scalar.tensor_scalar", f"col mult,add {ABBR[dt_in]}->{ABBR[dt_out]}", b, body, f)

# ---------------------------------------------------------------------------- GpSimd


def _iota(dt: str):
    def floor(n):
        o, i, c = np.empty((P, n), NPDT[dt]), np.arange(n), np.arange(P)[:, None]
        return lambda: np.add(c, i, out=o, casting="unsafe")
    return (lambda n: Kernel().out("t", dt, [P, n]),
            same("gpsimd.iota t, base=0, channel_multiplier=1, step=1"), floor)


for dt in ("int32", "float32"):
    case("gpsimd.iota", ABBR[dt], *_iota(dt))


def _aff_floor(n):
    x = arr((P, n), "float32")
    o = np.empty_like(x)
    lin = np.empty((P, n), np.int64)
    pi, fi = np.arange(P)[:, None], np.arange(n)[None, :]

    def f():
        np.subtract(pi, fi, out=lin)
        np.copyto(o, F32(-3e38))
        np.copyto(o, x, where=lin >= 0)
    return f


def _partition_reduce_floor(n):
    x, o = arr((P, n), "float32"), np.empty((n,), F32)
    return lambda: np.sum(x, axis=0, out=o)


case("gpsimd.affine_select", "f32 causal mask",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("o", "float32", [P, n]),
     same("gpsimd.affine_select o, x, offset=0, channel_multiplier=1, step=-1, "
          "cmp_op=greater_equal, on_false_value=-3.0e38"),
     _aff_floor)
case("gpsimd.memset", "f32", lambda n: Kernel().out("t", "float32", [P, n]),
     same("gpsimd.memset t, value=1.0"), lambda n: fill_floor((P, n), F32, 1.0))
case("gpsimd.tensor_copy", "bf16->f32", *_copy("bfloat16", "float32", engine="gpsimd"))
case("gpsimd.tensor_copy", "f32->f32", *_copy("float32", "float32", engine="gpsimd"))
case("gpsimd.partition_reduce", "add f32 -> [1,N]",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("c", "float32", [1, n]),
     same("gpsimd.partition_reduce c, x, op=add"), _partition_reduce_floor)


def _seqb_floor(n):
    ids = (np.arange(n) // 4).astype(np.int32)[None, :]
    return lambda: np.flatnonzero(np.diff(ids[0]) != 0)


case("gpsimd.sequence_bounds", "i32 [1,N]",
     lambda n: (Kernel().out("ids", "int32", [1, n]).out("bd", "int32", [1, 2, n])
                .line("gpsimd.iota ids, base=0, channel_multiplier=0, step=1")),
     same("gpsimd.sequence_bounds bd, ids"), _seqb_floor)


def _nz_floor(n):
    x = arr((P, n), "float32")
    x[x < 0] = 0
    o = np.full((P, n + 1), -1, np.int32)

    def f():
        nz = x != 0
        cnt = nz.sum(axis=1)
        idx = np.argsort(~nz, axis=1, kind="stable")
        o[:, :n] = np.where(np.arange(n)[None, :] < cnt[:, None], idx, -1)
        o[:, n] = cnt
    return f


case("gpsimd.nonzero_with_count", "f32",
     lambda n: Kernel().inp("x", "float32", [P, n]).out("found", "int32", [P, n + 1]),
     same("gpsimd.nonzero_with_count found, x, index_offset=0, padding_val=-1"), _nz_floor)


def _ngather_floor(n):
    x = arr((P, n), "float32")
    idx = (np.arange(n // 4) * 4 % n).astype(np.intp)[None, :].repeat(P, 0)
    return lambda: np.take_along_axis(x, idx, axis=1)


def _rng16_floor(n):
    g = np.random.default_rng(0)
    return lambda: g.integers(0, 2**16, size=(P, n), dtype=np.uint16)


case("gpsimd.n_gather", "f32, N/4 indices",
     lambda n: (Kernel().inp("x", "float32", [P, n]).out("idx", "uint32", [P, n // 4])
                .out("pk", "float32", [P, n // 4])
                .line("gpsimd.iota idx, base=0, channel_multiplier=0, step=4")),
     same("gpsimd.n_gather pk, x, indices=idx"), _ngather_floor)
case("gpsimd.rng", "u16", lambda n: Kernel().out("bits", "uint16", [P, n]),
     same("gpsimd.rng bits"), _rng16_floor)


def _lgather_floor(n):
    x = arr((P, 64), "float32")
    idx = (np.arange(4) * 12).astype(np.intp)
    cols = (idx[:, None] + np.arange(4)[None, :]).ravel()
    return lambda: np.take(x, cols, axis=1)


case("gpsimd.local_gather", "f32 [128,64] 4 idx x 4 elem",
     lambda n: (Kernel().inp("x", "float32", [P, 64]).out("idx", "uint16", [P, 4])
                .out("pk", "float32", [P, 4, 4])
                .line("gpsimd.iota idx, base=0, channel_multiplier=0, step=12")),
     same("gpsimd.local_gather pk, x, indices=idx, num_elem_per_idx=4, num_valid_indices=4"),
     _lgather_floor, sizes=(64,))


def _topk_floor(n):
    x = arr((P, 8), "bfloat16").astype(F32)

    def f():
        flat = x.ravel()
        idx = np.argpartition(-flat, 15)[:16]
        return flat[idx]
    return f


case("gpsimd.topk", "bf16 [128,8] n=128 k=16",
     lambda n: (Kernel().inp("s", "bfloat16", [P, 8]).out("v", "bfloat16", [P, 16])
                .out("i", "uint32", [P, 16])),
     same("gpsimd.topk v, i, s, n=128"), _topk_floor, sizes=(8,))
case("gpsimd.rand_get_state", "u32 [128,6]", lambda n: Kernel().out("st", "uint32", [P, 6]),
     same("gpsimd.rand_get_state st"), lambda n: fill_floor((P, 6), np.uint32, 1), sizes=(6,))
case("gpsimd.rand_set_state", "u32 [128,6]",
     lambda n: Kernel().out("st", "uint32", [P, 6]).line("gpsimd.rand_get_state st"),
     same("gpsimd.rand_set_state st"), lambda n: copy_floor((P, 6), np.uint32), sizes=(6,))
b, f = _tt("float32", "float32", np.multiply)
case("gpsimd.tensor_tensor", "multiply f32", b,
     same("gpsimd.tensor_tensor c, a, b, op=multiply"), f)
case("gpsimd.tensor_scalar", "col mult,add f32->bf16",
     *_ts("float32", "bfloat16", True, engine="gpsimd", ops_pair=("multiply", "add")))

# ---------------------------------------------------------------------------- Tensor


def _mm(dt: str, mode: str = "none"):
    def build(n):
        if mode == "double_row":
            return (Kernel().inp("w", dt, [P, 2, P]).inp("x", dt, [P, 2, n])
                    .out("acc", "float32", [P, n], space="psum"))
        return (Kernel().inp("w", dt, [P, P]).inp("x", dt, [P, n])
                .out("acc", "float32", [P, n], space="psum"))
    extra = ", perf_mode=double_row" if mode == "double_row" else ""

    def floor(n):
        kk = 2 * P if mode == "double_row" else P
        w = arr((kk, P), dt).astype(F32)
        x = arr((kk, n), dt).astype(F32)
        o = np.empty((P, n), F32)
        wt = np.ascontiguousarray(w.T)
        return lambda: np.matmul(wt, x, out=o)
    return build, same(f"tensor.matmul acc, w, x, accumulate=false{extra}"), floor


for dt, mode in (("bfloat16", "none"), ("float8_e4m3", "none"), ("float32", "none"),
                 ("float8_e4m3", "double_row")):
    b, body, f = _mm(dt, mode)
    case("tensor.matmul", f"{ABBR[dt]} 128x128xN{' double_row' if mode != 'none' else ''}",
         b, body, f, note="floor: BLAS sgemm 1 thread on fp32 copies of the operands")


def _tp(dt: str):
    def floor(n):
        x = arr((P, n), dt).astype(F32)
        o = np.empty((n, P), F32)
        return lambda: np.copyto(o, x.T)
    return (lambda n: Kernel().inp("x", dt, [P, n]).out("tp", "float32", [n, P], space="psum"),
            same("tensor.transpose tp, x"), floor)


for dt in ("bfloat16", "float32"):
    case("tensor.transpose", f"{ABBR[dt]} [128,N]->[N,128] psum f32", *_tp(dt), sizes=(128, 64))


def _mmx_floor(n):
    w = arr((P, 4 * P), "bfloat16").astype(F32)
    x = arr((P, 4 * n), "bfloat16").astype(F32)
    o = np.empty((P, n), F32)
    wt = np.ascontiguousarray(w.reshape(P, P, 4).transpose(1, 0, 2).reshape(P, 4 * P))
    xx = np.ascontiguousarray(x.reshape(P, n, 4).transpose(0, 2, 1).reshape(4 * P, n))
    return lambda: np.matmul(wt, xx, out=o)


case("tensor.matmul_mx", "fp8x4 e4m3fn 128x128xN (trn3)",
     lambda n: (Kernel("trn3").out("wf", "bfloat16", [P, 4 * P]).out("xf", "bfloat16", [P, 4 * n])
                .out("w", "float8_e4m3fn_x4", [P, P]).out("x", "float8_e4m3fn_x4", [P, n])
                .out("ws", "float8_e8m0fnu", [P, P]).out("xs", "float8_e8m0fnu", [P, n])
                .out("acc", "float32", [P, n], space="psum")
                .line("gpsimd.iota wf, base=0, channel_multiplier=1, step=1")
                .line("gpsimd.iota xf, base=0, channel_multiplier=1, step=1")
                .line("vector.quantize_mx w, wf, dst_scale=ws")
                .line("vector.quantize_mx x, xf, dst_scale=xs")),
     same("tensor.matmul_mx acc, w, x, stationary_scale=ws, moving_scale=xs, accumulate=false"),
     _mmx_floor, note="floor: sgemm over K=4x128 fp32 (scales not applied)")

# ---------------------------------------------------------------------------- DMA


def _dma(direction: str, dt_h: str, dt_s: str):
    def build(n):
        k = Kernel()
        k.hbm("h", dt_h, [P, n], "input" if direction == "in" else "output",
              init="normal(0, 1)" if direction == "in" else None)
        if direction == "out":
            k.inp("s", dt_s, [P, n])
        elif direction == "sbuf":
            k.inp("s", dt_s, [P, n]).out("t", dt_s, [P, n])
        else:
            k.out("s", dt_s, [P, n])
        return k
    body = {"in": "dma.copy s, h, queue=0", "out": "dma.copy h, s, queue=0",
            "sbuf": "dma.copy t, s, queue=0"}[direction]

    def floor(n):
        src = arr((P, n), dt_h if direction == "in" else dt_s)
        dst_dt = NPDT[dt_s if direction != "out" else dt_h]
        if src.dtype == dst_dt:
            o = np.empty_like(src)
            return lambda: np.copyto(o, src)
        return lambda: src.astype(dst_dt)
    return build, same(body), floor


for direction, dt_h, dt_s in (("in", "float32", "float32"), ("out", "float32", "float32"),
                              ("in", "bfloat16", "bfloat16"), ("in", "float32", "bfloat16"),
                              ("sbuf", "float32", "float32"),
                              ("in", "float8_e4m3", "float8_e4m3")):
    b, body, f = _dma(direction, dt_h, dt_s)
    label = {"in": "HBM->SBUF", "out": "SBUF->HBM", "sbuf": "SBUF->SBUF"}[direction]
    case("dma.copy", f"{label} {ABBR[dt_h]}->{ABBR[dt_s]}" if direction == "in"
         else f"{label} {ABBR[dt_s]}", b, body, f)


def _dmat_floor(n):
    x = arr((n, P), "bfloat16")
    o = np.empty((P, n), BF16)
    return lambda: np.copyto(o, x.T)


case("dma.transpose", "bf16 HBM [N,128] -> SBUF [128,N]",
     lambda n: (Kernel().hbm("h", "bfloat16", [n, P], init="normal(0, 1)")
                .out("t", "bfloat16", [P, n])),
     same("dma.transpose t, h, queue=2"), _dmat_floor, sizes=(128, 64))


def _relu_sparse(n):
    x = arr((P, n), "bfloat16").astype(F32)
    x[x < 0] = 0
    return x.astype(BF16)


def _compress_floor(n):
    bits = _relu_sparse(n).view(np.uint16)
    return lambda: (bits != 0, bits[bits != 0])


def _decompress_floor(n):
    bits = _relu_sparse(n).view(np.uint16)
    o = np.zeros((P, n), np.uint16)
    return lambda: np.place(o, bits != 0, bits[bits != 0])


case("dma.compress", "bf16 SBUF -> compressed HBM (half zeros)",
     lambda n: (Kernel().hbm("w", "bfloat16", [P, n], "output", extra=" compressed")
                .inp("s", "float32", [P, n]).out("sb", "bfloat16", [P, n])
                .line("scalar.activation sb, s, func=relu")),
     same("dma.compress w, sb, queue=1"), _compress_floor)
case("dma.decompress", "bf16 compressed HBM -> SBUF",
     lambda n: (Kernel().hbm("w", "bfloat16", [P, n], "input", init="relu_normal(0, 1)",
                             extra=" compressed")
                .out("sb", "bfloat16", [P, n])),
     same("dma.decompress sb, w, queue=1"), _decompress_floor)


def _dmacomp_floor(n):
    a, b2 = arr((P, n), "float32"), arr((P, n), "float32")
    c = arr((P, n), "float32")
    t = np.empty((P, n), F32)

    def f():
        np.add(a, b2, out=t)
        np.add(t, c, out=t)
        return t.astype(BF16)
    return f


def _accumulate_floor(n):
    a, h = arr((P, n), "float32"), arr((P, n), "float32")
    return lambda: np.add(a, h, out=a)


case("dma.compute", "a+b+c f32 -> bf16 SBUF",
     lambda n: (Kernel().hbm("a", "float32", [P, n], init="normal(0, 1)")
                .hbm("b", "float32", [P, n], init="normal(0, 1)")
                .inp("c", "float32", [P, n]).out("s", "bfloat16", [P, n])),
     same("dma.compute s, a, b, c, queue=3"), _dmacomp_floor)
case("dma.accumulate", "f32 HBM += into SBUF (trn3)",
     lambda n: (Kernel("trn3").hbm("h", "float32", [P, n], init="normal(0, 1)")
                .inp("acc", "float32", [P, n])),
     same("dma.accumulate acc, h, queue=4"), _accumulate_floor)


def _gather_floor(n):
    table = arr((1000, n), "float32")
    idx = (np.arange(P) * 7 % 1000).astype(np.intp)
    o = np.empty((P, n), F32)
    return lambda: np.take(table, idx, axis=0, out=o)


case("dma.gather", "f32 rows [1000,N] by 128 ids",
     lambda n: (Kernel().hbm("table", "float32", [1000, n], init="normal(0, 1)")
                .hbm("ids", "int32", [P, 1], init="arange")
                .out("idx", "int32", [P, 1]).out("rows", "float32", [P, n])
                .line("dma.copy idx, ids")),
     same("dma.gather rows, table, index=idx, queue=5"), _gather_floor)


def _scatter_floor(n):
    table = np.zeros((1000, n), F32)
    idx = (np.arange(P) * 7 % 1000).astype(np.intp)
    rows = arr((P, n), "float32")

    def f():
        table[idx] = rows
    return f


case("dma.scatter", "f32 rows [1000,N] by 128 ids",
     lambda n: (Kernel().hbm("table", "float32", [1000, n], "output", init="zeros")
                .hbm("ids", "int32", [P, 1], init="arange")
                .out("idx", "int32", [P, 1]).inp("rows", "float32", [P, n])
                .line("dma.copy idx, ids")),
     same("dma.scatter table, rows, index=idx, queue=6"), _scatter_floor)

# ---------------------------------------------------------------------------- ctrl / sync / cc
# (a world of one rank: neuronemu.run())

for text in ("ctrl.mov r5, 7", "ctrl.add r5, r5, 1", "ctrl.mul r5, r0, 512", "ctrl.div r5, r0, 4",
             "ctrl.rem r5, r0, 4", "ctrl.rank r5", "ctrl.world r5"):
    case(text.split()[0], text, lambda n: Kernel(), same(text), no_floor, sizes=(1,), unroll=32)
case("ctrl.load", "int32 [1,1] from HBM",
     lambda n: Kernel().hbm("cnt", "int32", [1, 1], init="full(7)"),
     same("ctrl.load r5, cnt"), no_floor, sizes=(1,), unroll=32)
case("ctrl.store", "int32 [1,1] to HBM",
     lambda n: Kernel().hbm("cnt", "int32", [1, 1], "output"),
     same("ctrl.store cnt, r0"), no_floor, sizes=(1,), unroll=32)
case("sync.signal", "vector sem0 (.sync auto)", lambda n: Kernel(),
     same("sync.signal vector, sem=0"), no_floor, sizes=(1,), unroll=32)
case("sync.barrier", ".sync auto", lambda n: Kernel(), same("sync.barrier"), no_floor,
     sizes=(1,), unroll=32)


def _cc(body: str, dt: str = "float32"):
    def floor(n):
        x, o = arr((P, n), dt), np.empty((P, n), NPDT[dt])
        return lambda: np.copyto(o, x)
    return (lambda n: Kernel().inp("x", dt, [P, n]).out("y", dt, [P, n]), same(body), floor)


for text in ("cc.all_reduce y, x, op=add", "cc.all_gather y, x, dim=1",
             "cc.permute y, x, shift=1", "cc.sendrecv y, x, send_to=0, recv_from=0"):
    case(text.split()[0], "f32, world of 1 (run())", *_cc(text), unroll=4,
         note="world of one rank: the floor is a copy")
case("cc.barrier", "world of 1", lambda n: Kernel(), same("cc.barrier"), no_floor, sizes=(1,),
     unroll=4)
for text in ("cc.reduce_scatter y, x, op=add, dim=1", "cc.all_to_all y, x, dim=1"):
    case(text.split()[0], "f32, world of 1 (run())", *_cc(text), unroll=4,
         note="world of one rank: the floor is a copy")
b, _, f = _cc("")
case("cc.send + cc.recv", "f32 to self, world of 1 (per instruction)", b,
     same("cc.send x, peer=0\ncc.recv y, peer=0"), f, unroll=4, per=2,
     note="a pair per repetition; cost per instruction")
case("sync.signal + sync.wait", ".sync auto (per instruction)", lambda n: Kernel(),
     same("sync.signal vector, sem=0\nsync.wait vector, sem=0, value=0"), no_floor, sizes=(1,),
     unroll=16, per=2)


# ---------------------------------------------------------------------------- measuring

def cpu_run(program) -> tuple[float, float, Any]:
    """(CPU seconds, wall seconds, Result) of one whole neuronemu.run()."""
    c0, w0 = time.process_time(), time.perf_counter()
    result = neuronemu.run(program)
    return time.process_time() - c0, time.perf_counter() - w0, result


_CTRL_ITER_US: dict[int, float] = {}


def ctrl_iter_us(reps: int) -> float:
    """CPU µs of one empty loop iteration (ctrl.add + ctrl.blt), from a long ctrl-only loop;
    measured once per process."""
    if reps not in _CTRL_ITER_US:
        k = Kernel()
        short = neuronemu.assemble(k.text("", 0, 1000))
        long = neuronemu.assemble(k.text("", 0, 2_000_000))
        cpu_run(long)
        t1 = min(cpu_run(short)[0] for _ in range(reps))
        t2 = min(cpu_run(long)[0] for _ in range(reps))
        _CTRL_ITER_US[reps] = (t2 - t1) / (2_000_000 - 1000) * 1e6
    return _CTRL_ITER_US[reps]


def _time_once(f: Floor) -> float:
    t = time.process_time()
    f()
    return time.process_time() - t


def _time_batch(f: Floor, batch: int) -> float:
    """CPU µs per call over ``batch`` calls."""
    t = time.process_time()
    for _ in range(batch):
        f()
    return (time.process_time() - t) / batch * 1e6


def floor_us(make: Callable[[int], Floor], n: int, reps: int) -> float:
    """CPU µs of one call of the numpy floor: min over ``reps`` batches of ~20 ms."""
    f = make(n)
    f()
    batch = max(1, int(FLOOR_BATCH_S / max(_time_once(f), 1e-7)))
    return min(_time_batch(f, batch) for _ in range(reps))


def measure(c: Case, n: int, reps: int, target_s: float = TARGET_S) -> dict[str, Any]:
    """One row: the case at free size ``n``, emulator then numpy (see the module docstring)."""
    k = c.build(n)
    body = c.body(n)
    u = c.unroll
    # the first run loads (or compiles) the instruction's kernel: not counted
    first_s, _, first = cpu_run(neuronemu.assemble(k.text(body, u, 2)))
    # calibrate: iterations for ~target_s of CPU in the longer run
    ta = cpu_run(neuronemu.assemble(k.text(body, u, 4)))[0]
    tb = cpu_run(neuronemu.assemble(k.text(body, u, 24)))[0]
    est = max((tb - ta) / (20 * u), 2e-8)
    i2 = int(min(max(target_s / (est * u), 20), 400_000 // u + 10))
    i1 = max(2, i2 // 8)
    p1 = neuronemu.assemble(k.text(body, u, i1))
    p2 = neuronemu.assemble(k.text(body, u, i2))
    short, long = [], []   # (CPU s, wall s, loop s) of each run
    for _ in range(reps):
        for runs, program in ((short, p1), (long, p2)):
            cpu, wall, result = cpu_run(program)
            runs.append((cpu, wall, result.wall_seconds))
    dyn = (i2 - i1) * u * c.per
    ctrl = ctrl_iter_us(reps) * (i2 - i1)

    def per_instruction(k: int) -> float:
        return ((min(r[k] for r in long) - min(r[k] for r in short)) * 1e6 - ctrl) / dyn

    emu, wall, loop = per_instruction(0), per_instruction(1), per_instruction(2)
    # numpy right after the emulator; an empty floor (ctrl, sync) times nothing but the call
    np_us = None if c.floor is no_floor else floor_us(c.floor, n, reps)
    row = {"family": c.family, "case": c.name, "n": n, "sizes": list(c.sizes), "unroll": u,
           "i1": i1, "i2": i2, "emu_us": emu, "loop_us": loop, "wall_us": wall, "np_us": np_us,
           "ratio": emu / np_us if np_us is not None and np_us > 0.05 else None,
           "first_run_s": first_s, "compile_s": first.compile_seconds, "note": c.note}
    if c.floor64 is not None:
        row["np64_us"] = floor_us(c.floor64, n, reps)
    return row


def check(c: Case, n: int) -> None:
    """Assemble the case's kernel and call its floor once, without measuring (--check)."""
    neuronemu.assemble(c.build(n).text(c.body(n), c.unroll, 2))
    c.floor(n)()
    if c.floor64 is not None:
        c.floor64(n)()


def select(only: Iterable[str] = (), sizes: Iterable[int] = ()) -> list[tuple[Case, int]]:
    """(case, N) pairs to run: cases whose label contains one of ``only`` (all if empty), at
    the ``sizes`` given (all if empty). A fixed-shape case runs at its own sizes: at its only
    one, or, if it has two, at the one in the column of the size asked for (512: the larger)."""
    only, sizes = [s for s in only if s], set(sizes)
    pairs = []
    for c in CASES:
        if only and not any(s in c.label for s in only):
            continue
        if not sizes or len(c.sizes) == 1:
            pairs += [(c, n) for n in c.sizes]
        elif set(c.sizes) <= set(SIZES):
            pairs += [(c, n) for n in c.sizes if n in sizes]
        else:
            pairs += [(c, n) for n, column in zip(c.sizes, SIZES, strict=False) if column in sizes]
    return pairs


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine_info(reps: int, target_s: float) -> dict[str, Any]:
    """What a figure depends on: the checkout, the machine, its load, the versions."""
    import numba

    dirty = _git("status", "--porcelain", "--", "neuronemu", "isa")
    return {"commit": _git("rev-parse", "--short", "HEAD"), "engine_edited": bool(dirty),
            "neuronemu": str(Path(neuronemu.__file__).parent), "nproc": os.cpu_count(),
            "cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "ml_dtypes": ml_dtypes.__version__, "reps": reps, "target_s": target_s,
            "started": time.strftime("%Y-%m-%d %H:%M"), "loadavg_start": _loadavg()}


def run_cases(pairs: list[tuple[Case, int]], reps: int, target_s: float = TARGET_S,
              json_path: Path | None = None) -> dict[str, Any]:
    """Measure ``pairs`` in order, one progress line each on stderr; the document --json keeps
    (rewritten after every row, so an interrupted run keeps what it measured)."""
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION,
                           "machine": machine_info(reps, target_s), "rows": []}
    doc["ctrl_iter_us"] = ctrl_iter_us(reps)
    started = time.perf_counter()
    for i, (c, n) in enumerate(pairs, 1):
        t = time.perf_counter()
        try:
            row = measure(c, n, reps, target_s)
        except Exception as e:  # noqa: BLE001 - a failing case is a row of the table, not the end
            row = {"family": c.family, "case": c.name, "n": n, "sizes": list(c.sizes),
                   "error": f"{type(e).__name__}: {e}"[:800]}
        row["load"] = os.getloadavg()[0]
        doc["rows"].append(row)
        if "error" in row:
            what = f"ERROR {row['error'][:300]}"
        else:
            ratio = f"{row['ratio']:.1f}x" if row["ratio"] is not None else "-"
            numpy_us = f"{row['np_us']:.3g} µs" if row["np_us"] is not None else "-"
            what = f"emu {row['emu_us']:.3g} µs, numpy {numpy_us}, {ratio}"
        note(f"[{i}/{len(pairs)}] {c.label} N={n}: {what} ({time.perf_counter() - t:.1f} s)")
        if json_path is not None:
            json_path.write_text(json.dumps(doc, indent=1) + "\n")
    doc["machine"]["loadavg_end"] = _loadavg()
    doc["machine"]["run_s"] = round(time.perf_counter() - started, 1)
    if json_path is not None:
        json_path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


# ---------------------------------------------------------------------------- the table

def fmt_us(v: float) -> str:
    if v >= 1000:
        return f"{v / 1000:.2f} ms"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def ratio_cell(ratio: float | None) -> str:
    """``2.14x`` (``21.4x`` from 10 up); above the goal in bold; ``—`` where there is no floor.
    Two decimals below 10, so that a ratio just over the goal does not show as ``3.0x``."""
    if ratio is None:
        return "—"
    text = f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"
    return f"**{text}**" if ratio > GOAL else text


def _cells(row: dict[str, Any] | None) -> list[str]:
    if row is None:
        return ["", "", ""]
    if "error" in row:
        return ["error", "—", "—"]
    numpy_cell = fmt_us(row["np_us"]) if row["ratio"] is not None else "—"
    if row.get("np64_us") is not None:
        numpy_cell += f" (f64 {fmt_us(row['np64_us'])})"
    return [fmt_us(row["emu_us"]), numpy_cell, ratio_cell(row["ratio"])]


def _by_case(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[int, dict[str, Any]]]:
    """Rows grouped by (instruction, case) in first-seen order, each {N: row}."""
    grouped: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["family"], row["case"]), {})[row["n"]] = row
    return grouped


def _declared_sizes(by_n: dict[int, dict[str, Any]]) -> tuple[int, ...]:
    """The sizes the case declares: from its rows, else (a file written before rows held them)
    from the case of that name, else guessed from the sizes measured."""
    row = next(iter(by_n.values()))
    if "sizes" in row:
        return tuple(row["sizes"])
    for c in CASES:
        if (c.family, c.name) == (row["family"], row["case"]):
            return c.sizes
    return SIZES if set(by_n) <= set(SIZES) else tuple(sorted(by_n, reverse=True))


def _slots(by_n: dict[int, dict[str, Any]]) -> tuple[dict | None, dict | None, bool]:
    """(first column group, second, whether the case has a fixed shape of its own): N = 512
    and 64 go to their columns; a fixed-shape case puts its larger N first."""
    if _declared_sizes(by_n) == SIZES:
        return by_n.get(SIZES[0]), by_n.get(SIZES[1]), False
    ns = sorted(by_n, reverse=True)
    return by_n[ns[0]], (by_n[ns[1]] if len(ns) > 1 else None), True


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts against the goal: cases at [128, 512], and fixed-shape cases at their shape."""
    tile, fixed, errors = [], [], []
    for (family, name), by_n in _by_case(rows).items():
        first, _, own_shape = _slots(by_n)
        errors += [f"{family} {name} N={n}" for n, r in by_n.items() if "error" in r]
        if first is None or "error" in first or first["ratio"] is None:
            continue
        (fixed if own_shape else tile).append((first["ratio"], family, name))
    tile.sort(reverse=True)
    return {"tile_cases": len(tile), "tile_over": sum(r > GOAL for r, _, _ in tile),
            "fixed_cases": len(fixed), "fixed_over": sum(r > GOAL for r, _, _ in fixed),
            "worst": tile[:10], "errors": errors}


def table(doc: dict[str, Any]) -> str:
    """The markdown table (with a line saying where and when it was measured)."""
    rows = doc["rows"]
    m = doc.get("machine", {})
    s = summary(rows)
    load = "–".join(f"{x[0]:.1f}" for x in (m.get("loadavg_start"), m.get("loadavg_end")) if x)
    edited = " + uncommitted engine edits" if m.get("engine_edited") else ""
    where = (f"Measured at `{m.get('commit', '?')}`{edited}, {m.get('started', '?')}, "
             f"{m.get('nproc', '?')} cores, load {load or '?'}, min of {m.get('reps', '?')}:")
    count = (f"**{s['tile_over']} of {s['tile_cases']}** cases over {GOAL:g}x at [128,512]; "
             f"{s['fixed_over']} of {s['fixed_cases']} fixed-shape cases over {GOAL:g}x at "
             "their own shape.")
    header = ("| instruction | case | [128,512] emu µs | numpy µs | ratio "
              "| [128,64] emu µs | numpy µs | ratio |")
    lines = [where, count, "", header, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (family, name), by_n in _by_case(rows).items():
        first, second, own_shape = _slots(by_n)
        shown = name
        if own_shape and _declared_sizes(by_n) != (1,):
            shown += f" (N={'/'.join(str(n) for n in sorted(by_n, reverse=True))})"
        lines.append(f"| `{family}` | {shown} | "
                     + " | ".join(_cells(first) + _cells(second)) + " |")
    return "\n".join(lines)


def replace_table(doc: str, text: str) -> str:
    """``doc`` with what lies between the BEGIN and END markers replaced by ``text``."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"need exactly one {BEGIN} and one {END}")
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    if end < start:
        raise ValueError(f"{END} comes before {BEGIN}")
    return doc[:start] + "\n" + text + "\n" + doc[end:]


def write_docs(text: str, path: Path = DOC) -> None:
    path.write_text(replace_table(path.read_text(), text))


def main(argv: list[str] | None = None) -> int:
    lines = __doc__.splitlines()
    parser = argparse.ArgumentParser(prog="python -m tools.inst_table", description=lines[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(lines[2:]))
    parser.add_argument("--only", default="", help="comma-separated substrings of "
                        "'instruction case' (e.g. tensor_tensor,dma.copy)")
    parser.add_argument("--sizes", default="", help="comma-separated free sizes (512,64); "
                        "fixed-shape cases always run at their own")
    parser.add_argument("--reps", type=int, default=3, help="min of this many runs (default 3)")
    parser.add_argument("--target-seconds", type=float, default=TARGET_S,
                        help=f"CPU seconds of a case's longer run (default {TARGET_S})")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the raw rows here")
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="render the table of a saved --json run; measure nothing")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"replace the table in {DOC.relative_to(ROOT)}, not print it")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    parser.add_argument("--check", action="store_true",
                        help="assemble every case's kernel and call its floor; measure nothing")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        parser.error(f"--sizes takes integers, not {args.sizes!r}")
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    pairs = select(args.only.split(","), sizes)

    if args.list:
        for c in CASES:
            print(f"{c.label}  N={'/'.join(map(str, c.sizes))}")
        return 0
    if args.check:
        failed = 0
        for c, n in pairs:
            try:
                check(c, n)
            except Exception as e:  # noqa: BLE001 - report every broken case, not the first
                failed += 1
                print(f"{c.label} N={n}: {type(e).__name__}: {str(e)[:600]}")
        note(f"{len(pairs) - failed} of {len(pairs)} case kernels assemble")
        return 1 if failed else 0

    if args.from_json:
        doc = json.loads(args.from_json.read_text())
    else:
        if not pairs:
            parser.error(f"--only {args.only!r} matches no case (see --list)")
        doc = run_cases(pairs, args.reps, args.target_seconds, args.json)
    text = table(doc)
    if args.write_docs:
        write_docs(text)
        note(f"wrote {DOC.relative_to(ROOT)}")
    else:
        print(text)
    s = summary(doc["rows"])
    note(f"{s['tile_over']} of {s['tile_cases']} cases over {GOAL:g}x at [128,512]; "
         f"{s['fixed_over']} of {s['fixed_cases']} fixed-shape cases over {GOAL:g}x")
    for ratio, family, name in s["worst"]:
        note(f"  {ratio:6.1f}x  {family} {name}")
    for what in s["errors"]:
        note(f"  failed: {what}")
    if "run_s" in doc.get("machine", {}):
        note(f"measured in {doc['machine']['run_s']:.0f} s")
    return 1 if s["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
